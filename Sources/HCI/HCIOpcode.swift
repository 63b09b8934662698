/// A command opcode: OGF in the upper 6 bits, OCF in the lower 10 (Core 5.4, Vol 4, Part E, 5.4.1).
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(ogf: UInt16, ocf: UInt16) { rawValue = ogf << 10 | (ocf & 0x3FF) }

    public var ogf: UInt16 { rawValue >> 10 }
    public var ocf: UInt16 { rawValue & 0x3FF }

    // Link Control (OGF 0x01)
    public static let disconnect = HCIOpcode(ogf: 0x01, ocf: 0x0006)
    // Controller & Baseband (OGF 0x03)
    public static let setEventMask = HCIOpcode(ogf: 0x03, ocf: 0x0001)
    public static let reset = HCIOpcode(ogf: 0x03, ocf: 0x0003)
    // Informational (OGF 0x04)
    public static let readLocalVersionInformation = HCIOpcode(ogf: 0x04, ocf: 0x0001)
    public static let readLocalSupportedCommands = HCIOpcode(ogf: 0x04, ocf: 0x0002)
    public static let readLocalSupportedFeatures = HCIOpcode(ogf: 0x04, ocf: 0x0003)
    public static let readBufferSize = HCIOpcode(ogf: 0x04, ocf: 0x0005)
    public static let readBDAddr = HCIOpcode(ogf: 0x04, ocf: 0x0009)
    // Status (OGF 0x05)
    public static let readRSSI = HCIOpcode(ogf: 0x05, ocf: 0x0005)
    // LE Controller (OGF 0x08)
    public static let leSetEventMask = HCIOpcode(ogf: 0x08, ocf: 0x0001)
    public static let leReadBufferSize = HCIOpcode(ogf: 0x08, ocf: 0x0002)
    public static let leReadLocalSupportedFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0003)
    public static let leSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0005)
    public static let leSetAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0006)
    public static let leReadAdvertisingPhysicalChannelTxPower = HCIOpcode(ogf: 0x08, ocf: 0x0007)
    public static let leSetAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0008)
    public static let leSetScanResponseData = HCIOpcode(ogf: 0x08, ocf: 0x0009)
    public static let leSetAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x000A)
    public static let leSetScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x000B)
    public static let leSetScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x000C)
    public static let leCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x000D)
    public static let leCreateConnectionCancel = HCIOpcode(ogf: 0x08, ocf: 0x000E)
    public static let leConnectionUpdate = HCIOpcode(ogf: 0x08, ocf: 0x0013)
    public static let leReadFilterAcceptListSize = HCIOpcode(ogf: 0x08, ocf: 0x000F)
    public static let leClearFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0010)
    public static let leAddDeviceToFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0011)
    public static let leRemoveDeviceFromFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0012)
    public static let leAddDeviceToResolvingList = HCIOpcode(ogf: 0x08, ocf: 0x0027)
    public static let leRemoveDeviceFromResolvingList = HCIOpcode(ogf: 0x08, ocf: 0x0028)
    public static let leClearResolvingList = HCIOpcode(ogf: 0x08, ocf: 0x0029)
    public static let leReadResolvingListSize = HCIOpcode(ogf: 0x08, ocf: 0x002A)
    public static let leSetAddressResolutionEnable = HCIOpcode(ogf: 0x08, ocf: 0x002D)
    public static let leSetResolvablePrivateAddressTimeout = HCIOpcode(ogf: 0x08, ocf: 0x002E)
    public static let leEncrypt = HCIOpcode(ogf: 0x08, ocf: 0x0017)
    public static let leRand = HCIOpcode(ogf: 0x08, ocf: 0x0018)
    /// "LE Enable Encryption" in Core 5.4 (LE Start Encryption before 5.3).
    public static let leEnableEncryption = HCIOpcode(ogf: 0x08, ocf: 0x0019)
    public static let leLongTermKeyRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x001A)
    public static let leLongTermKeyRequestNegativeReply = HCIOpcode(ogf: 0x08, ocf: 0x001B)
    public static let leRemoteConnectionParameterRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x0020)
    public static let leRemoteConnectionParameterRequestNegativeReply = HCIOpcode(ogf: 0x08, ocf: 0x0021)
    public static let leSetAdvertisingSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0035)
    public static let leSetExtendedAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0036)
    public static let leSetExtendedAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0037)
    public static let leSetExtendedScanResponseData = HCIOpcode(ogf: 0x08, ocf: 0x0038)
    public static let leSetExtendedAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x0039)
    public static let leSetExtendedScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x0041)
    public static let leSetExtendedScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x0042)
    public static let leExtendedCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x0043)

    /// Spec names for the opcodes BLELab knows; others print as OGF/OCF.
    public var name: String? {
        switch self {
        case .disconnect: return "Disconnect"
        case .setEventMask: return "Set Event Mask"
        case .reset: return "Reset"
        case .readLocalVersionInformation: return "Read Local Version Information"
        case .readLocalSupportedCommands: return "Read Local Supported Commands"
        case .readLocalSupportedFeatures: return "Read Local Supported Features"
        case .readBufferSize: return "Read Buffer Size"
        case .readBDAddr: return "Read BD_ADDR"
        case .readRSSI: return "Read RSSI"
        case .leSetEventMask: return "LE Set Event Mask"
        case .leReadBufferSize: return "LE Read Buffer Size"
        case .leReadLocalSupportedFeatures: return "LE Read Local Supported Features"
        case .leSetRandomAddress: return "LE Set Random Address"
        case .leSetAdvertisingParameters: return "LE Set Advertising Parameters"
        case .leReadAdvertisingPhysicalChannelTxPower: return "LE Read Advertising Physical Channel Tx Power"
        case .leSetAdvertisingData: return "LE Set Advertising Data"
        case .leSetScanResponseData: return "LE Set Scan Response Data"
        case .leSetAdvertisingEnable: return "LE Set Advertising Enable"
        case .leSetScanParameters: return "LE Set Scan Parameters"
        case .leSetScanEnable: return "LE Set Scan Enable"
        case .leCreateConnection: return "LE Create Connection"
        case .leCreateConnectionCancel: return "LE Create Connection Cancel"
        case .leConnectionUpdate: return "LE Connection Update"
        case .leReadFilterAcceptListSize: return "LE Read Filter Accept List Size"
        case .leClearFilterAcceptList: return "LE Clear Filter Accept List"
        case .leAddDeviceToFilterAcceptList: return "LE Add Device To Filter Accept List"
        case .leRemoveDeviceFromFilterAcceptList: return "LE Remove Device From Filter Accept List"
        case .leAddDeviceToResolvingList: return "LE Add Device To Resolving List"
        case .leRemoveDeviceFromResolvingList: return "LE Remove Device From Resolving List"
        case .leClearResolvingList: return "LE Clear Resolving List"
        case .leReadResolvingListSize: return "LE Read Resolving List Size"
        case .leSetAddressResolutionEnable: return "LE Set Address Resolution Enable"
        case .leSetResolvablePrivateAddressTimeout: return "LE Set Resolvable Private Address Timeout"
        case .leEncrypt: return "LE Encrypt"
        case .leRand: return "LE Rand"
        case .leEnableEncryption: return "LE Enable Encryption"
        case .leLongTermKeyRequestReply: return "LE Long Term Key Request Reply"
        case .leLongTermKeyRequestNegativeReply: return "LE Long Term Key Request Negative Reply"
        case .leRemoteConnectionParameterRequestReply: return "LE Remote Connection Parameter Request Reply"
        case .leRemoteConnectionParameterRequestNegativeReply: return "LE Remote Connection Parameter Request Negative Reply"
        case .leSetAdvertisingSetRandomAddress: return "LE Set Advertising Set Random Address"
        case .leSetExtendedAdvertisingParameters: return "LE Set Extended Advertising Parameters"
        case .leSetExtendedAdvertisingData: return "LE Set Extended Advertising Data"
        case .leSetExtendedScanResponseData: return "LE Set Extended Scan Response Data"
        case .leSetExtendedAdvertisingEnable: return "LE Set Extended Advertising Enable"
        case .leSetExtendedScanParameters: return "LE Set Extended Scan Parameters"
        case .leSetExtendedScanEnable: return "LE Set Extended Scan Enable"
        case .leExtendedCreateConnection: return "LE Extended Create Connection"
        default: return nil
        }
    }

    public var description: String {
        name ?? "Opcode 0x\(String(rawValue, radix: 16)) (OGF 0x\(String(ogf, radix: 16)), OCF 0x\(String(ocf, radix: 16)))"
    }
}

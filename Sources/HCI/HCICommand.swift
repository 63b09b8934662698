import BLEWire

/// The HCI commands BLELab's host sends and its controller understands (LE subset of Core 5.4,
/// Vol 4, Part E, 7). A command packet is `| Opcode (2) | Parameter_Total_Length (1) | Parameters |`
/// (5.4.1). Both directions are coded here: the host encodes, the controller decodes.
public enum HCICommand: Hashable, Sendable {
    /// 7.1.6: Connection_Handle (2), Reason (1).
    case disconnect(handle: UInt16, reason: HCIStatus)
    /// 7.3.1: Event_Mask (8).
    case setEventMask(UInt64)
    /// 7.3.2
    case reset
    /// 7.4.1
    case readLocalVersionInformation
    /// 7.4.2
    case readLocalSupportedCommands
    /// 7.4.3
    case readLocalSupportedFeatures
    /// 7.4.5
    case readBufferSize
    /// 7.4.6
    case readBDAddr
    /// 7.5.4: Handle (2).
    case readRSSI(handle: UInt16)
    /// 7.8.1: LE_Event_Mask (8).
    case leSetEventMask(UInt64)
    /// 7.8.2
    case leReadBufferSize
    /// 7.8.3
    case leReadLocalSupportedFeatures
    /// 7.8.4: Random_Address (6).
    case leSetRandomAddress(BDAddr)
    /// 7.8.5
    case leSetAdvertisingParameters(LEAdvertisingParameters)
    /// 7.8.6
    case leReadAdvertisingPhysicalChannelTxPower
    /// 7.8.7: Advertising_Data_Length (1), Advertising_Data (31, zero padded). Holds the significant part.
    case leSetAdvertisingData([UInt8])
    /// 7.8.8: Scan_Response_Data_Length (1), Scan_Response_Data (31).
    case leSetScanResponseData([UInt8])
    /// 7.8.9: Advertising_Enable (1).
    case leSetAdvertisingEnable(Bool)
    /// 7.8.10
    case leSetScanParameters(LEScanParameters)
    /// 7.8.11: LE_Scan_Enable (1), Filter_Duplicates (1).
    case leSetScanEnable(enable: Bool, filterDuplicates: Bool)
    /// 7.8.12
    case leCreateConnection(LECreateConnectionParameters)
    /// 7.8.13
    case leCreateConnectionCancel
    /// 7.8.18
    case leConnectionUpdate(LEConnectionUpdateParameters)
    /// 7.8.14
    case leReadFilterAcceptListSize
    /// 7.8.15
    case leClearFilterAcceptList
    /// 7.8.16: Address_Type (1: 0x00 public, 0x01 random, 0xFF anonymous advertisements), Address (6).
    case leAddDeviceToFilterAcceptList(addressType: UInt8, address: BDAddr)
    /// 7.8.17: the same two fields.
    case leRemoveDeviceFromFilterAcceptList(addressType: UInt8, address: BDAddr)
    /// 7.8.38: Peer_Identity_Address_Type (1), Peer_Identity_Address (6), Peer_IRK (16),
    /// Local_IRK (16); the IRKs least significant octet first, as on the wire.
    case leAddDeviceToResolvingList(peerIdentityType: UInt8, peerIdentity: BDAddr, peerIRK: [UInt8], localIRK: [UInt8])
    /// 7.8.39: Peer_Identity_Address_Type (1), Peer_Identity_Address (6).
    case leRemoveDeviceFromResolvingList(peerIdentityType: UInt8, peerIdentity: BDAddr)
    /// 7.8.40
    case leClearResolvingList
    /// 7.8.41
    case leReadResolvingListSize
    /// 7.8.44: Address_Resolution_Enable (1).
    case leSetAddressResolutionEnable(Bool)
    /// 7.8.45: RPA_Timeout (2), seconds, 0x0001–0x0E10 (1 s – 1 hour; default 15 minutes).
    case leSetResolvablePrivateAddressTimeout(UInt16)
    /// 7.8.22: Key (16), Plaintext_Data (16); both least significant octet first on the wire,
    /// held here as the wire has them.
    case leEncrypt(key: [UInt8], plaintext: [UInt8])
    /// 7.8.23
    case leRand
    /// 7.8.24: Connection_Handle (2), Random_Number (8), Encrypted_Diversifier (2),
    /// Long_Term_Key (16). Random number and key as on the wire (least significant first).
    case leEnableEncryption(handle: UInt16, random: [UInt8], ediv: UInt16, longTermKey: [UInt8])
    /// 7.8.25: Connection_Handle (2), Long_Term_Key (16).
    case leLongTermKeyRequestReply(handle: UInt16, longTermKey: [UInt8])
    /// 7.8.26: Connection_Handle (2).
    case leLongTermKeyRequestNegativeReply(handle: UInt16)
    /// 7.8.31: the same 14 octets as LE Connection Update (Connection_Handle, Interval_Min,
    /// Interval_Max, Max_Latency, Timeout, Min_CE_Length, Max_CE_Length): the parameters a host
    /// accepts in answer to LE Remote Connection Parameter Request (7.7.65.6).
    case leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters)
    /// 7.8.32: Connection_Handle (2), Reason (1): the host rejects the peer's request.
    case leRemoteConnectionParameterRequestNegativeReply(handle: UInt16, reason: HCIStatus)
    /// 7.8.52: Advertising_Handle (1), Random_Address (6).
    case leSetAdvertisingSetRandomAddress(advertisingHandle: UInt8, address: BDAddr)
    /// 7.8.53 (LEExtendedCommandParameters.swift).
    case leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters)
    /// 7.8.54
    case leSetExtendedAdvertisingData(LEExtendedAdvertisingData)
    /// 7.8.55: the same layout as 7.8.54.
    case leSetExtendedScanResponseData(LEExtendedAdvertisingData)
    /// 7.8.56
    case leSetExtendedAdvertisingEnable(LEExtendedAdvertisingEnable)
    /// 7.8.64
    case leSetExtendedScanParameters(LEExtendedScanParameters)
    /// 7.8.65
    case leSetExtendedScanEnable(LEExtendedScanEnable)
    /// 7.8.66
    case leExtendedCreateConnection(LEExtendedCreateConnectionParameters)
    /// Any other opcode, parameters kept verbatim.
    case unknown(opcode: HCIOpcode, parameters: [UInt8])

    public var opcode: HCIOpcode {
        switch self {
        case .disconnect: return .disconnect
        case .setEventMask: return .setEventMask
        case .reset: return .reset
        case .readLocalVersionInformation: return .readLocalVersionInformation
        case .readLocalSupportedCommands: return .readLocalSupportedCommands
        case .readLocalSupportedFeatures: return .readLocalSupportedFeatures
        case .readBufferSize: return .readBufferSize
        case .readBDAddr: return .readBDAddr
        case .readRSSI: return .readRSSI
        case .leSetEventMask: return .leSetEventMask
        case .leReadBufferSize: return .leReadBufferSize
        case .leReadLocalSupportedFeatures: return .leReadLocalSupportedFeatures
        case .leSetRandomAddress: return .leSetRandomAddress
        case .leSetAdvertisingParameters: return .leSetAdvertisingParameters
        case .leReadAdvertisingPhysicalChannelTxPower: return .leReadAdvertisingPhysicalChannelTxPower
        case .leSetAdvertisingData: return .leSetAdvertisingData
        case .leSetScanResponseData: return .leSetScanResponseData
        case .leSetAdvertisingEnable: return .leSetAdvertisingEnable
        case .leSetScanParameters: return .leSetScanParameters
        case .leSetScanEnable: return .leSetScanEnable
        case .leCreateConnection: return .leCreateConnection
        case .leCreateConnectionCancel: return .leCreateConnectionCancel
        case .leConnectionUpdate: return .leConnectionUpdate
        case .leReadFilterAcceptListSize: return .leReadFilterAcceptListSize
        case .leClearFilterAcceptList: return .leClearFilterAcceptList
        case .leAddDeviceToFilterAcceptList: return .leAddDeviceToFilterAcceptList
        case .leRemoveDeviceFromFilterAcceptList: return .leRemoveDeviceFromFilterAcceptList
        case .leAddDeviceToResolvingList: return .leAddDeviceToResolvingList
        case .leRemoveDeviceFromResolvingList: return .leRemoveDeviceFromResolvingList
        case .leClearResolvingList: return .leClearResolvingList
        case .leReadResolvingListSize: return .leReadResolvingListSize
        case .leSetAddressResolutionEnable: return .leSetAddressResolutionEnable
        case .leSetResolvablePrivateAddressTimeout: return .leSetResolvablePrivateAddressTimeout
        case .leEncrypt: return .leEncrypt
        case .leRand: return .leRand
        case .leEnableEncryption: return .leEnableEncryption
        case .leLongTermKeyRequestReply: return .leLongTermKeyRequestReply
        case .leLongTermKeyRequestNegativeReply: return .leLongTermKeyRequestNegativeReply
        case .leRemoteConnectionParameterRequestReply: return .leRemoteConnectionParameterRequestReply
        case .leRemoteConnectionParameterRequestNegativeReply: return .leRemoteConnectionParameterRequestNegativeReply
        case .leSetAdvertisingSetRandomAddress: return .leSetAdvertisingSetRandomAddress
        case .leSetExtendedAdvertisingParameters: return .leSetExtendedAdvertisingParameters
        case .leSetExtendedAdvertisingData: return .leSetExtendedAdvertisingData
        case .leSetExtendedScanResponseData: return .leSetExtendedScanResponseData
        case .leSetExtendedAdvertisingEnable: return .leSetExtendedAdvertisingEnable
        case .leSetExtendedScanParameters: return .leSetExtendedScanParameters
        case .leSetExtendedScanEnable: return .leSetExtendedScanEnable
        case .leExtendedCreateConnection: return .leExtendedCreateConnection
        case let .unknown(opcode, _): return opcode
        }
    }

    /// The parameters field.
    public var parameters: [UInt8] {
        var w = ByteWriter(capacity: 32)
        switch self {
        case let .disconnect(handle, reason):
            w.writeUInt16LE(handle)
            w.write(reason.rawValue)
        case let .setEventMask(mask), let .leSetEventMask(mask):
            w.writeUInt64LE(mask)
        case .reset, .readLocalVersionInformation, .readLocalSupportedCommands, .readLocalSupportedFeatures,
             .readBufferSize, .readBDAddr, .leReadBufferSize, .leReadLocalSupportedFeatures,
             .leReadAdvertisingPhysicalChannelTxPower, .leCreateConnectionCancel, .leRand,
             .leReadFilterAcceptListSize, .leClearFilterAcceptList, .leClearResolvingList, .leReadResolvingListSize:
            break
        case let .leAddDeviceToFilterAcceptList(type, address), let .leRemoveDeviceFromFilterAcceptList(type, address),
             let .leRemoveDeviceFromResolvingList(type, address):
            w.write(type)
            w.write(address: address)
        case let .leAddDeviceToResolvingList(type, address, peerIRK, localIRK):
            w.write(type)
            w.write(address: address)
            w.write(bytes: peerIRK)
            w.write(bytes: localIRK)
        case let .leSetAddressResolutionEnable(enable):
            w.write(UInt8(enable ? 1 : 0))
        case let .leSetResolvablePrivateAddressTimeout(seconds):
            w.writeUInt16LE(seconds)
        case let .leEncrypt(key, plaintext):
            w.write(bytes: key)
            w.write(bytes: plaintext)
        case let .leEnableEncryption(handle, random, ediv, key):
            w.writeUInt16LE(handle)
            w.write(bytes: random)
            w.writeUInt16LE(ediv)
            w.write(bytes: key)
        case let .leLongTermKeyRequestReply(handle, key):
            w.writeUInt16LE(handle)
            w.write(bytes: key)
        case let .leLongTermKeyRequestNegativeReply(handle):
            w.writeUInt16LE(handle)
        case let .readRSSI(handle):
            w.writeUInt16LE(handle)
        case let .leSetRandomAddress(address):
            w.write(address: address)
        case let .leSetAdvertisingParameters(p):
            p.encode(into: &w)
        case let .leSetAdvertisingData(data), let .leSetScanResponseData(data):
            let significant = data.prefix(31)
            w.write(UInt8(significant.count))
            w.write(bytes: significant)
            w.write(bytes: repeatElement(UInt8(0), count: 31 - significant.count))
        case let .leSetAdvertisingEnable(enable):
            w.write(UInt8(enable ? 1 : 0))
        case let .leSetScanParameters(p):
            p.encode(into: &w)
        case let .leSetScanEnable(enable, filter):
            w.write(UInt8(enable ? 1 : 0))
            w.write(UInt8(filter ? 1 : 0))
        case let .leCreateConnection(p):
            p.encode(into: &w)
        case let .leConnectionUpdate(p), let .leRemoteConnectionParameterRequestReply(p):
            p.encode(into: &w)
        case let .leRemoteConnectionParameterRequestNegativeReply(handle, reason):
            w.writeUInt16LE(handle)
            w.write(reason.rawValue)
        case let .leSetAdvertisingSetRandomAddress(advertisingHandle, address):
            w.write(advertisingHandle)
            w.write(address: address)
        case let .leSetExtendedAdvertisingParameters(p): p.encode(into: &w)
        case let .leSetExtendedAdvertisingData(d), let .leSetExtendedScanResponseData(d): d.encode(into: &w)
        case let .leSetExtendedAdvertisingEnable(e): e.encode(into: &w)
        case let .leSetExtendedScanParameters(p): p.encode(into: &w)
        case let .leSetExtendedScanEnable(e): e.encode(into: &w)
        case let .leExtendedCreateConnection(p): p.encode(into: &w)
        case let .unknown(_, parameters):
            w.write(bytes: parameters)
        }
        return w.bytes
    }

    /// The command packet without the H4 indicator.
    public var encoded: [UInt8] {
        let params = parameters
        var w = ByteWriter(capacity: 3 + params.count)
        w.writeUInt16LE(opcode.rawValue)
        w.write(UInt8(truncatingIfNeeded: params.count))
        w.write(bytes: params)
        return w.bytes
    }

    /// The H4 frame of the command: the indicator (0x01), then `encoded`, built in one buffer.
    public var h4Frame: [UInt8] {
        let params = parameters
        var w = ByteWriter(capacity: 4 + params.count)
        w.write(H4PacketType.command.rawValue)
        w.writeUInt16LE(opcode.rawValue)
        w.write(UInt8(truncatingIfNeeded: params.count))
        w.write(bytes: params)
        return w.bytes
    }

    /// Decodes a command packet (without the H4 indicator). Unknown opcodes decode to `.unknown`;
    /// a known opcode with parameters of the wrong size or an out-of-range value throws, which a
    /// controller answers with Invalid HCI Command Parameters (0x12).
    public init(decoding bytes: [UInt8], from start: Int = 0) throws {
        var r = ByteReader(bytes, from: start)
        let opcode = HCIOpcode(rawValue: try r.readUInt16LE())
        let length = Int(try r.readUInt8())
        guard length == r.remaining else {
            throw DecodeError.lengthMismatch(field: "\(opcode) Parameter_Total_Length", declared: length, actual: r.remaining)
        }
        self = try HCICommand(opcode: opcode, parameters: &r)
    }

    /// Decodes the parameters of `opcode` from `r`, which must hold exactly them.
    public init(opcode: HCIOpcode, parameters r: inout ByteReader) throws {
        func expect(_ size: Int) throws {
            guard r.remaining == size else {
                throw DecodeError.lengthMismatch(field: "\(opcode) parameters", declared: r.remaining, actual: size)
            }
        }
        func bool(_ field: String) throws -> Bool {
            let at = r.offset
            let v = try r.readUInt8()
            guard v <= 1 else { throw DecodeError.invalidValue(field: field, value: UInt64(v), at: at) }
            return v == 1
        }
        func data() throws -> [UInt8] {
            try expect(32)
            let at = r.offset
            let length = Int(try r.readUInt8())
            guard length <= 31 else { throw DecodeError.invalidValue(field: "\(opcode) data length", value: UInt64(length), at: at) }
            let bytes = try r.readBytes(count: length)
            try r.skip(31 - length)
            return bytes
        }
        switch opcode {
        case .disconnect:
            try expect(3)
            self = .disconnect(handle: try r.readUInt16LE(), reason: HCIStatus(rawValue: try r.readUInt8()))
        case .setEventMask:
            try expect(8)
            self = .setEventMask(try r.readUInt64LE())
        case .reset: try expect(0); self = .reset
        case .readLocalVersionInformation: try expect(0); self = .readLocalVersionInformation
        case .readLocalSupportedCommands: try expect(0); self = .readLocalSupportedCommands
        case .readLocalSupportedFeatures: try expect(0); self = .readLocalSupportedFeatures
        case .readBufferSize: try expect(0); self = .readBufferSize
        case .readBDAddr: try expect(0); self = .readBDAddr
        case .readRSSI:
            try expect(2)
            self = .readRSSI(handle: try r.readUInt16LE())
        case .leSetEventMask:
            try expect(8)
            self = .leSetEventMask(try r.readUInt64LE())
        case .leReadBufferSize: try expect(0); self = .leReadBufferSize
        case .leReadLocalSupportedFeatures: try expect(0); self = .leReadLocalSupportedFeatures
        case .leSetRandomAddress:
            try expect(6)
            self = .leSetRandomAddress(try r.readAddress())
        case .leSetAdvertisingParameters:
            try expect(LEAdvertisingParameters.size)
            self = .leSetAdvertisingParameters(try LEAdvertisingParameters(from: &r))
        case .leReadAdvertisingPhysicalChannelTxPower: try expect(0); self = .leReadAdvertisingPhysicalChannelTxPower
        case .leSetAdvertisingData: self = .leSetAdvertisingData(try data())
        case .leSetScanResponseData: self = .leSetScanResponseData(try data())
        case .leSetAdvertisingEnable:
            try expect(1)
            self = .leSetAdvertisingEnable(try bool("Advertising_Enable"))
        case .leSetScanParameters:
            try expect(LEScanParameters.size)
            self = .leSetScanParameters(try LEScanParameters(from: &r))
        case .leSetScanEnable:
            try expect(2)
            self = .leSetScanEnable(enable: try bool("LE_Scan_Enable"), filterDuplicates: try bool("Filter_Duplicates"))
        case .leCreateConnection:
            try expect(LECreateConnectionParameters.size)
            self = .leCreateConnection(try LECreateConnectionParameters(from: &r))
        case .leCreateConnectionCancel: try expect(0); self = .leCreateConnectionCancel
        case .leConnectionUpdate:
            try expect(LEConnectionUpdateParameters.size)
            self = .leConnectionUpdate(try LEConnectionUpdateParameters(from: &r))
        case .leReadFilterAcceptListSize: try expect(0); self = .leReadFilterAcceptListSize
        case .leClearFilterAcceptList: try expect(0); self = .leClearFilterAcceptList
        case .leAddDeviceToFilterAcceptList:
            try expect(7)
            self = .leAddDeviceToFilterAcceptList(addressType: try r.readUInt8(), address: try r.readAddress())
        case .leRemoveDeviceFromFilterAcceptList:
            try expect(7)
            self = .leRemoveDeviceFromFilterAcceptList(addressType: try r.readUInt8(), address: try r.readAddress())
        case .leAddDeviceToResolvingList:
            try expect(39)
            self = .leAddDeviceToResolvingList(peerIdentityType: try r.readUInt8(), peerIdentity: try r.readAddress(),
                                               peerIRK: try r.readBytes(count: 16), localIRK: try r.readBytes(count: 16))
        case .leRemoveDeviceFromResolvingList:
            try expect(7)
            self = .leRemoveDeviceFromResolvingList(peerIdentityType: try r.readUInt8(), peerIdentity: try r.readAddress())
        case .leClearResolvingList: try expect(0); self = .leClearResolvingList
        case .leReadResolvingListSize: try expect(0); self = .leReadResolvingListSize
        case .leSetAddressResolutionEnable:
            try expect(1)
            self = .leSetAddressResolutionEnable(try bool("Address_Resolution_Enable"))
        case .leSetResolvablePrivateAddressTimeout:
            try expect(2)
            self = .leSetResolvablePrivateAddressTimeout(try r.readUInt16LE())
        case .leEncrypt:
            try expect(32)
            self = .leEncrypt(key: try r.readBytes(count: 16), plaintext: try r.readBytes(count: 16))
        case .leRand: try expect(0); self = .leRand
        case .leEnableEncryption:
            try expect(28)
            self = .leEnableEncryption(handle: try r.readUInt16LE(), random: try r.readBytes(count: 8), ediv: try r.readUInt16LE(),
                                       longTermKey: try r.readBytes(count: 16))
        case .leLongTermKeyRequestReply:
            try expect(18)
            self = .leLongTermKeyRequestReply(handle: try r.readUInt16LE(), longTermKey: try r.readBytes(count: 16))
        case .leLongTermKeyRequestNegativeReply:
            try expect(2)
            self = .leLongTermKeyRequestNegativeReply(handle: try r.readUInt16LE())
        case .leRemoteConnectionParameterRequestReply:
            try expect(LEConnectionUpdateParameters.size)
            self = .leRemoteConnectionParameterRequestReply(try LEConnectionUpdateParameters(from: &r))
        case .leRemoteConnectionParameterRequestNegativeReply:
            try expect(3)
            self = .leRemoteConnectionParameterRequestNegativeReply(handle: try r.readUInt16LE(), reason: HCIStatus(rawValue: try r.readUInt8()))
        case .leSetAdvertisingSetRandomAddress:
            try expect(7)
            self = .leSetAdvertisingSetRandomAddress(advertisingHandle: try r.readUInt8(), address: try r.readAddress())
        case .leSetExtendedAdvertisingParameters:
            try expect(LEExtendedAdvertisingParameters.size)
            self = .leSetExtendedAdvertisingParameters(try LEExtendedAdvertisingParameters(from: &r))
        case .leSetExtendedAdvertisingData:
            self = .leSetExtendedAdvertisingData(try LEExtendedAdvertisingData(from: &r))
        case .leSetExtendedScanResponseData:
            self = .leSetExtendedScanResponseData(try LEExtendedAdvertisingData(from: &r))
        case .leSetExtendedAdvertisingEnable:
            self = .leSetExtendedAdvertisingEnable(try LEExtendedAdvertisingEnable(from: &r))
        case .leSetExtendedScanParameters:
            self = .leSetExtendedScanParameters(try LEExtendedScanParameters(from: &r))
        case .leSetExtendedScanEnable:
            try expect(LEExtendedScanEnable.size)
            self = .leSetExtendedScanEnable(try LEExtendedScanEnable(from: &r))
        case .leExtendedCreateConnection:
            self = .leExtendedCreateConnection(try LEExtendedCreateConnectionParameters(from: &r))
        default:
            self = .unknown(opcode: opcode, parameters: r.readRemaining())
        }
    }
}

extension HCICommand: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .disconnect(handle, reason): return "Disconnect handle 0x\(hex4(handle)) reason \(reason)"
        case let .setEventMask(m): return "Set Event Mask 0x\(String(m, radix: 16))"
        case let .leSetEventMask(m): return "LE Set Event Mask 0x\(String(m, radix: 16))"
        case let .readRSSI(h): return "Read RSSI handle 0x\(hex4(h))"
        case let .leSetRandomAddress(a): return "LE Set Random Address \(a)"
        case let .leSetAdvertisingParameters(p):
            return "LE Set Advertising Parameters \(p.advertisingType) interval \(Double(p.intervalMin) * 0.625)–\(Double(p.intervalMax) * 0.625) ms own \(p.ownAddressType)"
        case let .leSetAdvertisingData(d):
            return "LE Set Advertising Data [\((try? AdvertisingData(decoding: d))?.description ?? d.spacedHex)]"
        case let .leSetScanResponseData(d):
            return "LE Set Scan Response Data [\((try? AdvertisingData(decoding: d))?.description ?? d.spacedHex)]"
        case let .leSetAdvertisingEnable(e): return "LE Set Advertising Enable \(e ? "on" : "off")"
        case let .leSetScanParameters(p):
            return "LE Set Scan Parameters \(p.isActive ? "active" : "passive") interval \(Double(p.interval) * 0.625) ms window \(Double(p.window) * 0.625) ms"
        case let .leSetScanEnable(e, f): return "LE Set Scan Enable \(e ? "on" : "off")\(f ? " filter duplicates" : "")"
        case let .leCreateConnection(p):
            return "LE Create Connection to \(p.peer) interval \(Double(p.connectionIntervalMin) * 1.25)–\(Double(p.connectionIntervalMax) * 1.25) ms timeout \(Int(p.supervisionTimeout) * 10) ms"
        case let .leConnectionUpdate(p):
            return "LE Connection Update handle 0x\(hex4(p.handle)) interval \(Double(p.intervalMin) * 1.25)–\(Double(p.intervalMax) * 1.25) ms latency \(p.maxLatency) timeout \(Int(p.supervisionTimeout) * 10) ms"
        case let .leRemoteConnectionParameterRequestReply(p):
            return "LE Remote Connection Parameter Request Reply handle 0x\(hex4(p.handle)) interval \(Double(p.intervalMin) * 1.25)–\(Double(p.intervalMax) * 1.25) ms latency \(p.maxLatency) timeout \(Int(p.supervisionTimeout) * 10) ms"
        case let .leAddDeviceToFilterAcceptList(type, address): return "LE Add Device To Filter Accept List \(address) type 0x\(hex2(type))"
        case let .leRemoveDeviceFromFilterAcceptList(type, address): return "LE Remove Device From Filter Accept List \(address) type 0x\(hex2(type))"
        case let .leAddDeviceToResolvingList(type, address, _, _): return "LE Add Device To Resolving List \(address) type 0x\(hex2(type))"
        case let .leRemoveDeviceFromResolvingList(type, address): return "LE Remove Device From Resolving List \(address) type 0x\(hex2(type))"
        case let .leSetAddressResolutionEnable(e): return "LE Set Address Resolution Enable \(e ? "on" : "off")"
        case let .leSetResolvablePrivateAddressTimeout(s): return "LE Set Resolvable Private Address Timeout \(s) s"
        case let .leEnableEncryption(handle, random, ediv, _):
            return "LE Enable Encryption handle 0x\(hex4(handle)) EDIV 0x\(hex4(ediv)) Rand \(random.spacedHex)"
        case let .leLongTermKeyRequestReply(handle, _): return "LE Long Term Key Request Reply handle 0x\(hex4(handle))"
        case let .leLongTermKeyRequestNegativeReply(handle): return "LE Long Term Key Request Negative Reply handle 0x\(hex4(handle))"
        case let .leRemoteConnectionParameterRequestNegativeReply(handle, reason):
            return "LE Remote Connection Parameter Request Negative Reply handle 0x\(hex4(handle)) reason \(reason)"
        case let .leSetAdvertisingSetRandomAddress(handle, address):
            return "LE Set Advertising Set Random Address set \(handle) \(address)"
        case let .leSetExtendedAdvertisingParameters(p):
            return "LE Set Extended Advertising Parameters set \(p.advertisingHandle) properties 0x\(hex4(p.eventProperties.rawValue)) " +
                "interval \(Double(p.intervalMin) * 0.625)–\(Double(p.intervalMax) * 0.625) ms own \(p.ownAddressType)"
        case let .leSetExtendedAdvertisingData(d):
            return "LE Set Extended Advertising Data set \(d.advertisingHandle) \(d.operation) [\((try? AdvertisingData(decoding: d.data))?.description ?? d.data.spacedHex)]"
        case let .leSetExtendedScanResponseData(d):
            return "LE Set Extended Scan Response Data set \(d.advertisingHandle) \(d.operation) [\((try? AdvertisingData(decoding: d.data))?.description ?? d.data.spacedHex)]"
        case let .leSetExtendedAdvertisingEnable(e):
            return "LE Set Extended Advertising Enable \(e.enable ? "on" : "off")" + (e.sets.isEmpty ? " (all sets)" : " sets \(e.sets.map { String($0.advertisingHandle) }.joined(separator: ", "))")
        case let .leSetExtendedScanParameters(p):
            return "LE Set Extended Scan Parameters " + p.perPHY.map {
                "\($0.isActive ? "active" : "passive") interval \(Double($0.interval) * 0.625) ms window \(Double($0.window) * 0.625) ms"
            }.joined(separator: "; ")
        case let .leSetExtendedScanEnable(e):
            return "LE Set Extended Scan Enable \(e.enable ? "on" : "off")\(e.filterDuplicates != 0 ? " filter duplicates" : "")"
        case let .leExtendedCreateConnection(p):
            return "LE Extended Create Connection to \(p.initiatorFilterPolicy == 0 ? p.peer.description : "the Filter Accept List")" +
                (p.perPHY.first.map { " interval \(Double($0.connectionIntervalMin) * 1.25)–\(Double($0.connectionIntervalMax) * 1.25) ms timeout \(Int($0.supervisionTimeout) * 10) ms" } ?? "")
        case let .unknown(opcode, params): return "\(opcode) [\(params.spacedHex)]"
        default: return opcode.description
        }
    }
}

func hex4(_ v: UInt16) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: 4 - s.count) + s
}

func hex2(_ v: UInt8) -> String {
    (v < 16 ? "0" : "") + String(v, radix: 16)
}

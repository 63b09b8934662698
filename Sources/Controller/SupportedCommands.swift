import HCI

/// The bit maps a controller reports about itself.
enum SupportedCommands {
    /// (opcode, octet, bit) of every command the sim supports, per the Supported_Commands table
    /// (Core 5.4, Vol 4, Part E, 6.27). Read Local Supported Commands itself has no bit in that table.
    static let table: [(opcode: HCIOpcode, octet: Int, bit: Int)] = [
        (.disconnect, 0, 5),
        (.setEventMask, 5, 6),
        (.reset, 5, 7),
        (.readLocalVersionInformation, 14, 3),
        (.readLocalSupportedFeatures, 14, 5),
        (.readBufferSize, 14, 7),
        (.readBDAddr, 15, 1),
        (.readRSSI, 15, 5),
        (.leSetEventMask, 25, 0),
        (.leReadBufferSize, 25, 1),
        (.leReadLocalSupportedFeatures, 25, 2),
        (.leSetRandomAddress, 25, 4),
        (.leSetAdvertisingParameters, 25, 5),
        (.leReadAdvertisingPhysicalChannelTxPower, 25, 6),
        (.leSetAdvertisingData, 25, 7),
        (.leSetScanResponseData, 26, 0),
        (.leSetAdvertisingEnable, 26, 1),
        (.leSetScanParameters, 26, 2),
        (.leSetScanEnable, 26, 3),
        (.leCreateConnection, 26, 4),
        (.leCreateConnectionCancel, 26, 5),
        (.leReadFilterAcceptListSize, 26, 6),
        (.leClearFilterAcceptList, 26, 7),
        (.leAddDeviceToFilterAcceptList, 27, 0),
        (.leRemoveDeviceFromFilterAcceptList, 27, 1),
        (.leConnectionUpdate, 27, 2),
        (.leEncrypt, 27, 6),
        (.leRand, 27, 7),
        (.leEnableEncryption, 28, 0),
        (.leLongTermKeyRequestReply, 28, 1),
        (.leLongTermKeyRequestNegativeReply, 28, 2),
        // Mandatory with the Connection Parameters Request procedure (LE_Features bit 1, below).
        (.leRemoteConnectionParameterRequestReply, 33, 4),
        (.leRemoteConnectionParameterRequestNegativeReply, 33, 5),
        (.leAddDeviceToResolvingList, 34, 3),
        (.leRemoveDeviceFromResolvingList, 34, 4),
        (.leClearResolvingList, 34, 5),
        (.leReadResolvingListSize, 34, 6),
        (.leSetAddressResolutionEnable, 35, 1),
        (.leSetResolvablePrivateAddressTimeout, 35, 2),
    ]

    /// Whether the sim implements `opcode` (Read Local Supported Commands included).
    static func supports(_ opcode: HCIOpcode) -> Bool {
        opcode == .readLocalSupportedCommands || table.contains { $0.opcode == opcode }
    }

    /// Supported_Commands of Read Local Supported Commands (7.4.2): 64 octets.
    static let bitmap: [UInt8] = {
        var bits = [UInt8](repeating: 0, count: 64)
        for entry in table { bits[entry.octet] |= 1 << UInt8(entry.bit) }
        return bits
    }()

    /// LMP_Features of Read Local Supported Features (7.4.3; Vol 2, Part C, 3.3): only bit 37
    /// "BR/EDR Not Supported" and bit 38 "LE Supported (Controller)".
    static let lmpFeatures: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x60, 0x00, 0x00, 0x00]

    /// LE_Features of LE Read Local Supported Features (7.8.3; Vol 6, Part B, 4.6): bit 0, LE
    /// Encryption (SimLink+Encryption.swift), bit 1, Connection Parameters Request procedure,
    /// which lets a peripheral's host use LE Connection Update, and bit 6, LL Privacy (the
    /// resolving list, SimController+Lists.swift).
    static let leFeatures: [UInt8] = [0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
}

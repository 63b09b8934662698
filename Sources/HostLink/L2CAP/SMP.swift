/// Security Manager Protocol command codes (Core 5.4, Vol 3, Part H, 3.3, Table 3.2), with the
/// length each command has on the wire (Code included, 3.5 and 3.6).
public struct SMPCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let pairingRequest = SMPCode(rawValue: 0x01)
    public static let pairingResponse = SMPCode(rawValue: 0x02)
    public static let pairingConfirm = SMPCode(rawValue: 0x03)
    public static let pairingRandom = SMPCode(rawValue: 0x04)
    public static let pairingFailed = SMPCode(rawValue: 0x05)
    public static let encryptionInformation = SMPCode(rawValue: 0x06)
    public static let centralIdentification = SMPCode(rawValue: 0x07)
    public static let identityInformation = SMPCode(rawValue: 0x08)
    public static let identityAddressInformation = SMPCode(rawValue: 0x09)
    public static let signingInformation = SMPCode(rawValue: 0x0A)
    public static let securityRequest = SMPCode(rawValue: 0x0B)
    public static let pairingPublicKey = SMPCode(rawValue: 0x0C)
    public static let pairingDHKeyCheck = SMPCode(rawValue: 0x0D)
    public static let keypressNotification = SMPCode(rawValue: 0x0E)

    /// The command's whole length, Code included; nil for a reserved code.
    public var length: Int? {
        switch rawValue {
        case 0x01, 0x02: return 7            // 3.5.1, 3.5.2
        case 0x03, 0x04: return 17           // 3.5.3, 3.5.4
        case 0x05: return 2                  // 3.5.5
        case 0x06: return 17                 // 3.6.2 Encryption Information: LTK (16)
        case 0x07: return 11                 // 3.6.3 Central Identification: EDIV (2), Rand (8)
        case 0x08: return 17                 // 3.6.4 Identity Information: IRK (16)
        case 0x09: return 8                  // 3.6.5 Identity Address Information: type (1), address (6)
        case 0x0A: return 17                 // 3.6.6 Signing Information: CSRK (16)
        case 0x0B: return 2                  // 3.6.7 Security Request: AuthReq (1)
        case 0x0C: return 65                 // 3.5.6 Pairing Public Key: X (32), Y (32)
        case 0x0D: return 17                 // 3.5.7 Pairing DHKey Check (16)
        case 0x0E: return 2                  // 3.5.8 Keypress Notification (1)
        default: return nil                  // 0x00 and 0x0F–0xFF: reserved for future use
        }
    }

    public var isReserved: Bool { length == nil }

    public var description: String {
        let names: [UInt8: String] = [
            0x01: "Pairing Request", 0x02: "Pairing Response", 0x03: "Pairing Confirm", 0x04: "Pairing Random",
            0x05: "Pairing Failed", 0x06: "Encryption Information", 0x07: "Central Identification",
            0x08: "Identity Information", 0x09: "Identity Address Information", 0x0A: "Signing Information",
            0x0B: "Security Request", 0x0C: "Pairing Public Key", 0x0D: "Pairing DHKey Check",
            0x0E: "Keypress Notification",
        ]
        return names[rawValue] ?? "reserved SMP code 0x\(hex2(rawValue))"
    }
}

/// Reasons of SMP Pairing Failed (Core 5.4, Vol 3, Part H, 3.5.5, Table 3.7).
public struct SMPPairingFailedReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let passkeyEntryFailed = SMPPairingFailedReason(rawValue: 0x01)
    public static let oobNotAvailable = SMPPairingFailedReason(rawValue: 0x02)
    public static let authenticationRequirements = SMPPairingFailedReason(rawValue: 0x03)
    public static let confirmValueFailed = SMPPairingFailedReason(rawValue: 0x04)
    /// "Pairing is not supported by the device."
    public static let pairingNotSupported = SMPPairingFailedReason(rawValue: 0x05)
    public static let encryptionKeySize = SMPPairingFailedReason(rawValue: 0x06)
    /// "The SMP command received is not supported on this device."
    public static let commandNotSupported = SMPPairingFailedReason(rawValue: 0x07)
    public static let unspecifiedReason = SMPPairingFailedReason(rawValue: 0x08)
    public static let repeatedAttempts = SMPPairingFailedReason(rawValue: 0x09)
    /// "The command length is invalid or a parameter is outside of the specified range."
    public static let invalidParameters = SMPPairingFailedReason(rawValue: 0x0A)
    /// The DHKey check value did not match (LE Secure Connections), or the peer's public key was
    /// not on the curve.
    public static let dhKeyCheckFailed = SMPPairingFailedReason(rawValue: 0x0B)
    /// "The confirm values in the numeric comparison protocol do not match": the user said no.
    public static let numericComparisonFailed = SMPPairingFailedReason(rawValue: 0x0C)
    /// "The device chose not to accept a distributed key."
    public static let keyRejected = SMPPairingFailedReason(rawValue: 0x0F)

    public var description: String {
        let names: [UInt8: String] = [
            0x01: "Passkey Entry Failed", 0x02: "OOB Not Available", 0x03: "Authentication Requirements",
            0x04: "Confirm Value Failed", 0x05: "Pairing Not Supported", 0x06: "Encryption Key Size",
            0x07: "Command Not Supported", 0x08: "Unspecified Reason", 0x09: "Repeated Attempts",
            0x0A: "Invalid Parameters", 0x0B: "DHKey Check Failed", 0x0C: "Numeric Comparison Failed",
            0x0D: "BR/EDR pairing in progress", 0x0E: "Cross-transport Key Derivation/Generation not allowed",
            0x0F: "Key Rejected",
        ]
        return "0x\(hex2(rawValue)) (\(names[rawValue] ?? "reserved"))"
    }
}

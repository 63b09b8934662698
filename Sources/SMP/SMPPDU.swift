import HostLink

/// IO capabilities (Core Vol 3 Part H 2.3.2, Table 3.4).
public enum IOCapability: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case displayOnly = 0x00
    case displayYesNo = 0x01
    case keyboardOnly = 0x02
    case noInputNoOutput = 0x03
    case keyboardDisplay = 0x04

    public var description: String {
        switch self {
        case .displayOnly: return "DisplayOnly"
        case .displayYesNo: return "DisplayYesNo"
        case .keyboardOnly: return "KeyboardOnly"
        case .noInputNoOutput: return "NoInputNoOutput"
        case .keyboardDisplay: return "KeyboardDisplay"
        }
    }
}

/// The AuthReq field (3.5.1, Figure 3.3): Bonding_Flags (2 bits), MITM, SC, Keypress, CT2.
public struct AuthRequirements: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bonding_Flags 0b01: keys are to be stored (0b00: no bonding; 0b10 and 0b11 are reserved).
    public static let bonding = AuthRequirements(rawValue: 0x01)
    public static let mitm = AuthRequirements(rawValue: 0x04)
    public static let secureConnections = AuthRequirements(rawValue: 0x08)
    public static let keypress = AuthRequirements(rawValue: 0x10)
    public static let ct2 = AuthRequirements(rawValue: 0x20)
}

/// The Initiator/Responder Key Distribution fields (3.6.1, Figure 3.11).
public struct KeyDistribution: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// LE legacy: LTK with EDIV and Rand (Encryption Information, Central Identification). In
    /// Secure Connections the LTK comes from f5 and this bit is ignored.
    public static let encryptionKey = KeyDistribution(rawValue: 0x01)
    /// IRK and identity address (Identity Information, Identity Address Information).
    public static let identityKey = KeyDistribution(rawValue: 0x02)
    /// CSRK (Signing Information).
    public static let signingKey = KeyDistribution(rawValue: 0x04)
    /// BR/EDR link key derivation (not on an LE-only device).
    public static let linkKey = KeyDistribution(rawValue: 0x08)
}

/// Pairing Request and Pairing Response's parameters (3.5.1, 3.5.2).
public struct PairingFeatures: Hashable, Sendable {
    public var io: IOCapability
    public var oobDataPresent: Bool
    public var authRequirements: AuthRequirements
    /// 7…16 octets.
    public var maxKeySize: UInt8
    public var initiatorKeys: KeyDistribution
    public var responderKeys: KeyDistribution

    public init(io: IOCapability, oobDataPresent: Bool = false, authRequirements: AuthRequirements, maxKeySize: UInt8 = 16,
                initiatorKeys: KeyDistribution, responderKeys: KeyDistribution) {
        self.io = io
        self.oobDataPresent = oobDataPresent
        self.authRequirements = authRequirements
        self.maxKeySize = maxKeySize
        self.initiatorKeys = initiatorKeys
        self.responderKeys = responderKeys
    }

    /// The six octets after the Code.
    var octets: [UInt8] {
        [io.rawValue, oobDataPresent ? 1 : 0, authRequirements.rawValue, maxKeySize, initiatorKeys.rawValue, responderKeys.rawValue]
    }

    /// f6's IOcap (2.2.8): AuthReq ‖ OOB data flag ‖ IO Capability, most significant first.
    var ioCap: [UInt8] { [authRequirements.rawValue, oobDataPresent ? 1 : 0, io.rawValue] }
}

/// An address as SMP's functions take it: the type (0 public, 1 random) and the 48-bit address,
/// most significant octet first.
public struct SMPAddress: Hashable, Sendable, CustomStringConvertible {
    public var isRandom: Bool
    public var octets: [UInt8]
    public init(isRandom: Bool, octets: [UInt8]) {
        precondition(octets.count == 6, "an address has 6 octets")
        self.isRandom = isRandom
        self.octets = octets
    }
    /// f5's and f6's 56-bit A1/A2 (2.2.7): the type octet, then the address.
    var typed: [UInt8] { [isRandom ? 1 : 0] + octets }
    public var description: String {
        octets.map { $0 < 16 ? "0" + String($0, radix: 16, uppercase: true) : String($0, radix: 16, uppercase: true) }
            .joined(separator: ":") + (isRandom ? " (random)" : "")
    }
}

/// One SMP command (3.5, 3.6). 128- and 256-bit values, keys and addresses hold the
/// specification's order (most significant octet first); `encoded` and `decode` turn them into
/// and out of the wire's (least significant first).
public enum SMPPDU: Equatable, Sendable {
    case pairingRequest(PairingFeatures)
    case pairingResponse(PairingFeatures)
    case pairingConfirm([UInt8])
    case pairingRandom([UInt8])
    case pairingFailed(SMPPairingFailedReason)
    case encryptionInformation(ltk: [UInt8])
    case centralIdentification(ediv: UInt16, rand: [UInt8])
    case identityInformation(irk: [UInt8])
    case identityAddressInformation(SMPAddress)
    case signingInformation(csrk: [UInt8])
    case securityRequest(AuthRequirements)
    case pairingPublicKey(x: [UInt8], y: [UInt8])
    case pairingDHKeyCheck([UInt8])
    case keypressNotification(UInt8)

    public var code: SMPCode {
        switch self {
        case .pairingRequest: return .pairingRequest
        case .pairingResponse: return .pairingResponse
        case .pairingConfirm: return .pairingConfirm
        case .pairingRandom: return .pairingRandom
        case .pairingFailed: return .pairingFailed
        case .encryptionInformation: return .encryptionInformation
        case .centralIdentification: return .centralIdentification
        case .identityInformation: return .identityInformation
        case .identityAddressInformation: return .identityAddressInformation
        case .signingInformation: return .signingInformation
        case .securityRequest: return .securityRequest
        case .pairingPublicKey: return .pairingPublicKey
        case .pairingDHKeyCheck: return .pairingDHKeyCheck
        case .keypressNotification: return .keypressNotification
        }
    }

    public var encoded: [UInt8] {
        let body: [UInt8]
        switch self {
        case let .pairingRequest(features), let .pairingResponse(features): body = features.octets
        case let .pairingConfirm(value), let .pairingRandom(value), let .pairingDHKeyCheck(value): body = value.reversed()
        case let .pairingFailed(reason): body = [reason.rawValue]
        case let .encryptionInformation(ltk): body = ltk.reversed()
        case let .centralIdentification(ediv, rand): body = [UInt8(ediv & 0xFF), UInt8(ediv >> 8)] + rand.reversed()
        case let .identityInformation(irk): body = irk.reversed()
        case let .identityAddressInformation(address): body = [address.isRandom ? 1 : 0] + address.octets.reversed()
        case let .signingInformation(csrk): body = csrk.reversed()
        case let .securityRequest(auth): body = [auth.rawValue]
        case let .pairingPublicKey(x, y): body = x.reversed() + y.reversed()
        case let .keypressNotification(type): body = [type]
        }
        return [code.rawValue] + body
    }

    /// Decodes one command; a reserved code, a length that is not the code's, or a field out of
    /// its range is a typed error (what the receiver answers with is SMPSession's business).
    public static func decode(_ octets: [UInt8]) throws -> SMPPDU {
        guard let first = octets.first else { throw SMPDecodingError.empty }
        let code = SMPCode(rawValue: first)
        guard let length = code.length else { throw SMPDecodingError.reservedCode(first) }
        guard octets.count == length else { throw SMPDecodingError.length(code, expected: length, got: octets.count) }
        let body = Array(octets.dropFirst())
        switch code {
        case .pairingRequest, .pairingResponse:
            guard let io = IOCapability(rawValue: body[0]) else { throw SMPDecodingError.outOfRange(code, "IO Capability 0x\(hex(body[0]))") }
            guard body[1] <= 1 else { throw SMPDecodingError.outOfRange(code, "OOB data flag 0x\(hex(body[1]))") }
            guard (7...16).contains(body[3]) else { throw SMPDecodingError.outOfRange(code, "Maximum Encryption Key Size \(body[3])") }
            let features = PairingFeatures(io: io, oobDataPresent: body[1] == 1, authRequirements: AuthRequirements(rawValue: body[2]),
                                           maxKeySize: body[3], initiatorKeys: KeyDistribution(rawValue: body[4]),
                                           responderKeys: KeyDistribution(rawValue: body[5]))
            return code == .pairingRequest ? .pairingRequest(features) : .pairingResponse(features)
        case .pairingConfirm: return .pairingConfirm(body.reversed())
        case .pairingRandom: return .pairingRandom(body.reversed())
        case .pairingFailed: return .pairingFailed(SMPPairingFailedReason(rawValue: body[0]))
        case .encryptionInformation: return .encryptionInformation(ltk: body.reversed())
        case .centralIdentification: return .centralIdentification(ediv: UInt16(body[0]) | UInt16(body[1]) << 8, rand: body[2...].reversed())
        case .identityInformation: return .identityInformation(irk: body.reversed())
        case .identityAddressInformation:
            guard body[0] <= 1 else { throw SMPDecodingError.outOfRange(code, "address type 0x\(hex(body[0]))") }
            return .identityAddressInformation(SMPAddress(isRandom: body[0] == 1, octets: body[1...].reversed()))
        case .signingInformation: return .signingInformation(csrk: body.reversed())
        case .securityRequest: return .securityRequest(AuthRequirements(rawValue: body[0]))
        case .pairingPublicKey: return .pairingPublicKey(x: body[..<32].reversed(), y: body[32...].reversed())
        case .pairingDHKeyCheck: return .pairingDHKeyCheck(body.reversed())
        default:
            guard body[0] <= 4 else { throw SMPDecodingError.outOfRange(code, "notification type \(body[0])") }
            return .keypressNotification(body[0])
        }
    }
}

/// Why an SMP command could not be decoded.
public enum SMPDecodingError: Error, Equatable, CustomStringConvertible {
    case empty
    case reservedCode(UInt8)
    case length(SMPCode, expected: Int, got: Int)
    case outOfRange(SMPCode, String)

    /// The Pairing Failed reason a pairing answers it with (3.5.5): Invalid Parameters for a
    /// wrong length or a field out of range; nil for what is ignored (an empty PDU, a reserved
    /// code: "shall be ignored", 3.3).
    public var answer: SMPPairingFailedReason? {
        switch self {
        case .empty, .reservedCode: return nil
        case .length, .outOfRange: return .invalidParameters
        }
    }

    public var description: String {
        switch self {
        case .empty: return "an empty SMP PDU (no Code)"
        case let .reservedCode(code): return "reserved SMP code 0x\(hex(code))"
        case let .length(code, expected, got): return "\(code) of \(got) octets; it has \(expected)"
        case let .outOfRange(code, what): return "\(code) with \(what) out of range"
        }
    }
}

func hex(_ value: UInt8) -> String {
    value < 16 ? "0" + String(value, radix: 16, uppercase: true) : String(value, radix: 16, uppercase: true)
}

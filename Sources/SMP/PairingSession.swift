import BLECrypto
import HostLink

/// Which side of a pairing: the central initiates (sends Pairing Request), the peripheral
/// responds (Core Vol 3 Part H 2.3).
public enum PairingRole: Sendable { case initiator, responder }

/// How the two devices authenticate each other (2.3.5.1).
public enum PairingMethod: String, Sendable, CustomStringConvertible {
    case justWorks = "just-works"
    case passkeyEntry = "passkey-entry"
    case numericComparison = "numeric-comparison"
    case oob
    public var description: String { rawValue }
}

/// Out-of-band data one device holds (2.3.5.6.4, 2.3.5.6.3 for legacy).
public struct OOBData: Equatable, Sendable {
    /// LE legacy pairing's TK, 16 octets, known to both devices.
    public var legacyTK: [UInt8]?
    /// LE Secure Connections: this device's random value r, which it gave the peer out of band
    /// (with its confirm value f4(PKx, PKx, r, 0)).
    public var localRandom: [UInt8]?
    /// The peer's r and confirm value, received out of band.
    public var peer: (random: [UInt8], confirm: [UInt8])?
    /// The key pair this device's confirm value was made with (its public key's x is in the
    /// confirm value the peer received): the pairing uses it instead of drawing one. Nil: drawn
    /// per pairing, as without OOB data.
    public var localKeyPair: P256KeyPair?

    public init(legacyTK: [UInt8]? = nil, localRandom: [UInt8]? = nil, peer: (random: [UInt8], confirm: [UInt8])? = nil,
                localKeyPair: P256KeyPair? = nil) {
        self.legacyTK = legacyTK
        self.localRandom = localRandom
        self.peer = peer
        self.localKeyPair = localKeyPair
    }

    public static func == (a: OOBData, b: OOBData) -> Bool {
        a.legacyTK == b.legacyTK && a.localRandom == b.localRandom && a.peer?.random == b.peer?.random && a.peer?.confirm == b.peer?.confirm
            && a.localKeyPair == b.localKeyPair
    }

    /// The confirm value a device gives out of band with its r (2.3.5.6.4): f4(PKx, PKx, r, 0).
    public static func confirm(publicKeyX: [UInt8], random: [UInt8]) throws -> [UInt8] {
        try SecurityToolbox.f4(u: publicKeyX, v: publicKeyX, x: random, z: 0)
    }
}

/// An identity a device distributes: its IRK and identity address (3.6.4, 3.6.5).
public struct SecurityIdentity: Equatable, Sendable {
    public var irk: [UInt8]
    public var address: SMPAddress
    public init(irk: [UInt8], address: SMPAddress) {
        self.irk = irk
        self.address = address
    }
}

/// What one device brings to a pairing: its IO, its requirements and its keys.
public struct SecuritySettings: Equatable, Sendable {
    /// False: every Pairing Request is answered "Pairing Not Supported".
    public var pairable = true
    public var io: IOCapability = .noInputNoOutput
    public var bonding = true
    /// This device requires protection against a man in the middle: a pairing that can only be
    /// Just Works fails with "Authentication Requirements".
    public var mitm = false
    public var secureConnections = true
    /// Secure Connections only mode (2.3.5.1): legacy pairing fails with "Authentication
    /// Requirements".
    public var secureConnectionsOnly = false
    public var maxKeySize: UInt8 = 16
    /// Below this negotiated size the pairing fails with "Encryption Key Size".
    public var minKeySize: UInt8 = 7
    /// The passkey: shown when this device displays it (nil: a random one, 000000–999999), typed
    /// when it inputs it (nil: the user gives none, and the pairing fails with "Passkey Entry
    /// Failed").
    public var passkey: UInt32?
    /// The user's answer to Numeric Comparison (false: "Numeric Comparison Failed").
    public var confirmsNumericComparison = true
    public var oob: OOBData?
    /// Distributed when the peer asks for the identity key; nil: not offered.
    public var identity: SecurityIdentity?
    /// Distributed when the peer asks for the signing key; nil: not offered.
    public var csrk: [UInt8]?
    /// Keys this device asks the peer for (the initiator's request; the responder narrows it).
    public var keysToRequest: KeyDistribution = [.encryptionKey, .identityKey, .signingKey]
    /// Use the P-256 debug key (2.3.5.6.1): a sniffer can then decrypt the link.
    public var debugKey = false

    public init() {}
}

/// A pairing that ended well: what both sides agreed and the keys to keep.
public struct PairingResult: Equatable, Sendable {
    public var method: PairingMethod
    public var secureConnections: Bool
    /// Protected against a man in the middle (every method but Just Works).
    public var authenticated: Bool
    /// Both devices asked to bond: the keys are to be stored.
    public var bonded: Bool
    public var keySize: UInt8
    /// The key that encrypts this pair's links from now on, with the EDIV and Rand the central
    /// sends in LE Start Encryption: Secure Connections' LTK with 0 and 0, or the legacy LTK the
    /// peripheral distributed. Nil when legacy pairing distributed none (STK only).
    public var longTermKey: [UInt8]?
    public var ediv: UInt16
    public var rand: [UInt8]
    /// The peer's identity and signing key, when it distributed them.
    public var peerIdentity: SecurityIdentity?
    public var peerCSRK: [UInt8]?
}

/// How a pairing failed.
public enum PairingFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// This device sent Pairing Failed with the reason.
    case sent(SMPPairingFailedReason)
    /// The peer sent Pairing Failed.
    case received(SMPPairingFailedReason)
    /// 30 s passed without the next command (3.4): no SMP until a new link.
    case timeout
    /// Encryption with the generated key failed (Encryption Change with an error status).
    case encryptionFailed(status: UInt8)

    public var description: String {
        switch self {
        case let .sent(reason): return "sent Pairing Failed \(reason)"
        case let .received(reason): return "peer sent Pairing Failed \(reason)"
        case .timeout: return "SMP timeout (30 s)"
        case let .encryptionFailed(status): return "encryption failed (status 0x\(hex(status)))"
        }
    }

    /// The Pairing Failed reason, sent or received.
    public var reason: SMPPairingFailedReason? {
        switch self {
        case let .sent(reason), let .received(reason): return reason
        case .timeout, .encryptionFailed: return nil
        }
    }
}

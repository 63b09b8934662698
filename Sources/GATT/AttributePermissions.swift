import ATT
import BLEWire

/// What protects a link now (Core Vol 3 Part C 10.2, the LE security levels).
public struct LinkSecurity: Equatable, Sendable, CustomStringConvertible {
    /// Encrypted (Encryption Change, on).
    public var encrypted = false
    /// The key's size in octets (7–16) while encrypted.
    public var keySize: UInt8 = 0
    /// The key came from a pairing protected against a man in the middle.
    public var authenticated = false
    /// The key came from LE Secure Connections.
    public var secureConnections = false

    public init() {}

    /// Security mode 1 level: 1 no security, 2 unauthenticated encryption, 3 authenticated, 4
    /// authenticated LE Secure Connections with a 128-bit key (Vol 3 Part C 10.2.1).
    public var level: Int {
        guard encrypted else { return 1 }
        guard authenticated else { return 2 }
        return secureConnections && keySize == 16 ? 4 : 3
    }

    public var description: String {
        encrypted ? "encrypted (\(keySize)-octet key\(authenticated ? ", authenticated" : "")\(secureConnections ? ", Secure Connections" : ""))"
            : "not encrypted"
    }
}

/// An attribute's access requirements beyond what its properties allow (Vol 3 Part F 3.2.5, the
/// attribute permissions; Part C 10.3, how a server answers a request that lacks them).
public struct AttributePermissions: Hashable, Sendable {
    /// How protected the link must be.
    public enum Level: UInt8, Comparable, Hashable, Sendable {
        case open = 0
        /// Encrypted, with any key.
        case encrypted = 1
        /// Encrypted with a key from a pairing protected against a man in the middle.
        case authenticated = 2
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public var read: Level = .open
    public var write: Level = .open
    /// The server's owner must authorize each access (`GATTServer.authorizes`).
    public var readAuthorization = false
    public var writeAuthorization = false
    /// The shortest key the attribute accepts when it asks for encryption (7–16 octets).
    public var minimumKeySize: UInt8 = 7

    public init(read: Level = .open, write: Level = .open, readAuthorization: Bool = false, writeAuthorization: Bool = false,
                minimumKeySize: UInt8 = 7) {
        self.read = read
        self.write = write
        self.readAuthorization = readAuthorization
        self.writeAuthorization = writeAuthorization
        self.minimumKeySize = minimumKeySize
    }

    public static let open = AttributePermissions()

    public var isOpen: Bool { self == .open }

    /// The error a server answers an access with, or nil when it is allowed (Part C 10.3.1,
    /// Table 10.2): on an unencrypted link, Insufficient Encryption (0x0F) when the server holds a
    /// key for the client (it should encrypt), else Insufficient Authentication (0x05: it should
    /// pair); on a link encrypted with an unauthenticated key where MITM protection is needed,
    /// Insufficient Authentication; with too short a key, Insufficient Encryption Key Size
    /// (0x0C); then authorization (0x08).
    public func error(writing: Bool, on security: LinkSecurity, peerIsBonded: Bool, authorized: () -> Bool) -> ATTErrorCode? {
        let level = writing ? write : read
        if level > .open {
            guard security.encrypted else { return peerIsBonded ? .insufficientEncryption : .insufficientAuthentication }
            if level == .authenticated, !security.authenticated { return .insufficientAuthentication }
            if security.keySize < minimumKeySize { return .insufficientEncryptionKeySize }
        }
        if writing ? writeAuthorization : readAuthorization, !authorized() { return .insufficientAuthorization }
        return nil
    }
}

/// An access that asks for authorization: who, what, and which way.
public struct GATTAuthorizationRequest {
    public let connection: GATTServerConnection
    public let handle: UInt16
    public let uuid: BluetoothUUID
    public let isWrite: Bool
}

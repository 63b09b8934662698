/// The Error Code of an ATT Error Response (Core 5.4, Vol 3, Part F, 3.4.1.1, Table 3.4), plus the
/// Common Profile and Service Error Codes (Core Specification Supplement, Part B, 1.2).
///
/// Open, so application errors (0x80–0x9F) and codes from newer specifications survive. Every code
/// has a kebab-case `name` as scenario files write it (`write-not-permitted`; `0xNN` when unnamed).
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8

    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    /// The attribute handle given was not valid on this server.
    public static let invalidHandle = ATTErrorCode(0x01)
    /// The attribute cannot be read.
    public static let readNotPermitted = ATTErrorCode(0x02)
    /// The attribute cannot be written.
    public static let writeNotPermitted = ATTErrorCode(0x03)
    /// The attribute PDU was invalid.
    public static let invalidPDU = ATTErrorCode(0x04)
    /// The attribute requires authentication before it can be read or written.
    public static let insufficientAuthentication = ATTErrorCode(0x05)
    /// The server does not support the request received from the client.
    public static let requestNotSupported = ATTErrorCode(0x06)
    /// The offset specified was past the end of the attribute.
    public static let invalidOffset = ATTErrorCode(0x07)
    /// The attribute requires authorization before it can be read or written.
    public static let insufficientAuthorization = ATTErrorCode(0x08)
    /// Too many prepare writes have been queued.
    public static let prepareQueueFull = ATTErrorCode(0x09)
    /// No attribute found within the given attribute handle range.
    public static let attributeNotFound = ATTErrorCode(0x0A)
    /// The attribute cannot be read using the Read Blob Request.
    public static let attributeNotLong = ATTErrorCode(0x0B)
    /// The Encryption Key Size used for encrypting this link is too short.
    public static let insufficientEncryptionKeySize = ATTErrorCode(0x0C)
    /// The attribute value length is invalid for the operation.
    public static let invalidAttributeValueLength = ATTErrorCode(0x0D)
    /// The request could not be completed due to an unlikely error.
    public static let unlikelyError = ATTErrorCode(0x0E)
    /// The attribute requires encryption before it can be read or written.
    public static let insufficientEncryption = ATTErrorCode(0x0F)
    /// The attribute type is not a supported grouping attribute as defined by a higher layer.
    public static let unsupportedGroupType = ATTErrorCode(0x10)
    /// Insufficient resources to complete the request.
    public static let insufficientResources = ATTErrorCode(0x11)
    /// The server requests the client to rediscover the database.
    public static let databaseOutOfSync = ATTErrorCode(0x12)
    /// The attribute parameter value was not allowed.
    public static let valueNotAllowed = ATTErrorCode(0x13)
    /// CSS Part B, 1.2: a write request was rejected.
    public static let writeRequestRejected = ATTErrorCode(0xFC)
    /// CSS Part B, 1.2: the Client Characteristic Configuration descriptor is improperly configured.
    public static let cccdImproperlyConfigured = ATTErrorCode(0xFD)
    /// CSS Part B, 1.2: a request cannot be serviced because a procedure is already in progress.
    public static let procedureAlreadyInProgress = ATTErrorCode(0xFE)
    /// CSS Part B, 1.2: an attribute value is out of range.
    public static let outOfRange = ATTErrorCode(0xFF)

    /// 0x80–0x9F: defined by a higher layer specification (Part F, 3.4.1.1).
    @inlinable public var isApplicationError: Bool { (0x80...0x9F).contains(rawValue) }
    /// 0xE0–0xFF: Common Profile and Service Error Codes (CSS Part B, 1.2).
    @inlinable public var isCommonProfileError: Bool { rawValue >= 0xE0 }

    private static let names: [(UInt8, String)] = [
        (0x01, "invalid-handle"), (0x02, "read-not-permitted"), (0x03, "write-not-permitted"),
        (0x04, "invalid-pdu"), (0x05, "insufficient-authentication"), (0x06, "request-not-supported"),
        (0x07, "invalid-offset"), (0x08, "insufficient-authorization"), (0x09, "prepare-queue-full"),
        (0x0A, "attribute-not-found"), (0x0B, "attribute-not-long"),
        (0x0C, "insufficient-encryption-key-size"), (0x0D, "invalid-attribute-value-length"),
        (0x0E, "unlikely-error"), (0x0F, "insufficient-encryption"), (0x10, "unsupported-group-type"),
        (0x11, "insufficient-resources"), (0x12, "database-out-of-sync"), (0x13, "value-not-allowed"),
        (0xFC, "write-request-rejected"), (0xFD, "cccd-improperly-configured"),
        (0xFE, "procedure-already-in-progress"), (0xFF, "out-of-range"),
    ]

    /// Other spellings accepted by `init?(name:)`: Core 5.3+ calls 0x0C "Encryption Key Size Too
    /// Short"; CSS spells 0xFD out in full.
    private static let aliases: [(UInt8, String)] = [
        (0x0C, "encryption-key-size-too-short"),
        (0xFD, "client-characteristic-configuration-descriptor-improperly-configured"),
    ]

    /// Every name `init?(name:)` accepts (besides `0xNN`), in lower case.
    public static var allNames: [String] { (names + aliases).map(\.1) }

    /// Kebab-case, as in scenario files: `write-not-permitted`; `0xNN` for codes without a name.
    public var name: String {
        for (code, name) in Self.names where code == rawValue { return name }
        return hex2(rawValue)
    }

    /// Accepts a `name` (case-insensitive) or `0xNN`.
    public init?(name: String) {
        let lower = name.lowercased()
        if lower.hasPrefix("0x") {
            let digits = lower.dropFirst(2)
            guard !digits.isEmpty, digits.count <= 2, let value = UInt8(digits, radix: 16) else { return nil }
            self.init(value)
            return
        }
        for (code, candidate) in Self.names + Self.aliases where candidate == lower {
            self.init(code)
            return
        }
        return nil
    }

    /// "write-not-permitted (0x03)".
    public var description: String {
        let n = name
        return n.hasPrefix("0x") ? n : "\(n) (\(hex2(rawValue)))"
    }
}

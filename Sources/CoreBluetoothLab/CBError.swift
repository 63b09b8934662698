import ATT
import Foundation
import GATT
import HCI
import HostLink

/// The error domain for Core Bluetooth errors.
public let CBErrorDomain = "CBErrorDomain"
/// The error domain for Attribute Protocol (ATT) errors: the codes are the ATT Error Codes.
public let CBATTErrorDomain = "CBATTErrorDomain"

/// Core Bluetooth errors (domain `CBErrorDomain`), bridged to `NSError` like Apple's.
public struct CBError: CustomNSError, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Code: Int {
        case unknown = 0
        case invalidParameters = 1
        case invalidHandle = 2
        case notConnected = 3
        case outOfSpace = 4
        case operationCancelled = 5
        case connectionTimeout = 6
        case peripheralDisconnected = 7
        case uuidNotAllowed = 8
        case alreadyAdvertising = 9
        case connectionFailed = 10
        case connectionLimitReached = 11
        case unknownDevice = 12
        case operationNotSupported = 13
        case peerRemovedPairingInformation = 14
        case encryptionTimedOut = 15
        case tooManyLEPairedDevices = 16
        /// iOS 16.4+: an app in the background exceeded its notification budget (never raised
        /// by the lab, which has no background).
        case leGattExceededBackgroundNotificationLimit = 17
        /// iOS 16.4+: an app in the background is near its notification budget (never raised).
        case leGattNearBackgroundNotificationLimit = 18

        /// Apple's misspelled name of `.unknownDevice`, kept by its SDK for old code.
        @available(*, deprecated, renamed: "unknownDevice")
        public static var unkownDevice: Code { .unknownDevice }
    }

    public let code: Code
    private let extraUserInfo: [String: String]

    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.code = code
        extraUserInfo = userInfo.compactMapValues { $0 as? String }
    }

    public static var errorDomain: String { CBErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = extraUserInfo
        if info[NSLocalizedDescriptionKey] == nil { info[NSLocalizedDescriptionKey] = Self.message(code) }
        return info
    }

    /// As Apple's bridged errors print: the `NSError` form with iOS's text.
    public var description: String { nsErrorDescription(domain: CBErrorDomain, code: code.rawValue, userInfo: extraUserInfo, message: Self.message(code)) }
    public var debugDescription: String { description }

    public static func == (a: CBError, b: CBError) -> Bool { a.code == b.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public static var unknown: Code { .unknown }
    public static var invalidParameters: Code { .invalidParameters }
    public static var invalidHandle: Code { .invalidHandle }
    public static var notConnected: Code { .notConnected }
    public static var outOfSpace: Code { .outOfSpace }
    public static var operationCancelled: Code { .operationCancelled }
    public static var connectionTimeout: Code { .connectionTimeout }
    public static var peripheralDisconnected: Code { .peripheralDisconnected }
    public static var uuidNotAllowed: Code { .uuidNotAllowed }
    public static var alreadyAdvertising: Code { .alreadyAdvertising }
    public static var connectionFailed: Code { .connectionFailed }
    public static var connectionLimitReached: Code { .connectionLimitReached }
    public static var unknownDevice: Code { .unknownDevice }
    public static var operationNotSupported: Code { .operationNotSupported }
    public static var peerRemovedPairingInformation: Code { .peerRemovedPairingInformation }
    public static var encryptionTimedOut: Code { .encryptionTimedOut }
    public static var tooManyLEPairedDevices: Code { .tooManyLEPairedDevices }
    public static var leGattExceededBackgroundNotificationLimit: Code { .leGattExceededBackgroundNotificationLimit }
    public static var leGattNearBackgroundNotificationLimit: Code { .leGattNearBackgroundNotificationLimit }

    /// The texts CoreBluetooth's errors carry as their localized description.
    static func message(_ code: Code) -> String {
        switch code {
        case .unknown: return "Unknown error."
        case .invalidParameters: return "One or more parameters were invalid."
        case .invalidHandle: return "The specified attribute handle is invalid."
        case .notConnected: return "The device is not connected."
        case .outOfSpace: return "The device has run out of space to complete the intended operation."
        case .operationCancelled: return "The operation was cancelled."
        case .connectionTimeout: return "The connection has timed out unexpectedly."
        case .peripheralDisconnected: return "The specified device has disconnected from us."
        case .uuidNotAllowed: return "The specified UUID is not allowed for this operation."
        case .alreadyAdvertising: return "The peripheral is already advertising."
        case .connectionFailed: return "The connection has failed unexpectedly."
        case .connectionLimitReached: return "The device has reached the maximum connection limit."
        case .unknownDevice: return "Unknown device."
        case .operationNotSupported: return "The operation is not supported."
        case .peerRemovedPairingInformation: return "Peer removed pairing information."
        case .encryptionTimedOut: return "The encryption has timed out."
        case .tooManyLEPairedDevices: return "Too many LE paired devices."
        // The lab's words: these two are raised only to background apps, never seen in the lab.
        case .leGattExceededBackgroundNotificationLimit: return "The background notification limit was exceeded."
        case .leGattNearBackgroundNotificationLimit: return "The background notification limit is near."
        }
    }
}

/// Attribute Protocol errors (domain `CBATTErrorDomain`): a peripheral's ATT Error Response, or a
/// local peripheral manager's answer. The code is the ATT Error Code, also for codes without a
/// name here (application errors 0x80–0x9F, profile errors 0xE0–0xFF).
public struct CBATTError: CustomNSError, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// An ATT Error Code (Core 5.4 Vol 3 Part F 3.4.1.1), or `.success`. As with the `NS_ENUM`
    /// Apple's Swift import makes of it, any raw value makes a code: `Code(rawValue: 0x80)` is an
    /// application error a peripheral manager can answer with `respond(to:withResult:)`, and it
    /// crosses the link as 0x80. Codes outside 0x00–0xFF cannot be sent: the lab answers Unlikely
    /// Error (0x0E) for them, with a warning.
    public struct Code: RawRepresentable, Hashable, CustomStringConvertible {
        public let rawValue: Int
        /// Never nil, as for an imported `NS_ENUM`.
        public init?(rawValue: Int) { self.rawValue = rawValue }
        private init(_ rawValue: Int) { self.rawValue = rawValue }

        public static let success = Code(0)
        public static let invalidHandle = Code(1)
        public static let readNotPermitted = Code(2)
        public static let writeNotPermitted = Code(3)
        public static let invalidPdu = Code(4)
        public static let insufficientAuthentication = Code(5)
        public static let requestNotSupported = Code(6)
        public static let invalidOffset = Code(7)
        public static let insufficientAuthorization = Code(8)
        public static let prepareQueueFull = Code(9)
        public static let attributeNotFound = Code(10)
        public static let attributeNotLong = Code(11)
        public static let insufficientEncryptionKeySize = Code(12)
        public static let invalidAttributeValueLength = Code(13)
        public static let unlikelyError = Code(14)
        public static let insufficientEncryption = Code(15)
        public static let unsupportedGroupType = Code(16)
        public static let insufficientResources = Code(17)

        /// The named codes: Swift name and the text iOS gives the error.
        static let named: [Int: (name: String, message: String)] = [
            0: ("success", "The operation succeeded."),
            1: ("invalidHandle", "The handle is invalid."),
            2: ("readNotPermitted", "Reading is not permitted."),
            3: ("writeNotPermitted", "Writing is not permitted."),
            4: ("invalidPdu", "The command is invalid."),
            5: ("insufficientAuthentication", "Authentication is insufficient."),
            6: ("requestNotSupported", "The request is not supported."),
            7: ("invalidOffset", "The offset is invalid."),
            8: ("insufficientAuthorization", "Authorization is insufficient."),
            9: ("prepareQueueFull", "The prepare queue is full."),
            10: ("attributeNotFound", "The attribute could not be found."),
            11: ("attributeNotLong", "The attribute is not long."),
            12: ("insufficientEncryptionKeySize", "The encryption key size is insufficient."),
            13: ("invalidAttributeValueLength", "The value's length is invalid."),
            14: ("unlikelyError", "Unlikely error."),
            15: ("insufficientEncryption", "Encryption is insufficient."),
            16: ("unsupportedGroupType", "The group type is unsupported."),
            17: ("insufficientResources", "Resources are insufficient."),
        ]

        /// The case name (`writeNotPermitted`), or `CBATTError.Code(rawValue: 128)` for a code without one.
        public var description: String { Self.named[rawValue]?.name ?? "CBATTError.Code(rawValue: \(rawValue))" }

        /// The octet an ATT Error Response carries for this code (nil: not an ATT error code).
        var attErrorCode: ATTErrorCode? {
            guard rawValue != 0, let octet = UInt8(exactly: rawValue) else { return nil }
            return ATTErrorCode(rawValue: octet)
        }
    }

    /// The ATT Error Code as sent on the link.
    public let errorCode: Int
    private let extraUserInfo: [String: String]

    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        errorCode = code.rawValue
        extraUserInfo = userInfo.compactMapValues { $0 as? String }
    }

    init(attCode: ATTErrorCode) {
        errorCode = Int(attCode.rawValue)
        extraUserInfo = [:]
    }

    /// The code, named or not (`errorCode` is its raw value).
    public var code: Code { Code(rawValue: errorCode) ?? .unlikelyError }

    public static var errorDomain: String { CBATTErrorDomain }
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = extraUserInfo
        if info[NSLocalizedDescriptionKey] == nil { info[NSLocalizedDescriptionKey] = Self.message(code) }
        return info
    }

    /// As Apple's bridged errors print: the `NSError` form with iOS's text.
    public var description: String { nsErrorDescription(domain: CBATTErrorDomain, code: errorCode, userInfo: extraUserInfo, message: Self.message(code)) }
    public var debugDescription: String { description }

    public static func == (a: CBATTError, b: CBATTError) -> Bool { a.errorCode == b.errorCode }
    public func hash(into hasher: inout Hasher) { hasher.combine(errorCode) }

    public static var success: Code { .success }
    public static var invalidHandle: Code { .invalidHandle }
    public static var readNotPermitted: Code { .readNotPermitted }
    public static var writeNotPermitted: Code { .writeNotPermitted }
    public static var invalidPdu: Code { .invalidPdu }
    public static var insufficientAuthentication: Code { .insufficientAuthentication }
    public static var requestNotSupported: Code { .requestNotSupported }
    public static var invalidOffset: Code { .invalidOffset }
    public static var insufficientAuthorization: Code { .insufficientAuthorization }
    public static var prepareQueueFull: Code { .prepareQueueFull }
    public static var attributeNotFound: Code { .attributeNotFound }
    public static var attributeNotLong: Code { .attributeNotLong }
    public static var insufficientEncryptionKeySize: Code { .insufficientEncryptionKeySize }
    public static var invalidAttributeValueLength: Code { .invalidAttributeValueLength }
    public static var unlikelyError: Code { .unlikelyError }
    public static var insufficientEncryption: Code { .insufficientEncryption }
    public static var unsupportedGroupType: Code { .unsupportedGroupType }
    public static var insufficientResources: Code { .insufficientResources }

    /// iOS's text for the code; codes without a name (application and profile errors) read
    /// "Unknown ATT error.".
    static func message(_ code: Code) -> String {
        Code.named[code.rawValue]?.message ?? "Unknown ATT error."
    }
}

/// `Error Domain=… Code=… "text" UserInfo={NSLocalizedDescription=text}`, as `NSError` prints on
/// Apple's platforms (keys sorted, so it reads the same on every run).
func nsErrorDescription(domain: String, code: Int, userInfo: [String: String], message: String) -> String {
    var info = userInfo
    if info[NSLocalizedDescriptionKey] == nil { info[NSLocalizedDescriptionKey] = message }
    let text = info[NSLocalizedDescriptionKey] ?? message
    let pairs = info.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
    return "Error Domain=\(domain) Code=\(code) \"\(text)\" UserInfo={\(pairs)}"
}

/// `catch CBError.connectionTimeout`, `case CBATTError.writeNotPermitted = error`, as with Apple's
/// bridged error codes.
public func ~= (code: CBError.Code, error: Error) -> Bool {
    (error as? CBError)?.code == code
}

public func ~= (code: CBATTError.Code, error: Error) -> Bool {
    (error as? CBATTError)?.errorCode == code.rawValue
}

// MARK: From the stack's errors

extension GATTError {
    /// What CoreBluetooth reports for a failed GATT procedure.
    var cbError: Error {
        switch self {
        case let .att(code, _): return CBATTError(attCode: code)
        case .timeout: return CBError(.connectionTimeout)
        case .linkLost: return CBError(.peripheralDisconnected)
        case .noConfigurationDescriptor: return CBATTError(.attributeNotFound)
        case .valueTooLong: return CBATTError(.invalidAttributeValueLength)
        case .protocolViolation, .invalidResponse, .preparedWriteMismatch, .mtuAlreadyExchanged: return CBError(.unknown)
        }
    }

    /// The link went away under the procedure: CoreBluetooth drops such callbacks.
    var isLinkLoss: Bool {
        if case .linkLost = self { return true }
        return false
    }
}

extension L2CAPChannelError {
    /// What `peripheral(_:didOpen:error:)` reports when a channel does not open: the peripheral's
    /// refusal for want of security as the ATT error iOS gives for it, a timeout as
    /// `CBError.connectionTimeout`, anything else as `CBError.unknown` with the reason as its
    /// description (iOS documents no codes for them).
    var cbError: Error {
        switch self {
        case .refused(.insufficientAuthentication): return CBATTError(.insufficientAuthentication)
        case .refused(.insufficientEncryption): return CBATTError(.insufficientEncryption)
        case .timeout: return CBError(.connectionTimeout)
        case .linkClosed: return CBError(.peripheralDisconnected)
        default: return CBError(.unknown, userInfo: [NSLocalizedDescriptionKey: description])
        }
    }
}

extension HCIStatus {
    /// The error `centralManager(_:didDisconnectPeripheral:error:)` reports for a disconnection
    /// with this reason (nil: the app asked for it).
    var disconnectionError: Error? {
        switch self {
        case .connectionTerminatedByLocalHost: return nil
        case .connectionTimeout, .llResponseTimeout: return CBError(.connectionTimeout)
        case .remoteUserTerminatedConnection, .remoteDeviceTerminatedLowResources, .remoteDeviceTerminatedPowerOff:
            return CBError(.peripheralDisconnected)
        case .connectionFailedToBeEstablished: return CBError(.connectionFailed)
        default: return CBError(.unknown)
        }
    }
}

extension HostError {
    /// What `centralManager(_:didFailToConnect:error:)` reports.
    var connectionError: Error {
        switch self {
        case let .command(_, status) where status == .connectionLimitExceeded: return CBError(.connectionLimitReached)
        case .cancelled: return CBError(.operationCancelled)
        case .timeout: return CBError(.connectionTimeout)
        default: return CBError(.connectionFailed)
        }
    }
}

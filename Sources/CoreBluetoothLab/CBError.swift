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
public struct CBError: CustomNSError, Hashable {
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
        }
    }
}

/// Attribute Protocol errors (domain `CBATTErrorDomain`): a peripheral's ATT Error Response, or a
/// local peripheral manager's answer. The code is the ATT Error Code, also for codes `Code` does
/// not name (application errors 0x80–0x9F, profile errors 0xE0–0xFF): `errorCode` keeps it.
public struct CBATTError: CustomNSError, Hashable {
    public enum Code: Int {
        case success = 0
        case invalidHandle = 1
        case readNotPermitted = 2
        case writeNotPermitted = 3
        case invalidPdu = 4
        case insufficientAuthentication = 5
        case requestNotSupported = 6
        case invalidOffset = 7
        case insufficientAuthorization = 8
        case prepareQueueFull = 9
        case attributeNotFound = 10
        case attributeNotLong = 11
        case insufficientEncryptionKeySize = 12
        case invalidAttributeValueLength = 13
        case unlikelyError = 14
        case insufficientEncryption = 15
        case unsupportedGroupType = 16
        case insufficientResources = 17
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

    /// The code; an ATT code without a name here reads as `.unlikelyError` (`errorCode` keeps it).
    public var code: Code { Code(rawValue: errorCode) ?? .unlikelyError }

    public static var errorDomain: String { CBATTErrorDomain }
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = extraUserInfo
        if info[NSLocalizedDescriptionKey] == nil {
            info[NSLocalizedDescriptionKey] = Code(rawValue: errorCode).map(Self.message) ?? "Unknown ATT error."
        }
        return info
    }

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

    static func message(_ code: Code) -> String {
        switch code {
        case .success: return "The operation succeeded."
        case .invalidHandle: return "The handle is invalid."
        case .readNotPermitted: return "Reading is not permitted."
        case .writeNotPermitted: return "Writing is not permitted."
        case .invalidPdu: return "The command is invalid."
        case .insufficientAuthentication: return "Authentication is insufficient."
        case .requestNotSupported: return "The request is not supported."
        case .invalidOffset: return "The offset is invalid."
        case .insufficientAuthorization: return "Authorization is insufficient."
        case .prepareQueueFull: return "The prepare queue is full."
        case .attributeNotFound: return "The attribute could not be found."
        case .attributeNotLong: return "The attribute is not long."
        case .insufficientEncryptionKeySize: return "The encryption key size is insufficient."
        case .invalidAttributeValueLength: return "The value's length is invalid."
        case .unlikelyError: return "Unlikely error."
        case .insufficientEncryption: return "Encryption is insufficient."
        case .unsupportedGroupType: return "The group type is unsupported."
        case .insufficientResources: return "Resources are insufficient."
        }
    }
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

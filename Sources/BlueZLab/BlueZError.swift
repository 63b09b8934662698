import DBus

/// The errors BlueZ's D-Bus API answers with (org.bluez.Error.<name>, doc/*.rst in BlueZ), the raw
/// name kept for the ones this list does not know.
public enum BlueZError: Hashable, Sendable, CustomStringConvertible {
    case failed, inProgress, notPermitted, notAuthorized, invalidArguments, notSupported
    case alreadyExists, doesNotExist, notReady, notConnected, alreadyConnected, notAvailable
    case authenticationFailed, authenticationCanceled, authenticationRejected, authenticationTimeout
    case connectionAttemptFailed, invalidOffset, invalidValueLength, notFound, rejected, canceled
    /// Another org.bluez.Error.* name: the part after the prefix.
    case other(String)

    public static let prefix = "org.bluez.Error."

    private static let known: [(BlueZError, String)] = [
        (.failed, "Failed"), (.inProgress, "InProgress"), (.notPermitted, "NotPermitted"),
        (.notAuthorized, "NotAuthorized"), (.invalidArguments, "InvalidArguments"), (.notSupported, "NotSupported"),
        (.alreadyExists, "AlreadyExists"), (.doesNotExist, "DoesNotExist"), (.notReady, "NotReady"),
        (.notConnected, "NotConnected"), (.alreadyConnected, "AlreadyConnected"), (.notAvailable, "NotAvailable"),
        (.authenticationFailed, "AuthenticationFailed"), (.authenticationCanceled, "AuthenticationCanceled"),
        (.authenticationRejected, "AuthenticationRejected"), (.authenticationTimeout, "AuthenticationTimeout"),
        (.connectionAttemptFailed, "ConnectionAttemptFailed"), (.invalidOffset, "InvalidOffset"),
        (.invalidValueLength, "InvalidValueLength"), (.notFound, "NotFound"), (.rejected, "Rejected"),
        (.canceled, "Canceled"),
    ]

    /// Nil unless `errorName` starts with org.bluez.Error.
    public init?(errorName: String) {
        guard errorName.hasPrefix(BlueZError.prefix) else { return nil }
        let suffix = String(errorName.dropFirst(BlueZError.prefix.count))
        self = BlueZError.known.first { $0.1 == suffix }?.0 ?? .other(suffix)
    }

    /// The short name, e.g. "NotReady".
    public var name: String {
        if case .other(let suffix) = self { return suffix }
        return BlueZError.known.first { $0.0 == self }!.1
    }

    /// The full error name, e.g. "org.bluez.Error.NotReady".
    public var errorName: String { BlueZError.prefix + name }

    public var description: String { errorName }
}

extension DBusErrorReply {
    /// org.bluez.Error.<kind>, the name BlueZ's methods answer with.
    public init(_ bluez: BlueZError, message: String) {
        self.init(name: bluez.errorName, message: message)
    }

    /// The BlueZ error this is, when its name is org.bluez.Error.*.
    public var bluez: BlueZError? { BlueZError(errorName: name) }
}

extension DBusError {
    /// The BlueZ error when this is an org.bluez.Error.* reply.
    public var bluez: BlueZError? {
        if case .remote(let reply) = self { return reply.bluez }
        return nil
    }
}

extension DBusMethodInvocation {
    /// Answers with org.bluez.Error.<kind>.
    @discardableResult
    public func fail(_ bluez: BlueZError, _ message: String) -> DBusError? { fail(DBusErrorReply(bluez, message: message)) }
}

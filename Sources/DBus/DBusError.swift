import BLERuntime

/// What goes wrong talking D-Bus, each case saying enough to act on without a debugger.
public enum DBusError: Error, Equatable, CustomStringConvertible {
    /// No bus could be reached at `address` (no daemon listening, no socket, refused, auth failed).
    /// `name`/`message` are libdbus's error (e.g. org.freedesktop.DBus.Error.FileNotFound).
    case busUnavailable(address: String, name: String, message: String)
    /// The bus to use could not even be named: e.g. the session bus with DBUS_SESSION_BUS_ADDRESS unset.
    case noBusAddress(String)
    /// The peer answered with an error reply.
    case remote(DBusErrorReply)
    /// No reply within `timeout` on the loop's clock (the call is cancelled; a late reply is dropped).
    case timeout(call: String, after: TimeSpan)
    /// The connection closed (or the bus went away) before the reply came, or a call was made on
    /// a closed connection.
    case disconnected(String)
    /// A message's body did not have the signature the caller expected.
    case unexpectedSignature(expected: String, actual: String, in: String)
    /// A value was not of the type a typed accessor asked for.
    case unexpectedType(expected: String, actual: String)
    case invalidSignature(String, reason: String)
    case invalidObjectPath(String)
    /// A value built in Swift that D-Bus cannot carry (checked before it reaches libdbus).
    case invalidValue(String)
    /// A bus, interface, member or error name that is not valid.
    case invalidName(String, reason: String)
    /// Bytes that are not a D-Bus message (`DBusMessage(marshalled:)`).
    case malformedMessage(String)
    /// An object path is already exported on this connection.
    case alreadyExported(DBusObjectPath)
    /// libdbus could not allocate.
    case outOfMemory

    public var description: String {
        switch self {
        case .busUnavailable(let address, let name, let message):
            return "no D-Bus bus at \(address): \(message) (\(name)); is dbus-daemon running there?"
        case .noBusAddress(let why): return "no D-Bus bus address: \(why)"
        case .remote(let reply): return reply.description
        case .timeout(let call, let after): return "\(call): no reply within \(after)"
        case .disconnected(let what): return "D-Bus connection closed: \(what)"
        case .unexpectedSignature(let expected, let actual, let context):
            return "\(context): expected signature '\(expected)', got '\(actual)'"
        case .unexpectedType(let expected, let actual): return "expected a D-Bus value of type '\(expected)', got '\(actual)'"
        case .invalidSignature(let s, let reason): return "'\(s)' is not a D-Bus signature: \(reason)"
        case .invalidObjectPath(let p): return "'\(p)' is not a D-Bus object path (/, then elements of [A-Za-z0-9_] separated by /)"
        case .invalidValue(let why): return "invalid D-Bus value: \(why)"
        case .invalidName(let name, let reason): return "'\(name)' is not a valid D-Bus name: \(reason)"
        case .malformedMessage(let why): return "not a D-Bus message: \(why)"
        case .alreadyExported(let path): return "an object is already exported at \(path)"
        case .outOfMemory: return "libdbus ran out of memory"
        }
    }
}

/// An error reply: its name (e.g. org.freedesktop.DBus.Error.Failed, or a service's own such as
/// org.bluez.Error.NotReady) and the message the peer gave.
public struct DBusErrorReply: Error, Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    // The standard names (D-Bus Specification, "Message Bus Messages").
    public static let failed = "org.freedesktop.DBus.Error.Failed"
    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
    public static let noReply = "org.freedesktop.DBus.Error.NoReply"
}

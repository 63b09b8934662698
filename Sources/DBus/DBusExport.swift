/// A named argument of an exported method or signal (names appear in introspection only).
public struct DBusArgument: Hashable, Sendable {
    public var name: String
    public var type: DBusType

    public init(_ name: String, _ type: DBusType) {
        self.name = name
        self.type = type
    }
}

extension DBusType {
    /// `a{sv}`: the options and properties dictionaries BlueZ uses everywhere.
    public static let propertyMap = DBusType.dictionary(key: .string, value: .variant)
    /// `ay`
    public static let bytes = DBusType.array(.byte)
}

/// A method of an exported interface. The handler gets each call whose arguments have the
/// declared types (others are answered with InvalidArgs before it runs) and answers through
/// the invocation, now or later.
public struct DBusMethod {
    public var name: String
    public var inputs: [DBusArgument]
    public var outputs: [DBusArgument]
    public var handler: (DBusMethodInvocation) -> Void

    public init(_ name: String, inputs: [DBusArgument] = [], outputs: [DBusArgument] = [],
                handler: @escaping (DBusMethodInvocation) -> Void) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.handler = handler
    }

    var inputSignature: String { inputs.map(\.type.signature).joined() }
    var outputSignature: String { outputs.map(\.type.signature).joined() }
}

/// A property of an exported interface, served through org.freedesktop.DBus.Properties.
public struct DBusProperty {
    public enum Access: String, Sendable {
        case read, write, readwrite
    }

    public var name: String
    public var type: DBusType
    public var access: Access
    /// Whether changes are announced with PropertiesChanged (introspection says so too).
    public var emitsChanged: Bool
    /// The current value. Throw a `DBusErrorReply` to answer Get with that error.
    public var get: () throws -> DBusValue
    /// Applies a new value (already checked to have `type`). Throw a `DBusErrorReply` to refuse it.
    public var set: ((DBusValue) throws -> Void)?

    public init(_ name: String, _ type: DBusType, access: Access = .read, emitsChanged: Bool = true,
                get: @escaping () throws -> DBusValue, set: ((DBusValue) throws -> Void)? = nil) {
        self.name = name
        self.type = type
        self.access = access
        self.emitsChanged = emitsChanged
        self.get = get
        self.set = set
    }

    var readable: Bool { access != .write }
    var writable: Bool { access != .read && set != nil }
}

/// A signal an exported interface declares (for introspection; emit with `emitSignal`).
public struct DBusSignalDeclaration: Hashable, Sendable {
    public var name: String
    public var arguments: [DBusArgument]

    public init(_ name: String, arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// One interface of an exported object.
public struct DBusInterface {
    public var name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignalDeclaration]

    public init(_ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [],
                signals: [DBusSignalDeclaration] = []) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    func validate() throws {
        try DBusNames.interface(name)
        for m in methods {
            try DBusNames.member(m.name)
            for a in m.inputs + m.outputs { _ = try DBusType.parseSingle(a.type.signature) }
        }
        for p in properties {
            try DBusNames.member(p.name)
            _ = try DBusType.parseSingle(p.type.signature)
        }
        for s in signals { try DBusNames.member(s.name) }
        func unique(_ names: [String], _ what: String) throws {
            var seen = Set<String>()
            for n in names where !seen.insert(n).inserted {
                throw DBusError.invalidName(n, reason: "two \(what) of \(name) have this name")
            }
        }
        try unique(methods.map(\.name), "methods")
        try unique(properties.map(\.name), "properties")
        try unique(signals.map(\.name), "signals")
    }

    func property(_ name: String) -> DBusProperty? { properties.first { $0.name == name } }

    /// Readable properties and their values; a getter that fails or returns the wrong type leaves
    /// its property out (GetAll and GetManagedObjects still answer).
    func readableValues() -> [String: DBusValue] {
        var values: [String: DBusValue] = [:]
        for p in properties where p.readable {
            if let v = try? p.get(), v.type == p.type { values[p.name] = v }
        }
        return values
    }
}

/// An object to export at `path`, with its interfaces (the standard ones are added for it).
public final class DBusExportedObject {
    public let path: DBusObjectPath
    public private(set) var interfaces: [DBusInterface]

    public init(path: DBusObjectPath, interfaces: [DBusInterface]) {
        self.path = path
        self.interfaces = interfaces
    }

    func interface(_ name: String) -> DBusInterface? { interfaces.first { $0.name == name } }
}

/// One incoming call of an exported method. Answer exactly once with `reply` or `fail`; an
/// invocation dropped unanswered answers org.freedesktop.DBus.Error.Failed by itself so the
/// caller is never left waiting.
public final class DBusMethodInvocation {
    public let message: DBusMessage
    /// The arguments, of the method's declared input types.
    public let arguments: [DBusValue]
    public let interface: String
    public let method: String
    let outputs: [DBusType]
    private weak var connection: DBusConnection?
    public private(set) var isAnswered = false

    init(message: DBusMessage, arguments: [DBusValue], interface: String, method: String, outputs: [DBusType],
         connection: DBusConnection) {
        self.message = message
        self.arguments = arguments
        self.interface = interface
        self.method = method
        self.outputs = outputs
        self.connection = connection
    }

    deinit {
        if !isAnswered {
            fail(DBusErrorReply(name: DBusErrorReply.failed, message: "\(interface).\(method) returned without a reply"))
        }
    }

    /// The caller's unique name.
    public var sender: String? { message.sender }

    /// Replies with `values`, which must have the method's output types; otherwise the caller
    /// gets a Failed error naming the mismatch (and this returns it).
    @discardableResult
    public func reply(_ values: [DBusValue] = []) -> DBusError? {
        let actual = values.map(\.type)
        guard actual == outputs else {
            let expected = outputs.map(\.signature).joined(), got = actual.map(\.signature).joined()
            fail(DBusErrorReply(name: DBusErrorReply.failed, message: "\(interface).\(method) answered '\(got)' instead of '\(expected)'"))
            return .unexpectedSignature(expected: expected, actual: got, in: "reply of \(interface).\(method)")
        }
        return answer { try DBusMessage.methodReturn(to: self.message, arguments: values) }
    }

    /// Answers with an error reply.
    @discardableResult
    public func fail(_ error: DBusErrorReply) -> DBusError? {
        answer {
            do { return try DBusMessage.errorReply(to: self.message, error) } catch {
                // An invalid error name is this side's bug: still answer, with the standard name.
                return try DBusMessage.errorReply(to: self.message, DBusErrorReply(name: DBusErrorReply.failed, message: "\(error)"))
            }
        }
    }

    private func answer(_ make: () throws -> DBusMessage) -> DBusError? {
        guard !isAnswered else { return .invalidValue("\(interface).\(method) was answered twice") }
        isAnswered = true
        guard message.expectsReply, let connection else { return nil }
        do {
            try connection.send(try make())
            return nil
        } catch {
            let e = error as? DBusError ?? .invalidValue("\(error)")
            if let fallback = try? DBusMessage.errorReply(to: message, DBusErrorReply(name: DBusErrorReply.failed, message: e.description)) {
                try? connection.send(fallback)
            }
            return e
        }
    }
}

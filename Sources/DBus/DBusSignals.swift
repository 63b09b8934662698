import BLERuntime

/// A match rule (D-Bus Specification, "Match Rules"): what the bus should route to this
/// connection, and what a subscription's handler is given. Unset fields match anything.
public struct DBusMatchRule: Hashable, Sendable, CustomStringConvertible {
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: DBusObjectPath?
    /// The path or anything below it.
    public var pathNamespace: DBusObjectPath?
    /// The first argument, when it is a string equal to this.
    public var arg0: String?

    public init(sender: String? = nil, interface: String? = nil, member: String? = nil, path: DBusObjectPath? = nil,
                pathNamespace: DBusObjectPath? = nil, arg0: String? = nil) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.arg0 = arg0
    }

    /// The rule as AddMatch takes it: `type='signal',sender='org.bluez',…`.
    public var description: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            // Inside quotes only the apostrophe is special; it is written '\'' (close, escaped, reopen).
            parts.append("\(key)='" + value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'")
        }
        add("sender", sender)
        add("interface", interface)
        add("member", member)
        add("path", path?.rawValue)
        add("path_namespace", pathNamespace?.rawValue)
        add("arg0", arg0)
        return parts.joined(separator: ",")
    }

    /// Whether `message` (a signal) fits the rule, checked on this side too since the bus routes
    /// every subscription's signals to the same connection. A well-known `sender` (org.bluez) is
    /// left to the bus: signals carry the owner's unique name, so only unique names (":1.7") are
    /// compared here.
    public func matches(_ message: DBusMessage) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender, sender.hasPrefix(":"), message.sender != sender { return false }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let path, message.path != path { return false }
        if let pathNamespace {
            guard let p = message.path, p.isDescendant(of: pathNamespace) else { return false }
        }
        if let arg0 {
            guard case .string(let first)? = try? message.arguments().first, first == arg0 else { return false }
        }
        return true
    }

    func validate() throws {
        if let sender { try DBusNames.busName(sender) }
        if let interface { try DBusNames.interface(interface) }
        if let member { try DBusNames.member(member) }
    }
}

/// Signals matching a rule, delivered to a handler until cancelled.
public final class DBusSubscription {
    public let rule: DBusMatchRule
    private weak var connection: DBusConnection?
    private var handler: ((DBusMessage) -> Void)?

    init(rule: DBusMatchRule, connection: DBusConnection, handler: @escaping (DBusMessage) -> Void) {
        self.rule = rule
        self.connection = connection
        self.handler = handler
    }

    public var isActive: Bool { handler != nil }

    func deliver(_ message: DBusMessage) { handler?(message) }

    /// Inactive from the start (its rule was invalid and never reached the bus).
    func deactivate() { handler = nil }

    /// Stops delivery at once and removes the rule from the bus. Idempotent.
    public func cancel() {
        guard handler != nil else { return }
        handler = nil
        guard let connection else { return }
        connection.subscriptions[ObjectIdentifier(self)] = nil
        connection.subscriptionOrder.removeAll { $0 === self }
        if connection.isConnected {
            connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                            member: "RemoveMatch", arguments: [.string(rule.description)]) { _ in }
        }
    }
}

extension DBusConnection {
    /// Delivers the signals matching `rule` to `handler`, in arrival order. The rule is added to
    /// the bus with AddMatch; `ready` runs when the bus has it (nil) or refused it: only signals
    /// emitted after that are sure to arrive.
    @discardableResult
    public func subscribe(_ rule: DBusMatchRule, ready: ((DBusError?) -> Void)? = nil,
                          handler: @escaping (DBusMessage) -> Void) -> DBusSubscription {
        let subscription = DBusSubscription(rule: rule, connection: self, handler: handler)
        do { try rule.validate() } catch {
            subscription.deactivate()
            loop.execute { ready?(error as? DBusError ?? .invalidValue("\(error)")) }
            return subscription
        }
        subscriptions[ObjectIdentifier(subscription)] = subscription
        subscriptionOrder.append(subscription)
        call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
             member: "AddMatch", arguments: [.string(rule.description)], replySignature: "") { result in
            switch result {
            case .success: ready?(nil)
            case .failure(let error): ready?(error)
            }
        }
        return subscription
    }

    /// ObjectManager.InterfacesAdded from `sender` (e.g. org.bluez), for objects at or below
    /// `namespace`. A signal with the wrong body reaches the handler as a typed error.
    @discardableResult
    public func onInterfacesAdded(sender: String?, namespace: DBusObjectPath? = nil, ready: ((DBusError?) -> Void)? = nil,
                                  _ handler: @escaping (Result<DBusInterfacesAdded, DBusError>) -> Void) -> DBusSubscription {
        let rule = DBusMatchRule(sender: sender, interface: DBusInterfaceName.objectManager, member: "InterfacesAdded")
        return subscribe(rule, ready: ready) { message in
            let result = Result { try DBusInterfacesAdded(message) }.mapError { $0 as? DBusError ?? .malformedMessage("\($0)") }
            if case .success(let added) = result, let namespace, !added.path.isDescendant(of: namespace) { return }
            handler(result)
        }
    }

    /// ObjectManager.InterfacesRemoved, as `onInterfacesAdded`.
    @discardableResult
    public func onInterfacesRemoved(sender: String?, namespace: DBusObjectPath? = nil, ready: ((DBusError?) -> Void)? = nil,
                                    _ handler: @escaping (Result<DBusInterfacesRemoved, DBusError>) -> Void) -> DBusSubscription {
        let rule = DBusMatchRule(sender: sender, interface: DBusInterfaceName.objectManager, member: "InterfacesRemoved")
        return subscribe(rule, ready: ready) { message in
            let result = Result { try DBusInterfacesRemoved(message) }.mapError { $0 as? DBusError ?? .malformedMessage("\($0)") }
            if case .success(let removed) = result, let namespace, !removed.path.isDescendant(of: namespace) { return }
            handler(result)
        }
    }

    /// Properties.PropertiesChanged from objects at or below `namespace` (nil: any), for one
    /// `interface` (nil: any).
    @discardableResult
    public func onPropertiesChanged(sender: String?, namespace: DBusObjectPath? = nil, interface: String? = nil,
                                    ready: ((DBusError?) -> Void)? = nil,
                                    _ handler: @escaping (Result<DBusPropertiesChanged, DBusError>) -> Void) -> DBusSubscription {
        let rule = DBusMatchRule(sender: sender, interface: DBusInterfaceName.properties, member: "PropertiesChanged",
                                 pathNamespace: namespace, arg0: interface)
        return subscribe(rule, ready: ready) { message in
            handler(Result { try DBusPropertiesChanged(message) }.mapError { $0 as? DBusError ?? .malformedMessage("\($0)") })
        }
    }
}

/// The standard interfaces' names.
public enum DBusInterfaceName {
    public static let properties = "org.freedesktop.DBus.Properties"
    public static let introspectable = "org.freedesktop.DBus.Introspectable"
    public static let objectManager = "org.freedesktop.DBus.ObjectManager"
    public static let peer = "org.freedesktop.DBus.Peer"
}

/// ObjectManager.InterfacesAdded(o object_path, a{sa{sv}} interfaces_and_properties).
public struct DBusInterfacesAdded: Equatable {
    public var path: DBusObjectPath
    public var interfaces: [String: [String: DBusValue]]
    /// The object manager's path (the signal's own path).
    public var manager: DBusObjectPath?

    public init(_ message: DBusMessage) throws {
        let args = try message.arguments(expecting: "oa{sa{sv}}")
        path = try args[0].asObjectPath()
        interfaces = try args[1].asInterfaceMap()
        manager = message.path
    }
}

/// ObjectManager.InterfacesRemoved(o object_path, as interfaces).
public struct DBusInterfacesRemoved: Equatable {
    public var path: DBusObjectPath
    public var interfaces: [String]
    public var manager: DBusObjectPath?

    public init(_ message: DBusMessage) throws {
        let args = try message.arguments(expecting: "oas")
        path = try args[0].asObjectPath()
        interfaces = try args[1].asStrings()
        manager = message.path
    }
}

/// Properties.PropertiesChanged(s interface, a{sv} changed, as invalidated), from the object at `path`.
public struct DBusPropertiesChanged: Equatable {
    public var path: DBusObjectPath
    public var interface: String
    public var changed: [String: DBusValue]
    public var invalidated: [String]

    public init(_ message: DBusMessage) throws {
        let args = try message.arguments(expecting: "sa{sv}as")
        guard let path = message.path else { throw DBusError.malformedMessage("PropertiesChanged without a path") }
        self.path = path
        interface = try args[0].asString()
        changed = try args[1].asPropertyMap()
        invalidated = try args[2].asStrings()
    }
}

extension DBusConnection {
    /// The outcome of RequestName (D-Bus Specification, "org.freedesktop.DBus.RequestName").
    public enum NameRequestResult: UInt32, Sendable {
        case primaryOwner = 1, inQueue = 2, exists = 3, alreadyOwner = 4
    }

    /// Asks the bus for a well-known name (e.g. a fake "org.bluez" on a private bus), without
    /// queueing: `.exists` when someone else has it.
    public func requestName(_ name: String, completion: @escaping (Result<NameRequestResult, DBusError>) -> Void) {
        do { try DBusNames.busName(name) } catch {
            let failure = error as? DBusError ?? .invalidName(name, reason: "\(error)")
            loop.execute { completion(.failure(failure)) }
            return
        }
        let doNotQueue: UInt32 = 4
        call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
             member: "RequestName", arguments: [.string(name), .uint32(doNotQueue)], replySignature: "u") { result in
            completion(result.flatMap { values in
                guard case .uint32(let code) = values[0], let answer = NameRequestResult(rawValue: code) else {
                    return .failure(.unexpectedType(expected: "RequestName code 1...4", actual: "\(values[0])"))
                }
                return .success(answer)
            })
        }
    }
}

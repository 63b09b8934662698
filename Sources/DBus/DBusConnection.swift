import BLERuntime
import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// A connection to a D-Bus message bus, driven by a `SystemEventLoop`: libdbus's descriptors
/// are watched with `watch(fd:for:)`, its timeouts are loop timers, and incoming messages are
/// dispatched from loop tasks. No thread, no global queue; after connecting, nothing blocks.
///
/// Connecting is the one synchronous step: libdbus connects the socket, authenticates and this
/// sends `Hello` and waits for the unique name (bounded by `helloTimeout`; a local socket answers
/// in milliseconds). Method calls are asynchronous (`call`), with a timeout on the loop's clock.
///
/// Single-threaded like the loop: use it only from the loop's thread.
public final class DBusConnection {
    /// Which bus to connect to.
    public enum Bus: Sendable, Equatable {
        /// DBUS_SYSTEM_BUS_ADDRESS, else unix:path=/var/run/dbus/system_bus_socket (where bluetoothd is).
        case system
        /// DBUS_SESSION_BUS_ADDRESS (there is no fallback: libdbus's autolaunch is not used).
        case session
        /// A D-Bus address, e.g. `unix:path=/tmp/lab/bus` (a private dbus-daemon).
        case address(String)

        /// The address this bus resolves to now.
        public func resolve() throws -> String {
            switch self {
            case .address(let a): return a
            case .system:
                if let env = getenv("DBUS_SYSTEM_BUS_ADDRESS") { return String(cString: env) }
                return "unix:path=/var/run/dbus/system_bus_socket"
            case .session:
                guard let env = getenv("DBUS_SESSION_BUS_ADDRESS"), env.pointee != 0 else {
                    throw DBusError.noBusAddress("the session bus was asked for but DBUS_SESSION_BUS_ADDRESS is not set")
                }
                return String(cString: env)
            }
        }
    }

    public let loop: SystemEventLoop
    /// The address connected to.
    public let address: String
    /// The bus's name for this connection (":1.42"); empty until `connect` has registered.
    public private(set) var uniqueName = ""
    /// Called once when the connection closes for any reason but `close()`: the bus went away.
    public var onDisconnect: ((DBusError) -> Void)?

    var raw: OpaquePointer?
    private var watches: [OpaquePointer: FDWatch] = [:]
    private var timeouts: [OpaquePointer: LoopTimer] = [:]
    private var dispatchScheduled = false
    private var dispatching = false
    var pendingCalls: [ObjectIdentifier: DBusPendingCall] = [:]
    /// Calls made so far: orders pending calls failed together.
    var callsMade: UInt64 = 0
    var subscriptions: [ObjectIdentifier: DBusSubscription] = [:]
    /// Subscriptions in the order they were made: handlers run in this order.
    var subscriptionOrder: [DBusSubscription] = []
    var exportedObjects: [DBusObjectPath: DBusExportedObject] = [:]
    var objectManagers: Set<DBusObjectPath> = []

    /// Messages dispatched per loop task before yielding to descriptors and timers.
    private static let dispatchBatch = 64

    /// Connects, authenticates and registers with the bus, waiting for the bus's answer (at most
    /// `helloTimeout`). Throws `noBusAddress` when `bus` names none, `busUnavailable` (with the
    /// address tried) when nothing answers there. `connect(bus:loop:timeout:completion:)` does
    /// the same without blocking.
    public convenience init(bus: Bus, loop: SystemEventLoop, helloTimeout: TimeSpan = .seconds(5)) throws {
        try self.init(opening: try bus.resolve(), loop: loop)
        guard let connection = raw else { throw DBusError.outOfMemory }
        var error = LibDBusError()
        defer { error.free() }
        // Authentication first, in bounded steps: libdbus's blocking send waits for it with no
        // timeout at all (poll(2) with -1), so a socket that never answers would hang here.
        let deadline = loop.now + helloTimeout
        func remainingMilliseconds() -> Int32 {
            Int32(clamping: max(0, ((deadline - loop.now).nanoseconds + 999_999) / 1_000_000))
        }
        while dbus_connection_get_is_authenticated(connection) == 0 {
            guard dbus_connection_get_is_connected(connection) != 0 else {
                abandonOpening()
                throw DBusError.busUnavailable(address: address, name: DBusErrorReply.failed,
                                               message: "the bus closed the connection during authentication")
            }
            let wait = remainingMilliseconds()
            guard wait > 0 else {
                abandonOpening()
                throw DBusError.busUnavailable(address: address, name: DBusErrorReply.noReply,
                                               message: "Hello failed: no answer to authentication within \(helloTimeout)")
            }
            _ = dbus_connection_read_write(connection, wait)
        }
        let hello = try DBusConnection.helloMessage()
        let milliseconds = max(1, remainingMilliseconds())
        guard let reply = dbus_connection_send_with_reply_and_block(connection, hello.raw, milliseconds, &error.raw) else {
            abandonOpening()
            throw DBusError.busUnavailable(address: address, name: error.name, message: "Hello failed: \(error.message)")
        }
        do {
            try registered(DBusMessage(owning: reply))
        } catch {
            abandonOpening()
            throw error
        }
        try installLoopIntegration(connection)
    }

    /// Connects without blocking: the socket is opened at once (a missing one fails here, on the
    /// next loop turn), then authentication and Hello run on the loop; `completion` gets the
    /// registered connection, or `busUnavailable` when the bus did not answer within `timeout`.
    public static func connect(bus: Bus, loop: SystemEventLoop, timeout: TimeSpan = .seconds(5),
                               completion: @escaping (Result<DBusConnection, DBusError>) -> Void) {
        let connection: DBusConnection
        let hello: DBusMessage
        do {
            connection = try DBusConnection(opening: try bus.resolve(), loop: loop)
            guard let raw = connection.raw else { throw DBusError.outOfMemory }
            try connection.installLoopIntegration(raw)
            hello = try helloMessage()
        } catch {
            let failure = error as? DBusError ?? .invalidValue("\(error)")
            loop.execute { completion(.failure(failure)) }
            return
        }
        connection.call(hello, timeout: timeout) { result in
            do {
                let reply: DBusMessage
                switch result {
                case .success(let r): reply = r
                case .failure(.remote(let e)):
                    throw DBusError.busUnavailable(address: connection.address, name: e.name, message: "Hello failed: \(e.message)")
                case .failure(let e):
                    throw DBusError.busUnavailable(address: connection.address, name: DBusErrorReply.noReply, message: "Hello failed: \(e)")
                }
                try connection.registered(reply)
                completion(.success(connection))
            } catch {
                connection.close()
                completion(.failure(error as? DBusError ?? .invalidValue("\(error)")))
            }
        }
    }

    /// Opens the socket (libdbus authenticates on the first I/O). Not yet registered.
    private init(opening address: String, loop: SystemEventLoop) throws {
        self.loop = loop
        self.address = address
        var error = LibDBusError()
        defer { error.free() }
        guard let connection = dbus_connection_open_private(address, &error.raw) else {
            throw DBusError.busUnavailable(address: address, name: error.name, message: error.message)
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        raw = connection
    }

    /// Hello (D-Bus Specification, "Message Bus Messages"): the first call on a bus connection.
    private static func helloMessage() throws -> DBusMessage {
        try DBusMessage.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                   interface: "org.freedesktop.DBus", member: "Hello")
    }

    /// Takes the unique name from Hello's reply.
    private func registered(_ reply: DBusMessage) throws {
        guard let raw, case .string(let name)? = try? reply.arguments(expecting: "s").first else {
            throw DBusError.busUnavailable(address: address, name: DBusErrorReply.failed,
                                           message: "Hello answered with '\(reply.signature)', not a unique name")
        }
        _ = dbus_bus_set_unique_name(raw, name)
        uniqueName = name
    }

    /// Closes a connection that never got going (no loop integration yet).
    private func abandonOpening() {
        guard let connection = raw else { return }
        raw = nil
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    deinit { close() }

    /// True until closed or disconnected.
    public var isConnected: Bool {
        guard let raw else { return false }
        return dbus_connection_get_is_connected(raw) != 0
    }

    /// Whether file descriptors (`h`) can be sent on this connection (unix sockets only).
    public var canPassFileDescriptors: Bool {
        guard let raw else { return false }
        return dbus_connection_can_send_type(raw, DBusMarshal.code("h")) != 0
    }

    /// Closes the connection. Calls still waiting complete with `.disconnected`; `onDisconnect`
    /// is not called. Idempotent.
    public func close() {
        guard let connection = raw else { return }
        raw = nil
        onDisconnect = nil
        failAllPending(.disconnected("closed by this side"))
        dbus_connection_close(connection)
        teardown(connection)
    }

    private func teardown(_ connection: OpaquePointer) {
        let release = { [watches, timeouts] in
            dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
            dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
            dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
            for w in watches.values { w.cancel() }
            for t in timeouts.values { t.cancel() }
            dbus_connection_unref(connection)
        }
        watches.removeAll()
        timeouts.removeAll()
        if dispatching {
            // Still inside dbus_connection_dispatch (a handler closed us): let it return first.
            dbus_connection_remove_filter(connection, DBusConnection.filterFunction, Unmanaged.passUnretained(self).toOpaque())
            loop.execute(release)
        } else {
            dbus_connection_remove_filter(connection, DBusConnection.filterFunction, Unmanaged.passUnretained(self).toOpaque())
            release()
        }
    }

    // MARK: Sending

    /// Sends a message that wants no reply (a signal, a reply, a call with no reply expected).
    public func send(_ message: DBusMessage) throws {
        guard let raw, isConnected else { throw DBusError.disconnected("cannot send \(message): not connected") }
        try checkFileDescriptors(message)
        guard dbus_connection_send(raw, message.raw, nil) != 0 else { throw DBusError.outOfMemory }
    }

    private func checkFileDescriptors(_ message: DBusMessage) throws {
        if message.signature.contains("h"), !canPassFileDescriptors {
            throw DBusError.invalidValue("\(message) carries file descriptors, which this connection (\(address)) cannot pass")
        }
    }

    /// Sends a method call; `completion` runs on the loop with the reply, or with `.remote` for an
    /// error reply, `.timeout` when none came within `timeout` (on the loop's clock), or
    /// `.disconnected`. It runs exactly once unless the returned call is cancelled first.
    @discardableResult
    public func call(_ message: DBusMessage, timeout: TimeSpan = .seconds(25),
                     completion: @escaping (Result<DBusMessage, DBusError>) -> Void) -> DBusPendingCall {
        let pending = DBusPendingCall(description: message.callDescription, connection: self, completion: completion)
        guard let raw, isConnected else {
            pending.finishSoon(.failure(.disconnected("cannot call \(message.callDescription): not connected")))
            return pending
        }
        do { try checkFileDescriptors(message) } catch {
            pending.finishSoon(.failure(error as! DBusError))
            return pending
        }
        var rawPending: OpaquePointer?
        // libdbus's own timeout is off: the loop's timer below is the one clock that counts.
        guard dbus_connection_send_with_reply(raw, message.raw, &rawPending, cdbus_timeout_infinite) != 0 else {
            pending.finishSoon(.failure(.outOfMemory))
            return pending
        }
        guard let rawPending else {
            pending.finishSoon(.failure(.disconnected("the connection closed before \(message.callDescription) was sent")))
            return pending
        }
        pending.start(rawPending, timeout: timeout)
        return pending
    }

    /// `call` for a method by name, with the reply's signature checked: a reply whose body is
    /// not `replySignature` completes with `.unexpectedSignature` (nil: any signature).
    @discardableResult
    public func call(destination: String?, path: DBusObjectPath, interface: String, member: String,
                     arguments: [DBusValue] = [], replySignature: String? = nil, timeout: TimeSpan = .seconds(25),
                     completion: @escaping (Result<[DBusValue], DBusError>) -> Void) -> DBusPendingCall? {
        let message: DBusMessage
        do {
            message = try DBusMessage.methodCall(destination: destination, path: path, interface: interface,
                                                 member: member, arguments: arguments)
        } catch {
            let failure = error as? DBusError ?? .invalidValue("\(error)")
            loop.execute { completion(.failure(failure)) }
            return nil
        }
        return call(message, timeout: timeout) { result in
            completion(result.flatMap { reply in
                do {
                    if let replySignature { return .success(try reply.arguments(expecting: replySignature)) }
                    return .success(try reply.arguments())
                } catch {
                    return .failure(error as? DBusError ?? .malformedMessage("\(error)"))
                }
            })
        }
    }

    /// Emits a signal from `path`.
    public func emitSignal(path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue] = []) throws {
        try send(try DBusMessage.signal(path: path, interface: interface, member: member, arguments: arguments))
    }

    func pendingFinished(_ call: DBusPendingCall) {
        pendingCalls[ObjectIdentifier(call)] = nil
    }

    private func failAllPending(_ error: DBusError) {
        let calls = pendingCalls.values.sorted { $0.order < $1.order }
        pendingCalls.removeAll()
        for c in calls { c.abandon(with: error) }
    }

    // MARK: The loop

    private func installLoopIntegration(_ connection: OpaquePointer) throws {
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard dbus_connection_set_watch_functions(connection, { watch, data in
            DBusConnection.from(data).addWatch(watch!)
            return 1
        }, { watch, data in
            DBusConnection.from(data).removeWatch(watch!)
        }, { watch, data in
            let connection = DBusConnection.from(data)
            connection.removeWatch(watch!)
            connection.addWatch(watch!)
        }, me, nil) != 0 else { throw DBusError.outOfMemory }

        guard dbus_connection_set_timeout_functions(connection, { timeout, data in
            DBusConnection.from(data).addTimeout(timeout!)
            return 1
        }, { timeout, data in
            DBusConnection.from(data).removeTimeout(timeout!)
        }, { timeout, data in
            let connection = DBusConnection.from(data)
            connection.removeTimeout(timeout!)
            connection.addTimeout(timeout!)
        }, me, nil) != 0 else { throw DBusError.outOfMemory }

        dbus_connection_set_dispatch_status_function(connection, { _, status, data in
            if status == DBUS_DISPATCH_DATA_REMAINS { DBusConnection.from(data).scheduleDispatch() }
        }, me, nil)

        guard dbus_connection_add_filter(connection, DBusConnection.filterFunction, me, nil) != 0 else {
            throw DBusError.outOfMemory
        }
        if dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS { scheduleDispatch() }
    }

    static func from(_ data: UnsafeMutableRawPointer?) -> DBusConnection {
        Unmanaged<DBusConnection>.fromOpaque(data!).takeUnretainedValue()
    }

    private func addWatch(_ watch: OpaquePointer) {
        guard dbus_watch_get_enabled(watch) != 0 else { return }
        let flags = dbus_watch_get_flags(watch)
        var events: FDEvents = []
        if flags & DBUS_WATCH_READABLE.rawValue != 0 { events.insert(.readable) }
        if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events.insert(.writable) }
        let fd = dbus_watch_get_unix_fd(watch)
        guard fd >= 0 else { return }
        watches[watch] = loop.watch(fd: fd, for: events) { [weak self] reported in
            self?.handleWatch(watch, reported)
        }
    }

    private func removeWatch(_ watch: OpaquePointer) {
        watches.removeValue(forKey: watch)?.cancel()
    }

    private func handleWatch(_ watch: OpaquePointer, _ reported: FDEvents) {
        guard watches[watch] != nil else { return }
        var flags: UInt32 = 0
        if reported.contains(.readable) { flags |= DBUS_WATCH_READABLE.rawValue }
        if reported.contains(.writable) { flags |= DBUS_WATCH_WRITABLE.rawValue }
        if reported.contains(.error) || reported.contains(.invalid) { flags |= DBUS_WATCH_ERROR.rawValue }
        if reported.contains(.hangUp) { flags |= DBUS_WATCH_HANGUP.rawValue }
        _ = dbus_watch_handle(watch, flags)
        if let raw, dbus_connection_get_dispatch_status(raw) == DBUS_DISPATCH_DATA_REMAINS { scheduleDispatch() }
    }

    private func addTimeout(_ timeout: OpaquePointer) {
        guard dbus_timeout_get_enabled(timeout) != 0 else { return }
        let interval = TimeSpan.milliseconds(Int64(dbus_timeout_get_interval(timeout)))
        timeouts[timeout] = loop.schedule(after: interval) { [weak self] in self?.fireTimeout(timeout) }
    }

    private func removeTimeout(_ timeout: OpaquePointer) {
        timeouts.removeValue(forKey: timeout)?.cancel()
    }

    private func fireTimeout(_ timeout: OpaquePointer) {
        guard timeouts.removeValue(forKey: timeout) != nil else { return }
        // libdbus's timeouts repeat until removed: re-arm before handling, so a removal during
        // the handler cancels the new timer.
        addTimeout(timeout)
        _ = dbus_timeout_handle(timeout)
        if let raw, dbus_connection_get_dispatch_status(raw) == DBUS_DISPATCH_DATA_REMAINS { scheduleDispatch() }
    }

    private func scheduleDispatch() {
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        loop.execute { [weak self] in self?.dispatchSome() }
    }

    private func dispatchSome() {
        dispatchScheduled = false
        guard let connection = raw else { return }
        dbus_connection_ref(connection)
        defer { dbus_connection_unref(connection) }
        var count = 0
        while raw != nil, dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS {
            if count == DBusConnection.dispatchBatch {
                scheduleDispatch()
                return
            }
            dispatching = true
            _ = dbus_connection_dispatch(connection)
            dispatching = false
            count += 1
        }
    }

    // MARK: Incoming messages

    private static let filterFunction: DBusHandleMessageFunction = { _, message, data in
        let connection = DBusConnection.from(data)
        return connection.handle(DBusMessage(retaining: message!)) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }

    /// Every message not taken by a pending call: signals to subscriptions, calls to exported objects.
    private func handle(_ message: DBusMessage) -> Bool {
        switch message.kind {
        case .signal:
            if message.interface == "org.freedesktop.DBus.Local", message.member == "Disconnected" {
                disconnected()
                return true
            }
            var delivered = false
            for subscription in subscriptionOrder where subscription.isActive && subscription.rule.matches(message) {
                subscription.deliver(message)
                delivered = true
            }
            return delivered
        case .methodCall:
            return dispatchMethodCall(message)
        default:
            return false
        }
    }

    private func disconnected() {
        guard let connection = raw else { return }
        raw = nil
        let error = DBusError.disconnected("the bus at \(address) went away")
        failAllPending(error)
        teardown(connection)
        let handler = onDisconnect
        onDisconnect = nil
        handler?(error)
    }
}

/// A method call waiting for its reply. `cancel()` drops it: its completion never runs.
public final class DBusPendingCall {
    /// "interface.Member on /path at destination".
    public let callDescription: String
    private weak var connection: DBusConnection?
    private var completion: ((Result<DBusMessage, DBusError>) -> Void)?
    private var raw: OpaquePointer?
    private var timer: LoopTimer?
    let order: UInt64

    init(description: String, connection: DBusConnection, completion: @escaping (Result<DBusMessage, DBusError>) -> Void) {
        callDescription = description
        self.connection = connection
        self.completion = completion
        connection.callsMade &+= 1
        order = connection.callsMade
    }

    /// True until completed or cancelled.
    public var isPending: Bool { completion != nil }

    func start(_ pendingCall: OpaquePointer, timeout: TimeSpan) {
        guard let connection else { return }
        raw = pendingCall
        connection.pendingCalls[ObjectIdentifier(self)] = self
        // libdbus keeps a reference to this object until the pending call is freed.
        let retained = Unmanaged.passRetained(self).toOpaque()
        dbus_pending_call_set_notify(pendingCall, { pending, data in
            let call = Unmanaged<DBusPendingCall>.fromOpaque(data!).takeUnretainedValue()
            call.replied(pending!)
        }, retained, { data in
            Unmanaged<DBusPendingCall>.fromOpaque(data!).release()
        })
        timer = connection.loop.schedule(after: timeout) { [weak self] in
            self?.finish(.failure(.timeout(call: self?.callDescription ?? "", after: timeout)), cancelInLibdbus: true)
        }
    }

    /// Completes on the next loop turn (for failures found before anything was sent).
    func finishSoon(_ result: Result<DBusMessage, DBusError>) {
        connection?.loop.execute { [self] in finish(result, cancelInLibdbus: false) }
    }

    private func replied(_ pending: OpaquePointer) {
        guard let reply = dbus_pending_call_steal_reply(pending) else { return }
        let message = DBusMessage(owning: reply)
        if let error = message.errorReply {
            // libdbus answers a call the connection lost with a NoReply error of its own.
            if connection?.isConnected != true {
                finish(.failure(.disconnected("the bus at \(connection?.address ?? "?") went away before \(callDescription) was answered")), cancelInLibdbus: false)
            } else {
                finish(.failure(.remote(error)), cancelInLibdbus: false)
            }
        } else {
            finish(.success(message), cancelInLibdbus: false)
        }
    }

    /// Fails the call because the connection closed.
    func abandon(with error: DBusError) {
        finish(.failure(error), cancelInLibdbus: true)
    }

    public func cancel() {
        completion = nil
        release(cancelInLibdbus: true)
    }

    private func finish(_ result: Result<DBusMessage, DBusError>, cancelInLibdbus: Bool) {
        guard let completion else { return }
        self.completion = nil
        release(cancelInLibdbus: cancelInLibdbus)
        completion(result)
    }

    private func release(cancelInLibdbus: Bool) {
        timer?.cancel()
        timer = nil
        connection?.pendingFinished(self)
        if let raw {
            self.raw = nil
            if cancelInLibdbus { dbus_pending_call_cancel(raw) }
            dbus_pending_call_unref(raw)
        }
    }
}

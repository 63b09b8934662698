import BLERuntime
@testable import DBus
import DBusTestSupport
import Foundation
import XCTest

/// Connecting, calling the bus daemon, timeouts and disconnection, on a private dbus-daemon.
final class ConnectionTests: BusTestCase {
    func testConnectsAndCallsTheBus() throws {
        let c = try connect()
        XCTAssertTrue(c.uniqueName.hasPrefix(":"), c.uniqueName)
        XCTAssertTrue(c.isConnected)
        XCTAssertTrue(c.canPassFileDescriptors, "a unix socket passes descriptors")
        XCTAssertGreaterThan(loop.watchCount, 0, "libdbus's socket is watched by the loop")

        let names = success(callResult(c, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                       interface: "org.freedesktop.DBus", member: "ListNames", replySignature: "as"))
        XCTAssertTrue(try XCTUnwrap(names?.first).asStrings().contains(c.uniqueName))

        c.close()
        XCTAssertFalse(c.isConnected)
        XCTAssertEqual(loop.watchCount, 0, "closing leaves no watch behind")
    }

    func testConnectsWithoutBlocking() throws {
        var connected: Result<DBusConnection, DBusError>?
        DBusConnection.connect(bus: .address(bus.address), loop: loop) { connected = $0 }
        XCTAssertNil(connected, "the completion runs on the loop")
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { connected != nil }))
        let c = try XCTUnwrap(connected).get()
        defer { c.close() }
        XCTAssertTrue(c.uniqueName.hasPrefix(":"), c.uniqueName)
        let names = success(callResult(c, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                       interface: "org.freedesktop.DBus", member: "ListNames", replySignature: "as"))
        XCTAssertTrue(try XCTUnwrap(names?.first).asStrings().contains(c.uniqueName))

        let missing = "unix:path=\(bus.folder.path)/absent"
        let failed: Result<DBusConnection, DBusError>? = wait { done in DBusConnection.connect(bus: .address(missing), loop: loop, completion: done) }
        guard case .failure(.busUnavailable(let tried, _, _))? = failed else { return XCTFail("\(String(describing: failed))") }
        XCTAssertEqual(tried, missing)
    }

    /// A socket that accepts but never speaks D-Bus (a hung daemon): a clear error after the
    /// timeout, both ways of connecting, and the loop is not blocked by the asynchronous one.
    func testSilentSocketTimesOut() throws {
        let path = bus.folder.appendingPathComponent("silent").path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(listener, 4), 0)

        XCTAssertThrowsError(try DBusConnection(bus: .address("unix:path=\(path)"), loop: loop, helloTimeout: .milliseconds(200))) { error in
            guard case .busUnavailable(let tried, _, let message)? = error as? DBusError else { return XCTFail("\(error)") }
            XCTAssertEqual(tried, "unix:path=\(path)")
            XCTAssertTrue(message.contains("Hello failed"), message)
        }

        var ticks = 0
        func tick() { ticks += 1; loop.schedule(after: .milliseconds(20)) { tick() } }
        tick()
        let start = loop.now
        let failed: Result<DBusConnection, DBusError>? = wait { done in
            DBusConnection.connect(bus: .address("unix:path=\(path)"), loop: loop, timeout: .milliseconds(300), completion: done)
        }
        guard case .failure(.busUnavailable(_, _, let message))? = failed else { return XCTFail("\(String(describing: failed))") }
        XCTAssertTrue(message.contains("no reply within 300ms"), message)
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(300))
        XCTAssertGreaterThanOrEqual(ticks, 5, "other timers ran while connecting")
        XCTAssertEqual(loop.watchCount, 0, "the failed connection left no watch")
    }

    func testMissingBusNamesTheAddress() throws {
        let address = "unix:path=\(bus.folder.path)/no-such-socket"
        XCTAssertThrowsError(try DBusConnection(bus: .address(address), loop: loop)) { error in
            guard case .busUnavailable(let tried, let name, let message)? = error as? DBusError else { return XCTFail("\(error)") }
            XCTAssertEqual(tried, address)
            XCTAssertFalse(name.isEmpty)
            XCTAssertTrue(message.contains("no-such-socket"), message)
            XCTAssertTrue("\(error)".contains(address))
        }
        XCTAssertThrowsError(try DBusConnection(bus: .address("nonsense"), loop: loop)) { error in
            guard case .busUnavailable(let tried, _, _)? = error as? DBusError else { return XCTFail("\(error)") }
            XCTAssertEqual(tried, "nonsense")
        }
    }

    func testSessionBusWithoutAnAddressIsAClearError() throws {
        let saved = getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) }
        unsetenv("DBUS_SESSION_BUS_ADDRESS")
        defer { if let saved { setenv("DBUS_SESSION_BUS_ADDRESS", saved, 1) } }
        XCTAssertThrowsError(try DBusConnection(bus: .session, loop: loop)) { error in
            guard case .noBusAddress(let why)? = error as? DBusError else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("DBUS_SESSION_BUS_ADDRESS"), why)
        }
        setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1)
        let c = try DBusConnection(bus: .session, loop: loop)
        XCTAssertEqual(c.address, bus.address)
        c.close()
    }

    func testSystemBusAddressComesFromTheEnvironment() throws {
        let saved = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) }
        defer { if let saved { setenv("DBUS_SYSTEM_BUS_ADDRESS", saved, 1) } else { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") } }
        unsetenv("DBUS_SYSTEM_BUS_ADDRESS")
        XCTAssertEqual(try DBusConnection.Bus.system.resolve(), "unix:path=/var/run/dbus/system_bus_socket")
        setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.address, 1)
        let c = try DBusConnection(bus: .system, loop: loop)
        XCTAssertEqual(c.address, bus.address)
        c.close()
    }

    func testUnknownServiceIsARemoteError() throws {
        let c = try connect()
        let error = failure(callResult(c, destination: "org.example.Nobody", path: "/", interface: "org.example.X", member: "M"))
        guard case .remote(let reply)? = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(reply.name, DBusErrorReply.serviceUnknown)
    }

    func testDaemonGoingAwayFailsPendingCallsAndTellsTheOwner() throws {
        let server = try connect()
        let client = try connect()
        // A method that never answers keeps the call pending until the bus dies.
        try server.export(DBusExportedObject(path: "/hang", interfaces: [
            DBusInterface("org.example.Hang", methods: [DBusMethod("Hang") { [unowned self] invocation in self.held.append(invocation) }]),
        ]))
        var disconnectedWith: DBusError?
        client.onDisconnect = { disconnectedWith = $0 }
        var result: Result<[DBusValue], DBusError>?
        client.call(destination: server.uniqueName, path: "/hang", interface: "org.example.Hang", member: "Hang") { result = $0 }
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { !self.held.isEmpty }))

        bus.stop()
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { result != nil && disconnectedWith != nil }))
        guard case .failure(.disconnected(let what))? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertTrue(what.contains(bus.address), what)
        guard case .disconnected? = disconnectedWith else { return XCTFail("\(String(describing: disconnectedWith))") }
        XCTAssertFalse(client.isConnected)
        XCTAssertEqual(loop.watchCount, 0, "both connections' watches are gone")

        // A call on the dead connection fails at once, on the loop.
        let late = wait { done in client.call(destination: "org.freedesktop.DBus", path: "/", interface: "org.freedesktop.DBus",
                                              member: "ListNames", completion: done) }
        guard case .failure(.disconnected)? = late else { return XCTFail("\(String(describing: late))") }
        held.removeAll()
    }

    private var held: [DBusMethodInvocation] = []

    /// The service (bluetoothd, later) going away under a call: the bus stays, and it answers
    /// the call with NoReply itself.
    func testServiceVanishingMidCallIsANoReplyFromTheBus() throws {
        let server = try connect()
        let client = try connect()
        try server.export(DBusExportedObject(path: "/hang", interfaces: [
            DBusInterface("org.example.Hang", methods: [DBusMethod("Hang") { [unowned self] invocation in self.held.append(invocation) }]),
        ]))
        var result: Result<[DBusValue], DBusError>?
        client.call(destination: server.uniqueName, path: "/hang", interface: "org.example.Hang", member: "Hang") { result = $0 }
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { !self.held.isEmpty }))
        server.close()
        held.removeAll()   // dropped after the close: its Failed answer cannot be sent any more
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { result != nil }))
        guard case .failure(.remote(let reply))? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertEqual(reply.name, DBusErrorReply.noReply)
        XCTAssertTrue(client.isConnected)
    }

    func testLargeMessagesBothWays() throws {
        // 512 KiB each way: more than a unix socket buffer holds (~208 KiB), so libdbus must wait for
        // the writable watch to finish sending.
        let server = try connect()
        let client = try connect()
        try server.export(DBusExportedObject(path: "/echo", interfaces: [
            DBusInterface("org.example.Echo", methods: [
                DBusMethod("Bytes", inputs: [DBusArgument("in", .bytes)], outputs: [DBusArgument("out", .bytes)]) { call in
                    call.reply([.bytes(try! call.arguments[0].asBytes().reversed())])
                },
            ]),
        ]))
        let payload = (0..<(1 << 19)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let values = success(callResult(client, destination: server.uniqueName, path: "/echo", interface: "org.example.Echo",
                                        member: "Bytes", arguments: [.bytes(payload)], replySignature: "ay"))
        XCTAssertEqual(try values?.first?.asBytes(), payload.reversed())
    }

    func testFileDescriptorsPassThroughTheBus() throws {
        let server = try connect()
        let client = try connect()
        var received: Int32 = -1
        try server.export(DBusExportedObject(path: "/fd", interfaces: [
            DBusInterface("org.example.FD", methods: [
                DBusMethod("Take", inputs: [DBusArgument("fd", .unixFD)]) { call in
                    received = (try? call.arguments[0].asUnixFD()) ?? -1
                    call.reply()
                },
            ]),
        ]))
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        _ = success(callResult(client, destination: server.uniqueName, path: "/fd", interface: "org.example.FD", member: "Take",
                               arguments: [.unixFD(fds[1])]))
        XCTAssertGreaterThanOrEqual(received, 0)
        XCTAssertNotEqual(received, fds[1], "the receiver gets its own descriptor")
        // Writing into the received descriptor reaches the pipe this side made.
        var byte: UInt8 = 0x5A
        XCTAssertEqual(write(received, &byte, 1), 1)
        close(received)
        var read1: UInt8 = 0
        XCTAssertEqual(read(fds[0], &read1, 1), 1)
        XCTAssertEqual(read1, 0x5A)
    }
}

import BLERuntime
@testable import DBus
import DBusTestSupport
import XCTest

/// An object exported on one connection, called from another and from itself, over the bus.
final class ExporterTests: BusTestCase {
    private var server: DBusConnection!
    private var client: DBusConnection!
    private var level: UInt8 = 50
    private var thingName = "thing"
    private var held: [DBusMethodInvocation] = []

    private let path: DBusObjectPath = "/org/example/app/thing0"
    private let iface = "org.example.Thing1"

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = try connect()
        client = try connect()
        try server.export(makeThing(at: path))
    }

    override func tearDown() {
        held.removeAll()
        super.tearDown()
    }

    private func makeThing(at path: DBusObjectPath) -> DBusExportedObject {
        DBusExportedObject(path: path, interfaces: [
            DBusInterface(iface, methods: [
                DBusMethod("Echo", inputs: [DBusArgument("text", .string)], outputs: [DBusArgument("text", .string)]) { call in
                    call.reply(call.arguments)
                },
                DBusMethod("ReadValue", inputs: [DBusArgument("options", .propertyMap)], outputs: [DBusArgument("value", .bytes)]) { [unowned self] call in
                    let offset = (try? call.arguments[0].asPropertyMap()["offset"]?.asUInt16()) ?? 0
                    call.reply([.bytes(Array([self.level, 1, 2, 3].dropFirst(Int(offset))))])
                },
                DBusMethod("Refuse") { call in call.fail(DBusErrorReply(name: "org.bluez.Error.NotPermitted", message: "Write not permitted")) },
                DBusMethod("Vendor") { call in call.fail(DBusErrorReply(name: "org.bluez.Error.Vendor", message: "odd")) },
                DBusMethod("Hang") { [unowned self] call in self.held.append(call) },
                DBusMethod("Forget") { _ in },   // drops the call: the invocation answers Failed itself
                DBusMethod("Wrong", outputs: [DBusArgument("n", .uint32)]) { call in call.reply([.string("not a uint32")]) },
                // `count` Poked signals around the reply: before it (`first` true) or after it.
                DBusMethod("Burst", inputs: [DBusArgument("count", .uint32), DBusArgument("first", .boolean)]) { [unowned self] call in
                    guard case let .uint32(count)? = call.arguments.first, case let .boolean(first)? = call.arguments.last else {
                        _ = call.fail(DBusErrorReply(name: "org.bluez.Error.InvalidArguments", message: "count, first"))
                        return
                    }
                    let emit = { for n in 0..<count { try? self.server.emitSignal(path: self.path, interface: self.iface, member: "Poked", arguments: [.uint32(n)]) } }
                    if first { emit() }
                    _ = call.reply()
                    if !first { emit() }
                },
            ], properties: [
                DBusProperty("Level", .byte, get: { [unowned self] in .byte(self.level) }),
                DBusProperty("Name", .string, access: .readwrite, get: { [unowned self] in .string(self.thingName) },
                             set: { [unowned self] value in
                                 let text = try value.asString()
                                 guard !text.isEmpty else { throw DBusErrorReply(name: "org.bluez.Error.InvalidArguments", message: "empty name") }
                                 self.thingName = text
                             }),
                DBusProperty("Flags", .array(.string), emitsChanged: false, get: { .strings(["read", "notify"]) }),
            ], signals: [DBusSignalDeclaration("Poked", arguments: [DBusArgument("count", .uint32)])]),
        ])
    }

    private func call(_ member: String, _ arguments: [DBusValue] = [], on connection: DBusConnection? = nil,
                      interface: String? = nil, path: DBusObjectPath? = nil, replySignature: String? = nil,
                      timeout: TimeSpan = .seconds(5), file: StaticString = #filePath, line: UInt = #line) -> Result<[DBusValue], DBusError>? {
        callResult(connection ?? client, destination: server.uniqueName, path: path ?? self.path, interface: interface ?? iface,
                   member: member, arguments: arguments, replySignature: replySignature, timeout: timeout, file: file, line: line)
    }

    func testMethodFromAnotherConnectionAndFromItself() throws {
        XCTAssertEqual(success(call("Echo", [.string("hello")], replySignature: "s")), [.string("hello")])
        // The exporting connection calling its own object: through the bus and back.
        XCTAssertEqual(success(call("Echo", [.string("me")], on: server, replySignature: "s")), [.string("me")])
        XCTAssertEqual(success(call("ReadValue", [.propertyMap(["offset": .uint16(1)])], replySignature: "ay")), [.bytes([1, 2, 3])])
    }

    func testErrorRepliesAreMappedWithTheirNames() throws {
        guard case .remote(let reply)? = failure(call("Refuse")) else { return XCTFail() }
        XCTAssertEqual(reply.name, "org.bluez.Error.NotPermitted")
        XCTAssertEqual(reply.message, "Write not permitted")
        XCTAssertEqual(failure(call("Vendor")), .remote(DBusErrorReply(name: "org.bluez.Error.Vendor", message: "odd")))

        guard case .remote(let unknown)? = failure(call("Nope")) else { return XCTFail() }
        XCTAssertEqual(unknown.name, DBusErrorReply.unknownMethod)
        guard case .remote(let noInterface)? = failure(call("Echo", [.string("x")], interface: "org.example.Other")) else { return XCTFail() }
        XCTAssertEqual(noInterface.name, DBusErrorReply.unknownInterface)
        guard case .remote(let noObject)? = failure(call("Echo", [.string("x")], path: "/nowhere")) else { return XCTFail() }
        XCTAssertEqual(noObject.name, DBusErrorReply.unknownObject)
        guard case .remote(let dropped)? = failure(call("Forget")) else { return XCTFail() }
        XCTAssertEqual(dropped.name, DBusErrorReply.failed)
        XCTAssertTrue(dropped.message.contains("without a reply"), dropped.message)
    }

    func testSignaturesAreCheckedBothWays() throws {
        // The caller sends the wrong argument type: InvalidArgs, the handler never runs.
        guard case .remote(let invalid)? = failure(call("Echo", [.uint32(7)])) else { return XCTFail() }
        XCTAssertEqual(invalid.name, DBusErrorReply.invalidArgs)
        XCTAssertTrue(invalid.message.contains("'s'") && invalid.message.contains("'u'"), invalid.message)
        // The reply is not what the caller expects: a typed error, not a crash.
        guard case .unexpectedSignature(let expected, let actual, _)? = failure(call("Echo", [.string("x")], replySignature: "u")) else {
            return XCTFail()
        }
        XCTAssertEqual(expected, "u")
        XCTAssertEqual(actual, "s")
        // The exporter's handler answers with the wrong type: the caller gets Failed naming it.
        guard case .remote(let wrong)? = failure(call("Wrong")) else { return XCTFail() }
        XCTAssertEqual(wrong.name, DBusErrorReply.failed)
        XCTAssertTrue(wrong.message.contains("'s' instead of 'u'"), wrong.message)
    }

    func testTimeoutOnTheLoopsClock() throws {
        let start = loop.now
        guard case .timeout(let what, let after)? = failure(call("Hang", timeout: .milliseconds(200))) else { return XCTFail() }
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(200))
        XCTAssertEqual(after, .milliseconds(200))
        XCTAssertTrue(what.contains("org.example.Thing1.Hang"), what)
        // The late answer reaches nobody: the completion ran once and the loop goes on.
        XCTAssertEqual(held.count, 1)
        held[0].reply()
        XCTAssertEqual(success(call("Echo", [.string("after")])), [.string("after")])
        XCTAssertTrue(client.pendingCalls.isEmpty)
    }

    func testCancelledCallNeverCompletes() throws {
        var completions = 0
        let pending = client.call(destination: server.uniqueName, path: path, interface: iface, member: "Hang") { _ in completions += 1 }
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { !self.held.isEmpty }))
        pending?.cancel()
        held[0].reply()
        XCTAssertEqual(success(call("Echo", [.string("x")])), [.string("x")])   // the reply has come and gone by now
        XCTAssertEqual(completions, 0)
    }

    func testProperties() throws {
        let props = DBusInterfaceName.properties
        XCTAssertEqual(success(call("Get", [.string(iface), .string("Level")], interface: props, replySignature: "v")),
                       [.variant(.byte(50))])
        let all = try XCTUnwrap(success(call("GetAll", [.string(iface)], interface: props, replySignature: "a{sv}"))?.first).asPropertyMap()
        XCTAssertEqual(all, ["Level": .byte(50), "Name": .string("thing"), "Flags": .strings(["read", "notify"])])

        XCTAssertEqual(success(call("Set", [.string(iface), .string("Name"), .variant(.string("renamed"))], interface: props)), [])
        XCTAssertEqual(thingName, "renamed")

        let readOnly = failure(call("Set", [.string(iface), .string("Level"), .variant(.byte(1))], interface: props))
        guard case .remote(let r)? = readOnly else { return XCTFail() }
        XCTAssertEqual(r.name, DBusErrorReply.propertyReadOnly)
        guard case .remote(let t)? = failure(call("Set", [.string(iface), .string("Name"), .variant(.uint32(1))], interface: props)) else {
            return XCTFail()
        }
        XCTAssertEqual(t.name, DBusErrorReply.invalidArgs)
        guard case .remote(let refused)? = failure(call("Set", [.string(iface), .string("Name"), .variant(.string(""))], interface: props)) else {
            return XCTFail()
        }
        XCTAssertEqual(refused, DBusErrorReply(name: "org.bluez.Error.InvalidArguments", message: "empty name"))
        guard case .remote(let missing)? = failure(call("Get", [.string(iface), .string("Nope")], interface: props)) else { return XCTFail() }
        XCTAssertEqual(missing.name, DBusErrorReply.unknownProperty)
        guard case .remote(let badArgs)? = failure(call("Get", [.string(iface)], interface: props)) else { return XCTFail() }
        XCTAssertEqual(badArgs.name, DBusErrorReply.invalidArgs)
    }

    func testPropertiesChangedReachesASubscriber() throws {
        var changes: [DBusPropertiesChanged] = []
        let ready: DBusError?? = wait { done in
            client.onPropertiesChanged(sender: server.uniqueName, namespace: "/org/example", interface: iface, ready: done) { result in
                if case .success(let change) = result { changes.append(change) }
            }
        }
        XCTAssertEqual(ready, .some(nil))
        level = 42
        try server.propertiesChanged(path: path, interface: iface, ["Level", "Flags"])   // Flags does not emit
        // A Set emits too.
        _ = success(call("Set", [.string(iface), .string("Name"), .variant(.string("n2"))], interface: DBusInterfaceName.properties))
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { changes.count == 2 }))
        XCTAssertEqual(changes[0].path, path)
        XCTAssertEqual(changes[0].interface, iface)
        XCTAssertEqual(changes[0].changed, ["Level": .byte(42)])
        XCTAssertEqual(changes[0].invalidated, [])
        XCTAssertEqual(changes[1].changed, ["Name": .string("n2")])
    }

    func testSubscriptionFiltersAndCancel() throws {
        var poked: [UInt32] = []
        let rule = DBusMatchRule(interface: iface, member: "Poked", path: path)
        let subscription: DBusSubscription? = {
            var s: DBusSubscription?
            let r: DBusError?? = wait { done in s = client.subscribe(rule, ready: done) { m in
                if case .uint32(let n)? = try? m.arguments().first { poked.append(n) }
            } }
            XCTAssertEqual(r, .some(nil))
            return s
        }()
        try server.emitSignal(path: "/elsewhere", interface: iface, member: "Poked", arguments: [.uint32(0)])
        try server.emitSignal(path: path, interface: iface, member: "Poked", arguments: [.uint32(1)])
        try server.emitSignal(path: path, interface: iface, member: "Poked", arguments: [.uint32(2)])
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { poked.count == 2 }))
        XCTAssertEqual(poked, [1, 2])
        subscription?.cancel()
        try server.emitSignal(path: path, interface: iface, member: "Poked", arguments: [.uint32(3)])
        _ = success(call("Echo", [.string("sync")]))   // a round trip after the signal: it has been delivered by now, or dropped
        XCTAssertEqual(poked, [1, 2])
    }

    /// A reply among a burst of signals (many reads of libdbus's 2048 octets, many dispatch
    /// batches of 64): every message is delivered, in the bus's order, and the call completes
    /// with its reply, not its timeout (the BlueZ connect flake's suspect (a), ruled out).
    func testReplyAmidABurstOfSignalsKeepsTheBusOrder() throws {
        var log: [String] = []
        let rule = DBusMatchRule(interface: iface, member: "Poked", path: path)
        let ready: DBusError?? = wait { done in client.subscribe(rule, ready: done) { m in
            if case .uint32(let n)? = try? m.arguments().first { log.append("\(n)") }
        } }
        XCTAssertEqual(ready, .some(nil))
        for first in [true, false] {
            log = []
            var replied: Result<[DBusValue], DBusError>?
            client.call(destination: server.uniqueName, path: path, interface: iface, member: "Burst",
                        arguments: [.uint32(300), .boolean(first)], replySignature: "", timeout: .seconds(5)) { result in
                replied = result
                log.append("reply")
            }
            XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { replied != nil && log.count == 301 }), "\(log.count) of 301")
            guard case .success? = replied else { return XCTFail("no reply: \(String(describing: replied))") }
            let signals = (0..<300).map { "\($0)" }
            XCTAssertEqual(log, first ? signals + ["reply"] : ["reply"] + signals)
        }
    }

    func testMalformedSignalIsATypedError() throws {
        var results: [Result<DBusPropertiesChanged, DBusError>] = []
        let ready: DBusError?? = wait { done in
            client.onPropertiesChanged(sender: nil, namespace: "/org/example", ready: done) { results.append($0) }
        }
        XCTAssertEqual(ready, .some(nil))
        // A peer sending PropertiesChanged with a body that is not (sa{sv}as).
        try server.emitSignal(path: path, interface: DBusInterfaceName.properties, member: "PropertiesChanged",
                              arguments: [.string(iface), .uint32(1)])
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { !results.isEmpty }))
        guard case .failure(.unexpectedSignature(let expected, let actual, _)) = results[0] else { return XCTFail("\(results)") }
        XCTAssertEqual(expected, "sa{sv}as")
        XCTAssertEqual(actual, "su")
    }

    func testIntrospection() throws {
        let xml = try XCTUnwrap(success(call("Introspect", interface: DBusInterfaceName.introspectable, replySignature: "s"))?.first).asString()
        XCTAssertTrue(xml.contains("<interface name=\"org.example.Thing1\">"), xml)
        XCTAssertTrue(xml.contains("<method name=\"Echo\"><arg name=\"text\" type=\"s\" direction=\"in\"/><arg name=\"text\" type=\"s\" direction=\"out\"/></method>"), xml)
        XCTAssertTrue(xml.contains("<property name=\"Name\" type=\"s\" access=\"readwrite\"/>"), xml)
        XCTAssertTrue(xml.contains("<property name=\"Flags\" type=\"as\" access=\"read\"><annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"false\"/></property>"), xml)
        XCTAssertTrue(xml.contains("<signal name=\"Poked\"><arg name=\"count\" type=\"u\"/></signal>"), xml)
        XCTAssertTrue(xml.contains("org.freedesktop.DBus.Properties"), xml)
        // A path above the object lists its child; the root too.
        let above = try XCTUnwrap(success(call("Introspect", interface: DBusInterfaceName.introspectable, path: "/org/example"))?.first).asString()
        XCTAssertTrue(above.contains("<node name=\"app\"/>"), above)
        XCTAssertFalse(above.contains("org.example.Thing1"), above)
        let root = try XCTUnwrap(success(call("Introspect", interface: DBusInterfaceName.introspectable, path: "/"))?.first).asString()
        XCTAssertTrue(root.contains("<node name=\"org\"/>"), root)
    }

    func testObjectManagerTree() throws {
        let app: DBusObjectPath = "/org/example/app"
        server.exportObjectManager(at: app)
        var added: [DBusInterfacesAdded] = []
        var removed: [DBusInterfacesRemoved] = []
        let r1: DBusError?? = wait { done in
            client.onInterfacesAdded(sender: server.uniqueName, namespace: app, ready: done) { if case .success(let a) = $0 { added.append(a) } }
        }
        let r2: DBusError?? = wait { done in
            client.onInterfacesRemoved(sender: server.uniqueName, namespace: app, ready: done) { if case .success(let r) = $0 { removed.append(r) } }
        }
        XCTAssertEqual(r1, .some(nil))
        XCTAssertEqual(r2, .some(nil))

        let child: DBusObjectPath = "/org/example/app/thing0/part1"
        try server.export(DBusExportedObject(path: child, interfaces: [
            DBusInterface("org.example.Part1", properties: [DBusProperty("Parent", .objectPath, get: { .objectPath("/org/example/app/thing0") })]),
        ]))
        XCTAssertThrowsError(try server.export(makeThing(at: child))) { error in
            XCTAssertEqual(error as? DBusError, .alreadyExported(child))
        }
        let reply = success(call("GetManagedObjects", interface: DBusInterfaceName.objectManager, path: app, replySignature: "a{oa{sa{sv}}}"))
        let objects = try XCTUnwrap(reply?.first).asManagedObjects()
        XCTAssertEqual(objects, [
            path: [iface: ["Level": .byte(50), "Name": .string("thing"), "Flags": .strings(["read", "notify"])]],
            child: ["org.example.Part1": ["Parent": .objectPath("/org/example/app/thing0")]],
        ])
        // A path that is not a manager has no GetManagedObjects.
        guard case .remote(let notManager)? = failure(call("GetManagedObjects", interface: DBusInterfaceName.objectManager)) else {
            return XCTFail()
        }
        XCTAssertEqual(notManager.name, DBusErrorReply.unknownInterface)

        server.unexport(child)
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { added.count == 1 && removed.count == 1 }))
        XCTAssertEqual(added[0].path, child)
        XCTAssertEqual(added[0].manager, app)
        XCTAssertEqual(added[0].interfaces, ["org.example.Part1": ["Parent": .objectPath("/org/example/app/thing0")]])
        XCTAssertEqual(removed[0].path, child)
        XCTAssertEqual(removed[0].interfaces, ["org.example.Part1"])
        let after = try XCTUnwrap(success(call("GetManagedObjects", interface: DBusInterfaceName.objectManager, path: app))?.first).asManagedObjects()
        XCTAssertEqual(Array(after.keys), [path])
    }

    func testInvalidExportsAreRejected() throws {
        XCTAssertThrowsError(try server.export(DBusExportedObject(path: "/bad", interfaces: [DBusInterface("nodot")])))
        XCTAssertThrowsError(try server.export(DBusExportedObject(path: "/bad", interfaces: [
            DBusInterface("a.b", methods: [DBusMethod("M") { _ in }, DBusMethod("M") { _ in }]),
        ])))
        XCTAssertThrowsError(try server.export(DBusExportedObject(path: "/bad", interfaces: [
            DBusInterface("a.b", properties: [DBusProperty("1x", .byte, get: { .byte(0) })]),
        ])))
    }
}

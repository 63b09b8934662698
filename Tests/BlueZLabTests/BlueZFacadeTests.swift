import BLERuntime
@testable import BlueZLab
import DBus
import DBusTestSupport
import Foundation
import XCTest

/// A stand-in for bluetoothd on the private bus: it owns org.bluez and exports an adapter, and on
/// discovery a device whose GATT objects appear on Connect, as BlueZ's documented API has them.
/// It records what the client asked for (the filter, each WriteValue's options).
final class FakeBluetoothd {
    let connection: DBusConnection
    let adapterPath: DBusObjectPath = "/org/bluez/hci0"
    let devicePath: DBusObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"
    let servicePath: DBusObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service0010"
    let characteristicPath: DBusObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service0010/char0011"
    static let heartRate = "0000180d-0000-1000-8000-00805f9b34fb"
    static let measurement = "00002a37-0000-1000-8000-00805f9b34fb"

    var powered = false
    var discovering = false
    var connected = false
    var servicesResolved = false
    var notifying = false
    var deviceKnown = false
    var value: [UInt8] = [0x00, 60]
    var filter: [String: DBusValue]?
    var writes: [(value: [UInt8], options: [String: DBusValue])] = []
    /// The fake's end of the AcquireNotify socket pair.
    var notifySocket: Int32 = -1
    /// An RSSI of the wrong type, to see the client's typed error.
    var brokenRSSI = false

    init(connection: DBusConnection) throws {
        self.connection = connection
        connection.exportObjectManager(at: .root)
        try connection.export(DBusExportedObject(path: adapterPath, interfaces: [adapterInterface()]))
    }

    deinit { if notifySocket >= 0 { close(notifySocket) } }

    private func adapterInterface() -> DBusInterface {
        DBusInterface(BlueZName.adapter, methods: [
            DBusMethod("SetDiscoveryFilter", inputs: [DBusArgument("filter", .propertyMap)]) { [unowned self] call in
                self.filter = try? call.arguments[0].asPropertyMap()
                call.reply()
            },
            DBusMethod("StartDiscovery") { [unowned self] call in
                guard self.powered else { call.fail(.notReady, "Resource Not Ready"); return }
                self.discovering = true
                call.reply()
                try? self.connection.propertiesChanged(path: self.adapterPath, interface: BlueZName.adapter, ["Discovering"])
                let wanted = (try? self.filter?["UUIDs"]?.asStrings()) ?? nil
                if wanted == nil || wanted!.contains(FakeBluetoothd.heartRate) {
                    self.deviceKnown = true
                    try? self.connection.export(DBusExportedObject(path: self.devicePath, interfaces: [self.deviceInterface()]))
                }
            },
            DBusMethod("StopDiscovery") { [unowned self] call in
                self.discovering = false
                call.reply()
            },
            DBusMethod("RemoveDevice", inputs: [DBusArgument("device", .objectPath)]) { [unowned self] call in
                guard case .objectPath(let p) = call.arguments[0], p == self.devicePath, self.deviceKnown else {
                    call.fail(.doesNotExist, "Does Not Exist"); return
                }
                self.connection.unexport(p)
                self.deviceKnown = false
                call.reply()
            },
        ], properties: [
            DBusProperty("Address", .string, get: { .string("00:AA:01:00:00:23") }),
            DBusProperty("Name", .string, get: { .string("lab") }),
            DBusProperty("Powered", .boolean, access: .readwrite, get: { [unowned self] in .boolean(self.powered) },
                         set: { [unowned self] v in self.powered = try v.asBool() }),
            DBusProperty("Discovering", .boolean, get: { [unowned self] in .boolean(self.discovering) }),
            DBusProperty("UUIDs", .array(.string), get: { .strings([]) }),
        ])
    }

    private func deviceInterface() -> DBusInterface {
        DBusInterface(BlueZName.device, methods: [
            DBusMethod("Connect") { [unowned self] call in
                self.connected = true
                try? self.connection.export(DBusExportedObject(path: self.servicePath, interfaces: [
                    DBusInterface(BlueZName.gattService, properties: [
                        DBusProperty("UUID", .string, get: { .string(FakeBluetoothd.heartRate) }),
                        DBusProperty("Primary", .boolean, get: { .boolean(true) }),
                        DBusProperty("Device", .objectPath, get: { [unowned self] in .objectPath(self.devicePath) }),
                    ]),
                ]))
                try? self.connection.export(DBusExportedObject(path: self.characteristicPath, interfaces: [self.characteristicInterface()]))
                self.servicesResolved = true
                call.reply()
                try? self.connection.propertiesChanged(path: self.devicePath, interface: BlueZName.device, ["Connected", "ServicesResolved"])
            },
            DBusMethod("Disconnect") { [unowned self] call in
                self.connected = false
                self.servicesResolved = false
                self.connection.unexport(self.characteristicPath)
                self.connection.unexport(self.servicePath)
                call.reply()
                try? self.connection.propertiesChanged(path: self.devicePath, interface: BlueZName.device, ["Connected", "ServicesResolved"])
            },
        ], properties: [
            DBusProperty("Address", .string, get: { .string("C0:FF:EE:00:00:01") }),
            DBusProperty("AddressType", .string, get: { .string("random") }),
            DBusProperty("Name", .string, get: { .string("Polar H10") }),
            DBusProperty("Alias", .string, get: { .string("Polar H10") }),
            DBusProperty("RSSI", .int16, get: { [unowned self] in self.brokenRSSI ? .int32(-40) : .int16(-40) }),
            DBusProperty("UUIDs", .array(.string), get: { .strings([FakeBluetoothd.heartRate]) }),
            DBusProperty("ManufacturerData", .dictionary(key: .uint16, value: .variant),
                         get: { .dictionary(key: .uint16, value: .variant, [DBusDictEntry(.uint16(0x006B), .variant(.bytes([1, 2])))]) }),
            DBusProperty("ServiceData", .propertyMap, get: { .propertyMap([FakeBluetoothd.heartRate: .bytes([9])]) }),
            DBusProperty("Connected", .boolean, get: { [unowned self] in .boolean(self.connected) }),
            DBusProperty("ServicesResolved", .boolean, get: { [unowned self] in .boolean(self.servicesResolved) }),
            DBusProperty("Adapter", .objectPath, get: { [unowned self] in .objectPath(self.adapterPath) }),
        ])
    }

    private func characteristicInterface() -> DBusInterface {
        DBusInterface(BlueZName.gattCharacteristic, methods: [
            DBusMethod("ReadValue", inputs: [DBusArgument("options", .propertyMap)], outputs: [DBusArgument("value", .bytes)]) { [unowned self] call in
                let offset = Int((try? call.arguments[0].asPropertyMap()["offset"]?.asUInt16()) ?? 0)
                guard offset <= self.value.count else { call.fail(.invalidOffset, "Invalid offset"); return }
                call.reply([.bytes(Array(self.value[offset...]))])
            },
            DBusMethod("WriteValue", inputs: [DBusArgument("value", .bytes), DBusArgument("options", .propertyMap)]) { [unowned self] call in
                self.writes.append((try! call.arguments[0].asBytes(), try! call.arguments[1].asPropertyMap()))
                call.reply()
            },
            DBusMethod("StartNotify") { [unowned self] call in
                guard !self.notifying else { call.fail(.inProgress, "In Progress"); return }
                self.notifying = true
                call.reply()
            },
            DBusMethod("StopNotify") { [unowned self] call in
                self.notifying = false
                call.reply()
            },
            DBusMethod("AcquireNotify", inputs: [DBusArgument("options", .propertyMap)],
                       outputs: [DBusArgument("fd", .unixFD), DBusArgument("mtu", .uint16)]) { [unowned self] call in
                var pair: [Int32] = [0, 0]
                guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0 else { call.fail(.failed, "socketpair"); return }
                self.notifySocket = pair[0]
                call.reply([.unixFD(pair[1]), .uint16(23)])
                close(pair[1])   // libdbus sent a dup
            },
        ], properties: [
            DBusProperty("UUID", .string, get: { .string(FakeBluetoothd.measurement) }),
            DBusProperty("Service", .objectPath, get: { [unowned self] in .objectPath(self.servicePath) }),
            DBusProperty("Flags", .array(.string), get: { .strings(["read", "write", "write-without-response", "notify"]) }),
            DBusProperty("Value", .bytes, get: { [unowned self] in .bytes(self.value) }),
            DBusProperty("Notifying", .boolean, get: { [unowned self] in .boolean(self.notifying) }),
        ])
    }

    /// A notification: Value changes and PropertiesChanged carries it.
    func notify(_ bytes: [UInt8]) throws {
        value = bytes
        try connection.propertiesChanged(path: characteristicPath, interface: BlueZName.gattCharacteristic, ["Value"])
    }
}

final class BlueZFacadeTests: BusTestCase {
    private var fake: FakeBluetoothd!
    private var bluez: BlueZClient!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let server = try connect()
        let owned: Result<DBusConnection.NameRequestResult, DBusError>? = wait { done in server.requestName(BlueZName.service, completion: done) }
        XCTAssertEqual(try owned?.get(), .primaryOwner)
        fake = try FakeBluetoothd(connection: server)
        bluez = BlueZClient(connection: try connect(), timeout: .seconds(5))
    }

    override func tearDown() {
        fake = nil
        bluez = nil
        super.tearDown()
    }

    private func get<T>(_ start: (@escaping (Result<T, DBusError>) -> Void) -> Void, file: StaticString = #filePath, line: UInt = #line) -> T? {
        let result: Result<T, DBusError>? = wait(file: file, line: line, start)
        switch result {
        case .success(let v)?: return v
        case .failure(let e)?:
            XCTFail("\(e)", file: file, line: line)
            return nil
        case nil: return nil
        }
    }

    private func error<T>(_ start: (@escaping (Result<T, DBusError>) -> Void) -> Void, file: StaticString = #filePath, line: UInt = #line) -> DBusError? {
        let result: Result<T, DBusError>? = wait(file: file, line: line, start)
        if case .failure(let e)? = result { return e }
        XCTFail("expected an error, got \(String(describing: result))", file: file, line: line)
        return nil
    }

    func testCentralFlow() throws {
        let objects = try XCTUnwrap(get(bluez.managedObjects))
        XCTAssertEqual(objects.adapters, [fake.adapterPath])
        let adapter = bluez.adapter(fake.adapterPath)
        XCTAssertEqual(try objects.adapter(fake.adapterPath)?.powered, false)

        // Powered off: StartDiscovery answers org.bluez.Error.NotReady.
        XCTAssertEqual(error(adapter.startDiscovery)?.bluez, .notReady)
        get { adapter.setPowered(true, completion: $0) }
        XCTAssertEqual(get(adapter.properties)?.powered, true)

        var appeared: [DBusInterfacesAdded] = []
        let ready: DBusError?? = wait { done in bluez.onInterfacesAdded(ready: done) { if case .success(let a) = $0 { appeared.append(a) } } }
        XCTAssertEqual(ready, .some(nil))
        get { adapter.setDiscoveryFilter(BlueZDiscoveryFilter(uuids: [FakeBluetoothd.heartRate], duplicateData: false), completion: $0) }
        XCTAssertEqual(fake.filter, ["UUIDs": .strings([FakeBluetoothd.heartRate]), "Transport": .string("le"), "DuplicateData": .boolean(false)])
        get(adapter.startDiscovery)
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { !appeared.isEmpty }))
        XCTAssertEqual(appeared[0].path, fake.devicePath)
        let seen = try BlueZDeviceProperties(try XCTUnwrap(appeared[0].interfaces[BlueZName.device]))
        XCTAssertEqual(seen.address, "C0:FF:EE:00:00:01")
        XCTAssertEqual(seen.name, "Polar H10")
        XCTAssertEqual(seen.rssi, -40)
        XCTAssertEqual(seen.uuids, [FakeBluetoothd.heartRate])
        XCTAssertEqual(seen.manufacturerData, [0x006B: [1, 2]])
        XCTAssertEqual(seen.serviceData, [FakeBluetoothd.heartRate: [9]])
        XCTAssertFalse(seen.connected)

        let device = bluez.device(fake.devicePath)
        var deviceChanges: [[String: DBusValue]] = []
        let r2: DBusError?? = wait { done in device.onPropertiesChanged(ready: done) { if case .success(let c) = $0 { deviceChanges.append(c) } } }
        XCTAssertEqual(r2, .some(nil))
        get { device.connect(completion: $0) }
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { !deviceChanges.isEmpty }))
        XCTAssertEqual(deviceChanges[0], ["Connected": .boolean(true), "ServicesResolved": .boolean(true)])

        let tree = try XCTUnwrap(get(bluez.managedObjects))
        XCTAssertEqual(try tree.device(address: "c0:ff:ee:00:00:01"), fake.devicePath)
        let charPath = try XCTUnwrap(try tree.characteristic(uuid: FakeBluetoothd.measurement.uppercased(), of: fake.devicePath))
        XCTAssertEqual(try tree.characteristic(charPath)?.flags, ["read", "write", "write-without-response", "notify"])
        let characteristic = bluez.characteristic(charPath)

        XCTAssertEqual(get { characteristic.readValue(completion: $0) }, [0x00, 60])
        XCTAssertEqual(get { characteristic.readValue(offset: 1, completion: $0) }, [60])
        XCTAssertEqual(error { characteristic.readValue(offset: 9, completion: $0) }?.bluez, .invalidOffset)

        get { characteristic.writeValue([1], type: nil, completion: $0) }
        get { characteristic.writeValue([2], type: .command, completion: $0) }
        get { characteristic.writeValue([3], type: .request, completion: $0) }
        XCTAssertEqual(fake.writes.map(\.value), [[1], [2], [3]])
        XCTAssertEqual(fake.writes.map { $0.options["type"] }, [nil, .string("command"), .string("request")])

        var values: [[UInt8]] = []
        let r3: DBusError?? = wait { done in characteristic.onValue(ready: done) { if case .success(let v) = $0 { values.append(v) } } }
        XCTAssertEqual(r3, .some(nil))
        get(characteristic.startNotify)
        XCTAssertEqual(error(characteristic.startNotify)?.bluez, .inProgress)
        try fake.notify([0x00, 72])
        try fake.notify([0x00, 73])
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { values.count == 2 }))
        XCTAssertEqual(values, [[0x00, 72], [0x00, 73]])

        // AcquireNotify: notifications as datagrams on a descriptor of the client's own.
        let acquired = try XCTUnwrap(get(characteristic.acquireNotify))
        XCTAssertEqual(acquired.mtu, 23)
        defer { close(acquired.fd) }
        var datagram: [UInt8] = [0x00, 74]
        XCTAssertEqual(write(fake.notifySocket, &datagram, 2), 2)
        var buffer = [UInt8](repeating: 0, count: 23)
        XCTAssertEqual(read(acquired.fd, &buffer, 23), 2)
        XCTAssertEqual(Array(buffer.prefix(2)), [0x00, 74])

        // Disconnect: the GATT objects vanish; calls on them are errors, not hangs.
        var gone: [DBusObjectPath] = []
        let r4: DBusError?? = wait { done in bluez.onInterfacesRemoved(ready: done) { if case .success(let r) = $0 { gone.append(r.path) } } }
        XCTAssertEqual(r4, .some(nil))
        get { device.disconnect(completion: $0) }
        XCTAssertTrue(loop.run(until: loop.now + .seconds(5), orUntil: { gone.count == 2 }))
        XCTAssertEqual(Set(gone), [fake.characteristicPath, fake.servicePath])
        guard case .remote(let vanished)? = error({ characteristic.readValue(completion: $0) }) else { return XCTFail() }
        XCTAssertEqual(vanished.name, DBusErrorReply.unknownObject)

        get { adapter.removeDevice(fake.devicePath, completion: $0) }
        XCTAssertEqual(error { adapter.removeDevice(fake.devicePath, completion: $0) }?.bluez, .doesNotExist)
    }

    func testDiscoveryFilterExcludesOtherServices() throws {
        let adapter = bluez.adapter(fake.adapterPath)
        get { adapter.setPowered(true, completion: $0) }
        get { adapter.setDiscoveryFilter(BlueZDiscoveryFilter(uuids: ["0000ffe0-0000-1000-8000-00805f9b34fb"]), completion: $0) }
        get(adapter.startDiscovery)
        XCTAssertEqual(get(bluez.managedObjects)?.devices(), [])
    }

    func testWrongPropertyTypeFromBluetoothdIsATypedError() throws {
        fake.brokenRSSI = true
        let adapter = bluez.adapter(fake.adapterPath)
        get { adapter.setPowered(true, completion: $0) }
        get(adapter.startDiscovery)
        // GetAll leaves out a property whose getter disagrees with its declared type; the
        // device's own a{sv}, as a peer might send it, is checked by the client instead.
        let props: [String: DBusValue] = ["Address": .string("C0:FF:EE:00:00:01"), "RSSI": .int32(-40)]
        XCTAssertThrowsError(try BlueZDeviceProperties(props)) { error in
            guard case .unexpectedSignature(let expected, let actual, let context)? = error as? DBusError else { return XCTFail("\(error)") }
            XCTAssertEqual(expected, "n")
            XCTAssertEqual(actual, "i")
            XCTAssertEqual(context, "org.bluez.Device1.RSSI")
        }
        XCTAssertThrowsError(try BlueZDeviceProperties(["Name": .string("x")])) { error in
            guard case .malformedMessage(let why)? = error as? DBusError else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("Address"), why)
        }
        let device = try XCTUnwrap(get { bluez.device(fake.devicePath).properties(completion: $0) })
        XCTAssertNil(device.rssi, "the mistyped RSSI is left out of GetAll")
    }

    func testNoBluetoothdIsServiceUnknown() throws {
        let alone = BlueZClient(connection: try connect(), service: "org.example.NoBluetoothd", timeout: .seconds(5))
        guard case .remote(let reply)? = error(alone.managedObjects) else { return XCTFail() }
        XCTAssertEqual(reply.name, DBusErrorReply.serviceUnknown)
    }

    func testBlueZErrorNames() {
        XCTAssertEqual(BlueZError(errorName: "org.bluez.Error.NotReady"), .notReady)
        XCTAssertEqual(BlueZError(errorName: "org.bluez.Error.InProgress")?.errorName, "org.bluez.Error.InProgress")
        XCTAssertEqual(BlueZError(errorName: "org.bluez.Error.Vendor"), .other("Vendor"))
        XCTAssertEqual(BlueZError.other("Vendor").errorName, "org.bluez.Error.Vendor")
        XCTAssertNil(BlueZError(errorName: "org.freedesktop.DBus.Error.Failed"))
        for kind: BlueZError in [.failed, .inProgress, .notPermitted, .notAuthorized, .invalidArguments, .notSupported,
                                 .alreadyExists, .doesNotExist, .notReady, .notConnected, .alreadyConnected] {
            XCTAssertEqual(BlueZError(errorName: kind.errorName), kind)
        }
    }

    /// An org.bluez.Error.* reply names its BlueZError; any other name, none.
    func testErrorRepliesNameTheirBlueZError() {
        XCTAssertEqual(DBusErrorReply(.notPermitted, message: "Write not permitted"),
                       DBusErrorReply(name: "org.bluez.Error.NotPermitted", message: "Write not permitted"))
        XCTAssertEqual(DBusError.remote(DBusErrorReply(name: "org.bluez.Error.NotPermitted", message: "")).bluez, .notPermitted)
        XCTAssertEqual(DBusError.remote(DBusErrorReply(name: "org.bluez.Error.Vendor", message: "odd")).bluez, .other("Vendor"))
        XCTAssertNil(DBusError.remote(DBusErrorReply(name: DBusErrorReply.serviceUnknown, message: "")).bluez)
        XCTAssertNil(DBusError.disconnected("gone").bluez)
    }
}

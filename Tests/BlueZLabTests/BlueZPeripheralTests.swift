import ATT
import BLELab
import BLERuntime
import BLEWire
import DBus
import DBusTestSupport
import GATT
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest
@testable import BlueZLab

/// BlueZPeripheral against a fake bluetoothd on a private bus: what it exports and registers,
/// and how it answers what bluetoothd calls on behalf of a central.
final class BlueZPeripheralTests: XCTestCase {
    var loop: SystemEventLoop!
    var bus: PrivateBus!
    var connections: [DBusConnection] = []
    var peripherals: [BlueZPeripheral] = []
    /// Kept until the peripherals have stopped: their methods are called to the end.
    var fakes: [FakePeripheralBluetoothd] = []

    override func setUpWithError() throws {
        loop = SystemEventLoop()
        bus = try PrivateBus()
    }

    override func tearDown() {
        for p in peripherals { _ = wait { done in p.stop(limit: .seconds(1)) { done(()) } } }
        peripherals.removeAll()
        fakes.removeAll()
        for c in connections { c.close() }
        connections.removeAll()
        bus?.stop()
        bus = nil
        loop = nil
    }

    func connect() throws -> DBusConnection {
        let c = try DBusConnection(bus: .address(bus.address), loop: loop)
        connections.append(c)
        return c
    }

    func wait<T>(limit: TimeSpan = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                 _ start: (@escaping (T) -> Void) -> Void) -> T? {
        var result: T?
        start { value in if result == nil { result = value } }
        if !loop.run(until: loop.now + limit, orUntil: { result != nil }) { XCTFail("nothing arrived within \(limit)", file: file, line: line) }
        return result
    }

    /// Runs the loop until `condition` holds (fails the test after `limit`).
    func runUntil(_ limit: TimeSpan = .seconds(5), file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        if !loop.run(until: loop.now + limit, orUntil: condition) { XCTFail("condition not met within \(limit)", file: file, line: line) }
    }

    /// A fake bluetoothd owning org.bluez on its own connection.
    func startFake(adapter: DBusObjectPath = "/org/bluez/hci0") throws -> FakePeripheralBluetoothd {
        let server = try connect()
        let fake = try FakePeripheralBluetoothd(connection: server, adapter: adapter)
        let owned: Result<DBusConnection.NameRequestResult, DBusError>? = wait { done in server.requestName(BlueZName.service, completion: done) }
        XCTAssertEqual(try owned?.get(), .primaryOwner)
        fakes.append(fake)
        return fake
    }

    func makePeripheral(_ spec: PeripheralSpec, seed: UInt64 = 42) throws -> BlueZPeripheral {
        let p = BlueZPeripheral(spec: spec, connection: try DBusConnection(bus: .address(bus.address), loop: loop), seed: seed,
                                busDescription: "private bus")
        peripherals.append(p)
        return p
    }

    func start(_ p: BlueZPeripheral, file: StaticString = #filePath, line: UInt = #line) -> Result<Void, SeatError>? {
        wait(file: file, line: line) { done in p.start(completion: done) }
    }

    static func uuid(_ s: String) -> BluetoothUUID { BluetoothUUID(string: s)! }
    static func full(_ s: String) -> String { BlueZMapping.uuidString(uuid(s)) }

    static let heartRate = PeripheralSpec(
        id: "hr-sensor",
        advertising: AdvertisingSpec(name: "HRM", services: [uuid("180D")], interval: .milliseconds(250), txPower: -4,
                                     manufacturerData: .init(companyID: 0x004C, data: [1, 2, 3]),
                                     serviceData: [.init(uuid: uuid("180D"), data: [0x3C])]),
        services: [
            ServiceSpec(uuid: uuid("180D"), characteristics: [
                CharacteristicSpec(uuid: uuid("2A37"), properties: [.notify]),
                CharacteristicSpec(uuid: uuid("2A38"), properties: [.read], value: [1],
                                   descriptors: [.userDescription("Body"), GATTDescriptor(uuid: uuid("2902"), value: [0, 0], isWritable: true)]),
            ]),
            ServiceSpec(uuid: uuid("FFF0"), isPrimary: false, characteristics: [
                CharacteristicSpec(uuid: uuid("FFF1"), properties: [.read, .write, .writeWithoutResponse, .indicate]),
            ]),
        ])

    static let hm10 = PeripheralSpec(
        id: "hm10",
        advertising: AdvertisingSpec(name: "HMSoft", services: [uuid("FFE0")]),
        services: [ServiceSpec(uuid: uuid("FFE0"), characteristics: [
            CharacteristicSpec(uuid: uuid("FFE1"), properties: [.read, .writeWithoutResponse, .notify], value: Array("ready".utf8),
                               onWrite: [.notify(CharacteristicRef(uuid("FFE1")), .written)]),
        ])])

    // MARK: Registration

    func testStartPowersOnAndRegistersTheTreeAndTheAdvertisement() throws {
        let fake = try startFake()
        let p = try makePeripheral(Self.heartRate)
        XCTAssertNil(start(p)?.peripheralFailure)
        XCTAssertTrue(fake.powered)
        XCTAssertEqual(fake.alias, "HRM", "the GAP Device Name is the advertised name")
        XCTAssertEqual(fake.calls.prefix(3), ["Powered true", "RegisterApplication", "RegisterAdvertisement"])
        XCTAssertEqual(p.address, LEAddress(string: "00:AA:01:00:00:23"))
        XCTAssertEqual(fake.applicationProblems, [])

        // The tree bluetoothd read: two services (one secondary), their characteristics' flags.
        let services = fake.application.filter { $0.value[BlueZName.gattService] != nil }
        XCTAssertEqual(Set(services.compactMap { try? $0.value[BlueZName.gattService]?["UUID"]?.asString() }), [Self.full("180D"), Self.full("FFF0")])
        let fff0 = try XCTUnwrap(fake.object(BlueZName.gattService, uuid: Self.full("FFF0")))
        XCTAssertEqual(try fake.application[fff0]?[BlueZName.gattService]?["Primary"]?.asBool(), false)
        let hr = try XCTUnwrap(fake.object(BlueZName.gattService, uuid: Self.full("180D")))
        XCTAssertEqual(try fake.application[hr]?[BlueZName.gattService]?["Primary"]?.asBool(), true)
        func characteristic(_ uuid: String) throws -> [String: DBusValue] {
            let path = try XCTUnwrap(fake.object(BlueZName.gattCharacteristic, uuid: Self.full(uuid)))
            return try XCTUnwrap(fake.application[path]?[BlueZName.gattCharacteristic])
        }
        XCTAssertEqual(try characteristic("2A37")["Flags"]?.asStrings(), ["notify"])
        XCTAssertEqual(try characteristic("2A37")["Service"]?.asObjectPath(), hr)
        XCTAssertEqual(try characteristic("2A37")["Notifying"]?.asBool(), false)
        XCTAssertEqual(try characteristic("2A38")["Flags"]?.asStrings(), ["read"])
        XCTAssertEqual(try characteristic("2A38")["Value"]?.asBytes(), [1])
        XCTAssertEqual(try characteristic("FFF1")["Flags"]?.asStrings(), ["read", "write-without-response", "write", "indicate"])
        XCTAssertEqual(try characteristic("FFF1")["Service"]?.asObjectPath(), fff0)
        // The user description is exported, the spec's own CCCD is not (bluetoothd makes it).
        let descriptors = fake.application.compactMap { $0.value[BlueZName.gattDescriptor] }
        XCTAssertEqual(descriptors.count, 1)
        XCTAssertEqual(try descriptors.first?["UUID"]?.asString(), Self.full("2901"))
        XCTAssertEqual(try descriptors.first?["Value"]?.asBytes(), Array("Body".utf8))
        XCTAssertEqual(try descriptors.first?["Flags"]?.asStrings(), ["read"])

        // The advertisement bluetoothd read.
        let ad = try XCTUnwrap(fake.advertisement)
        XCTAssertEqual(try ad["Type"]?.asString(), "peripheral")
        XCTAssertEqual(try ad["ServiceUUIDs"]?.asStrings(), [Self.full("180D")])
        XCTAssertEqual(try ad["LocalName"]?.asString(), "HRM")
        XCTAssertEqual(try ad["Includes"]?.asStrings(), ["tx-power"])
        XCTAssertEqual(try ad["Discoverable"]?.asBool(), true)
        XCTAssertEqual(try ad["MinInterval"]?.asUInt32(), 250)
        XCTAssertEqual(try ad["MaxInterval"]?.asUInt32(), 250)
        guard case .dictionary(.uint16, .variant, let manufacturer)? = ad["ManufacturerData"] else { return XCTFail("ManufacturerData is not a{qv}") }
        XCTAssertEqual(manufacturer.map { try? $0.key.asUInt16() }, [0x004C])
        XCTAssertEqual(manufacturer.map { try? $0.value.unwrapVariant().asBytes() }, [[1, 2, 3]])
        XCTAssertEqual(try ad["ServiceData"]?.asPropertyMap().mapValues { try $0.asBytes() }, [Self.full("180D"): [0x3C]])
    }

    func testNoAdvertisementWithoutAnAdvertiseBlock() throws {
        let fake = try startFake()
        var spec = Self.hm10
        spec.advertising = nil
        let p = try makePeripheral(spec)
        XCTAssertNil(start(p)?.peripheralFailure)
        XCTAssertEqual(fake.calls, ["Powered true", "RegisterApplication"])
        XCTAssertNil(fake.advertisement)
    }

    /// bluetoothd refuses an application with no service ("No object received"); a peripheral
    /// that only advertises registers none and still advertises.
    func testAPeripheralWithoutServicesOnlyAdvertises() throws {
        let fake = try startFake()
        var spec = Self.hm10
        spec.services = []
        let p = try makePeripheral(spec)
        XCTAssertNil(start(p)?.peripheralFailure)
        XCTAssertEqual(fake.calls, ["Powered true", "RegisterAdvertisement"])
        XCTAssertNil(fake.applicationPath)
        XCTAssertEqual(try fake.advertisement?["LocalName"]?.asString(), "HMSoft")
        XCTAssertTrue(p.activity.contains { $0.description.contains("no GATT services: no application registered") }, "\(p.activity)")

        // What bluetoothd says to an empty application (as 5.66's client_ready_cb), had it been registered.
        let empty: Result<Void, DBusError>? = wait { done in
            p.connection.exportObjectManager(at: p.applicationPath)
            p.client.gattManager(p.adapterPath).registerApplication(p.applicationPath, completion: done)
        }
        guard case .failure(let error)? = empty else { return XCTFail("the fake took an empty application") }
        XCTAssertTrue("\(error)".contains("No object received"), "\(error)")

        // Stopping does not unregister what was never registered.
        XCTAssertNotNil(wait { done in p.stop { done(()) } })
        XCTAssertFalse(fake.calls.contains("UnregisterApplication"))
        XCTAssertEqual(fake.calls.last, "Powered false")
    }

    func testIntervalsRefusedAreLeftOutOnASecondTry() throws {
        let fake = try startFake()
        fake.refusesIntervals = true
        let p = try makePeripheral(Self.hm10)
        XCTAssertNil(start(p)?.peripheralFailure)
        XCTAssertEqual(fake.advertisementRegistrations, 1)
        XCTAssertNil(fake.advertisement?["MinInterval"])
        XCTAssertEqual(try fake.advertisement?["LocalName"]?.asString(), "HMSoft")
        XCTAssertFalse(p.advertisesIntervals)
        XCTAssertTrue(p.activity.contains { $0.description.contains("refused MinInterval/MaxInterval") })
    }

    // MARK: Failures at start

    func testNoBluetoothdIsAClearError() throws {
        let p = try makePeripheral(Self.hm10)
        let result = start(p)
        XCTAssertEqual(result?.peripheralFailure, .failed("bluetoothd is not running (org.bluez has no owner on the private bus)"))
    }

    func testMissingAdapterNamesTheOnesThereAre() throws {
        _ = try startFake(adapter: "/org/bluez/hci1")
        let p = try makePeripheral(Self.hm10)
        XCTAssertEqual(start(p)?.peripheralFailure, .failed("no adapter /org/bluez/hci0; bluetoothd has: /org/bluez/hci1"))
    }

    func testRefusedApplicationCarriesBluetoothdsErrorNameAndText() throws {
        let fake = try startFake()
        fake.refuseApplication = DBusErrorReply(.alreadyExists, message: "Already Exists")
        let p = try makePeripheral(Self.hm10)
        guard case .failed(let text)? = start(p)?.peripheralFailure else { return XCTFail("no failure") }
        XCTAssertTrue(text.contains("GattManager1.RegisterApplication"), text)
        XCTAssertTrue(text.hasSuffix("org.bluez.Error.AlreadyExists: Already Exists"), text)
    }

    func testProviderNeedsARealTimeLoopAndABus() throws {
        let provider = BlueZPeripheralProvider(bus: .address(bus.address))
        XCTAssertThrowsError(try provider.makePeripheral(Self.hm10, lab: Lab(seed: 1))) { error in
            XCTAssertTrue("\(error)".contains("--transport hci-user"), "\(error)")
        }
        XCTAssertEqual(provider.description, "BlueZ (bluetoothd) on hci0")
    }

    /// A lab on real controllers; none is opened here.
    final class NoControllers: ControllerConnector {
        var description: String { "no controllers" }
        func openController(for name: String, index: Int, on loop: DrivableEventLoop) throws -> HCITransport {
            throw SeatError.failed("no controller for \(name)")
        }
        func closeAll() {}
    }

    func testProviderConnectsOnTheLabsLoopOrSaysWhyNot() throws {
        let fake = try startFake()
        let lab = Lab(seed: 3, loop: loop, connector: NoControllers())
        let provider = BlueZPeripheralProvider(bus: .address(bus.address), select: "hm10")
        let p = try XCTUnwrap(try provider.makePeripheral(Self.hm10, lab: lab) as? BlueZPeripheral)
        peripherals.append(p)
        XCTAssertNil(start(p)?.peripheralFailure)
        XCTAssertTrue(fake.powered)

        let nowhere = BlueZPeripheralProvider(bus: .address("unix:path=\(bus.folder.path)/no-such-socket"))
        XCTAssertThrowsError(try nowhere.makePeripheral(Self.hm10, lab: lab)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.hasPrefix("cannot reach bluetoothd: no D-Bus bus at unix:path="), text)
            XCTAssertTrue(text.contains("dbus-daemon must run there"), text)
        }
    }

    // MARK: A central through bluetoothd

    func testWriteCommandIsEchoedAsPropertiesChangedOfValue() throws {
        let fake = try startFake()
        let p = try makePeripheral(Self.hm10)
        var writes: [SeatReceivedWrite] = []
        p.onWrite = { writes.append($0) }
        XCTAssertNil(start(p)?.peripheralFailure)
        let ffe1 = try XCTUnwrap(fake.object(BlueZName.gattCharacteristic, uuid: Self.full("FFE1")))

        try fake.centralConnects()
        runUntil { p.connectedDevices.count == 1 }
        XCTAssertEqual(p.activity.first.map { "\($0.kind)" }, "\(PeripheralActivity.Kind.connected(LEAddress(string: "C0:FF:EE:00:00:01/random")!))")

        XCTAssertNil(wait { done in fake.call(ffe1, "StartNotify", reply: "", completion: done) }?.peripheralFailure)
        runUntil { fake.changes.contains { $0.changed["Notifying"] != nil } }
        XCTAssertEqual(try fake.changes.last?.changed["Notifying"]?.asBool(), true)

        XCTAssertNil(wait { done in fake.writeValue(ffe1, Array("hello".utf8), type: "command", completion: done) }?.peripheralFailure)
        runUntil { !fake.notifiedValues(ffe1).isEmpty }
        XCTAssertEqual(fake.notifiedValues(ffe1), [Array("hello".utf8)])
        XCTAssertEqual(writes.map(\.value), [Array("hello".utf8)])
        XCTAssertEqual(writes.map(\.method), [.command])
        XCTAssertEqual(writes.map(\.characteristic), [CharacteristicRef(Self.uuid("FFE1"), in: Self.uuid("FFE0"))])

        XCTAssertNil(wait { done in fake.writeValue(ffe1, [0x41], type: "request", completion: done) }?.peripheralFailure)
        XCTAssertNil(wait { done in fake.writeValue(ffe1, [0x42], type: nil, completion: done) }?.peripheralFailure)
        XCTAssertEqual(writes.map(\.method), [.command, .request, nil])
        runUntil { fake.notifiedValues(ffe1).count == 3 }
        XCTAssertEqual(fake.notifiedValues(ffe1), [Array("hello".utf8), [0x41], [0x42]])

        // The stored value is the last write; offsets are honoured.
        XCTAssertEqual(try wait { done in fake.readValue(ffe1, completion: done) }?.get(), [0x42])
        XCTAssertNil(wait { done in fake.writeValue(ffe1, Array("abcdef".utf8), type: "command", completion: done) }?.peripheralFailure)
        XCTAssertEqual(try wait { done in fake.readValue(ffe1, offset: 2, completion: done) }?.get(), Array("cdef".utf8))
        XCTAssertEqual(try wait { done in fake.readValue(ffe1, offset: 6, completion: done) }?.get(), [])
        XCTAssertEqual(wait { done in fake.readValue(ffe1, offset: 7, completion: done) }?.peripheralFailure?.bluez, .invalidOffset)

        let notified = p.activity.compactMap { entry -> [UInt8]? in
            if case let .notified(_, value, centrals) = entry.kind, centrals == 1 { return value }
            return nil
        }
        XCTAssertEqual(notified.first, Array("hello".utf8))
    }

    func testRespondErrorAnswersWithTheErrorBluetoothdMapsToThatCode() throws {
        let fake = try startFake()
        let ref = CharacteristicRef(Self.uuid("FFF1"))
        let spec = PeripheralSpec(id: "locked", services: [ServiceSpec(uuid: Self.uuid("FFF0"), characteristics: [
            CharacteristicSpec(uuid: Self.uuid("FFF1"), properties: [.read, .write], value: [7],
                               onWrite: [.respondError(ATTErrorCode(0x85)), .setValue(ref, .bytes([9]))],
                               onRead: [.delay(.milliseconds(150)), .respondError(.insufficientAuthorization)]),
            CharacteristicSpec(uuid: Self.uuid("FFF2"), properties: [.read], onRead: [.respondError(.insufficientEncryption)]),
        ])])
        let p = try makePeripheral(spec)
        XCTAssertNil(start(p)?.peripheralFailure)
        let fff1 = try XCTUnwrap(fake.object(BlueZName.gattCharacteristic, uuid: Self.full("FFF1")))
        let fff2 = try XCTUnwrap(fake.object(BlueZName.gattCharacteristic, uuid: Self.full("FFF2")))

        let before = loop.now
        let read = wait { done in fake.readValue(fff1, completion: done) }
        XCTAssertGreaterThanOrEqual(loop.now - before, .milliseconds(150), "the leading delay postpones the answer")
        guard case .remote(let readError)? = read?.peripheralFailure else { return XCTFail("read answered \(String(describing: read))") }
        XCTAssertEqual(readError.name, "org.bluez.Error.NotAuthorized")
        XCTAssertEqual(BlueZServerErrors.attCode(for: readError, in: .read), .insufficientAuthorization)

        let write = wait { done in fake.writeValue(fff1, [1, 2], type: "request", completion: done) }
        guard case .remote(let writeError)? = write?.peripheralFailure else { return XCTFail("write answered \(String(describing: write))") }
        XCTAssertEqual(writeError, DBusErrorReply(.failed, message: "0x85"))
        XCTAssertEqual(BlueZServerErrors.attCode(for: writeError, in: .write), ATTErrorCode(0x85))
        // Refused: not stored; the action after respond-error still ran.
        XCTAssertEqual(p.value(of: ref), [9])

        // A code bluetoothd cannot send: the nearest it can (0x80), and a note saying so.
        guard case .remote(let unsendable)? = wait(start: { done in fake.readValue(fff2, completion: done) })?.peripheralFailure else {
            return XCTFail("no error")
        }
        XCTAssertEqual(unsendable.name, "org.bluez.Error.Failed")
        XCTAssertTrue(p.activity.contains { $0.description.contains("cannot reach the link") })
        XCTAssertEqual(p.activity.compactMap { if case let .answered(code) = $0.kind { return code }; return nil },
                       [.insufficientAuthorization, ATTErrorCode(0x85), .insufficientEncryption])
    }

    func wait<T>(start: (@escaping (T) -> Void) -> Void) -> T? { wait(start) }

    func testNotifyEveryOnSubscribeRunsOnTheLoopsTimers() throws {
        let fake = try startFake()
        let ref = CharacteristicRef(Self.uuid("2A37"))
        let spec = PeripheralSpec(id: "sensor", advertising: AdvertisingSpec(name: "HRM", services: [Self.uuid("180D")]), services: [
            ServiceSpec(uuid: Self.uuid("180D"), characteristics: [
                CharacteristicSpec(uuid: Self.uuid("2A37"), properties: [.notify], onSubscribe: [
                    .stopAdvertising,
                    .notifyEvery(ref, interval: .milliseconds(100), value: .concatenation([.bytes([0]), .counterU8(start: 60)]), count: 5),
                ], onUnsubscribe: [.stopNotifying(ref)]),
            ]),
        ])
        let p = try makePeripheral(spec)
        XCTAssertNil(start(p)?.peripheralFailure)
        let path = try XCTUnwrap(fake.object(BlueZName.gattCharacteristic, uuid: Self.full("2A37")))
        try fake.centralConnects()
        let subscribed = loop.now
        XCTAssertNil(wait { done in fake.call(path, "StartNotify", reply: "", completion: done) }?.peripheralFailure)
        runUntil { fake.notifiedValues(path).count == 5 }
        XCTAssertEqual(fake.notifiedValues(path), [[0, 60], [0, 61], [0, 62], [0, 63], [0, 64]])
        // Sent on the loop's timers, each `interval` after the one before (when the peripheral
        // sent them; the bus may deliver two close together).
        let times = p.activity.compactMap { entry -> Instant? in
            if case .notified = entry.kind { return entry.time }
            return nil
        }
        XCTAssertEqual(times.count, 5)
        XCTAssertGreaterThanOrEqual(times[0] - subscribed, .milliseconds(100))
        for (a, b) in zip(times, times.dropFirst()) { XCTAssertGreaterThanOrEqual(b - a, .milliseconds(100)) }
        // count: 5 means five, and nothing after.
        loop.run(until: loop.now + .milliseconds(350))
        XCTAssertEqual(fake.notifiedValues(path).count, 5)
        XCTAssertTrue(fake.calls.contains("UnregisterAdvertisement"), "stop-advertising in on-subscribe")
        XCTAssertEqual(p.activity.filter { if case .subscribed = $0.kind { return true }; return false }.count, 1)
    }

    /// random-u8, counter-u8 and sequence resolve from the same seeded stream and sites as the
    /// simulated peripheral's, so both serve the same bytes for the same scenario and seed.
    func testValuesMatchTheSimulatedPeripheral() throws {
        let fake = try startFake()
        let ref = CharacteristicRef(Self.uuid("2A37"))
        let spec = PeripheralSpec(id: "sensor", services: [ServiceSpec(uuid: Self.uuid("180D"), characteristics: [
            CharacteristicSpec(uuid: Self.uuid("2A37"), properties: [.notify, .read]),
        ])])
        let actions: [PeripheralAction] = [
            .notify(ref, .concatenation([.bytes([0]), .randomU8(50...90)])),
            .notify(ref, .sequence([[1], [2, 2]])),
            .notify(ref, .counterU8(start: 254)),
        ]
        let p = try makePeripheral(spec, seed: 7)
        XCTAssertNil(start(p)?.peripheralFailure)
        let path = try XCTUnwrap(fake.object(BlueZName.gattCharacteristic, uuid: Self.full("2A37")))
        for _ in 0..<3 { p.perform(actions, site: "step") }
        runUntil { fake.notifiedValues(path).count == 9 }

        let lab = Lab(seed: 7)
        let sim = try lab.addPeripheral(spec)
        for _ in 0..<3 { sim.perform(actions, site: "step") }
        let simValues = sim.activity.compactMap { entry -> [UInt8]? in
            if case let .notified(_, value, _) = entry.kind { return value }
            return nil
        }
        XCTAssertEqual(simValues.count, 9)
        XCTAssertEqual(fake.notifiedValues(path), simValues)
        XCTAssertEqual(p.value(of: ref), simValues.last)
    }

    /// The `disconnect` action ends the link at once: Device1.Blocked (bluetoothd sends MGMT
    /// Disconnect before answering), not Device1.Disconnect (2 s later in bluetoothd 5.66); the
    /// block is lifted when the link has ended, and the central connects again.
    func testDisconnectActionEndsTheLinkAtOnceAndTheCentralMayComeBack() throws {
        let fake = try startFake()
        var spec = Self.hm10
        spec.onDisconnect = [.setValue(CharacteristicRef(Self.uuid("FFE1")), .bytes([0xDD]))]
        let p = try makePeripheral(spec)
        XCTAssertNil(start(p)?.peripheralFailure)
        XCTAssertEqual(p.connectedCentrals, [], "a peripheral: step waits for a central here")
        try fake.centralConnects()
        runUntil { p.connectedDevices.count == 1 }
        XCTAssertEqual(p.connectedCentrals, [LEAddress(string: "C0:FF:EE:00:00:01/random")!])
        let asked = loop.now
        p.perform([.disconnect(nil)], site: "step")
        runUntil { p.connectedDevices.isEmpty }
        XCTAssertEqual(p.connectedCentrals, [])
        XCTAssertLessThan(loop.now - asked, .milliseconds(500), "the link ended at once, not after bluetoothd's 2 s")
        runUntil { !fake.blocked }
        XCTAssertEqual(fake.calls.filter { $0.hasPrefix("Blocked") || $0 == "Disconnect" }, ["Blocked true", "Blocked false"])
        XCTAssertTrue(p.blocked.isEmpty)
        guard case let .disconnected(address, reason)? = p.activity.last(where: { if case .disconnected = $0.kind { return true }; return false })?.kind else {
            return XCTFail("no disconnection recorded")
        }
        XCTAssertEqual(address, LEAddress(string: "C0:FF:EE:00:00:01/random"))
        XCTAssertEqual(reason.rawValue, 0x16, "this side ended it")
        XCTAssertEqual(p.value(of: CharacteristicRef(Self.uuid("FFE1"))), [0xDD], "on-disconnect ran")

        // Unblocked: the central connects again, and ends the next link itself.
        try fake.centralConnects()
        runUntil { p.connectedDevices.count == 1 }
        fake.centralDisconnects()
        runUntil { p.connectedDevices.isEmpty }
        guard case let .disconnected(_, reason2)? = p.activity.last(where: { if case .disconnected = $0.kind { return true }; return false })?.kind else {
            return XCTFail("no disconnection recorded")
        }
        XCTAssertEqual(reason2.rawValue, 0x13)
        XCTAssertEqual(fake.calls.filter { $0.hasPrefix("Blocked") }.count, 2, "nothing blocked when the central ended it")
    }

    /// Where Blocked cannot be set, Device1.Disconnect still ends the link (bluetoothd's 2 s later),
    /// and the activity says why it took that long.
    func testDisconnectFallsBackToDevice1DisconnectWhenBlockingIsRefused() throws {
        let fake = try startFake()
        fake.refusesBlocking = true
        let p = try makePeripheral(Self.hm10)
        XCTAssertNil(start(p)?.peripheralFailure)
        try fake.centralConnects()
        runUntil { p.connectedDevices.count == 1 }
        let asked = loop.now
        p.perform([.disconnect(nil)], site: "step")
        runUntil { p.connectedDevices.isEmpty }
        XCTAssertGreaterThanOrEqual(loop.now - asked, .seconds(2))
        XCTAssertTrue(fake.calls.contains("Disconnect"))
        XCTAssertFalse(fake.blocked)
        XCTAssertTrue(p.blocked.isEmpty)
        XCTAssertTrue(p.activity.contains { $0.description.contains("Device1.Disconnect instead") }, "\(p.activity)")
    }

    func testAdapterPoweredOffAndBluetoothdLeavingAreReported() throws {
        let fake = try startFake()
        let p = try makePeripheral(Self.hm10)
        XCTAssertNil(start(p)?.peripheralFailure)
        fake.powered = false
        try fake.connection.propertiesChanged(path: fake.adapterPath, interface: BlueZName.adapter, ["Powered"])
        runUntil { p.activity.contains { $0.description.contains("was powered off") } }
        fake.connection.close()
        runUntil { p.activity.contains { $0.description.contains("bluetoothd left the bus") } }
        // Stopping after bluetoothd is gone does not wait for it.
        let before = loop.now
        XCTAssertNotNil(wait { done in p.stop(limit: .seconds(3)) { done(()) } })
        XCTAssertLessThan(loop.now - before, .seconds(1))
    }

    // MARK: Stop

    func testStopUnregistersForgetsThePeerAndPowersOff() throws {
        let fake = try startFake()
        let p = try makePeripheral(Self.hm10)
        XCTAssertNil(start(p)?.peripheralFailure)
        try fake.centralConnects()
        runUntil { p.connectedDevices.count == 1 }
        let before = loop.now
        XCTAssertNotNil(wait { done in p.stop { done(()) } })
        XCTAssertLessThan(loop.now - before, .seconds(1), "the link ended at once")
        XCTAssertEqual(Array(fake.calls.suffix(6)), [
            "UnregisterAdvertisement", "UnregisterApplication", "Blocked true", "Blocked false", "RemoveDevice \(fake.devicePath.rawValue)",
            "Powered false",
        ])
        XCTAssertFalse(fake.blocked, "nothing left on the reject list")
        XCTAssertFalse(fake.connected)
        XCTAssertEqual(fake.alias, "bluez-lab", "the alias is restored")
        XCTAssertFalse(p.connection.isConnected)
        XCTAssertFalse(fake.powered)
    }

    func testStopIsBoundedWhenBluetoothdDoesNotAnswer() throws {
        let fake = try startFake()
        let p = try makePeripheral(Self.hm10)
        XCTAssertNil(start(p)?.peripheralFailure)
        fake.hangs = true
        let before = loop.now
        XCTAssertNotNil(wait(limit: .seconds(5)) { done in p.stop(limit: .seconds(1)) { done(()) } })
        XCTAssertLessThan(loop.now - before, .seconds(2))
        XCTAssertTrue(p.activity.contains { $0.description.contains("longer than 1s") }, "\(p.activity)")
        XCTAssertFalse(p.connection.isConnected)
    }
}

extension Result {
    /// The error, or nil on success.
    var peripheralFailure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

#if canImport(Glibc)
import Glibc
#endif
import ATT
import BLELab
import BLERuntime
import BLEWire
import DBus
import DBusTestSupport
import Foundation
import GATT
import ScenarioEngine
import ScenarioFormat
import XCTest
@testable import BlueZLab

/// BlueZCentral against a fake bluetoothd (FakeCentralBluetoothd) on a private bus: the calls it
/// makes and their arguments, what it reports from bluetoothd's signals, and how it fails.
/// Everything runs on one SystemEventLoop, bounded; nothing sleeps.
final class BlueZCentralTests: XCTestCase {
    /// The fake's name: not org.bluez, so that every call and match rule must use `service:`.
    static let service = "org.bluez.LabFakeCentral"
    static let heartRate = "0000180d-0000-1000-8000-00805f9b34fb"
    static let measurement = "00002a37-0000-1000-8000-00805f9b34fb"
    static let bodyLocation = "00002a38-0000-1000-8000-00805f9b34fb"
    static let serial = "0000ffe0-0000-1000-8000-00805f9b34fb"
    static let serialData = "0000ffe1-0000-1000-8000-00805f9b34fb"
    static let nus = "6e400001-b5a3-f393-e0a9-e50e24dcca9e"
    static let hrmAddress = "C0:FF:EE:00:00:01"
    static let otherAddress = "C0:FF:EE:00:00:02"

    var loop: SystemEventLoop!
    var bus: PrivateBus!
    var connections: [DBusConnection] = []
    var fakes: [FakeCentralBluetoothd] = []
    var centrals: [BlueZCentral] = []

    override func setUpWithError() throws {
        loop = SystemEventLoop()
        bus = try PrivateBus()
    }

    override func tearDown() {
        for c in centrals {
            var ended = false
            c.end { ended = true }
            _ = loop.run(until: loop.now + .seconds(3), orUntil: { ended })
        }
        centrals.removeAll()
        for f in fakes { f.close() }
        fakes.removeAll()
        for c in connections { c.close() }
        connections.removeAll()
        bus?.stop()
        bus = nil
        loop = nil
    }

    // MARK: Helpers

    func connect() throws -> DBusConnection {
        let c = try DBusConnection(bus: .address(bus.address), loop: loop)
        connections.append(c)
        return c
    }

    /// Runs the loop until `start`'s callback delivers (fails the test after `limit`).
    func wait<T>(limit: TimeSpan = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                 _ start: (@escaping (T) -> Void) -> Void) -> T? {
        var result: T?
        start { value in if result == nil { result = value } }
        if !loop.run(until: loop.now + limit, orUntil: { result != nil }) { XCTFail("nothing arrived within \(limit)", file: file, line: line) }
        return result
    }

    func runUntil(_ limit: TimeSpan = .seconds(5), file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        if !loop.run(until: loop.now + limit, orUntil: condition) { XCTFail("condition not met within \(limit)", file: file, line: line) }
    }

    /// What arrives on the fake's end of an acquired socket until the central's end is closed.
    /// The central's `close` is not the last reference: the bus daemon (another process) held a
    /// duplicate of the descriptor while it relayed the reply and closes it when it is done, on its
    /// own schedule. Only then does the fake's end read end of file, so wait for that on the loop,
    /// bounded by `runUntil`'s limit; checking at once raced the daemon (a loaded `make soak` run
    /// saw it).
    func drainUntilClosed(_ fd: Int32, file: StaticString = #filePath, line: UInt = #line) -> (datagrams: [[UInt8]], closed: Bool) {
        var (datagrams, closed) = FakeCentralBluetoothd.drain(fd)
        guard !closed else { return (datagrams, closed) }
        let watch = loop.watchReadable(fd: fd) {
            let more = FakeCentralBluetoothd.drain(fd)
            datagrams += more.datagrams
            closed = closed || more.closed
        }
        runUntil(file: file, line: line) { closed }
        watch.cancel()
        return (datagrams, closed)
    }

    func startFake(adapter: DBusObjectPath = "/org/bluez/hci0", powered: Bool = true) throws -> FakeCentralBluetoothd {
        let server = try connect()
        let fake = try FakeCentralBluetoothd(connection: server, service: Self.service, adapter: adapter, powered: powered)
        let owned: Result<DBusConnection.NameRequestResult, DBusError>? = wait { done in server.requestName(Self.service, completion: done) }
        XCTAssertEqual(try owned?.get(), .primaryOwner)
        fakes.append(fake)
        return fake
    }

    func makeCentral(bus address: String? = nil, callTimeout: TimeSpan? = nil) throws -> BlueZCentral {
        let central = try BlueZCentral(adapter: "hci0", bus: .address(address ?? bus.address), service: Self.service)
        if let callTimeout { central.callTimeout = callTimeout }
        centrals.append(central)
        return central
    }

    func lab() -> Lab { Lab(seed: 1, loop: loop, connector: BlueZPeripheralTests.NoControllers()) }

    @discardableResult
    func begin(_ central: BlueZCentral, file: StaticString = #filePath, line: UInt = #line) -> Result<Void, SeatError>? {
        wait(file: file, line: line) { done in central.begin(lab: lab(), completion: done) }
    }

    /// A central that has begun on a fresh fake.
    func begun(powered: Bool = true, callTimeout: TimeSpan? = nil, file: StaticString = #filePath, line: UInt = #line) throws
        -> (FakeCentralBluetoothd, BlueZCentral) {
        let fake = try startFake(powered: powered)
        let central = try makeCentral(callTimeout: callTimeout)
        guard case .success? = begin(central, file: file, line: line) else {
            XCTFail("begin failed", file: file, line: line)
            throw SetUpFailed(what: "begin failed")
        }
        return (fake, central)
    }

    static func uuid(_ s: String) -> BluetoothUUID { BluetoothUUID(string: s)! }
    static func address(_ s: String, _ type: AddressType = .random) -> LEAddress { LEAddress(BDAddr(string: s)!, type: type) }

    func failureText<T>(_ result: Result<T, SeatError>?, file: StaticString = #filePath, line: UInt = #line) -> String {
        guard case let .failure(error)? = result else {
            XCTFail("expected a failure, got \(String(describing: result))", file: file, line: line)
            return ""
        }
        return "\(error)"
    }

    func scan(_ central: BlueZCentral, _ step: ScanStep = ScanStep(),
              file: StaticString = #filePath, line: UInt = #line) -> [SeatScanReport]? {
        let started: Result<Void, SeatError>? = wait(file: file, line: line) { done in central.startScan(step, completion: done) }
        guard case .success? = started else {
            XCTFail("the scan did not start: \(String(describing: started))", file: file, line: line)
            return nil
        }
        let stopped: Result<[SeatScanReport], SeatError>? = wait(file: file, line: line) { done in central.stopScan(completion: done) }
        guard case let .success(reports)? = stopped else {
            XCTFail("the scan did not stop: \(String(describing: stopped))", file: file, line: line)
            return nil
        }
        return reports
    }

    /// A heart-rate sensor: 180D with 2A37 (notify, read) at declaration 0x000b and 2A38 (read)
    /// at 0x000d; FFE0 with FFE1 (read, write, write-without-response, notify) at 0x0011.
    func addSensor(_ fake: FakeCentralBluetoothd) -> FakeCentralBluetoothd.Device {
        fake.addDevice(Self.hrmAddress, name: "HRM", rssi: -40, uuids: [Self.heartRate], services: [
            .init(handle: 0x000a, uuid: Self.heartRate, characteristics: [
                .init(0x000b, Self.measurement, flags: ["read", "notify"], value: [0x00, 60]),
                .init(0x000d, Self.bodyLocation, flags: ["read"], value: [1]),
            ]),
            .init(handle: 0x0010, uuid: Self.serial, characteristics: [
                .init(0x0011, Self.serialData, flags: ["read", "write-without-response", "write", "notify"], value: Array("ready".utf8)),
            ]),
        ])
    }

    /// Scanned, connected and (when `discover`) discovered: the sensor's address.
    @discardableResult
    func connectedSensor(_ fake: FakeCentralBluetoothd, _ central: BlueZCentral, discover: Bool = true,
                         file: StaticString = #filePath, line: UInt = #line) throws -> LEAddress {
        let sensor = addSensor(fake)
        fake.onStartDiscovery = { try? fake.advertise(sensor) }
        _ = scan(central, file: file, line: line)
        fake.onStartDiscovery = nil
        let address = Self.address(Self.hrmAddress)
        let connected: Result<Void, SeatError>? = wait(file: file, line: line) { done in
            central.connect(to: address, within: .seconds(5), completion: done)
        }
        guard case .success? = connected else {
            XCTFail("not connected: \(String(describing: connected))", file: file, line: line)
            throw SetUpFailed(what: "not connected")
        }
        if discover {
            let found: Result<[SeatService], SeatError>? = wait(file: file, line: line) { done in
                central.discover(on: address, services: nil, completion: done)
            }
            guard case .success? = found else {
                XCTFail("not discovered: \(String(describing: found))", file: file, line: line)
                throw SetUpFailed(what: "not discovered")
            }
        }
        return address
    }

    var measurementRef: CharacteristicRef { CharacteristicRef(Self.uuid("2A37"), in: Self.uuid("180D")) }
    var serialRef: CharacteristicRef { CharacteristicRef(Self.uuid("FFE1")) }

    func characteristic(_ fake: FakeCentralBluetoothd, _ uuid: String) -> FakeCentralBluetoothd.Characteristic {
        fake.devices.flatMap { $0.services.flatMap(\.characteristics) }.first { $0.uuid == uuid }!
    }

    // MARK: Begin

    func testBeginPowersTheAdapterOnAndForgetsEveryDevice() throws {
        let fake = try startFake(powered: false)
        let stale = fake.addDevice(Self.hrmAddress)
        try fake.export(stale)
        let linked = fake.addDevice(Self.otherAddress)
        try fake.export(linked)
        linked.connected = true
        let central = try makeCentral()
        guard case .success? = begin(central) else { return XCTFail("begin failed") }
        XCTAssertTrue(fake.powered)
        XCTAssertEqual(fake.calls.first, "Powered true")
        XCTAssertEqual(Set(fake.calls.dropFirst()), ["RemoveDevice \(stale.path)", "RemoveDevice \(linked.path)"])
        XCTAssertFalse(stale.exported)
        XCTAssertFalse(linked.exported)
        XCTAssertNil(central.failure)
        XCTAssertEqual(central.description, "BlueZ (bluetoothd over D-Bus) on hci0")
    }

    func testBeginLeavesAPoweredAdapterAlone() throws {
        let (fake, central) = try begun()
        XCTAssertEqual(fake.calls, [], "nothing to power, nothing to forget")
        XCTAssertNil(central.failure)
    }

    func testBeginWhenTheAdapterCannotBePowered() throws {
        let fake = try startFake(powered: false)
        fake.powerAnswer = .fail(DBusErrorReply(.failed, message: "Blocked through rfkill"))
        let central = try makeCentral()
        let text = failureText(begin(central))
        XCTAssertTrue(text.hasPrefix("cannot power on /org/bluez/hci0:"), text)
        XCTAssertTrue(text.contains("org.bluez.Error.Failed: Blocked through rfkill"), text)
    }

    func testBeginWithoutBluetoothdSaysItIsNotRunning() throws {
        let central = try makeCentral()
        let text = failureText(begin(central))
        XCTAssertTrue(text.hasPrefix("bluetoothd is not running"), text)
        XCTAssertTrue(text.contains("GetManagedObjects"), text)
        XCTAssertTrue(text.contains(DBusErrorReply.serviceUnknown), text)
    }

    func testBeginNamesTheAdaptersBluetoothdHas() throws {
        _ = try startFake(adapter: "/org/bluez/hci1")
        let central = try makeCentral()
        XCTAssertEqual(failureText(begin(central)), "bluetoothd has no adapter /org/bluez/hci0; it has /org/bluez/hci1")
    }

    func testBeginWithoutABusSaysWhichBus() throws {
        let nowhere = "unix:path=\(bus.folder.path)/no-such-socket"
        let central = try makeCentral(bus: nowhere)
        let text = failureText(begin(central))
        XCTAssertTrue(text.hasPrefix("cannot reach the D-Bus system bus, where bluetoothd lives: no D-Bus bus at \(nowhere)"), text)
    }

    func testBeginNeedsARealTimeLoop() throws {
        let central = try makeCentral()
        let result: Result<Void, SeatError>? = wait { done in central.begin(lab: Lab(seed: 1), completion: done) }
        let text = failureText(result)
        XCTAssertTrue(text.contains("needs a real-time transport"), text)
        XCTAssertTrue(text.contains("not the sim"), text)
    }

    func testAdapterMustBeAName() {
        XCTAssertThrowsError(try BlueZCentral(adapter: "hci0/dev")) { error in
            XCTAssertEqual("\(error)", "'hci0/dev' is not an adapter name (hci0, hci1, …)")
        }
        XCTAssertThrowsError(try BlueZCentral(adapter: ""))
        XCTAssertEqual(try BlueZCentral(adapter: "hci3").adapterPath, "/org/bluez/hci3")
    }

    // MARK: What it cannot play

    func testSeedAndRegressionScenariosArePlayableAirFaultsAreNot() throws {
        let repository = BlueZPeripheralSupportTests.repository
        let central = try BlueZCentral()
        for folder in ["scenarios/seeds", "scenarios/regressions"] {
            let files = try FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent(folder).path)
                .filter { $0.hasSuffix(".yaml") }.sorted()
            XCTAssertFalse(files.isEmpty, folder)
            for file in files {
                let scenario = try Scenario.load(path: repository.appendingPathComponent("\(folder)/\(file)").path)
                XCTAssertNil(central.unsupported(scenario), "\(folder)/\(file)")
            }
        }
        let powerOff = try Scenario.load(path: repository.appendingPathComponent("scenarios/field/air-power-off.yaml").path)
        let reason = try XCTUnwrap(central.unsupported(powerOff))
        XCTAssertTrue(reason.hasPrefix("step 8 "), reason)
        XCTAssertTrue(reason.contains("(power-on: curtain) changes the air, which only the sim can do; bluetoothd runs on a real controller"), reason)
    }

    /// Which security scenarios each BlueZ seat plays, and why it skips the others (BlueZSecurity):
    /// pairing runs through BLELab's Agent1, so only what bluetoothd and Linux's Security
    /// Manager cannot do is skipped, with its reason.
    func testSecurityScenariosBlueZPlaysAndWhyItSkipsTheRest() throws {
        let repository = BlueZPeripheralSupportTests.repository
        let central = try BlueZCentral()
        let provider = BlueZPeripheralProvider()
        // file → (central's reason, peripheral's reason), each a fragment of the text; nil: played.
        let expected: [String: (String?, String?)] = [
            "security/bond-forgotten": ("bluetoothd has no call to encrypt a link with a bond", "forgets a central's keys only with its device object"),
            "security/fail-authentication-requirements": ("Linux ends the link after such a failed pairing", "mitm: true; Linux as the responder"),
            "security/fail-numeric-comparison": (nil, "mitm: true; Linux as the responder"),
            "security/fail-pairing-not-supported": ("step 6 (read: FEAB) needs the link to beacon", "bluetoothd pairs whenever a central asks"),
            "security/fail-passkey-entry": (nil, "mitm: true; Linux as the responder"),
            "security/fail-wrong-passkey": ("Linux ends the link after such a failed pairing", "mitm: true; Linux as the responder"),
            "security/pair-just-works": (nil, nil),
            "security/pair-legacy-just-works": (nil, "secure-connections: false"),
            "security/pair-numeric-comparison": ("bluetoothd's battery plugin reads it", nil),
            "security/pair-passkey-entry": ("raises the link's security and pairs by itself", "mitm: true; Linux as the responder"),
            "security/permissions-auto-pair-bond": ("raises the link's security and pairs by itself", nil),
            "security/permissions-auto-pair-passkey": (nil, "mitm: true; Linux as the responder"),
            "security/permissions-encrypted-cccd": ("raises the link's security and pairs by itself",
                                                    "bluetoothd answers Insufficient Encryption (0x0F)"),
            "security/request-security-on-connect": ("bluetoothd's input plugin claims that service", "no call for a peripheral to send a Security Request"),
            "bluez/security-comparison-rejected": (nil, nil),
            "bluez/security-encrypted-cccd": (nil, nil),
            "bluez/security-just-works": (nil, nil),
            "bluez/security-numeric-comparison": (nil, nil),
            "bluez/security-passkey-entry": (nil, "passkey: 123456 to display"),
            "bluez/security-passkey-entry-peripheral-types": ("passkey: 314159 to display", nil),
            "bluez/security-wrong-passkey": (nil, "passkey: 123456 to display"),
            "bluez/security-wrong-passkey-peripheral-types": ("passkey: 111111 to display", nil),
        ]
        var seen: Set<String> = []
        for folder in ["security", "bluez"] {
            let files = try FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent("scenarios/\(folder)").path)
                .filter { $0.hasSuffix(".yaml") }.sorted()
            for file in files {
                let name = "\(folder)/\(file.dropLast(5))"
                let scenario = try Scenario.load(path: repository.appendingPathComponent("scenarios/\(name).yaml").path)
                guard scenario.securityUse != nil else { continue }
                seen.insert(name)
                // A scenario added since (OOB, privacy, faults) is played or skipped as the rules say.
                guard let (centralReason, peripheralReason) = expected[name] else { continue }
                let spec = try XCTUnwrap(provider.served(in: scenario), name)
                for (seat, got, want) in [("central", central.unsupported(scenario), centralReason),
                                          ("peripheral", provider.unsupported(spec, in: scenario), peripheralReason)] {
                    if let want {
                        XCTAssertTrue(got?.contains(want) == true, "\(name), \(seat): \(got ?? "played")")
                    } else {
                        XCTAssertNil(got, "\(name), \(seat)")
                    }
                }
            }
        }
        XCTAssertTrue(Set(expected.keys).isSubset(of: seen), "\(Set(expected.keys).subtracting(seen))")
        let oob = try Scenario.load(path: repository.appendingPathComponent("scenarios/security/pair-oob.yaml").path)
        XCTAssertTrue(central.unsupported(oob)?.contains("oob: true; bluetoothd has no D-Bus call") == true, central.unsupported(oob) ?? "played")
        let beacon = try Scenario.load(path: repository.appendingPathComponent("scenarios/security/bond-forgotten.yaml").path)
        XCTAssertEqual(central.unsupported(beacon), "step 10 (encrypt: lock): bluetoothd has no call to encrypt a link with a bond; "
                       + "it encrypts by itself when it connects to a device it is bonded with")
    }

    /// A `pair` step: the agent (registered at begin as the default, NoInputNoOutput) takes the
    /// step's capability and passkey, and Device1.Pair runs through it; the agent's refusal is
    /// bluetoothd's AuthenticationFailed, a failed step.
    func testPairRunsThroughTheAgentWithTheStepsSettings() throws {
        let (fake, central) = try begun()
        XCTAssertEqual(fake.agentManager.registered.map(\.capability), ["NoInputNoOutput"])
        XCTAssertEqual(fake.agentManager.defaultAgent, central.agentPath)
        let address = try connectedSensor(fake, central)
        let paired: Result<Void, SeatError>? = wait { done in
            central.pair(with: address, settings: SecuritySpec(io: .keyboardOnly, mitm: true, passkey: 42137), completion: done)
        }
        guard case .success? = paired else { return XCTFail("\(String(describing: paired))") }
        XCTAssertEqual(fake.typedPasskeys, [42137])
        XCTAssertEqual(fake.pairedWith, ["KeyboardOnly"])
        XCTAssertEqual(fake.agentManager.defaultAgent, central.agentPath, "registered again, still the default")
        // No passkey: the agent says Rejected, bluetoothd AuthenticationFailed.
        let refused: Result<Void, SeatError>? = wait { done in
            central.pair(with: address, settings: SecuritySpec(io: .keyboardOnly), completion: done)
        }
        guard case let .failure(error)? = refused else { return XCTFail("\(String(describing: refused))") }
        XCTAssertTrue("\(error)".contains("Device1.Pair: org.bluez.Error.AuthenticationFailed"), "\(error)")
        XCTAssertEqual(central.agent?.requests.filter { if case .requestPasskey = $0 { return true }; return false }.count, 2)
    }

    /// The pairing settings bluetoothd cannot carry (Linux decides MITM from the IO capability,
    /// Secure Connections and bonding per adapter, and draws a displayed passkey).
    func testPairingSettingsBlueZCannotCarry() {
        XCTAssertNil(BlueZSecurity.unsupported(SecuritySpec(), peerIO: nil))
        XCTAssertNil(BlueZSecurity.unsupported(SecuritySpec(io: .keyboardOnly, mitm: true, passkey: 1), peerIO: .displayOnly))
        XCTAssertNil(BlueZSecurity.unsupported(SecuritySpec(io: .keyboardDisplay, passkey: 1), peerIO: .displayOnly))
        XCTAssertNotNil(BlueZSecurity.unsupported(SecuritySpec(io: .keyboardDisplay, passkey: 1), peerIO: .keyboardOnly))
        XCTAssertNotNil(BlueZSecurity.unsupported(SecuritySpec(io: .displayOnly, passkey: 1), peerIO: nil))
        XCTAssertNotNil(BlueZSecurity.unsupported(SecuritySpec(secureConnections: false), peerIO: nil))
        XCTAssertNotNil(BlueZSecurity.unsupported(SecuritySpec(bonding: false), peerIO: nil))
        XCTAssertNotNil(BlueZSecurity.unsupported(SecuritySpec(mitm: true), peerIO: nil))
        XCTAssertNotNil(BlueZSecurity.unsupported(SecuritySpec(io: .displayYesNo, mitm: false), peerIO: nil))
    }

    /// `permissions:` as GattCharacteristic1 flags (src/gatt-database.c parse_chrc_flags).
    func testPermissionFlags() {
        var value = AttributePermissions.open, cccd = AttributePermissions.open
        XCTAssertEqual(BlueZSecurity.permissionFlags(value: value, configuration: cccd, properties: [.read, .write, .notify]), [])
        value.read = .encrypted
        value.write = .authenticated
        cccd.write = .encrypted
        XCTAssertEqual(BlueZSecurity.permissionFlags(value: value, configuration: cccd, properties: [.read, .write, .notify]),
                       ["encrypt-read", "encrypt-authenticated-write", "encrypt-notify"])
        cccd.write = .authenticated
        XCTAssertEqual(BlueZSecurity.permissionFlags(value: value, configuration: cccd, properties: [.indicate]),
                       ["encrypt-authenticated-indicate"])
        // Each flag also sets its property in bluetoothd: none where the property is not.
        XCTAssertEqual(BlueZSecurity.permissionFlags(value: value, configuration: cccd, properties: [.read]), ["encrypt-read"])
    }

    // MARK: Scanning

    func testScanSetsBlueZsFilterAndWaitsForDiscovering() throws {
        let (fake, central) = try begun()
        fake.discoveringAtOnce = false
        let step = ScanStep(services: [Self.uuid("180D"), Self.uuid("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")], duplicates: true)
        var started: Result<Void, SeatError>?
        central.startScan(step) { started = $0 }
        runUntil { fake.calls.contains("StartDiscovery") }
        // UUIDs in BlueZ's 128-bit lower-case form, LE only, DuplicateData from the step.
        XCTAssertEqual(fake.filters, [[
            "UUIDs": .strings([Self.heartRate, Self.nus]),
            "Transport": .string("le"),
            "DuplicateData": .boolean(true),
        ]])
        XCTAssertNil(started, "StartDiscovery returned, but Discovering is still false")
        fake.reportDiscovering()
        runUntil { started != nil }
        guard case .success? = started else { return XCTFail("\(String(describing: started))") }

        let _: Result<[SeatScanReport], SeatError>? = wait { done in central.stopScan(completion: done) }
        XCTAssertEqual(fake.calls.last, "StopDiscovery")
        // No services, no duplicates: no UUIDs key, DuplicateData false (bluetoothd's default is true).
        fake.discoveringAtOnce = true
        _ = scan(central)
        XCTAssertEqual(fake.filters.last, ["Transport": .string("le"), "DuplicateData": .boolean(false)])
    }

    func testScanThatNeverStartsDiscoveringFailsInCallTimeout() throws {
        let (fake, central) = try begun(callTimeout: .milliseconds(300))
        fake.discoveringAtOnce = false
        let start = loop.now
        let result: Result<Void, SeatError>? = wait { done in central.startScan(ScanStep(), completion: done) }
        XCTAssertEqual(failureText(result), "/org/bluez/hci0 did not start discovering within \(TimeSpan.milliseconds(300))")
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(300))
    }

    func testStartDiscoveryRefusedIsAnError() throws {
        let (fake, central) = try begun()
        fake.powered = false   // without PropertiesChanged: StartDiscovery says NotReady
        let text = failureText(wait { done in central.startScan(ScanStep(), completion: done) } as Result<Void, SeatError>?)
        XCTAssertEqual(text, "StartDiscovery: org.bluez.Error.NotReady: Resource Not Ready")
    }

    func testStopDiscoveryRefusedIsAnError() throws {
        let (fake, central) = try begun()
        let started: Result<Void, SeatError>? = wait { done in central.startScan(ScanStep(), completion: done) }
        XCTAssertNotNil(try started?.get())
        fake.stopDiscoveryAnswer = .fail(DBusErrorReply(.failed, message: "No discovery started"))
        let stopped: Result<[SeatScanReport], SeatError>? = wait { done in central.stopScan(completion: done) }
        XCTAssertEqual(failureText(stopped), "StopDiscovery: org.bluez.Error.Failed: No discovery started")
    }

    func testScanReportsOnlyDevicesAnnouncedDuringIt() throws {
        let (fake, central) = try begun()
        let sensor = addSensor(fake)
        let anonymous = fake.addDevice(Self.otherAddress, type: "public", rssi: -70)
        let later = fake.addDevice("C0:FF:EE:00:00:03", name: "Later", rssi: -60)
        let late = fake.addDevice("C0:FF:EE:00:00:04", name: "Late", rssi: -65, uuids: [Self.serial])

        // First scan: two devices appear (InterfacesAdded); the sensor advertises twice.
        fake.onStartDiscovery = {
            try? fake.advertise(sensor)
            try? fake.advertise(anonymous)
            try? fake.advertise(sensor, rssi: -42)
        }
        let first = try XCTUnwrap(scan(central))
        XCTAssertEqual(first, [
            SeatScanReport(address: Self.address(Self.hrmAddress), rssi: -42, names: ["HRM"], serviceUUIDs: [Self.uuid("180D")]),
            SeatScanReport(address: Self.address(Self.otherAddress, .public), rssi: -70, names: [], serviceUUIDs: []),
        ])

        // Between scans a device appears; it is not news for the next scan, which forgets it.
        try fake.export(later)
        let connected: Result<Void, SeatError>? = wait { done in
            central.connect(to: Self.address(Self.hrmAddress), within: .seconds(5), completion: done)
        }
        guard case .success? = connected else { return XCTFail("\(String(describing: connected))") }
        let before = fake.calls.count

        // Second scan: the connected sensor stays and reports a new RSSI (PropertiesChanged of
        // a device bluetoothd has); one new device; the anonymous one stays silent.
        fake.onStartDiscovery = {
            try? fake.advertise(sensor, rssi: -45)
            try? fake.advertise(late)
        }
        let second = try XCTUnwrap(scan(central))
        XCTAssertEqual(second, [
            SeatScanReport(address: Self.address(Self.hrmAddress), rssi: -45, names: ["HRM"], serviceUUIDs: [Self.uuid("180D")]),
            SeatScanReport(address: Self.address("C0:FF:EE:00:00:04"), rssi: -65, names: ["Late"], serviceUUIDs: [Self.uuid("FFE0")]),
        ])
        // Devices not connected were removed before the scan (the connected sensor was not).
        XCTAssertEqual(Set(fake.calls[before...].filter { $0.hasPrefix("RemoveDevice") }),
                       ["RemoveDevice \(anonymous.path)", "RemoveDevice \(later.path)"])
        XCTAssertTrue(sensor.exported)
    }

    func testAdvertisementsOutsideAScanAreNotReported() throws {
        let (fake, central) = try begun()
        let sensor = addSensor(fake)
        // Heard as the scan stops (the central has stopped listening), then silent.
        fake.onStopDiscovery = { try? fake.advertise(sensor) }
        XCTAssertEqual(scan(central), [])
        fake.onStopDiscovery = nil
        XCTAssertTrue(sensor.exported)
        XCTAssertEqual(scan(central), [])
        XCTAssertTrue(fake.calls.contains("RemoveDevice \(sensor.path)"), "the next scan starts without it")
    }

    // MARK: Connecting

    func testConnectWaitsForConnected() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central, discover: false)
        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        XCTAssertTrue(fake.calls.contains("Connect \(sensor.path)"))
        XCTAssertTrue(central.isConnected(address))
        XCTAssertFalse(central.isConnected(Self.address(Self.otherAddress)))
    }

    func testConnectReturningBeforeConnectedWaitsForIt() throws {
        let (fake, central) = try begun()
        let sensor = addSensor(fake)
        fake.onStartDiscovery = { try? fake.advertise(sensor) }
        _ = scan(central)
        fake.connectedAfterReply = true
        let address = Self.address(Self.hrmAddress)
        let connectedThen: Bool? = wait { done in
            central.connect(to: address, within: .seconds(5)) { result in done((try? result.get()) != nil && central.isConnected(address)) }
        }
        XCTAssertEqual(connectedThen, true, "Connect completed only once Connected was true")
    }

    /// The CI flake (hm10-with-write under load): bluetoothd's ATT channel came up before the
    /// kernel's mgmt Device Connected event, so Connect was answered first and Connected was
    /// never announced (device_add_connection: "Device … is already connected"). The connect
    /// waited 10 s for a PropertiesChanged that never came, past the scenario's timeout.
    func testConnectCompletesWhenBluetoothdNeverAnnouncesConnected() throws {
        let (fake, central) = try begun()
        let sensor = addSensor(fake)
        fake.onStartDiscovery = { try? fake.advertise(sensor) }
        _ = scan(central)
        fake.announcesConnected = false
        let address = Self.address(Self.hrmAddress)
        let start = loop.now
        let result: Result<Void, SeatError>? = wait(limit: .seconds(1)) { done in
            central.connect(to: address, within: .seconds(1), completion: done)
        }
        guard case .success? = result else { return XCTFail("not connected: \(String(describing: result))") }
        XCTAssertLessThan(loop.now - start, .seconds(1), "completed as bluetoothd answered, not on a timer")
        XCTAssertTrue(central.isConnected(address))
        XCTAssertEqual(fake.calls.filter { $0.hasPrefix("Connect") || $0.hasPrefix("Disconnect") }, ["Connect \(sensor.path)"])
        // Connected is known, so the link's end is news.
        var ended: [LEAddress] = []
        central.onDisconnected = { ended.append($0) }
        fake.dropConnection(sensor)
        runUntil { !ended.isEmpty }
        XCTAssertEqual(ended, [address])
        XCTAssertFalse(central.isConnected(address))
    }

    /// Connect answered before the link is up and Connected announced later, after the check
    /// read false: the connect completes on the announcement.
    func testConnectAnsweredBeforeTheLinkCompletesWhenConnectedIsAnnounced() throws {
        let (fake, central) = try begun()
        let sensor = addSensor(fake)
        fake.onStartDiscovery = { try? fake.advertise(sensor) }
        _ = scan(central)
        fake.linkUpOnConnect = false
        let address = Self.address(Self.hrmAddress)
        var result: Result<Void, SeatError>?
        central.connect(to: address, within: .seconds(2)) { result = $0 }
        runUntil { fake.calls.contains("Connect \(sensor.path)") }
        // The answer and the read of Connected (false) go by; the connect is still waiting.
        _ = loop.run(until: loop.now + .milliseconds(200), orUntil: { result != nil })
        XCTAssertNil(result)
        fake.linkUp(sensor)
        runUntil(.seconds(1)) { result != nil }
        guard case .success? = result else { return XCTFail("not connected: \(String(describing: result))") }
        XCTAssertTrue(central.isConnected(address))
    }

    /// Connect answered but Connected never true: the connect fails on its own bound (`within`
    /// again after the answer), not after the 10 s call timeout, which would outlast a scenario's.
    func testConnectAnsweredWithoutALinkFailsWithinItsBound() throws {
        let (fake, central) = try begun()
        let sensor = addSensor(fake)
        fake.onStartDiscovery = { try? fake.advertise(sensor) }
        _ = scan(central)
        fake.linkUpOnConnect = false
        let start = loop.now
        let result: Result<Void, SeatError>? = wait(limit: .seconds(2)) { done in
            central.connect(to: Self.address(Self.hrmAddress), within: .milliseconds(500), completion: done)
        }
        XCTAssertEqual(failureText(result), "Device1.Connect returned, but Connected stayed false (read with GetAll, then no "
            + "PropertiesChanged turned it true within \(TimeSpan.milliseconds(500)))")
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(500))
        XCTAssertLessThan(loop.now - start, .seconds(1))
        XCTAssertFalse(central.isConnected(Self.address(Self.hrmAddress)))
    }

    /// A long `within` does not stretch the confirmation past `callTimeout` (the step waits for
    /// the seat `within` plus its `connectGrace`, which callTimeout stays inside).
    func testConfirmingConnectedIsBoundedByTheCallTimeoutToo() throws {
        let (fake, central) = try begun(callTimeout: .milliseconds(300))
        let sensor = addSensor(fake)
        fake.onStartDiscovery = { try? fake.advertise(sensor) }
        _ = scan(central)
        fake.linkUpOnConnect = false
        let start = loop.now
        let result: Result<Void, SeatError>? = wait(limit: .seconds(2)) { done in
            central.connect(to: Self.address(Self.hrmAddress), within: .seconds(30), completion: done)
        }
        XCTAssertTrue(failureText(result).hasSuffix("turned it true within \(TimeSpan.milliseconds(300)))"), failureText(result))
        XCTAssertLessThan(loop.now - start, .seconds(1))
    }

    func testConnectThatNeverAnswersTimesOutAndIsCancelled() throws {
        let (fake, central) = try begun()
        let sensor = addSensor(fake)
        fake.onStartDiscovery = { try? fake.advertise(sensor) }
        _ = scan(central)
        fake.connectAnswer = .hang
        let start = loop.now
        let result: Result<Void, SeatError>? = wait { done in
            central.connect(to: Self.address(Self.hrmAddress), within: .milliseconds(300), completion: done)
        }
        guard case let .failure(.timeout(text))? = result else { return XCTFail("not a timeout: \(String(describing: result))") }
        XCTAssertEqual(text, "no connection within \(TimeSpan.milliseconds(300)) (Device1.Connect had not returned; cancelled with Disconnect)")
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(300))
        // bluetoothd cancels a pending LE connection on Disconnect.
        runUntil { fake.calls.last == "Disconnect \(sensor.path)" }
        XCTAssertEqual(fake.calls.suffix(2), ["Connect \(sensor.path)", "Disconnect \(sensor.path)"])
        XCTAssertFalse(central.isConnected(Self.address(Self.hrmAddress)))
    }

    func testConnectRefusedCarriesBluetoothdsErrorNameAndText() throws {
        let (fake, central) = try begun()
        let sensor = addSensor(fake)
        fake.onStartDiscovery = { try? fake.advertise(sensor) }
        _ = scan(central)
        fake.connectAnswer = .fail(DBusErrorReply(.failed, message: "le-connection-abort-by-local"))
        let result: Result<Void, SeatError>? = wait { done in
            central.connect(to: Self.address(Self.hrmAddress), within: .seconds(5), completion: done)
        }
        XCTAssertEqual(result.flatMap { r -> SeatError? in if case let .failure(e) = r { return e }; return nil },
                       .failed("Device1.Connect: org.bluez.Error.Failed: le-connection-abort-by-local"))
    }

    func testConnectToADeviceNoScanFound() throws {
        let (_, central) = try begun()
        let text = failureText(wait { done in
            central.connect(to: Self.address(Self.hrmAddress), within: .seconds(1), completion: done)
        } as Result<Void, SeatError>?)
        XCTAssertEqual(text, "bluetoothd has no device \(Self.address(Self.hrmAddress)) to connect to (no scan found it)")
    }

    func testDisconnectionsAskedForAreNotNewsOthersAre() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central, discover: false)
        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        var ended: [LEAddress] = []
        central.onDisconnected = { ended.append($0) }

        // The peripheral drops the link: reported once.
        fake.dropConnection(sensor)
        runUntil { !central.isConnected(address) }
        XCTAssertEqual(ended, [address])

        // A disconnect step: Device1.Disconnect, waited for, not reported.
        let again: Result<Void, SeatError>? = wait { done in central.connect(to: address, within: .seconds(5), completion: done) }
        guard case .success? = again else { return XCTFail("\(String(describing: again))") }
        let result: Result<Void, SeatError>? = wait { done in central.disconnect(from: address, completion: done) }
        guard case .success? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertEqual(fake.calls.last, "Disconnect \(sensor.path)")
        XCTAssertFalse(central.isConnected(address))
        XCTAssertEqual(ended, [address])
    }

    func testADroppedLinkAfterAConnectThatTimedOutIsStillNews() throws {
        let (fake, central) = try begun()
        let sensor = addSensor(fake)
        fake.onStartDiscovery = { try? fake.advertise(sensor) }
        _ = scan(central)
        let address = Self.address(Self.hrmAddress)
        fake.connectAnswer = .hang
        let timedOut: Result<Void, SeatError>? = wait { done in central.connect(to: address, within: .milliseconds(200), completion: done) }
        guard case .failure(.timeout)? = timedOut else { return XCTFail("\(String(describing: timedOut))") }
        runUntil { fake.calls.last == "Disconnect \(sensor.path)" }

        fake.connectAnswer = .reply
        let connected: Result<Void, SeatError>? = wait { done in central.connect(to: address, within: .seconds(5), completion: done) }
        guard case .success? = connected else { return XCTFail("\(String(describing: connected))") }
        var ended: [LEAddress] = []
        central.onDisconnected = { ended.append($0) }
        fake.dropConnection(sensor)
        runUntil { !central.isConnected(address) }
        // The cancelled connect must not leave the device marked as disconnecting on request.
        XCTAssertEqual(ended, [address])
    }

    // MARK: Discovery

    func testDiscoverWaitsForServicesResolvedAndTakesHandlesFromPaths() throws {
        let (fake, central) = try begun()
        fake.resolvesOnConnect = false
        let address = try connectedSensor(fake, central, discover: false)
        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        var found: Result<[SeatService], SeatError>?
        central.discover(on: address, services: nil) { found = $0 }
        XCTAssertNil(found, "ServicesResolved is false")
        try fake.resolveServices(sensor)
        runUntil { found != nil }
        // The value handle follows the declaration whose handle names the object (char000b → 0x000c).
        XCTAssertEqual(try found?.get(), [
            SeatService(uuid: Self.uuid("180D"), characteristics: [
                SeatCharacteristic(uuid: Self.uuid("2A37"), properties: [.read, .notify], valueHandle: 0x000C),
                SeatCharacteristic(uuid: Self.uuid("2A38"), properties: [.read], valueHandle: 0x000E),
            ]),
            SeatService(uuid: Self.uuid("FFE0"), characteristics: [
                SeatCharacteristic(uuid: Self.uuid("FFE1"), properties: [.read, .write, .writeWithoutResponse, .notify], valueHandle: 0x0012),
            ]),
        ])
        XCTAssertEqual(central.mtu(on: address), 23)

        let only: Result<[SeatService], SeatError>? = wait { done in central.discover(on: address, services: [Self.uuid("FFE0")], completion: done) }
        XCTAssertEqual(try only?.get().map(\.uuid), [Self.uuid("FFE0")])
        let none: Result<[SeatService], SeatError>? = wait { done in central.discover(on: address, services: [Self.uuid("180F")], completion: done) }
        XCTAssertEqual(try none?.get(), [])
    }

    func testLinkDroppingWhileWaitingForServicesEndsTheDiscovery() throws {
        let (fake, central) = try begun()
        fake.resolvesOnConnect = false
        let address = try connectedSensor(fake, central, discover: false)
        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        var found: Result<[SeatService], SeatError>?
        central.discover(on: address, services: nil) { found = $0 }
        fake.dropConnection(sensor)
        runUntil { !central.isConnected(address) }
        // Connected false is a signal like ServicesResolved: the wait can end with it, within a
        // couple of seconds rather than discover's 30.
        _ = loop.run(until: loop.now + .seconds(2), orUntil: { found != nil })
        XCTAssertNotNil(found, "discover must end with the link, not wait 30 s for ServicesResolved")
        XCTAssertTrue(failureText(found).contains("ended before bluetoothd resolved its services"), failureText(found))
    }

    func testGATTCallAfterTheLinkDroppedSaysTheObjectsWent() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        fake.dropConnection(sensor)
        runUntil { !central.isConnected(address) }
        // bluetoothd removed the GATT objects and set ServicesResolved false with the link.
        let r: Result<[UInt8], SeatError>? = wait { done in central.read(measurementRef, on: address, completion: done) }
        let text = failureText(r)
        XCTAssertTrue(text.hasPrefix("bluetoothd has no GATT object for \(measurementRef) under \(sensor.path) any more"), text)
        XCTAssertTrue(text.contains("when the link ended (Device1.Connected is false)"), text)
    }

    /// Another interleaving of the removals under load: the characteristics' InterfacesRemoved
    /// have arrived and their services' not yet when the step calls. The objects went all the same.
    func testACallBetweenTheRemovalsSaysTheObjectsWent() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        fake.dropLink(sensor)
        runUntil { !central.isConnected(address) }
        fake.removeGATTObjects(sensor, servicesToo: false)
        runUntil { central.mtu(on: address) == nil }   // the characteristics are gone from its view
        let r: Result<[UInt8], SeatError>? = wait { done in central.read(measurementRef, on: address, completion: done) }
        let text = failureText(r)
        XCTAssertTrue(text.hasPrefix("bluetoothd has no GATT object for \(measurementRef) under \(sensor.path) any more"), text)
        XCTAssertTrue(text.contains("when the link ended (Device1.Connected is false)"), text)
    }

    /// The race behind a flake of the test above under load: the central has seen Connected turn
    /// false, but the InterfacesRemoved of the GATT objects are still on their way when the step
    /// calls, so the call goes to an object bluetoothd no longer has (UnknownObject). D-Bus
    /// delivers one sender's messages in order, so the removals are known by the time the error
    /// reply is: the answer is the same as when they had arrived first. Here the order is made,
    /// not left to the scheduler: the removals are sent and the read is called before the loop
    /// runs again.
    func testGATTCallsRacingTheObjectsRemovalSayTheObjectsWent() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        fake.dropLink(sensor)
        runUntil { !central.isConnected(address) }
        fake.removeGATTObjects(sensor)
        XCTAssertNotNil(central.mtu(on: address), "the central still has the GATT objects (mtu comes from them)")
        let read: Result<[UInt8], SeatError>? = wait { done in central.read(measurementRef, on: address, completion: done) }
        var text = failureText(read)
        XCTAssertTrue(text.hasPrefix("bluetoothd has no GATT object for \(measurementRef) under \(sensor.path) any more"), text)
        XCTAssertTrue(text.contains("when the link ended (Device1.Connected is false)"), text)

        // The same for the other calls on a characteristic object.
        try reconnect(fake, central, address)
        fake.dropLink(sensor)
        runUntil { !central.isConnected(address) }
        fake.removeGATTObjects(sensor)
        XCTAssertNotNil(central.mtu(on: address))
        let wrote: Result<Void, SeatError>? = wait { done in
            central.write(SeatWrite(value: [1], type: .request, acquire: false), to: serialRef, on: address, completion: done)
        }
        text = failureText(wrote)
        XCTAssertTrue(text.hasPrefix("bluetoothd has no GATT object for \(serialRef) under \(sensor.path) any more"), text)

        try reconnect(fake, central, address)
        fake.dropLink(sensor)
        runUntil { !central.isConnected(address) }
        fake.removeGATTObjects(sensor)
        XCTAssertNotNil(central.mtu(on: address))
        let subscribed: Result<Void, SeatError>? = wait { done in
            central.setNotifications(true, for: measurementRef, on: address, acquire: false, completion: done)
        }
        text = failureText(subscribed)
        XCTAssertTrue(text.hasPrefix("bluetoothd has no GATT object for \(measurementRef) under \(sensor.path) any more"), text)
    }

    /// Connects again and rediscovers after a drop.
    private func reconnect(_ fake: FakeCentralBluetoothd, _ central: BlueZCentral, _ address: LEAddress) throws {
        let connected: Result<Void, SeatError>? = wait { done in central.connect(to: address, within: .seconds(5), completion: done) }
        XCTAssertNotNil(try connected?.get())
        let found: Result<[SeatService], SeatError>? = wait { done in central.discover(on: address, services: nil, completion: done) }
        XCTAssertNotNil(try found?.get())
    }

    func testValueHandleFromTheObjectPath() {
        XCTAssertEqual(BlueZCentral.valueHandle(ofCharacteristic: "/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service000a/char000b"), 0x000C)
        XCTAssertEqual(BlueZCentral.valueHandle(ofCharacteristic: "/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service0010/char00ff"), 0x0100)
        XCTAssertNil(BlueZCentral.valueHandle(ofCharacteristic: "/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service000a/char000b/desc000d"))
        XCTAssertNil(BlueZCentral.valueHandle(ofCharacteristic: "/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service000a/charffff"))
    }

    // MARK: Reading and notifications

    func testReadIsNoNotificationButAValueAfterStartNotifyIs() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let measurement = characteristic(fake, Self.measurement)
        var values: [(LEAddress, CharacteristicRef, [UInt8])] = []
        central.onValue = { values.append(($0, $1, $2)) }

        let subscribed: Result<Void, SeatError>? = wait { done in
            central.setNotifications(true, for: measurementRef, on: address, acquire: false, completion: done)
        }
        guard case .success? = subscribed else { return XCTFail("\(String(describing: subscribed))") }
        XCTAssertEqual(fake.calls.last, "StartNotify \(measurement.path)")

        // bluetoothd flushes PropertiesChanged(Value) for the value read before the reply.
        measurement.value = [0x00, 61]
        let read: Result<[UInt8], SeatError>? = wait { done in central.read(measurementRef, on: address, completion: done) }
        XCTAssertEqual(try read?.get(), [0x00, 61])
        XCTAssertEqual(fake.calls.last, "ReadValue \(measurement.path)")

        fake.notify(measurement, [0x00, 72])
        fake.notify(measurement, [0x00, 73])
        runUntil { values.count >= 2 }
        XCTAssertEqual(values.map(\.2), [[0x00, 72], [0x00, 73]], "the read's value is not a notification")
        XCTAssertEqual(values.first?.0, address)
        XCTAssertEqual(values.first?.1, measurementRef)

        let stopped: Result<Void, SeatError>? = wait { done in
            central.setNotifications(false, for: measurementRef, on: address, acquire: false, completion: done)
        }
        guard case .success? = stopped else { return XCTFail("\(String(describing: stopped))") }
        XCTAssertEqual(fake.calls.last, "StopNotify \(measurement.path)")
    }

    func testReadErrorsMapToATTErrors() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        func read() -> SeatError? {
            let r: Result<[UInt8], SeatError>? = wait { done in central.read(measurementRef, on: address, completion: done) }
            if case let .failure(e)? = r { return e }
            XCTFail("the read succeeded")
            return nil
        }
        // src/gatt-client.c create_gatt_dbus_error: most ATT errors as Failed with the code in hex.
        fake.readAnswer = .fail(DBusErrorReply(.failed, message: "Operation failed with ATT error: 0x0e"))
        XCTAssertEqual(read(), .att(.unlikelyError, "ReadValue of \(measurementRef): org.bluez.Error.Failed: Operation failed with ATT error: 0x0e"))
        fake.readAnswer = .fail(DBusErrorReply(.notPermitted, message: "Read not permitted"))
        XCTAssertEqual(read()?.attErrorCode, .readNotPermitted)
        fake.readAnswer = .fail(DBusErrorReply(.failed, message: "Not connected"))
        XCTAssertEqual(read(), .failed("ReadValue of \(measurementRef): org.bluez.Error.Failed: Not connected"))
    }

    func testGATTCallsBeforeDiscoveryOrAfterTheObjectsWentSaySo() throws {
        let (fake, central) = try begun()
        fake.resolvesOnConnect = false
        let address = try connectedSensor(fake, central, discover: false)
        let early: Result<[UInt8], SeatError>? = wait { done in central.read(measurementRef, on: address, completion: done) }
        XCTAssertEqual(failureText(early), "bluetoothd has not resolved \(address)'s services (add a discover step)")

        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        try fake.resolveServices(sensor)
        let found: Result<[SeatService], SeatError>? = wait { done in central.discover(on: address, services: nil, completion: done) }
        XCTAssertNotNil(try found?.get())
        let missing = CharacteristicRef(Self.uuid("2A39"))
        let absent: Result<[UInt8], SeatError>? = wait { done in central.read(missing, on: address, completion: done) }
        XCTAssertTrue(failureText(absent).hasPrefix("bluetoothd has no GATT object for \(missing) under \(sensor.path)"))
    }

    // MARK: Writing

    func testWriteValueTypeOptionFollowsTheStep() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let serial = characteristic(fake, Self.serialData)
        func write(_ value: [UInt8], _ type: WriteType, to ref: CharacteristicRef) {
            let r: Result<Void, SeatError>? = wait { done in
                central.write(SeatWrite(value: value, type: type, acquire: false), to: ref, on: address, completion: done)
            }
            guard case .success? = r else { return XCTFail("\(type): \(String(describing: r))") }
        }
        // FFE1 has both write and write-without-response.
        write([1], .request, to: serialRef)
        write([2], .command, to: serialRef)
        write([3], .default, to: serialRef)
        write([4], .preferRequest, to: serialRef)
        write([5], .preferCommand, to: serialRef)
        XCTAssertEqual(fake.writes.map(\.path), Array(repeating: serial.path, count: 5))
        XCTAssertEqual(fake.writes.map(\.value), [[1], [2], [3], [4], [5]])
        XCTAssertEqual(fake.writes.map { $0.options["type"] }, [.string("request"), .string("command"), nil, .string("request"), .string("command")])
        XCTAssertEqual(fake.writes[2].options, [:], "type: default sends no options: bluetoothd chooses")

        // Flags decide prefer-*: with write only, prefer-command is a request; with
        // write-without-response only, prefer-request is a command.
        serial.flags = ["write"]
        try rediscover(fake, central, address)
        write([6], .preferCommand, to: serialRef)
        serial.flags = ["write-without-response"]
        try rediscover(fake, central, address)
        write([7], .preferRequest, to: serialRef)
        XCTAssertEqual(fake.writes.suffix(2).map { $0.options["type"] }, [.string("request"), .string("command")])
    }

    /// bluetoothd's objects again after flags changed: the link drops and comes back.
    private func rediscover(_ fake: FakeCentralBluetoothd, _ central: BlueZCentral, _ address: LEAddress) throws {
        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        fake.dropConnection(sensor)
        runUntil { !central.isConnected(address) }
        let connected: Result<Void, SeatError>? = wait { done in central.connect(to: address, within: .seconds(5), completion: done) }
        XCTAssertNotNil(try connected?.get())
        let found: Result<[SeatService], SeatError>? = wait { done in central.discover(on: address, services: nil, completion: done) }
        XCTAssertNotNil(try found?.get())
    }

    func testWriteErrorsMapToATTErrors() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        fake.writeAnswer = .fail(DBusErrorReply(.failed, message: "Operation failed with ATT error: 0x80"))
        let r: Result<Void, SeatError>? = wait { done in
            central.write(SeatWrite(value: [1], type: .request, acquire: false), to: serialRef, on: address, completion: done)
        }
        guard case let .failure(error)? = r else { return XCTFail("\(String(describing: r))") }
        XCTAssertEqual(error.attErrorCode?.rawValue, 0x80, "an application error code comes back as it was")
    }

    func testAcquireWriteSendsTheValueAsOneDatagram() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let serial = characteristic(fake, Self.serialData)
        let value = Array(0..<20).map(UInt8.init)   // ATT_MTU 23 - 3: a full Write Command
        let r: Result<Void, SeatError>? = wait { done in
            central.write(SeatWrite(value: value, type: .default, acquire: true), to: serialRef, on: address, completion: done)
        }
        guard case .success? = r else { return XCTFail("\(String(describing: r))") }
        XCTAssertEqual(fake.calls.last, "AcquireWrite \(serial.path)")
        XCTAssertEqual(fake.writes.count, 0, "not through WriteValue")
        let fd = try XCTUnwrap(fake.writeSockets[serial.path])
        let (datagrams, closed) = drainUntilClosed(fd)
        XCTAssertEqual(datagrams, [value])
        XCTAssertTrue(closed, "the central closes its end after the write")
    }

    func testAcquireWriteRefusedIsAnError() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let r: Result<Void, SeatError>? = wait { done in
            central.write(SeatWrite(value: [1], type: .default, acquire: true), to: measurementRef, on: address, completion: done)
        }
        XCTAssertTrue(failureText(r).contains("AcquireWrite of \(measurementRef): org.bluez.Error.NotSupported"), failureText(r))
    }

    func testAcquireWriteRefusesMoreThanAWriteCommandCarries() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let serial = characteristic(fake, Self.serialData)
        // AcquireWrite's mtu is ATT_MTU (create_sock: bt_gatt_client_get_mtu); a Write Command
        // carries at most ATT_MTU - 3 octets (Core 5.4 Vol 3 Part F 3.4.5.3). bluetoothd's
        // sock_read passes a longer datagram to bt_gatt_client_write_without_response, which
        // cannot send it, and nobody hears of it.
        let r: Result<Void, SeatError>? = wait { done in
            central.write(SeatWrite(value: Array(repeating: 0x55, count: 21), type: .default, acquire: true), to: serialRef, on: address, completion: done)
        }
        if case .success? = r {
            let sent = fake.writeSockets[serial.path].map { FakeCentralBluetoothd.drain($0).datagrams } ?? []
            XCTFail("AcquireWrite accepted \(sent.first?.count ?? 0) octets at ATT_MTU 23; bluetoothd would drop them silently")
        }
        XCTAssertTrue(failureText(r).contains("do not fit"), failureText(r))
        let too: Result<Void, SeatError>? = wait { done in
            central.write(SeatWrite(value: Array(repeating: 0x55, count: 24), type: .default, acquire: true), to: serialRef, on: address, completion: done)
        }
        XCTAssertTrue(failureText(too).contains("do not fit"))
    }

    func testAcquireWriteBeyondTheMTUIsRefused() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let r: Result<Void, SeatError>? = wait { done in
            central.write(SeatWrite(value: Array(repeating: 0x55, count: 24), type: .default, acquire: true), to: serialRef, on: address, completion: done)
        }
        XCTAssertEqual(failureText(r), "24 octets do not fit a Write Command through AcquireWrite (ATT_MTU 23: at most 20)")
    }

    func testAcquireNotifyDeliversDatagramsInOrderAndClosesOnUnsubscribe() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central)
        let serial = characteristic(fake, Self.serialData)
        var values: [(LEAddress, CharacteristicRef, [UInt8])] = []
        central.onValue = { values.append(($0, $1, $2)) }
        let acquired: Result<Void, SeatError>? = wait { done in
            central.setNotifications(true, for: serialRef, on: address, acquire: true, completion: done)
        }
        guard case .success? = acquired else { return XCTFail("\(String(describing: acquired))") }
        XCTAssertEqual(fake.calls.last, "AcquireNotify \(serial.path)")

        XCTAssertTrue(fake.notifyAcquired(serial, [1]))
        XCTAssertTrue(fake.notifyAcquired(serial, [2, 2]))
        XCTAssertTrue(fake.notifyAcquired(serial, Array(repeating: 3, count: 20)))
        runUntil { values.count >= 3 }
        XCTAssertEqual(values.map(\.2), [[1], [2, 2], Array(repeating: 3, count: 20)])
        XCTAssertEqual(values.first?.0, address)
        XCTAssertEqual(values.first?.1, serialRef)

        // Unsubscribing closes the socket (bluetoothd then stops); no StopNotify.
        let released: Result<Void, SeatError>? = wait { done in
            central.setNotifications(false, for: serialRef, on: address, acquire: true, completion: done)
        }
        guard case .success? = released else { return XCTFail("\(String(describing: released))") }
        XCTAssertEqual(fake.calls.last, "AcquireNotify \(serial.path)")
        let fd = try XCTUnwrap(fake.notifySockets[serial.path])
        XCTAssertEqual(drainUntilClosed(fd).closed, true, "the central closed its end")
        XCTAssertEqual(values.count, 3)
    }

    // MARK: Failures

    func testBluetoothdLeavingTheBusFailsTheRoleAndEndsWaits() throws {
        let (fake, central) = try begun()
        fake.resolvesOnConnect = false
        let address = try connectedSensor(fake, central, discover: false)
        var found: Result<[SeatService], SeatError>?
        central.discover(on: address, services: nil) { found = $0 }
        let released: Result<[DBusValue], DBusError>? = wait { done in fake.leaveBus(completion: done) }
        XCTAssertEqual(try released?.get(), [.uint32(1)])
        runUntil { found != nil }
        XCTAssertEqual(central.failure, "bluetoothd left the system bus (it stopped or crashed)")
        XCTAssertEqual(failureText(found), "bluetoothd left the system bus (it stopped or crashed)")
        // Later steps fail with the same text.
        let scan: Result<Void, SeatError>? = wait { done in central.startScan(ScanStep(), completion: done) }
        XCTAssertEqual(failureText(scan), "bluetoothd left the system bus (it stopped or crashed)")
    }

    func testAdapterPoweredOffFailsTheRoleAndEndsWaits() throws {
        let (fake, central) = try begun()
        fake.discoveringAtOnce = false
        var started: Result<Void, SeatError>?
        central.startScan(ScanStep()) { started = $0 }
        runUntil { fake.calls.contains("StartDiscovery") }
        fake.powerOff()
        runUntil { started != nil }
        XCTAssertEqual(central.failure, "BlueZ's adapter /org/bluez/hci0 was powered off")
        XCTAssertEqual(failureText(started), "BlueZ's adapter /org/bluez/hci0 was powered off")
    }

    // MARK: power-off: central

    func testPowerOffSetsPoweredFalseAndEndsTheRole() throws {
        let (fake, central) = try begun()
        let off: Result<Void, SeatError>? = wait { done in central.powerOff(after: nil, completion: done) }
        guard case .success? = off else { return XCTFail("power-off failed: \(String(describing: off))") }
        XCTAssertEqual(fake.calls, ["Powered false"])
        XCTAssertFalse(fake.powered)
        runUntil { central.failure != nil }
        XCTAssertEqual(central.failure, "BlueZ's adapter /org/bluez/hci0 was powered off")
    }

    func testADelayedPowerOffEndsAWaitingStepAtOnce() throws {
        // A 30 s call timeout: the scan's wait for Discovering must end at the power-off, long before.
        let (fake, central) = try begun(callTimeout: .seconds(30))
        fake.discoveringAtOnce = false
        var off: Result<Void, SeatError>?
        central.powerOff(after: .milliseconds(100)) { off = $0 }
        guard case .success? = off else { return XCTFail("the delayed form completes at once: \(String(describing: off))") }
        XCTAssertEqual(fake.calls, [], "nothing is set before the delay")
        var started: Result<Void, SeatError>?
        central.startScan(ScanStep()) { started = $0 }
        runUntil(.seconds(5)) { started != nil }
        XCTAssertEqual(fake.calls, ["SetDiscoveryFilter", "StartDiscovery", "Powered false"])
        XCTAssertEqual(failureText(started), "BlueZ's adapter /org/bluez/hci0 was powered off")
    }

    func testPowerOffRefusedSaysWhatBluetoothdAnswered() throws {
        let (fake, central) = try begun()
        fake.powerAnswer = .fail(DBusErrorReply(.failed, message: "Blocked through rfkill"))
        let off: Result<Void, SeatError>? = wait { done in central.powerOff(after: nil, completion: done) }
        let text = failureText(off)
        XCTAssertTrue(text.contains("org.bluez.Error.Failed: Blocked through rfkill"), text)
        XCTAssertNil(central.failure)
        // Delayed, the refusal comes when nothing waits for the step: it ends the role.
        central.powerOff(after: .milliseconds(50)) { _ in }
        runUntil { central.failure != nil }
        let failure = try XCTUnwrap(central.failure)
        XCTAssertTrue(failure.hasPrefix("could not power /org/bluez/hci0 off: "), failure)
        XCTAssertTrue(failure.contains("Blocked through rfkill"), failure)
    }

    func testTheFailureCaseIsPlayable() throws {
        let path = BlueZPeripheralSupportTests.repository.appendingPathComponent("vm/bluez/failures/adapter-powered-off.yaml").path
        let scenario = try Scenario.load(path: path)
        XCTAssertTrue(scenario.steps.contains { $0.action == .fault(.centralPowerOff(after: .seconds(3))) })
        XCTAssertNil(try BlueZCentral().unsupported(scenario))
    }

    func testAdapterRemovedFailsTheRole() throws {
        let (fake, central) = try begun()
        fake.removeAdapter()
        runUntil { central.failure != nil }
        XCTAssertEqual(central.failure, "bluetoothd removed the adapter /org/bluez/hci0 (the controller went away)")
    }

    func testLostBusConnectionFailsTheRole() throws {
        let (_, central) = try begun()
        // SIGKILL: the bus is gone at once, without telling anyone that bluetoothd's name went.
        bus.kill()
        runUntil { central.failure != nil }
        XCTAssertTrue(central.failure?.hasPrefix("the D-Bus connection to bluetoothd closed:") == true, central.failure ?? "")
        var ended = false
        central.end { ended = true }
        runUntil(.seconds(2)) { ended }
    }

    // MARK: End

    func testEndRemovesDevicesAndClosesTheConnection() throws {
        let (fake, central) = try begun()
        let address = try connectedSensor(fake, central, discover: false)
        let sensor = try XCTUnwrap(fake.device(Self.hrmAddress))
        let other = fake.addDevice(Self.otherAddress)
        try fake.export(other)
        // Discovery reads bluetoothd's objects again: the central knows both devices.
        let found: Result<[SeatService], SeatError>? = wait { done in central.discover(on: address, services: nil, completion: done) }
        XCTAssertNotNil(try found?.get())
        let caller = try XCTUnwrap(fake.lastCaller)
        var ended = false
        central.end { ended = true }
        runUntil { ended }
        XCTAssertEqual(Set(fake.calls.suffix(2)), ["RemoveDevice \(sensor.path)", "RemoveDevice \(other.path)"])
        XCTAssertFalse(sensor.connected, "removing a connected device disconnects it")
        let owner: Result<[DBusValue], DBusError>? = wait { done in fake.nameHasOwner(caller, completion: done) }
        XCTAssertEqual(try owner?.get(), [.boolean(false)], "the central's connection is closed")
    }

    func testEndStopsADiscoveryStillRunning() throws {
        let (fake, central) = try begun()
        let started: Result<Void, SeatError>? = wait { done in central.startScan(ScanStep(), completion: done) }
        guard case .success? = started else { return XCTFail() }
        var ended = false
        central.end { ended = true }
        runUntil { ended }
        XCTAssertEqual(fake.calls.last, "StopDiscovery")
    }

    func testEndIsBoundedWhenBluetoothdIsGone() throws {
        let (fake, central) = try begun()
        try connectedSensor(fake, central)
        let caller = try XCTUnwrap(fake.lastCaller)
        let released: Result<[DBusValue], DBusError>? = wait { done in fake.leaveBus(completion: done) }
        XCTAssertNotNil(released)
        runUntil { central.failure != nil }
        var ended = false
        let start = loop.now
        central.end { ended = true }
        runUntil(.seconds(2)) { ended }
        XCTAssertLessThan(loop.now - start, .seconds(2))
        let owner: Result<[DBusValue], DBusError>? = wait { done in fake.nameHasOwner(caller, completion: done) }
        XCTAssertEqual(try owner?.get(), [.boolean(false)])
    }

    func testEndIsBoundedWhenBluetoothdHangs() throws {
        let (fake, central) = try begun(callTimeout: .milliseconds(300))
        try connectedSensor(fake, central)
        fake.removeAnswer = .hang
        var ended = false
        let start = loop.now
        central.end { ended = true }
        runUntil(.seconds(3)) { ended }
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(300), "it waited for RemoveDevice")
        XCTAssertTrue(fake.calls.last?.hasPrefix("RemoveDevice") == true)
    }
}

/// A set-up step that failed (already reported with XCTFail): stops the test as failed, not skipped.
private struct SetUpFailed: Error {
    var what: String
}

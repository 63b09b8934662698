import ATT
import BLELab
import BLELabTestSupport
import BLERuntime
import BLEWire
import GAP
import GATT
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// A `CentralSeat` played by a second BLELab host on the sim, so that the session's path for
/// another stack in the central's seat (`--central bluez`) runs deterministically: steps become
/// calls on the role, writes are judged on the peripheral's HCI, values count when the role
/// delivers them, and the role's failure ends the scenario.
final class StandInCentral: CentralSeat {
    var description: String { "a stand-in central" }
    var failure: String?
    var onValue: ((LEAddress, CharacteristicRef, [UInt8]) -> Void)?
    var onDisconnected: ((LEAddress) -> Void)?
    /// Every call, in order ("startScan FFE0", "write FFE1 default", …).
    var calls: [String] = []
    /// Rewrites a write's type before it is sent (a stack that does not do as told).
    var disobey: ((WriteType) -> WriteType)?

    private var device: LabDevice!
    private var reports: [ScanReport] = []
    private var connections: [LEAddress: Connection] = [:]
    private var resolved: [LEAddress: [SeatService]] = [:]

    func unsupported(_ scenario: Scenario) -> String? { nil }

    func begin(lab: Lab, completion: @escaping (Result<Void, SeatError>) -> Void) {
        calls.append("begin")
        resolved = [:]
        do { device = try lab.addDevice("stand-in") } catch { return completion(.failure(.failed("\(error)"))) }
        device.host.powerOn { completion($0.mapError { .failed("\($0)") }) }
    }

    func end(completion: @escaping () -> Void) {
        calls.append("end")
        completion()
    }

    func startScan(_ scan: ScanStep, completion: @escaping (Result<Void, SeatError>) -> Void) {
        calls.append("startScan \(scan.services.map(\.description).joined(separator: ","))")
        reports = []
        let configuration = ScanConfiguration(services: scan.services.isEmpty ? nil : scan.services, active: true, allowDuplicates: false)
        device.host.startScanning(configuration, onReport: { [weak self] in self?.reports.append($0) }) {
            completion($0.mapError { .failed("\($0)") })
        }
    }

    func stopScan(completion: @escaping (Result<[SeatScanReport], SeatError>) -> Void) {
        calls.append("stopScan")
        device.host.stopScanning { [self] _ in
            completion(.success(reports.map { r in
                SeatScanReport(address: r.address, rssi: r.rssi, names: r.localName.map { [$0] } ?? [], serviceUUIDs: r.serviceUUIDs)
            }))
        }
    }

    func connect(to address: LEAddress, within: TimeSpan, completion: @escaping (Result<Void, SeatError>) -> Void) {
        calls.append("connect \(address)")
        device.host.connect(to: address, timeout: within) { [self] result in
            switch result {
            case let .success(connection):
                connections[address] = connection
                connection.client.onNotification = { [weak self] n in
                    guard let self, let c = connection.client.characteristic(valueHandle: n.handle),
                          let s = connection.client.services.first(where: { $0.characteristics.contains { $0.valueHandle == n.handle } }) else { return }
                    self.onValue?(address, CharacteristicRef(c.uuid, in: s.uuid), n.value)
                }
                connection.whenDisconnected { [weak self] _ in self?.onDisconnected?(address) }
                completion(.success(()))
            case let .failure(error):
                completion(.failure(.timeout("\(error)")))
            }
        }
    }

    func disconnect(from address: LEAddress, completion: @escaping (Result<Void, SeatError>) -> Void) {
        calls.append("disconnect")
        guard let connection = connections[address] else { return completion(.failure(.failed("not connected"))) }
        connection.disconnect()
        connection.whenDisconnected { _ in completion(.success(())) }
    }

    func isConnected(_ address: LEAddress) -> Bool { connections[address]?.isConnected ?? false }

    func discover(on address: LEAddress, services: [BluetoothUUID]?, completion: @escaping (Result<[SeatService], SeatError>) -> Void) {
        calls.append("discover")
        guard let connection = connections[address] else { return completion(.failure(.failed("not connected"))) }
        connection.client.discoverAll(serviceUUIDs: services) { [self] result in
            if case let .success(found) = result {
                resolved[address] = found.map { s in
                    SeatService(uuid: s.uuid, characteristics: s.characteristics.map {
                        SeatCharacteristic(uuid: $0.uuid, properties: $0.properties, valueHandle: $0.valueHandle)
                    })
                }
            }
            completion(result.map { found in
                found.map { s in
                    SeatService(uuid: s.uuid, characteristics: s.characteristics.map {
                        SeatCharacteristic(uuid: $0.uuid, properties: $0.properties, valueHandle: $0.valueHandle)
                    })
                }
            }.mapError { .failed("\($0)") })
        }
    }

    func services(on address: LEAddress) -> [SeatService] {
        resolved[address] ?? []
    }

    func mtu(on address: LEAddress) -> Int? { connections[address].map { Int($0.client.mtu) } }

    private func characteristic(_ ref: CharacteristicRef, _ address: LEAddress) -> (Connection, GATTRemoteCharacteristic)? {
        guard let connection = connections[address] else { return nil }
        for s in connection.client.services where ref.service == nil || s.uuid == ref.service {
            if let c = s.characteristic(ref.characteristic) { return (connection, c) }
        }
        return nil
    }

    private static func roleError(_ error: GATTError) -> SeatError {
        error.attErrorCode.map { .att($0, "\(error)") } ?? .failed("\(error)")
    }

    func read(_ ref: CharacteristicRef, on address: LEAddress, completion: @escaping (Result<[UInt8], SeatError>) -> Void) {
        calls.append("read \(ref)")
        guard let (connection, c) = characteristic(ref, address) else { return completion(.failure(.failed("no \(ref)"))) }
        connection.client.read(handle: c.valueHandle) { completion($0.mapError(Self.roleError)) }
    }

    func write(_ write: SeatWrite, to ref: CharacteristicRef, on address: LEAddress,
               completion: @escaping (Result<Void, SeatError>) -> Void) {
        calls.append("write \(ref) \(write.type.rawValue)\(write.acquire ? " acquire" : "")")
        guard let (connection, c) = characteristic(ref, address) else { return completion(.failure(.failed("no \(ref)"))) }
        let type = disobey?(write.type) ?? write.type
        switch type.method(for: c.properties) {
        case .request:
            connection.client.write(write.value, handle: c.valueHandle) { completion($0.mapError(Self.roleError)) }
        case .command:
            completion(connection.client.writeWithoutResponse(write.value, handle: c.valueHandle) ? .success(()) : .failure(.failed("too long")))
        }
    }

    func setNotifications(_ enable: Bool, for ref: CharacteristicRef, on address: LEAddress, acquire: Bool,
                          completion: @escaping (Result<Void, SeatError>) -> Void) {
        calls.append("\(enable ? "subscribe" : "unsubscribe") \(ref)\(acquire ? " acquire" : "")")
        guard let (connection, c) = characteristic(ref, address) else { return completion(.failure(.failed("no \(ref)"))) }
        let done: (Result<Void, GATTError>) -> Void = { completion($0.mapError(Self.roleError)) }
        if enable { connection.client.subscribe(to: c, completion: done) } else { connection.client.unsubscribe(from: c, completion: done) }
    }
}

final class StandInCentralTests: XCTestCase {
    private func run(_ text: String, central: StandInCentral) throws -> ScenarioResult {
        ScenarioRunner(roles: ScenarioRoles(central: central)).run(try ScenarioText.load(text))
    }

    func testTheSeedRunsThroughTheRoleAndTheWriteIsJudgedOnThePeripheralsHCI() throws {
        let central = StandInCentral()
        let text = try String(contentsOfFile: "scenarios/seeds/hm10-serial.yaml", encoding: .utf8)
        let result = try run(text, central: central)
        XCTAssertTrue(result.passed, "\(result.outcome)")
        XCTAssertEqual(central.calls, ["begin", "startScan FFE0", "stopScan", "connect C0:11:22:33:44:55/random", "discover",
                                       "subscribe FFE1", "write FFE1 prefer-request", "disconnect", "end"])
        // No BLELab central device: the stand-in is the only other one, besides the two peripherals.
        XCTAssertEqual(result.steps.first { $0.step.text.contains("write-sent-as") }?.note,
                       "hm10 received Write Command handle 0x000c value 68 65 6c 6c 6f")
    }

    func testAStackThatSendsARequestWhereACommandWasAskedFailsWriteSentAs() throws {
        let central = StandInCentral()
        central.disobey = { _ in .request }
        let result = try run(ScenarioText.hm10("""
          - scan: { services: [FFE0], for: 1s }
          - connect: hm10
          - discover: all
          - write: { characteristic: FFE4, value: text:hi, type: command }
          - expect: { write-sent-as: command }
        """), central: central)
        guard case let .failed(failure) = result.outcome else { return XCTFail("passed") }
        XCTAssertEqual(failure.step?.index, 5)
        XCTAssertTrue(failure.seen.contains("Write Request"), failure.seen)
    }

    func testTypeDefaultReachesTheRoleUntranslated() throws {
        let central = StandInCentral()
        let result = try run(ScenarioText.hm10("""
          - scan: { services: [FFE0], for: 1s }
          - connect: hm10
          - discover: all
          - write: { characteristic: FFE4, value: text:hi, type: default }
          - expect: { write-sent-as: request }
          - subscribe: { characteristic: FFE1, acquire: true }
          - write: { characteristic: FFE1, value: text:yo, acquire: true }
          - expect: { write-sent-as: command }
          - expect: { notification: FFE1, value: text:yo }
        """), central: central)
        XCTAssertTrue(result.passed, "\(result.outcome)")
        XCTAssertTrue(central.calls.contains("write FFE4 default"), "\(central.calls)")
        XCTAssertTrue(central.calls.contains("subscribe FFE1 acquire"), "\(central.calls)")
        XCTAssertTrue(central.calls.contains("write FFE1 prefer-request acquire"), "\(central.calls)")
    }

    func testAnATTErrorFromTheRoleIsTakenByExpectError() throws {
        let central = StandInCentral()
        let result = try run(ScenarioText.hm10("""
          - scan: { services: [FFE0], for: 1s }
          - connect: hm10
          - discover: all
          - write: { characteristic: FFE3, value: hex:01, type: request }
          - expect: { error: write-not-permitted }
        """), central: central)
        XCTAssertTrue(result.passed, "\(result.outcome)")
    }

    func testTheRolesFailureEndsTheScenarioAtOnceNamingIt() throws {
        let central = StandInCentral()
        let text = ScenarioText.hm10("""
          - scan: { services: [FFE0], for: 1s }
          - connect: hm10
          - wait: 30s
          - disconnect
        """, header: "timeout: 60s")
        let scenario = try ScenarioText.load(text)
        // The role fails 5 s into the run (an adapter powered off, bluetoothd gone).
        let result = ScenarioRunner(backend: FailingLater(central: central, after: .seconds(5)), roles: ScenarioRoles(central: central))
            .run(scenario)
        guard case let .failed(failure) = result.outcome else { return XCTFail("passed") }
        XCTAssertEqual(failure.kind, .transport)
        XCTAssertEqual(failure.step?.index, 3)
        XCTAssertEqual(failure.seen, "the adapter was powered off")
        XCTAssertLessThan(failure.time, .zero + .seconds(6))
        XCTAssertEqual(central.calls.last, "end")
    }

    func testNotificationsCountOnlyWhenTheRoleDeliversThem() throws {
        let central = StandInCentral()
        let result = try run(ScenarioText.hm10("""
          - scan: { services: [FFE0], for: 1s }
          - connect: hm10
          - discover: all
          - peripheral: { hm10: [ { notify: FFE1, value: hex:01 } ] }
          - expect: { no-notification: { characteristic: FFE1, for: 500ms } }
          - subscribe: FFE1
          - peripheral: { hm10: [ { notify: FFE1, value: hex:02 }, { notify: FFE1, value: hex:03 } ] }
          - expect: { notification: FFE1, count: 2, in-order: [hex:02, hex:03] }
        """), central: central)
        XCTAssertTrue(result.passed, "\(result.outcome)")
    }

    func testARoleThatCannotPlayTheScenarioSkipsItWithItsReason() throws {
        let result = ScenarioRunner(roles: ScenarioRoles(central: UnoccupiedCentral())).run(try ScenarioText.load(ScenarioText.hm10("""
          - scan: { services: [FFE0], for: 1s }
        """)))
        guard case let .skipped(reason) = result.outcome else { return XCTFail("\(result.outcome)") }
        XCTAssertTrue(reason.hasPrefix("step 1 (scan: { services: [FFE0], for: 1s }) is the central's to do"), reason)
    }

    func testNoCentralWaitsAndChecksWhatReachedThePeripherals() throws {
        let result = ScenarioRunner(roles: ScenarioRoles(central: UnoccupiedCentral())).run(try ScenarioText.load(ScenarioText.hm10("""
          - wait: 1s
          - expect: { peripheral-received: { characteristic: FFE1, within: 1s } }
        """)))
        guard case let .failed(failure) = result.outcome else { return XCTFail("\(result.outcome)") }
        XCTAssertEqual(failure.seen, "no write of FFE1 reached hm10")
    }

    /// Disconnect reasons are the central's view, as with BLELab's central, though the stack in
    /// its seat does not tell them: read from the peripheral's side (the end that asked gets 0x16).
    func testDisconnectReasonsAreTheCentralsViewReadFromThePeripheralsSide() throws {
        let connect = "  - scan\n  - connect: hm10\n"
        let byCentral = try run(ScenarioText.hm10(connect + "  - disconnect\n  - expect: { disconnected: { reason: local-host-terminated } }"),
                                central: StandInCentral())
        XCTAssertEqual(byCentral.verdict, "passed")
        let byPeripheral = try run(ScenarioText.hm10(connect + "  - peripheral: { hm10: [{ disconnect: { reason: remote-power-off } }] }\n"
                                                     + "  - expect: { disconnected: { reason: remote-power-off } }"), central: StandInCentral())
        XCTAssertEqual(byPeripheral.verdict, "passed")
        XCTAssertEqual(try run(ScenarioText.hm10(connect + "  - disconnect\n  - expect: { disconnected: { reason: remote-user-terminated } }"),
                               central: StandInCentral()).verdict,
                       "step 4 (test.yaml:24): expect: { disconnected: { reason: remote-user-terminated } }: expected disconnected from hm10 with reason remote-user-terminated (0x13) within 1s; seen disconnected with reason local-host-terminated (0x16)")
    }

    func testDeviceCountLeavesOutTheSeatsPlayedElsewhere() throws {
        let scenario = try ScenarioText.load(try String(contentsOfFile: "scenarios/seeds/hm10-serial.yaml", encoding: .utf8))
        XCTAssertEqual(ScenarioRoles().deviceCount(for: scenario), 3)
        XCTAssertEqual(ScenarioRoles(central: StandInCentral()).deviceCount(for: scenario), 2)
    }
}

/// The sim, with the stand-in's failure set at a virtual time.
private struct FailingLater: ScenarioBackend {
    let central: StandInCentral
    let after: TimeSpan
    var tier: TransportTier { .sim }

    func makeLab(seed: UInt64) throws -> Lab {
        let lab = try SimBackend().makeLab(seed: seed)
        let central = self.central
        lab.loop.schedule(after: after) { central.failure = "the adapter was powered off" }
        return lab
    }
}

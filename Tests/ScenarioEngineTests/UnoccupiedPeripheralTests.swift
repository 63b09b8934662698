import BLELab
import BLELabTestSupport
import BLERuntime
import BLEWire
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// `--peripheral none:ID@ADDRESS`: a program outside the lab serves peripheral ID, and BLELab's
/// central meets it at ADDRESS. On the sim the "program" is a second simulated peripheral the test
/// adds to the lab itself, with a database and behaviour the scenario does not declare, so the
/// scenario can only pass through what crossed the link.
final class UnoccupiedPeripheralTests: XCTestCase {
    /// The program: an echo server at `address` (a write to FFE1 is notified back on FFE1).
    private static let program = """
    scenario: the program
    peripherals:
      program:
        address: C0:AA:BB:CC:DD:01/random
        advertise: { name: Outside, services: [FFE0] }
        gatt:
          - service: FFE0
            characteristics:
              - uuid: FFE1
                properties: [read, write, write-without-response, notify]
                value: text:idle
                on-write: [ { notify: FFE1, value: written } ]
    central:
      - wait: 1ms
    """

    /// Adds the program to the lab, then seats `UnoccupiedPeripheralProvider`'s peripheral; the
    /// program starts advertising when the seat starts serving.
    private final class OutsideProgram: PeripheralSeatProvider {
        let inner: UnoccupiedPeripheralProvider
        init(_ inner: UnoccupiedPeripheralProvider) { self.inner = inner }
        var description: String { inner.description }
        func served(in scenario: Scenario) -> PeripheralSpec? { inner.served(in: scenario) }
        func unsupported(_ spec: PeripheralSpec, in scenario: Scenario) -> String? { inner.unsupported(spec, in: scenario) }
        func makePeripheral(_ spec: PeripheralSpec, lab: Lab) throws -> ProvidedPeripheralSeat {
            let program = try lab.addPeripheral(try ScenarioText.load(UnoccupiedPeripheralTests.program).peripheral("program")!)
            return Started(try inner.makePeripheral(spec, lab: lab), program: program)
        }
    }

    private final class Started: ProvidedPeripheralSeat {
        let seat: ProvidedPeripheralSeat
        let program: SimulatedPeripheral
        init(_ seat: ProvidedPeripheralSeat, program: SimulatedPeripheral) { self.seat = seat; self.program = program }
        var spec: PeripheralSpec { seat.spec }
        var address: LEAddress? { seat.address }
        var connectedCentrals: [LEAddress] { seat.connectedCentrals }
        var onActivity: ((PeripheralActivity) -> Void)? { get { seat.onActivity } set { seat.onActivity = newValue } }
        var onWrite: ((SeatReceivedWrite) -> Void)? { get { seat.onWrite } set { seat.onWrite = newValue } }
        func start(completion: @escaping (Result<Void, SeatError>) -> Void) {
            program.device.host.powerOn { [seat, program] _ in
                program.start { _ in seat.start(completion: completion) }
            }
        }
        func stop(completion: @escaping () -> Void) { seat.stop(completion: completion) }
        func perform(_ actions: [PeripheralAction], site: String) { seat.perform(actions, site: site) }
    }

    private static func scenario(_ central: String, triggers: String = "") -> String {
        """
        scenario: a program outside the lab
        peripherals:
          sensor:
            advertise: { name: Outside, services: [FFE0] }
            gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [read, write, write-without-response, notify]\(triggers) }
        central:
        \(central)
        """
    }

    private func run(_ text: String, argument: String) throws -> ScenarioResult {
        let provider = OutsideProgram(try UnoccupiedPeripheralProvider(argument: argument))
        return ScenarioRunner(roles: ScenarioRoles(peripheral: provider)).run(try ScenarioText.load(text))
    }

    private static let session = """
      - scan: { services: [FFE0], for: 1s }
      - expect: { discovered: sensor }
      - connect: sensor
      - discover: all
      - expect: { characteristic: { uuid: FFE1, properties: [read, write, write-without-response, notify] } }
      - read: FFE1
      - expect: { value: text:idle }
      - subscribe: FFE1
      - write: { characteristic: FFE1, value: text:ping, type: request }
      - expect: { write-sent-as: request }
      - expect: { notification: FFE1, value: text:ping }
      - write: { characteristic: FFE1, value: text:pong, type: command }
      - expect: { write-sent-as: command }
      - expect: { notification: FFE1, value: text:pong }
      - disconnect
    """

    func testBLELabsCentralMeetsTheProgramAtItsAddressAndJudgesTheLink() throws {
        let result = try run(Self.scenario(Self.session), argument: "sensor@C0:AA:BB:CC:DD:01/random")
        XCTAssertTrue(result.passed, "\(result.outcome)")
        // Judged on the central's HCI: the PDU it sent, and the notification it received.
        XCTAssertEqual(result.steps.first { $0.step.text.contains("write-sent-as: command") }?.note,
                       "ATT Write Command handle 0x000c value 70 6f 6e 67")
        XCTAssertEqual(result.steps.first { $0.step.text.contains("notification: FFE1, value: text:pong") }?.note?.hasPrefix("1 notification of FFE1: text:pong"), true)
    }

    func testTheProgramsOwnBehaviourDecidesNotTheScenariosDeclaration() throws {
        // The scenario says FFE1 holds "other", but the program serves "idle": the read shows it.
        let result = try run(Self.scenario("  - scan: { services: [FFE0], for: 1s }\n  - connect: sensor\n  - discover: all\n"
                                           + "  - read: FFE1\n  - expect: { value: text:other }"),
                             argument: "sensor@C0:AA:BB:CC:DD:01/random")
        guard case let .failed(failure) = result.outcome else { return XCTFail("\(result.outcome)") }
        XCTAssertEqual(failure.seen, "the read in step 4 returned text:idle")
    }

    func testAWrongAddressFindsNothing() throws {
        let result = try run(Self.scenario("  - scan: { services: [FFE0], for: 1s }\n  - expect: { discovered: sensor }"),
                             argument: "sensor@C0:AA:BB:CC:DD:02/random")
        guard case let .failed(failure) = result.outcome else { return XCTFail("\(result.outcome)") }
        XCTAssertTrue(failure.expected.contains("discovered sensor"), failure.expected)
    }

    func testWhatOnlyTheProgramCanDoIsSkippedWithItsReason() throws {
        let provider = try UnoccupiedPeripheralProvider(argument: "sensor@C0:AA:BB:CC:DD:01/random")
        func reason(_ text: String) throws -> String? {
            let scenario = try ScenarioText.load(text)
            return provider.unsupported(provider.served(in: scenario)!, in: scenario)
        }
        XCTAssertNil(try reason(Self.scenario(Self.session)))
        XCTAssertEqual(try reason(Self.scenario("  - peripheral: { sensor: [ { notify: FFE1, value: hex:01 } ] }")),
                       "sensor is served by a program outside the lab (--peripheral none): step 1 (peripheral: { sensor: [{ notify: FFE1, value: hex:01 }] }) makes sensor act, and the lab cannot make a program outside it act")
        XCTAssertEqual(try reason(Self.scenario("  - expect: { peripheral-received: { characteristic: FFE1 } }")),
                       "sensor is served by a program outside the lab (--peripheral none): step 1 (expect: { peripheral-received: { characteristic: FFE1 } }) asks what the program's application was handed, which the lab cannot see (judge the central's side: expect: { write-sent-as: … })")
        XCTAssertEqual(try reason(Self.scenario("  - wait: 1s", triggers: ", on-write: [ { notify: FFE1, value: written } ]")),
                       "sensor is served by a program outside the lab (--peripheral none): FFE0/FFE1 has on-read/on-write/on-subscribe/on-unsubscribe actions, which are the program's to do")
        // And the runner skips such a scenario rather than failing it.
        let skipped = try run(Self.scenario("  - peripheral: { sensor: [ { notify: FFE1, value: hex:01 } ] }"),
                              argument: "sensor@C0:AA:BB:CC:DD:01/random")
        guard case .skipped = skipped.outcome else { return XCTFail("\(skipped.outcome)") }
    }

    func testTheArgumentNamesThePeripheralAndWhereItIs() throws {
        let both = try UnoccupiedPeripheralProvider(argument: "sensor@C0:AA:BB:CC:DD:01/random")
        XCTAssertEqual(both.select, "sensor")
        XCTAssertEqual(both.address, LEAddress(string: "C0:AA:BB:CC:DD:01/random"))
        let first = try UnoccupiedPeripheralProvider(argument: "@00:AA:01:00:00:23")
        XCTAssertNil(first.select)
        XCTAssertEqual(first.address?.type, .public)
        XCTAssertNil(try UnoccupiedPeripheralProvider(argument: "sensor").address)
        XCTAssertThrowsError(try UnoccupiedPeripheralProvider(argument: "")) {
            XCTAssertEqual("\($0)", "--peripheral none:: give the peripheral's id, its address or both (none:ID@ADDRESS)")
        }
        XCTAssertThrowsError(try UnoccupiedPeripheralProvider(argument: "sensor@C0:AA")) {
            XCTAssertEqual("\($0)", "--peripheral none:sensor@C0:AA: 'C0:AA' is not an address (C0:11:22:33:44:55, optionally /public or /random)")
        }
        // Without an address, and none declared, nothing runs: the lab would not know where to look.
        let scenario = try ScenarioText.load(Self.scenario("  - wait: 1s"))
        XCTAssertThrowsError(try UnoccupiedPeripheralProvider(argument: "sensor").makePeripheral(scenario.peripheral("sensor")!, lab: Lab(seed: 1))) {
            XCTAssertTrue("\($0)".hasPrefix("the lab does not know where the program outside it serves sensor"), "\($0)")
        }
    }
}

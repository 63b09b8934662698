import BLELab
import BLELabTestSupport
import BLERuntime
import Controller
import HCI
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// `power-off: central` (docs/scenarios.md section 18, "Fault steps of the central") on the sim:
/// the central's controller goes silent, the peripheral times out, later steps that need the
/// central fail naming the power-off.
final class CentralPowerOffTests: XCTestCase {
    private func packets(_ result: ScenarioResult, _ device: String) -> [LoggedPacket] {
        result.captures.first { $0.device == device }?.packets ?? []
    }

    /// HCI events with `code` (H4 type 0x04), with their times and parameters.
    private func events(_ packets: [LoggedPacket], code: UInt8) -> [(time: Instant, parameters: [UInt8])] {
        packets.compactMap { p in
            guard p.frame.count >= 3, p.frame[0] == 0x04, p.frame[1] == code else { return nil }
            return (p.time, Array(p.frame[3...]))
        }
    }

    func testPowerOffOfTheCentralSilencesItsControllerAndThePeripheralTimesOut() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + """

              - power-off: central
              - wait: 6s
              - read: FFE1
            """), options: RunOptions(keepsCaptures: true, recordsTimeline: true))
        let failure = try XCTUnwrap(result.failure)
        XCTAssertEqual(failure.step?.index, 6, "the wait passes; the read, which needs the controller, fails")
        XCTAssertEqual(failure.kind, .operation)
        XCTAssertTrue(failure.seen.hasPrefix("the central's controller was powered off at "), failure.seen)
        XCTAssertTrue(failure.seen.hasSuffix("(power-off: central)"), failure.seen)

        // The step's own time: the power-off.
        let step = try XCTUnwrap(result.steps.first { $0.step.index == 4 })
        let central = packets(result, "central")
        // The central's host hears nothing from its controller after the power-off's instant: no
        // Disconnection Complete (0x05), no event or data at all.
        XCTAssertEqual(central.filter { $0.direction == .controllerToHost && $0.time > step.start }.map(\.frame), [])
        // The peripheral's controller hears nothing more and drops the link with Connection
        // Timeout (0x08) one supervision timeout (5 s, the lab's central's) after the last event
        // it heard (Vol 6 Part B 4.5.2).
        let disconnections = events(packets(result, "hm10"), code: 0x05)
        XCTAssertEqual(disconnections.map(\.parameters.last), [0x08])
        let at = try XCTUnwrap(disconnections.first?.time)
        XCTAssertGreaterThan(at, step.start + .seconds(4))
        XCTAssertLessThanOrEqual(at, step.start + .seconds(5))
        XCTAssertTrue(result.timeline.contains { $0.kind == .central && $0.device == "central" && $0.text.hasPrefix("controller powered off (1 connection lost") })
    }

    func testADelayedPowerOffEndsAWaitingExpectationAtOnce() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + """

              - subscribe: FFE1
              - power-off: { device: central, after: 2s }
              - expect: { notification: FFE1, count: 1, within: 100s }
            """, header: "timeout: 200s"))
        let failure = try XCTUnwrap(result.failure)
        XCTAssertEqual(failure.step?.index, 6)
        XCTAssertTrue(failure.seen.contains("powered off") && failure.seen.contains("power-off: central"), failure.seen)
        let step = try XCTUnwrap(result.steps.first { $0.step.index == 5 })
        XCTAssertEqual(step.note, "the central's controller powers off at \(step.start + .seconds(2))")
        // Ended at the power-off, not after the expectation's 100 s.
        XCTAssertEqual(failure.time, step.start + .seconds(2))
    }

    func testSameSeedSameBytes() throws {
        let text = ScenarioText.hm10(ScenarioText.connected + "\n  - power-off: { device: central, after: 1500ms }\n  - wait: 8s")
        let a = try ScenarioText.run(text, options: RunOptions(seed: 7, keepsCaptures: true))
        let b = try ScenarioText.run(text, options: RunOptions(seed: 7, keepsCaptures: true))
        XCTAssertEqual(a.verdict, "passed")
        XCTAssertEqual(a.captures.map { $0.packets.map(\.frame) }, b.captures.map { $0.packets.map(\.frame) })
        XCTAssertEqual(events(packets(a, "hm10"), code: 0x05).map(\.parameters.last), [0x08])
    }

    // MARK: Syntax

    func testTheStepReadsAndWritesBack() throws {
        let scenario = try ScenarioText.load(ScenarioText.hm10(ScenarioText.connected + """

              - power-off: central
              - power-off: { device: central, after: 12s }
              - power-off: { peripheral: central, after: 500ms }
              - power-off: hm10
            """))
        let faults = scenario.steps.suffix(4).map(\.action)
        XCTAssertEqual(faults, [.fault(.centralPowerOff(after: nil)), .fault(.centralPowerOff(after: .seconds(12))),
                                .fault(.centralPowerOff(after: .milliseconds(500))), .fault(.powerOff(peripheral: "hm10"))])
        let written = ScenarioWriter.write(scenario)
        XCTAssertTrue(written.contains("- power-off: central\n"), written)
        XCTAssertTrue(written.contains("- power-off: { device: central, after: 12s }\n"), written)
        XCTAssertEqual(try ScenarioText.load(written).steps.map(\.action), scenario.steps.map(\.action))
    }

    func testMistakesAreReported() {
        XCTAssertEqual(ScenarioText.errors(ScenarioText.hm10(ScenarioText.connected + "\n  - power-off: { peripheral: hm10, after: 2s }")).count, 1)
        let afterOnPeripheral = ScenarioText.errors(ScenarioText.hm10(ScenarioText.connected + "\n  - power-off: { peripheral: hm10, after: 2s }"))
        XCTAssertTrue(afterOnPeripheral.first?.contains("'after' with a peripheral's power-off") ?? false, "\(afterOnPeripheral)")
        let device = ScenarioText.errors(ScenarioText.hm10(ScenarioText.connected + "\n  - power-off: { device: hm10 }"))
        XCTAssertTrue(device.first?.contains("central (a peripheral is named with") ?? false, "\(device)")
        let both = ScenarioText.errors(ScenarioText.hm10(ScenarioText.connected + "\n  - power-off: { device: central, peripheral: hm10 }"))
        XCTAssertTrue(both.first?.contains("both 'peripheral' and 'device'") ?? false, "\(both)")
    }
}

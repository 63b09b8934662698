import BLELab
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// A device whose controller goes away mid-scenario (a socket that closes, bytes that are not
/// HCI): the scenario fails at once with kind `transport`, naming the device, where its
/// controller was and the transport's own account — instead of waiting out its steps or
/// blaming the step ("the connection ended (hardware failure)").
final class ControllerLossTests: XCTestCase {
    /// The sim, with one device's transport closed (with `error`) at `at` of virtual time.
    private struct FailingBackend: ScenarioBackend {
        var device: String
        var at: TimeSpan
        var error: (String) -> TransportError

        var tier: TransportTier { .sim }
        var description: String { "test controllers" }

        func makeLab(seed: UInt64) throws -> Lab {
            let lab = try SimBackend().makeLab(seed: seed)
            lab.loop.schedule(after: at) {
                guard let target = lab.device(named: device), let transport = target.transport as? InProcessTransport else { return }
                transport.close(error(transport.endpointDescription))
            }
            return lab
        }
    }

    private func run(_ central: String, device: String = "hm10", at: TimeSpan,
                     error: @escaping (String) -> TransportError = { .closed(endpoint: $0) }) throws -> ScenarioResult {
        let scenario = try ScenarioText.load(ScenarioText.hm10(central))
        return ScenarioRunner(backend: FailingBackend(device: device, at: at, error: error)).run(scenario)
    }

    func testAClosedControllerEndsAWaitAtOnce() throws {
        let result = try run(ScenarioText.connected + "\n  - wait: 30s\n  - disconnect", at: .seconds(3))
        let failure = try XCTUnwrap(result.failure)
        XCTAssertEqual(failure.kind, .transport)
        XCTAssertEqual(failure.step?.index, 4)
        XCTAssertEqual(failure.expected, "hm10's controller to stay connected")
        XCTAssertEqual(failure.seen, "hm10 lost its controller (test controllers): sim controller 'hm10': connection closed")
        XCTAssertLessThan(result.virtualTime, .seconds(4), "the wait stopped when the controller went away")
    }

    func testGarbageFromTheCentralsControllerNamesTheBytes() throws {
        let result = try run(ScenarioText.connected + "\n  - subscribe: FFE1\n  - expect: { notification: FFE1, count: 5, within: 20s }\n  - disconnect",
                             device: "central", at: .seconds(3)) { endpoint in
            .malformed(endpoint: endpoint, detail: "unknown H4 packet indicator 0xff at stream offset 812: ff 00 07")
        }
        let failure = try XCTUnwrap(result.failure)
        XCTAssertEqual(failure.kind, .transport)
        XCTAssertEqual(failure.step?.index, 5)
        XCTAssertEqual(failure.seen, "central lost its controller (test controllers): sim controller 'central': malformed HCI stream: "
                       + "unknown H4 packet indicator 0xff at stream offset 812: ff 00 07")
        XCTAssertLessThan(result.virtualTime, .seconds(4))
        XCTAssertEqual(result.steps.last?.outcome, .notRun)
    }

    func testAControllerLostDuringPowerOnFailsTheSetupNamingIt() throws {
        let result = try run(ScenarioText.connected, at: .zero)
        let failure = try XCTUnwrap(result.failure)
        XCTAssertEqual(failure.kind, .transport)
        XCTAssertNil(failure.step)
        XCTAssertEqual(failure.seen, "hm10 lost its controller (test controllers): sim controller 'hm10': connection closed")
        XCTAssertTrue(result.steps.allSatisfy { $0.outcome == .notRun } || result.steps.isEmpty)
    }

    func testALossAfterTheLastStepIsNoFailure() throws {
        let result = try run(ScenarioText.connected + "\n  - peripheral: { hm10: [ { notify: FFE1, value: hex:01 } ] }", at: .seconds(3))
        // Setup and steps take < 3 s of virtual time: the run and its lab end before the loss.
        XCTAssertTrue(result.passed, result.verdict)
    }
}

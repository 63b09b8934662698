import BLELab
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import XCTest

/// `disconnect` waits as long as the link's termination can take (Core Vol 6 Part B 5.1.3: the
/// LL_TERMINATE_IND is acknowledged, or the initiator gives up, within T_Terminate, the
/// supervision timeout), or `within` when given.
final class DisconnectTests: XCTestCase {
    private func run(_ central: String) throws -> ScenarioResult {
        try ScenarioText.run(ScenarioText.hm10(central, header: "timeout: 60s"))
    }

    private let connect = """
          - scan: { for: 1s }
          - connect: hm10
        """

    /// Legal slow links: the peripheral listens on every fifth 500 ms event, or events are 2 s
    /// apart. Either takes longer than the 1 s `disconnect` used to wait.
    func testSlowLinksCanBeDisconnected() throws {
        for update in ["{ interval: 500ms, latency: 4, timeout: 6s }", "{ interval: 2s, latency: 0, timeout: 6s }", "{ interval: 4s, latency: 0, timeout: 32s }"] {
            let result = try run(connect + "\n  - connection-update: \(update)\n  - disconnect\n  - expect: { disconnected: { reason: local-host-terminated } }")
            XCTAssertEqual(result.verdict, "passed", update)
            let step = result.steps[3]
            XCTAssertGreaterThan(step.end - step.start, .seconds(1), update)
            XCTAssertEqual(step.note, "disconnected from hm10: local-host-terminated (0x16)", update)
        }
    }

    func testWithinBoundsTheWait() throws {
        XCTAssertEqual(try run(connect + "\n  - connection-update: { interval: 2s, timeout: 6s }\n  - disconnect: { within: 100ms }").verdict,
                       "step 4 (test.yaml:24): disconnect: { within: 100ms }: expected the connection to hm10 to end within 100ms; seen still connected after 100ms (interval 2000ms, latency 0, timeout 6000ms: the termination may take up to 8000ms)")
        let result = try run(connect + "\n  - disconnect: { peripheral: hm10, within: 100ms }\n  - expect: { disconnected: { reason: local-host-terminated } }")
        XCTAssertEqual(result.verdict, "passed")
    }

    func testWithinIsValidated() {
        XCTAssertEqual(ScenarioText.errors(ScenarioText.hm10("  - scan\n  - connect: hm10\n  - disconnect: { within: soon }")),
                       ["test.yaml:23:27: error: found 'soon', expected a duration such as 250ms, 1s, 1.5s or 2m"])
        XCTAssertEqual(ScenarioText.errors(ScenarioText.hm10("  - scan\n  - connect: hm10\n  - disconnect: { witin: 2s }")),
                       ["test.yaml:23:19: error: found unknown key 'witin', expected a 'disconnect' key (peripheral, within); did you mean 'within'?"])
    }
}

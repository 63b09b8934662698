import BLELab
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import XCTest

/// `expect: { link-lost }` after an operation the end of the link cut short, and
/// `expect: { connect-failed }` after a connect that gave no connection: each passes when that
/// happened and fails when the step completed; without them the interruption fails the step.
final class InterruptionTests: XCTestCase {
    /// `dev` answers AAA1 after 500 ms and AAA2 at once; `beacon` cannot be connected; `ghost`
    /// never advertises; `deaf` advertises but nothing it sends on a connection gets through.
    /// Step 1 (line 23) is a scan.
    private func scenario(_ central: String) -> String {
        """
        scenario: interruptions
        timeout: 20s
        seed: 5
        peripherals:
          dev:
            advertise: { name: Dev, services: [AAA0] }
            gatt:
              - service: AAA0
                characteristics:
                  - { uuid: AAA1, properties: [read], value: text:slow, on-read: [{ delay: 500ms }] }
                  - { uuid: AAA2, properties: [read, write], value: text:fast }
          beacon:
            advertise: { name: Beacon, connectable: false }
          ghost:
            gatt:
              - service: BBB0
                characteristics:
                  - { uuid: BBB1, properties: [read] }
          deaf:
            advertise: { name: Deaf, services: [CCC0] }
            link: { loss: 100% }
        central:
          - scan: { for: 1s }
        \(central)
        """
    }

    private func run(_ central: String) throws -> ScenarioResult { try ScenarioText.run(scenario(central)) }

    private let cutShort = """
          - connect: dev
          - discover: all
          - peripheral: { dev: [{ delay: 100ms }, disconnect] }
          - read: AAA1
        """

    // MARK: link-lost

    func testAReadCutShortByTheLinkIsExpected() throws {
        let result = try run(cutShort + """

          - expect: { link-lost: { peripheral: dev, reason: remote-user-terminated } }
          - read: AAA2
          - expect: { link-lost: dev }
        """)
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.steps[4].note, "cut short: the link to dev ended (remote-user-terminated (0x13) at 1.686s)")
        XCTAssertEqual(result.steps[5].note, "step 5 was cut short: the link to dev ended (remote-user-terminated (0x13) at 1.686s)")
        // An operation on a link that had already ended could not start: the same, said so.
        XCTAssertEqual(result.steps[6].note, "not started: the link to dev had ended (remote-user-terminated (0x13) at 1.686s)")
        XCTAssertEqual(result.steps[7].note, "step 7 was cut short: the link to dev ended (remote-user-terminated (0x13) at 1.686s)")
    }

    func testLinkLostFailsWhenTheLinkStayedUp() throws {
        XCTAssertEqual(try run("  - connect: dev\n  - discover: all\n  - read: AAA1\n  - expect: { link-lost: dev }").verdict,
                       "step 5 (test.yaml:27): expect: { link-lost: dev }: expected the operation right before to be cut short by the end of the link to dev; seen step 4 (read: AAA1) completed; the link to dev stayed up")
    }

    func testLinkLostChecksTheReason() throws {
        XCTAssertEqual(try run(cutShort + "\n  - expect: { link-lost: { reason: remote-power-off } }").verdict,
                       "step 6 (test.yaml:28): expect: { link-lost: { reason: remote-power-off } }: expected the operation right before to be cut short by the end of the link to dev (remote-power-off (0x15)); seen step 5 (read: AAA1) was cut short when the link ended with remote-user-terminated (0x13)")
    }

    func testAnUnexpectedCutFailsTheStepSayingWhatToWrite() throws {
        XCTAssertEqual(try run(cutShort + "\n  - expect: { value: text:slow }").verdict,
                       "step 5 (test.yaml:27): read: AAA1: expected the read of AAA1 to complete, or an 'expect: { link-lost: dev }' right after the step; seen the link to dev ended (remote-user-terminated (0x13) at 1.686s) before it completed")
    }

    // MARK: connect-failed

    func testConnectsThatGiveNoConnectionAreExpected() throws {
        let result = try run("""
          - connect: { peripheral: beacon, within: 500ms }
          - expect: { connect-failed: { reason: timeout } }
          - connect: ghost
          - expect: { connect-failed: ghost }
          - connect: deaf
          - expect: { connect-failed: { peripheral: deaf, reason: connection-failed-to-be-established } }
          - connect: dev
          - expect: { connected: dev }
        """)
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.steps.map { $0.note ?? "" }, [
            "discovered dev (-59 dBm), beacon (-59 dBm), deaf (-59 dBm)",
            "no connection within 500ms",
            "step 2 gave no connection: no connection within 500ms",
            "no connection within 1s",
            "step 4 gave no connection: no connection within 1s",
            result.steps[5].note ?? "",
            "step 6 connected to deaf, but the connection was never established: connection-failed-to-be-established (0x3e)",
            result.steps[7].note ?? "",
            "",
        ])
        // Never established: the link failed six 30 ms intervals after LE Connection Complete.
        XCTAssertEqual(result.steps[6].end - result.steps[5].end, .milliseconds(180))
    }

    func testConnectFailedFailsWhenTheConnectSucceeded() throws {
        XCTAssertEqual(try run("  - connect: dev\n  - expect: { connect-failed: dev }").verdict,
                       "step 3 (test.yaml:25): expect: { connect-failed: dev }: expected the connect right before to give no connection to dev; seen step 2 connected to dev and the connection was established")
        XCTAssertEqual(try run("  - connect: { peripheral: beacon, within: 200ms }\n  - expect: { connect-failed: { reason: 0x3E } }").verdict,
                       "step 3 (test.yaml:25): expect: { connect-failed: { reason: 0x3E } }: expected the connect right before to give no connection to beacon (connection-failed-to-be-established (0x3e)); seen step 2 gave no connection, for another reason: no connection within 200ms")
    }

    /// Without `connect-failed` after it, a connect still needs a scan that found the peripheral.
    func testAConnectNoScanFoundStaysAnErrorWhenNotExpectedToFail() throws {
        XCTAssertEqual(try run("  - connect: ghost").verdict,
                       "step 2 (test.yaml:24): connect: ghost: expected ghost discovered by a scan before connecting; seen no scan discovered ghost")
    }

    // MARK: Validation

    func testEachMustFollowTheStepItIsAbout() {
        XCTAssertEqual(ScenarioText.errors(scenario("""
          - connect: dev
          - wait: 1s
          - expect: { link-lost: dev }
          - read: AAA2
          - expect: { connect-failed: dev }
          - expect: { link-lost: beacon }
          - expect: { connect-failed: { reason: timeot } }
        """)), [
            "test.yaml:26:5: error: found link-lost after 'wait: 1s' (step 3), expected link-lost among the expect steps right after an operation (discover, mtu, read, write, subscribe, unsubscribe); put it right after the step it expects to be cut short",
            "test.yaml:28:5: error: found connect-failed after 'read: AAA2' (step 5), expected connect-failed among the expect steps right after a connect; put it right after the step it expects to fail",
            "test.yaml:29:5: error: found link-lost about beacon, expected the peripheral step 5 talks to (dev); write 'link-lost: dev'",
            "test.yaml:30:41: error: found reason 'timeot', expected timeout, or an HCI status such as connection-failed-to-be-established, or 0xNN; did you mean 'timeout'?",
        ])
    }

    /// After `link-lost` or `connect-failed`, the peripheral no longer counts as connected: steps
    /// need not say which peripheral they mean because of it.
    func testTheFailedLinkNoLongerCountsAsConnected() throws {
        XCTAssertEqual(try run("""
          - connect: dev
          - discover: all
          - connect: { peripheral: beacon, within: 200ms }
          - expect: { connect-failed: beacon }
          - read: AAA2
          - expect: { value: text:fast }
        """).verdict, "passed")
    }

    // MARK: Another stack in the central's seat

    func testWithAnExternalCentral() throws {
        let runner = ScenarioRunner(roles: ScenarioRoles(central: StandInCentral()))
        let result = runner.run(try ScenarioText.load(scenario(cutShort + """

          - expect: { link-lost: dev }
          - connect: { peripheral: beacon, within: 300ms }
          - expect: { connect-failed: { reason: timeout } }
        """)))
        XCTAssertEqual(result.verdict, "passed")
        let stayed = runner.run(try ScenarioText.load(scenario("  - connect: dev\n  - discover: all\n  - read: AAA1\n  - expect: { link-lost: dev }")))
        XCTAssertEqual(stayed.verdict,
                       "step 5 (test.yaml:27): expect: { link-lost: dev }: expected the operation right before to be cut short by the end of the link to dev; seen step 4 (read: AAA1) completed; the link to dev stayed up")
    }
}

import BLELab
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import XCTest

/// A `peripheral:` step does what its actions say or fails saying why; it never says ok for
/// actions that did nothing. Steps 1–2 of `connect` scenarios are scan and connect.
final class PeripheralStepTests: XCTestCase {
    private func run(_ central: String, extra: String = "", header: String = "") throws -> ScenarioResult {
        try ScenarioText.run(ScenarioText.hm10(central, extraPeripheral: extra, header: header))
    }

    private let connect = """
          - scan: { for: 1s }
          - connect: hm10
        """

    /// The reproduction: both LE Connection Complete events fall on one virtual instant,
    /// and the peripheral's action used to run before its host knew the connection, at every seed.
    func testADisconnectRightAfterConnectEndsTheLinkAtEverySeed() throws {
        let scenario = try ScenarioText.load(ScenarioText.hm10(connect + """

          - peripheral: { hm10: [disconnect] }
          - wait: 500ms
          - expect: { connected: hm10 }
        """))
        for seed in UInt64(1)...20 {
            let result = ScenarioRunner().run(scenario, options: RunOptions(seed: seed))
            XCTAssertEqual(result.verdict,
                           "step 5 (test.yaml:25): expect: { connected: hm10 }: expected connected to hm10; seen the connection ended (remote-user-terminated (0x13))",
                           "seed \(seed)")
            XCTAssertEqual(result.steps[2].note, "hm10: disconnect (HCI Disconnect accepted on 1 connection)", "seed \(seed)")
        }
    }

    func testRequestConnectionUpdateAndNotifyHandleRightAfterConnectReachTheLink() throws {
        XCTAssertEqual(try run(connect + """

          - peripheral: { hm10: [ { request-connection-update: { interval: 50ms, latency: 0, timeout: 2s } } ] }
          - expect: { connection-parameters: { interval: 50ms, within: 2s } }
        """).verdict, "passed")
        XCTAssertEqual(try run(connect + """

          - peripheral: { hm10: [ { notify-handle: { handle: 0x00F0, value: hex:ff } } ] }
          - expect: { ignored-notification: 0x00F0 }
        """).verdict, "passed")
    }

    /// The same with another stack in the central's seat: the step waits for the peripheral's
    /// host, whoever made the connection.
    func testWithAnExternalCentralTheStepWaitsForThePeripheralsHostToo() throws {
        let runner = ScenarioRunner(roles: ScenarioRoles(central: StandInCentral()))
        for seed in UInt64(1)...5 {
            let result = runner.run(try ScenarioText.load(ScenarioText.hm10(connect + """

              - peripheral: { hm10: [disconnect] }
              - expect: { disconnected: { reason: remote-user-terminated } }
            """)), options: RunOptions(seed: seed))
            XCTAssertEqual(result.verdict, "passed", "seed \(seed)")
        }
        XCTAssertEqual(runner.run(try ScenarioText.load(ScenarioText.hm10("  - scan\n  - peripheral: { hm10: [disconnect] }"))).verdict,
                       "step 2 (test.yaml:22): peripheral: { hm10: [disconnect] }: expected hm10 to disconnect; seen hm10 has no connection (the central is not connected to it)")
    }

    // MARK: Actions that cannot do what they say

    func testAnActionThatNeedsALinkFailsWithoutOne() throws {
        XCTAssertEqual(try run("  - peripheral: { hm10: [disconnect] }").verdict,
                       "step 1 (test.yaml:21): peripheral: { hm10: [disconnect] }: expected hm10 to disconnect; seen hm10 has no connection (the central is not connected to it)")
        XCTAssertEqual(try run("  - peripheral: { hm10: [{ send-pdu: hex:0b 01 }] }").verdict,
                       "step 1 (test.yaml:21): peripheral: { hm10: [{ send-pdu: hex:0b 01 }] }: expected hm10 to send-pdu hex:0b01; seen hm10 has no connection (the central is not connected to it)")
        XCTAssertEqual(try run(connect + "\n  - disconnect\n  - peripheral: { hm10: [{ request-connection-update: { interval: 50ms, timeout: 2s } }] }").verdict,
                       "step 4 (test.yaml:24): peripheral: { hm10: [{ request-connection-update: { interval: 50ms, timeout: 2s } }] }: expected hm10 to request-connection-update interval 50ms latency 0 timeout 2000ms; seen hm10 has no connection (the central is not connected to it)")
    }

    /// A second link-layer request while the first is still waiting for the central is refused
    /// by the peripheral's own host at once: the step says so instead of ok.
    func testALinkLayerRequestRefusedByTheHostFailsTheStep() throws {
        let request = "{ request-connection-update: { interval: 50ms, timeout: 2s, via: link-layer } }"
        let result = try run(connect + "\n  - peripheral: { hm10: [\(request), \(request)] }")
        XCTAssertEqual(result.verdict,
                       "step 3 (test.yaml:23): peripheral: { hm10: [\(request), \(request)] }: expected hm10 to request-connection-update interval 50ms latency 0 timeout 2000ms via link-layer; seen hm10's host refused it: a connection parameter request is already in progress")
        XCTAssertEqual(try run(connect + "\n  - peripheral: { hm10: [\(request)] }").steps[2].note,
                       "hm10: request-connection-update interval 50ms latency 0 timeout 2000ms via link-layer (LL_CONNECTION_PARAM_REQ asked of the controller on 1 connection)")
    }

    func testStopNotifyingWithNothingRunningFails() throws {
        XCTAssertEqual(try run("  - peripheral: { hm10: [{ stop-notifying: FFE1 }] }").verdict,
                       "step 1 (test.yaml:21): peripheral: { hm10: [{ stop-notifying: FFE1 }] }: expected hm10 to stop-notifying FFE1; seen no notify-every is running on FFE1")
    }

    func testStartAdvertisingWithNothingToAdvertiseFails() throws {
        let silent = """
          silent:
            gatt:
              - service: AAA0
                characteristics:
                  - { uuid: AAA1, properties: [read] }
        """
        XCTAssertEqual(try run("  - peripheral: { silent: [start-advertising] }", extra: silent).verdict,
                       "step 1 (test.yaml:25): peripheral: { silent: [start-advertising] }: expected silent to start-advertising; seen silent declares no advertise: there is nothing to advertise")
    }

    // MARK: What the step says it did

    /// A notification with no central subscribed is legal (the server sends only where a CCCD
    /// enables it); the step says how many centrals it reached, so a missing subscribe shows.
    func testTheNoteSaysWhatEachActionDid() throws {
        let result = try run(connect + """

          - discover: all
          - peripheral: { hm10: [{ notify: FFE1, value: hex:01 }, { set-value: { characteristic: FFE4, value: hex:02 } }] }
          - subscribe: FFE1
          - peripheral: { hm10: [{ notify: FFE1, value: hex:03 }, { delay: 10ms }, { notify: FFE1, value: hex:04 }] }
          - expect: { notification: FFE1, count: 2, in-order: [hex:03, hex:04] }
        """)
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.steps[3].note, "hm10: notify FFE1 01: no central subscribed, value stored; set FFE4 = 02")
        XCTAssertEqual(result.steps[5].note, "hm10: notify FFE1 03 to 1 subscribed central; the rest after delay 10ms")
    }
}

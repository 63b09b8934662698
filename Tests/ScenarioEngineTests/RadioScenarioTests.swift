import BLELab
import BLELabTestSupport
import BLERuntime
import HCI
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// The radio keys of the format: a scan's and a connect's duty cycle, `min-rssi`, the `rssi`
/// expectation, `parameter-requests` and `request-connection-update`'s `via`; validated at
/// file:line:column, and run.
final class RadioScenarioTests: XCTestCase {
    private func errors(_ text: String) -> [String] { ScenarioText.errors(text) }

    /// One peripheral and `steps` from line 7.
    private func file(_ steps: String) -> String {
        """
        scenario: radio
        peripherals:
          tag:
            rssi: -70
            advertise: { name: Tag, services: [FFA0] }
        central:
        \(steps)
        """
    }

    private static var repository: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }

    func testValidRadioKeysLoad() throws {
        let scenario = try ScenarioText.load(file("""
          - scan: { for: 2s, interval: 100ms, window: 31.25ms, min-rssi: -80 }
          - connect: { peripheral: tag, scan-interval: 1.28s, scan-window: 2.5ms }
          - expect: { rssi: { peripheral: tag, at-least: -90, at-most: -50, from: link } }
          - expect: { rssi: tag, at-least: -75dBm }
          - parameter-requests: reject
          - parameter-requests: { answer: accept, peripheral: tag }
        """))
        guard case let .scan(scan) = scenario.steps[0].action else { return XCTFail("scan") }
        XCTAssertEqual(scan.timing, ScanTiming(interval: .milliseconds(100), window: .microseconds(31_250)))
        XCTAssertEqual(scan.minRSSI, -80)
        XCTAssertEqual(scenario.steps[1].connectScan, ScanTiming(interval: .milliseconds(1_280), window: .microseconds(2_500)))
        guard case let .expect(.rssi(a)) = scenario.steps[2].action, case let .expect(.rssi(b)) = scenario.steps[3].action else {
            return XCTFail("rssi")
        }
        XCTAssertEqual(a, RSSIExpectation(peripheral: "tag", atLeast: -90, atMost: -50, source: .link))
        XCTAssertEqual(b, RSSIExpectation(peripheral: "tag", atLeast: -75))
        guard case .fault(.parameterRequests("tag", false)) = scenario.steps[4].action,
              case .fault(.parameterRequests("tag", true)) = scenario.steps[5].action else { return XCTFail("parameter-requests") }
        // An interval alone keeps the default window; shorter than it, the window follows.
        let alone = try ScenarioText.load(file("  - scan: { interval: 1s }\n  - scan: { interval: 5ms }"))
        guard case let .scan(s1) = alone.steps[0].action, case let .scan(s2) = alone.steps[1].action else { return XCTFail("scans") }
        XCTAssertEqual(s1.timing, ScanTiming(interval: .seconds(1), window: .milliseconds(10)))
        XCTAssertEqual(s2.timing, ScanTiming(interval: .milliseconds(5), window: .milliseconds(5)))
    }

    /// Vol 4 Part E 7.8.10: 0x0004–0x4000 units of 0.625 ms, window ≤ interval; RSSI -127…+20.
    func testRadioValuesAreValidatedAtTheirPlace() {
        XCTAssertEqual(errors(file("  - scan: { interval: 2ms }")), [
            "test.yaml:7:23: error: found '2ms', expected a scan interval from 2.5ms to 10.24s in steps of 0.625ms (such as 10ms, 30ms, 100ms or 1.28s); Core Vol 4 Part E 7.8.10 allows 0x0004 to 0x4000 units of 0.625 ms",
        ])
        XCTAssertEqual(errors(file("  - scan: { interval: 11s }")).count, 1)
        XCTAssertEqual(errors(file("  - scan: { window: 31ms }")), [
            "test.yaml:7:21: error: found '31ms', expected a scan window from 2.5ms to 10.24s in steps of 0.625ms (such as 10ms, 30ms, 100ms or 1.28s); the nearest allowed values are 30.625ms and 31.25ms",
        ])
        XCTAssertEqual(errors(file("  - scan: { window: 30ms }")), [
            "test.yaml:7:21: error: found '30ms', expected a window no longer than the interval (Core Vol 4 Part E 7.8.10); it is longer than the default interval of 10ms; give 'interval' too",
        ])
        XCTAssertEqual(errors(file("  - scan: { interval: 20ms, window: 30ms }")), [
            "test.yaml:7:37: error: found '30ms', expected a window no longer than the interval (Core Vol 4 Part E 7.8.10); it is longer than interval 20ms",
        ])
        XCTAssertEqual(errors(file("  - connect: { peripheral: tag, scan-interval: 50ms, scan-window: 60ms }")), [
            "test.yaml:7:67: error: found '60ms', expected a scan-window no longer than the scan-interval (Core Vol 4 Part E 7.8.10); it is longer than scan-interval 50ms",
        ])
        XCTAssertEqual(errors(file("  - scan: { min-rssi: -130 }")), [
            "test.yaml:7:23: error: found '-130', expected an RSSI in dBm from -127 to 20 (such as -70); the weakest HCI reports is -127",
        ])
        XCTAssertEqual(errors(file("  - scan: { min-rssi: 70 }")), [
            "test.yaml:7:23: error: found '70', expected an RSSI in dBm from -127 to 20 (such as -70); RSSI is negative dBm, such as -70",
        ])
        XCTAssertEqual(errors(file("  - expect: { rssi: tag }")), [
            "test.yaml:7:15: error: found 'rssi' without 'at-least' or 'at-most', expected rssi: { peripheral: hm10, at-least: -70 }",
        ])
        XCTAssertEqual(errors(file("  - expect: { rssi: { peripheral: tag, at-least: -50, at-most: -60 } }")), [
            "test.yaml:7:64: error: found '-60', expected at-most no lower than at-least (-50); no RSSI is at least -50 and at most -60 dBm",
        ])
        XCTAssertEqual(errors(file("  - expect: { rssi: { peripheral: tag, at-least: -50, from: air } }")), [
            "test.yaml:7:61: error: found 'air', expected scan or link",
        ])
        XCTAssertEqual(errors(file("  - expect: { rssi: { peripheral: tga, at-least: -50 } }")), [
            "test.yaml:7:35: error: found peripheral 'tga', expected a peripheral declared under peripherals: (tag); did you mean 'tag'?",
        ])
        XCTAssertEqual(errors(file("  - parameter-requests: refuse")), [
            "test.yaml:7:25: error: found 'refuse', expected accept or reject",
        ])
        XCTAssertEqual(errors(file("  - parameter-requests")).first,
                       "test.yaml:7:5: error: found 'parameter-requests', expected a step (scan, connect, discover, mtu, read, write, subscribe, unsubscribe, wait, disconnect, peripheral, expect, link-loss, out-of-range, in-range, power-off, power-on, connection-update, link, parameter-requests, pair, encrypt, auto-pair); 'parameter-requests' needs a value, e.g. parameter-requests: reject")
        XCTAssertEqual(errors("""
            scenario: radio
            peripherals:
              tag:
                advertise: { name: Tag }
                on-connect: [{ request-connection-update: { interval: 50ms, timeout: 2s, via: ll } }]
            central:
              - scan
            """), [
            "test.yaml:5:83: error: found 'll', expected l2cap or link-layer",
        ])
    }

    /// The regression of the issue: a device at -120 dBm is not found; RSSI expectations read the
    /// scan's report and the link (Read RSSI).
    func testTheRSSIRegressionScenarioPasses() throws {
        let path = Self.repository + "/scenarios/regressions/rssi-below-sensitivity.yaml"
        let result = ScenarioRunner().run(try Scenario.load(path: path))
        XCTAssertEqual(result.verdict, "passed")
        let notes = result.steps.compactMap(\.note)
        XCTAssertTrue(notes.contains { $0.hasPrefix("Read RSSI on the link: ") }, "\(notes)")
    }

    /// An RSSI expectation that does not hold fails, saying what was measured.
    func testAnRSSIExpectationThatDoesNotHoldFails() throws {
        let result = try ScenarioText.run(file("""
          - scan: { for: 1s }
          - expect: { rssi: { peripheral: tag, at-least: -60 } }
        """))
        guard case let .failed(failure) = result.outcome else { return XCTFail("expected a failure, got \(result.verdict)") }
        XCTAssertEqual(failure.expected, "the RSSI of tag at least -60 dBm")
        XCTAssertTrue(failure.seen.hasPrefix("the last scan (step 1) heard tag at -"), failure.seen)
        // From a link that does not exist.
        let noLink = try ScenarioText.run(file("""
          - scan: { for: 1s }
          - expect: { rssi: { peripheral: tag, at-least: -90, from: link } }
        """))
        XCTAssertEqual(noLink.failure?.seen, "never connected to tag")
    }

    /// The field scenario of the missed instant: the central's host hears LE Connection Update
    /// Complete, then times out; the peripheral's controller reports Instant Passed (0x28).
    func testAMissedInstantEndsInInstantPassedOnThePeripheral() throws {
        let path = Self.repository + "/scenarios/field/air-instant-passed.yaml"
        let result = ScenarioRunner().run(try Scenario.load(path: path), options: RunOptions(keepsCaptures: true))
        XCTAssertEqual(result.verdict, "passed")
        func reasons(_ device: String) -> [HCIStatus] {
            (result.captures.first { $0.device == device }?.packets ?? []).compactMap { p in
                guard case let .event(.disconnectionComplete(e))? = try? HCIPacket(h4: p.frame) else { return nil }
                return e.reason
            }
        }
        XCTAssertEqual(reasons("tracker"), [.instantPassed])
        XCTAssertEqual(reasons("central"), [.connectionTimeout])
    }

    /// `parameter-requests: reject` makes the central's host refuse, over the link layer and L2CAP.
    func testTheParameterRequestsScenarioPasses() throws {
        let path = Self.repository + "/scenarios/field/link-parameter-requests.yaml"
        let result = ScenarioRunner().run(try Scenario.load(path: path), options: RunOptions(recordsTimeline: true))
        XCTAssertEqual(result.verdict, "passed")
        let central = result.timeline.filter { $0.device == "central" && $0.kind == .peripheral }.map(\.text)
        XCTAssertEqual(central.map { String($0.prefix(while: { $0 != ":" })) }, [
            "accepted band's LE Remote Connection Parameter Request",
            "rejected band's LE Remote Connection Parameter Request",
            "rejected band's L2CAP Connection Parameter Update Request",
            "accepted band's L2CAP Connection Parameter Update Request",
        ])
    }
}

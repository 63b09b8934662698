import BLELab
import BLELabTestSupport
import BLERuntime
import Controller
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// Validation of the fault keys: every mistake named at file:line:column with the fix.
final class FaultSchemaTests: XCTestCase {
    private func errors(_ text: String) -> [String] { ScenarioText.errors(text) }

    /// One peripheral (line 3) with `extra` lines under it, and `step` at line 11.
    private func file(peripheral extra: String = "", step: String = "- scan: { for: 1s }") -> String {
        """
        scenario: faults
        peripherals:
          hm10:
            advertise: { name: HMSoft, services: [FFE0] }
            gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [read, write, notify] }
            \(extra)
        central:
          \(step)
        """
    }

    func testValidFaultKeysLoad() throws {
        let scenario = try ScenarioText.load(file(peripheral: "link: { loss: 12.5%, latency: 15ms, jitter: 5ms, drop: [{ att: 3, from: central }, { att: 1, from: peripheral }] }\n    mtu: 100",
                                                  step: "- connection-update: { peripheral: hm10, interval: 48.75ms, latency: 2, timeout: 4s }"))
        XCTAssertEqual(scenario.faults["hm10"], PeripheralFaults(
            link: LinkFaults(lossRate: 0.125, latency: .milliseconds(15), jitter: .milliseconds(5),
                             drops: [ATTDrop(from: .central, index: 3), ATTDrop(from: .peripheral, index: 1)]),
            mtu: 100))
        guard case let .fault(.connectionUpdate("hm10", request))? = scenario.steps.last?.action else { return XCTFail("\(String(describing: scenario.steps.last?.action))") }
        XCTAssertEqual(request, ConnectionUpdateRequest(interval: 39, latency: 2, timeout: 400))
        XCTAssertEqual(request.description, "interval 48.75ms latency 2 timeout 4000ms")
    }

    func testMisspeltFaultKeysGetDidYouMean() {
        XCTAssertEqual(errors(file(peripheral: "link: { los: 10% }")), [
            "test.yaml:9:13: error: found unknown key 'los', expected a link key (loss, latency, jitter, drop, pdus-per-event, encryption); did you mean 'loss'?",
        ])
        XCTAssertEqual(errors(file(step: "- link-los: hm10")).first?.hasSuffix("did you mean 'link-loss'?"), true)
        XCTAssertEqual(errors(file(step: "- out-of-range: { peripheral: hm10, rat: 10dB/s }")), [
            "test.yaml:11:39: error: found unknown key 'rat', expected a 'out-of-range' key (peripheral, rate); did you mean 'rate'?",
        ])
        XCTAssertEqual(errors(file(step: "- expect: { att-timout: hm10 }")).first?.hasSuffix("did you mean 'att-timeout'?"), true)
        XCTAssertEqual(errors(file(peripheral: "on-connect: [{ brust: { characteristic: FFE1, count: 3 } }]")).first?.hasSuffix("did you mean 'burst'?"), true)
        XCTAssertEqual(errors(file(peripheral: "link: { drop: { att: 2, form: central } }")), [
            "test.yaml:9:19: error: found a drop without 'from', expected 'from: central' or 'from: peripheral'",
            "test.yaml:9:29: error: found unknown key 'form', expected a drop key (att, from); did you mean 'from'?",
        ])
    }

    func testFaultValuesSayWhatTheyAccept() {
        XCTAssertEqual(errors(file(peripheral: "link: { loss: 0.1 }")), [
            "test.yaml:9:19: error: found '0.1', expected a loss rate from 0% to 100% such as 10%; write it as a percentage: 10%",
        ])
        XCTAssertEqual(errors(file(peripheral: "link: { loss: 120% }")), [
            "test.yaml:9:19: error: found '120%', expected a loss rate from 0% to 100% such as 10%",
        ])
        XCTAssertEqual(errors(file(peripheral: "link: { drop: { att: 0, from: centre } }")), [
            "test.yaml:9:26: error: found '0', expected the number of the ATT PDU to drop, from 1 to 1000000",
            "test.yaml:9:35: error: found 'centre', expected central or peripheral; did you mean 'central'?",
        ])
        XCTAssertEqual(errors(file(peripheral: "mtu: 20")), ["test.yaml:9:10: error: found '20', expected an ATT_MTU from 23 to 517"])
        XCTAssertEqual(errors(file(step: "- out-of-range: { peripheral: hm10, rate: 10 }")), [
            "test.yaml:11:45: error: found '10', expected a rate above 0 and up to 1000dB/s, such as 10dB/s; add the unit: 10dB/s",
        ])
        XCTAssertEqual(errors(file(step: "- connection-update: { interval: 7ms, timeout: 2s }")), [
            "test.yaml:11:36: error: found '7ms', expected a connection interval from 7.5ms to 4s in steps of 1.25ms (such as 30ms, 48.75ms or 1s)",
        ])
        // Vol 6 Part B 4.5.2: the timeout must exceed (1 + latency) × interval × 2.
        XCTAssertEqual(errors(file(step: "- connection-update: { interval: 100ms, latency: 4, timeout: 1s }")), [
            "test.yaml:11:64: error: found '1s', expected a supervision timeout longer than (1 + latency) × interval × 2 = 1000ms (Core Vol 6 Part B 4.5.2)",
        ])
        XCTAssertEqual(errors(file(step: "- connection-update: { latency: 0 }")), [
            "test.yaml:11:5: error: found 'connection-update' without 'interval', expected connection-update: { interval: 50ms, latency: 0, timeout: 2s }",
            "test.yaml:11:5: error: found 'connection-update' without 'timeout', expected connection-update: { interval: 50ms, latency: 0, timeout: 2s }",
        ])
        XCTAssertEqual(errors(file(step: "- expect: { connection-parameters: { within: 2s } }")), [
            "test.yaml:11:15: error: found 'connection-parameters' without interval, latency or timeout, expected connection-parameters: { interval: 50ms, latency: 0, timeout: 2s }",
        ])
        XCTAssertEqual(errors(file(step: "- expect: { att-timeout: { request: write, peripheral: hm11 } }")), [
            "test.yaml:11:58: error: found peripheral 'hm11', expected a peripheral declared under peripherals: (hm10); did you mean 'hm10'?",
        ])
        XCTAssertEqual(errors(file(step: "- expect: { att-timeout: wirte }")), [
            "test.yaml:11:28: error: found 'wirte', expected the request that timed out (exchange-mtu, find-information, find-by-type-value, read-by-type, read, read-blob, read-multiple, read-by-group-type, write, prepare-write, execute-write, or any); did you mean 'write'?",
        ])
        XCTAssertEqual(errors(file(peripheral: "on-connect: [{ burst: { characteristic: FFE9, count: 3 } }]")).first?.contains("FFE9"), true)
        XCTAssertEqual(errors(file(peripheral: "on-connect: [{ power-off: now }]")), [
            "test.yaml:9:31: error: found 'now', expected 'power-off' without a value",
        ])
    }

    func testBareFaultStepsTakeTheConnectedPeripheral() throws {
        let scenario = try ScenarioText.load(ScenarioText.hm10(ScenarioText.connected + """

              - link-loss
              - expect: { disconnected: { reason: connection-timeout, within: 6s } }
              - power-off
              - power-on
              - out-of-range
              - in-range
            """))
        let faults = scenario.steps.compactMap { if case let .fault(f) = $0.action { return f } else { return nil } }
        XCTAssertEqual(faults, [.linkLoss(peripheral: "hm10", after: nil), .powerOff(peripheral: "hm10"), .powerOn(peripheral: "hm10"),
                                .outOfRange(peripheral: "hm10", rate: nil), .inRange(peripheral: "hm10")])
    }

    func testAirFaultsOffTheSimulatorFailNamingTheFix() throws {
        let scenario = try ScenarioText.load(ScenarioText.hm10(ScenarioText.connected + "\n  - power-off: hm10"))
        XCTAssertTrue(scenario.steps.compactMap { if case let .fault(f) = $0.action { return f.needsSimulator } else { return nil } } == [true])
    }
}

import BLELab
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// The keys that let a scenario reproduce an app with a GATT cache and a peripheral whose
/// handles are known in advance: `handle:` on services and characteristics, `gatt-cache: true`
/// and `interval` / `latency` / `timeout` on `connect`. Checked on what crosses the link.
final class CachedHandleScenarioTests: XCTestCase {
    private func file(gatt: String = "", connect: String = "- connect: lock", steps: String = "") -> String {
        """
        scenario: cached
        peripherals:
          lock:
            advertise: { name: Lock, services: [FFF0] }
            gatt:
              - service: FFF0
                handle: 0x0020
                characteristics:
                  - { uuid: FFF1, properties: [read, write], value: hex:01, handle: 0x0030 }
                  - { uuid: FFF2, properties: [notify], handle: 0x0040 }
        \(gatt)
        central:
          - scan: { services: [FFF0], for: 1s }
          \(connect)
        \(steps)
        """
    }

    func testPinnedHandlesAreTheHandlesOnTheLink() throws {
        let scenario = try ScenarioText.load(file(connect: "- connect: { peripheral: lock, gatt-cache: true }",
                                                  steps: "  - read: FFF1\n  - write: { characteristic: FFF1, value: hex:02 }\n  - subscribe: FFF2\n  - peripheral: { lock: [{ notify: FFF2, value: hex:aa }] }\n  - expect: { notification: FFF2, value: hex:aa }"))
        XCTAssertEqual(scenario.peripherals[0].services[0].handle, 0x0020)
        XCTAssertEqual(scenario.peripherals[0].services[0].characteristics.map(\.handle), [0x0030, 0x0040])
        XCTAssertTrue(scenario.steps[1].gattCache)
        let result = ScenarioRunner().run(scenario, options: RunOptions(recordsTimeline: true))
        XCTAssertTrue(result.passed, result.failure?.report() ?? "")
        // No discovery crossed the link: the first ATT PDU is the read of 0x0030, the CCCD is 0x0041.
        let att = result.timeline.filter { $0.kind == .att && $0.device == "central" }.map(\.text)
        XCTAssertEqual(att.first, "Read Request handle 0x0030", "\(att)")
        XCTAssertFalse(att.contains { $0.contains("Read By Group Type") }, "\(att)")
        XCTAssertTrue(att.contains("Write Request handle 0x0030 value 02"), "\(att)")
        XCTAssertTrue(att.contains("Write Request handle 0x0041 value 01 00"), "\(att)")
        XCTAssertTrue(att.contains("Handle Value Notification handle 0x0040 value aa"), "\(att)")
    }

    func testWithoutTheCacheAReadBeforeDiscoveryFails() throws {
        let scenario = try ScenarioText.load(file(steps: "  - read: FFF1"))
        let result = ScenarioRunner().run(scenario)
        XCTAssertFalse(result.passed)
        XCTAssertEqual(result.failure?.seen, "nothing discovered yet (add a discover step)")
    }

    func testConnectAsksForTheParametersGiven() throws {
        let scenario = try ScenarioText.load(file(connect: "- connect: { peripheral: lock, interval: 7.5ms, latency: 2, timeout: 720ms }",
                                                  steps: "  - expect: { connection-parameters: { interval: 7.5ms, latency: 2, timeout: 720ms } }"))
        XCTAssertEqual(scenario.steps[1].connectParameters, ConnectionUpdateRequest(interval: 6, latency: 2, timeout: 72))
        let result = ScenarioRunner().run(scenario)
        XCTAssertTrue(result.passed, result.failure?.report() ?? "")
        // Left out: the lab's own 30 ms, 0, 5 s.
        let partial = try ScenarioText.load(file(connect: "- connect: { peripheral: lock, timeout: 2s }",
                                                 steps: "  - expect: { connection-parameters: { interval: 30ms, latency: 0, timeout: 2s } }"))
        XCTAssertEqual(partial.steps[1].connectParameters, ConnectionUpdateRequest(interval: 24, latency: 0, timeout: 200))
        XCTAssertTrue(ScenarioRunner().run(partial).passed)
    }

    func testMistakesAreNamedWhereWritten() {
        XCTAssertEqual(ScenarioText.errors(file().replacingOccurrences(of: "handle: 0x0020", with: "handle: 0x0004")), [
            "test.yaml:7:17: error: found handle '0x0004', which the attributes laid out before it already reach, expected a handle of 0x000A or more; handles are laid out in the order written, the GAP and GATT services first (0x0001–0x0009); a characteristic's declaration takes the handle before its value, and its descriptors the ones after",
        ])
        XCTAssertEqual(ScenarioText.errors(file().replacingOccurrences(of: "handle: 0x0040", with: "handle: 0x0031")), [
            "test.yaml:10:57: error: found handle '0x0031', which the attributes laid out before it already reach, expected a handle of 0x0032 or more; handles are laid out in the order written, the GAP and GATT services first (0x0001–0x0009); a characteristic's declaration takes the handle before its value, and its descriptors the ones after",
        ])
        XCTAssertEqual(ScenarioText.errors(file(connect: "- connect: { peripheral: lock, interval: 7ms }")).count, 1)
        XCTAssertEqual(ScenarioText.errors(file(connect: "- connect: { peripheral: lock, interval: 1s, timeout: 1s }")).count, 1)
        XCTAssertEqual(ScenarioText.errors(file(connect: "- connect: { peripheral: lock, gatt-cache: maybe }")).count, 1)
    }

    func testTheWriterWritesTheNewKeysBack() throws {
        let scenario = try ScenarioText.load(file(connect: "- connect: { peripheral: lock, interval: 7.5ms, latency: 2, timeout: 720ms, gatt-cache: true }"))
        let text = ScenarioWriter.write(scenario)
        XCTAssertTrue(text.contains("  - connect: { peripheral: lock, interval: 7.5ms, latency: 2, timeout: 720ms, gatt-cache: true }"), text)
        XCTAssertTrue(text.contains("handle: 0x0020"), text)
        XCTAssertTrue(text.contains("handle: 0x0030"), text)
        XCTAssertEqual(try ScenarioText.load(text), scenario)
    }
}

import BLELabTestSupport
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// `expect: { only-discovered: [IDS] }`: the most recent scan found exactly these of the
/// scenario's peripherals and no other device — the check that a scan hears only its own lab
/// (`blelab run --jobs` on real controllers; TierTests/JobIsolationTests makes the other devices).
final class OnlyDiscoveredTests: XCTestCase {
    private let lamp = """
          lamp:
            advertise: { name: Lamp, services: [FFE0] }
        """

    private func run(_ expectation: String) throws -> ScenarioResult {
        try ScenarioText.run(ScenarioText.hm10("  - scan: { services: [FFE0], for: 1s }\n  - expect: { only-discovered: \(expectation) }",
                                               extraPeripheral: lamp))
    }

    func testExactlyTheScenariosDevicesPass() throws {
        XCTAssertEqual(try run("[hm10, lamp]").verdict, "passed")
        XCTAssertEqual(try run("[lamp, hm10]").verdict, "passed", "in any order")
    }

    func testAnotherDeviceOrAMissingOneFails() throws {
        XCTAssertEqual(try run("[hm10]").verdict, "step 2 (test.yaml:23): expect: { only-discovered: [hm10] }: expected the last scan "
            + "discovered hm10 and nothing else; seen the last scan (step 1) discovered hm10 (-49 dBm), lamp (-58 dBm)")
        XCTAssertEqual(try run("[]").failure?.expected, "the last scan discovered nothing")
        XCTAssertEqual(try run("hm10").failure?.expected, "the last scan discovered hm10 and nothing else", "one id without brackets")
    }

    func testItIsReadAndWrittenBack() throws {
        let text = ScenarioText.hm10("  - scan: { for: 1s }\n  - expect: { only-discovered: [hm10, lamp] }", extraPeripheral: lamp)
        let scenario = try ScenarioText.load(text)
        XCTAssertEqual(scenario.steps.last?.action, .expect(.onlyDiscovered(["hm10", "lamp"])))
        XCTAssertTrue(ScenarioWriter.write(scenario).contains("- expect: { only-discovered: [hm10, lamp] }"), ScenarioWriter.write(scenario))
        XCTAssertEqual(ScenarioText.errors(ScenarioText.hm10("  - scan: { for: 1s }\n  - expect: { only-discovered: [hm10, lmap] }",
                                                              extraPeripheral: lamp)),
                       ["test.yaml:23:39: error: found peripheral 'lmap', expected a peripheral declared under peripherals: (hm10, lamp); did you mean 'lamp'?"])
    }
}

import BLELabTestSupport
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// `expect-failure: TEXT` (docs/scenarios.md section 3): a scenario that must fail, with TEXT in
/// its failure, to pass. The verdict must be right both ways: a failure with TEXT passes; a pass,
/// or a failure without TEXT, fails saying what was expected and what happened.
final class ExpectFailureTests: XCTestCase {
    /// hm10 is found by the scan: `not-discovered` fails, with "discovered hm10" in its summary.
    private func scenario(expecting text: String?, holds: Bool = false) -> String {
        let header = text.map { "expect-failure: \($0)" } ?? ""
        return ScenarioText.hm10(holds ? "  - scan: { for: 1s }\n  - expect: { discovered: hm10 }"
                                       : "  - scan: { for: 1s }\n  - expect: { not-discovered: hm10 }", header: header)
    }

    /// What the scenario gives without `expect-failure:`: the failure the cases below expect.
    private let plainFailure = "step 2 (test.yaml:22): expect: { not-discovered: hm10 }: expected the last scan did not discover hm10; seen the last scan (step 1) discovered hm10 (-49 dBm)"

    func testTheScenarioFailsAsPlainlyWithoutTheKey() throws {
        XCTAssertEqual(try ScenarioText.run(scenario(expecting: nil)).verdict, plainFailure)
        XCTAssertNil(try ScenarioText.load(scenario(expecting: nil)).expectFailure)
    }

    func testAFailureContainingTheTextPasses() throws {
        let result = try ScenarioText.run(scenario(expecting: "discovered hm10"))
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.failedAsExpected?.summary, plainFailure)
    }

    func testAFailureWithoutTheTextFails() throws {
        let result = try ScenarioText.run(scenario(expecting: "no connection within 2s"))
        XCTAssertEqual(result.failure?.kind, .expectedFailure)
        XCTAssertEqual(result.verdict, "step 2 (test.yaml:22): expect: { not-discovered: hm10 }: expected the scenario to fail with a failure "
            + "containing 'no connection within 2s' (expect-failure); seen it failed otherwise: "
            + plainFailure)
        XCTAssertNil(result.failedAsExpected)
    }

    func testAPassFails() throws {
        let result = try ScenarioText.run(scenario(expecting: "discovered hm10", holds: true))
        XCTAssertEqual(result.failure?.kind, .expectedFailure)
        XCTAssertNil(result.failure?.step)
        XCTAssertEqual(result.verdict, "expected the scenario to fail with a failure containing 'discovered hm10' (expect-failure); "
            + "seen it passed: every step held")
        XCTAssertTrue(result.failure!.report().hasPrefix("  the whole scenario\n  expected: the scenario to fail"), result.failure!.report())
    }

    /// The text is compared as it is written, case and all, with what was expected and seen: the
    /// failing step's own text does not count.
    func testTheTextIsMatchedExactlyInTheMessage() throws {
        XCTAssertEqual(try ScenarioText.run(scenario(expecting: "DISCOVERED HM10")).failure?.kind, .expectedFailure)
        XCTAssertEqual(try ScenarioText.run(scenario(expecting: "\"not-discovered: hm10\"")).failure?.kind, .expectedFailure)
        XCTAssertEqual(try ScenarioText.run(scenario(expecting: "\"did not discover hm10; seen the last scan\"")).verdict, "passed")
    }

    /// On a tier the scenario does not run on it stays skipped: a skip is no failure.
    func testASkipStaysASkip() throws {
        let text = scenario(expecting: "discovered hm10").replacingOccurrences(of: "expect-failure:", with: "requires: [vhci]\nexpect-failure:")
        XCTAssertEqual(try ScenarioText.run(text).verdict, "skipped")
    }

    func testTheKeyIsValidatedWithItsPlace() {
        XCTAssertEqual(ScenarioText.errors(scenario(expecting: "''")), [
            "test.yaml:2:17: error: found '', expected one line of text the scenario's failure must contain, such as 'no connection within 2s'",
        ])
        XCTAssertEqual(ScenarioText.errors(scenario(expecting: "[a, b]")), [
            "test.yaml:2:17: error: found a sequence, expected the text the scenario's failure must contain",
        ])
    }
}

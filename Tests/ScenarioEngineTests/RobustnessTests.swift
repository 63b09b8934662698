import BLELabTestSupport
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// Whatever a file says, loading gives errors or a scenario, and running gives a result: never a
/// crash. Mutations of the tour file exercise steps out of their usual order.
final class RobustnessTests: XCTestCase {
    private func tour() throws -> [String] {
        try FileText.read(ScenarioText.fixtures + "/format-tour.yaml").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    func testEveryTruncationLoadsOrFailsWithPositions() throws {
        let lines = try tour()
        for n in 0...lines.count {
            let text = lines.prefix(n).joined(separator: "\n")
            do {
                _ = try Scenario.parse(text, file: "t.yaml")
            } catch let e as ScenarioErrors {
                XCTAssertFalse(e.errors.isEmpty)
                XCTAssertTrue(e.errors.allSatisfy { $0.line >= 1 && $0.line <= max(1, n + 1) }, "\(n): \(e)")
            }
        }
    }

    func testDroppingAnyStepStillGivesAResult() throws {
        let lines = try tour()
        guard let central = lines.firstIndex(of: "central:") else { return XCTFail("no central:") }
        var ran = 0, failed = 0
        for (i, line) in lines.enumerated() where i > central && line.hasPrefix("  - ") {
            var mutated = lines
            mutated.remove(at: i)
            guard let scenario = try? Scenario.parse(mutated.joined(separator: "\n"), file: "t.yaml") else { continue }
            let result = ScenarioRunner().run(scenario)
            ran += 1
            if let failure = result.failure {
                failed += 1
                XCTAssertFalse(failure.expected.isEmpty)
                XCTAssertFalse(failure.seen.isEmpty)
                XCTAssertNotNil(failure.step)
            }
        }
        XCTAssertGreaterThan(ran, 50)
        XCTAssertGreaterThan(failed, 10, "many steps are needed by later ones")
    }
}

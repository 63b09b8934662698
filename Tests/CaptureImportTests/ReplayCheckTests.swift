import CaptureImport
import Foundation
import ScenarioEngine
import ScenarioFormat
import XCTest

/// The replay check: a scenario imported from a capture passes against the same peripheral
/// behaviour, and a deliberate change to what the central does fails, with a report that points
/// at the first step whose expectation no longer holds.
final class ReplayCheckTests: XCTestCase {
    /// hm10-with-write: a Write Request (FFE1 offers write) and then a forced Write Command.
    private func importedHM10WithWrite() throws -> String {
        let capture = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-with-write.yaml")))
        return try CaptureImporter.importCapture(capture, source: "hm10-with-write.central.btsnoop").yaml
    }

    private func run(_ yaml: String) throws -> ScenarioResult {
        ScenarioRunner().run(try Scenario.parse(yaml, file: "edited.yaml"))
    }

    private func lineNumber(of text: String, in yaml: String) throws -> Int {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        return try XCTUnwrap(lines.firstIndex { $0.contains(text) }, "no line with \(text)") + 1
    }

    func testTheImportedScenarioPassesAndWritesWithTheCapturedOpcodes() throws {
        let yaml = try importedHM10WithWrite()
        XCTAssertTrue(yaml.contains("  - write: { characteristic: FFE1, value: \"text:AT+NAME\", type: request }"), yaml)
        XCTAssertTrue(yaml.contains("  - write: { characteristic: FFE1, value: \"text:raw\", type: command }"), yaml)
        XCTAssertTrue(yaml.contains("  - expect: { write-sent-as: request }"), yaml)
        XCTAssertTrue(yaml.contains("  - expect: { write-sent-as: command }"), yaml)
        XCTAssertTrue(yaml.contains("  - subscribe: FFE1"), yaml)
        let result = try run(yaml)
        XCTAssertTrue(result.passed, result.failure?.report() ?? "")
    }

    func testAChangedWriteTypeFailsAtTheWriteSentAsExpectationAfterIt() throws {
        let yaml = try importedHM10WithWrite()
        let changed = yaml.replacingFirst("value: \"text:AT+NAME\", type: request", with: "value: \"text:AT+NAME\", type: command")
        XCTAssertNotEqual(changed, yaml)
        let result = try run(changed)
        let failure = try XCTUnwrap(result.failure, "the edited scenario passed:\n\(changed)")
        let report = failure.report()
        // The first expectation after the edited write is the one that no longer holds.
        let writeLine = try lineNumber(of: "type: command }", in: changed)
        XCTAssertEqual(failure.kind, .expectation, report)
        XCTAssertEqual(failure.step?.location.line, writeLine + 1, report)
        XCTAssertEqual(failure.step?.text, "expect: { write-sent-as: request }", report)
        XCTAssertTrue(failure.expected.contains("Write Request"), report)
        XCTAssertTrue(failure.seen.contains("Write Command"), report)
        XCTAssertTrue(report.contains("edited.yaml:\(writeLine + 1)"), report)
        print(report)
    }

    func testARemovedSubscribeFailsAtTheFirstNotificationExpectation() throws {
        let yaml = try importedHM10WithWrite()
        let removed = yaml.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("  - subscribe:") }
            .joined(separator: "\n")
        XCTAssertNotEqual(removed, yaml)
        let result = try run(removed)
        let failure = try XCTUnwrap(result.failure, "the edited scenario passed:\n\(removed)")
        let report = failure.report()
        let firstNotification = try lineNumber(of: "expect: { notification: FFE1", in: removed)
        XCTAssertEqual(failure.kind, .expectation, report)
        XCTAssertEqual(failure.step?.location.line, firstNotification, report)
        XCTAssertTrue(failure.step?.text.hasPrefix("expect: { notification: FFE1") == true, report)
        XCTAssertTrue(failure.seen.contains("0") || failure.seen.contains("none") || failure.seen.contains("no "), report)
        // Nothing before it failed: every earlier step passed.
        let before = result.steps.filter { $0.step.location.line < firstNotification }
        XCTAssertFalse(before.isEmpty)
        XCTAssertTrue(before.allSatisfy { $0.outcome == .passed }, report)
        print(report)
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}

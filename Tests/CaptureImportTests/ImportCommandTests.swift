import BLELabTestSupport
import CaptureImport
import Foundation
import ScenarioEngine
import ScenarioFormat
import XCTest

/// `blelab import CAPTURE [-o FILE]` through the CLI core.
final class ImportCommandTests: XCTestCase {
    var directory = ""
    var capturePath = ""

    override func setUpWithError() throws {
        directory = try temporaryDirectory()
        capturePath = directory + "/hm10-serial.central.btsnoop"
        try FileText.write(try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml"))), to: capturePath)
    }

    override func tearDown() { removeTree(directory) }

    func testTheScenarioGoesToStandardOutputByDefault() throws {
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["import", capturePath]), .passed)
        XCTAssertEqual(cli.err, "")
        XCTAssertTrue(cli.out.hasPrefix("# Imported by `blelab import` from hm10-serial.central.btsnoop\n"), cli.out)
        let scenario = try Scenario.parse(cli.out, file: "stdout.yaml")
        XCTAssertEqual(scenario.name, "Imported from hm10-serial.central.btsnoop")
        XCTAssertEqual(scenario.peripherals.map(\.id), ["smart_curtain", "hmsoft"])
        XCTAssertTrue(ScenarioRunner().run(scenario).passed)
    }

    func testOutputGoesToTheFileNamedByDashO() throws {
        let cli = CLIHarness()
        for arguments in [["import", capturePath, "-o", "out.yaml"], ["import", "--output=out.yaml", capturePath]] {
            cli.files = [:]
            XCTAssertEqual(cli.run(arguments), .passed, cli.err)
            XCTAssertEqual(cli.out, "")
            XCTAssertEqual(cli.err, "blelab: wrote out.yaml: 2 peripherals (smart_curtain, hmsoft), 1 connection\n")
            let written = String(decoding: try XCTUnwrap(cli.files["out.yaml"]), as: UTF8.self)
            XCTAssertNoThrow(try Scenario.parse(written, file: "out.yaml"))
        }
    }

    func testUsageErrorsAndHelp() {
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["import"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: import needs a capture file: blelab import CAPTURE [-o FILE]\n")
        XCTAssertEqual(cli.run(["import", "a.btsnoop", "b.btsnoop"]), .badInput)
        XCTAssertTrue(cli.err.contains("import takes one capture"), cli.err)
        XCTAssertEqual(cli.run(["import", capturePath, "--outptu", "x"]), .badInput)
        XCTAssertTrue(cli.err.contains("did you mean '--output'"), cli.err)
        XCTAssertEqual(cli.run(["import", capturePath, "-o"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: option -o needs a path\n")
        XCTAssertEqual(cli.run(["import", "--help"]), .passed)
        XCTAssertTrue(cli.out.hasPrefix("usage: blelab import CAPTURE [-o FILE]"), cli.out)
        XCTAssertEqual(cli.run(["help", "import"]), .passed)
        XCTAssertTrue(cli.out.contains("PacketLogger"), cli.out)
        XCTAssertEqual(cli.run(["--help"]), .passed)
        XCTAssertTrue(cli.out.contains("import CAPTURE"), cli.out)
        XCTAssertEqual(cli.run(["imprt"]), .badInput)
        XCTAssertTrue(cli.err.contains("did you mean 'import'"), cli.err)
    }

    /// The complete examples of docs/scenarios.md cover what scenarios/ does not (two connections
    /// at once, on-read and on-write errors, indications, notify-every with counters, a peripheral
    /// that disconnects): each, run, captured, imported and replayed, passes.
    func testTheDocsExamplesRoundTripToo() throws {
        let text = try FileText.read(repositoryRoot + "/docs/scenarios.md")
        var examples: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "```yaml" { current = []; continue }
            if line == "```", let block = current {
                let yaml = block.joined(separator: "\n")
                if yaml.contains("\nscenario:") || yaml.hasPrefix("scenario:"), yaml.contains("\ncentral:"), yaml.contains("\nperipherals:") {
                    examples.append(yaml)
                }
                current = nil
                continue
            }
            current?.append(line)
        }
        XCTAssertGreaterThanOrEqual(examples.count, 10)
        for (i, yaml) in examples.enumerated() {
            let original = try Scenario.parse(yaml, file: "docs-example-\(i + 1).yaml")
            let first = runWithCaptures(original)
            XCTAssertTrue(first.passed, "\(original.name): \(first.failure?.report() ?? "")")
            let (imported, scenario) = try importAndLoad(try centralCapture(first), source: "docs-example-\(i + 1)")
            let replay = ScenarioRunner().run(scenario)
            XCTAssertTrue(replay.passed, "\(original.name):\n\(replay.failure?.report() ?? "")\n\(imported.yaml)")
        }
    }
}

/// docs/import.md cannot rot: its example is what the importer writes for that capture.
final class ImportDocsTests: XCTestCase {
    func testTheExampleInDocsImportIsWhatTheImporterWrites() throws {
        let text = try FileText.read(repositoryRoot + "/docs/import.md")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try XCTUnwrap(lines.firstIndex(of: "```yaml"), "docs/import.md has no yaml example") + 1
        let end = try XCTUnwrap(lines[start...].firstIndex(of: "```"))
        let shown = lines[start..<end].joined(separator: "\n") + "\n"
        let capture = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml")))
        let written = try CaptureImporter.importCapture(capture, source: "hm10-serial.central.btsnoop").yaml
        XCTAssertEqual(shown, written)
        // And the edit it describes fails at the write.
        let edited = written.replacingOccurrences(of: "value: \"text:hello\", type: command", with: "value: \"text:hello\", type: request")
        let failure = try XCTUnwrap(ScenarioRunner().run(try Scenario.parse(edited, file: "imported.yaml")).failure)
        XCTAssertEqual(failure.kind, .unexpectedATTError)
        XCTAssertEqual(failure.step?.text, "write: { characteristic: FFE1, value: \"text:hello\", type: request, peripheral: hmsoft }")
        XCTAssertTrue(text.contains(failure.report().split(separator: "\n").prefix(4).joined(separator: "\n")), failure.report())
    }
}

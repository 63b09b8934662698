#if canImport(Glibc)
import Glibc
#endif
import ScenarioFormat
import XCTest

/// The repository's root, from this file's place in it.
let repositoryRoot: String = {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    parts.removeLast(3)   // Tests/ScenarioFormatTests/RoundTripTests.swift
    return parts.joined(separator: "/")
}()

/// Every `*.yaml` below `folder`, sorted.
func yamlFiles(under folder: String) -> [String] {
    var out: [String] = []
    func walk(_ path: String) {
        guard let entries = try? FileText.entries(path) else { return }
        for name in entries.sorted() {
            let child = path + "/" + name
            if FileText.isDirectory(child) { walk(child) } else if name.hasSuffix(".yaml") { out.append(child) }
        }
    }
    walk(folder)
    return out
}

/// `read(write(model)) == model`: every scenario the repository holds, written by `ScenarioWriter`
/// and read back, is the same scenario; and the text is canonical (writing what was read back
/// gives the same text).
final class RoundTripTests: XCTestCase {
    /// Writes `scenario`, reads it back and compares; returns the text.
    @discardableResult
    func roundTrip(_ scenario: Scenario, _ label: String, file: StaticString = #filePath, line: UInt = #line) -> String? {
        let text = ScenarioWriter.write(scenario)
        let back: Scenario
        do {
            back = try Scenario.parse(text, file: "written-\(label)")
        } catch {
            XCTFail("\(label): the written scenario does not read back: \(error)\n\(text)", file: file, line: line)
            return nil
        }
        XCTAssertEqual(back, scenario, "\(label): read back as another scenario:\n\(text)", file: file, line: line)
        if back == scenario {
            // Each part too, so that a failure says where.
            XCTAssertEqual(back.peripherals, scenario.peripherals, label, file: file, line: line)
            for (a, b) in zip(back.steps, scenario.steps) where a != b {
                XCTFail("\(label): step \(b.index) '\(b.text)' read back as '\(a.text)'", file: file, line: line)
            }
        }
        XCTAssertEqual(ScenarioWriter.write(back), text, "\(label): writing it again gives another text", file: file, line: line)
        return text
    }

    func testEveryScenarioInScenariosRoundTrips() throws {
        let files = yamlFiles(under: repositoryRoot + "/scenarios")
        XCTAssertGreaterThanOrEqual(files.count, 40)
        for path in files { roundTrip(try Scenario.load(path: path), String(path.dropFirst(repositoryRoot.count + 1))) }
    }

    /// The test fixtures that load: the format tours (every key) and the runner's passing and
    /// failing scenarios.
    func testEveryLoadableFixtureRoundTrips() throws {
        let fixtures = repositoryRoot + "/Tests/ScenarioEngineTests/Fixtures"
        let files = [fixtures + "/format-tour.yaml", fixtures + "/format-shape.yaml"]
            + yamlFiles(under: fixtures + "/passing") + yamlFiles(under: fixtures + "/failing")
        XCTAssertGreaterThanOrEqual(files.count, 5)
        for path in files { roundTrip(try Scenario.load(path: path), String(path.dropFirst(repositoryRoot.count + 1))) }
    }

    /// Every complete scenario docs/scenarios.md shows (a ```yaml block with a `scenario:` line)
    /// that loads: the docs show every key of the format.
    func testEveryScenarioOfTheDocsRoundTrips() throws {
        let lines = try FileText.read(repositoryRoot + "/docs/scenarios.md").split(separator: "\n", omittingEmptySubsequences: false)
        var blocks: [(line: Int, text: String)] = []
        var index = 0
        while index < lines.count {
            guard lines[index] == "```yaml" else { index += 1; continue }
            var end = index + 1
            while end < lines.count, lines[end] != "```" { end += 1 }
            blocks.append((index + 2, lines[(index + 1)..<end].joined(separator: "\n") + "\n"))
            index = end + 1
        }
        var loaded = 0
        for (line, text) in blocks where text.contains("\nscenario:") || text.hasPrefix("scenario:") {
            guard let scenario = try? Scenario.parse(text, file: "docs/scenarios.md:\(line)") else { continue }
            roundTrip(scenario, "docs/scenarios.md:\(line)")
            loaded += 1
        }
        XCTAssertGreaterThanOrEqual(loaded, 10)
    }
}

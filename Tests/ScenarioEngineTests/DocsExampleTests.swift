#if canImport(Glibc)
import Glibc
#endif
import BLELab
import Foundation
import ScenarioFormat
import Transport
import XCTest
import YAMLSubset
@testable import ScenarioEngine
@testable import BLELabCLI
import BLELabTestSupport

/// docs/scenarios.md cannot rot: every example in it is checked against the lab.
///
/// - A ```yaml block that is a complete scenario (it has a `scenario:` line) must validate, run
///   and pass; when a file in scenarios/ has the same name, the block must be that file, verbatim.
/// - A ```yaml block that is not a complete scenario is a quote: the paragraph before it names the
///   file (in backticks) it is quoted from, and the block must appear in that file verbatim.
/// - A ```console block is commands (`$ blelab …`, run from the repository root through the same
///   entry point as the `blelab` executable) and their output (standard output, then standard
///   error), which must match exactly, wall-clock times aside.
/// - A ```sh block's `blelab` command lines must be valid usage.
/// - The ```text block of tshark output shows the last ATT PDUs of the hm10-serial capture.
final class DocsExampleTests: XCTestCase {
    static var root: String {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }

    static let docPath = "docs/scenarios.md"

    struct Block {
        /// 1-based line of the block's first content line.
        var line: Int
        var language: String
        var lines: [String]
        /// The paragraph just before the block's opening fence.
        var paragraph: [String]
        var text: String { lines.joined(separator: "\n") + "\n" }
    }

    static func blocks() throws -> [Block] {
        let lines = try FileText.read(root + "/" + docPath).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var blocks: [Block] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            guard line.hasPrefix("```"), line.count > 3 else { index += 1; continue }
            let language = String(line.dropFirst(3))
            var end = index + 1
            while end < lines.count, lines[end] != "```" { end += 1 }
            // The paragraph before the fence: skip one blank line, then take lines up to the next blank.
            var paragraphEnd = index - 1
            while paragraphEnd >= 0, lines[paragraphEnd].isEmpty { paragraphEnd -= 1 }
            var paragraphStart = paragraphEnd
            while paragraphStart > 0, !lines[paragraphStart - 1].isEmpty { paragraphStart -= 1 }
            let paragraph = paragraphEnd >= 0 ? Array(lines[paragraphStart...paragraphEnd]) : []
            blocks.append(Block(line: index + 2, language: language, lines: Array(lines[(index + 1)..<min(end, lines.count)]),
                                paragraph: paragraph))
            index = end + 1
        }
        return blocks
    }

    /// Runs `body` with the repository root as the working directory.
    private func inRoot(_ body: () throws -> Void) rethrows {
        var buffer = [CChar](repeating: 0, count: 4096)
        let previous = getcwd(&buffer, buffer.count).map { String(cString: $0) }
        if previous != Self.root { XCTAssertEqual(chdir(Self.root), 0) }
        defer { if let previous, previous != Self.root { chdir(previous) } }
        try body()
    }

    // MARK: Scenarios

    func testEveryCompleteScenarioValidatesRunsAndPasses() throws {
        let shipped = try ScenarioFiles.collect([Self.root + "/scenarios"]).files.map { path in
            (path: path, scenario: try Scenario.load(path: path), text: try FileText.read(path))
        }
        var count = 0
        for block in try Self.blocks() where block.language == "yaml" && block.lines.contains(where: { $0.hasPrefix("scenario:") }) {
            count += 1
            let place = "\(Self.docPath):\(block.line)"
            let scenario: Scenario
            do { scenario = try Scenario.parse(block.text, file: place) } catch {
                XCTFail("\(place): the example does not validate:\n\(error)")
                continue
            }
            let result = ScenarioRunner().run(scenario)
            XCTAssertEqual(result.verdict, "passed", place)
            XCTAssertTrue(result.steps.allSatisfy { $0.outcome == .passed }, place)
            if let file = shipped.first(where: { $0.scenario.name == scenario.name }) {
                XCTAssertEqual(block.text, file.text, "\(place) quotes \(file.path), which has changed")
            }
        }
        XCTAssertGreaterThanOrEqual(count, 10, "complete scenarios found in the guide")
    }

    func testEveryFragmentIsQuotedVerbatimFromTheFileItNames() throws {
        var count = 0
        for block in try Self.blocks() where block.language == "yaml" && !block.lines.contains(where: { $0.hasPrefix("scenario:") }) {
            count += 1
            let place = "\(Self.docPath):\(block.line)"
            let paragraph = block.paragraph.joined(separator: " ")
            let paths = paragraph.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
                .filter { $0.hasSuffix(".yaml") }
            XCTAssertTrue(paragraph.hasSuffix(":"), "\(place): a fragment follows a paragraph that introduces it")
            guard paths.count == 1, let path = paths.first else {
                XCTFail("\(place): the paragraph before a fragment names the one file it is quoted from (found \(paths))")
                continue
            }
            let file = try FileText.read(Self.root + "/" + path)
            XCTAssertTrue(file.contains(block.text), "\(place) is not verbatim in \(path)")
        }
        XCTAssertGreaterThanOrEqual(count, 3)
    }

    // MARK: Commands

    /// Wall-clock times differ from run to run; everything else in the output must match.
    static func maskingWallTimes(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let range = rest.range(of: " wall") {
            var start = range.lowerBound
            while start > rest.startIndex, let c = rest[rest.index(before: start)...].first, c.isNumber || c == "." || c == "m" || c == "s" || c == "µ" {
                start = rest.index(before: start)
            }
            out += rest[..<start] + "* wall"
            rest = rest[range.upperBound...]
        }
        return out + rest
    }

    func testEveryConsoleBlockGivesTheOutputShown() throws {
        let cli = CLIHarness()
        var count = 0
        try inRoot {
            for block in try Self.blocks() where block.language == "console" {
                var commands: [(line: Int, command: String, output: [String])] = []
                for (offset, line) in block.lines.enumerated() {
                    if line.hasPrefix("$ ") {
                        commands.append((block.line + offset, String(line.dropFirst(2)), []))
                    } else if !commands.isEmpty {
                        commands[commands.count - 1].output.append(line)
                    } else {
                        XCTFail("\(Self.docPath):\(block.line + offset): output before any command")
                    }
                }
                for c in commands {
                    let place = "\(Self.docPath):\(c.line)"
                    let words = c.command.split(separator: " ").map(String.init)
                    guard words.first == "blelab" else {
                        XCTFail("\(place): console blocks show blelab commands only (use ```sh for others): \(c.command)")
                        continue
                    }
                    count += 1
                    _ = cli.run(Array(words.dropFirst()))
                    let printed = Self.maskingWallTimes(cli.out + cli.err)
                    let shown = Self.maskingWallTimes(c.output.joined(separator: "\n") + "\n")
                    XCTAssertEqual(printed, shown, "\(place): \(c.command)")
                }
            }
        }
        XCTAssertGreaterThanOrEqual(count, 10, "console commands found in the guide")
        XCTAssertEqual(Self.maskingWallTimes("PASS x (f) 8.3ms wall / 1.785s virtual\n1 passed in 850.0µs wall / 2s virtual"),
                       "PASS x (f) * wall / 1.785s virtual\n1 passed in * wall / 2s virtual")
    }

    func testShellBlocksUseValidBlelabCommandLines() throws {
        var count = 0
        for block in try Self.blocks() where block.language == "sh" {
            for (offset, line) in block.lines.enumerated() {
                let command = line.components(separatedBy: " #").first ?? line
                let words = command.split(separator: " ").map(String.init)
                guard let at = words.firstIndex(where: { $0 == "blelab" || $0.hasSuffix("/blelab") }) else { continue }
                count += 1
                XCTAssertNoThrow(try CLIArguments.parse(Array(words[(at + 1)...])), "\(Self.docPath):\(block.line + offset): \(line)")
            }
        }
        XCTAssertGreaterThanOrEqual(count, 2)
    }

    /// The tshark excerpt: epoch times and ATT opcodes of the last PDUs of hm10-serial's central
    /// capture, as the capture the runner makes holds them.
    func testTheTsharkExcerptIsTheEndOfTheRealCapture() throws {
        let rows = try Self.blocks().filter { $0.language == "text" }.flatMap(\.lines).filter { $0.contains("\t0x") }
        XCTAssertFalse(rows.isEmpty, "the guide shows tshark output")
        let scenario = try Scenario.load(path: Self.root + "/scenarios/seeds/hm10-serial.yaml")
        let result = ScenarioRunner().run(scenario, options: RunOptions(keepsCaptures: true))
        let central = try XCTUnwrap(result.captures.first { $0.device == "central" })
        let log = PacketLog()
        let traffic = ATTTraffic(log: log)
        // Through the file format and back, as tshark reads it.
        for packet in try BTSnoopReader.decode(BTSnoopWriter.encode(central.packets)).loggedPackets() { log.record(packet) }
        let listed = traffic.records.map { r -> String in
            let us = 946_684_800 * 1_000_000 + r.time.nanoseconds / 1_000
            let fraction = String(us % 1_000_000 + 1_000_000).dropFirst()
            let opcode = r.bytes.first ?? 0
            return "\(us / 1_000_000).\(fraction)000\t0x\(opcode < 16 ? "0" : "")\(String(opcode, radix: 16))"
        }
        XCTAssertEqual(Array(listed.suffix(rows.count)), rows)
    }
}

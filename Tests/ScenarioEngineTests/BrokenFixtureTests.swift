#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ScenarioFormat
import XCTest
@testable import ScenarioEngine
@testable import BLELabCLI
import BLELabTestSupport

/// Every file in Fixtures/broken/ is a scenario file broken on purpose, one mistake each (a few
/// with several), that starts with the exact lines `blelab validate` must print for it:
///
///     # expect: Tests/ScenarioEngineTests/Fixtures/broken/misspelt-step.yaml:15:5: error: found …
///
/// Paths are relative to the repository root, as a user running `blelab` there sees them. Each
/// file must give exactly those lines, in that order, from `blelab validate FILE` and from
/// `blelab run FILE`, which both exit 2 and run nothing.
final class BrokenFixtureTests: XCTestCase {
    static let folder = "Tests/ScenarioEngineTests/Fixtures/broken"

    /// The repository root: three levels above this file.
    static var root: String {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }

    struct Fixture {
        var path: String
        var description: [String]
        var expected: [String]
    }

    /// The fixtures, by path relative to the root, with their comment blocks.
    static func fixtures() throws -> [Fixture] {
        let names = try FileText.entries(root + "/" + folder).filter { $0.hasSuffix(".yaml") }.sorted()
        return try names.map { name in
            let path = folder + "/" + name
            let lines = try FileText.read(root + "/" + path).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let header = lines.prefix { $0.hasPrefix("#") }
            return Fixture(path: path,
                           description: header.filter { !$0.hasPrefix("# expect:") },
                           expected: header.filter { $0.hasPrefix("# expect: ") }.map { String($0.dropFirst("# expect: ".count)) })
        }
    }

    /// Runs `body` with the repository root as the working directory, as `blelab` is run there.
    private func inRoot(_ body: () throws -> Void) rethrows {
        var buffer = [CChar](repeating: 0, count: 4096)
        let previous = getcwd(&buffer, buffer.count).map { String(cString: $0) }
        if previous != Self.root { XCTAssertEqual(chdir(Self.root), 0) }
        defer { if let previous, previous != Self.root { chdir(previous) } }
        try body()
    }

    func testTheFolderHoldsAtLeastTwentyOneDescribedFixtures() throws {
        let fixtures = try Self.fixtures()
        XCTAssertGreaterThanOrEqual(fixtures.count, 21)
        for f in fixtures {
            XCTAssertTrue(f.description.first?.hasPrefix("# Broken on purpose") == true, "\(f.path) says what is broken first")
            XCTAssertFalse(f.expected.isEmpty, "\(f.path) has no '# expect:' lines")
            for line in f.expected {
                XCTAssertTrue(line.hasPrefix(f.path + ":"), "\(f.path): an expected line names another file: \(line)")
                XCTAssertTrue(line.contains(": error: found "), line)
            }
            // Every '# expect:' line is in the opening comment block, where the test reads them.
            let text = try FileText.read(Self.root + "/" + f.path)
            XCTAssertEqual(text.components(separatedBy: "# expect: ").count - 1, f.expected.count, "\(f.path): '# expect:' outside the header")
        }
        XCTAssertTrue(fixtures.contains { $0.expected.count >= 5 }, "some fixture has several errors at once")
    }

    /// `blelab validate FILE`: exactly the expected lines on standard error, then the count; exit 2.
    func testValidatePrintsExactlyTheExpectedLines() throws {
        let cli = CLIHarness()
        try inRoot {
            for f in try Self.fixtures() {
                XCTAssertEqual(cli.run(["validate", f.path]), .badInput, f.path)
                XCTAssertEqual(cli.out, "", f.path)
                let count = "blelab: \(f.expected.count) error\(f.expected.count == 1 ? "" : "s") in 1 file"
                XCTAssertEqual(lines(cli.err), f.expected + [count], f.path)
            }
        }
    }

    /// `blelab run FILE` (with every report option): the same lines, nothing run, nothing written.
    func testRunPrintsTheSameLinesAndRunsNothing() throws {
        let cli = CLIHarness()
        try inRoot {
            for f in try Self.fixtures() {
                XCTAssertEqual(cli.run(["run", "--junit", "/nonexistent/junit.xml", "--json", "/nonexistent/t.json",
                                        "--capture", "/nonexistent/captures", f.path]), .badInput, f.path)
                XCTAssertEqual(cli.out, "", "\(f.path): nothing ran, so nothing was reported")
                XCTAssertTrue(cli.files.isEmpty, "\(f.path): nothing was written")
                let count = "blelab: \(f.expected.count) error\(f.expected.count == 1 ? "" : "s") in 1 file"
                XCTAssertEqual(lines(cli.err), f.expected + [count, "blelab: nothing was run"], f.path)
            }
        }
    }

    /// The library entry point gives the same errors (the CLI adds nothing but the count).
    func testScenarioLoadGivesTheSameErrors() throws {
        try inRoot {
            for f in try Self.fixtures() {
                XCTAssertThrowsError(try Scenario.load(path: f.path), f.path) { error in
                    XCTAssertEqual((error as? ScenarioErrors)?.errors.map(\.description), f.expected, f.path)
                }
            }
        }
    }

    /// The built `blelab` executable itself, run from the repository root on the whole folder, as
    /// a user would, when the build has made it (`swift build --build-tests` builds it beside the
    /// test bundle): every file's lines, in sorted file order, exit 2.
    func testTheBlelabExecutableOnTheWholeFolder() throws {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let blelab = bundle.appendingPathComponent("blelab").path
        guard FileManager.default.isExecutableFile(atPath: blelab) else {
            print("BrokenFixtureTests: no blelab executable at \(blelab); checked through BLELabCLI only")
            return
        }
        let fixtures = try Self.fixtures()
        let expected = fixtures.flatMap(\.expected)
        let count = "blelab: \(expected.count) errors in \(fixtures.count) files"
        for (command, tail) in [("validate", [count]), ("run", [count, "blelab: nothing was run"])] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: blelab)
            process.arguments = [command, Self.folder]
            process.currentDirectoryURL = URL(fileURLWithPath: Self.root)
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            let errData = err.fileHandleForReading.readDataToEndOfFile()
            let outData = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 2, "blelab \(command)")
            XCTAssertEqual(outData.count, 0, "blelab \(command) printed on standard output")
            XCTAssertEqual(lines(String(decoding: errData, as: UTF8.self)), expected + tail, "blelab \(command)")
        }
    }

    private func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }
}

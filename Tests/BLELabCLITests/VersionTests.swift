@testable import BLELabCLI
import BLELabTestSupport
import Foundation
@testable import ScenarioEngine
import ScenarioFormat
import WireTestSupport
import XCTest

/// `blelab --version`: the release number and the git commit the executable was built from,
/// recorded at build time by tools/build-info.sh (run by the BuildInfo plugin).
final class VersionTests: XCTestCase {
    private let cli = CLIHarness()
    /// The repository: three folders up from this file.
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    func testVersionFlagPrintsTheVersionOnStandardOutputAndExitsZero() {
        XCTAssertEqual(cli.run(["--version"]), .passed)
        XCTAssertEqual(cli.out, "blelab \(BLELabVersion.number) (commit unknown: built as a library)\n")
        XCTAssertEqual(cli.err, "")
        XCTAssertEqual(cli.run(["version"]), .passed)
        XCTAssertEqual(cli.out, "blelab \(BLELabVersion.number) (commit unknown: built as a library)\n")
        // The executable passes the version naming its commit (main.swift): that is what it prints.
        var out = ""
        let built = BLELabCLI(console: Console(out: { out += $0 }, err: { _ in }), version: "blelab 9.9.9 (commit 0123456789ab)")
        XCTAssertEqual(built.main(["--version"]), .passed)
        XCTAssertEqual(out, "blelab 9.9.9 (commit 0123456789ab)\n")
        XCTAssertEqual(cli.run(["--version", "scenarios"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: --version takes nothing after it\n")
        XCTAssertTrue(Help.main.contains("--version"))
    }

    func testVersionText() {
        XCTAssertEqual(BLELabVersion.text(commit: "8dd5bff0d379", localChanges: false, note: ""), "blelab \(BLELabVersion.number) (commit 8dd5bff0d379)")
        XCTAssertEqual(BLELabVersion.text(commit: "8dd5bff0d379", localChanges: true, note: ""),
                       "blelab \(BLELabVersion.number) (commit 8dd5bff0d379 with local changes)")
        XCTAssertEqual(BLELabVersion.text(commit: "", localChanges: false, note: "not built from a git checkout"),
                       "blelab \(BLELabVersion.number) (commit unknown: not built from a git checkout)")
    }

    // MARK: The build's record

    private func git(_ arguments: [String]) throws -> (status: Int32, output: String)? {
        guard let git = TestTools.executableOnPath("git") else { return nil }
        let r = try TestTools.runTool(git, ["-C", root] + arguments)
        return (r.status, r.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The checkout's commit, or nil when the sources are not a git checkout (a source archive).
    private func checkoutCommit() throws -> String? {
        guard let top = try git(["rev-parse", "--show-toplevel"]), top.status == 0,
              URL(fileURLWithPath: top.output).resolvingSymlinksInPath().path == URL(fileURLWithPath: root).resolvingSymlinksInPath().path,
              let head = try git(["rev-parse", "--short=12", "HEAD"]), head.status == 0 else { return nil }
        return head.output
    }

    /// The values tools/build-info.sh wrote, by name.
    private func buildInfo(script: String) throws -> [String: String] {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let run = try TestTools.runTool("/bin/sh", [script, dir])
        XCTAssertEqual(run.status, 0)
        var values: [String: String] = [:]
        for line in try FileText.read(dir + "/BuildInfo.swift").split(separator: "\n") where line.hasPrefix("let ") {
            let parts = line.dropFirst(4).split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            values[parts[0]] = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return values
    }

    func testTheScriptRecordsTheCheckoutsCommitAndLocalChanges() throws {
        let info = try buildInfo(script: root + "/tools/build-info.sh")
        guard let commit = try checkoutCommit() else {
            XCTAssertEqual(info["buildCommit"], "")
            XCTAssertNotEqual(info["buildInfoNote"], "")
            return
        }
        XCTAssertEqual(info["buildCommit"], commit)
        let status = try XCTUnwrap(try git(["status", "--porcelain"]))
        XCTAssertEqual(info["buildHadLocalChanges"], status.output.isEmpty ? "false" : "true")
        XCTAssertEqual(info["buildInfoNote"], "")
    }

    /// A copy of the sources outside any git checkout claims no commit.
    func testOutsideACheckoutTheScriptClaimsNoCommit() throws {
        let copy = try temporaryDirectory()
        defer { removeTree(copy) }
        try FileText.write(try FileText.readBytes(root + "/tools/build-info.sh"), to: copy + "/tools/build-info.sh")
        let info = try buildInfo(script: copy + "/tools/build-info.sh")
        XCTAssertEqual(info["buildCommit"], "")
        XCTAssertEqual(info["buildHadLocalChanges"], "false")
        XCTAssertTrue(["not built from a git checkout", "git is not installed"].contains(info["buildInfoNote"] ?? ""), "\(info)")
    }

    /// The executable built beside these tests names a commit of this checkout's history (HEAD,
    /// or an older one when something was committed after the build).
    func testTheBuiltExecutableNamesTheCommitItWasBuiltFrom() throws {
        let blelab = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("blelab").path
        guard FileManager.default.isExecutableFile(atPath: blelab) else { return XCTFail("no blelab beside the tests at \(blelab): swift build --build-tests builds it") }
        let run = try TestTools.runTool(blelab, ["--version"])
        XCTAssertEqual(run.status, 0)
        let line = run.output.trimmingCharacters(in: .newlines)
        guard try checkoutCommit() != nil else {
            XCTAssertTrue(line.hasPrefix("blelab \(BLELabVersion.number) (commit unknown: "), line)
            return
        }
        let prefix = "blelab \(BLELabVersion.number) (commit "
        XCTAssertTrue(line.hasPrefix(prefix), line)
        let commit = String(line.dropFirst(prefix.count).prefix(12))
        XCTAssertTrue(commit.allSatisfy(\.isHexDigit) && commit.count == 12, line)
        XCTAssertTrue(line == prefix + commit + ")" || line == prefix + commit + " with local changes)", line)
        XCTAssertEqual(try git(["merge-base", "--is-ancestor", commit, "HEAD"])?.status, 0, "\(commit) is not in this checkout's history")
    }
}

import BLELab
@testable import BLELabCLI
import BLELabTestSupport
import BLERuntime
import Foundation
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// `blelab run --json` streamed (each run's events spooled to a temporary file, the document
/// written run by run) writes byte for byte what the whole document rendered in memory writes.
final class CLITimelineStreamTests: XCTestCase {
    /// The repository's scenarios/ folder.
    private static var scenarios: String {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/BLELabCLITests/CLITimelineStreamTests.swift
        return parts.joined(separator: "/") + "/scenarios"
    }

    /// A minute of 100 Hz notifications and writes: tens of thousands of events.
    private static let manyEvents = """
    scenario: many events
    seed: 9
    peripherals:
      hm10:
        advertise: { name: HMSoft, services: [FFE0] }
        gatt:
          - service: FFE0
            characteristics:
              - uuid: FFE1
                properties: [read, write, write-without-response, notify]
                on-subscribe:
                  - notify-every: { characteristic: FFE1, interval: 10ms, value: { counter-u8: 1 } }
    central:
      - scan: { services: [FFE0], for: 1s }
      - connect: hm10
      - discover: all
      - subscribe: FFE1
      - write: { characteristic: FFE1, value: "text:hello", type: command }
      - wait: 60s
      - expect: { peripheral-received: { characteristic: FFE1, value: "text:hello" } }
      - expect: { notification: FFE1 }

    """

    func testStreamedJSONIsTheInMemoryDocument() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        try FileText.write(Self.manyEvents, to: dir + "/long/many-events.yaml")
        for extra in [[], ["--jobs", "2"]] {
            let arguments = ["run", Self.scenarios, dir + "/long", "--seed", "1", "-q"] + extra
            let memory = CLIHarness()
            XCTAssertEqual(memory.run(arguments + ["--json", "out/timeline.json"]), .passed, memory.out + memory.err)
            let streamed = CLIHarness()
            XCTAssertEqual(streamed.run(arguments + ["--json", dir + "/out/timeline.json"], writesFiles: true), .passed, streamed.out + streamed.err)
            let whole = try XCTUnwrap(memory.files["out/timeline.json"])
            let json = try FileText.readBytes(dir + "/out/timeline.json")
            XCTAssertGreaterThan(whole.count, 5_000_000, "a document with many events")
            XCTAssertTrue(json == whole, "streamed and in-memory --json differ (\(extra))")
            XCTAssertEqual(streamed.err, memory.err)
        }
    }

    /// No run selected on this tier still makes a whole document; an empty events list too.
    func testTheDocumentsPiecesMatchTheRenderer() {
        func run(_ events: [TimelineEvent]) -> ScenarioRun {
            ScenarioRun(result: ScenarioResult(name: "n", file: "n.yaml", tags: ["t"], seed: 1, tier: .sim, outcome: .passed, virtualTime: .zero,
                                               steps: [], timeline: events, captures: []))
        }
        let e = TimelineEvent(time: Instant(nanoseconds: 5), device: "central", kind: .att, text: "a\nb", direction: "sent", bytes: [1, 2])
        for runs in [[], [run([])], [run([e]), run([]), run([e, e])]] {
            var text = RunReports.timelineHead(tier: .sim)
            for (k, r) in runs.enumerated() {
                text += k == 0 ? "[" : ","
                RunReports.writeTimelineScenario(r) { text += $0 }
            }
            text += RunReports.timelineTail(runs: runs.count)
            XCTAssertEqual(text, RunReports.timeline(runs, tier: .sim).render(pretty: true) + "\n")
        }
    }

    func testAJSONFileThatCannotBeWrittenIsReported() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        try FileText.write("x", to: dir + "/file")
        let cli = CLIHarness()
        let status = cli.run(["run", Self.scenarios + "/seeds/hm10-serial.yaml", "-q", "--json", dir + "/file/timeline.json"], writesFiles: true)
        XCTAssertEqual(status, .badInput)
        XCTAssertTrue(cli.err.contains("\(dir)/file: cannot create directory") || cli.err.contains("\(dir)/file/timeline.json: cannot create"), cli.err)
    }

    /// The built `blelab` (beside the test bundle, as `swift build --build-tests` makes it),
    /// killed with SIGKILL while it spools a `--json` timeline: its temporary folder is left
    /// empty, and was at every look while it ran. The spool's file has no name there; the test
    /// waits until the process holds it open (seen in /proc/PID/fd as a deleted file in that
    /// folder), then kills.
    func testARunKilledWhileSpoolingLeavesNoFile() throws {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let blelab = bundle.appendingPathComponent("blelab").path
        guard FileManager.default.isExecutableFile(atPath: blelab) else {
            return XCTFail("no blelab executable at \(blelab): `swift build --build-tests` builds it beside the tests")
        }
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let tmp = dir + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: false)
        let scenario = dir + "/long.yaml"
        try Self.manyEvents.replacingOccurrences(of: "wait: 60s", with: "wait: 10h").write(toFile: scenario, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: blelab)
        process.arguments = ["run", scenario, "--json", dir + "/timeline.json"]
        process.environment = ["TMPDIR": tmp]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let fds = "/proc/\(process.processIdentifier)/fd"
        var spooling = false
        var looks = 0
        while !spooling, process.isRunning, looks < 200_000 {
            looks += 1
            for fd in (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? [] {
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: fds + "/" + fd) else { continue }
                // An unnamed file (O_TMPFILE) shows as "/#INODE (deleted)" in its folder; an
                // unlinked one as its old name, "(deleted)" after it.
                if target.hasPrefix(tmp + "/"), target.hasSuffix(" (deleted)") { spooling = true }
            }
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp), [], "the spool has no name in the folder")
        }
        XCTAssertTrue(spooling, "blelab held its spool open (a 10-hour scenario is still running)")
        XCTAssertTrue(process.isRunning)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp), [], "nothing left behind")
    }
}

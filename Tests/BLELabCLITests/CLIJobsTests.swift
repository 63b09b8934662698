import BLELab
@testable import BLELabCLI
import BLELabTestSupport
import BLERuntime
import ScenarioEngine
import ScenarioFormat
import XCTest

/// `blelab run --jobs N`: on the sim, the runs of N jobs leave exactly what one job leaves — the
/// same JUnit, timeline, captures (device and air) under the same names, and the same console
/// lines in the same order; only wall times differ (the console's and JUnit's `time`). And how the jobs are set up: one backend
/// per job where the tier can split, else one at a time with a note.
final class CLIJobsTests: XCTestCase {
    /// The repository's scenarios/ folder: every kind of scenario the suite has.
    private static var scenarios: String {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/BLELabCLITests/CLIJobsTests.swift
        return parts.joined(separator: "/") + "/scenarios"
    }

    /// Wall times ("1.0ms wall", "in 7.0ms wall") are the one thing allowed to differ.
    private func withoutWallTimes(_ text: String) -> String {
        var out = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            for i in words.indices.dropLast() where words[i + 1] == "wall" { words[i] = "W" }
            out += words.joined(separator: " ") + "\n"
        }
        return out
    }

    func testFourJobsWriteWhatOneJobWrites() throws {
        let arguments = ["run", Self.scenarios, "--repeat", "2", "--junit", "out/junit.xml", "--json", "out/timeline.json",
                         "--capture", "out/captures", "--capture-air", "out/air"]
        let serial = CLIHarness()
        let serialStatus = serial.run(arguments)
        let parallel = CLIHarness()
        let parallelStatus = parallel.run(arguments + ["--jobs", "4"])

        XCTAssertEqual(parallelStatus, serialStatus)
        XCTAssertEqual(serialStatus, .passed, serial.out)
        XCTAssertEqual(parallel.err, serial.err)
        XCTAssertEqual(withoutWallTimes(parallel.out), withoutWallTimes(serial.out))
        XCTAssertEqual(Set(parallel.files.keys), Set(serial.files.keys), "the same files under the same names")
        XCTAssertGreaterThan(serial.files.keys.filter { $0.hasSuffix(".btsnoop") }.count, 100)
        XCTAssertGreaterThan(serial.files.keys.filter { $0.hasSuffix(".air.pcap") }.count, 50)
        let junit = try XCTUnwrap(serial.files["out/junit.xml"])
        XCTAssertTrue(String(decoding: junit, as: UTF8.self).contains("<property name=\"virtual_time\""))
        for (path, bytes) in serial.files.sorted(by: { $0.key < $1.key }) {
            if path.hasSuffix("junit.xml") {
                // JUnit's times are wall seconds: everything else is equal, virtual times too.
                XCTAssertEqual(junitWithoutWallTimes(parallel.files[path] ?? []), junitWithoutWallTimes(bytes), "\(path) differs between --jobs 1 and --jobs 4")
                continue
            }
            XCTAssertTrue(parallel.files[path] == bytes, "\(path) differs between --jobs 1 and --jobs 4")
        }
    }

    func testJobsAreParsedAndChecked() throws {
        func jobs(_ arguments: [String]) throws -> Int {
            guard case let .run(run) = try CLIArguments.parse(["run"] + arguments) else { throw UsageError("not run") }
            return run.jobs
        }
        XCTAssertEqual(try jobs([]), 1)
        XCTAssertEqual(try jobs(["--jobs", "4"]), 4)
        XCTAssertEqual(try jobs(["--jobs=3"]), 3)
        XCTAssertEqual(try jobs(["-j", "2"]), 2)
        XCTAssertEqual(try jobs(["--jobs", "auto"]), 0)
        XCTAssertEqual(try jobs(["--jobs", "0"]), 0)
        for bad in ["-1", "two", ""] {
            XCTAssertThrowsError(try jobs(["--jobs", bad])) { error in
                XCTAssertEqual("\(error)", "--jobs takes a count of scenarios to run at once (1 or more), or 0 or auto for one per CPU, not '\(bad)'")
            }
        }
        XCTAssertGreaterThanOrEqual(BLELabCLI.onlineCPUs(), 1)
    }

    func testTheLongestRunsStartFirstAndSkippedOnesLast() {
        func scenario(_ name: String, timeout: TimeSpan?, requires: [TransportTier]? = nil) -> Scenario {
            var s = Scenario(name: name, file: name + ".yaml", timeout: timeout, peripherals: [], steps: [])
            s.requires = requires
            return s
        }
        let runs = [scenario("a", timeout: .seconds(5)), scenario("b", timeout: .seconds(90)), scenario("c", timeout: nil),
                    scenario("d", timeout: .seconds(60), requires: [.sim]), scenario("e", timeout: .seconds(60))]
        XCTAssertEqual(BLELabCLI.startOrder(runs, tier: .sim), [1, 3, 4, 2, 0], "by timeout (none: 10 s), ties in list order")
        XCTAssertEqual(BLELabCLI.startOrder(runs, tier: .socket), [1, 4, 2, 0, 3], "d skips on socket: last")
    }

    /// Results wait in memory for their turn: no run starts `window` or more places after the
    /// one the caller waits for, whatever the start order; every result comes, in list order.
    func testRunsStartWithinAWindowOfTheCallersProgress() {
        let lock = Lock()
        var consumed = 0
        var farthest = 0
        let count = 200, window = 8
        let runs = ParallelRuns<Int>(count: count, order: Array((0..<count).reversed()), window: window, workers: (0..<3).map { _ in
            { index in
                lock.locked { farthest = max(farthest, index - consumed) }
                return index * 2
            }
        })
        var results: [Int] = []
        for index in 0..<count {
            results.append(runs.result(index))
            lock.locked { consumed = index + 1 }
        }
        runs.join()
        XCTAssertEqual(results, (0..<count).map { $0 * 2 })
        // The test counts a result as taken a moment after ParallelRuns does: one place of slack.
        XCTAssertLessThanOrEqual(farthest, window, "a run started \(farthest) places ahead")
        XCTAssertGreaterThan(farthest, 1, "the reversed order was followed within the window")
    }

    /// A backend that splits into `parts` backends, each counting what it is asked.
    final class SplittingBackend: ScenarioBackend {
        let parts: Int
        let lock = Lock()
        var prepared: [Int] = []
        var labs = 0
        var shutDowns = 0
        var children: [SplittingBackend] = []
        var tier: TransportTier { .sim }
        init(parts: Int) { self.parts = parts }
        func prepare(deviceCount: Int) throws { lock.locked { prepared.append(deviceCount) } }
        func makeLab(seed: UInt64) throws -> Lab {
            lock.locked { labs += 1 }
            return try SimBackend().makeLab(seed: seed)
        }
        func shutDown() { lock.locked { shutDowns += 1 } }
        func jobBackends(_ jobs: Int, deviceCount: Int) -> JobBackends {
            children = (0..<min(jobs, parts)).map { _ in SplittingBackend(parts: 1) }
            return JobBackends(children, note: jobs > parts ? "only \(parts) fit" : nil)
        }
    }

    func testEachJobHasItsOwnBackendPreparedAndShutDownOnce() {
        let backend = SplittingBackend(parts: 2)
        let cli = CLIHarness(backend: { $0 == "split" ? backend : nil })
        XCTAssertEqual(cli.run(["run", "--transport", "split", "--jobs", "3", "--repeat", "3", ScenarioText.fixtures + "/passing"]), .passed)
        XCTAssertEqual(cli.err, "blelab: --jobs 3: only 2 fit\n")
        XCTAssertEqual(backend.children.count, 2)
        XCTAssertEqual(backend.prepared, [], "the backend split; its parts run")
        for child in backend.children {
            XCTAssertEqual(child.prepared.count, 1)
            XCTAssertEqual(child.shutDowns, 1)
        }
        XCTAssertEqual(backend.children.map(\.labs).reduce(0, +), 6, "2 scenarios × 3 repetitions, one lab each")
    }

    func testABackendThatCannotSplitRunsOneAtATimeAndSaysSo() {
        let backend = BackendLifecycleTests.CountingBackend()
        let cli = CLIHarness(backend: { $0 == "counting" ? backend : nil })
        XCTAssertEqual(cli.run(["run", "--transport", "counting", "--jobs", "2", ScenarioText.fixtures + "/passing"]), .passed)
        XCTAssertEqual(cli.err, "blelab: --jobs 2: sim gives no job controllers of its own: one scenario at a time\n")
        XCTAssertEqual(backend.prepared.count, 1)
        XCTAssertEqual(backend.shutDowns, 1)
        // More jobs than runs: no more jobs than runs, and with one run no note.
        XCTAssertEqual(cli.run(["run", "--transport", "counting", "--jobs", "8", ScenarioText.fixtures + "/passing/echo.yaml"]), .passed)
        XCTAssertEqual(cli.err, "")
    }
}

#if canImport(Glibc)
import Glibc
#endif
import BLELab
import BLELabCLI
import BLERuntime
import Foundation
import LabTiers
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// What every TierTests test shares: the checkout, the venv check, runs of scenario files on a
/// backend, helper processes that must be gone afterwards.
///
/// TierTests need the venv (`make venv`; `make test-tiers` makes it first). Without it every test
/// that needs RootCanal or Bumble fails — on purpose, not skipped — saying how to make it.
enum Tiers {
    static var root: String {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }

    /// The checkout's tier environment (BUILD_DIR / VENV from the environment, as make passes them).
    static var environment: TierEnvironment {
        func variable(_ name: String) -> String? { ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        return TierEnvironment(root: root, buildDirectory: variable("BUILD_DIR"), venv: variable("VENV"))
    }

    static var fixtures: String { root + "/Tests/TierTests/Fixtures" }

    /// Why the venv cannot be used (nil when it can).
    static var venvProblem: String? {
        do {
            _ = try environment.requireVenv()
            _ = try environment.rootCanalBinary()
            return nil
        } catch {
            return "TierTests need RootCanal and Bumble: \(error). Run 'make test-tiers' (it makes the venv first) "
                + "or 'make venv' before 'swift test --filter TierTests'."
        }
    }

    /// LabTiers' `--transport` values as the executable offers them to the CLI (main.swift).
    static func transports(environment: @escaping @autoclosure () -> TierEnvironment = .current()) -> TransportOffer {
        TransportOffer(backend: { try TransportCatalog.backend(for: $0, environment: environment()) },
                       summary: TransportCatalog.offered, helpLines: TransportCatalog.helpLines)
    }

    /// A backend for a `--transport` value, on this checkout.
    static func backend(_ transport: String) throws -> RealControllerBackend {
        guard let backend = try TransportCatalog.backend(for: transport, environment: environment) as? RealControllerBackend else {
            throw HelperError("\(transport) is not an external transport")
        }
        return backend
    }

    /// Loads scenario files (paths relative to the checkout).
    static func scenarios(_ paths: [String]) throws -> [Scenario] {
        try paths.map { path in
            let full = path.hasPrefix("/") ? path : root + "/" + path
            return try Scenario.parse(FileText.read(full), file: path)
        }
    }

    /// Runs `scenarios` on `backend` as `blelab run` does: prepare once with the most devices, one
    /// lab per run, shut down at the end (also when a run throws).
    static func run(_ scenarios: [Scenario], on backend: ScenarioBackend, options: RunOptions = RunOptions()) throws -> [ScenarioResult] {
        try backend.prepare(deviceCount: scenarios.map { $0.peripherals.count + 1 }.max() ?? 1)
        defer { backend.shutDown() }
        let runner = ScenarioRunner(backend: backend)
        return scenarios.map { runner.run($0, options: options) }
    }

    /// Asserts that nothing of process group `pgid` is alive.
    static func assertGroupGone(_ pgid: pid_t, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(ProcessGroup.members(pgid), [], "\(what): processes left in group \(pgid)", file: file, line: line)
        XCTAssertFalse(ProcessGroup.hasLiveMembers(pgid), what, file: file, line: line)
    }

    /// The helper processes this test process started and has not stopped.
    static var runningHelpers: [pid_t] { HelperRegistry.recorded }
}

/// A test that needs the venv: without it, each test fails at once with what to do (a failure,
/// not a skip: CI must not pass without having run them) and its body does not run.
class TierTestCase: XCTestCase {
    override func invokeTest() {
        if let problem = Tiers.venvProblem {
            XCTFail(problem)
            return
        }
        super.invokeTest()
    }
}

/// One JSON object per line, as the Bumble peers print them.
struct JSONLines {
    var objects: [[String: Any]]

    init(_ text: String) {
        objects = text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{"), let data = line.data(using: .utf8) else { return nil }
            return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        }
    }

    func events(_ name: String) -> [[String: Any]] { objects.filter { $0["event"] as? String == name } }
    func first(_ name: String) -> [String: Any]? { events(name).first }
}

/// A Bumble peer (tools/bumble_peripheral.py, tools/bumble_central.py) run with the venv's
/// Python through LabTiers' process management; its JSON lines are read from its stdout log.
final class BumblePeer {
    let process: HelperProcess

    init(_ tool: String, _ arguments: [String], name: String) throws {
        let environment = Tiers.environment
        process = try HelperProcess(name: name, argv: [try environment.requireVenv(), try environment.requireTool(tool)] + arguments,
                                    logDirectory: environment.logDirectory, logName: "test-\(name)-\(getpid())")
    }

    var lines: JSONLines { JSONLines(process.stdoutText()) }

    /// Waits (polling its log) until it has printed `event`.
    @discardableResult
    func waitFor(_ event: String, timeout: Double = 20) throws -> [String: Any] {
        try process.waitUntil("'\(event)' line", timeout: timeout) { lines.first(event) }
    }

    func stop() -> String { process.stop() }

    var log: String { "\(process.commandLine)\n\(process.tail(lines: 40))" }
}

extension Lab {
    /// Runs the loop until `condition` holds, at most `seconds`; fails the test when it does not.
    @discardableResult
    func runUntil(_ what: String, seconds: Int64 = 10, file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) -> Bool {
        let held = run(within: .seconds(seconds), until: condition)
        XCTAssertTrue(held, "timed out after \(seconds) s waiting for \(what)", file: file, line: line)
        return held
    }
}

/// A fresh temporary directory, removed when the test ends.
func temporaryDirectory(_ test: XCTestCase) throws -> String {
    var template = Array("/tmp/blelab-tiers-XXXXXX".utf8CString)
    let path: String? = template.withUnsafeMutableBufferPointer { buffer in
        guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
        return String(cString: base)
    }
    guard let path else { throw HelperError("cannot create a temporary directory") }
    test.addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
    return path
}

extension ScenarioResult {
    /// The failure's one-line summary, or "passed" / "skipped".
    var verdict: String {
        switch outcome {
        case .passed: return "passed"
        case let .skipped(reason): return "skipped: \(reason)"
        case let .failed(f): return f.summary
        }
    }
}

import BLERuntime
import ScenarioEngine

/// Where the command line writes, and what it knows about its terminal: injected, so tests can
/// check colour, progress and streams without a terminal.
public struct Console {
    public var out: (String) -> Void
    public var err: (String) -> Void
    /// Whether standard output is a terminal (isatty).
    public var isTerminal: Bool
    /// The environment (for NO_COLOR).
    public var environment: [String: String]

    public init(out: @escaping (String) -> Void, err: @escaping (String) -> Void, isTerminal: Bool = false,
                environment: [String: String] = [:]) {
        self.out = out
        self.err = err
        self.isTerminal = isTerminal
        self.environment = environment
    }

    /// Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org).
    public var usesColour: Bool { isTerminal && environment["NO_COLOR"] == nil }
}

/// The human output of `blelab run`: one line per scenario run, failure details under it, a
/// progress line on long runs (terminal only), and a summary.
public final class ConsoleReporter {
    public enum Verbosity { case quiet, normal, verbose }

    let console: Console
    let verbosity: Verbosity
    /// What the reproduce line adds after the seed: the run's `--transport`, `--central` and
    /// `--peripheral` when they are not the defaults.
    var rerunOptions = ""
    private var progressShown = false

    /// Runs at least this long (wall) or this many get a progress line.
    static let progressAfter = TimeSpan.seconds(1)
    static let progressCount = 20

    public init(console: Console, verbosity: Verbosity = .normal) {
        self.console = console
        self.verbosity = verbosity
    }

    private func paint(_ text: String, _ code: String) -> String {
        console.usesColour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    /// Before run `position` (0-based) of `total`, `elapsed` (wall) into the whole run.
    public func willRun(_ name: String, position: Int, total: Int, elapsed: TimeSpan) {
        guard console.isTerminal, verbosity != .verbose, total > 1, total >= Self.progressCount || elapsed >= Self.progressAfter else { return }
        let line = "[\(position + 1)/\(total)] \(name)"
        console.out("\r\u{1B}[2K" + (line.count > 100 ? String(line.prefix(99)) + "…" : line))
        progressShown = true
    }

    private func clearProgress() {
        guard progressShown else { return }
        console.out("\r\u{1B}[2K")
        progressShown = false
    }

    public func finished(_ run: ScenarioRun) {
        clearProgress()
        let r = run.result
        // Only the sim has a virtual clock; on real controllers the lab's clock is the wall's.
        let times = r.tier == .sim ? "\(Self.wall(run.wallTime)) wall / \(r.virtualTime) virtual" : Self.wall(run.wallTime)
        switch r.outcome {
        case .passed:
            if verbosity != .quiet { console.out("\(paint("PASS", "32")) \(run.displayName) (\(r.file)) \(times)\n") }
            if verbosity != .quiet, let failure = r.failedAsExpected { console.out("  failed as expected: \(failure.summary)\n") }
        case let .skipped(reason):
            if verbosity != .quiet { console.out("\(paint("SKIP", "33")) \(run.displayName) (\(r.file)): \(reason)\n") }
        case let .failed(failure):
            console.out("\(paint("FAIL", "31;1")) \(run.displayName) (\(r.file)) \(times)\n")
            console.out(failure.report(indent: "  ") + "\n")
            console.out("  reproduce: \(reproduceLine(r))\n")
        }
        if verbosity == .verbose {
            for s in r.steps {
                let mark = s.outcome == .passed ? "ok" : s.outcome == .failed ? paint("failed", "31") : "not run"
                console.out("    \(s.start) step \(s.step.index) \(s.step.text): \(mark)\(s.note.map { " — \($0)" } ?? "")\n")
            }
        }
    }

    /// The command that runs `r` again: its file, its seed and the run's tier and seats.
    public func reproduceLine(_ r: ScenarioResult) -> String {
        RunReports.reproduceLine(r, rerunOptions: rerunOptions)
    }

    public func summary(_ runs: [ScenarioRun], wall: TimeSpan) {
        clearProgress()
        let failed = runs.filter { $0.result.failure != nil }.count
        let skipped = runs.filter(\.result.isSkipped).count
        let passed = runs.count - failed - skipped
        let virtual = runs.reduce(TimeSpan.zero) { $0 + $1.result.virtualTime }
        var parts = ["\(passed) passed", "\(failed) failed"]
        if skipped > 0 { parts.append("\(skipped) skipped") }
        let onSim = runs.allSatisfy { $0.result.tier == .sim }
        let text = "\(parts.joined(separator: ", ")) (\(runs.count) run\(runs.count == 1 ? "" : "s")) in \(Self.wall(wall))"
            + (onSim ? " wall / \(virtual) virtual" : "")
        console.out(paint(text, failed > 0 ? "31;1" : "32;1") + "\n")
    }

    /// Wall times with one decimal: `12.3ms`, `1.2s`, `850µs`.
    public static func wall(_ t: TimeSpan) -> String {
        let ns = max(0, t.nanoseconds)
        func tenths(_ unit: Int64, _ name: String) -> String {
            let v = (ns * 10 + unit / 2) / unit
            return "\(v / 10).\(v % 10)\(name)"
        }
        if ns >= 1_000_000_000 { return tenths(1_000_000_000, "s") }
        if ns >= 1_000_000 { return tenths(1_000_000, "ms") }
        return tenths(1_000, "µs")
    }
}

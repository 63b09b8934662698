import BLELab
import BLERuntime
import ScenarioEngine
import ScenarioFormat
import Transport

/// One scenario run of a `blelab run`: the result, which repetition it was, and its wall time
/// (measured by the command-line layer; reports that must be deterministic leave it out).
public struct ScenarioRun {
    public var result: ScenarioResult
    /// 1-based.
    public var repetition: Int
    public var repetitions: Int
    public var wallTime: TimeSpan

    public init(result: ScenarioResult, repetition: Int = 1, repetitions: Int = 1, wallTime: TimeSpan = .zero) {
        self.result = result
        self.repetition = repetition
        self.repetitions = repetitions
        self.wallTime = wallTime
    }

    /// The scenario's name, with the repetition and seed when repeated.
    public var displayName: String {
        repetitions > 1 ? "\(result.name) (run \(repetition) of \(repetitions), seed \(result.seed))" : result.name
    }
}

/// The files a run writes: JUnit XML, the JSON timeline, btsnoop captures. They depend only on
/// the runs' results (virtual times), so equal runs give equal files, but for JUnit's `time`
/// attributes: those are the wall times the command line measured around each run.
public enum RunReports {
    // MARK: JUnit XML

    /// One suite per tier, one testcase per scenario run. `time` is wall seconds, what a CI
    /// dashboard shows (each run's, and `wall`, the whole run's, for the suite); the virtual time,
    /// the seed, the tier and the line that reruns a failure are properties of each case
    /// (`rerunOptions`: what the reproduce line adds after the seed, as the console prints it).
    public static func junit(_ runs: [ScenarioRun], tier: TransportTier, rerunOptions: String = "", wall: TimeSpan? = nil) -> JUnitReport {
        let cases = runs.map { run -> JUnitCase in
            let r = run.result
            let outcome: JUnitCase.Outcome
            switch r.outcome {
            case .passed: outcome = .passed
            case let .skipped(reason): outcome = .skipped(reason: reason)
            case let .failed(f):
                let message = "expected \(f.expected); seen \(f.seen)"
                let details = "seed \(r.seed)\n" + f.report(indent: "")
                outcome = f.kind == .setup ? .error(message: message, details: details, type: f.kind.rawValue)
                    : .failed(message: message, details: details, type: f.kind.rawValue)
            }
            let properties = [
                JUnitProperty("seed", String(r.seed)),
                JUnitProperty("tier", tier.rawValue),
                JUnitProperty("virtual_time", JUnitReport.seconds(r.virtualTime.seconds)),
                JUnitProperty("reproduce", reproduceLine(r, rerunOptions: rerunOptions)),
            ]
            return JUnitCase(name: run.displayName, className: className(for: r.file), time: run.wallTime.seconds, outcome: outcome,
                             output: r.failedAsExpected.map { "failed as expected: \($0.summary)" }, properties: properties)
        }
        let virtual = runs.reduce(TimeSpan.zero) { $0 + $1.result.virtualTime }
        let suite = JUnitSuite(name: "blelab.\(tier)", cases: cases, time: wall.map(\.seconds),
                               properties: [JUnitProperty("tier", tier.rawValue), JUnitProperty("virtual_time", JUnitReport.seconds(virtual.seconds))])
        return JUnitReport(name: "blelab", suites: [suite])
    }

    /// `scenarios/seed/hm10.yaml` → `scenarios.seed.hm10`.
    static func className(for file: String) -> String {
        var path = file.hasSuffix(".yaml") ? String(file.dropLast(5)) : file
        while path.hasPrefix("./") { path.removeFirst(2) }
        while path.hasPrefix("/") { path.removeFirst() }
        return String(path.map { $0 == "/" ? "." : $0 })
    }

    // MARK: Shared by every report

    /// The command that runs `r` again: its file, its seed, and `rerunOptions` (the run's
    /// `--transport`, `--central` and `--peripheral` when not the defaults). The console, JUnit
    /// and HTML reports all print this line.
    public static func reproduceLine(_ r: ScenarioResult, rerunOptions: String) -> String {
        "blelab run \(r.file) --seed \(r.seed)\(rerunOptions)"
    }

    /// A run's outcome (`passed`, `failed`, `skipped`) and its `failure` object, as the JSON
    /// timeline and the HTML report both give them: for a failure its kind, step (index, line,
    /// text and a "step N (file:line): text" `where`), expected, seen, time (`time_ns` and as
    /// text) and the recent packets; for a skip the reason; for a pass that failed as expected
    /// (`expect-failure:`) `as_expected`; else null.
    static func verdict(_ r: ScenarioResult) -> (outcome: String, failure: JSONValue) {
        switch r.outcome {
        case .passed:
            return ("passed", r.failedAsExpected.map { .object([("as_expected", .string($0.summary))]) } ?? .null)
        case let .skipped(reason):
            return ("skipped", .object([("reason", .string(reason))]))
        case let .failed(f):
            return ("failed", .object([
                ("kind", .string(f.kind.rawValue)),
                ("step", f.step.map { .int(Int64($0.index)) } ?? .null),
                ("line", f.step.map { .int(Int64($0.location.line)) } ?? .null),
                ("text", f.step.map { .string($0.text) } ?? .null),
                ("where", .string(f.step.map { "step \($0.index) (\($0.location.fileAndLine)): \($0.text)" } ?? "setup")),
                ("expected", .string(f.expected)),
                ("seen", .string(f.seen)),
                ("time_ns", .int(f.time.nanoseconds)),
                ("time", .string(f.time.description)),
                ("recent_packets", .array(f.recentPackets.map { .string($0) })),
            ]))
        }
    }

    // MARK: JSON timeline

    /// `{"tool", "transport", "scenarios": [{name, file, tags, seed, repetition, outcome,
    /// virtual_time_ns, failure, steps: [...], events: [...]}]}`; times in nanoseconds of virtual time.
    public static func timeline(_ runs: [ScenarioRun], tier: TransportTier) -> JSONValue {
        .object([
            ("tool", "blelab"),
            ("transport", .string(tier.rawValue)),
            ("scenarios", .array(runs.map(scenario))),
        ])
    }

    private static func scenario(_ run: ScenarioRun) -> JSONValue { scenario(run, events: true) }

    private static func scenario(_ run: ScenarioRun, events: Bool) -> JSONValue {
        let r = run.result
        let (outcome, failure) = verdict(r)
        return .object([
            ("name", .string(r.name)),
            ("file", .string(r.file)),
            ("tags", .array(r.tags.map { .string($0) })),
            ("seed", r.seed <= UInt64(Int64.max) ? .int(Int64(r.seed)) : .string(String(r.seed))),
            ("repetition", .int(Int64(run.repetition))),
            ("outcome", .string(outcome)),
            ("virtual_time_ns", .int(r.virtualTime.nanoseconds)),
            ("failure", failure),
            ("steps", .array(r.steps.map(step))),
            ("events", .array(events ? r.events.map(event) : [])),
        ])
    }

    /// The timeline document up to its `scenarios` array (`TimelineJSONFile`): what `timeline`
    /// renders (pretty) before the array's `[`.
    static func timelineHead(tier: TransportTier) -> String {
        let whole = JSONValue.object([("tool", "blelab"), ("transport", .string(tier.rawValue)), ("scenarios", .array([]))]).render(pretty: true)
        return String(whole.dropLast("[]\n}".count))
    }

    /// What follows the last scenario object (or the head, with none), to the final newline.
    static func timelineTail(runs: Int) -> String {
        runs == 0 ? "[]\n}\n" : "\n  ]\n}\n"
    }

    /// One run's scenario object as `timeline` renders it (pretty) inside `scenarios`, from the
    /// newline before it, given to `write` piece by piece: the events one at a time, as they are
    /// read back, so a run's events are never all in memory.
    static func writeTimelineScenario(_ run: ScenarioRun, write: (String) -> Void) {
        // The object with no events renders as `…"events": []\n}`: the events go where `[]` is.
        guard case let .object(members) = scenario(run, events: false) else { return }
        let empty = JSONValue.object(members).render(pretty: true)
        write("\n    " + indented(String(empty.dropLast("[]\n}".count)), by: 4))
        var count = 0
        for e in run.result.events {
            write((count == 0 ? "[" : ",") + "\n        " + indented(event(e).render(pretty: true), by: 8))
            count += 1
        }
        write(count == 0 ? "[]\n    }" : "\n      ]\n    }")
    }

    /// `text` (pretty JSON) with `spaces` more after each newline. JSON strings hold no raw
    /// newline (RFC 8259, 7), so every newline is the renderer's.
    private static func indented(_ text: String, by spaces: Int) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + String(repeating: " ", count: spaces))
    }

    private static func step(_ s: StepRecord) -> JSONValue {
        .object([
            ("index", .int(Int64(s.step.index))),
            ("line", .int(Int64(s.step.location.line))),
            ("text", .string(s.step.text)),
            ("start_ns", .int(s.start.nanoseconds)),
            ("end_ns", .int(s.end.nanoseconds)),
            ("outcome", .string(s.outcome.rawValue)),
            ("note", s.note.map { .string($0) } ?? .null),
        ])
    }

    private static func event(_ e: TimelineEvent) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("time_ns", .int(e.time.nanoseconds)), ("device", .string(e.device)), ("kind", .string(e.kind.rawValue)), ("text", .string(e.text)),
        ]
        if let direction = e.direction { members.append(("direction", .string(direction))) }
        if let bytes = e.bytes { members.append(("bytes", .string(bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")))) }
        if let step = e.step { members.append(("step", .int(Int64(step)))) }
        if let layer = e.layer { members.append(("layer", .string(layer))) }
        if let violation = e.violation { members.append(("violation", .string(violation))) }
        if let answer = e.answer { members.append(("answer", .string(answer))) }
        return .object(members)
    }

    // MARK: Captures

    /// Where each device's capture of each run goes (`CaptureNames`), for runs known together.
    public static func captureFiles(_ runs: [ScenarioRun], directory: String) -> [(path: String, capture: DeviceCapture)] {
        var names = CaptureNames(files: runs.map(\.result.file), directory: directory)
        return runs.flatMap { names.paths(for: $0) }
    }

    static func stem(of file: String) -> String {
        let name = file.split(separator: "/").last.map(String.init) ?? file
        return name.hasSuffix(".yaml") ? String(name.dropLast(5)) : name
    }

    static func dashed(_ file: String) -> String {
        var path = file.hasSuffix(".yaml") ? String(file.dropLast(5)) : file
        while path.hasPrefix("./") { path.removeFirst(2) }
        while path.hasPrefix("/") { path.removeFirst() }
        return String(path.map { $0 == "/" ? "-" : $0 })
    }
}

/// The capture files of a `blelab run --capture DIR`: `DIR/<file>[.run<k>].<device>.btsnoop`,
/// where `<file>` is the scenario file's name without `.yaml`, or its whole path dashed when
/// another selected file has the same name (`scenarios/a/x.yaml` → `scenarios-a-x`). Names are
/// fixed for the whole selection before the first run, so no run's capture replaces another's:
/// should names still coincide (dashed paths can: `a-b/x.yaml` and `a/b/x.yaml`; a device id
/// with a dot can meet another file's name), the later file in sorted order takes `-2`, `-3`…
/// after its name, or the later capture after its device.
public struct CaptureNames {
    public let directory: String
    /// Each selected file's `<file>` part.
    private let bases: [String: String]
    /// Paths handed out so far.
    private var taken: Set<String> = []

    /// `files`: every scenario file the run selected, in the order they run (sorted).
    public init(files: [String], directory: String) {
        self.directory = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        var unique: [String] = []
        var seen: Set<String> = []
        for file in files where seen.insert(file).inserted { unique.append(file) }
        var stems: [String: Int] = [:]
        for file in unique { stems[RunReports.stem(of: file), default: 0] += 1 }
        let natural = unique.map { stems[RunReports.stem(of: $0), default: 0] > 1 ? RunReports.dashed($0) : RunReports.stem(of: $0) }
        let reserved = Set(natural)
        var assigned: Set<String> = []
        var bases: [String: String] = [:]
        for (file, name) in zip(unique, natural) {
            var chosen = name
            var n = 2
            while assigned.contains(chosen) || (chosen != name && reserved.contains(chosen)) {
                chosen = "\(name)-\(n)"
                n += 1
            }
            assigned.insert(chosen)
            bases[file] = chosen
        }
        self.bases = bases
    }

    /// Where `run`'s air capture goes (`--capture-air`): `DIR/<file>[.run<k>].air.pcap`.
    public mutating func airPath(for run: ScenarioRun) -> String {
        claim(stem: stem(of: run) + ".air", suffix: ".pcap")
    }

    /// `DIR/<file>[.run<k>]` for `run`.
    private func stem(of run: ScenarioRun) -> String {
        stem(file: run.result.file, repetition: run.repetition, repetitions: run.repetitions)
    }

    private func stem(file: String, repetition: Int, repetitions: Int) -> String {
        let base = bases[file] ?? RunReports.stem(of: file)
        return "\(directory)/\(base)" + (repetitions > 1 ? ".run\(repetition)" : "")
    }

    /// The path of one device's capture of the `repetition`-th run of `file`, before it runs (the
    /// runner streams it there, `RunOptions.captureFile`): the path `paths(for:)` would give it,
    /// asked in the same order.
    public mutating func path(file: String, repetition: Int, repetitions: Int, device: String) -> String {
        claim(stem: "\(stem(file: file, repetition: repetition, repetitions: repetitions)).\(device)", suffix: ".btsnoop")
    }

    /// `stem` + `suffix`, or `stem-2` + `suffix` and so on when that was handed out already.
    private mutating func claim(stem: String, suffix: String) -> String {
        var path = stem + suffix
        var n = 2
        while taken.contains(path) {
            path = "\(stem)-\(n)\(suffix)"
            n += 1
        }
        taken.insert(path)
        return path
    }

    /// The paths of `run`'s captures, each one not handed out before.
    public mutating func paths(for run: ScenarioRun) -> [(path: String, capture: DeviceCapture)] {
        let prefix = stem(of: run)
        return run.result.captures.map { capture in
            (claim(stem: "\(prefix).\(capture.device)", suffix: ".btsnoop"), capture)
        }
    }
}

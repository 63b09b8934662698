#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLELab
import BLERuntime
import ScenarioEngine
import ScenarioFormat
import Transport

/// `blelab`'s commands over an injected console, wall clock and file writer, so that everything
/// but `main.swift`'s few lines is testable.
///
/// Exit status: 0 all passed (or valid), 1 some scenario failed, 2 bad input or usage — and with
/// bad input nothing runs.
public struct BLELabCLI {
    public enum Status: Int32 {
        case passed = 0
        case failed = 1
        case badInput = 2
    }

    public var console: Console
    /// A monotonic wall clock, read only to report wall time per scenario run.
    public var wallClock: () -> Instant
    /// Writes a file, creating missing folders.
    public var writeFile: ([UInt8], String) throws -> Void
    /// `mkdir -p`, to check the capture folder before running anything.
    public var makeDirectory: (String) throws -> Void
    /// `--capture`: each device's btsnoop file is written as the run goes, straight to the file
    /// system (so a long run does not keep its packets), and `--json`'s timeline too (each run's
    /// events spooled to a temporary file, `$TMPDIR` or /tmp, then appended to the document once
    /// the run is done); false: kept, and written through `writeFile` after each run, the
    /// timeline after the last (same bytes; for a CLI whose files are not the file system's).
    public var streamsCaptures = true
    /// What `--version` prints (the executable passes one naming the commit it was built from).
    public var version: String
    /// The `--transport` values: the backend each makes, and how help and messages list them.
    public var transports: TransportOffer
    /// The stacks that can take the central's seat or serve a peripheral.
    public var seats: SeatOffer

    public init(console: Console, wallClock: @escaping () -> Instant = { .zero },
                writeFile: @escaping ([UInt8], String) throws -> Void = { try FileText.write($0, to: $1) },
                makeDirectory: @escaping (String) throws -> Void = { try FileText.makeDirectories($0) },
                version: String = BLELabVersion.text(commit: "", localChanges: false, note: "built as a library"),
                transports: TransportOffer = .simOnly, seats: SeatOffer = .none) {
        self.console = console
        self.wallClock = wallClock
        self.writeFile = writeFile
        self.makeDirectory = makeDirectory
        self.version = version
        self.transports = transports
        self.seats = seats
    }

    /// The text for a help topic: `run`'s lists this build's transports and seats.
    public func help(_ topic: HelpTopic) -> String {
        Help.text(topic, transports: transports, seats: seats)
    }

    /// Runs the command line (without the program name) and returns the exit status.
    public func main(_ arguments: [String]) -> Status {
        let command: CLICommand
        do { command = try CLIArguments.parse(arguments) } catch {
            console.err("blelab: \(error)\n")
            return .badInput
        }
        switch command {
        case let .help(topic):
            console.out(help(topic) + "\n")
            return .passed
        case .version:
            console.out(version + "\n")
            return .passed
        case let .run(arguments): return run(arguments)
        case let .validate(paths): return validate(paths)
        case let .list(arguments): return list(arguments)
        case let .importCapture(arguments): return importCapture(arguments)
        case let .verdicts(arguments): return verdicts(arguments)
        case .schema:
            console.out(ScenarioJSONSchema.text)
            return .passed
        }
    }

    // MARK: Loading

    /// Every scenario in `paths`, or nil after printing every error.
    private func load(_ paths: [String]) -> [Scenario]? {
        let paths = paths.isEmpty ? [CLIArguments.defaultPath] : paths
        let (files, missing) = ScenarioFiles.collect(paths)
        let (scenarios, invalid) = ScenarioFiles.load(files)
        let errors = missing + invalid
        if !errors.isEmpty {
            for error in errors { console.err("\(error)\n") }
            let broken = Set(errors.map(\.file)).count
            console.err("blelab: \(errors.count) error\(errors.count == 1 ? "" : "s") in \(broken) file\(broken == 1 ? "" : "s")\n")
            return nil
        }
        if files.isEmpty {
            console.err("blelab: no scenario files (*.yaml) in \(paths.joined(separator: ", "))\n")
            return nil
        }
        return scenarios
    }

    // MARK: Commands

    func validate(_ paths: [String]) -> Status {
        guard let scenarios = load(paths) else { return .badInput }
        console.out("\(scenarios.count) scenario file\(scenarios.count == 1 ? "" : "s") valid\n")
        return .passed
    }

    func list(_ arguments: ListArguments) -> Status {
        guard let scenarios = load(arguments.paths) else { return .badInput }
        let selection = ScenarioSelection(tags: arguments.tags, filter: arguments.filter)
        if let why = Self.nothingSelected(scenarios, by: selection) {
            console.err(why)
            return .badInput
        }
        if arguments.controllers {
            console.out("\(Self.controllersNeeded(selection.select(scenarios)))\n")
            return .passed
        }
        for s in selection.select(scenarios) {
            console.out("\(s.name)  [\(s.tags.joined(separator: ", "))]  \(s.file)\n")
        }
        return .passed
    }

    /// How many controllers the vhci tier needs to run `scenarios`: one for the central plus the
    /// most peripherals one of them declares, never fewer than 2. Scenarios that don't run on
    /// vhci (`requires:` leaves it out) are not counted.
    static func controllersNeeded(_ scenarios: [Scenario]) -> Int {
        let most = scenarios.filter { $0.runs(on: .vhci) }.map(\.peripherals.count).max() ?? 0
        return max(2, 1 + most)
    }

    /// `--peripheral none:ID@ADDRESS` (UnoccupiedPeripheralProvider); nil for any other value.
    static func unoccupiedPeripheral(_ value: String) throws -> UnoccupiedPeripheralProvider? {
        if value == "none" {
            throw UsageError("--peripheral none: say which peripheral the program outside the lab serves and where: none:ID@ADDRESS "
                + "(e.g. none:sensor@C0:11:22:33:44:55)")
        }
        guard value.hasPrefix("none:") else { return nil }
        return try UnoccupiedPeripheralProvider(argument: String(value.dropFirst("none:".count)))
    }

    func run(_ arguments: RunArguments) -> Status {
        let found: ScenarioBackend?
        do { found = try transports.backend(arguments.transport) } catch {
            console.err("blelab: transport \(arguments.transport): \(error)\nblelab: nothing was run\n")
            return .badInput
        }
        guard let backend = found else {
            console.err("blelab: transport \(arguments.transport) is not available (\(transports.summary))\nblelab: nothing was run\n")
            return .badInput
        }
        let roles: ScenarioRoles
        do {
            // `none` in either seat is the CLI's own: a program outside the lab plays it.
            let centralNone = arguments.central == "none"
            let peripheralNone = try arguments.peripheral.flatMap(Self.unoccupiedPeripheral)
            if let central = arguments.central, peripheralNone != nil {
                // What a program outside the lab serves is judged on the central's HCI, so BLELab's own
                // central must play it.
                throw UsageError("--peripheral none is judged on BLELab's central, so it does not go with --central \(central): give one")
            }
            var found = try seats.roles(centralNone ? nil : arguments.central, peripheralNone != nil ? nil : arguments.peripheral)
            if centralNone { found.central = UnoccupiedCentral() }
            if let peripheralNone { found.peripheral = peripheralNone }
            roles = found
        } catch {
            console.err("blelab: \(error)\nblelab: nothing was run\n")
            return .badInput
        }
        if !roles.isEmpty, backend.tier == .sim {
            console.err("blelab: --central/--peripheral put a stack or program outside the lab in a seat, which meets the lab's "
                + "devices only on real controllers in real time, not on the sim: give --transport too (hci-user:1,2,… in the "
                + "micro-VM, see docs/bluez.md)\nblelab: nothing was run\n")
            return .badInput
        }
        if arguments.captureAir != nil, backend.tier != .sim {
            console.err("blelab: --capture-air records the sim's air, and only the sim has one: on --transport \(arguments.transport) "
                + "the radio is a real or external controller's (use --capture for its HCI, or a sniffer)\nblelab: nothing was run\n")
            return .badInput
        }
        guard let scenarios = load(arguments.paths) else {
            console.err("blelab: nothing was run\n")
            return .badInput
        }
        for directory in [arguments.capture, arguments.captureAir].compactMap({ $0 }) {
            do { try makeDirectory(directory) } catch {
                console.err("blelab: \(error)\nblelab: nothing was run\n")
                return .badInput
            }
        }
        let selection = ScenarioSelection(tags: arguments.tags, filter: arguments.filter, shard: arguments.shard)
        if let why = Self.nothingSelected(scenarios, by: selection) {
            console.err(why + "blelab: nothing was run\n")
            return .badInput
        }
        let selected = selection.select(scenarios)
        let reporter = ConsoleReporter(console: console, verbosity: arguments.quiet ? .quiet : arguments.verbose ? .verbose : .normal)
        if arguments.transport != TransportTier.sim.rawValue { reporter.rerunOptions += " --transport \(arguments.transport)" }
        if let central = arguments.central { reporter.rerunOptions += " --central \(central)" }
        if let peripheral = arguments.peripheral { reporter.rerunOptions += " --peripheral \(peripheral)" }
        if selected.isEmpty, let shard = arguments.shard {
            // Not a typo: with more shards than scenarios, some shards have none.
            console.out("no scenario in shard \(shard) (\(ScenarioSelection(tags: arguments.tags, filter: arguments.filter).select(scenarios).count) selected)\n")
        }
        let repeats = max(1, arguments.repeatCount)
        let runnable = selected.filter { $0.runs(on: backend.tier) }
        let deviceCount = runnable.map { roles.deviceCount(for: $0) }.max() ?? 1
        let backends = jobBackends(backend, arguments: arguments, roles: roles, runs: runnable.count * repeats, deviceCount: deviceCount)
        defer { for b in backends { b.shutDown() } }
        if !runnable.isEmpty, let failure = prepare(backends, deviceCount: deviceCount) {
            console.err("blelab: \(failure)\nblelab: nothing was run\n")
            return .badInput
        }
        let runners = backends.map { ScenarioRunner(backend: $0, roles: roles) }
        var captureNames = arguments.capture.map { CaptureNames(files: selected.map(\.file), directory: $0) }
        var airNames = arguments.captureAir.map { CaptureNames(files: selected.map(\.file), directory: $0) }
        if !roles.isEmpty { console.err("blelab: \(roles.description); BLELab's devices on \(backend.description)\n") }
        // Every run in the order a single job takes them: scenario by scenario, repetition by repetition.
        let plan = selected.flatMap { scenario in (1...repeats).map { (scenario: scenario, repetition: $0) } }
        let options: RunOptions = {
            var options = RunOptions(keepsCaptures: arguments.capture != nil, recordsTimeline: arguments.json != nil || arguments.html != nil)
            options.capturesAir = arguments.captureAir != nil
            // Streamed: each run's timeline goes to a temporary file as it is recorded.
            if streamsCaptures, options.recordsTimeline {
                options.timelineDirectory = Self.temporaryDirectory()
                Self.raiseOpenFileLimit()
            }
            return options
        }()
        // Jobs read the wall clock from their threads: one at a time, so that an injected clock
        // (a counter in the tests) need not be thread-safe.
        let clockLock = Lock(), clock = self.wallClock
        let wallClock = { clockLock.locked(clock) }
        // Captures streamed to their files as the runs go (bounded memory): each device's path is
        // handed out here, in the order one job would ask for them (a run's peripherals, then its
        // central), so that --jobs names every file as a single job does. A device nobody
        // foresaw (another stack's seat) gets its name when it asks, under a lock.
        var streamedPaths: [[String: String]] = []
        if captureNames != nil, streamsCaptures {
            streamedPaths = plan.map { entry in
                guard entry.scenario.runs(on: backend.tier) else { return [:] }
                var paths: [String: String] = [:]
                for id in entry.scenario.peripherals.map(\.id) + [PeripheralSchema.centralID] where paths[id] == nil {
                    paths[id] = captureNames!.path(file: entry.scenario.file, repetition: entry.repetition, repetitions: repeats, device: id)
                }
                return paths
            }
        }
        let lateNamesLock = Lock()
        var lateNames = captureNames
        func perform(_ index: Int, on runner: ScenarioRunner) -> ScenarioRun {
            let (scenario, repetition) = plan[index]
            var each = options
            each.seed = (arguments.seed ?? scenario.seed ?? Scenario.defaultSeed) &+ UInt64(repetition - 1)
            if !streamedPaths.isEmpty {
                let foreseen = streamedPaths[index]
                each.captureFile = { device in
                    foreseen[device] ?? lateNamesLock.locked {
                        lateNames!.path(file: scenario.file, repetition: repetition, repetitions: repeats, device: device)
                    }
                }
            }
            let began = wallClock()
            let result = runner.run(scenario, options: each)
            return ScenarioRun(result: result, repetition: repetition, repetitions: repeats, wallTime: wallClock() - began)
        }
        let start = wallClock()
        let parallel = runners.count > 1
            ? ParallelRuns<ScenarioRun>(count: plan.count, order: Self.startOrder(plan.map(\.scenario), tier: backend.tier),
                                        workers: runners.map { runner in { perform($0, on: runner) } }) : nil
        var runs: [ScenarioRun] = []
        // --json streamed: each run's part of the document is written once it is done.
        let jsonFile = streamsCaptures ? arguments.json.map { TimelineJSONFile(path: $0, tier: backend.tier) } : nil
        var capturePaths: [[(device: String, path: String)]] = []
        var status = Status.passed
        for index in plan.indices {
            reporter.willRun(plan[index].scenario.name, position: index, total: plan.count, elapsed: wallClock() - start)
            var run = parallel?.result(index) ?? perform(index, on: runners[0])
            var result = run.result
            for failure in result.captureFailures + result.timelineFailures {
                console.err("blelab: \(failure)\n")
                status = .badInput
            }
            if !streamedPaths.isEmpty {
                // The streamed files: the foreseen ones, then any a seat asked for late.
                capturePaths.append(streamedPaths[index].sorted { $0.key < $1.key }.map { (device: $0.key, path: $0.value) })
            } else {
                capturePaths.append([])
            }
            if captureNames != nil {
                for (path, capture) in captureNames!.paths(for: run) {
                    capturePaths[capturePaths.count - 1].append((device: capture.device, path: path))
                    guard write(BTSnoopWriter.encode(capture.packets), to: path) else { status = .badInput; continue }
                }
                result.captures = []   // written: no need to keep them
                run.result = result
            }
            if airNames != nil, let air = result.airCapture {
                if !write(air, to: airNames!.airPath(for: run)) { status = .badInput }
                result.airCapture = nil
                run.result = result
            }
            reporter.finished(run)
            if let jsonFile {
                jsonFile.append(run)
                if let failure = result.timelineSpool?.failure, !result.timelineFailures.contains(failure) {
                    console.err("blelab: \(failure)\n")
                    status = .badInput
                }
                // Written: the HTML report, if any, reads the spool back at the end.
                if arguments.html == nil { run.result.timelineSpool = nil }
            }
            runs.append(run)
        }
        parallel?.join()
        if let path = arguments.junit,
           !write(Array(RunReports.junit(runs, tier: backend.tier, rerunOptions: reporter.rerunOptions, wall: wallClock() - start).xml.utf8), to: path) {
            status = .badInput
        }
        if let jsonFile {
            if let failure = jsonFile.close() {
                console.err("blelab: \(failure)\n")
                status = .badInput
            }
        } else if let path = arguments.json, !write(Array((RunReports.timeline(runs, tier: backend.tier).render(pretty: true) + "\n").utf8), to: path) {
            status = .badInput
        }
        let wall = wallClock() - start
        if let path = arguments.html {
            let links = zip(runs, capturePaths).map { run, captures in
                HTMLReport.Links(captures: captures.map { (device: $0.device, path: HTMLReport.relativePath($0.path, fromPageAt: path, cwd: currentDirectory())) },
                                 reproduce: reporter.reproduceLine(run.result))
            }
            if !write(Array(HTMLReport.render(runs, links: links, tier: backend.tier, wall: wall).utf8), to: path) { status = .badInput }
        }
        reporter.summary(runs, wall: wall)
        if status == .badInput { return status }
        return runs.contains { $0.result.failure != nil } ? .failed : .passed
    }

    /// Each run's spooled timeline holds a descriptor until the run has been written (to the end,
    /// with `--html`; and runs finished early by other jobs wait for the ones before them): up to
    /// one per run. Raises the soft limit on open files to the hard one, as Go's runtime does at
    /// start. A spool that still cannot be made is reported with its run (exit 2).
    static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(openFilesResource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(openFilesResource, &limit)
    }

    /// Where spooled timelines go: `$TMPDIR`, else /tmp.
    static func temporaryDirectory() -> String {
        if let value = getenv("TMPDIR"), case let dir = String(cString: value), !dir.isEmpty { return dir }
        return "/tmp"
    }

    /// The backends `run` uses at once: `--jobs` of them where the tier can give each job
    /// controllers of its own on an air of its own (ScenarioBackend.jobBackends), never more than
    /// there are runs; one, with a note on stderr, where it cannot, and with a seat (--central,
    /// --peripheral), which is one stack or program outside the lab.
    private func jobBackends(_ backend: ScenarioBackend, arguments: RunArguments, roles: ScenarioRoles, runs: Int,
                             deviceCount: Int) -> [ScenarioBackend] {
        let asked = arguments.jobs == 0 ? Self.onlineCPUs() : arguments.jobs
        let jobs = min(asked, max(1, runs))
        guard jobs > 1 else { return [backend] }
        guard roles.isEmpty else {
            console.err("blelab: --jobs \(asked): \(roles.description) is one seat, so the scenarios run one at a time\n")
            return [backend]
        }
        let split = backend.jobBackends(jobs, deviceCount: deviceCount)
        if let note = split.note { console.err("blelab: --jobs \(asked): \(note)\n") }
        return split.backends.isEmpty ? [backend] : split.backends
    }

    /// Prepares every backend, one after the other, on this thread: what went wrong, or nil. On
    /// failure the caller shuts them all down. Not side by side on threads of their own: a helper
    /// started with PR_SET_PDEATHSIG (RootCanal through die_with_parent.py, Bumble's controllers
    /// with --die-with-parent) gets its signal when the *thread* that started it ends, and so
    /// would die as soon as a starting thread had done.
    private func prepare(_ backends: [ScenarioBackend], deviceCount: Int) -> String? {
        for backend in backends {
            do { try backend.prepare(deviceCount: deviceCount) } catch {
                return "\(backend.description) could not start: \(error)"
            }
        }
        return nil
    }

    /// The order in which `--jobs` starts the runs: the longest-bounded first (by `timeout:`, what
    /// a scenario may last, 10 s for one without; runs that skip on this tier last), the rest in list order, so that a
    /// long run does not start at the end while the others are done (on real controllers, in real
    /// time, one scenario of a minute bounds the whole suite). Only the start order: results are
    /// reported in list order.
    static func startOrder(_ runs: [Scenario], tier: TransportTier) -> [Int] {
        func bound(_ s: Scenario) -> TimeSpan { s.runs(on: tier) ? s.timeout ?? .seconds(10) : .zero }
        return runs.indices.sorted { a, b in
            let (x, y) = (bound(runs[a]), bound(runs[b]))
            return x != y ? x > y : a < b
        }
    }

    /// Online CPUs, for `--jobs 0`/`auto`.
    static func onlineCPUs() -> Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// When `--tag`/`--filter` keep none of `scenarios` (a typo, most likely: in CI it must not
    /// pass as a run of nothing), what to print: what was asked, and the tags or names there
    /// are. Nil when they keep some (an empty shard is no typo).
    static func nothingSelected(_ scenarios: [Scenario], by selection: ScenarioSelection) -> String? {
        let asked = ScenarioSelection(tags: selection.tags, filter: selection.filter)
        guard !scenarios.isEmpty, asked.select(scenarios).isEmpty else { return nil }
        let allTags = Set(scenarios.flatMap(\.tags)).sorted(by: ScenarioFiles.pathOrder)
        let loaded = "\(scenarios.count) loaded"
        let tagged = "tagged " + selection.tags.joined(separator: " or ")
        let filter = selection.filter ?? ""
        var text = "blelab: no scenario selected: "
        switch (selection.tags.isEmpty, filter.isEmpty) {
        case (false, true): text += "none of the \(loaded) is \(tagged)"
        case (true, false): text += "no name among the \(loaded) contains '\(filter)'"
        default: text += "none of the \(loaded) is \(tagged) and has a name containing '\(filter)'"
        }
        let hints = selection.tags.filter { !allTags.contains($0) }.compactMap { Spelling.suggestion(for: $0, in: allTags) }
        if !hints.isEmpty { text += "; " + hints.joined(separator: "; ") }
        text += "\n"
        if !selection.tags.isEmpty {
            text += "blelab: the tags are: " + (allTags.isEmpty ? "none (no scenario has tags)" : allTags.joined(separator: ", ")) + "\n"
        }
        if !filter.isEmpty {
            text += "blelab: the scenarios are:\n"
            for s in scenarios { text += "  \(s.name)  [\(s.tags.joined(separator: ", "))]\n" }
        }
        return text
    }

    /// The working directory, for the report's relative links (`/` if it cannot be read).
    private func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return "/" }
        return String(cString: buffer)
    }

    private func write(_ bytes: [UInt8], to path: String) -> Bool {
        do {
            try writeFile(bytes, path)
            return true
        } catch {
            console.err("blelab: \(error)\n")
            return false
        }
    }
}

#if canImport(Glibc)
private let openFilesResource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#else
private let openFilesResource = RLIMIT_NOFILE
#endif

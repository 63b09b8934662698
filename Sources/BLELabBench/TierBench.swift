import BLELab
import BLELabCLI
import BLERuntime
import LabTiers
import ScenarioEngine
import ScenarioFormat

#if canImport(Glibc)
import Glibc
#endif

// The socket tier's figures: RootCanal and Bumble run in real time, so these are wall times of
// what the sim does in virtual time. Names are prefixed with the tier: rootcanal_…, bumble_….

/// `blelab-bench --quick` (`make bench BENCH_QUICK=1`, for CI): every figure from fewer rounds,
/// so from noisier minima and medians; the figures to quote come from a plain run.
enum BenchMode {
    static let quick = CommandLine.arguments.dropFirst().contains("--quick")
    /// The arguments after the program name, without `--quick`.
    static let arguments = Array(CommandLine.arguments.dropFirst().filter { $0 != "--quick" })

    /// `full` rounds, or a tenth of them (at least one) when quick.
    static func rounds(_ full: Int) -> Int { quick ? max(1, full / 10) : full }
}

/// `--tiers LIST [FOLDER]` / `--tier TRANSPORT [FOLDER]` with `--no-suite` (no suite figures),
/// `--jobs N` (the suite with `blelab run --jobs N`: suite_<tier>_s; default 1) and
/// `--serial-suite` (also one scenario at a time: <tier>_suite_wall_s). The exit status.
func tierBenchMain(flag: String, options: [String]) -> Int32 {
    var rest: [String] = []
    var suite = true, serial = false, jobs = 1
    var index = 0
    while index < options.count {
        switch options[index] {
        case "--no-suite": suite = false
        case "--serial-suite": serial = true
        case "--quick": break
        case "--jobs":
            index += 1
            guard index < options.count, let n = Int(options[index]), n >= 1 else {
                print("benchmark failed: --jobs takes a count of 1 or more")
                return 2
            }
            jobs = n
        default: rest.append(options[index])
        }
        index += 1
    }
    let tiers = flag == "--tier" ? [rest.first ?? "sim"] : (rest.first ?? "rootcanal,bumble").split(separator: ",").map(String.init)
    do {
        for tier in tiers {
            try benchTier(tier, folder: rest.dropFirst().first ?? "scenarios", suite: suite, jobs: jobs, serialSuite: serial)
        }
    } catch {
        print("benchmark failed: \(error)")
        return 1
    }
    return 0
}

/// One tier: its helper's start, one scan→notify flow from a fresh lab (median of 10), the whole
/// scenario suite once with `jobs` jobs, and one at a time too when `serialSuite` (neither
/// unless `suite`: CI runs the suites in `make e2e-socket` already), the helper's stop.
func benchTier(_ transport: String, folder: String, suite runsSuite: Bool = true, jobs: Int = 1, serialSuite: Bool = false) throws {
    guard let backend = try TransportCatalog.backend(for: transport) as? RealControllerBackend else {
        throw BenchError(description: "\(transport) is not an external transport")
    }
    // Figures are named after the tier: rootcanal_…, bumble_…, and vhci_… for the user channel.
    let prefix = transport.split(separator: ":").first.map(String.init) ?? transport
    let name = prefix == "hci-user" ? "vhci" : prefix
    let (files, collectErrors) = ScenarioFiles.collect([folder])
    let (scenarios, loadErrors) = ScenarioFiles.load(files)
    guard collectErrors.isEmpty, loadErrors.isEmpty, !scenarios.isEmpty else {
        throw BenchError(description: "cannot load \(folder): \((collectErrors + loadErrors).map(\.description).joined(separator: "; "))")
    }
    let runnable = scenarios.filter { $0.runs(on: backend.tier) }
    let devices = max(2, runnable.map { $0.peripherals.count + 1 }.max() ?? 2)

    let start = try wallSeconds { try backend.prepare(deviceCount: devices) }
    defer { backend.shutDown() }
    print("\(name)_start_ms: \(String(format2: start * 1000)) ms")

    // Power-on, advertise, scan with a filter, connect, discover, subscribe, one notification:
    // on fresh controllers each round (a new lab opens new connections).
    var flows: [Double] = []
    for round in 0..<10 {
        var rig: HeartRateRig?
        let wall = try wallSeconds {
            let lab = try backend.makeLab(seed: UInt64(round + 1))
            let made = try HeartRateRig(lab: lab, recordsTraffic: true)
            rig = made
            try made.setUp()
            made.sensor.host.gattServer.notify([0x00, 72], handle: made.valueHandle, to: made.peripheral.serverConnection)
            guard lab.run(within: .seconds(5), until: { made.received == 1 }) else { throw BenchError(description: "\(name) flow: no notification") }
        }
        rig?.lab.shutDown()
        flows.append(wall)
    }
    flows.sort()
    print("\(name)_flow_wall_ms: \(String(format2: flows[flows.count / 2] * 1000)) ms")
    print("\(name)_flow_wall_min_ms: \(String(format2: flows[0] * 1000)) ms")

    if runsSuite, serialSuite || jobs == 1 {
        try benchTierSuite(runnable, backend: backend, name: name)
    }
    let stop = wallSeconds { backend.shutDown() }
    print("\(name)_stop_ms: \(String(format2: stop * 1000)) ms")
    if runsSuite, jobs > 1 {
        try benchJobsSuite(transport, folder: folder, jobs: jobs, name: name)
    }
}

/// The whole folder as `blelab run --jobs N --transport T FOLDER` runs it, helpers started and
/// stopped included: suite_<tier>_s, and the verdicts (a failure fails the benchmark, after the
/// figures are printed; the report goes to stderr).
private func benchJobsSuite(_ transport: String, folder: String, jobs: Int, name: String) throws {
    var out = ""
    let console = Console(out: { out += $0 }, err: { fputs($0, stderr) })
    let transports = TransportOffer(backend: { try TransportCatalog.backend(for: $0) }, summary: TransportCatalog.offered,
                                    helpLines: TransportCatalog.helpLines)
    var status = BLELabCLI.Status.passed
    let wall = wallSeconds {
        status = BLELabCLI(console: console, transports: transports).main(["run", "--jobs", "\(jobs)", "--transport", transport, "--quiet", folder])
    }
    let summary = out.split(separator: "\n").last.map(String.init) ?? "no summary"
    print("suite_\(name)_s: \(String(format2: wall)) s")
    print("suite_\(name)_jobs: \(jobs)")
    print("suite_\(name)_verdicts: \(summary.firstRange(of: " (").map { String(summary[..<$0.lowerBound]) } ?? summary)")
    guard status == .passed else {
        fputs(out, stderr)
        throw BenchError(description: "\(name) with --jobs \(jobs): \(summary)")
    }
}

/// The whole runnable suite once on the tier: its wall time and how many passed (a failure fails
/// the benchmark, after both figures are printed).
private func benchTierSuite(_ runnable: [ScenarioFormat.Scenario], backend: RealControllerBackend, name: String) throws {
    let runner = ScenarioRunner(backend: backend)
    var passed = 0
    var failures: [String] = []
    let suite = wallSeconds {
        for scenario in runnable {
            let result = runner.run(scenario)
            if result.passed { passed += 1 } else { failures.append("\(scenario.name): \(result.failure.map { "\($0)" } ?? "?")") }
        }
    }
    print("\(name)_suite_wall_s: \(String(format2: suite)) s")
    print("\(name)_suite_passed: \(passed) of \(runnable.count) scenarios")
    guard failures.isEmpty else { throw BenchError(description: "\(name): \(failures.joined(separator: "; "))") }
}

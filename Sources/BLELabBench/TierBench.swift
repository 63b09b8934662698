import BLELab
import BLELabCLI
import BLERuntime
import LabTiers
import ScenarioEngine
import ScenarioFormat

// The socket tier's figures: RootCanal and Bumble run in real time, so these are wall times of
// what the sim does in virtual time. Names are prefixed with the tier: rootcanal_…, bumble_….

/// One tier: its helper's start, one scan→notify flow from a fresh lab (median of 10), the whole
/// scenario suite once (unless `suite` is false: CI runs the suites in `make e2e-socket` already),
/// the helper's stop.
func benchTier(_ transport: String, folder: String, suite runsSuite: Bool = true) throws {
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

    if runsSuite {
        try benchTierSuite(runnable, backend: backend, name: name)
    }
    let stop = wallSeconds { backend.shutDown() }
    print("\(name)_stop_ms: \(String(format2: stop * 1000)) ms")
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

// BLELab benchmarks. One figure per line, `name: value unit`, so runs compare line by line.
// Wall time is read here, in the benchmark driver only; the lab itself runs on virtual time.
import BLELab
import BLELabCLI
import BLERuntime
import BLEWire
import GAP
import GATT
import Glibc
import ScenarioEngine
import ScenarioFormat

let heartRateService: BluetoothUUID = 0x180D
let heartRateMeasurement: BluetoothUUID = 0x2A37

func wallSeconds(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    let d = start.duration(to: clock.now)
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
}

/// A heart-rate sensor and a phone on one air, connected and subscribed to 2A37.
final class HeartRateRig {
    let lab: Lab
    let sensor: LabDevice
    let phone: LabDevice
    var central: Connection!
    var peripheral: Connection!
    var valueHandle: UInt16 = 0
    var received = 0

    convenience init(seed: UInt64, recordsTraffic: Bool, interval: TimeSpan = .milliseconds(30)) throws {
        try self.init(lab: Lab(seed: seed), recordsTraffic: recordsTraffic, interval: interval)
    }

    /// The rig in `lab`: on the sim, or on external controllers (socket tier).
    init(lab: Lab, recordsTraffic: Bool, interval: TimeSpan = .milliseconds(30)) throws {
        self.lab = lab
        sensor = try lab.addDevice("sensor", configuration: HostConfiguration(deviceName: "HRM"), recordsTraffic: recordsTraffic)
        let params = ConnectionParameters(interval: interval, supervisionTimeout: .seconds(4))
        phone = try lab.addDevice("phone", configuration: HostConfiguration(connectionParameters: params), recordsTraffic: recordsTraffic)
        let handles = try sensor.host.gattServer.addService(GATTService(uuid: heartRateService, characteristics: [
            GATTCharacteristic(uuid: heartRateMeasurement, properties: [.notify], value: [0x00, 60]),
        ]))
        valueHandle = handles.characteristics[0].valueHandle
    }

    /// Power on, advertise, scan for 180D, connect, discover, write, subscribe.
    func setUp() throws {
        try lab.powerOn()
        try lab.wait { done in
            sensor.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "HRM", services: [heartRateService]),
                                                                  interval: .milliseconds(100)), completion: done)
        }.get()
        var found: ScanReport?
        try lab.wait { done in
            phone.host.startScanning(ScanConfiguration(services: [heartRateService]), onReport: { found = found ?? $0 }, completion: done)
        }.get()
        guard lab.run(within: .seconds(2), until: { found != nil }), let target = found else { throw BenchError(description: "no advertiser found") }
        try lab.wait { done in phone.host.stopScanning(completion: done) }.get()
        sensor.host.onConnection = { [unowned self] in self.peripheral = $0 }
        central = try lab.wait { done in phone.host.connect(to: target.address, completion: done) }.get()
        let services = try lab.wait { done in central.client.discoverAll(completion: done) }.get()
        guard let hrm = services.first(where: { $0.uuid == heartRateService })?.characteristic(heartRateMeasurement) else {
            throw BenchError(description: "2A37 not discovered")
        }
        // A write with response to the CCCD is the subscription; count notifications from here.
        central.client.onNotification = { [unowned self] _ in self.received += 1 }
        try lab.wait { done in central.client.subscribe(to: hrm, completion: done) }.get()
        guard lab.run(within: .seconds(1), until: { self.peripheral != nil }) else { throw BenchError(description: "no peripheral connection") }
    }
}

/// Simulated seconds per wall second for a whole 60 s heart-rate session (1 notification/s).
func benchHeartRateSession() throws {
    var best = Double.infinity
    var simulated = 0.0
    for round in 0..<BenchMode.rounds(5) {
        let wall = try wallSeconds {
            let rig = try HeartRateRig(seed: UInt64(round + 1), recordsTraffic: true)
            try rig.setUp()
            let start = rig.lab.loop.now
            var bpm: UInt8 = 60
            for second in 1...60 {
                rig.lab.loop.schedule(at: start + .seconds(Int64(second))) {
                    bpm = bpm == 60 ? 61 : 60
                    rig.sensor.host.gattServer.notify([0x00, bpm], handle: rig.valueHandle, to: rig.peripheral.serverConnection)
                }
            }
            rig.lab.run(for: .seconds(61))
            guard rig.received == 60 else { throw BenchError(description: "heart-rate session delivered \(rig.received) of 60") }
            simulated = rig.lab.loop.now.seconds
        }
        best = min(best, wall)
    }
    // The whole session in virtual time: set-up (advertising, scan, connect, discovery) + 61 s.
    print("hr_session_sim_seconds: \(String(format2: simulated)) s")
    print("hr_session_wall_ms: \(String(format2: best * 1000)) ms")
    print("hr_session_speed: \(Int(simulated / best)) x")
}

/// Wall time of one complete flow from a fresh lab: power-on, advertise, scan with a filter,
/// connect, discover, write with response, subscribe, one notification received.
func benchFullFlow() throws {
    var times: [Double] = []
    for round in 0..<BenchMode.rounds(200) {
        let wall = try wallSeconds {
            let rig = try HeartRateRig(seed: UInt64(round + 1), recordsTraffic: true)
            try rig.setUp()
            rig.sensor.host.gattServer.notify([0x00, 72], handle: rig.valueHandle, to: rig.peripheral.serverConnection)
            guard rig.lab.run(within: .seconds(1), until: { rig.received == 1 }) else { throw BenchError(description: "flow: no notification") }
        }
        times.append(wall)
    }
    times.sort()
    print("full_flow_wall_median_ms: \(String(format2: times[times.count / 2] * 1000)) ms")
    print("full_flow_wall_p90_ms: \(String(format2: times[times.count * 9 / 10] * 1000)) ms")
}

/// Notifications per wall second through the whole stack: GATT server → ATT → L2CAP → HCI ACL →
/// sim controller → air → sim controller → HCI ACL → reassembly → ATT → GATT client.
func benchNotificationThroughput() throws {
    // Best of three rounds on fresh rigs: one round's figure swings by ±30 % with what else the
    // machine does (these machines share their cores), the best is the stack's own speed.
    var best = 0.0
    for round in 0..<BenchMode.rounds(3) {
        let rig = try HeartRateRig(seed: 9 + UInt64(round), recordsTraffic: false, interval: .microseconds(7500))
        try rig.setUp()
        let total = 400_000
        var sent = 0
        let link = rig.peripheral.link
        let server = rig.sensor.host.gattServer
        let connection = rig.peripheral.serverConnection
        let handle = rig.valueHandle
        rig.received = 0
        // Keep the host's queue fed without queueing everything at once (a real app waits for
        // "ready to update subscribers" the same way).
        func feed() {
            while sent < total, link.queuedFragments < 64 {
                server.notify([0x00, UInt8(truncatingIfNeeded: sent)], handle: handle, to: connection)
                sent += 1
            }
            if sent < total { rig.lab.loop.schedule(after: .microseconds(7500)) { feed() } }
        }
        let wall = wallSeconds {
            feed()
            _ = rig.lab.run(within: .seconds(100_000), until: { rig.received == total })
        }
        guard rig.received == total else { throw BenchError(description: "throughput: \(rig.received) of \(total) delivered") }
        best = max(best, Double(total) / wall)
    }
    print("notifications_per_s: \(Int(best)) 1/s")
}

/// The whole scenarios/ folder on the sim, files already parsed (what `make e2e` runs after the
/// build), and the 60 s heart-rate scenario alone. Best of several rounds.
func benchScenarioSuite(folder: String) throws {
    let (files, collectErrors) = ScenarioFiles.collect([folder])
    let (scenarios, loadErrors) = ScenarioFiles.load(files)
    guard collectErrors.isEmpty, loadErrors.isEmpty, !scenarios.isEmpty else {
        throw BenchError(description: "cannot load \(folder): \((collectErrors + loadErrors).map(\.description).joined(separator: "; "))")
    }
    let runner = ScenarioRunner()
    func runAll(_ list: [Scenario]) throws {
        for scenario in list {
            let result = runner.run(scenario)
            guard result.passed else { throw BenchError(description: "scenario failed: \(scenario.name)") }
        }
    }
    var suite = Double.infinity
    for _ in 0..<BenchMode.rounds(5) { suite = min(suite, try wallSeconds { try runAll(scenarios) }) }
    print("scenario_suite_count: \(scenarios.count) scenarios")
    print("scenario_suite_wall_ms: \(String(format2: suite * 1000)) ms")
    guard let heartRate = scenarios.first(where: { $0.file.hasSuffix("heart-rate.yaml") }) else {
        throw BenchError(description: "no heart-rate.yaml in \(folder)")
    }
    var single = Double.infinity
    for _ in 0..<BenchMode.rounds(10) { single = min(single, try wallSeconds { try runAll([heartRate]) }) }
    print("heart_rate_scenario_wall_ms: \(String(format2: single * 1000)) ms")
}

// `blelab-bench --tiers rootcanal,bumble [FOLDER]`: the socket tier's figures (make bench-tiers).
// `blelab-bench --tier TRANSPORT [FOLDER]`: one tier whose spec has commas (hci-user:0,1,2).
// Options after the flag (TierBench.swift): --no-suite, --jobs N, --serial-suite.
if let flag = CommandLine.arguments.dropFirst().first, flag == "--tiers" || flag == "--tier" {
    exit(tierBenchMain(flag: flag, options: Array(CommandLine.arguments.dropFirst(2))))
}

do {
    try benchHeartRateSession()
    try benchFullFlow()
    try benchNotificationThroughput()
    try benchScenarioSuite(folder: BenchMode.arguments.first ?? "scenarios")
} catch {
    print("benchmark failed: \(error)")
    exit(1)
}

extension String {
    init(format2 v: Double) {
        let scaled = Int64((v * 100).rounded())
        let frac = abs(scaled % 100)
        self = "\(scaled / 100).\(frac < 10 ? "0" : "")\(frac)"
    }
}

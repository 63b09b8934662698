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

/// The text of a crowded-air scenario: `count` advertisers (one of them the target, serving 180D
/// with a readable 2A38), a 1 s scan filtered on 180D, a connection to the target and a read.
/// Made as YAML text and parsed, so the figure covers what users run.
func crowdScenario(count: Int) throws -> Scenario {
    var text = """
    scenario: \(count) advertisers, one filtered scan, connect, read
    seed: 7
    timeout: 30s
    peripherals:
      target:
        advertise: { name: Target, services: [180D] }
        gatt:
          - service: 180D
            characteristics:
              - { uuid: 2A38, properties: [read], value: u8:1 }

    """
    for k in 1..<count {
        text += "  tag\(k):\n    advertise: { name: Tag\(k), services: [180F] }\n"
    }
    text += """
    central:
      - scan: { services: [180D], for: 1s }
      - expect: { discovered: target }
      - connect: target
      - discover: { services: [180D] }
      - read: 2A38
      - expect: { value: u8:1 }

    """
    return try Scenario.parse(text, file: "crowd-\(count).yaml")
}

/// Wall time of the crowd scenario through the runner (parsing excluded), best of `rounds`.
func crowdWall(count: Int, rounds: Int) throws -> Double {
    let scenario = try crowdScenario(count: count)
    let runner = ScenarioRunner()
    var best = Double.infinity
    for _ in 0..<rounds {
        var result: ScenarioResult?
        let wall = wallSeconds { result = runner.run(scenario) }
        guard let result, result.passed else {
            throw BenchError(description: "crowd of \(count) failed: \(result.map { "\($0.outcome)" } ?? "no result")")
        }
        best = min(best, wall)
    }
    return best
}

/// A crowded air: 1,000 and 10,000 advertisers, one filtered scan, connect, read. The ratio of
/// the two says whether the cost is linear in the number of devices (10 would be exactly linear).
/// `BLELAB_BENCH_CROWD=N1,N2` measures other sizes (the issue's 100, 1000, 3000, for instance).
func benchCrowd() throws {
    // Quick (CI): 1,000 advertisers only; the full figures come from plain `make bench`.
    let sizes = (getenv("BLELAB_BENCH_CROWD").map { String(cString: $0) } ?? (BenchMode.quick ? "1000" : "1000,10000"))
        .split(separator: ",").compactMap { Int($0) }
    var walls: [Int: Double] = [:]
    for n in sizes {
        // Best of three at every size, so that the ratio compares like with like (a first run
        // also pays for the heap's first growth).
        let wall = try crowdWall(count: n, rounds: BenchMode.rounds(3))
        walls[n] = wall
        print("crowd_\(n)_scan_wall_ms: \(String(format2: wall * 1000)) ms")
    }
    if let small = walls[1000], let large = walls[10_000] {
        print("crowd_scaling_ratio: \(String(format2: large / small)) x")
    }
}

/// How long a soak runs in virtual time: `24` or `24h` (hours), `6m` (minutes, for quick runs).
/// `label` names its figures: soak_24h_…, soak_6m_….
struct SoakLength {
    var seconds: Int
    var label: String

    init?(_ text: String) {
        if text.hasSuffix("m"), let minutes = Int(text.dropLast()), minutes > 0 {
            (seconds, label) = (minutes * 60, "\(minutes)m")
        } else if let hours = Int(text.hasSuffix("h") ? String(text.dropLast()) : text), hours > 0 {
            (seconds, label) = (hours * 3600, "\(hours)h")
        } else {
            return nil
        }
    }
}

/// A day-long session through the runner: a heart-rate strap notifying 2A37 at 1 Hz and a
/// sensor stream (FFF1) at 100 Hz on the same link, for `length` of virtual time.
func soakScenario(_ length: SoakLength) throws -> Scenario {
    try Scenario.parse(soakText(length), file: "soak-\(length.label).yaml")
}

func soakText(_ length: SoakLength) -> String {
    let seconds = length.seconds
    return """
    scenario: \(length.label) of heart rate at 1 Hz and a 100 Hz sensor stream on one link
    seed: 11
    peripherals:
      strap:
        advertise: { name: HRM, services: [180D] }
        gatt:
          - service: 180D
            characteristics:
              - uuid: 2A37
                properties: [notify]
                on-subscribe:
                  - notify-every: { characteristic: 2A37, interval: 1s, value: [u8:0, { random-u8: [59, 61] }] }
          - service: FFF0
            characteristics:
              - uuid: FFF1
                properties: [notify]
                on-subscribe:
                  - notify-every: { characteristic: FFF1, interval: 10ms, value: { counter-u8: 1 } }
    central:
      - scan: { services: [180D], for: 1s }
      - connect: strap
      - discover: all
      - subscribe: 2A37
      - subscribe: FFF1
      - wait: \(seconds)s
      - expect: { notification: 2A37, count: \(seconds), within: 2s }
      - expect: { notification: FFF1 }

    """
}

/// `blelab-bench --soak LENGTH` (SoakLength: `24`, `6m`): runs the soak in this process and prints its wall time. Its
/// peak RSS is measured by the parent (`benchSoak`), which runs it as a child so that nothing
/// else of the benchmark counts.
///
/// `--soak LENGTH --json`: the same soak through `blelab run --json` (the timeline of every event
/// written to a file in a temporary folder, removed after), figures `soak_<LENGTH>_json_…`.
func runSoak(_ length: SoakLength, json: Bool = false) throws {
    let name = json ? "soak_\(length.label)_json" : "soak_\(length.label)"
    if json {
        var template = Array("/tmp/blelab-soak-XXXXXX".utf8CString)
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) }) else {
            throw BenchError(description: "soak: cannot make a temporary folder")
        }
        defer {
            for file in ["soak.yaml", "timeline.json"] { unlink(dir + "/" + file) }
            rmdir(dir)
        }
        try FileText.write(soakText(length), to: dir + "/soak.yaml")
        var output = ""
        let console = Console(out: { output += $0 }, err: { output += $0 }, isTerminal: false, environment: [:])
        var status = BLELabCLI.Status.passed
        let wall = wallSeconds { status = BLELabCLI(console: console).main(["run", "-q", dir + "/soak.yaml", "--json", dir + "/timeline.json"]) }
        guard status == .passed else { throw BenchError(description: "soak --json failed: \(output)") }
        print("\(name)_hr_wall_s: \(String(format2: wall)) s")
    } else {
        let scenario = try soakScenario(length)
        var result: ScenarioResult?
        let wall = wallSeconds { result = ScenarioRunner().run(scenario) }
        guard let result, result.passed else {
            throw BenchError(description: "soak failed: \(result.map { "\($0.outcome)" } ?? "no result")")
        }
        print("\(name)_hr_wall_s: \(String(format2: wall)) s")
    }
    // VmHWM: this process image's peak resident set. (Not ru_maxrss of the parent's children:
    // Linux carries a child's RSS from before its exec, i.e. the parent's, into that figure.)
    guard let status = procText("/proc/self/status"),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kb = line.split(separator: " ").compactMap({ Int($0) }).first else {
        throw BenchError(description: "soak: no VmHWM in /proc/self/status")
    }
    print("\(name)_peak_rss_mb: \(String(format2: Double(kb) / 1024)) MB")
}

/// A /proc file's text (its size is not known ahead: read until the end).
func procText(_ path: String) -> String? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fd, &chunk, chunk.count)
        guard n > 0 else { break }
        bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The 24-hour soak in a child process (this executable with `--soak 24`), so that nothing else
/// of the benchmark counts in its peak resident set: the child prints its wall time and its peak
/// RSS. `BLELAB_BENCH_SOAK_HOURS` shortens it. Then the soak with `--json` at 1 h and 4 h (quick:
/// 6 minutes, as writing the timeline's JSON costs about a minute of wall time per hour of soak;
/// `BLELAB_BENCH_SOAK_JSON_HOURS`, comma-separated SoakLengths, chooses).
func benchSoak() throws {
    // Quick (CI): one hour; the day-long figures come from plain `make bench`.
    let hours = getenv("BLELAB_BENCH_SOAK_HOURS").flatMap { Int(String(cString: $0)) } ?? (BenchMode.quick ? 1 : 24)
    try soakChild(["--soak", "\(hours)"])
    // With the timeline on (`--json`): bounded too, at one length and at four times it.
    let jsonLengths = getenv("BLELAB_BENCH_SOAK_JSON_HOURS").map { String(cString: $0) } ?? (BenchMode.quick ? "6m" : "1,4")
    for text in jsonLengths.split(separator: ",") {
        guard SoakLength(String(text)) != nil else { throw BenchError(description: "BLELAB_BENCH_SOAK_JSON_HOURS: '\(text)' is no soak length (24, 24h or 6m)") }
        try soakChild(["--soak", String(text), "--json"])
    }
}

/// Runs this executable with `arguments` as a child and waits for it.
func soakChild(_ arguments: [String]) throws {
    fflush(stdout)
    let executable = CommandLine.arguments[0].contains("/") ? CommandLine.arguments[0] : "/proc/self/exe"
    let argv: [String] = [executable] + arguments
    var cArgs = argv.map { strdup($0) } + [nil]
    defer { for a in cArgs { free(a) } }
    var pid: pid_t = 0
    guard posix_spawn(&pid, "/proc/self/exe", nil, nil, &cArgs, environ) == 0 else { throw BenchError(description: "soak: cannot start a child") }
    var status: Int32 = 0
    guard waitpid(pid, &status, 0) == pid, status == 0 else { throw BenchError(description: "soak: the child failed (status \(status))") }
}

// `blelab-bench --tiers rootcanal,bumble [FOLDER]`: the socket tier's figures (make bench-tiers).
// `blelab-bench --tier TRANSPORT [FOLDER]`: one tier whose spec has commas (hci-user:0,1,2).
// Options after the flag (TierBench.swift): --no-suite, --jobs N, --serial-suite.
if let flag = CommandLine.arguments.dropFirst().first, flag == "--tiers" || flag == "--tier" {
    exit(tierBenchMain(flag: flag, options: Array(CommandLine.arguments.dropFirst(2))))
}

do {
    if CommandLine.arguments.dropFirst().first == "--crowd" {
        try benchCrowd()
        exit(0)
    }
    if CommandLine.arguments.dropFirst().first == "--notifications" {
        try benchNotificationThroughput()
        exit(0)
    }
    if CommandLine.arguments.dropFirst().first == "--l2cap" {
        try benchL2CAPThroughput()
        exit(0)
    }
    if CommandLine.arguments.dropFirst().first == "--soak" {
        let text = CommandLine.arguments.dropFirst(2).first ?? "24"
        guard let length = SoakLength(text) else { throw BenchError(description: "--soak \(text): a length is 24, 24h or 6m") }
        try runSoak(length, json: CommandLine.arguments.contains("--json"))
        exit(0)
    }
    try benchHeartRateSession()
    try benchFullFlow()
    try benchNotificationThroughput()
    try benchL2CAPThroughput()
    try benchScenarioSuite(folder: BenchMode.arguments.first ?? "scenarios")
    try benchCrowd()
    try benchSoak()
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

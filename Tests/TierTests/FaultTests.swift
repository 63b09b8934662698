#if canImport(Glibc)
import Glibc
#endif
import BLELab
import BLERuntime
import Foundation
import LabTiers
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// Faults on the socket tier: the controller process killed in the middle of a scenario, a
/// controller connection that closes or carries garbage, blelab itself interrupted or killed.
/// Each time the scenario that was running fails saying which transport and why, the next one
/// still runs (and fails fast when the controllers are gone), and no process is left behind.
final class FaultTests: TierTestCase {
    static let files = ["Tests/TierTests/Fixtures/fault/1-stream.yaml", "Tests/TierTests/Fixtures/fault/2-echo.yaml"]

    /// Runs the two fixtures one after the other on `backend` (prepared, shut down), with each
    /// run's wall time.
    private func runFixtures(on backend: ScenarioBackend) throws -> [(result: ScenarioResult, wall: Double)] {
        let scenarios = try Tiers.scenarios(Self.files)
        try backend.prepare(deviceCount: 2)
        defer { backend.shutDown() }
        let runner = ScenarioRunner(backend: backend)
        return scenarios.map { scenario in
            let start = WallClock.seconds()
            let result = runner.run(scenario)
            return (result, WallClock.seconds() - start)
        }
    }

    // MARK: The controller process dies

    func testKillingRootCanalMidScenarioFailsItAndTheNextFast() throws {
        try killControllerMidScenario(transport: "rootcanal", backendName: "RootCanal 1.10.0", helperName: "RootCanal 1.10.0")
    }

    func testKillingTheBumbleControllersMidScenarioFailsItAndTheNextFast() throws {
        try killControllerMidScenario(transport: "bumble", backendName: "Bumble 0.0.236 lab controllers",
                                      helperName: "Bumble 0.0.236 controllers")
    }

    private func killControllerMidScenario(transport: String, backendName: String, helperName: String) throws {
        let backend = try Tiers.backend(transport)
        var helper: HelperProcess?
        var killedAt: Instant?
        backend.onLabMade = { [unowned backend] lab in
            guard helper == nil, let process = backend.rootCanal?.process ?? backend.bumble?.process else { return }
            helper = process
            // About 3 s in: the central is subscribed and notifications are flowing.
            lab.loop.schedule(after: .seconds(3)) {
                process.signalGroup(SIGKILL)
                killedAt = lab.loop.now
            }
        }
        let runs = try runFixtures(on: backend)
        let pgid = try XCTUnwrap(helper?.pid)

        // The scenario that was running fails at once, naming the device, the transport and why.
        let first = try XCTUnwrap(runs[0].result.failure, "the first scenario should fail")
        XCTAssertEqual(first.kind, .transport, first.description)
        XCTAssertEqual(first.step?.index, 5, "the notification expectation was waiting")
        XCTAssertTrue(first.seen.contains(" lost its controller (\(backendName) (pid \(pgid)"), first.seen)
        XCTAssertTrue(first.seen.hasSuffix(": connection closed") || first.seen.contains("malformed HCI stream: connection closed in the middle"),
                      first.seen)
        let killed = try XCTUnwrap(killedAt)
        XCTAssertLessThan(runs[0].result.virtualTime - (killed - .zero), .seconds(1), "it failed right after the kill, not at its 20 s limit")

        // The next scenario still runs, and fails at once: the controllers are gone.
        let second = try XCTUnwrap(runs[1].result.failure, "the second scenario cannot pass without controllers")
        XCTAssertNil(second.step, "it fails while setting up: \(second)")
        // Either the lab saw the helper gone before connecting ("is not running any more"), or a
        // connection the dying listener had already accepted was reset: both say who and why.
        if second.kind == .setup {
            XCTAssertTrue(second.seen.contains("\(helperName) (pid \(pgid)) is not running any more: it was killed by signal 9 (SIGKILL)"),
                          second.seen)
        } else {
            XCTAssertEqual(second.kind, .transport, second.description)
            XCTAssertTrue(second.seen.contains(" lost its controller (\(backendName) (pid \(pgid)"), second.seen)
            XCTAssertTrue(second.seen.contains("which was killed by signal 9 (SIGKILL))"), second.seen)
        }
        XCTAssertLessThan(runs[1].wall, 2, "fail fast: \(runs[1].wall) s")

        // Nothing is left: not the helper's group, not a child of ours.
        Tiers.assertGroupGone(pgid, "\(transport) after shutDown")
        XCTAssertTrue(backend.stopReports.last?.hasSuffix("nothing left behind") == true, "\(backend.stopReports)")
        XCTAssertFalse(Tiers.runningHelpers.contains(pgid))
        print("fault (\(transport)): \(runs[0].result.verdict)\n  then: \(runs[1].result.verdict) in \(String(format: "%.3f", runs[1].wall)) s")
    }

    // MARK: A connection that closes or carries garbage

    func testGarbageFromAControllerConnectionFailsThatScenarioNamingDeviceEndpointAndBytes() throws {
        let (runs, endpoint) = try throughProxy { proxy in
            // The central's connection is the last one opened.
            proxy.pairs.last?.host.sendRaw([0xFF, 0x00, 0x07, 0x42])
        }
        let failure = try XCTUnwrap(runs[0].result.failure)
        XCTAssertEqual(failure.kind, .transport)
        XCTAssertTrue(failure.seen.hasPrefix("central lost its controller (H4 sockets \(endpoint), \(endpoint)): \(endpoint): "
                                             + "malformed HCI stream: unknown H4 packet indicator 0xff at stream offset "), failure.seen)
        XCTAssertTrue(failure.seen.contains(": ff 00 07 42 (an H4 packet starts with 01 command, 02 ACL, 03 SCO, 04 event or 05 ISO)"), failure.seen)
        XCTAssertTrue(runs[1].result.passed, "the next scenario runs on fresh connections: \(runs[1].result.verdict)")
    }

    func testAControllerConnectionThatClosesFailsThatScenarioNamingDeviceAndEndpoint() throws {
        let (runs, endpoint) = try throughProxy { proxy in
            proxy.pairs.first?.host.close()   // the sensor's
        }
        let failure = try XCTUnwrap(runs[0].result.failure)
        XCTAssertEqual(failure.kind, .transport)
        XCTAssertEqual(failure.seen, "sensor lost its controller (H4 sockets \(endpoint), \(endpoint)): \(endpoint): connection closed")
        XCTAssertTrue(runs[1].result.passed, runs[1].result.verdict)
    }

    /// The two fixtures on `--transport h4:PROXY,PROXY`, where PROXY forwards each connection to
    /// a new RootCanal controller; `fault` is done to the proxy 3 s into the first scenario.
    private func throughProxy(_ fault: @escaping (H4Proxy) -> Void) throws -> ([(result: ScenarioResult, wall: Double)], String) {
        let rootCanal = try RootCanalProcess(environment: Tiers.environment)
        defer {
            XCTAssertTrue(rootCanal.stop().hasSuffix("nothing left behind"))
        }
        let loop = SystemEventLoop()
        let proxy = try H4Proxy(loop: loop, upstream: rootCanal.endpoint)
        let backend = RealControllerBackend(source: .endpoints([proxy.endpoint, proxy.endpoint]), environment: Tiers.environment)
        backend.makeLoop = { loop }
        var armed = false
        backend.onLabMade = { lab in
            guard !armed else { return }
            armed = true
            lab.loop.schedule(after: .seconds(3)) { fault(proxy) }
        }
        let runs = try runFixtures(on: backend)
        return (runs, proxy.endpoint.description)
    }

    // MARK: blelab interrupted or killed

    func testCtrlCToBlelabStopsRootCanal() throws {
        try interruptBlelab(transport: "rootcanal", signal: SIGINT)
    }

    func testSIGTERMToBlelabStopsTheBumbleControllers() throws {
        try interruptBlelab(transport: "bumble", signal: SIGTERM)
    }

    func testASIGKILLedBlelabTakesRootCanalWithIt() throws {
        try interruptBlelab(transport: "rootcanal", signal: SIGKILL)
    }

    func testASIGKILLedBlelabTakesTheBumbleControllersWithIt() throws {
        try interruptBlelab(transport: "bumble", signal: SIGKILL)
    }

    /// Runs the built blelab on the stream fixture, waits until its controllers are up and the
    /// scenario is under way, sends it `signal`, and checks that the controllers' process group
    /// is gone soon after.
    private func interruptBlelab(transport: String, signal: Int32) throws {
        let blelab = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("blelab").path
        guard FileManager.default.isExecutableFile(atPath: blelab) else {
            return XCTFail("no blelab executable at \(blelab): build it first (swift build --build-tests builds it beside the tests)")
        }
        let env = Tiers.environment
        let run = try HelperProcess(name: "blelab", argv: [blelab, "run", "--transport", transport, Self.files[0]],
                                    logDirectory: env.logDirectory, logName: "test-blelab-\(getpid())",
                                    environment: ["BLELAB_ROOT": env.root, "BUILD_DIR": env.buildDirectory, "VENV": env.venv])
        defer { run.stop(grace: 1) }
        // "blelab: started RootCanal 1.10.0 (pid N) on …" / "blelab: started 2 Bumble … controllers (pid N) on …"
        let helper: pid_t = try run.waitUntil("the controllers started", timeout: 20) {
            guard let line = run.stderrText().split(separator: "\n").first(where: { $0.hasPrefix("blelab: started ") }),
                  let open = line.firstRange(of: "(pid ") else { return nil }
            return pid_t(line[open.upperBound...].prefix { $0.isNumber })
        }
        XCTAssertTrue(ProcessGroup.hasLiveMembers(helper))
        XCTAssertEqual(ProcessGroup.members(helper).count, 1, "one process in the helper's group")
        // Its own session and group: a terminal's Ctrl-C would not reach it.
        let stat = try XCTUnwrap(FileText.read("/proc/\(helper)/stat").split(separator: ")").last?.split(separator: " "))
        XCTAssertEqual(stat[2], "\(helper)", "process group = its pid")
        XCTAssertEqual(stat[3], "\(helper)", "session = its pid")
        // Let the scenario get going (scan, connect), then interrupt.
        WallClockSleep.seconds(2)
        XCTAssertTrue(run.isRunning, run.tail())
        kill(run.pid, signal)
        _ = try run.waitUntil("blelab to end", timeout: 10) { run.isRunning ? nil : true }
        XCTAssertEqual(run.exit, .signalled(signal), run.tail())
        if signal != SIGKILL {
            XCTAssertTrue(run.stderrText().contains("blelab: interrupted: stopped the controller processes it started"), run.tail())
        }
        // Gone: at once after SIGINT/SIGTERM (blelab waited for them); after SIGKILL through
        // PR_SET_PDEATHSIG, within a moment.
        let deadline = WallClock.seconds() + 5
        while ProcessGroup.hasLiveMembers(helper) && WallClock.seconds() < deadline { WallClockSleep.seconds(0.02) }
        Tiers.assertGroupGone(helper, "\(transport) after blelab got signal \(signal)")
    }
}

enum WallClockSleep {
    static func seconds(_ s: Double) { _ = poll(nil, 0, Int32(s * 1000)) }
}

/// Forwards every H4 connection it accepts to a new connection to `upstream`, frame by frame, so
/// a test can close one side or inject bytes into it.
final class H4Proxy {
    let server: H4SocketServer
    /// (the host's connection to us, our connection to the controller), in accept order.
    private(set) var pairs: [(host: SocketH4Transport, controller: SocketH4Transport)] = []

    init(loop: SystemEventLoop, upstream: SocketEndpoint) throws {
        server = try H4SocketServer(listeningOn: .tcp(host: "127.0.0.1", port: 0), loop: loop)
        server.onConnection = { [unowned self] host in
            let controller = SocketH4Transport(connectingTo: upstream, loop: loop)
            controller.onFrame = { [weak host] in host?.send($0) }
            host.onFrame = { [weak controller] in controller?.send($0) }
            controller.onClose = { [weak host] _ in host?.close() }
            host.onClose = { [weak controller] _ in controller?.close() }
            self.pairs.append((host, controller))
        }
    }

    var endpoint: SocketEndpoint { server.endpoint }
}

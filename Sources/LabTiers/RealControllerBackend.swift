import BLELab
import BLERuntime
import ScenarioFormat
import Transport

/// Scenarios on controllers nobody here wrote: RootCanal, Bumble, any H4 socket (tier
/// `socket`), or Linux controllers through the HCI user channel (tier `vhci`). Each lab gets a
/// fresh `SystemEventLoop` (real time) and a fresh controller per device.
///
/// For `rootcanal` without an address and for `bumble`, `prepare` starts the helper process
/// (in its own process group, logs under BUILD_DIR/tiers/logs) and waits until it listens;
/// `shutDown` stops it (SIGTERM to the group, SIGKILL after 3 s) and checks nothing is left.
/// When the helper dies mid-run, the scenario running fails (its devices lose their
/// controllers) and every later lab fails at once, saying so.
public final class RealControllerBackend: ScenarioBackend {
    public enum Source: Equatable {
        /// `h4:EP,EP,…`: device i on endpoint i.
        case endpoints([SocketEndpoint])
        /// `rootcanal:HOST:PORT` (a running RootCanal; every device a new connection to it), or
        /// `rootcanal` (nil: blelab starts RootCanal 1.10.0 from the venv).
        case rootCanal(SocketEndpoint?)
        /// `bumble` (TCP) or `bumble:unix`: blelab starts tools/bumble_controllers.py with one
        /// endpoint per device.
        case bumble(unixSockets: Bool)
        /// `hci-user:0,1,…`: device i on hci<N_i>.
        case userChannel([UInt16])
    }

    public let source: Source
    /// More groups of controllers, each on an air of its own, after `source`'s (`hci-user:0,1/2,3`:
    /// `source` is the first group). `blelab run --jobs` runs a scenario on each
    /// group at once; one job uses `source` alone, so a scenario's devices are always on one air.
    public var otherAirs: [Source] = []
    public let environment: TierEnvironment
    public var connectTimeout: TimeSpan = .seconds(5)
    /// Makes each lab's loop (tests share one loop with a fake controller or a proxy).
    public var makeLoop: () -> SystemEventLoop = { SystemEventLoop() }
    /// Progress lines (helper started, stopped); blelab sends them to stderr.
    public var log: ((String) -> Void)?
    /// Called with each lab made, before the scenario adds its devices (for fault injection).
    public var onLabMade: ((Lab) -> Void)?

    public private(set) var rootCanal: RootCanalProcess?
    public private(set) var bumble: BumbleControllersProcess?
    /// What stopping the helpers said ("…; nothing left behind").
    public private(set) var stopReports: [String] = []
    public private(set) var preparedDeviceCount = 0

    public init(source: Source, environment: TierEnvironment = .current()) {
        self.source = source
        self.environment = environment
    }

    deinit { shutDown() }

    public var tier: TransportTier {
        if case .userChannel = source { return .vhci }
        return .socket
    }

    public var description: String {
        switch source {
        case let .endpoints(endpoints):
            return "H4 socket\(endpoints.count == 1 ? "" : "s") " + endpoints.map(\.description).joined(separator: ", ")
        case let .rootCanal(endpoint?):
            return "RootCanal at \(endpoint)"
        case .rootCanal(nil):
            guard let rootCanal else { return "RootCanal \(RootCanalProcess.version) (started by blelab)" }
            return "RootCanal \(RootCanalProcess.version) (pid \(rootCanal.process.pid)) at \(rootCanal.endpoint)" + exitNote(rootCanal.process)
        case .bumble:
            guard let bumble else { return "Bumble \(Self.bumbleVersion) lab controllers (started by blelab)" }
            return "Bumble \(Self.bumbleVersion) lab controllers (pid \(bumble.process.pid), \(bumble.endpoints.count) endpoints)" + exitNote(bumble.process)
        case let .userChannel(devices):
            return "HCI user channel on " + devices.map { "hci\($0)" }.joined(separator: ", ")
        }
    }

    public static let bumbleVersion = "0.0.236"

    /// RootCanal 1.10.0 adds no advDelay (Core 5.4 Vol 6 Part B 4.4.2.2.1): an advertiser's next
    /// event is the first tick of its model (every 5 ms) at least one interval after the last,
    /// and a scanner sends no SCAN_REQ while one is pending. Advertisers enabled within one tick
    /// stayed in it, and only the first of them in RootCanal's device list was ever scanned
    /// (docs/tiers.md, "Advertisers in lockstep"). Intervals a tick apart make them drift apart
    /// instead. Bumble's lab controllers carry the scan response with the advertisement (no
    /// SCAN_REQ), and the other sources are controllers nobody here knows: nothing changes there.
    public var advertisingIntervalStagger: TimeSpan {
        if case .rootCanal = source { return RootCanalProcess.tick }
        return .zero
    }

    /// `blelab run --jobs`: a backend per job, each with controllers on an air of its own (a scan
    /// must never hear another job's devices). RootCanal and Bumble: each job starts its own
    /// process, which is its own air (RootCanal puts every connection to one instance on one
    /// phy; Bumble's controllers share one LocalLink per process). hci-user and h4: the groups
    /// given (`otherAirs`), since which controllers share an air is known only to whoever made
    /// them (btvirt puts all of its own on one: vm/guest-run.sh -g starts one btvirt per group);
    /// h4 endpoints have no groups: one at a time.
    /// A running RootCanal (`rootcanal:HOST:PORT`) is one air: one scenario at a time.
    public func jobBackends(_ jobs: Int, deviceCount: Int) -> JobBackends {
        guard jobs > 1 else { return JobBackends([self]) }
        switch source {
        case .rootCanal(nil), .bumble:
            return JobBackends([self] + (1..<jobs).map { _ in sibling(source) })
        case .rootCanal(_?):
            return JobBackends([self], note: "every device on one running RootCanal shares its one air, so scenarios run "
                + "together would hear each other: one at a time (--transport rootcanal starts a RootCanal per job)")
        case .endpoints:
            return JobBackends([self], note: "h4 endpoints are controllers blelab knows nothing of, which may share one air: "
                + "one scenario at a time")
        case .userChannel:
            guard !otherAirs.isEmpty else {
                return JobBackends([self], note: "hci-user names one group of controllers, and btvirt puts all of its "
                    + "controllers on one air: give a group per job, each from a btvirt of its own, separated by '/', such as "
                    + "hci-user:0,1/2,3 (vm/guest-run.sh -g J makes them); one scenario at a time")
            }
            let groups = [source] + otherAirs
            let fit = groups.filter { Self.count(of: $0) >= deviceCount }
            let used = Array(fit.prefix(jobs))
            guard let first = used.first else { return JobBackends([self]) }   // prepare says the groups are too small
            var note: String?
            if used.count < jobs {
                note = "\(groups.count) group\(groups.count == 1 ? "" : "s") of controllers given"
                    + (fit.count < groups.count ? ", \(fit.count) with the \(deviceCount) the scenarios need" : "")
                    + ": \(used.count) at a time"
            }
            return JobBackends([first == source ? self : sibling(first)] + used.dropFirst().map(sibling), note: note)
        }
    }

    /// A backend like this one (its log, loop and timeouts) on `source`.
    private func sibling(_ source: Source) -> RealControllerBackend {
        let other = RealControllerBackend(source: source, environment: environment)
        other.connectTimeout = connectTimeout
        other.makeLoop = makeLoop
        other.log = log
        other.onLabMade = onLabMade
        return other
    }

    private static func count(of source: Source) -> Int {
        switch source {
        case let .endpoints(endpoints): return endpoints.count
        case let .userChannel(devices): return devices.count
        case .rootCanal, .bumble: return Int.max
        }
    }

    private func exitNote(_ process: HelperProcess) -> String {
        process.isRunning ? "" : ", which \(process.exit.map { "\($0)" } ?? "is gone")"
    }

    // MARK: ScenarioBackend

    public func prepare(deviceCount: Int) throws {
        preparedDeviceCount = max(preparedDeviceCount, deviceCount)
        switch source {
        case let .endpoints(endpoints) where endpoints.count < deviceCount:
            throw HelperError("h4: \(endpoints.count) endpoint(s) given, but the selected scenarios need up to \(deviceCount) "
                + "devices (the peripherals and the central; one endpoint per device, in order)")
        case let .userChannel(devices) where devices.count < deviceCount:
            throw HelperError("hci-user: \(devices.count) controller(s) given, but the selected scenarios need up to \(deviceCount) "
                + "devices (the peripherals and the central; one controller per device, in order)")
        case .rootCanal(nil):
            guard rootCanal == nil else { return }
            let started = try RootCanalProcess(environment: environment)
            rootCanal = started
            log?("started RootCanal \(RootCanalProcess.version) (pid \(started.process.pid)) on \(started.endpoint) in "
                + "\(formatSeconds(started.readyAfter)) s; log \(started.process.stdoutPath)")
        case let .bumble(unixSockets):
            if let bumble {
                guard bumble.endpoints.count < deviceCount else { return }
                stopReports.append(bumble.stop())   // too few endpoints: start again with enough
                self.bumble = nil
            }
            let started = try BumbleControllersProcess(count: deviceCount, environment: environment, unixSockets: unixSockets)
            bumble = started
            log?("started \(deviceCount) Bumble \(Self.bumbleVersion) controllers (pid \(started.process.pid)) on "
                + started.endpoints.map(\.argument).joined(separator: " ") + " in \(formatSeconds(started.readyAfter)) s; "
                + "log \(started.process.stderrPath)")
        default:
            break
        }
    }

    public func makeLab(seed: UInt64) throws -> Lab {
        let connector = try makeConnector()
        let lab = Lab(seed: seed, loop: makeLoop(), connector: connector)
        onLabMade?(lab)
        return lab
    }

    public func shutDown() {
        if let rootCanal {
            let report = rootCanal.stop()
            stopReports.append(report)
            log?("stopped " + report)
            self.rootCanal = nil
        }
        if let bumble {
            let report = bumble.stop()
            stopReports.append(report)
            log?("stopped " + report)
            self.bumble = nil
        }
    }

    // MARK: Connectors

    func makeConnector() throws -> ControllerConnector {
        switch source {
        case let .endpoints(endpoints):
            return SocketControllerConnector(plan: .perDevice(endpoints), description: description, connectTimeout: connectTimeout)
        case let .rootCanal(endpoint?):
            return SocketControllerConnector(plan: .shared(endpoint), description: description, connectTimeout: connectTimeout)
        case .rootCanal(nil):
            guard let rootCanal else { throw HelperError("RootCanal is not started: call prepare(deviceCount:) first") }
            return SocketControllerConnector(plan: .shared(rootCanal.endpoint), description: description,
                                             connectTimeout: connectTimeout) { [weak self] in self?.helperDeath() }
        case .bumble:
            guard let bumble else { throw HelperError("the Bumble controllers are not started: call prepare(deviceCount:) first") }
            return SocketControllerConnector(plan: .perDevice(bumble.endpoints), description: description,
                                             connectTimeout: connectTimeout) { [weak self] in self?.helperDeath() }
        case let .userChannel(devices):
            return UserChannelConnector(devices: devices)
        }
    }

    /// Why the helper can give no controllers any more (it exited), or nil while it runs.
    public func helperDeath() -> String? {
        let found: (String, HelperProcess)?
        if let rootCanal {
            found = ("RootCanal \(RootCanalProcess.version)", rootCanal.process)
        } else if let bumble {
            found = ("Bumble \(Self.bumbleVersion) controllers", bumble.process)
        } else {
            found = nil
        }
        guard let (name, process) = found, !process.isRunning else { return nil }
        return "\(name) (pid \(process.pid)) is not running any more: it \(process.exit.map { "\($0)" } ?? "is gone")"
            + "\n" + process.tail(lines: 5, skipping: RootCanalProcess.isNoise)
    }
}

import BLERuntime
import Controller
import ScenarioFormat

/// Where scenarios run: makes the lab for each run. The sim tier builds simulated controllers on
/// a simulated air; other tiers (socket, vhci) plug in here with their own controllers. Here in
/// BLELab, below the runner (Scenario), so that LabTiers provides backends without importing it.
public protocol ScenarioBackend {
    var tier: TransportTier { get }
    /// Says where controllers come from, for the run's header ("RootCanal 1.10.0 at …").
    var description: String { get }
    /// Called once before the first run with the most devices any selected scenario needs
    /// (peripherals + the central): a tier starts its controller processes here.
    func prepare(deviceCount: Int) throws
    func makeLab(seed: UInt64) throws -> Lab
    /// Called once after the last run, also after failures: stop what `prepare` started.
    func shutDown()
    /// How far apart the lab sets its peripherals' advertising intervals on these controllers:
    /// the k-th peripheral a scenario declares (from 0) advertises every `interval` + k × this.
    /// Zero (the default) where each controller adds its own advDelay, 0–10 ms drawn anew for
    /// every advertising event (Core 5.4 Vol 6 Part B 4.4.2.2.1), as the sim's do: advertisers
    /// started together then drift apart. Where none is added, advertisers started within the
    /// controller's scheduling step keep one phase for ever, and a scanner that can have one
    /// SCAN_REQ outstanding scans only the first of them (docs/tiers.md, "Advertisers in
    /// lockstep"); distinct intervals let no two keep one phase.
    var advertisingIntervalStagger: TimeSpan { get }
    /// The backends `blelab run --jobs` runs scenarios on at the same time: at most `jobs`, each
    /// able to serve `deviceCount` devices, each with controllers of its own on an air of its own,
    /// so that a scan in one scenario never hears another's devices. Each is then prepared, used
    /// and shut down on its own. One (this backend) with a `note` saying why where that cannot
    /// be done, and fewer than `jobs` with a note where only fewer fit.
    func jobBackends(_ jobs: Int, deviceCount: Int) -> JobBackends
}

/// What `ScenarioBackend.jobBackends` gives: the backends to run on at once, and why there are
/// fewer than asked for (nil when there are as many).
public struct JobBackends {
    public var backends: [ScenarioBackend]
    public var note: String?

    public init(_ backends: [ScenarioBackend], note: String? = nil) {
        self.backends = backends
        self.note = note
    }
}

extension ScenarioBackend {
    public var description: String { tier.rawValue }
    public var advertisingIntervalStagger: TimeSpan { .zero }
    public func prepare(deviceCount: Int) throws {}
    public func shutDown() {}
    /// A backend that knows no way to give each job controllers of its own runs one at a time.
    public func jobBackends(_ jobs: Int, deviceCount: Int) -> JobBackends {
        JobBackends([self], note: jobs > 1 ? "\(description) gives no job controllers of its own: one scenario at a time" : nil)
    }
}

/// The embedded simulator: deterministic in the seed, on virtual time.
public struct SimBackend: ScenarioBackend {
    public var model: AirModel

    /// The sim's model for scenarios: the lab's defaults, with ±2 dB of seeded RSSI noise on
    /// what scanners report (docs/scenarios.md `rssi:`).
    public static var scenarioModel: AirModel {
        var model = AirModel()
        model.rssiNoise = 2
        return model
    }

    public init(model: AirModel = SimBackend.scenarioModel) { self.model = model }

    public var tier: TransportTier { .sim }

    public func makeLab(seed: UInt64) throws -> Lab { Lab(seed: seed, model: model) }

    /// Every lab has an air of its own and shares nothing with another (no global state, STYLE
    /// 9), so any number run at once, and give what they would one after the other.
    public func jobBackends(_ jobs: Int, deviceCount: Int) -> JobBackends {
        JobBackends(Array(repeating: self, count: max(1, jobs)))
    }
}

import BLELab
import BLERuntime
import Controller
import ScenarioFormat

public struct RunOptions {
    /// Overrides the scenario's seed (`blelab run --seed`).
    public var seed: UInt64?
    /// Keep every device's packets in the result (for `--capture`).
    public var keepsCaptures: Bool
    /// Record the timeline in the result (for `--json`).
    public var recordsTimeline: Bool
    /// How many packets a failure report shows.
    public var recentPacketCount: Int
    /// Record what crossed the sim's air as a sniffer capture (`--capture-air`; sim only).
    public var capturesAir = false
    /// Stream each lab device's capture to a btsnoop file while the run goes (`--capture`), so a
    /// long run does not keep its packets: given the device's name, the file's path. Asked in the
    /// order `ScenarioResult.captures` has (the peripherals in the scenario's order, then the
    /// central), as each device is made. A file holds exactly what `BTSnoopWriter.encode` gives for
    /// the device's kept capture; `ScenarioResult.captures` stays empty. Set, it overrides
    /// `keepsCaptures`.
    public var captureFile: ((_ device: String) -> String)?
    /// With `recordsTimeline`: spool the timeline to a temporary file in this directory as the run
    /// goes (`TimelineSpool`), so that a long run does not keep it in memory.
    /// `ScenarioResult.timeline` then stays empty and `ScenarioResult.events` reads the file back,
    /// giving the same events in the same order.
    public var timelineDirectory: String?

    public init(seed: UInt64? = nil, keepsCaptures: Bool = false, recordsTimeline: Bool = false, recentPacketCount: Int = 10) {
        self.seed = seed
        self.keepsCaptures = keepsCaptures
        self.recordsTimeline = recordsTimeline
        self.recentPacketCount = recentPacketCount
    }
}

/// Runs validated scenarios. Each run builds its own lab, so runs never share state; a failing
/// scenario is a `ScenarioResult`, never a thrown error or a crash.
public struct ScenarioRunner {
    public var backend: ScenarioBackend
    /// Seats another stack plays (`blelab run --central`, `--peripheral`).
    public var roles: ScenarioRoles

    public init(backend: ScenarioBackend = SimBackend(), roles: ScenarioRoles = ScenarioRoles()) {
        self.backend = backend
        self.roles = roles
    }

    public func run(_ scenario: Scenario, options: RunOptions = RunOptions()) -> ScenarioResult {
        let seed = options.seed ?? scenario.seed ?? Scenario.defaultSeed
        guard scenario.runs(on: backend.tier) else {
            let tiers = scenario.requires?.map(\.rawValue).joined(separator: ", ") ?? ""
            return ScenarioResult(name: scenario.name, file: scenario.file, tags: scenario.tags, seed: seed, tier: backend.tier,
                                  outcome: .skipped(reason: "requires \(tiers), not \(backend.tier)"), virtualTime: .zero,
                                  steps: [], timeline: [], captures: [])
        }
        if let reason = roles.unsupported(scenario) {
            return ScenarioResult(name: scenario.name, file: scenario.file, tags: scenario.tags, seed: seed, tier: backend.tier,
                                  outcome: .skipped(reason: reason), virtualTime: .zero, steps: [], timeline: [], captures: [])
        }
        let result = ScenarioSession(scenario: scenario, backend: backend, seed: seed, options: options, roles: roles).run()
        guard let text = scenario.expectFailure else { return result }
        return Self.judged(result, expectingFailureWith: text)
    }

    /// The verdict of a scenario with `expect-failure: TEXT` (docs/scenarios.md section 3): it passes
    /// only when it failed and its failure's message (`expected …; seen …`, as JUnit shows it; not
    /// the step's text) contains TEXT; when it passed, or failed
    /// otherwise, it fails saying what was expected and what happened.
    static func judged(_ result: ScenarioResult, expectingFailureWith text: String) -> ScenarioResult {
        var judged = result
        let expected = "the scenario to fail with a failure containing '\(text)' (expect-failure)"
        switch result.outcome {
        case .skipped:
            return result
        case let .failed(failure) where "expected \(failure.expected); seen \(failure.seen)".contains(text):
            judged.outcome = .passed
            judged.failedAsExpected = failure
        case let .failed(failure):
            judged.outcome = .failed(ScenarioFailure(kind: .expectedFailure, step: failure.step, expected: expected,
                                                     seen: "it failed otherwise: \(failure.summary)", time: failure.time,
                                                     recentPackets: failure.recentPackets))
        case .passed:
            judged.outcome = .failed(ScenarioFailure(kind: .expectedFailure, step: nil, expected: expected,
                                                     seen: "it passed: every step held", time: Instant.zero + result.virtualTime,
                                                     recentPackets: []))
        }
        return judged
    }
}

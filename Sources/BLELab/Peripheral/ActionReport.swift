import BLERuntime
import ScenarioFormat

/// What a peripheral's actions did when a scenario's `peripheral:` step ran them: one line per
/// action up to the first `delay` (what follows it runs later), and the actions that could not do
/// what they say, with why. A step with a failure fails: a step that did nothing never says ok.
public struct ActionReport {
    public struct Failure {
        public var action: PeripheralAction
        public var reason: String
    }

    /// What each action did: "notify FFE1 01 to 1 subscribed central", "set FFE4 = 02".
    public var done: [String] = []
    public var failures: [Failure] = []
    /// The first `delay`, when actions follow it (they run after it, on the loop).
    public var deferred: TimeSpan?

    public init(done: [String] = [], failures: [Failure] = [], deferred: TimeSpan? = nil) {
        self.done = done
        self.failures = failures
        self.deferred = deferred
    }

    /// The actions' account for a step's note.
    public var summary: String {
        var parts = done
        if let deferred { parts.append("the rest after delay \(deferred)") }
        return parts.isEmpty ? "nothing to do" : parts.joined(separator: "; ")
    }
}

/// Collects an `ActionReport` while actions run and hands it over once every action before the
/// first `delay` has run and each asynchronous one (an HCI command) has completed.
final class ActionReporter {
    var report = ActionReport()
    private var pending = 0
    private var sealed = false
    private var completion: ((ActionReport) -> Void)?

    init(completion: @escaping (ActionReport) -> Void) {
        self.completion = completion
    }

    /// An action started something that completes later.
    func begin() { pending += 1 }

    /// What `begin` announced has completed.
    func end() {
        pending -= 1
        finishIfDone()
    }

    /// No more actions will be reported (the list ended, or reached a `delay`).
    func seal() {
        sealed = true
        finishIfDone()
    }

    private func finishIfDone() {
        guard sealed, pending == 0, let completion else { return }
        self.completion = nil
        completion(report)
    }
}

extension PeripheralAction {
    /// Whether the action acts on the peripheral's connections, so that without one it does
    /// nothing: ending them, asking for new parameters, or sending PDUs outside the GATT rules.
    /// (Notifications and indications go to subscribed centrals; none subscribed is a legal
    /// state, which the step's note shows.)
    public var needsLink: Bool {
        switch self {
        case .disconnect, .requestConnectionUpdate, .notifyHandle, .indicateHandle, .sendPDU: return true
        default: return false
        }
    }
}

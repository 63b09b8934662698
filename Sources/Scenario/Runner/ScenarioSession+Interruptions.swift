import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import ScenarioFormat

/// What a `connect` step gave, for `expect: { connect-failed }`.
struct ConnectAttempt {
    enum Outcome {
        /// The connection (nil when the seat gives the lab none: another stack holds it).
        case connected(Connection?)
        /// Why it gave none, when it has a name, and the report's words.
        case failed(ConnectFailureReason?, String)
    }

    var step: CentralStep
    var peripheral: String
    var time: Instant
    var outcome: Outcome
}

/// `link-lost` and `connect-failed`: a step cut short by the link, or a connect that gave no
/// connection, is ok (and says so) when one of the `expect` steps right after it expects that;
/// otherwise it fails the scenario, as an unexpected ATT error does. The expectation fails when
/// the step did complete.
extension ScenarioSession {
    /// Whether an `expect` step right after `position` expects `e`'s kind about `id`.
    func expectsInterruption(after position: Int, linkLost: Bool, of id: String) -> Bool {
        scenario.steps[(position + 1)...].prefix { $0.isExpectation }.contains { step in
            guard case let .expect(.interruption(e)) = step.action, e.peripheral == id else { return false }
            if case .linkLost = e { return linkLost }
            return !linkLost
        }
    }

    /// "remote-user-terminated (0x13) at 1.2s".
    func linkEnd(_ id: String, reason: UInt8?) -> String {
        let status = (reason.map(HCIStatus.init(rawValue:)) ?? connections[id]?.disconnectReason).map { "\($0)" } ?? "reason unknown"
        return status + (linkEnded[id].map { " at \($0)" } ?? "")
    }

    /// The address of `id` for an operation; nil when BLELab's host had a link to `id` that has
    /// already ended and a `link-lost` right after the step expects that (the step is then done,
    /// and says so). Another stack is asked even after the link ended: what it says then is what
    /// is reported.
    func target(_ id: String, step: CentralStep, position: Int) throws -> LEAddress? {
        guard everConnected.contains(id), let address = address(of: id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "never connected to \(id)")
        }
        guard let connection = central.connection(to: address), !connection.isConnected else { return address }
        guard expectsInterruption(after: position, linkLost: true, of: id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "the connection ended" + endReason(id))
        }
        let reason = connection.disconnectReason?.rawValue ?? HCIStatus.connectionTerminatedByLocalHost.rawValue
        lastOperation = (step, .gatt(.linkLost(reason: reason)))
        note = "not started: the link to \(id) had ended (\(linkEnd(id, reason: reason)))"
        return nil
    }

    /// An operation the end of the link cut short: expected by a `link-lost` right after it, or a
    /// failure saying what to write.
    func cutShort(_ error: ExternalRoleError, reason: UInt8, _ what: String, step: CentralStep, position: Int) throws {
        let id = step.action.peripheral ?? "?"
        lastOperation = (step, error)
        guard expectsInterruption(after: position, linkLost: true, of: id) else {
            throw StepFailure(kind: .operation, expected: "\(what) to complete, or an 'expect: { link-lost: \(id) }' right after the step",
                              seen: "the link to \(id) ended (\(linkEnd(id, reason: reason))) before it completed")
        }
        note = "cut short: the link to \(id) ended (\(linkEnd(id, reason: reason)))"
    }

    /// A `connect` that gave no connection: expected by a `connect-failed` right after it, or the
    /// step's failure.
    func connectFailed(_ id: String, step: CentralStep, position: Int, reason: ConnectFailureReason?, seen: String, within: TimeSpan) throws {
        lastConnect = ConnectAttempt(step: step, peripheral: id, time: now, outcome: .failed(reason, seen))
        guard expectsInterruption(after: position, linkLost: false, of: id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id) within \(within)", seen: seen)
        }
        note = seen
    }

}

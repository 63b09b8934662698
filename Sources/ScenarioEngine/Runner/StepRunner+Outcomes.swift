import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

/// How a step that did not simply succeed ends: an ATT error or a failure the `expect` steps right
/// after it expect, or an interruption (`link-lost`, `connect-failed`) they expect; otherwise the
/// scenario fails, saying what to write.
extension StepRunner {
    /// Whether an `expect` step right after `position` expects `e`'s kind about `id`.
    func expectsInterruption(after position: Int, linkLost: Bool, of id: String) -> Bool {
        session.scenario.steps[(position + 1)...].prefix { $0.isExpectation }.contains { step in
            guard case let .expect(.interruption(e)) = step.action, e.peripheral == id else { return false }
            if case .linkLost = e { return linkLost }
            return !linkLost
        }
    }

    /// The address of `id` for an operation; nil when BLELab's host had a link to `id` that has
    /// already ended and a `link-lost` right after the step expects that (the step is then done,
    /// and says so). Another stack is asked even after the link ended: what it says then is what
    /// is reported.
    func target(_ id: String, step: CentralStep, position: Int) throws -> LEAddress? {
        guard session.everConnected.contains(id), let address = session.address(of: id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "never connected to \(id)")
        }
        guard let connection = session.central.connection(to: address), !connection.isConnected else { return address }
        guard expectsInterruption(after: position, linkLost: true, of: id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "the connection ended" + session.endReason(id))
        }
        let reason = connection.disconnectReason?.rawValue ?? HCIStatus.connectionTerminatedByLocalHost.rawValue
        session.lastOperation = (step, .gatt(.linkLost(reason: reason)))
        session.note = "not started: the link to \(id) had ended (\(session.linkEnd(id, reason: reason)))"
        return nil
    }

    /// An operation the end of the link cut short: expected by a `link-lost` right after it, or a
    /// failure saying what to write.
    func cutShort(_ error: SeatError, reason: UInt8, _ what: String, step: CentralStep, position: Int) throws {
        let id = step.action.peripheral ?? "?"
        session.lastOperation = (step, error)
        guard expectsInterruption(after: position, linkLost: true, of: id) else {
            throw StepFailure(kind: .operation, expected: "\(what) to complete, or an 'expect: { link-lost: \(id) }' right after the step",
                              seen: "the link to \(id) ended (\(session.linkEnd(id, reason: reason))) before it completed")
        }
        session.note = "cut short: the link to \(id) ended (\(session.linkEnd(id, reason: reason)))"
    }

    /// A `connect` that gave no connection: expected by a `connect-failed` right after it, or the
    /// step's failure.
    func connectFailed(_ id: String, step: CentralStep, position: Int, reason: ConnectFailureReason?, seen: String, within: TimeSpan) throws {
        session.lastConnect = ConnectAttempt(step: step, peripheral: id, time: session.now, outcome: .failed(reason, seen))
        guard expectsInterruption(after: position, linkLost: false, of: id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id) within \(within)", seen: seen)
        }
        session.note = seen
    }

    /// Whether an operation's failure that is no ATT Error Response is expected by the `expect`
    /// steps right after it (`malformed-response` for a rejected response, `att-timeout` for a
    /// transaction timeout), as `error` expects an Error Response.
    func expectsFailure(_ error: GATTError, following: ArraySlice<CentralStep>) -> Bool {
        following.contains { step in
            guard case let .expect(.flaw(e)) = step.action else { return false }
            switch (error, e) {
            case (.protocolViolation, .malformedResponse), (.invalidResponse, .malformedResponse): return true
            case (.timeout, .attTimeout): return true
            default: return false
            }
        }
    }

    /// An operation's failure in words; for a response the central rejected just now, with the
    /// octets that arrived.
    func describe(_ error: GATTError, of step: CentralStep) -> String {
        guard case .protocolViolation = error, let id = step.action.peripheral,
              let rejected = session.flawObservations.rejected[id]?.last, rejected.time == session.now else { return "\(error)" }
        return "\(error); octets \(rejected.bytes.isEmpty ? "(none)" : rejected.bytes.spacedHex)"
    }
}

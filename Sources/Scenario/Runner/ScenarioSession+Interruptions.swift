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

    func checkInterruption(_ e: InterruptionExpectation, fail: (String) -> StepFailure) throws {
        switch e {
        case let .linkLost(id, reason):
            guard let last = lastOperation else { throw fail("no operation has run") }
            let step = "step \(last.step.index) (\(last.step.text))"
            guard let error = last.error else { throw fail("\(step) completed; the link to \(id) stayed up") }
            if case let .gatt(failure) = error {
                guard case let .linkLost(code) = failure else { throw fail("\(step) got \(error), with the link to \(id) up") }
                if let reason, reason.rawValue != code {
                    throw fail("\(step) was cut short when the link ended with \(HCIStatus(rawValue: code))")
                }
                note = "step \(last.step.index) was cut short: the link to \(id) ended (\(linkEnd(id, reason: code)))"
                return
            }
            // A stack that says only that the call failed: the link tells, and the peripheral's
            // side of it why it ended.
            guard let address = address(of: id), !central.isConnected(address) else {
                throw fail("\(step) got \(error), with the link to \(id) up")
            }
            if let reason {
                if peripherals[id] != nil { try waitFor("\(id)'s host to hear the link end", within: Expectation.defaultWithin) { !self.peripheralHasLink(id) } }
                let seen = centralSideReason(id)
                guard seen == reason else { throw fail("\(step) was cut short when the link ended with \(seen.map { "\($0)" } ?? "an unknown reason")") }
            }
            note = "step \(last.step.index) was cut short: the link to \(id) ended (\(error))"
        case let .connectFailed(id, reason):
            guard let attempt = lastConnect, attempt.peripheral == id else { throw fail("no connect to \(id) has run") }
            let step = "step \(attempt.step.index)"
            switch attempt.outcome {
            case let .connected(connection?):
                try checkEstablishment(attempt, connection, reason: reason, fail: fail)
            case .connected(nil):
                throw fail("\(step) connected to \(id)")
            case let .failed(failure, text):
                if let reason {
                    // Another stack in the central's seat may give no HCI status, only its own words.
                    guard let failure else { throw fail("\(step) gave no connection, for a reason its stack does not name: \(text)") }
                    guard reason == failure else { throw fail("\(step) gave no connection, for another reason: \(text)") }
                }
                note = "\(step) gave no connection: \(text)"
            }
        }
    }

    /// The connect gave LE Connection Complete, but a connection is established only once a packet
    /// has crossed it; if none does within six connection intervals, it ends with Connection
    /// Failed to be Established (0x3E; Core Vol 6 Part B 4.5.2), which apps see as a failed connect
    /// (Android's status 62). Waits, at most one interval past that, for it.
    private func checkEstablishment(_ attempt: ConnectAttempt, _ connection: Connection, reason: ConnectFailureReason?,
                                    fail: (String) -> StepFailure) throws {
        let id = attempt.peripheral
        let limit = max(.zero, (attempt.time + connection.intervalTime * 7) - now)
        try waitFor("the connection to \(id) to fail to be established", within: limit) { !connection.isConnected }
        let connected = "step \(attempt.step.index) connected to \(id)"
        guard !connection.isConnected, let ended = connection.disconnectReason else {
            throw fail("\(connected) and the connection was established")
        }
        guard ended == .connectionFailedToBeEstablished else {
            throw fail("\(connected); the connection was established and ended later (\(ended))")
        }
        if let reason, reason != .status(ended) { throw fail("\(connected); it failed to be established (\(ended))") }
        note = "\(connected), but the connection was never established: \(ended)"
    }
}

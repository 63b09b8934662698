import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

/// Judging what happened to the central's links: interruptions (`link-lost`, `connect-failed`),
/// RSSI, and the simulator's faults.
extension ExpectationJudge {
    func checkInterruption(_ e: InterruptionExpectation, fail: (String) -> StepFailure) throws {
        switch e {
        case let .linkLost(id, reason):
            guard let last = session.lastOperation else { throw fail("no operation has run") }
            let step = "step \(last.step.index) (\(last.step.text))"
            guard let error = last.error else { throw fail("\(step) completed; the link to \(id) stayed up") }
            if case let .gatt(failure) = error {
                guard case let .linkLost(code) = failure else { throw fail("\(step) got \(error), with the link to \(id) up") }
                if let reason, reason.rawValue != code {
                    throw fail("\(step) was cut short when the link ended with \(HCIStatus(rawValue: code))")
                }
                session.note = "step \(last.step.index) was cut short: the link to \(id) ended (\(session.linkEnd(id, reason: code)))"
                return
            }
            // A stack that says only that the call failed: the link tells, and the peripheral's
            // side of it why it ended.
            guard let address = session.address(of: id), !session.central.isConnected(address) else {
                throw fail("\(step) got \(error), with the link to \(id) up")
            }
            if let reason {
                if session.peripherals[id] != nil { try session.waitFor("\(id)'s host to hear the link end", within: Expectation.defaultWithin) { !self.session.peripheralHasLink(id) } }
                let seen = centralSideReason(id)
                guard seen == reason else { throw fail("\(step) was cut short when the link ended with \(seen.map { "\($0)" } ?? "an unknown reason")") }
            }
            session.note = "step \(last.step.index) was cut short: the link to \(id) ended (\(error))"
        case let .connectFailed(id, reason):
            guard let attempt = session.lastConnect, attempt.peripheral == id else { throw fail("no connect to \(id) has run") }
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
                session.note = "\(step) gave no connection: \(text)"
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
        let limit = max(.zero, (attempt.time + connection.intervalTime * 7) - session.now)
        try session.waitFor("the connection to \(id) to fail to be established", within: limit) { !connection.isConnected }
        let connected = "step \(attempt.step.index) connected to \(id)"
        guard !connection.isConnected, let ended = connection.disconnectReason else {
            throw fail("\(connected) and the connection was established")
        }
        guard ended == .connectionFailedToBeEstablished else {
            throw fail("\(connected); the connection was established and ended later (\(ended))")
        }
        if let reason, reason != .status(ended) { throw fail("\(connected); it failed to be established (\(ended))") }
        session.note = "\(connected), but the connection was never established: \(ended)"
    }

    /// `expect: { rssi }`: HCI Read RSSI on the link (Vol 4 Part E 7.5.4) when connected or
    /// `from: link`, else the RSSI of the peripheral's last report in the most recent scan (the
    /// only one another stack in the central's seat gives: `from: link` is skipped before the
    /// run, ScenarioRoles).
    func checkRSSI(_ e: RSSIExpectation, fail: (String) -> StepFailure) throws {
        let id = e.peripheral
        let onLink = e.source.map { $0 == .link } ?? (session.connections[id]?.isConnected == true)
        guard onLink else {
            guard let scan = session.lastScan else { throw fail("no scan has run") }
            guard let report = scan.found[id] else { throw fail("the last scan (step \(scan.step)) did not discover \(id)") }
            guard let rssi = report.rssi else { throw fail("the last scan (step \(scan.step)) gave no RSSI for \(id)") }
            let seen = "the last scan (step \(scan.step)) heard \(id) at \(rssi) dBm"
            guard e.holds(rssi) else { throw fail(seen) }
            session.note = seen
            return
        }
        guard let connection = session.connections[id] else { throw fail("never connected to \(id)") }
        guard connection.isConnected else {
            throw fail("the connection ended (\(connection.disconnectReason.map { "\($0)" } ?? "?"))")
        }
        let result = try session.operate("Read RSSI on the connection to \(id)") { done in connection.readRSSI(completion: done) }
        switch result {
        case let .success(rssi):
            let seen = "Read RSSI on the link: \(rssi) dBm"
            guard e.holds(rssi) else { throw fail(seen) }
            session.note = seen
        case let .failure(error):
            throw fail("Read RSSI failed: \(error)")
        }
    }

    func check(_ expectation: FaultExpectation, fail: (String) -> StepFailure) throws {
        switch expectation {
        case let .connectionParameters(id, interval, latency, timeout, within):
            guard let connection = session.connections[id] else { throw fail("never connected to \(id)") }
            func matches() -> Bool {
                (interval == nil || connection.interval == interval) && (latency == nil || connection.latency == latency)
                    && (timeout == nil || connection.supervisionTimeout == timeout)
            }
            try session.waitFor("the connection parameters of \(id) (within: \(within))", within: within) { matches() || !connection.isConnected }
            guard matches() else {
                throw fail("the connection has \(ScenarioSession.describe(connection))\(connection.isConnected ? "" : " (ended)")")
            }
            session.note = ScenarioSession.describe(connection)
        case let .mtu(id, mtu):
            guard let connection = session.connections[id] else { throw fail("never connected to \(id)") }
            guard connection.bearer.mtu == mtu else { throw fail("ATT_MTU \(connection.bearer.mtu)") }
            session.note = "ATT_MTU \(mtu)"
        }
    }
}

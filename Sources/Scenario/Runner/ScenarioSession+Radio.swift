import BLELab
import BLERuntime
import GAP
import HCI
import ScenarioFormat

/// The radio side of a run: RSSI expectations, and how the central answers its peripherals'
/// requests for new connection parameters (docs/scenarios.md sections 6 and 18).
extension ScenarioSession {
    // MARK: RSSI

    /// `expect: { rssi }`: HCI Read RSSI on the link (Vol 4 Part E 7.5.4) when connected or
    /// `from: link`, else the RSSI of the peripheral's last report in the most recent scan (the
    /// only one another stack in the central's seat gives: `from: link` is skipped before the
    /// run, ScenarioRoles).
    func checkRSSI(_ e: RSSIExpectation, fail: (String) -> StepFailure) throws {
        let id = e.peripheral
        let onLink = e.source.map { $0 == .link } ?? (connections[id]?.isConnected == true)
        guard onLink else {
            guard let scan = lastScan else { throw fail("no scan has run") }
            guard let report = scan.found[id] else { throw fail("the last scan (step \(scan.step)) did not discover \(id)") }
            guard let rssi = report.rssi else { throw fail("the last scan (step \(scan.step)) gave no RSSI for \(id)") }
            let seen = "the last scan (step \(scan.step)) heard \(id) at \(rssi) dBm"
            guard e.holds(rssi) else { throw fail(seen) }
            note = seen
            return
        }
        guard let connection = connections[id] else { throw fail("never connected to \(id)") }
        guard connection.isConnected else {
            throw fail("the connection ended (\(connection.disconnectReason.map { "\($0)" } ?? "?"))")
        }
        let result = try operate("Read RSSI on the connection to \(id)") { done in connection.readRSSI(completion: done) }
        switch result {
        case let .success(rssi):
            let seen = "Read RSSI on the link: \(rssi) dBm"
            guard e.holds(rssi) else { throw fail(seen) }
            note = seen
        case let .failure(error):
            throw fail("Read RSSI failed: \(error)")
        }
    }
}

extension ScenarioRoles {
    /// Steps only BLELab's own central can take: another stack chooses its own scan duty cycle
    /// and does not read RSSI on a link for the scenario.
    static func radioStepsOnlyBLELabsCentralTakes(_ scenario: Scenario) -> String? {
        for step in scenario.steps {
            if case let .scan(scan) = step.action, scan.timing != nil {
                return "step \(step.index) (\(step.text)) sets the scan's interval and window, which only BLELab's own central does"
            }
            if step.connectScan != nil {
                return "step \(step.index) (\(step.text)) sets the initiator's scan interval and window, which only BLELab's own central does"
            }
            if case let .expect(.rssi(e)) = step.action, e.source == .link {
                return "step \(step.index) (\(step.text)) reads RSSI on the link (HCI Read RSSI), which only BLELab's own central does"
            }
        }
        return nil
    }
}

import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

/// The central's `peripheral:` step: peripherals act now, in the order written. The step never
/// says ok for actions that did nothing: an action that acts on the link waits until the
/// peripheral's host has one, and each action before the first `delay` must take effect (its HCI
/// command accepted, its PDU sent) or the step fails saying why. What follows a `delay` runs later,
/// on the loop, while the script goes on.
extension StepRunner {
    func perform(_ list: [PeripheralActions], step: CentralStep) throws {
        var notes: [String] = []
        for entry in list {
            let id = entry.peripheral
            let now = entry.actions.prefix { if case .delay = $0 { return false }; return true }
            if let action = now.first(where: \.needsLink) { try awaitLink(of: id, for: action) }
            guard let peripheral = session.peripheralSeats[id] else { continue }
            let report = try session.operate("the actions of \(id) to take effect") { done in
                peripheral.perform(entry.actions, site: "step\(step.index)", report: done)
            }
            if let failure = report.failures.first {
                throw StepFailure(kind: .operation, expected: "\(id) to \(failure.action)", seen: failure.reason)
            }
            notes.append("\(id): \(report.summary)")
        }
        session.note = notes.joined(separator: "; ")
    }

    /// Whether the central holds a live connection to `id`; nil when nobody in the lab can tell
    /// (the central's seat is left to a program outside the lab).
    private func centralLinked(_ id: String) -> Bool? {
        guard session.central.knowsItsLinks else { return nil }
        guard session.everConnected.contains(id), let address = session.address(of: id) else { return false }
        return session.central.isConnected(address)
    }

    /// Waits (at most `Expectation.defaultWithin`) for `id`'s host to have the link `action` acts
    /// on, or fails saying why it has none.
    private func awaitLink(of id: String, for action: PeripheralAction) throws {
        let expected = "\(id) to \(action)"
        let linked = centralLinked(id)
        // The central's end closed first: the peripheral's may not have heard yet, but its link is gone.
        if linked == false {
            throw StepFailure(kind: .operation, expected: expected, seen: "\(id) has no connection (the central is not connected to it)")
        }
        guard !session.peripheralHasLink(id) else { return }
        guard linked != nil else {
            let limit = Expectation.defaultWithin
            guard try session.waitFor("a central to connect to \(id)", within: limit, until: { session.peripheralHasLink(id) }) else {
                throw StepFailure(kind: .operation, expected: expected, seen: "\(id) has no connection: no central connected to it within \(limit)")
            }
            return
        }
        let limit = Expectation.defaultWithin
        guard try session.waitFor("\(id)'s host to hear of its connection", within: limit, until: { session.peripheralHasLink(id) }) else {
            throw StepFailure(kind: .operation, expected: expected,
                              seen: "\(id)'s host has no connection: the central is connected to it, but \(id)'s controller reported no LE Connection Complete within \(limit)")
        }
    }
}

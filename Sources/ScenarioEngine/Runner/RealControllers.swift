import BLELab
import BLERuntime
import GAP

/// What the end of a run does on real controllers (hci-user, h4, RootCanal, Bumble), which the
/// embedded simulator does not need.
enum RealControllers {
    /// Lets every device hear what happened up to the scenario's end before the captures and the
    /// timeline are taken. A step ends as soon as the central has heard what it waits for (its
    /// Disconnection Complete, say); the frames the other controllers produced at that same
    /// instant are still queued on the loop, and without this they would be missing from the
    /// peripherals' captures. On real controllers, a peripheral may hear of the end of a link a
    /// little after the central did: each one still holding a link the central no longer has is
    /// given up to that link's supervision timeout (Core 5.4 Vol 6 Part B 4.5.2) to hear of it.
    static func settleFinalInstant(lab: Lab?, now: Instant, central: LabDevice?, peripherals: [String: SimulatedPeripheral]) {
        guard let lab else { return }
        lab.loop.run(until: now)
        guard !lab.isSimulated, let central, central.host.driver.closed == nil else { return }
        let centralAddress = central.address
        let peers = Set(central.host.connections.values.map(\.peer))
        var bound = TimeSpan.zero
        var stale: [Connection] = []
        for (_, peripheral) in peripherals.sorted(by: { $0.key < $1.key }) where peripheral.device.host.driver.closed == nil {
            for connection in peripheral.host.connections.values where connection.peer == centralAddress && !peers.contains(peripheral.device.address) {
                stale.append(connection)
                bound = max(bound, connection.supervisionTimeoutTime)
            }
        }
        if !stale.isEmpty { lab.run(within: bound) { stale.allSatisfy { !$0.isConnected } } }
    }

    /// On real controllers, a peripheral that was never connected would go on advertising after
    /// the lab lets go of its controller (closing the HCI user channel does not reset it), and the
    /// next scenario's scans would hear it: stop advertising first (bounded, after the captures
    /// were taken).
    static func quiet(lab: Lab?, peripherals: [String: SimulatedPeripheral]) {
        guard let lab, !lab.isSimulated else { return }
        // Tasks due now first: a peripheral decides to advertise again after its last
        // disconnection at the instant it happened.
        lab.run(for: .zero)
        var pending = 0
        for (_, peripheral) in peripherals.sorted(by: { $0.key < $1.key }) where peripheral.host.isAdvertising || peripheral.host.isChangingAdvertising {
            // A start under way (advertising resumed after the last disconnection) finishes
            // first: the host runs advertising changes one after another.
            guard peripheral.device.host.driver.closed == nil else { continue }
            pending += 1
            peripheral.host.stopAdvertising { _ in pending -= 1 }
        }
        if pending > 0 { lab.run(within: .seconds(1)) { pending == 0 } }
    }
}

import BLELab
import BLEWire
import Controller
import GAP

/// What a test does to the lab's radios: power, range and signal strength, for the managers'
/// controllers and for simulated peripherals.
extension CBLab {
    /// The lab device behind a manager: its controller, host, packet log and ATT traffic.
    public func device(of manager: CBManager) -> LabDevice? { manager.device }

    /// Powers the manager's controller off, as a user turning Bluetooth off: its connections,
    /// scan, pending connections and advertising end without delegate calls (peripherals become
    /// `.disconnected`, a peripheral manager's services are removed), then the state becomes
    /// `.poweredOff`. Peers notice after their supervision timeout.
    public func powerOff(_ manager: CBManager) {
        let held = lock.enter(); defer { held.leave() }
        guard let controller = manager.device?.controller, air.isPoweredOn(controller) else { return }
        air.powerOff(controller)
        manager.controllerWentAway(.poweredOff)
    }

    /// Powers the manager's controller back on: the host configures it again over HCI, then
    /// the state becomes `.poweredOn`.
    public func powerOn(_ manager: CBManager) {
        let held = lock.enter(); defer { held.leave() }
        guard let device = manager.device, let controller = device.controller else { return }
        air.powerOn(controller)
        switch device.host.state {
        case .off, .failed: manager.powerOnController()
        case .poweringOn, .ready: break
        }
    }

    /// Resets the manager's controller: everything tied to it ends as with `powerOff(_:)`, the
    /// state becomes `.resetting`, and `.poweredOn` once the host has configured it again.
    public func reset(_ manager: CBManager) {
        let held = lock.enter(); defer { held.leave() }
        guard let controller = manager.device?.controller else { return }
        air.powerOff(controller)
        manager.controllerWentAway(.resetting)
        air.powerOn(controller)
        manager.powerOnController()
    }

    /// Powers a simulated peripheral off: it stops advertising and answering; its centrals time
    /// out after their supervision timeout (a "peripheral went away" for them).
    public func powerOff(_ peripheral: SimulatedPeripheral) {
        let held = lock.enter(); defer { held.leave() }
        guard let controller = peripheral.device.controller else { return }
        air.powerOff(controller)
        peripheral.host.controllerDidReset()
    }

    /// Powers a simulated peripheral back on; it advertises again as its spec says.
    public func powerOn(_ peripheral: SimulatedPeripheral) {
        let held = lock.enter(); defer { held.leave() }
        guard let controller = peripheral.device.controller else { return }
        air.powerOn(controller)
        powerOnAndStart(peripheral)
    }

    /// Moves a simulated peripheral: the RSSI (dBm) scanners and Read RSSI see for it.
    public func setRSSI(_ dBm: Int8, of peripheral: SimulatedPeripheral) {
        let held = lock.enter(); defer { held.leave() }
        peripheral.device.rssi = dBm
    }

    /// The RSSI (dBm) peers see for a manager's device (e.g. a peripheral manager).
    public func setRSSI(_ dBm: Int8, of manager: CBManager) {
        let held = lock.enter(); defer { held.leave() }
        manager.device?.rssi = dBm
    }

    /// Takes a simulated peripheral out of (or back into) range: out of range nothing crosses
    /// the air; connections time out unless it comes back within the supervision timeout.
    public func setInRange(_ inRange: Bool, _ peripheral: SimulatedPeripheral) {
        let held = lock.enter(); defer { held.leave() }
        guard let controller = peripheral.device.controller else { return }
        air.setInRange(inRange, for: controller)
    }

    /// Takes a manager's device out of (or back into) range.
    public func setInRange(_ inRange: Bool, _ manager: CBManager) {
        let held = lock.enter(); defer { held.leave() }
        guard let device = manager.device else { return }
        guard let controller = device.controller else { return }
        air.setInRange(inRange, for: controller)
    }
}

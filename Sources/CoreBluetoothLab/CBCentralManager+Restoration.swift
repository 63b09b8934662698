import BLELab
import BLERuntime
import BLEWire
import GAP

// State restoration, as far as a process on Linux can have it. On iOS the system keeps an app's
// connections, pending connects and scan while the app is not running, and hands them to the
// central manager the relaunched app makes with the same `CBCentralManagerOptionRestoreIdentifierKey`.
// In the lab the "system" is the lab: a manager made with a restore identifier registers its
// device under it; a later manager made with the same identifier in the same lab (the app
// relaunched: the earlier manager released, or still alive and simply replaced) takes that
// device over — the same controller, host and links, so no packet is sent and the peer sees no
// change — and hears `centralManager(_:willRestoreState:)` before `centralManagerDidUpdateState`:
//
// - `CBCentralManagerRestoredStatePeripheralsKey`: the peripherals the earlier manager was
//   connected to (`.connected`, on the same links) or connecting to (`.connecting`, the connect
//   still pending), as new `CBPeripheral` objects with the same identifiers and no services yet;
// - `CBCentralManagerRestoredStateScanServicesKey` / `…ScanOptionsKey`: the scan it was running,
//   which goes on for the new manager.
//
// The earlier manager, if still alive, is retired: it hears nothing more. What the lab cannot
// do: relaunch a process (the "app" is whatever the test makes next), or restore for Bluetooth
// events while "terminated" (there is no background launch: restoration happens when the test
// makes the new manager). Peripheral managers are not restored.

/// What the lab keeps for a restore identifier: the device, and what a manager that went away
/// left on it.
final class RestorableCentral {
    let device: LabDevice
    weak var manager: CBCentralManager?
    var pending: [LEAddress] = []
    var scan: ScanRequest?
    /// The peripherals' names as the manager knew them (from their advertising).
    var names: [LEAddress: String] = [:]

    init(device: LabDevice, manager: CBCentralManager) {
        self.device = device
        self.manager = manager
    }
}

/// A scan as the app asked for it.
struct ScanRequest {
    let services: [CBUUID]?
    let options: [String: Any]?
}

extension CBCentralManager {
    /// Registers this manager under `identifier`; when `previous` holds a device, takes it over.
    func setUpRestoration(_ identifier: String, previous: RestorableCentral?) {
        guard let cbLab, let device else { return }
        restoreIdentifier = identifier
        cbLab.restorableCentrals[identifier] = RestorableCentral(device: device, manager: self)
        guard let previous else { return }
        let pending: [LEAddress], scan: ScanRequest?, names: [LEAddress: String]
        if let earlier = previous.manager, earlier !== self {
            pending = earlier.pendingAddresses
            scan = earlier.scanRequest
            names = earlier.knownNames
            earlier.retire()
        } else {
            pending = previous.pending
            scan = previous.scan
            names = previous.names
        }
        guard case .ready = device.host.state else {
            // The controller is off: nothing to restore, an ordinary power-on.
            cbLab.loop.execute { [weak self] in self?.powerOnController() }
            return
        }
        // The links change hands at once (nothing of them reaches the earlier manager from here);
        // the callbacks come after init returns, like the first state update.
        let restored = takeOver(pending: pending)
        for peripheral in restored where peripheral.name == nil { peripheral.name = names[peripheral.address] }
        cbLab.loop.execute { [weak self] in self?.report(restored, scan: scan) }
    }

    /// The addresses this manager is connecting to (pending, or waiting out a start delay).
    private var pendingAddresses: [LEAddress] {
        pendingConnects.map(\.address) + delayedConnects.keys.sorted { $0.address.rawValue < $1.address.rawValue }
    }

    private var knownNames: [LEAddress: String] { known.compactMapValues(\.name) }

    /// A manager going away leaves what the system would keep for its restore identifier.
    func leaveRestorableState() {
        guard let restoreIdentifier, !retired, let record = cbLab?.restorableCentrals[restoreIdentifier],
              record.device === device else { return }
        record.pending = pendingAddresses
        record.scan = scanRequest
        record.names = knownNames
        for timer in delayedConnects.values { timer.cancel() }
    }

    /// A newer manager took the device over: this one hears nothing more.
    private func retire() {
        retired = true
        isScanning = false
        scanRequest = nil
        initiating = nil
        pendingConnects.removeAll()
        for timer in delayedConnects.values { timer.cancel() }
        delayedConnects.removeAll()
        byHandle.removeAll()
        for peripheral in known.values where peripheral.state != .disconnected { peripheral.detach() }
    }

    /// Takes over the device's links and the pending connects: the restored peripherals.
    private func takeOver(pending: [LEAddress]) -> [CBPeripheral] {
        guard let device else { return [] }
        // An attempt the earlier manager started has no owner any more: end it, and start ours
        // once the host has settled it (a connect in between would be refused).
        if device.host.isConnecting {
            waitsForIdleInitiator = true
            device.host.cancelConnect()
        }
        var restored: [CBPeripheral] = []
        for connection in device.host.connections.values.sorted(by: { $0.handle < $1.handle }) where connection.role == .central {
            let peripheral = self.peripheral(at: connection.peer)
            byHandle[connection.handle] = peripheral
            take(connection, for: peripheral)
            peripheral.state = .connected
            peripheral.watchServiceChanges()
            restored.append(peripheral)
        }
        for address in pending where !restored.contains(where: { $0.address == address }) {
            let peripheral = self.peripheral(at: address)
            peripheral.state = .connecting
            pendingConnects.append(peripheral)
            restored.append(peripheral)
        }
        return restored
    }

    /// `willRestoreState`, then `.poweredOn`; the scan goes on and the pending connects start.
    private func report(_ restored: [CBPeripheral], scan: ScanRequest?) {
        guard let device else { return }
        var state: [String: Any] = [:]
        if !restored.isEmpty { state[CBCentralManagerRestoredStatePeripheralsKey] = restored }
        if let scan {
            state[CBCentralManagerRestoredStateScanServicesKey] = scan.services ?? []
            state[CBCentralManagerRestoredStateScanOptionsKey] = scan.options ?? [:]
        }
        deliver { $0.centralManager(self, willRestoreState: state) }
        update(state: .poweredOn)
        if let scan, !isScanning {
            device.host.stopScanning()
            scanForPeripherals(withServices: scan.services, options: scan.options)
        }
        startWhenInitiatorIsIdle()
    }

    /// Starts this manager's connects once the host's earlier attempt has ended (its LE
    /// Connection Complete with Unknown Connection Identifier, a few HCI exchanges away).
    private func startWhenInitiatorIsIdle() {
        guard let device, let loop, !retired else { return }
        if device.host.isConnecting {
            _ = loop.schedule(after: .milliseconds(1)) { [weak self] in self?.startWhenInitiatorIsIdle() }
            return
        }
        waitsForIdleInitiator = false
        updateInitiation()
    }
}

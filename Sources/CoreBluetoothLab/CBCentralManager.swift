import BLELab
import BLERuntime
import BLEWire
import Dispatch
import Foundation
import GAP
import HCI
import HostLink

/// An object that scans for, discovers, connects to, and manages peripherals — on its own
/// controller in the current `CBLab`.
///
/// Connections are made one at a time, in the order `connect(_:options:)` was called (the host
/// initiates one LE connection at a time); like CoreBluetooth's, an attempt never times out.
public class CBCentralManager: CBManager {
    /// The delegate object that receives central events.
    public var delegate: CBCentralManagerDelegate? { get { locked { _delegate } } set { locked { _delegate = newValue } } }
    private weak var _delegate: CBCentralManagerDelegate?
    /// A Boolean value that indicates whether the central is currently scanning.
    public internal(set) var isScanning: Bool { get { locked { _isScanning } } set { locked { _isScanning = newValue } } }
    private var _isScanning: Bool = false

    /// The features a central manager may support.
    public struct Feature: OptionSet {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Extended scan and connect (not simulated).
        public static let extendedScanAndConnect = Feature(rawValue: 1)
    }

    /// Whether the device supports `features`: the lab's controllers do legacy advertising only.
    public class func supports(_ features: Feature) -> Bool { features.isEmpty }

    /// Every peripheral this manager has seen or retrieved, by address.
    var known: [LEAddress: CBPeripheral] = [:]
    /// Peripherals with a pending `connect`, in the order the app asked. As on iOS any number
    /// can be pending at once and none times out: the host initiates to all of them together
    /// (through the controller's Filter Accept List when there are several) and the first one
    /// heard connects; the others stay pending.
    var pendingConnects: [CBPeripheral] = []
    /// The peripherals the host's initiation under way aims at (nil: none under way).
    var initiating: [CBPeripheral]?
    /// The initiation under way is being cancelled, to start again with `pendingConnects` as it is now.
    private var restartsInitiation = false
    /// Peripherals by connection handle, while connected.
    var byHandle: [UInt16: CBPeripheral] = [:]
    /// What `registerForConnectionEvents(options:)` asked for (nil: not registered).
    var connectionEvents: ConnectionEventMatching?
    /// Peripherals connected with `CBConnectPeripheralOptionEnableAutoReconnect`, until cancelled.
    private var autoReconnecting: Set<LEAddress> = []
    /// Connects waiting out their `CBConnectPeripheralOptionStartDelayKey`.
    var delayedConnects: [LEAddress: LoopTimer] = [:]
    /// State restoration (CBCentralManager+Restoration.swift): this manager's restore
    /// identifier; the scan it runs; set once a newer manager took its device over; set while
    /// a restored manager waits for the earlier manager's connection attempt to end.
    var restoreIdentifier: String?
    var scanRequest: ScanRequest?
    var retired = false
    var waitsForIdleInitiator = false

    public convenience init() {
        self.init(delegate: nil, queue: nil, options: nil)
    }

    /// Initializes the central manager with a specified delegate and dispatch queue.
    public convenience init(delegate: CBCentralManagerDelegate?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: nil)
    }

    /// Initializes the central manager with a specified delegate, dispatch queue (nil: the main
    /// queue) and initialization options (accepted and ignored).
    public init(delegate: CBCentralManagerDelegate?, queue: DispatchQueue?, options: [String: Any]? = nil) {
        let held = CBLab.current?.lock.enter(); defer { held?.leave() }
        _delegate = delegate
        let identifier = options?[CBCentralManagerOptionRestoreIdentifierKey] as? String
        let previous = identifier.flatMap { CBLab.current?.restorableCentrals[$0] }
        super.init(queue: queue, kind: "central", restoring: previous?.device)
        device?.host.driver.onACLSent = { [weak self] handle, stillQueued in self?.aclSent(handle: handle, stillQueued: stillQueued) }
        if let identifier { setUpRestoration(identifier, previous: previous) }
    }

    deinit { leaveRestorableState() }

    // MARK: State

    override func stateDidChange() {
        deliver { $0.centralManagerDidUpdateState(self) }
    }

    /// Below `.poweredOn` scanning stops and peripherals are disconnected; below `.poweredOff`
    /// the peripherals become invalid too: the app must retrieve or discover them again.
    override func controllerWillGoAway(to newState: CBManagerState) {
        isScanning = false
        let dropped = pendingConnects
        pendingConnects.removeAll()
        initiating = nil
        restartsInitiation = false
        for peripheral in dropped { peripheral.state = .disconnected }
        for timer in delayedConnects.values { timer.cancel() }
        for peripheral in known.values where delayedConnects[peripheral.address] != nil { peripheral.state = .disconnected }
        delayedConnects.removeAll()
        autoReconnecting.removeAll()
        if newState.rawValue < CBManagerState.poweredOff.rawValue { known.removeAll() }
    }

    // MARK: Scanning

    /// Scans for peripherals that are advertising services: any of `serviceUUIDs` (nil: every
    /// peripheral). Options: `CBCentralManagerScanOptionAllowDuplicatesKey` (default false: each
    /// peripheral is reported once per scan). Scanning again replaces the previous scan.
    public func scanForPeripherals(withServices serviceUUIDs: [CBUUID]?, options: [String: Any]? = nil) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard state == .poweredOn, let device else {
            return misuse("<CBCentralManager> can only accept this command while in the powered on state")
        }
        let configuration = ScanConfiguration(services: serviceUUIDs?.map(\.bluetoothUUID), active: true,
                                              allowDuplicates: Self.flag(options?[CBCentralManagerScanOptionAllowDuplicatesKey]))
        isScanning = true
        scanRequest = ScanRequest(services: serviceUUIDs, options: options)
        device.host.startScanning(configuration, onReport: { [weak self] report in
            self?.discovered(report)
        }, completion: { [weak self] result in
            if case let .failure(error) = result {
                self?.isScanning = false
                self?.cbLab?.warn("scan did not start: \(error)")
            }
        })
    }

    /// Asks the central manager to stop scanning for peripherals.
    public func stopScan() {
        let held = labLock?.enter(); defer { held?.leave() }
        guard isScanning, let device else { return }
        isScanning = false
        scanRequest = nil
        device.host.stopScanning()
    }

    private func discovered(_ report: ScanReport) {
        guard isScanning else { return }
        let peripheral = self.peripheral(at: report.address)
        if let name = report.localName { peripheral.name = name }
        peripheral.advertisedServices = report.serviceUUIDs
        let advertisement = AdvertisementData.dictionary(for: report)
        deliver { $0.centralManager(self, didDiscover: peripheral, advertisementData: advertisement, rssi: NSNumber(value: report.rssi)) }
    }

    /// The one `CBPeripheral` for `address`.
    func peripheral(at address: LEAddress) -> CBPeripheral {
        if let existing = known[address] { return existing }
        let peripheral = CBPeripheral(address: address, manager: self)
        known[address] = peripheral
        return peripheral
    }

    static func flag(_ value: Any?) -> Bool {
        if let bool = value as? Bool { return bool }
        if let number = value as? NSNumber { return number.boolValue }
        return false
    }

    // MARK: Retrieving

    /// Returns peripherals by their identifiers: those this manager knows, and any lab device
    /// whose identifier it is (identifiers encode the address, as iOS remembers known devices).
    public func retrievePeripherals(withIdentifiers identifiers: [UUID]) -> [CBPeripheral] {
        let held = labLock?.enter(); defer { held?.leave() }
        return identifiers.compactMap { id in
            if let peripheral = known.values.first(where: { $0.identifier == id }) { return peripheral }
            return PeerIdentifier.address(for: id).map { peripheral(at: $0) }
        }
    }

    /// Returns the peripherals connected through this manager that have any of the services,
    /// among those discovered or advertised.
    public func retrieveConnectedPeripherals(withServices serviceUUIDs: [CBUUID]) -> [CBPeripheral] {
        let held = labLock?.enter(); defer { held?.leave() }
        let wanted = Set(serviceUUIDs.map(\.bluetoothUUID))
        return byHandle.sorted { $0.key < $1.key }.map(\.value).filter { peripheral in
            let offered = (peripheral.services ?? []).map(\.uuid.bluetoothUUID) + peripheral.advertisedServices
            return offered.contains { wanted.contains($0) }
        }
    }

    // MARK: Connecting

    /// Establishes a local connection to a peripheral. Options:
    /// `CBConnectPeripheralOptionStartDelayKey` (seconds of virtual time before the connect
    /// starts; `.connecting` meanwhile), `CBConnectPeripheralOptionEnableAutoReconnect` (a link
    /// that drops is reported with `isReconnecting` true and connected again when the
    /// peripheral is back); the alert, bridging and ANCS keys are accepted and ignored.
    public func connect(_ peripheral: CBPeripheral, options: [String: Any]? = nil) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard state == .poweredOn else {
            return misuse("<CBCentralManager> can only accept this command while in the powered on state")
        }
        guard peripheral.manager === self else { return misuse("connect: \(peripheral) belongs to another central manager") }
        guard peripheral.state == .disconnected else { return }
        peripheral.state = .connecting
        peripheral.cancelRequested = false
        if Self.flag(options?[CBConnectPeripheralOptionEnableAutoReconnect]) {
            autoReconnecting.insert(peripheral.address)
        } else {
            autoReconnecting.remove(peripheral.address)
        }
        if let delay = Self.startDelay(options), let loop {
            delayedConnects[peripheral.address] = loop.schedule(after: delay) { [weak self, weak peripheral] in
                guard let self, let peripheral, self.delayedConnects.removeValue(forKey: peripheral.address) != nil else { return }
                self.pendingConnects.append(peripheral)
                self.updateInitiation()
            }
            return
        }
        pendingConnects.append(peripheral)
        updateInitiation()
    }

    /// Starts an initiation to every pending peripheral, or, when one is under way for another
    /// set, cancels it (LE Create Connection Cancel) to start again with the set as it is now.
    func updateInitiation() {
        guard let device, !waitsForIdleInitiator, !retired else { return }
        if let current = initiating {
            if !current.elementsEqual(pendingConnects, by: ===), !restartsInitiation {
                restartsInitiation = true
                device.host.cancelConnect()
            }
            return
        }
        guard !pendingConnects.isEmpty else { return }
        let targets = pendingConnects
        initiating = targets
        device.host.connect(toAnyOf: targets.map(\.address), timeout: nil) { [weak self] result in
            guard let self, let current = self.initiating, current.elementsEqual(targets, by: ===) else {
                // The manager lost its controller meanwhile: a late connection is not wanted.
                if case let .success(connection) = result { connection.disconnect() }
                return
            }
            self.initiating = nil
            let restarting = self.restartsInitiation
            self.restartsInitiation = false
            switch result {
            case let .success(connection):
                if let i = self.pendingConnects.firstIndex(where: { $0.address == connection.peer }) {
                    self.attach(self.pendingConnects.remove(at: i), to: connection)
                } else {
                    // Cancelled by the app while the controller was connecting.
                    connection.disconnect(reason: .remoteUserTerminatedConnection)
                }
            case let .failure(error):
                if !restarting { self.initiationFailed(targets, error) }
            }
            self.updateInitiation()
        }
    }

    /// An initiation ended without a connection and not because the set changed. To one
    /// peripheral: it fails to connect, as before. To several: a link that failed to be
    /// established (0x3E) leaves them pending and the initiation starts again, as iOS keeps
    /// pending connects; any other error (the controller refusing the list or the command)
    /// fails them all.
    private func initiationFailed(_ targets: [CBPeripheral], _ error: HostError) {
        if targets.count > 1, case .command(_, .connectionFailedToBeEstablished) = error { return }
        for peripheral in targets {
            guard let i = pendingConnects.firstIndex(where: { $0 === peripheral }) else { continue }
            pendingConnects.remove(at: i)
            peripheral.state = .disconnected
            deliver { $0.centralManager(self, didFailToConnect: peripheral, error: error.connectionError) }
        }
    }

    /// The link is up: settle the ATT_MTU (CoreBluetooth exchanges it on every connection), then
    /// report the connection.
    private func attach(_ peripheral: CBPeripheral, to connection: Connection) {
        byHandle[connection.handle] = peripheral
        connectionEvent(.peerConnected, for: peripheral)
        take(connection, for: peripheral)
        connection.client.exchangeMTU { [weak self, weak peripheral] _ in
            guard let self, let peripheral, peripheral.connection === connection, peripheral.state == .connecting else { return }
            peripheral.state = .connected
            self.deliver { $0.centralManager(self, didConnect: peripheral) }
        }
        peripheral.watchServiceChanges()
    }

    /// `peripheral` now goes with `connection`, and hears when it ends.
    func take(_ connection: Connection, for peripheral: CBPeripheral) {
        peripheral.attach(connection)
        connection.whenDisconnected { [weak self, weak peripheral] reason in
            guard let self, let peripheral, !self.retired else { return }
            self.disconnected(peripheral, handle: connection.handle, reason: reason)
        }
    }

    private func disconnected(_ peripheral: CBPeripheral, handle: UInt16, reason: HCIStatus) {
        byHandle[handle] = nil
        let wasConnecting = peripheral.state == .connecting
        peripheral.detach()
        if controllerIsGoingAway { return }
        connectionEvent(.peerDisconnected, for: peripheral)
        if wasConnecting && !peripheral.cancelRequested {
            deliver { $0.centralManager(self, didFailToConnect: peripheral, error: reason.disconnectionError ?? CBError(.connectionFailed)) }
        } else {
            let error = peripheral.pendingDisconnectError ?? (peripheral.cancelRequested ? nil : reason.disconnectionError)
            peripheral.pendingDisconnectError = nil
            // iOS 17 auto-reconnect: a link the app did not end is connected again when the
            // peripheral is back (a pending connect, which never times out).
            let reconnects = !peripheral.cancelRequested && autoReconnecting.contains(peripheral.address) && state == .poweredOn
            reportDisconnection(of: peripheral, isReconnecting: reconnects, error: error)
            if reconnects && peripheral.state == .disconnected {
                peripheral.state = .connecting
                pendingConnects.append(peripheral)
                updateInitiation()
            }
        }
    }

    /// Cancels an active or pending local connection to a peripheral. The delegate then gets
    /// `centralManager(_:didDisconnectPeripheral:error:)` with a nil error.
    public func cancelPeripheralConnection(_ peripheral: CBPeripheral) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard peripheral.manager === self else { return misuse("cancelPeripheralConnection: \(peripheral) belongs to another central manager") }
        guard peripheral.state != .disconnected else { return }
        peripheral.cancelRequested = true
        autoReconnecting.remove(peripheral.address)
        if let timer = delayedConnects.removeValue(forKey: peripheral.address) {
            timer.cancel()
            peripheral.state = .disconnected
            loop?.execute { [weak self] in self?.reportDisconnection(of: peripheral, isReconnecting: false, error: nil) }
        } else if let i = pendingConnects.firstIndex(where: { $0 === peripheral }) {
            pendingConnects.remove(at: i)
            peripheral.state = .disconnected
            loop?.execute { [weak self] in self?.reportDisconnection(of: peripheral, isReconnecting: false, error: nil) }
            updateInitiation()
        } else if let connection = peripheral.connection {
            peripheral.state = .disconnecting
            connection.disconnect(reason: .remoteUserTerminatedConnection)
        }
    }

    // MARK: Flow control

    /// An ACL fragment left the host: a peripheral waiting for room to write without response
    /// hears `peripheralIsReady(toSendWriteWithoutResponse:)` once the queue is below the limit.
    private func aclSent(handle: UInt16, stillQueued: Int) {
        guard let peripheral = byHandle[handle], peripheral.waitsForWriteWithoutResponseRoom,
              stillQueued < (cbLab?.transmitQueueLimit ?? 0) else { return }
        peripheral.waitsForWriteWithoutResponseRoom = false
        if peripheral.writesDroppedWhileFull > 0 {
            cbLab?.warn("WARNING: \(peripheral.writesDroppedWhileFull) writes without response to \(peripheral) were dropped while the transmit queue was full")
            peripheral.writesDroppedWhileFull = 0
        }
        // Not from inside the driver's send loop: the app may write again at once.
        loop?.execute { [weak peripheral] in
            guard let peripheral, peripheral.state == .connected else { return }
            peripheral.deliver { $0.peripheralIsReady(toSendWriteWithoutResponse: peripheral) }
        }
    }

    // MARK: Delivery

    /// Calls the delegate on the manager's queue.
    func deliver(_ call: (CBCentralManagerDelegate) -> Void) {
        callbacks.run { if let delegate = self.delegate { call(delegate) } }
    }

    public override var description: String { "<CBCentralManager: state = \(state)>" }
}

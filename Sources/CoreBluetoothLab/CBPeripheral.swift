import ATT
import BLEWire
import Foundation
import GAP
import GATT

/// A remote peripheral device, as a central manager sees it: GATT client operations over the
/// connection, results through `delegate` on the central manager's queue.
///
/// Operations need a connected peripheral; otherwise they are ignored with an "API MISUSE"
/// warning (in `CBLab.warnings`), as CoreBluetooth does. GATT procedures run one after another
/// in the order they were called (see `enqueue`), and their callbacks come in that order; writes
/// without response and RSSI reads do not wait for them. When the link goes down, callbacks of unfinished operations are dropped: the app hears
/// `centralManager(_:didDisconnectPeripheral:error:)` instead.
public class CBPeripheral: CBPeer {
    /// The delegate object specified to receive peripheral events.
    public var delegate: CBPeripheralDelegate? { get { locked { _delegate } } set { locked { _delegate = newValue } } }
    private weak var _delegate: CBPeripheralDelegate?
    /// The name of the peripheral: its advertised local name (nil until one was seen).
    public internal(set) var name: String? { get { locked { _name } } set { locked { _name = newValue } } }
    private var _name: String? = nil
    /// The current connection state of the peripheral.
    public internal(set) var state: CBPeripheralState { get { locked { _state } } set { locked { _state = newValue } } }
    private var _state: CBPeripheralState = .disconnected
    /// A list of a peripheral's discovered services (nil before the first discovery).
    public internal(set) var services: [CBService]? { get { locked { _services } } set { locked { _services = newValue } } }
    private var _services: [CBService]? = nil
    /// Apple Notification Center Service authorization: never, in the lab.
    public var ancsAuthorized: Bool { false }

    weak var manager: CBCentralManager?
    private(set) var connection: Connection?
    var cancelRequested = false
    var advertisedServices: [BluetoothUUID] = []
    /// A write without response found the link full; `peripheralIsReady` is owed.
    var waitsForWriteWithoutResponseRoom = false
    /// Set when the link is dropped because the peripheral lost its bond: the error
    /// `centralManager(_:didDisconnectPeripheral:error:)` reports then.
    var pendingDisconnectError: Error?
    /// The Service Changed characteristic's value handle, once subscribed.
    var serviceChangedHandle: UInt16?
    /// GATT procedures waiting for the one in progress (see `enqueue`).
    private var procedures: [(@escaping () -> Void) -> Void] = []
    private var procedureRunning = false
    /// Counts connections, so that a procedure of an earlier one cannot release the queue.
    private var generation = 0

    init(address: LEAddress, manager: CBCentralManager) {
        self.manager = manager
        super.init(address: address)
    }

    func attach(_ connection: Connection) {
        self.connection = connection
        resetProcedures()
        services = nil
        serviceChangedHandle = nil
        waitsForWriteWithoutResponseRoom = false
        connection.client.onNotification = { [weak self] notification in self?.received(notification) }
    }

    func detach() {
        connection = nil
        resetProcedures()
        state = .disconnected
        waitsForWriteWithoutResponseRoom = false
        for characteristic in (services ?? []).flatMap({ $0.characteristics ?? [] }) { characteristic.isNotifying = false }
    }

    /// The connection, when the peripheral is connected; else a misuse warning and nil.
    func connected(_ what: String) -> Connection? {
        guard state == .connected, let connection else {
            manager?.misuse("\(self) can only accept commands while in the connected state (\(what))")
            return nil
        }
        return connection
    }

    /// Runs GATT procedures one after another, in the order the app asked for them, as
    /// CoreBluetooth does: a procedure of several requests (setting notifications discovers the
    /// descriptors, then writes the CCCD; a long write is several Prepare Writes) completes before
    /// the next one starts, so callbacks come in call order. `start` gets a `done` to call once.
    func enqueue(on connection: Connection, _ start: @escaping (_ done: @escaping () -> Void) -> Void) {
        let current = generation
        procedures.append { [weak self] done in
            guard let self, self.connection === connection, self.generation == current else { return done() }
            start(done)
        }
        runNextProcedure()
    }

    private func runNextProcedure() {
        guard !procedureRunning, !procedures.isEmpty else { return }
        procedureRunning = true
        let next = procedures.removeFirst()
        let current = generation
        var finished = false
        next { [weak self] in
            guard let self, !finished, self.generation == current else { return }
            finished = true
            self.procedureRunning = false
            self.runNextProcedure()
        }
    }

    private func resetProcedures() {
        generation += 1
        procedures.removeAll()
        procedureRunning = false
    }

    /// Runs `body` when `connection` is still this peripheral's: a result that arrives after the
    /// link changed is dropped.
    func ifStill(_ connection: Connection, _ body: () -> Void) {
        guard self.connection === connection else { return }
        body()
    }

    func deliver(_ call: (CBPeripheralDelegate) -> Void) {
        guard let manager else { return }
        manager.callbacks.run { if let delegate = self.delegate { call(delegate) } }
    }

    /// Reports `result` through `report`, dropping failures caused by the link going away.
    func complete<T>(_ result: Result<T, GATTError>, on connection: Connection, _ report: (Result<T, Error>) -> Void) {
        ifStill(connection) {
            switch result {
            case let .success(value): report(.success(value))
            case let .failure(error) where !error.isLinkLoss: report(.failure(error.cbError))
            case .failure: break
            }
        }
    }

    // MARK: Reading

    /// Retrieves the value of a specified characteristic (a Read Request, then Read Blob Requests
    /// for a long value). The result comes in `peripheral(_:didUpdateValueFor:error:)`.
    public func readValue(for characteristic: CBCharacteristic) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("readValue(for:)"), let remote = characteristic.remote else { return }
        enqueue(on: connection) { [weak self] done in
            self?.secured(connection, { connection.client.read(handle: remote.valueHandle, completion: $0) }) { [weak self] result in
                done()
                self?.complete(result, on: connection) { outcome in
                    guard let self else { return }
                    if case let .success(bytes) = outcome { characteristic.storedValue = Data(bytes) }
                    self.deliver { $0.peripheral(self, didUpdateValueFor: characteristic, error: outcome.failureError) }
                }
            }
        }
    }

    /// Retrieves the value of a specified characteristic descriptor.
    public func readValue(for descriptor: CBDescriptor) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("readValue(for descriptor)"), let handle = descriptor.handle else { return }
        enqueue(on: connection) { [weak self] done in
            self?.secured(connection, { connection.client.read(handle: handle, completion: $0) }) { [weak self] result in
                done()
                self?.complete(result, on: connection) { outcome in
                    guard let self else { return }
                    if case let .success(bytes) = outcome { descriptor.storedValue = CBDescriptor.typedValue(bytes, for: descriptor.uuid) }
                    self.deliver { $0.peripheral(self, didUpdateValueFor: descriptor, error: outcome.failureError) }
                }
            }
        }
    }

    // MARK: Writing

    /// Writes the value of a characteristic.
    ///
    /// - `.withResponse`: an ATT Write Request (Prepare/Execute Write Requests beyond ATT_MTU − 3
    ///   octets, up to 512), sent whatever the characteristic's properties say: a peripheral that
    ///   refuses answers with an Error Response, reported in `peripheral(_:didWriteValueFor:error:)`
    ///   (e.g. `CBATTError.writeNotPermitted`).
    /// - `.withoutResponse`: an ATT Write Command; `didWriteValueFor` is never called. As on
    ///   Apple's platforms, the write is dropped (with a warning) when the characteristic lacks
    ///   the `.writeWithoutResponse` property or the value exceeds
    ///   `maximumWriteValueLength(for: .withoutResponse)`. It is still sent when
    ///   `canSendWriteWithoutResponse` is false; `peripheralIsReady(toSendWriteWithoutResponse:)`
    ///   follows once the link has room again.
    public func writeValue(_ data: Data, for characteristic: CBCharacteristic, type: CBCharacteristicWriteType) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("writeValue(_:for:type:)"), let remote = characteristic.remote else { return }
        let bytes = [UInt8](data)
        switch type {
        case .withResponse:
            enqueue(on: connection) { [weak self] done in
                self?.secured(connection, { connection.client.write(bytes, handle: remote.valueHandle, completion: $0) }) { [weak self] result in
                    done()
                    self?.complete(result, on: connection) { outcome in
                        guard let self else { return }
                        self.deliver { $0.peripheral(self, didWriteValueFor: characteristic, error: outcome.failureError) }
                    }
                }
            }
        case .withoutResponse:
            guard characteristic.properties.contains(.writeWithoutResponse) else {
                manager?.cbLab?.warn("WARNING: Characteristic \(characteristic) does not specify the \"Write Without Response\" property - ignoring response-less write")
                return
            }
            guard bytes.count <= maximumWriteValueLength(for: .withoutResponse) else {
                manager?.cbLab?.warn("WARNING: \(bytes.count) octets exceed maximumWriteValueLength(for: .withoutResponse) = \(maximumWriteValueLength(for: .withoutResponse)) - ignoring response-less write")
                return
            }
            connection.client.writeWithoutResponse(bytes, handle: remote.valueHandle)
            if !canSendWriteWithoutResponse { waitsForWriteWithoutResponseRoom = true }
        }
    }

    /// Writes the value of a characteristic descriptor (a Write Request). The Client
    /// Characteristic Configuration descriptor cannot be written this way (use
    /// `setNotifyValue(_:for:)`), as in CoreBluetooth.
    public func writeValue(_ data: Data, for descriptor: CBDescriptor) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("writeValue(_:for descriptor)"), let handle = descriptor.handle else { return }
        guard descriptor.uuid.bluetoothUUID != .clientCharacteristicConfiguration else {
            manager?.misuse("Client Characteristic Configuration descriptors must be configured using setNotifyValue:forCharacteristic:")
            return
        }
        enqueue(on: connection) { [weak self] done in
            self?.secured(connection, { connection.client.write([UInt8](data), handle: handle, completion: $0) }) { [weak self] result in
                done()
                self?.complete(result, on: connection) { outcome in
                    guard let self else { return }
                    self.deliver { $0.peripheral(self, didWriteValueFor: descriptor, error: outcome.failureError) }
                }
            }
        }
    }

    /// Whether a write without response can go now: the link's host queue holds fewer ACL
    /// fragments than `CBLab.transmitQueueLimit`.
    public var canSendWriteWithoutResponse: Bool {
        let held = labLock?.enter(); defer { held?.leave() }
        guard state == .connected, let connection else { return false }
        return connection.link.queuedFragments < (manager?.cbLab?.transmitQueueLimit ?? Int.max)
    }

    /// The maximum amount of data, in bytes, you can send to a characteristic in a single write:
    /// ATT_MTU − 3 without response; 512 (the longest attribute value) with response.
    public func maximumWriteValueLength(for type: CBCharacteristicWriteType) -> Int {
        let held = labLock?.enter(); defer { held?.leave() }
        switch type {
        case .withResponse: return ATTBearer.maximumAttributeValueLength
        case .withoutResponse: return (connection?.bearer.mtu ?? ATTBearer.defaultMTU) - 3
        }
    }

    // MARK: Notifications

    /// Sets notifications or indications for the value of a specified characteristic, by
    /// writing its Client Characteristic Configuration descriptor (notifications when the
    /// characteristic offers them, else indications). On a characteristic with neither
    /// property nothing is sent and the delegate hears `CBATTError.requestNotSupported`.
    public func setNotifyValue(_ enabled: Bool, for characteristic: CBCharacteristic) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("setNotifyValue(_:for:)"), let remote = characteristic.remote else { return }
        guard !characteristic.properties.isDisjoint(with: [.notify, .indicate]) else {
            // Refused without a word to the peripheral, in its turn.
            enqueue(on: connection) { [weak self] done in
                self?.manager?.loop?.execute {
                    done()
                    guard let self else { return }
                    self.ifStill(connection) {
                        self.deliver { $0.peripheral(self, didUpdateNotificationStateFor: characteristic, error: CBATTError(.requestNotSupported)) }
                    }
                }
            }
            return
        }
        enqueue(on: connection) { done in
            let finish: (Result<Void, GATTError>) -> Void = { [weak self] result in
                done()
                self?.complete(result, on: connection) { outcome in
                    guard let self else { return }
                    if case .success = outcome { characteristic.isNotifying = enabled }
                    self.deliver { $0.peripheral(self, didUpdateNotificationStateFor: characteristic, error: outcome.failureError) }
                }
            }
            // The descriptors found on the way are kept, so the CCCD is looked for only once.
            connection.client.discoverDescriptorsIfNeeded(of: remote) { [weak characteristic] descriptors in
                if let descriptors { characteristic?.remote?.descriptors = descriptors }
                let current = characteristic?.remote ?? remote
                if enabled {
                    self.secured(connection, { connection.client.subscribe(to: current, completion: $0) }, completion: finish)
                } else {
                    connection.client.unsubscribe(from: current, completion: finish)
                }
            }
        }
    }

    // MARK: Security

    /// Runs `operation`; when the peripheral answers Insufficient Authentication or Insufficient
    /// Encryption, secures the link as iOS does (encrypts with the bond, else pairs) and runs it
    /// once more. A bond the peripheral no longer has (PIN or Key Missing) ends the link with
    /// `CBError.peerRemovedPairingInformation`, as on iOS, where the user must forget the device.
    func secured<T>(_ connection: Connection, _ operation: @escaping (@escaping (Result<T, GATTError>) -> Void) -> Void,
                    completion: @escaping (Result<T, GATTError>) -> Void) {
        operation { [weak self] result in
            guard let self, case let .failure(.att(code, _)) = result,
                  code == .insufficientAuthentication || code == .insufficientEncryption, connection.isConnected,
                  let host = connection.host else { return completion(result) }
            let retry: (Bool) -> Void = { secured in secured ? operation(completion) : completion(result) }
            if host.bonds.bond(for: connection.peer) != nil, !connection.security.encrypted {
                connection.encrypt { [weak self] outcome in
                    switch outcome {
                    case .success: retry(true)
                    case .failure(.status(.pinOrKeyMissing)):
                        self?.pendingDisconnectError = CBError(.peerRemovedPairingInformation)
                        connection.disconnect(reason: .authenticationFailure)
                        retry(false)
                    case .failure: retry(false)
                    }
                }
            } else if !connection.security.encrypted || (code == .insufficientAuthentication && !connection.security.authenticated) {
                connection.pair(self.manager?.cbLab?.pairing) { outcome in
                    if case .success = outcome { retry(connection.security.encrypted) } else { retry(false) }
                }
            } else {
                completion(result)
            }
        }
    }

    private func received(_ notification: GATTNotification) {
        if notification.handle == serviceChangedHandle { return servicesChanged(notification.value) }
        guard let characteristic = (services ?? []).lazy.flatMap({ $0.characteristics ?? [] })
            .first(where: { $0.remote?.valueHandle == notification.handle }) else { return }
        characteristic.storedValue = Data(notification.value)
        deliver { $0.peripheral(self, didUpdateValueFor: characteristic, error: nil) }
    }

    // MARK: RSSI

    /// Retrieves the current RSSI value for the peripheral while connected (HCI Read RSSI).
    public func readRSSI() {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("readRSSI()") else { return }
        connection.readRSSI { [weak self] result in
            guard let self else { return }
            self.ifStill(connection) {
                switch result {
                case let .success(rssi): self.deliver { $0.peripheral(self, didReadRSSI: NSNumber(value: rssi), error: nil) }
                case .failure: self.deliver { $0.peripheral(self, didReadRSSI: NSNumber(value: 127), error: CBError(.unknown)) }
                }
            }
        }
    }

    public override var description: String {
        "<CBPeripheral: identifier = \(identifier.uuidString), name = \(name ?? "(null)"), state = \(state)>"
    }
}

extension GATTClient {
    /// The characteristic's descriptors when they are not known yet (nil when they are, or on
    /// failure: the subscription then reports what went wrong).
    func discoverDescriptorsIfNeeded(of characteristic: GATTRemoteCharacteristic, completion: @escaping ([GATTRemoteDescriptor]?) -> Void) {
        guard characteristic.configurationHandle == nil else { return completion(nil) }
        discoverDescriptors(of: characteristic) { completion(try? $0.get()) }
    }
}

extension Result {
    var failureError: Error? {
        if case let .failure(error) = self { return error }
        return nil
    }
}

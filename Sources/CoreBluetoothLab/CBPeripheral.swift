import ATT
import BLEWire
import Foundation
import GAP
import GATT
import HostLink

/// A remote peripheral device, as a central manager sees it: GATT client operations over the
/// connection, results through `delegate` on the central manager's queue.
///
/// Operations need a connected peripheral, and attributes this peripheral handed out on the
/// current connection; otherwise they are ignored with an "API MISUSE" warning (in
/// `CBLab.warnings`), as CoreBluetooth does: nothing is sent and no callback comes. GATT procedures run one after another
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
    /// Writes without response dropped since the transmit queue last had room (see `writeValue`).
    var writesDroppedWhileFull = 0
    /// An ATT transaction on the current connection timed out; the link is being torn down.
    private var attTimedOut = false

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
        writesDroppedWhileFull = 0
        attTimedOut = false
        connection.client.onNotification = { [weak self] notification in self?.received(notification) }
        // A timeout outside the app's operations (Service Changed setup, an indication of the
        // central's own server) ends the link as well.
        connection.bearer.onFailure = { [weak self, weak connection] error in
            guard case .timeout = error, let self, let connection else { return }
            self.attTransactionTimedOut(on: connection)
        }
    }

    func detach() {
        connection = nil
        resetProcedures()
        state = .disconnected
        waitsForWriteWithoutResponseRoom = false
        writesDroppedWhileFull = 0
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
            // A bearer that failed (an ATT transaction timeout) takes no further ATT: the link is
            // going down, and the procedures still queued end with it, without callbacks.
            guard let self, self.connection === connection, self.generation == current,
                  connection.bearer.state == .open else { return done() }
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

    /// Reports `result` through `report`, dropping failures caused by the link going away. An
    /// ATT transaction timeout is reported, then ends the link (`attTransactionTimedOut`).
    func complete<T>(_ result: Result<T, GATTError>, on connection: Connection, _ report: (Result<T, Error>) -> Void) {
        ifStill(connection) {
            switch result {
            case let .success(value): report(.success(value))
            case .failure(.timeout):
                attTransactionTimedOut(on: connection)
                report(.failure(GATTError.timeout.cbError))
            case let .failure(error) where !error.isLinkLoss: report(.failure(error.cbError))
            case .failure: break
            }
        }
    }

    /// An ATT transaction on `connection` went unanswered for 30 s. Core 5.4 Vol 3 Part F 3.3.3:
    /// no further ATT PDUs may be sent on that bearer, and a new one needs a new link. As iOS
    /// does, the central ends the link (HCI Disconnect, Remote User Terminated Connection 0x13):
    /// the peripheral is `.disconnecting` at once (later calls are misuse, as on a disconnected
    /// peripheral), the operation that timed out reports the timeout, queued ones are dropped,
    /// and `centralManager(_:didDisconnectPeripheral:error:)` follows with
    /// `CBError.connectionTimeout` once the controller reports the disconnection.
    func attTransactionTimedOut(on connection: Connection) {
        guard self.connection === connection, !attTimedOut else { return }
        attTimedOut = true
        resetProcedures()
        waitsForWriteWithoutResponseRoom = false
        if state == .connected {
            state = .disconnecting
            pendingDisconnectError = CBError(.connectionTimeout)
        }
        connection.disconnect(reason: .remoteUserTerminatedConnection)
    }

    // MARK: Whose attributes

    /// Whether `service` is one of this peripheral's services now: discovered on the current
    /// connection and not invalidated since.
    private func isCurrent(_ service: CBService?) -> Bool {
        guard let service, service.peripheral === self else { return false }
        return (services ?? []).contains { $0 === service }
    }

    /// The characteristic's handles when it is one of this peripheral's current
    /// characteristics; else an "API MISUSE" warning and nil.
    func current(_ characteristic: CBCharacteristic, _ what: String) -> GATTRemoteCharacteristic? {
        guard let service = characteristic.service, isCurrent(service),
              (service.storedCharacteristics ?? []).contains(where: { $0 === characteristic }),
              let remote = characteristic.remote else {
            misuse(of: characteristic, owner: characteristic.service?.peripheral, what)
            return nil
        }
        return remote
    }

    /// The descriptor's handle when it belongs to one of this peripheral's current
    /// characteristics; else an "API MISUSE" warning and nil.
    func current(_ descriptor: CBDescriptor, _ what: String) -> UInt16? {
        guard let characteristic = descriptor.characteristic, let service = characteristic.service, isCurrent(service),
              (service.storedCharacteristics ?? []).contains(where: { $0 === characteristic }),
              (characteristic.storedDescriptors ?? []).contains(where: { $0 === descriptor }),
              let handle = descriptor.handle else {
            misuse(of: descriptor, owner: descriptor.characteristic?.service?.peripheral, what)
            return nil
        }
        return handle
    }

    /// The service's handles when it is one of this peripheral's current services; else an
    /// "API MISUSE" warning and nil.
    func current(_ service: CBService, _ what: String) -> GATTRemoteService? {
        guard isCurrent(service), let remote = service.remote else {
            misuse(of: service, owner: service.peripheral, what)
            return nil
        }
        return remote
    }

    /// An attribute of another peripheral (iOS would send it to no one, the lab would send it to
    /// this one), or a stale one: from before a reconnection, or of a service invalidated since
    /// (its handles may now mean something else, or nothing).
    private func misuse(of attribute: CBAttribute, owner: CBPeripheral?, _ what: String) {
        if let owner, owner !== self {
            manager?.misuse("\(attribute) belongs to \(owner), not to \(self) - ignoring \(what)")
        } else {
            manager?.misuse("\(attribute) is not a valid attribute of \(self): it was discovered before the peripheral reconnected "
                + "or its services changed (discover it again) - ignoring \(what)")
        }
    }

    // MARK: Reading

    /// Retrieves the value of a specified characteristic (a Read Request, then Read Blob Requests
    /// for a long value). The result comes in `peripheral(_:didUpdateValueFor:error:)`.
    public func readValue(for characteristic: CBCharacteristic) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("readValue(for:)"), let remote = current(characteristic, "readValue(for:)") else { return }
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
        guard let connection = connected("readValue(for descriptor)"), let handle = current(descriptor, "readValue(for descriptor)") else { return }
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
    ///   `maximumWriteValueLength(for: .withoutResponse)`. A write made while
    ///   `canSendWriteWithoutResponse` is false finds the transmit queue full
    ///   (`CBLab.transmitQueueLimit`) and is dropped with an "API MISUSE" warning, as iOS drops
    ///   writes an app floods it with; `peripheralIsReady(toSendWriteWithoutResponse:)` follows
    ///   once the link has room again (with a warning counting the writes dropped meanwhile).
    public func writeValue(_ data: Data, for characteristic: CBCharacteristic, type: CBCharacteristicWriteType) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("writeValue(_:for:type:)"), let remote = current(characteristic, "writeValue(_:for:type:)") else { return }
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
            guard canSendWriteWithoutResponse else {
                // The transmit queue is full and the app did not wait for room: iOS drops the
                // write. The first one dropped is reported; the count comes with the room.
                waitsForWriteWithoutResponseRoom = true
                writesDroppedWhileFull += 1
                if writesDroppedWhileFull == 1 {
                    manager?.misuse("\(self) writeValue(_:for:type: .withoutResponse) while canSendWriteWithoutResponse is false: "
                        + "the transmit queue is full - dropping this write and every further one until "
                        + "peripheralIsReady(toSendWriteWithoutResponse:)")
                }
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
        guard let connection = connected("writeValue(_:for descriptor)"), let handle = current(descriptor, "writeValue(_:for descriptor)") else { return }
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
        guard let connection = connected("setNotifyValue(_:for:)"), let remote = current(characteristic, "setNotifyValue(_:for:)") else { return }
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

    // MARK: L2CAP channels

    /// Opens an L2CAP channel (an LE credit based channel, Core 5.4 Vol 3 Part A 4.22) to the
    /// peripheral's `PSM`; `peripheral(_:didOpen:error:)` follows with the channel, or the error.
    /// A peripheral that refuses for want of security (insufficient authentication or
    /// encryption) is paired with or encrypted to, as for ATT, and asked once more.
    public func openL2CAPChannel(_ PSM: CBL2CAPPSM) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("openL2CAPChannel(_:)"), let cbLab = manager?.cbLab else { return }
        let parameters = cbLab.l2capChannelParameters
        let open: (@escaping (Result<L2CAPCreditBasedChannel, L2CAPChannelError>) -> Void) -> Void = { done in
            connection.openL2CAPChannel(psm: PSM, parameters: parameters, completion: done)
        }
        open { [weak self] result in
            guard let self else { return }
            if case let .failure(.refused(code)) = result, code == .insufficientAuthentication || code == .insufficientEncryption {
                self.secureLink(connection, forAuthentication: code == .insufficientAuthentication) { secured in
                    if secured { open { [weak self] in self?.channelOpened($0, on: connection) } } else { self.channelOpened(result, on: connection) }
                }
            } else {
                self.channelOpened(result, on: connection)
            }
        }
    }

    private func channelOpened(_ result: Result<L2CAPCreditBasedChannel, L2CAPChannelError>, on connection: Connection) {
        guard let manager, let loop = manager.loop, let cbLab = manager.cbLab else { return }
        switch result {
        case let .success(channel):
            let l2cap = CBL2CAPChannel(peer: self, channel: channel, loop: loop, callbacks: manager.callbacks,
                                       sendBufferSize: cbLab.l2capSendBufferSize, lock: labLock)
            ifStill(connection) { deliver { $0.peripheral(self, didOpen: l2cap, error: nil) } }
        case .failure(.linkClosed):
            break   // the app hears didDisconnectPeripheral instead
        case let .failure(error):
            ifStill(connection) { deliver { $0.peripheral(self, didOpen: nil, error: error.cbError) } }
        }
    }

    /// Encrypts with the bond, else pairs, as `secured` does for ATT; tells whether the link
    /// is encrypted afterwards.
    private func secureLink(_ connection: Connection, forAuthentication: Bool, completion: @escaping (Bool) -> Void) {
        guard connection.isConnected, let host = connection.host else { return completion(false) }
        if host.bonds.bond(for: connection.peer) != nil, !connection.security.encrypted {
            connection.encrypt { [weak self] outcome in
                switch outcome {
                case .success: completion(true)
                case .failure(.status(.pinOrKeyMissing)):
                    self?.pendingDisconnectError = CBError(.peerRemovedPairingInformation)
                    connection.disconnect(reason: .authenticationFailure)
                    completion(false)
                case .failure: completion(false)
                }
            }
        } else if !connection.security.encrypted || (forAuthentication && !connection.security.authenticated) {
            connection.pair(manager?.cbLab?.pairing) { outcome in
                if case .success = outcome { completion(connection.security.encrypted) } else { completion(false) }
            }
        } else {
            completion(false)
        }
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

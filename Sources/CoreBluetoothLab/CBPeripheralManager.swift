import ATT
import BLELab
import Dispatch
import Foundation
import GAP
import GATT
import HCI
import HostLink

/// An object that manages and advertises peripheral services exposed by this app — a GATT
/// server and advertiser on its own controller in the current `CBLab`.
///
/// - `add(_:)` lays the service out in the host's GATT database. A characteristic with a value
///   is static (the server answers reads itself); one without goes to the delegate as
///   `CBATTRequest`s, answered with `respond(to:withResult:)`.
/// - Advertising carries the local name and service UUIDs only, as CoreBluetooth's does; it
///   carries on after a central connects (the controller's legacy advertising stops on a
///   connection; the manager starts it again), until `stopAdvertising()`.
/// - `updateValue(_:for:onSubscribedCentrals:)` returns false while any target link holds
///   `CBLab.transmitQueueLimit` ACL fragments or more; `peripheralManagerIsReady(toUpdateSubscribers:)`
///   follows once it drains.
public class CBPeripheralManager: CBManager {
    /// The delegate object that receives peripheral manager events.
    public var delegate: CBPeripheralManagerDelegate? { get { locked { _delegate } } set { locked { _delegate = newValue } } }
    private weak var _delegate: CBPeripheralManagerDelegate?
    /// A Boolean value that indicates whether the peripheral is advertising data.
    public private(set) var isAdvertising: Bool { get { locked { _isAdvertising } } set { locked { _isAdvertising = newValue } } }
    private var _isAdvertising: Bool = false

    struct Published {
        let service: CBMutableService
        let handles: GATTServiceHandles
    }

    private(set) var published: [Published] = []
    /// Connected centrals, by the ATT bearer of their connection.
    private var centrals: [ObjectIdentifier: CBCentral] = [:]
    /// What `startAdvertising` asked for, until `stopAdvertising`.
    private var advertising: AdvertisingConfiguration?
    var waitsForUpdateRoom = false

    public convenience init() {
        self.init(delegate: nil, queue: nil, options: nil)
    }

    public convenience init(delegate: CBPeripheralManagerDelegate?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: nil)
    }

    /// Initializes the peripheral manager with a specified delegate, dispatch queue (nil: the
    /// main queue) and initialization options (accepted and ignored).
    public init(delegate: CBPeripheralManagerDelegate?, queue: DispatchQueue?, options: [String: Any]? = nil) {
        let held = CBLab.current?.lock.enter(); defer { held?.leave() }
        _delegate = delegate
        super.init(queue: queue, kind: "peripheral-manager")
        guard let host = device?.host else { return }
        host.onConnection = { [weak self] connection in self?.connected(connection) }
        host.gattServer.onSubscriptionChange = { [weak self] event in self?.subscriptionChanged(event) }
        host.driver.onACLSent = { [weak self] handle, stillQueued in self?.aclSent(handle: handle, stillQueued: stillQueued) }
    }

    var server: GATTServer? { device?.host.gattServer }

    // MARK: State

    override func stateDidChange() {
        deliver { $0.peripheralManagerDidUpdateState(self) }
    }

    /// CoreBluetooth: below `.poweredOn` advertising has stopped and connected centrals are
    /// disconnected; below `.poweredOff` (`.resetting`) the local database is cleared too, and
    /// services must be added again. (After a mere power-off they are still there: adding the
    /// same service object again fails with `CBError.invalidParameters`.)
    override func controllerWillGoAway(to newState: CBManagerState) {
        isAdvertising = false
        advertising = nil
        for entry in published {
            for case let characteristic as CBMutableCharacteristic in entry.service.characteristics ?? [] {
                characteristic.subscribedCentrals = []
            }
        }
        centrals.removeAll()
        if newState.rawValue < CBManagerState.poweredOff.rawValue {
            removeAllServices()
            // Published L2CAP channels go with the database: the app publishes them again.
            if let host = device?.host { for psm in host.publishedL2CAPChannels { host.unpublishL2CAPChannel(psm) } }
        }
    }

    // MARK: Services

    /// Publishes a service and its characteristics to the local GATT database;
    /// `peripheralManager(_:didAdd:error:)` follows (with `CBError.invalidParameters` for a
    /// service already published, or a characteristic with a cached value that is not read-only).
    public func add(_ service: CBMutableService) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard state == .poweredOn, let server else {
            return misuse("<CBPeripheralManager> can only accept this command while in the powered on state")
        }
        let characteristics = (service.characteristics ?? []).compactMap { $0 as? CBMutableCharacteristic }
        var failure: Error?
        if published.contains(where: { $0.service === service }) { failure = CBError(.invalidParameters) }
        // A cached value makes a characteristic static: CoreBluetooth insists it be read-only.
        for c in characteristics where c.value != nil && !c.properties.isSubset(of: [.read, .broadcast]) {
            cbLab?.warn("characteristic \(c.uuid) has a cached value but is not read-only")
            failure = CBError(.invalidParameters)
        }
        if failure == nil {
            let gatt = GATTService(uuid: service.uuid.bluetoothUUID, isPrimary: service.isPrimary, characteristics: characteristics.map { c in
                var characteristic = GATTCharacteristic(
                    uuid: c.uuid.bluetoothUUID, properties: c.properties.gattProperties, value: c.value.map { [UInt8]($0) } ?? [],
                    descriptors: (c.descriptors ?? []).compactMap { d in
                        d.value.flatMap(CBDescriptor.bytes(of:)).map { GATTDescriptor(uuid: d.uuid.bluetoothUUID, value: $0) }
                    })
                // CBAttributePermissions' encryption: the server answers a central on an
                // unencrypted link Insufficient Authentication (or Insufficient Encryption once
                // bonded), and the central pairs, as iOS does. The CCCD of an encrypted
                // characteristic asks for encryption too, as Apple's stack does.
                characteristic.permissions = c.permissions.gattPermissions
                if c.permissions.contains(.readEncryptionRequired) {
                    characteristic.configurationPermissions = AttributePermissions(write: .encrypted)
                }
                return characteristic
            })
            do {
                let handles = try server.addService(gatt)
                published.append(Published(service: service, handles: handles))
                for (c, h) in zip(characteristics, handles.characteristics) {
                    c.service = service
                    if c.value == nil { installHandlers(for: c, valueHandle: h.valueHandle) }
                }
            } catch {
                cbLab?.warn("add(_:): \(error)")
                failure = CBError(.outOfSpace)
            }
        }
        later { $0.peripheralManager(self, didAdd: service, error: failure) }
    }

    /// Removes a published service from the local GATT database.
    public func remove(_ service: CBMutableService) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let i = published.firstIndex(where: { $0.service === service }) else { return }
        let entry = published.remove(at: i)
        _ = server?.removeService(at: entry.handles.range.start)
    }

    /// Removes all published services from the local GATT database.
    public func removeAllServices() {
        let held = labLock?.enter(); defer { held?.leave() }
        for entry in published { _ = server?.removeService(at: entry.handles.range.start) }
        published.removeAll()
    }

    /// The characteristic published at `valueHandle`.
    func characteristic(atValueHandle valueHandle: UInt16) -> CBMutableCharacteristic? {
        for entry in published {
            for (c, h) in zip(entry.service.characteristics ?? [], entry.handles.characteristics) where h.valueHandle == valueHandle {
                return c as? CBMutableCharacteristic
            }
        }
        return nil
    }

    func valueHandle(of characteristic: CBMutableCharacteristic) -> UInt16? {
        for entry in published {
            for (c, h) in zip(entry.service.characteristics ?? [], entry.handles.characteristics) where c === characteristic {
                return h.valueHandle
            }
        }
        return nil
    }

    // MARK: Advertising

    /// Advertises peripheral manager data: `CBAdvertisementDataLocalNameKey` and
    /// `CBAdvertisementDataServiceUUIDsKey` (other keys are ignored, as by CoreBluetooth).
    /// `peripheralManagerDidStartAdvertising(_:error:)` follows.
    public func startAdvertising(_ advertisementData: [String: Any]?) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard state == .poweredOn, let host = device?.host else {
            return misuse("<CBPeripheralManager> can only accept this command while in the powered on state")
        }
        guard advertising == nil else {
            return later { $0.peripheralManagerDidStartAdvertising(self, error: CBError(.alreadyAdvertising)) }
        }
        let configuration = AdvertisementData.configuration(from: advertisementData)
        advertising = configuration
        host.startAdvertising(configuration) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.isAdvertising = self.advertising != nil
                self.deliver { $0.peripheralManagerDidStartAdvertising(self, error: nil) }
            case let .failure(error):
                self.advertising = nil
                self.cbLab?.warn("startAdvertising: \(error)")
                self.deliver { $0.peripheralManagerDidStartAdvertising(self, error: CBError(.invalidParameters)) }
            }
        }
    }

    /// Stops advertising peripheral manager data.
    public func stopAdvertising() {
        let held = labLock?.enter(); defer { held?.leave() }
        advertising = nil
        isAdvertising = false
        device?.host.stopAdvertising()
    }

    // MARK: Centrals

    private func connected(_ connection: Connection) {
        guard connection.role == .peripheral else { return }
        let central = CBCentral(connection: connection)
        let key = ObjectIdentifier(connection.bearer)
        centrals[key] = central
        connection.whenDisconnected { [weak self] _ in self?.disconnected(central, key: key) }
        // Legacy advertising ended with the connection; CoreBluetooth keeps advertising.
        if let advertising, let host = device?.host, !host.isAdvertising { host.startAdvertising(advertising) }
    }

    private func disconnected(_ central: CBCentral, key: ObjectIdentifier) {
        centrals[key] = nil
        guard !controllerIsGoingAway else { return }
        for entry in published {
            for case let c as CBMutableCharacteristic in entry.service.characteristics ?? [] {
                guard let i = c.subscribedCentrals?.firstIndex(where: { $0 === central }) else { continue }
                c.subscribedCentrals?.remove(at: i)
                deliver { $0.peripheralManager(self, central: central, didUnsubscribeFrom: c) }
            }
        }
    }

    func central(for bearer: ATTBearer) -> CBCentral? { centrals[ObjectIdentifier(bearer)] }

    private func subscriptionChanged(_ event: GATTSubscriptionEvent) {
        guard let c = characteristic(atValueHandle: event.valueHandle), let central = central(for: event.connection.bearer) else { return }
        if event.isSubscribe {
            c.subscribedCentrals = (c.subscribedCentrals ?? []) + [central]
            deliver { $0.peripheralManager(self, central: central, didSubscribeTo: c) }
        } else if event.isUnsubscribe {
            c.subscribedCentrals?.removeAll { $0 === central }
            deliver { $0.peripheralManager(self, central: central, didUnsubscribeFrom: c) }
        }
    }

    // MARK: L2CAP channels

    /// Publishes an L2CAP channel on the lowest free dynamic PSM (0x0080–0x00FF), as iOS does;
    /// `peripheralManager(_:didPublishL2CAPChannel:error:)` follows with it. Each central that
    /// opens a channel to it is announced with `peripheralManager(_:didOpen:error:)`. With
    /// `encryptionRequired`, a central on an unencrypted link is refused (insufficient
    /// authentication, or insufficient encryption once bonded) and pairs or encrypts first.
    public func publishL2CAPChannel(withEncryption encryptionRequired: Bool) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard state == .poweredOn, let host = device?.host, let cbLab else {
            return misuse("<CBPeripheralManager> can only accept this command while in the powered on state")
        }
        do {
            let psm = try host.publishL2CAPChannel(parameters: cbLab.l2capChannelParameters, requiresEncryption: encryptionRequired) {
                [weak self] connection, channel in self?.channelOpened(channel, on: connection)
            }
            later { $0.peripheralManager(self, didPublishL2CAPChannel: psm, error: nil) }
        } catch {
            cbLab.warn("publishL2CAPChannel(withEncryption:): \(error)")
            later { $0.peripheralManager(self, didPublishL2CAPChannel: 0, error: CBError(.outOfSpace)) }
        }
    }

    /// Stops publishing `PSM`: later requests are refused; channels already open stay open.
    /// `peripheralManager(_:didUnpublishL2CAPChannel:error:)` follows (with
    /// `CBError.invalidParameters` for a PSM this manager does not publish).
    public func unpublishL2CAPChannel(_ PSM: CBL2CAPPSM) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard state == .poweredOn, let host = device?.host else {
            return misuse("<CBPeripheralManager> can only accept this command while in the powered on state")
        }
        let wasPublished = host.publishedL2CAPChannels.contains(PSM)
        host.unpublishL2CAPChannel(PSM)
        later { $0.peripheralManager(self, didUnpublishL2CAPChannel: PSM, error: wasPublished ? nil : CBError(.invalidParameters)) }
    }

    private func channelOpened(_ channel: L2CAPCreditBasedChannel, on connection: Connection) {
        guard let loop, let cbLab else { return }
        let peer = central(for: connection.bearer) ?? CBCentral(connection: connection)
        let l2cap = CBL2CAPChannel(peer: peer, channel: channel, loop: loop, callbacks: callbacks, sendBufferSize: cbLab.l2capSendBufferSize, lock: labLock)
        deliver { $0.peripheralManager(self, didOpen: l2cap, error: nil) }
    }

    /// Sets the desired connection latency for an existing connection to a central device.
    /// Accepted and ignored: the central chooses the parameters in the lab.
    public func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBCentral) {}

    // MARK: Delivery

    func deliver(_ call: (CBPeripheralManagerDelegate) -> Void) {
        callbacks.run { if let delegate = self.delegate { call(delegate) } }
    }

    /// Delivers on a later turn of the loop: never from inside the app's own call.
    func later(_ call: @escaping (CBPeripheralManagerDelegate) -> Void) {
        loop?.execute { [weak self] in self?.deliver(call) }
    }

    public override var description: String { "<CBPeripheralManager: state = \(state)>" }
}

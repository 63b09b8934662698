import ATT
import BLEWire
import Foundation
import GAP
import GATT

/// Service, characteristic and descriptor discovery (GATT, Core 5.4 Vol 3 Part G 4.4–4.7), and
/// the Service Changed characteristic CoreBluetooth watches on every connection.
extension CBPeripheral {
    /// CoreBluetooth keeps the Generic Access and Generic Attribute services to itself.
    static let hiddenServices: Set<BluetoothUUID> = [.genericAccessService, .genericAttributeService]

    /// Discovers the specified services of the peripheral (nil: all of them, "Discover All
    /// Primary Services"; else "Discover Primary Service by Service UUID" for each). Found
    /// services are added to `services` (objects already there are kept).
    public func discoverServices(_ serviceUUIDs: [CBUUID]?) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("discoverServices(_:)") else { return }
        enqueue(on: connection) { done in
            let finish: (Result<[GATTRemoteService], GATTError>) -> Void = { [weak self] result in
                done()
                self?.complete(result, on: connection) { outcome in
                    guard let self else { return }
                    if case let .success(found) = outcome { self.merge(found.filter { !Self.hiddenServices.contains($0.uuid) }) }
                    self.deliver { $0.peripheral(self, didDiscoverServices: outcome.failureError) }
                }
            }
            guard let wanted = serviceUUIDs?.map(\.bluetoothUUID) else {
                return connection.client.discoverPrimaryServices(completion: finish)
            }
            var found: [GATTRemoteService] = []
            func next(_ k: Int) {
                guard k < wanted.count else { return finish(.success(found)) }
                connection.client.discoverPrimaryServices(uuid: wanted[k]) { result in
                    switch result {
                    case let .success(services):
                        found += services
                        next(k + 1)
                    case let .failure(error):
                        finish(.failure(error))
                    }
                }
            }
            next(0)
        }
    }

    private func merge(_ found: [GATTRemoteService]) {
        var list = services ?? []
        for remote in found where !list.contains(where: { $0.remote?.range.start == remote.range.start }) {
            list.append(CBService(uuid: remote.uuid.cbUUID, isPrimary: remote.isPrimary, remote: remote, peripheral: self))
        }
        services = list.sorted { ($0.remote?.range.start ?? 0) < ($1.remote?.range.start ?? 0) }
    }

    /// Discovers the specified included services of a service. The lab's GATT layer does not
    /// support included services yet: the delegate hears of none.
    public func discoverIncludedServices(_ includedServiceUUIDs: [CBUUID]?, for service: CBService) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("discoverIncludedServices(_:for:)"), current(service, "discoverIncludedServices(_:for:)") != nil else { return }
        enqueue(on: connection) { [weak self] done in
            self?.manager?.loop?.execute {
                done()
                guard let self else { return }
                self.ifStill(connection) {
                    if service.storedIncludedServices == nil { service.storedIncludedServices = [] }
                    self.deliver { $0.peripheral(self, didDiscoverIncludedServicesFor: service, error: nil) }
                }
            }
        }
    }

    /// Discovers the specified characteristics of a service (nil: all). The service's
    /// characteristics are all discovered on the link ("Discover All Characteristics of a
    /// Service") so each one's end handle is right; those asked for are added to
    /// `service.characteristics`.
    public func discoverCharacteristics(_ characteristicUUIDs: [CBUUID]?, for service: CBService) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("discoverCharacteristics(_:for:)"), let remote = current(service, "discoverCharacteristics(_:for:)") else { return }
        let wanted = characteristicUUIDs.map { Set($0.map(\.bluetoothUUID)) }
        enqueue(on: connection) { done in
            connection.client.discoverCharacteristics(of: remote) { [weak self] result in
                done()
                self?.complete(result, on: connection) { outcome in
                    guard let self else { return }
                    if case let .success(found) = outcome { self.add(found.filter { wanted?.contains($0.uuid) ?? true }, to: service) }
                    self.deliver { $0.peripheral(self, didDiscoverCharacteristicsFor: service, error: outcome.failureError) }
                }
            }
        }
    }

    /// Adds what was found to `service.characteristics`, keeping the objects already there.
    private func add(_ found: [GATTRemoteCharacteristic], to service: CBService) {
        var list = service.storedCharacteristics ?? []
        for c in found {
            if let existing = list.first(where: { $0.remote?.valueHandle == c.valueHandle }) {
                var updated = c
                updated.descriptors = existing.remote?.descriptors ?? []
                existing.remote = updated
            } else {
                list.append(CBCharacteristic(uuid: c.uuid.cbUUID, properties: CBCharacteristicProperties(c.properties),
                                             value: nil, remote: c, service: service))
            }
        }
        service.storedCharacteristics = list.sorted { ($0.remote?.valueHandle ?? 0) < ($1.remote?.valueHandle ?? 0) }
    }

    /// Discovers the descriptors of a characteristic ("Discover All Characteristic Descriptors").
    public func discoverDescriptors(for characteristic: CBCharacteristic) {
        let held = labLock?.enter(); defer { held?.leave() }
        guard let connection = connected("discoverDescriptors(for:)"), let remote = current(characteristic, "discoverDescriptors(for:)") else { return }
        enqueue(on: connection) { done in
            connection.client.discoverDescriptors(of: remote) { [weak self] result in
                done()
                self?.complete(result, on: connection) { outcome in
                    guard let self else { return }
                    if case let .success(found) = outcome { self.add(found, to: characteristic) }
                    self.deliver { $0.peripheral(self, didDiscoverDescriptorsFor: characteristic, error: outcome.failureError) }
                }
            }
        }
    }

    private func add(_ found: [GATTRemoteDescriptor], to characteristic: CBCharacteristic) {
        characteristic.remote?.descriptors = found
        var list = characteristic.storedDescriptors ?? []
        for d in found where !list.contains(where: { $0.handle == d.handle }) {
            list.append(CBDescriptor(uuid: d.uuid.cbUUID, value: nil, handle: d.handle, characteristic: characteristic))
        }
        characteristic.storedDescriptors = list.sorted { ($0.handle ?? 0) < ($1.handle ?? 0) }
    }

    // MARK: Service Changed

    /// Subscribes to the peer's Service Changed characteristic (0x2A05) when it has one, as
    /// CoreBluetooth does on every connection, so that `peripheral(_:didModifyServices:)` works.
    func watchServiceChanges() {
        guard let connection else { return }
        connection.client.discoverPrimaryServices(uuid: .genericAttributeService) { [weak self] result in
            guard let self, self.connection === connection, case let .success(services) = result, let gatt = services.first else { return }
            connection.client.discoverCharacteristics(of: gatt) { [weak self] result in
                guard let self, self.connection === connection, case let .success(found) = result,
                      let changed = found.first(where: { $0.uuid == .serviceChanged }) else { return }
                connection.client.setConfiguration(.indication, for: changed) { [weak self] result in
                    guard let self, self.connection === connection, case .success = result else { return }
                    self.serviceChangedHandle = changed.valueHandle
                }
            }
        }
    }

    /// A Service Changed indication: the services in the affected range are gone from
    /// `services` and reported; the app rediscovers what it needs.
    func servicesChanged(_ value: [UInt8]) {
        guard value.count >= 4 else { return }
        let start = UInt16(value[0]) | UInt16(value[1]) << 8, end = UInt16(value[2]) | UInt16(value[3]) << 8
        let invalidated = (services ?? []).filter { service in
            guard let range = service.remote?.range else { return false }
            return range.start <= end && start <= range.end
        }
        services = (services ?? []).filter { service in !invalidated.contains { $0 === service } }
        deliver { $0.peripheral(self, didModifyServices: invalidated) }
    }
}

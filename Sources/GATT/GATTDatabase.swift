import BLEWire
import ATT

/// Why a database could not take a service.
public enum GATTDatabaseError: Error, Equatable {
    /// Handles would go past 0xFFFF.
    case outOfHandles(service: BluetoothUUID)
    /// An initial value longer than 512 octets (Core 5.4, Vol 3, Part F, 3.2.9).
    case valueTooLong(uuid: BluetoothUUID, length: Int)
    /// A service or characteristic asked for a handle (`GATTService.handle`,
    /// `GATTCharacteristic.valueHandle`) that an attribute laid out before it already took, or
    /// 0x0000: the first free one was `next`.
    case handleTaken(uuid: BluetoothUUID, wanted: UInt16, next: Int)
}

/// A GATT server's attribute database (Core 5.4, Vol 3, Part G, 3).
///
/// Handles are laid out from 0x0001 in order: for each service its declaration (value: the service
/// UUID, Part G, 3.1), then per characteristic its declaration (value: properties, value handle,
/// UUID, Part G, 3.3.1), its value, the descriptors its properties require (Client Characteristic
/// Configuration for notify or indicate, Characteristic Extended Properties for
/// extended-properties, Server Characteristic Configuration for broadcast; see
/// `GATTCharacteristic`), then its other descriptors. By default the GAP service 0x1800 (Device
/// Name, Appearance) and the GATT service 0x1801 (Service Changed, indicate) come first.
///
/// Services added later go after the last handle; removing one leaves its handles unused, so the
/// handles of the others never move (clients are told through Service Changed).
/// Lookups by handle are O(1) (a table indexed by handle) and range scans start with a binary search.
public struct GATTDatabase: Sendable {
    /// Every attribute, in handle order.
    public private(set) var attributes: [GATTAttribute] = []
    public private(set) var services: [GATTServiceHandles] = []
    /// The handle of each Client Characteristic Configuration descriptor, by configuration slot.
    public private(set) var configurationHandles: [UInt16] = []
    /// Attribute index by handle, -1 where there is no attribute.
    private var indexByHandle: [Int32] = [-1]

    /// The Service Changed characteristic's value handle, when the GATT service is present.
    public private(set) var serviceChangedHandle: UInt16?

    /// - Parameters:
    ///   - includeStandardServices: put the GAP (0x1800) and GATT (0x1801) services first.
    public init(services: [GATTService] = [], deviceName: String = "BLELab", appearance: UInt16 = 0x0000,
                includeStandardServices: Bool = true) throws {
        if includeStandardServices {
            try add(GATTService(uuid: .genericAccessService, characteristics: [
                GATTCharacteristic(uuid: .deviceName, properties: .read, value: Array(deviceName.utf8.prefix(248))),
                GATTCharacteristic(uuid: .appearance, properties: .read,
                                   value: [UInt8(truncatingIfNeeded: appearance), UInt8(truncatingIfNeeded: appearance >> 8)]),
            ]))
            let gatt = try add(GATTService(uuid: .genericAttributeService, characteristics: [
                // Part G, 7.1: Affected Attribute Handle Range, start and end.
                GATTCharacteristic(uuid: .serviceChanged, properties: .indicate, value: [0x00, 0x00, 0x00, 0x00]),
            ]))
            serviceChangedHandle = gatt.characteristics.first?.valueHandle
        }
        for service in services { try add(service) }
    }

    /// The next free handle (after the last attribute ever laid out).
    public var nextHandle: Int { (attributes.last.map { Int($0.handle) } ?? 0) + 1 }

    // MARK: Lookup

    /// The index in `attributes` of the attribute with `handle`. O(1).
    @inline(__always)
    public func index(of handle: UInt16) -> Int? {
        let h = Int(handle)
        guard h < indexByHandle.count else { return nil }
        let i = Int(indexByHandle[h])
        return i >= 0 ? i : nil
    }

    public func attribute(_ handle: UInt16) -> GATTAttribute? {
        index(of: handle).map { attributes[$0] }
    }

    /// The index of the first attribute whose handle is at least `handle` (binary search).
    public func firstIndex(atOrAfter handle: UInt16) -> Int {
        var low = 0, high = attributes.count
        while low < high {
            let mid = (low + high) / 2
            if attributes[mid].handle < handle { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The first service with `uuid`.
    public func service(_ uuid: BluetoothUUID) -> GATTServiceHandles? {
        services.first { $0.uuid == uuid }
    }

    /// The first characteristic with `uuid`, in the first service with `service` when given.
    public func characteristic(_ uuid: BluetoothUUID, inService service: BluetoothUUID? = nil) -> GATTCharacteristicHandles? {
        for s in services where service == nil || s.uuid == service {
            if let c = s.characteristic(uuid) { return c }
        }
        return nil
    }

    /// The characteristic whose value handle is `valueHandle`.
    public func characteristic(valueHandle: UInt16) -> GATTCharacteristicHandles? {
        for s in services where s.range.start < valueHandle && valueHandle <= s.range.end {
            return s.characteristics.first { $0.valueHandle == valueHandle }
        }
        return nil
    }

    // MARK: Changing

    /// Lays `service` out after the last handle (or at the handles it asks for, leaving the ones
    /// between unused) and returns its handles.
    @discardableResult
    public mutating func add(_ service: GATTService) throws -> GATTServiceHandles {
        // Where each characteristic's declaration goes, and the last handle of the service.
        var count = 1
        let first = nextHandle
        if let wanted = service.handle, Int(wanted) < first || wanted == 0 {
            throw GATTDatabaseError.handleTaken(uuid: service.uuid, wanted: wanted, next: first)
        }
        let start = service.handle.map(Int.init) ?? first
        var cursor = start
        var declarations: [Int] = []
        for c in service.characteristics {
            guard c.value.count <= ATTBearer.maximumAttributeValueLength else {
                throw GATTDatabaseError.valueTooLong(uuid: c.uuid, length: c.value.count)
            }
            let size = 2 + GATTCharacteristic.automaticDescriptors.filter { !c.properties.isDisjoint(with: $0.1) }.count
                + listedDescriptors(of: c).count
            count += size
            for d in c.descriptors where d.value.count > ATTBearer.maximumAttributeValueLength {
                throw GATTDatabaseError.valueTooLong(uuid: d.uuid, length: d.value.count)
            }
            var declaration = cursor + 1
            if let wanted = c.valueHandle {
                guard Int(wanted) - 1 >= declaration else { throw GATTDatabaseError.handleTaken(uuid: c.uuid, wanted: wanted, next: declaration + 1) }
                declaration = Int(wanted) - 1
            }
            declarations.append(declaration)
            cursor = declaration + size - 1
        }
        guard cursor <= 0xFFFF else { throw GATTDatabaseError.outOfHandles(service: service.uuid) }
        let end = UInt16(cursor)

        var handle = UInt16(start)
        var laid: [GATTAttribute] = []
        laid.reserveCapacity(count)
        laid.append(GATTAttribute(handle: handle, type: service.isPrimary ? .primaryService : .secondaryService,
                                  value: service.uuid.attributeValueBytes, kind: .serviceDeclaration(isPrimary: service.isPrimary),
                                  groupEndHandle: end, characteristicValueHandle: 0, configurationSlot: -1))
        var characteristics: [GATTCharacteristicHandles] = []
        for (k, c) in service.characteristics.enumerated() {
            let declaration = UInt16(declarations[k]), valueHandle = declaration + 1
            var declarationValue: [UInt8] = [c.properties.rawValue, UInt8(truncatingIfNeeded: valueHandle), UInt8(truncatingIfNeeded: valueHandle >> 8)]
            declarationValue += c.uuid.attributeValueBytes
            let declarationIndex = laid.count
            laid.append(GATTAttribute(handle: declaration, type: .characteristic, value: declarationValue,
                                      kind: .characteristicDeclaration, groupEndHandle: declaration,
                                      characteristicValueHandle: valueHandle, configurationSlot: -1))
            laid.append(GATTAttribute(handle: valueHandle, type: c.uuid, value: c.value, kind: .characteristicValue(c.properties),
                                      groupEndHandle: valueHandle, characteristicValueHandle: valueHandle, configurationSlot: -1))
            laid[laid.count - 1].permissions = c.permissions
            handle = valueHandle
            var descriptors: [ATTHandleUUID] = []
            var configurationHandle: UInt16?
            if needsConfiguration(c) {
                handle += 1
                configurationHandle = handle
                descriptors.append(ATTHandleUUID(handle: handle, uuid: .clientCharacteristicConfiguration))
                laid.append(GATTAttribute(handle: handle, type: .clientCharacteristicConfiguration, value: [0x00, 0x00],
                                          kind: .clientCharacteristicConfiguration, groupEndHandle: handle,
                                          characteristicValueHandle: valueHandle, configurationSlot: -1))
                laid[laid.count - 1].permissions = c.configurationPermissions
            }
            if c.properties.contains(.extendedProperties) {
                // Part G, 3.3.3.1: read-only, the extended properties as two octets.
                handle += 1
                descriptors.append(ATTHandleUUID(handle: handle, uuid: .characteristicExtendedProperties))
                laid.append(GATTAttribute(handle: handle, type: .characteristicExtendedProperties, value: c.extendedProperties.littleEndianBytes,
                                          kind: .descriptor(isReadable: true, isWritable: false), groupEndHandle: handle,
                                          characteristicValueHandle: valueHandle, configurationSlot: -1))
            }
            if c.properties.contains(.broadcast) {
                // Part G, 3.3.3.4: readable and writable, one value for all clients, Broadcast
                // (bit 0) clear at first.
                handle += 1
                descriptors.append(ATTHandleUUID(handle: handle, uuid: .serverCharacteristicConfiguration))
                laid.append(GATTAttribute(handle: handle, type: .serverCharacteristicConfiguration, value: [0x00, 0x00],
                                          kind: .descriptor(isReadable: true, isWritable: true), groupEndHandle: handle,
                                          characteristicValueHandle: valueHandle, configurationSlot: -1))
            }
            for d in listedDescriptors(of: c) {
                handle += 1
                descriptors.append(ATTHandleUUID(handle: handle, uuid: d.uuid))
                laid.append(GATTAttribute(handle: handle, type: d.uuid, value: d.value,
                                          kind: .descriptor(isReadable: d.isReadable, isWritable: d.isWritable),
                                          groupEndHandle: handle, characteristicValueHandle: valueHandle, configurationSlot: -1))
            }
            laid[declarationIndex].groupEndHandle = handle
            characteristics.append(GATTCharacteristicHandles(uuid: c.uuid, properties: c.properties, declarationHandle: declaration,
                                                             valueHandle: valueHandle, configurationHandle: configurationHandle,
                                                             endHandle: handle, descriptors: descriptors))
        }
        attributes += laid
        let handles = GATTServiceHandles(uuid: service.uuid, isPrimary: service.isPrimary,
                                         range: ATTHandleRange(start: UInt16(start), end: end), characteristics: characteristics)
        services.append(handles)
        reindex()
        return handles
    }

    /// The database as a client that discovered all of it would hold it (for a client's attribute
    /// cache, `GATTClient.restoreCache`).
    public var asDiscovered: [GATTRemoteService] {
        services.map { s in
            GATTRemoteService(uuid: s.uuid, isPrimary: s.isPrimary, range: s.range, characteristics: s.characteristics.map { c in
                GATTRemoteCharacteristic(uuid: c.uuid, properties: c.properties, declarationHandle: c.declarationHandle,
                                         valueHandle: c.valueHandle, endHandle: c.endHandle,
                                         descriptors: c.descriptors.map { GATTRemoteDescriptor(handle: $0.handle, uuid: $0.uuid) })
            })
        }
    }

    /// Removes the service whose declaration is at `handle`; its handles stay unused.
    @discardableResult
    public mutating func removeService(at handle: UInt16) -> GATTServiceHandles? {
        guard let s = services.firstIndex(where: { $0.range.start == handle }) else { return nil }
        let removed = services.remove(at: s)
        attributes.removeAll { removed.range.start <= $0.handle && $0.handle <= removed.range.end }
        if let changed = serviceChangedHandle, removed.range.start <= changed, changed <= removed.range.end {
            serviceChangedHandle = nil
        }
        reindex()
        return removed
    }

    /// Sets a stored value; false when there is no such attribute or it is a declaration.
    @discardableResult
    public mutating func setValue(_ value: [UInt8], at handle: UInt16) -> Bool {
        guard let i = index(of: handle), !attributes[i].isDeclaration else { return false }
        attributes[i].value = value
        return true
    }

    private func needsConfiguration(_ c: GATTCharacteristic) -> Bool {
        !c.properties.isDisjoint(with: [.notify, .indicate])
    }

    /// The descriptors of `c` laid out as listed: all but those the database adds itself (a
    /// listed 0x2902 is always dropped).
    private func listedDescriptors(of c: GATTCharacteristic) -> [GATTDescriptor] {
        c.descriptors.filter { $0.uuid != .clientCharacteristicConfiguration && !c.addsAutomatically($0.uuid) }
    }

    /// Rebuilds the handle table and the configuration slots after a change.
    private mutating func reindex() {
        let top = Int(attributes.last?.handle ?? 0)
        var table = [Int32](repeating: -1, count: top + 1)
        var slots: [UInt16] = []
        var slotByValueHandle: [UInt16: Int] = [:]
        for i in attributes.indices {
            table[Int(attributes[i].handle)] = Int32(i)
            if attributes[i].kind == .clientCharacteristicConfiguration {
                slotByValueHandle[attributes[i].characteristicValueHandle] = slots.count
                attributes[i].configurationSlot = slots.count
                slots.append(attributes[i].handle)
            }
        }
        for i in attributes.indices {
            if case .characteristicValue = attributes[i].kind {
                attributes[i].configurationSlot = slotByValueHandle[attributes[i].handle] ?? -1
            }
        }
        indexByHandle = table
        configurationHandles = slots
    }
}

extension BluetoothUUID {
    /// A UUID as an attribute value: 2 octets when it has a 16-bit alias, else 16 (Part F, 3.2.1:
    /// 32-bit UUIDs are not used in attribute values).
    var attributeValueBytes: [UInt8] {
        var writer = ByteWriter(capacity: 16)
        writer.write(uuid: self, width: uuid16 != nil ? 2 : 16)
        return writer.bytes
    }

    /// Reads a UUID from an attribute value of 2 or 16 octets.
    init?(attributeValue bytes: [UInt8]) {
        guard bytes.count == 2 || bytes.count == 16 else { return nil }
        var reader = ByteReader(bytes)
        guard let uuid = try? reader.readUUID(width: bytes.count) else { return nil }
        self = uuid
    }
}

import ATT
import BLEWire

/// A peripheral's GATT database as the central discovered it (Core 5.4, Vol 3, Part G, 4.4–4.7):
/// what the capture shows, with the peripheral's handles.
public struct DiscoveredDatabase: Hashable, Sendable {
    public struct Service: Hashable, Sendable {
        public var uuid: BluetoothUUID
        public var start: UInt16
        public var end: UInt16
        public var characteristics: [Characteristic]
        /// Not discovered: made up to hold characteristics the traffic shows (`GATTSession.inferUndiscovered`).
        public var inferred = false
    }

    public struct Characteristic: Hashable, Sendable {
        public var uuid: BluetoothUUID
        public var declarationHandle: UInt16
        public var valueHandle: UInt16
        /// The declaration's Characteristic Properties octet (Part G, 3.3.1.1).
        public var properties: UInt8
        public var descriptors: [Descriptor]
        /// Not discovered: its handle, properties and placeholder UUID come from the traffic.
        public var inferred = false
    }

    public struct Descriptor: Hashable, Sendable {
        public var uuid: BluetoothUUID
        public var handle: UInt16
    }

    public var services: [Service] = []

    /// The characteristic whose value handle is `handle`.
    public func characteristic(valueHandle handle: UInt16) -> (service: Service, characteristic: Characteristic)? {
        for s in services { for c in s.characteristics where c.valueHandle == handle { return (s, c) } }
        return nil
    }

    /// The characteristic whose Client Characteristic Configuration descriptor is at `handle`.
    public func characteristic(configurationHandle handle: UInt16) -> (service: Service, characteristic: Characteristic)? {
        for s in services {
            for c in s.characteristics where c.descriptors.contains(where: { $0.handle == handle && $0.uuid == .clientCharacteristicConfiguration }) {
                return (s, c)
            }
        }
        return nil
    }

    mutating func addService(_ uuid: BluetoothUUID, start: UInt16, end: UInt16) {
        guard !services.contains(where: { $0.start == start }) else { return }
        services.append(Service(uuid: uuid, start: start, end: end, characteristics: []))
        services.sort { $0.start < $1.start }
    }

    mutating func addCharacteristic(declaration: UInt16, value: [UInt8]) {
        // Characteristic declaration value (Part G, 3.3.1): Properties (1), Value Handle (2), UUID (2 or 16).
        guard value.count == 5 || value.count == 19 else { return }
        var r = ByteReader(value)
        guard let properties = try? r.readUInt8(), let valueHandle = try? r.readUInt16LE(),
              let uuid = try? r.readUUID(width: value.count - 3) else { return }
        guard let s = services.firstIndex(where: { $0.start <= declaration && declaration <= $0.end }),
              !services[s].characteristics.contains(where: { $0.declarationHandle == declaration }) else { return }
        services[s].characteristics.append(Characteristic(uuid: uuid, declarationHandle: declaration, valueHandle: valueHandle,
                                                          properties: properties, descriptors: []))
        services[s].characteristics.sort { $0.declarationHandle < $1.declarationHandle }
    }

    mutating func addDescriptor(handle: UInt16, uuid: BluetoothUUID) {
        // Find Information may cover declarations and values too (a client that asks for a whole
        // service's range): only what lies after a characteristic's value is a descriptor of it.
        if [BluetoothUUID.primaryService, .secondaryService, .include, .characteristic].contains(uuid) { return }
        guard let s = services.firstIndex(where: { $0.start <= handle && handle <= $0.end }),
              let c = services[s].characteristics.lastIndex(where: { $0.valueHandle < handle }) else { return }
        guard !services[s].characteristics[c].descriptors.contains(where: { $0.handle == handle }) else { return }
        services[s].characteristics[c].descriptors.append(Descriptor(uuid: uuid, handle: handle))
        services[s].characteristics[c].descriptors.sort { $0.handle < $1.handle }
    }
}

extension DiscoveredDatabase {
    /// The value handle of Service Changed (0x2A05 in service 0x1801, Core 5.4, Vol 3, Part G, 7.1), once discovered.
    public var serviceChangedValueHandle: UInt16? {
        services.first { $0.uuid == BluetoothUUID(uuid16: 0x1801) }?.characteristics.first { $0.uuid == BluetoothUUID(uuid16: 0x2A05) }?.valueHandle
    }

    /// The characteristic whose attributes (declaration to last descriptor) hold `handle`, past its
    /// declaration: its value or one of its descriptors.
    func characteristic(holding handle: UInt16) -> (service: Service, characteristic: Characteristic)? {
        for s in services {
            for (k, c) in s.characteristics.enumerated() {
                let end = k + 1 < s.characteristics.count ? s.characteristics[k + 1].declarationHandle - 1 : s.end
                if c.declarationHandle < handle && handle <= end { return (s, c) }
            }
        }
        return nil
    }

    /// Every handle discovery saw: service and characteristic declarations, values, descriptors.
    var knownHandles: Set<UInt16> {
        var out: Set<UInt16> = []
        for s in services {
            out.insert(s.start)
            for c in s.characteristics {
                out.insert(c.declarationHandle)
                out.insert(c.valueHandle)
                for d in c.descriptors { out.insert(d.handle) }
            }
        }
        return out
    }
}

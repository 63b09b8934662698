import ATT
import BLEWire

/// What the ATT traffic of a connection shows of a database the capture never discovered: the
/// app used handles from its GATT cache (an earlier connection, Core 5.4, Vol 3, Part G, 2.5.2), or
/// the capture started with the app already connected and its discovery long done.
///
/// Every handle the central read or wrote and every handle the peripheral notified or indicated
/// that discovery did not find becomes a characteristic at that value handle, with the properties
/// its use implies (read, write, write-without-response, notify, indicate). A Write Request of
/// 0x0000–0x0003 to the handle after a notified or indicated value handle is taken as that
/// characteristic's Client Characteristic Configuration descriptor (the handle a GATT server
/// puts it at when it is the first descriptor, Part G 3.3.3.3): a subscription. The UUIDs, which
/// the capture never shows, are placeholders (`placeholderUUID`), said so in the scenario.
extension GATTSession {
    /// Base of the placeholder UUIDs: `B1E1AB00-0000-4000-8000-00000000HHHH`, HHHH the value
    /// handle in the capture (a service: its first handle).
    public static func placeholderUUID(handle: UInt16) -> BluetoothUUID {
        var octets: [UInt8] = [0xB1, 0xE1, 0xAB, 0x00, 0x00, 0x00, 0x40, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00]
        octets += [UInt8(truncatingIfNeeded: handle >> 8), UInt8(truncatingIfNeeded: handle)]
        var r = ByteReader(Array(octets.reversed()))
        return (try? r.readUUID(width: 16)) ?? BluetoothUUID(uuid16: 0xFFFF)
    }

    public static func isPlaceholder(_ uuid: BluetoothUUID) -> Bool {
        uuid.description.uppercased().hasPrefix("B1E1AB00-0000-4000-8000-00000000")
    }

    /// Whether the central used the peripheral's handles before it discovered them (or never did):
    /// the replay's central then connects with its GATT cache (`gatt-cache: true`).
    public var usesCachedHandles: Bool {
        for op in operations where early(op.start) {
            switch op.kind {
            case .read, .write, .configure: return true
            default: continue
            }
        }
        return notifications.contains { early($0.mark) }
    }

    /// When the central's first discovery started; nil: it never discovered.
    var firstDiscovery: CaptureMark? {
        operations.first { if case .discover = $0.kind { return true } else { return false } }?.start
    }

    /// Before the central's first discovery (or without one): where handles can only come from
    /// its cache. After a discovery, a handle it did not find is one the app does not know
    /// either (a notification of it is ignored: a flawed peripheral's, kept as such).
    func early(_ mark: CaptureMark) -> Bool { firstDiscovery.map { mark < $0 } ?? true }

    /// Adds to `database` what the traffic shows of handles discovery did not find (see above).
    ///
    /// The central's reads and writes count at any time: an app reads or writes only handles it
    /// knows (from its cache, or a discovery the capture lost). Notifications count before the
    /// first discovery, or for a handle the app also used: after a discovery, one of a handle the
    /// app never found nor used is a peripheral's flaw, which the app ignores.
    mutating func inferUndiscovered() {
        var used: Set<UInt16> = []
        for op in operations {
            switch op.kind {
            case let .read(handle, _), let .write(handle, _, _): used.insert(handle); used.insert(handle &- 1)
            default: continue
            }
        }
        let notified = Dictionary(grouping: notifications.filter { early($0.mark) || used.contains($0.handle) }, by: \.handle)
        var uses: [UInt16: UInt8] = [:]              // value handle → properties octet
        func use(_ handle: UInt16, _ property: UInt8) {
            guard database.characteristic(valueHandle: handle) == nil else { return }
            uses[handle, default: 0] |= property
        }
        for (handle, list) in notified {
            use(handle, list.contains(where: \.indication) ? 0x20 : 0)
            if list.contains(where: { !$0.indication }) { use(handle, 0x10) }
        }
        // CCCDs written by handle: the value handle before them notified (or indicated).
        for k in operations.indices {
            guard case let .write(handle, value, false) = operations[k].kind, value.count == 2, value[1] == 0, value[0] <= 3,
                  handle > 1, database.characteristic(valueHandle: handle) == nil, notified[handle] == nil else { continue }
            let valueHandle = handle - 1
            let known = database.characteristic(valueHandle: valueHandle).map { $0.characteristic.properties & 0x30 != 0 } ?? false
            guard notified[valueHandle] != nil || known else { continue }
            operations[k].kind = .configure(handle: handle, value: value)
            if !known { use(valueHandle, (value[0] & 0x01 != 0 ? 0x10 : 0) | (value[0] & 0x02 != 0 ? 0x20 : 0) | 0) }
            cccds.insert(handle)
        }
        for op in operations {
            switch op.kind {
            case let .read(handle, _): use(handle, 0x02)
            case let .write(handle, _, command): use(handle, command ? 0x04 : 0x08)
            default: continue
            }
        }
        let known = database.knownHandles
        let found = uses.keys.filter { !known.contains($0) && $0 > 1 }.sorted()
        guard !found.isEmpty || !cccds.isEmpty else { return }
        var loose: [(UInt16, UInt8)] = []
        for handle in found {
            var properties = uses[handle] ?? 0
            if properties & 0x30 == 0x00 && handle < .max && cccds.contains(handle + 1) { properties |= 0x10 }
            if properties == 0 { properties = 0x02 }
            if let s = database.services.firstIndex(where: { $0.start < handle - 1 && handle <= $0.end }) {
                database.insertInferred(service: s, valueHandle: handle, properties: properties, uuid: Self.placeholderUUID(handle: handle))
            } else {
                loose.append((handle, properties))
            }
        }
        if let first = loose.first {
            let start = first.0 - 2
            // Up to the last value, or its CCCD (right after it, where the lab lays it out too).
            let end = loose.map { $0.0 + ($0.1 & 0x30 != 0 && $0.0 < .max ? 1 : 0) }.max() ?? first.0
            database.services.append(DiscoveredDatabase.Service(uuid: Self.placeholderUUID(handle: start), start: start, end: end, characteristics: []))
            database.services.sort { $0.start < $1.start }
            let s = database.services.firstIndex { $0.start == start }!
            database.services[s].inferred = true
            for (handle, properties) in loose {
                database.insertInferred(service: s, valueHandle: handle, properties: properties, uuid: Self.placeholderUUID(handle: handle))
            }
        }
        // The CCCDs, now that their characteristics exist.
        for handle in cccds.sorted() where database.characteristic(configurationHandle: handle) == nil {
            database.addDescriptor(handle: handle, uuid: .clientCharacteristicConfiguration)
        }
        let count = found.count
        notes.append("the capture never shows the discovery of \(count) handle\(count == 1 ? "" : "s") the central used (" +
                     found.map { "0x" + hex($0) }.joined(separator: ", ") + "): the scenario declares a characteristic at each, with the properties its use implies and a placeholder UUID (B1E1AB00-0000-4000-8000-00000000HHHH, HHHH its handle in the capture)")
    }
}

extension DiscoveredDatabase {
    /// Carries what `s` (of another connection's database) says was inferred over to the same
    /// service and characteristics here.
    mutating func markInferred(_ s: Service) {
        guard let k = services.firstIndex(where: { $0.start == s.start }) else { return }
        if s.inferred { services[k].inferred = true }
        for c in s.characteristics where c.inferred {
            if let j = services[k].characteristics.firstIndex(where: { $0.valueHandle == c.valueHandle }) { services[k].characteristics[j].inferred = true }
        }
    }

    mutating func insertInferred(service s: Int, valueHandle: UInt16, properties: UInt8, uuid: BluetoothUUID) {
        guard !services[s].characteristics.contains(where: { $0.valueHandle == valueHandle }) else { return }
        var c = Characteristic(uuid: uuid, declarationHandle: valueHandle - 1, valueHandle: valueHandle, properties: properties, descriptors: [])
        c.inferred = true
        services[s].characteristics.append(c)
        services[s].characteristics.sort { $0.declarationHandle < $1.declarationHandle }
    }
}

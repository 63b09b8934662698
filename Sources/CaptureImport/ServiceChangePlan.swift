import ATT
import BLEWire
import GATT
import ScenarioFormat

/// A change of a peripheral's database that a Service Changed indication announced (Core 5.4,
/// Vol 3, Part G, 7.1), as the central's re-discovery of the indicated range showed it.
struct DatabaseChange {
    var connection: Int
    /// Index into `GATTSession.serviceChanges` of that connection.
    var index: Int
    var mark: CaptureMark
    var start: UInt16
    var end: UInt16
    /// Services the re-discovery found that the central did not know there, and services it knew
    /// there that the re-discovery no longer found.
    var added: [DiscoveredDatabase.Service]
    var removed: [DiscoveredDatabase.Service]
    /// The lab's peripheral puts an added service after its last handle, one handle for each
    /// declaration, value and CCCD: whether the capture's added services sit where the lab's will,
    /// so that the indicated range means the same attributes in the replay.
    var handlesMatch: Bool
}

/// A service by where it starts and what it is.
struct ServiceKey: Hashable {
    var start: UInt16
    var uuid: BluetoothUUID
    init(_ s: DiscoveredDatabase.Service) {
        start = s.start
        uuid = s.uuid
    }
}

extension ImportedScenario {
    /// Works out, per peripheral, what each Service Changed indication changed, and which services
    /// the peripheral has from the start (those not added by a change).
    mutating func planServiceChanges() {
        for p in peripherals.indices {
            var all: [(connection: Int, index: Int, change: ServiceChange)] = []
            for c in peripherals[p].connections {
                for (k, sc) in sessions[c].serviceChanges.enumerated() { all.append((c, k, sc)) }
            }
            all.sort { $0.change.mark < $1.change.mark }
            var gone: Set<ServiceKey> = []
            var everAdded: [DiscoveredDatabase.Service] = []
            var changes: [DatabaseChange] = []
            for (c, k, sc) in all {
                let present = sc.before.services.filter { !gone.contains(ServiceKey($0)) }
                    + everAdded.filter { a in !gone.contains(ServiceKey(a)) && !sc.before.services.contains { ServiceKey($0) == ServiceKey(a) } }
                // The central forgets the services overlapping the range and re-discovers the range
                // widened to them (Part G, 2.5.2), as the lab's central does.
                var start = sc.start, end = sc.end
                for s in present where s.start <= sc.end && sc.start <= s.end {
                    start = min(start, s.start)
                    end = max(end, s.end)
                }
                let overlapping = present.filter { $0.start <= end && start <= $0.end }
                // A range no handles have (a broken device) changes nothing the lab can follow.
                let found = sc.start != 0 && sc.start <= sc.end ? sc.found.services : overlapping
                let removed = overlapping.filter { o in !found.contains { ServiceKey($0) == ServiceKey(o) } }
                let added = found.filter { f in !overlapping.contains { ServiceKey($0) == ServiceKey(f) } }
                // The lab's database adds after its last attribute (removed services free their handles).
                let kept = present.filter { k in !removed.contains { ServiceKey($0) == ServiceKey(k) } }
                var last = max(kept.map(\.end).max() ?? 0, 0x0009)
                var match = true
                for a in added.sorted(by: { $0.start < $1.start }) {
                    let size = 1 + a.characteristics.reduce(0) { n, ch in n + 2 + (ch.properties & 0x30 != 0 ? 1 : 0) }
                    let others = a.characteristics.contains { ch in ch.descriptors.contains { $0.uuid != .clientCharacteristicConfiguration } }
                    if a.start != last &+ 1 || Int(a.end) - Int(a.start) + 1 != size || others { match = false }
                    last = max(last, a.end)
                }
                for r in removed { gone.insert(ServiceKey(r)) }
                for a in added {
                    gone.remove(ServiceKey(a))
                    if !everAdded.contains(where: { ServiceKey($0) == ServiceKey(a) }) { everAdded.append(a) }
                }
                changes.append(DatabaseChange(connection: c, index: k, mark: sc.mark, start: sc.start, end: sc.end,
                                              added: added, removed: removed, handlesMatch: match))
            }
            peripherals[p].databaseChanges = changes
            // Added by a change and not there before it: the peripheral gets it from its `add-service`.
            var addedLater: Set<UInt16> = []
            for ch in changes {
                for a in ch.added {
                    let before = sessions[ch.connection].serviceChanges[ch.index].before
                    if !before.services.contains(where: { ServiceKey($0) == ServiceKey(a) }) { addedLater.insert(a.start) }
                }
            }
            peripherals[p].addedServiceStarts = addedLater
        }
    }

    /// The services a peripheral has at `mark`: those it has from the start, plus those added and
    /// less those removed by the changes before it.
    func servicesPresent(_ p: Int, at mark: CaptureMark) -> [DiscoveredDatabase.Service] {
        var present = peripherals[p].database.services.filter { !peripherals[p].addedServiceStarts.contains($0.start) }
        for ch in peripherals[p].databaseChanges where ch.mark < mark {
            present.removeAll { s in ch.removed.contains { ServiceKey($0) == ServiceKey(s) } }
            for a in ch.added where !present.contains(where: { ServiceKey($0) == ServiceKey(a) }) {
                // The union database has the characteristics of every discovery of it.
                present.append(peripherals[p].database.services.first { ServiceKey($0) == ServiceKey(a) } ?? a)
            }
        }
        return present.sorted { $0.start < $1.start }
    }

    /// The first value read of `handle` after `mark` on the peripheral's connections.
    func firstRead(_ p: Int, handle: UInt16, after mark: CaptureMark) -> [UInt8]? {
        var best: (CaptureMark, [UInt8])?
        for c in peripherals[p].connections {
            for op in sessions[c].operations where op.start > mark && op.error == nil && op.rejected == nil && !op.unanswered {
                if case let .read(h, value) = op.kind, h == handle, best.map({ op.start < $0.0 }) ?? true { best = (op.start, value) }
            }
        }
        return best?.1
    }

    /// The peripheral actions that make the lab's database change as `change` says, and the
    /// indication: `add-service`, `remove-service`, `service-changed`.
    func serviceChangeActions(_ p: Int, _ change: DatabaseChange) -> (actions: [PeripheralAction], notes: [String]) {
        var actions: [PeripheralAction] = []
        var notes: [String] = []
        for r in change.removed {
            actions.append(.removeService(r.uuid))
        }
        for a in change.added.sorted(by: { $0.start < $1.start }) {
            let full = peripherals[p].database.services.first { ServiceKey($0) == ServiceKey(a) } ?? a
            // Each UUID once (add-service names its characteristics by UUID); values of at most 512
            // octets (Core 5.4, Vol 3, Part F, 3.2.9).
            var seen: Set<BluetoothUUID> = []
            let unique = full.characteristics.filter { seen.insert($0.uuid).inserted }
            let characteristics = unique.map { ch -> CharacteristicSpec in
                var spec = CharacteristicSpec(uuid: ch.uuid, properties: CharacteristicProperties(rawValue: ch.properties))
                if let v = firstRead(p, handle: ch.valueHandle, after: change.mark), v.count <= 512 { spec.value = v }
                let others = ch.descriptors.filter { $0.uuid != .clientCharacteristicConfiguration }
                if !others.isEmpty {
                    notes.append("\(change.mark): the added service \(a.uuid) has descriptors \(others.map { "\($0.uuid)" }.joined(separator: ", ")) of \(ch.uuid), which add-service cannot declare")
                }
                return spec
            }
            actions.append(.addService(ServiceSpec(uuid: a.uuid, characteristics: characteristics)))
        }
        if change.handlesMatch {
            actions.append(.serviceChanged(ATTHandleRange(start: change.start, end: change.end)))
        } else {
            actions.append(.serviceChanged(nil))
            notes.append("\(change.mark): Service Changed for 0x\(hex(change.start))-0x\(hex(change.end)): the capture's added services do not sit where the lab puts them (after its last handle, with no descriptors but CCCDs), so the scenario lets the lab name the range it changed")
        }
        return (actions, notes)
    }
}

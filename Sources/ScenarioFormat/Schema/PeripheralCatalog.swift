import BLEWire
import GATT

/// The characteristics each declared peripheral serves, for resolving the UUIDs steps and actions
/// name (`FFE1`, or `180F/2A19` when a UUID is in more than one service of a peripheral). Every
/// peripheral also serves the standard GAP (1800: 2A00, 2A01) and GATT (1801: 2A05) services.
/// A class: services a peripheral adds at run time (`add-service`) join it while the file is read,
/// so the steps after them can name their characteristics.
final class PeripheralCatalog {
    struct Entry {
        /// Nil for a characteristic under a service whose UUID is invalid (already an error of
        /// the file): it still resolves, so the steps that name it add no second error.
        var service: BluetoothUUID?
        var characteristic: BluetoothUUID
        /// Nil when the file's `properties` did not read (already an error of the file): no check
        /// that depends on them is made.
        var properties: CharacteristicProperties?
        /// The descriptor types its database entry has (`CharacteristicSpec.descriptorUUIDs`).
        var descriptors: [BluetoothUUID] = []
    }

    private(set) var ids: [String] = []
    private var entries: [String: [Entry]] = [:]
    /// Peripherals with a service whose UUID is invalid: a name that does not resolve in them may
    /// be one of that service's, so it is not reported again.
    private var incomplete: Set<String> = []
    /// Peripherals whose `security:` says they exchange OOB data (`oob: true`): those a `pair`
    /// with `oob: true` may aim at.
    var outOfBand: Set<String> = []

    static let standard: [Entry] = [
        Entry(service: .genericAccessService, characteristic: .deviceName, properties: .read),
        Entry(service: .genericAccessService, characteristic: .appearance, properties: .read),
        Entry(service: .genericAttributeService, characteristic: .serviceChanged, properties: .indicate,
              descriptors: [.clientCharacteristicConfiguration]),
    ]

    func add(_ id: String, services: [ServiceSpec]) {
        ids.append(id)
        entries[id] = Self.standard + services.flatMap { s in
            s.characteristics.map { Entry(service: s.uuid, characteristic: $0.uuid, properties: $0.properties, descriptors: $0.descriptorUUIDs) }
        }
    }

    /// The characteristics of a service of `id` whose UUID is invalid.
    func addUnplaced(_ id: String, _ characteristics: [CharacteristicSpec]) {
        incomplete.insert(id)
        entries[id, default: []] += characteristics.map {
            Entry(service: nil, characteristic: $0.uuid, properties: $0.properties, descriptors: $0.descriptorUUIDs)
        }
    }

    /// Forgets the properties of `characteristic` in `service` of `id`, which did not read.
    func forgetProperties(_ id: String, service: BluetoothUUID?, characteristic: BluetoothUUID) {
        guard var list = entries[id] else { return }
        for i in list.indices where list[i].service == service && list[i].characteristic == characteristic { list[i].properties = nil }
        entries[id] = list
    }

    /// Whether `id` has a service whose UUID is invalid.
    func isIncomplete(_ id: String) -> Bool { incomplete.contains(id) }

    /// A service `id` adds at run time; its characteristics become nameable. A service UUID it
    /// already has is not added twice.
    func addRuntimeService(_ id: String, _ service: ServiceSpec) {
        guard entries[id] != nil, !(entries[id] ?? []).contains(where: { $0.service == service.uuid }) else { return }
        entries[id, default: []] += service.characteristics.map {
            Entry(service: service.uuid, characteristic: $0.uuid, properties: $0.properties, descriptors: $0.descriptorUUIDs)
        }
    }

    func contains(_ id: String) -> Bool { entries[id] != nil }

    func matches(_ ref: CharacteristicRef, in id: String) -> [Entry] {
        (entries[id] ?? []).filter { $0.characteristic == ref.characteristic && (ref.service == nil || ref.service == $0.service) }
    }

    /// Peripherals that declare `ref` (standard characteristics excluded: every peripheral has them).
    func declarers(of ref: CharacteristicRef) -> [String] {
        ids.filter { id in matches(ref, in: id).contains { !Self.isStandard($0) } }
    }

    /// The UUIDs a peripheral declares, as scenario files write them, for messages.
    func declared(in id: String) -> [String] {
        (entries[id] ?? []).filter { !Self.isStandard($0) }.map(\.characteristic.description)
    }

    static func isStandard(_ e: Entry) -> Bool {
        e.service == .genericAccessService || e.service == .genericAttributeService
    }

    /// Where a resolution went wrong.
    enum Problem: Error {
        /// Not in `id`'s database; `elsewhere` lists peripherals that do declare it.
        case undeclared(elsewhere: [String])
        /// In more than one service of `id`.
        case ambiguous(services: [BluetoothUUID])
    }

    /// The characteristic `ref` names in peripheral `id`.
    func resolve(_ ref: CharacteristicRef, in id: String) -> Result<Entry, Problem> {
        let found = matches(ref, in: id)
        if found.count == 1 { return .success(found[0]) }
        if found.isEmpty { return .failure(.undeclared(elsewhere: declarers(of: ref).filter { $0 != id })) }
        return .failure(.ambiguous(services: found.compactMap(\.service)))
    }
}

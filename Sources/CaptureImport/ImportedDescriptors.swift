import ATT
import BLEWire
import ScenarioFormat

/// Which descriptors the imported scenario's characteristics have, and what the lab's server does
/// with them, so that `descriptors:` and the steps that read and write descriptors name only what
/// the simulated peripheral serves, and ask only what it answers as the capture shows
/// (docs/scenarios.md "Descriptors"; Core 5.4, Vol 3, Part G, 3.3.1.1 and 3.3.3).
extension ImportedPeripheral {
    /// A descriptor handle of the capture as the scenario has it.
    struct DescriptorPlace {
        /// How steps name its characteristic.
        var ref: CharacteristicRef
        var service: DiscoveredDatabase.Service
        var characteristic: DiscoveredDatabase.Characteristic
        var uuid: BluetoothUUID
    }

    /// Characteristic Presentation Format (Part G, 3.3.3.5).
    static let presentationFormat = BluetoothUUID(uuid16: 0x2904)

    /// The descriptors the lab lays out itself from a characteristic's properties: a CCCD for
    /// notify or indicate, 0x2900 for extended-properties, 0x2903 for broadcast.
    static func implied(by properties: UInt8) -> [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        if properties & 0x30 != 0 { out.append(.clientCharacteristicConfiguration) }
        if properties & 0x80 != 0 { out.append(.characteristicExtendedProperties) }
        if properties & 0x01 != 0 { out.append(.serverCharacteristicConfiguration) }
        return out
    }

    /// Types a file cannot declare: those the lab lays out, the Aggregate Format (whose value
    /// lists handles the lab chooses), and declarations.
    static let undeclarable: [BluetoothUUID] = [.clientCharacteristicConfiguration, .characteristicExtendedProperties,
                                                .serverCharacteristicConfiguration, BluetoothUUID(uuid16: 0x2905),
                                                .primaryService, .secondaryService, .include, .characteristic]

    /// What `descriptors:` declares for `c`: the other descriptors discovery found, each type once
    /// (the first: a file declares each descriptor once per characteristic).
    static func declarable(_ c: DiscoveredDatabase.Characteristic) -> [DiscoveredDatabase.Descriptor] {
        var out: [DiscoveredDatabase.Descriptor] = []
        for d in c.descriptors where !undeclarable.contains(d.uuid) && !out.contains(where: { $0.uuid == d.uuid }) { out.append(d) }
        return out
    }

    /// The descriptor at `handle`, when the scenario's characteristic has it at the place discovery
    /// found it: a characteristic `gatt:` declares (those its properties imply, then the declared
    /// ones), one a Service Changed added (only the implied ones), or the CCCD of the lab's own
    /// Service Changed; the first of its type.
    func descriptorPlace(_ handle: UInt16) -> DescriptorPlace? {
        for s in database.services {
            for c in s.characteristics {
                guard let d = c.descriptors.first(where: { $0.handle == handle }) else { continue }
                guard c.descriptors.first(where: { $0.uuid == d.uuid })?.handle == handle, let ref = reference(c, in: s) else { return nil }
                let has: [BluetoothUUID]
                if Self.labServices.contains(s.uuid) {
                    has = c.uuid == BluetoothUUID(uuid16: 0x2A05) ? [.clientCharacteristicConfiguration] : []
                } else if addedServiceStarts.contains(s.start) {
                    has = Self.implied(by: c.properties)
                } else {
                    has = Self.implied(by: c.properties) + Self.declarable(c).map(\.uuid)
                }
                return has.contains(d.uuid) ? DescriptorPlace(ref: ref, service: s, characteristic: c, uuid: d.uuid) : nil
            }
        }
        return nil
    }

    /// Whether `handle` is the value handle of a characteristic (else a descriptor, or unknown).
    func isValueHandle(_ handle: UInt16) -> Bool { database.characteristic(valueHandle: handle) != nil }

    /// The bits of the lab's 0x2900 for `c` (what `extended-properties:` says): those its first
    /// read showed (reliable-write 0x0001, writable-auxiliaries 0x0002), and writable-auxiliaries
    /// when the central wrote its user description.
    func extendedPropertiesBits(_ c: DiscoveredDatabase.Characteristic) -> UInt16 {
        guard c.properties & 0x80 != 0 else { return 0 }
        var bits: UInt16 = 0
        if let d = c.descriptors.first(where: { $0.uuid == .characteristicExtendedProperties }), let v = descriptorReads[d.handle], v.count == 2 {
            bits = (UInt16(v[0]) | UInt16(v[1]) << 8) & 0x0003
        }
        if c.descriptors.contains(where: { $0.uuid == .characteristicUserDescription && writtenDescriptors.contains($0.handle) }) { bits |= 0x0002 }
        return bits
    }

    /// The error the lab's server answers a Write Request of `value` to the descriptor with, or
    /// nil when it takes it (GATTServer: 0x2900 and 0x2904 are read-only, a user description is
    /// writable with writable-auxiliaries, a declared descriptor when the central wrote it
    /// successfully, 0x2903 takes two octets with bit 0 only).
    func labWriteError(_ place: DescriptorPlace, handle: UInt16, value: [UInt8]) -> ATTErrorCode? {
        guard value.count <= 512 else { return .invalidAttributeValueLength }
        switch place.uuid {
        case .clientCharacteristicConfiguration:
            return Self.configurationError(value, properties: place.characteristic.properties)
        case .serverCharacteristicConfiguration:
            guard value.count == 2 else { return .invalidAttributeValueLength }
            return value[1] == 0 && value[0] & ~0x01 == 0 ? nil : .valueNotAllowed
        case .characteristicExtendedProperties, Self.presentationFormat:
            return .writeNotPermitted
        case .characteristicUserDescription:
            return extendedPropertiesBits(place.characteristic) & 0x0002 != 0 ? nil : .writeNotPermitted
        default:
            return writtenDescriptors.contains(handle) ? nil : .writeNotPermitted
        }
    }

    /// The error the lab's server answers a write of `value` to a CCCD with, or nil (Part G,
    /// 3.3.3.3: exactly two octets, only the bits the properties offer).
    static func configurationError(_ value: [UInt8], properties: UInt8) -> ATTErrorCode? {
        guard value.count == 2 else { return .invalidAttributeValueLength }
        let allowed: UInt8 = (properties & 0x10 != 0 ? 0x01 : 0) | (properties & 0x20 != 0 ? 0x02 : 0)
        return value[1] == 0 && value[0] & ~allowed == 0 ? nil : .valueNotAllowed
    }

    /// A value the lab's descriptor of type `uuid` can hold as `descriptors:` declares it (Part
    /// G, 3.3.3.2, 3.3.3.5): UTF-8 for a user description, 7 octets for a presentation format.
    static func holds(_ value: [UInt8], as uuid: BluetoothUUID) -> Bool {
        guard value.count <= 512 else { return false }
        switch uuid {
        case .characteristicUserDescription: return String(validating: value, as: UTF8.self) != nil
        case ImportedPeripheral.presentationFormat: return value.count == 7
        default: return true
        }
    }

    /// What the lab's descriptor holds before any write: the value `descriptors:` gives it (the
    /// capture's first read, when it can hold it), or the default.
    func initialDescriptorValue(_ place: DescriptorPlace, handle: UInt16) -> [UInt8] {
        switch place.uuid {
        case .characteristicExtendedProperties:
            let bits = extendedPropertiesBits(place.characteristic)
            return [UInt8(bits & 0xFF), UInt8(bits >> 8)]
        case .clientCharacteristicConfiguration, .serverCharacteristicConfiguration:
            return [0, 0]
        default:
            if let v = descriptorReads[handle], Self.holds(v, as: place.uuid) { return v }
            return place.uuid == ImportedPeripheral.presentationFormat ? [0, 0, 0, 0, 0, 0, 0] : []
        }
    }
}

extension ImportedScenario {
    /// Reads the descriptors' first values and the writes the central made of them before any
    /// step is written: `descriptors:` and the lab's answers follow from them.
    mutating func planDescriptors() {
        for p in peripherals.indices {
            var touched: Set<UInt16> = []
            for c in peripherals[p].connections {
                for op in sessions[c].operations {
                    // Any write, answered or not, may have changed it.
                    if case let .write(handle, _, false) = op.kind { touched.insert(handle) }
                    guard op.error == nil, op.rejected == nil, !op.unanswered else { continue }
                    switch op.kind {
                    case let .read(handle, value) where !peripherals[p].isValueHandle(handle):
                        // What it held at first: a read before any write of it.
                        if !touched.contains(handle), peripherals[p].descriptorReads[handle] == nil { peripherals[p].descriptorReads[handle] = value }
                        touched.insert(handle)
                    case let .write(handle, _, false) where !peripherals[p].isValueHandle(handle):
                        guard let place = peripherals[p].descriptorPlace(handle) else { continue }
                        // Only where the lab can let it be written: a declared descriptor, or a user
                        // description of a characteristic with extended properties.
                        if place.uuid == .characteristicUserDescription ? place.characteristic.properties & 0x80 != 0
                            : !ImportedPeripheral.undeclarable.contains(place.uuid) && place.uuid != ImportedPeripheral.presentationFormat {
                            peripherals[p].writtenDescriptors.insert(handle)
                        }
                    default:
                        continue
                    }
                }
            }
        }
    }

    /// Why a read, Write Request or CCCD write gets no step, or nil when it gets one: a handle
    /// discovery did not find or the scenario cannot name, a descriptor the scenario's
    /// characteristic does not have, or a write the device accepted and the lab's server refuses.
    /// The flaw plan leaves such requests out (the replay's central does not send them).
    func omission(_ p: Int, _ op: GATTOperation) -> String? {
        let peripheral = peripherals[p]
        let handle: UInt16, value: [UInt8]?
        switch op.kind {
        case let .read(h, _): (handle, value) = (h, nil)
        case let .write(h, v, false), let .configure(h, v): (handle, value) = (h, v)
        default: return nil
        }
        let what = value == nil ? "a read" : "a write"
        if let value, value.count > 512 {
            return "a write of \(value.count) octets to handle 0x\(hex(handle)), more than an attribute holds (512, Core Vol 3 Part F 3.2.9)"
        }
        if peripheral.isValueHandle(handle) {
            guard peripheral.reference(handle) == nil else { return nil }
            return "\(what) of handle 0x\(hex(handle)), a characteristic the scenario cannot name (a second one with its UUID, or one of the GAP or GATT service the lab serves itself)"
        }
        guard let place = peripheral.descriptorPlace(handle) else {
            guard let (_, c) = peripheral.database.characteristic(holding: handle), let d = c.descriptors.first(where: { $0.handle == handle }) else {
                return "\(what) of handle 0x\(hex(handle)), which discovery did not find"
            }
            let name = peripheral.reference(c.valueHandle).map(\.description) ?? "\(c.uuid) (value handle 0x\(hex(c.valueHandle)))"
            return "\(what) of \(name)'s descriptor \(d.uuid) at handle 0x\(hex(handle)), which the scenario's characteristic does not have (the lab lays out 2902, 2900 and 2903 from the properties, declares each other type once, and serves its own GAP and GATT characteristics)"
        }
        if let value, op.error == nil, !op.unanswered, op.rejected == nil,
           let error = peripheral.labWriteError(place, handle: handle, value: value) {
            return "a write of \(ScalarText.hex(value)) to \(place.ref)'s descriptor \(place.uuid), which the device accepted and the lab's server refuses (\(error.name))"
        }
        return nil
    }
}

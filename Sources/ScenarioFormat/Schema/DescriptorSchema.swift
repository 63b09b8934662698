import BLEWire
import GATT
import YAMLSubset

/// Reads a characteristic's `descriptors:` and `extended-properties:` (docs/scenarios.md
/// "Descriptors"), checking what Core 5.4 Vol 3 Part G 3.3.3 says of each descriptor type.
struct DescriptorSchema {
    let r: SchemaReader

    static let keys = ["uuid", "value", "permissions"]
    static let permissionNames = ["read", "write"]

    /// `extended-properties: [reliable-write, writable-auxiliaries]`: the value of the 0x2900
    /// descriptor, which only a characteristic with the `extended-properties` property has.
    func extendedProperties(_ m: YAMLMapping, properties: CharacteristicProperties) -> CharacteristicExtendedProperties {
        guard let node = m["extended-properties"] else { return [] }
        let names = CharacteristicExtendedProperties.named.map(\.1)
        guard let items = r.items(node, "a list of extended properties such as [reliable-write, writable-auxiliaries]") else { return [] }
        var result: CharacteristicExtendedProperties = []
        for item in items {
            guard let s = r.scalar(item, "an extended property (\(names.joined(separator: ", ")))") else { continue }
            guard let p = CharacteristicExtendedProperties(name: s.text) else {
                r.error(item, expected: "an extended property (\(names.joined(separator: ", ")))", hint: Spelling.suggestion(for: s.text, in: names))
                continue
            }
            result.insert(p)
        }
        if !properties.contains(.extendedProperties) {
            r.error(at: m.entry(for: "extended-properties")?.key.mark ?? node.mark,
                    found: "'extended-properties:' on a characteristic without the extended-properties property",
                    expected: "extended-properties in its properties: that bit announces the 0x2900 descriptor (Core Vol 3 Part G 3.3.1.1)",
                    hint: "add extended-properties to properties")
        }
        return result
    }

    /// `descriptors:`, a list of `{ uuid, value, permissions }`.
    func descriptors(_ m: YAMLMapping, properties: CharacteristicProperties,
                     extended: CharacteristicExtendedProperties) -> [GATTDescriptor] {
        guard let node = m["descriptors"],
              let items = r.sequence(node, "a list of descriptors (- { uuid: 2901, value: text:Level })")?.items else { return [] }
        var result: [GATTDescriptor] = []
        var seen: Set<BluetoothUUID> = []
        for item in items {
            guard let dm = r.mapping(item, "a descriptor: a mapping with uuid, value and permissions") else { continue }
            r.checkKeys(dm, allowed: Self.keys, of: "a descriptor")
            guard let u = r.required(dm, "uuid", in: "a descriptor", expected: "'uuid: UUID' such as 2901"),
                  let uuid = r.uuid(u, "a descriptor UUID") else { continue }
            if let why = Self.refusal(uuid) {
                r.error(u, expected: "a descriptor BLELab does not lay out itself", hint: why)
                continue
            }
            if !seen.insert(uuid).inserted {
                r.error(u, expected: "each descriptor once per characteristic (Core Vol 3 Part G 3.3.3)")
                continue
            }
            var value: [UInt8] = []
            if let v = dm["value"], let bytes = r.bytes(v) {
                if bytes.count > 512 {
                    r.error(v, expected: "a value of at most 512 octets (Core Vol 3 Part F 3.2.9)")
                } else if let problem = Self.problem(with: bytes, of: uuid) {
                    r.error(v, expected: problem)
                } else {
                    value = bytes
                }
            }
            // Part G 3.3.3.2: the user description is writable only with writable-auxiliaries.
            let writableAuxiliary = uuid == .characteristicUserDescription && extended.contains(.writableAuxiliaries)
            var permissions: Set<String> = writableAuxiliary ? ["read", "write"] : ["read"]
            if let p = dm["permissions"] {
                permissions = self.permissions(p)
                if permissions.contains("write"), let why = Self.readOnly(uuid, extended: extended) {
                    r.error(at: p.mark, found: "'write' in the permissions of \(uuid)", expected: "permissions: [read]", hint: why)
                }
            }
            result.append(GATTDescriptor(uuid: uuid, value: value, isReadable: permissions.contains("read"),
                                         isWritable: permissions.contains("write")))
        }
        return result
    }

    private func permissions(_ node: YAMLNode) -> Set<String> {
        let names = Self.permissionNames
        guard let items = r.items(node, "a list of permissions such as [read, write]") else { return ["read"] }
        var result: Set<String> = []
        for item in items {
            guard let s = r.scalar(item, "a permission (read or write)") else { continue }
            guard names.contains(s.text) else {
                r.error(item, expected: "a permission (read or write)", hint: Spelling.suggestion(for: s.text, in: names))
                continue
            }
            result.insert(s.text)
        }
        return result
    }

    /// Why a descriptor type cannot be declared, or nil.
    static func refusal(_ uuid: BluetoothUUID) -> String? {
        switch uuid {
        case .characteristicExtendedProperties:
            return "BLELab adds the Characteristic Extended Properties descriptor (2900) to every characteristic with "
                + "the extended-properties property; set its bits with 'extended-properties: [reliable-write, writable-auxiliaries]'"
        case .clientCharacteristicConfiguration:
            return "BLELab adds the Client Characteristic Configuration descriptor (2902) to every characteristic with notify or indicate"
        case .serverCharacteristicConfiguration:
            return "BLELab adds the Server Characteristic Configuration descriptor (2903) to every characteristic with broadcast"
        case .characteristicAggregateFormat:
            return "the Characteristic Aggregate Format (2905) lists the handles of 2904 descriptors, which BLELab lays out; "
                + "declare one 2904 per characteristic"
        case .primaryService, .secondaryService, .include, .characteristic:
            return "\(uuid) is a declaration type (Core Vol 3 Part G 3), not a descriptor"
        default:
            return nil
        }
    }

    /// What a value of a standard descriptor must be, when `bytes` is not that.
    static func problem(with bytes: [UInt8], of uuid: BluetoothUUID) -> String? {
        switch uuid {
        case .characteristicUserDescription:
            return String(validating: bytes, as: UTF8.self) == nil
                ? "UTF-8 text for a Characteristic User Description (Core Vol 3 Part G 3.3.3.2), such as text:Battery level" : nil
        case .characteristicPresentationFormat:
            return bytes.count == 7 ? nil
                : "the 7 octets of a Characteristic Presentation Format (Core Vol 3 Part G 3.3.3.5): format, exponent, "
                    + "unit (2), name space, description (2), such as hex:04 00 ad 27 01 00 00; found \(bytes.count)"
        default:
            return nil
        }
    }

    /// Why `uuid` cannot be writable, or nil.
    static func readOnly(_ uuid: BluetoothUUID, extended: CharacteristicExtendedProperties) -> String? {
        switch uuid {
        case .characteristicUserDescription where !extended.contains(.writableAuxiliaries):
            return "a Characteristic User Description is writable only when the characteristic's extended properties "
                + "have writable-auxiliaries (Core Vol 3 Part G 3.3.3.2): add 'extended-properties: [writable-auxiliaries]'"
        case .characteristicPresentationFormat:
            return "a Characteristic Presentation Format is read-only (Core Vol 3 Part G 3.3.3.5)"
        default:
            return nil
        }
    }
}

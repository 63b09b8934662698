import BLEWire
import GATT
import YAMLSubset

/// The descriptor forms of `read` and `write`, and `subscribe`'s `type:` (docs/scenarios.md
/// "Central steps"): checked against the descriptors and properties each characteristic has.
extension CentralSchema {
    static let subscriptionTypes: [(String, GATTClientConfiguration, CharacteristicProperties)] = [
        ("notifications", .notification, .notify),
        ("indications", .indication, .indicate),
        ("both", [.notification, .indication], [.notify, .indicate]),
    ]

    /// `descriptor: UUID` of `ref` on peripheral `id`: a descriptor its database entry has.
    func descriptor(_ node: YAMLNode, of ref: CharacteristicRef, on id: String) -> DescriptorRef? {
        guard let uuid = r.uuid(node, "a descriptor UUID") else { return nil }
        guard case let .success(entry) = catalog.resolve(ref, in: id) else { return DescriptorRef(uuid, of: ref) }
        guard entry.descriptors.contains(uuid) else {
            let list = entry.descriptors.isEmpty ? "it has none" : "it has \(entry.descriptors.map(\.description).joined(separator: ", "))"
            var hint: String?
            switch uuid {
            case .clientCharacteristicConfiguration: hint = "a characteristic has a 2902 when it offers notify or indicate"
            case .characteristicExtendedProperties: hint = "a characteristic has a 2900 when it offers extended-properties"
            case .serverCharacteristicConfiguration: hint = "a characteristic has a 2903 when it offers broadcast"
            default: hint = "declare it under the characteristic's descriptors:"
            }
            r.error(node, expected: "a descriptor of \(ref) on \(id) (\(list))", hint: hint)
            return nil
        }
        return DescriptorRef(uuid, of: ref)
    }

    /// `subscribe`'s `type: notifications | indications | both`, which the characteristic must offer.
    func subscriptionType(_ node: YAMLNode, of ref: CharacteristicRef, on id: String) -> GATTClientConfiguration? {
        let names = Self.subscriptionTypes.map(\.0)
        let expected = "a subscription type (\(names.joined(separator: ", ")))"
        guard let s = r.scalar(node, expected) else { return nil }
        guard let (_, configuration, needed) = Self.subscriptionTypes.first(where: { $0.0 == s.text }) else {
            r.error(node, expected: expected, hint: Spelling.suggestion(for: s.text, in: names))
            return nil
        }
        if case let .success(entry) = catalog.resolve(ref, in: id), let properties = entry.properties, !properties.isSuperset(of: needed) {
            r.error(node, expected: "a type \(ref) offers (its properties are \(properties))",
                    hint: "'\(s.text)' needs \(needed.names.joined(separator: " and ")) in the characteristic's properties")
            return nil
        }
        return configuration
    }

    /// `write: { characteristic: U, descriptor: D, value: V }`: a Write Request to the descriptor
    /// (Core Vol 3 Part G 4.12.3), so `type` may only be `request` and `acquire` is refused.
    mutating func descriptorWrite(_ d: YAMLNode, fields f: KeywordFields, keyword: YAMLScalar) -> CentralAction? {
        let example = "write: { characteristic: 2A19, descriptor: 2902, value: u16:1 }"
        let resolved = f.required("characteristic", r, example: example).flatMap { characteristic($0, peripheral: f["peripheral"], at: keyword) }
        let bytes = f.required("value", r, example: example).flatMap { r.bytes($0) }
        if let t = f["type"], t.scalar?.text != WriteType.request.rawValue {
            r.error(t, expected: "type: request (or no type) when writing a descriptor",
                    hint: "descriptors are written with Write Requests (Core Vol 3 Part G 4.12.3)")
            return nil
        }
        if let a = f["acquire"] {
            r.error(a, expected: "no acquire when writing a descriptor", hint: "BlueZ's AcquireWrite writes characteristic values only")
            return nil
        }
        guard let (id, ref) = resolved, let bytes, let descriptor = descriptor(d, of: ref, on: id) else { return nil }
        if bytes.count > 512 {
            r.error(f["value"] ?? d, expected: "a value of at most 512 octets (Core Vol 3 Part F 3.2.9)")
            return nil
        }
        return .writeDescriptor(peripheral: id, descriptor: descriptor, value: bytes)
    }
}

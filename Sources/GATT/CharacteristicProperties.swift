import BLEWire

/// Characteristic Properties (Core 5.4, Vol 3, Part G, 3.3.1.1, Table 3.5): the first octet of a
/// characteristic declaration's value. Names are the kebab-case words scenario files use.
public struct CharacteristicProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8

    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let broadcast = CharacteristicProperties(rawValue: 0x01)
    public static let read = CharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = CharacteristicProperties(rawValue: 0x04)
    public static let write = CharacteristicProperties(rawValue: 0x08)
    public static let notify = CharacteristicProperties(rawValue: 0x10)
    public static let indicate = CharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = CharacteristicProperties(rawValue: 0x40)
    public static let extendedProperties = CharacteristicProperties(rawValue: 0x80)

    /// Every property with its name, in bit order.
    public static let named: [(CharacteristicProperties, String)] = [
        (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "write-without-response"),
        (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
        (.authenticatedSignedWrites, "authenticated-signed-writes"), (.extendedProperties, "extended-properties"),
    ]

    /// The property called `name` (one word, e.g. `write-without-response`), case-insensitive.
    public init?(name: String) {
        let lower = name.lowercased()
        for (property, candidate) in Self.named where candidate == lower {
            self = property
            return
        }
        return nil
    }

    /// Parses a list of names; nil when any is unknown.
    public init?<S: Sequence>(names: S) where S.Element == String {
        var result: CharacteristicProperties = []
        for name in names {
            guard let property = CharacteristicProperties(name: name) else { return nil }
            result.insert(property)
        }
        self = result
    }

    /// Names of the set bits, in bit order.
    public var names: [String] {
        Self.named.compactMap { contains($0.0) ? $0.1 : nil }
    }

    /// "[read, write-without-response, notify]".
    public var description: String { "[" + names.joined(separator: ", ") + "]" }
}

/// Characteristic Extended Properties (Core 5.4, Vol 3, Part G, 3.3.3.1, Table 3.10): the value
/// of the 0x2900 descriptor a characteristic with the `extended-properties` property carries.
/// Names are the kebab-case words scenario files use.
public struct CharacteristicExtendedProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Reliable Writes (Part G, 4.9.5) of the characteristic value are permitted.
    public static let reliableWrite = CharacteristicExtendedProperties(rawValue: 0x0001)
    /// The Characteristic User Description descriptor (0x2901) may be written (Part G, 3.3.3.2).
    public static let writableAuxiliaries = CharacteristicExtendedProperties(rawValue: 0x0002)

    /// Every extended property with its name, in bit order.
    public static let named: [(CharacteristicExtendedProperties, String)] = [
        (.reliableWrite, "reliable-write"), (.writableAuxiliaries, "writable-auxiliaries"),
    ]

    /// The extended property called `name`, case-insensitive.
    public init?(name: String) {
        let lower = name.lowercased()
        guard let found = Self.named.first(where: { $0.1 == lower }) else { return nil }
        self = found.0
    }

    /// The descriptor's two octets, little-endian.
    public var littleEndianBytes: [UInt8] { [UInt8(truncatingIfNeeded: rawValue), UInt8(truncatingIfNeeded: rawValue >> 8)] }

    public var names: [String] { Self.named.compactMap { contains($0.0) ? $0.1 : nil } }

    public var description: String { "[" + names.joined(separator: ", ") + "]" }
}

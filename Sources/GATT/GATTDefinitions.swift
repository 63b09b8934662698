import BLEWire

/// A service to put in a database (Core 5.4, Vol 3, Part G, 3.1). Includes (0x2802) are not
/// supported yet.
public struct GATTService: Hashable, Sendable {
    public var uuid: BluetoothUUID
    /// Primary (0x2800) or secondary (0x2801) service declaration.
    public var isPrimary: Bool
    public var characteristics: [GATTCharacteristic]
    /// The handle of its declaration, when it must have that one (a database rebuilt from a
    /// capture); nil: right after the last handle laid out.
    public var handle: UInt16?

    public init(uuid: BluetoothUUID, isPrimary: Bool = true, characteristics: [GATTCharacteristic] = [], handle: UInt16? = nil) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.characteristics = characteristics
        self.handle = handle
    }
}

/// A characteristic definition (Part G, 3.3): declaration, value, then descriptors. The
/// descriptors its properties require are added automatically, in this order after the value:
/// - the Client Characteristic Configuration (0x2902) when `properties` has notify or indicate
///   (Part G, 3.3.3.3);
/// - the Characteristic Extended Properties (0x2900, read-only, value `extendedProperties`) when
///   it has `extended-properties` (Part G, 3.3.1.1 and 3.3.3.1);
/// - the Server Characteristic Configuration (0x2903, readable and writable, 0x0000 at first)
///   when it has `broadcast` (Part G, 3.3.1.1 and 3.3.3.4).
/// A descriptor of one of those types listed in `descriptors` is ignored in favour of it.
public struct GATTCharacteristic: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var properties: CharacteristicProperties
    /// The initial value (at most 512 octets, Part F, 3.2.9).
    public var value: [UInt8]
    /// Descriptors after the automatic ones, in order.
    public var descriptors: [GATTDescriptor]
    /// The value of the 0x2900 descriptor, laid out when `properties` has `extended-properties`.
    public var extendedProperties: CharacteristicExtendedProperties
    /// The handle its value must have (its declaration one before); nil: right after the
    /// attribute before it.
    public var valueHandle: UInt16?
    /// What its value asks of the link (encryption, authentication, authorization, key size).
    public var permissions = AttributePermissions.open
    /// What its Client Characteristic Configuration descriptor asks of the link: subscribing to a
    /// characteristic whose CCCD needs encryption is the classic "pair first" case.
    public var configurationPermissions = AttributePermissions.open

    public init(uuid: BluetoothUUID, properties: CharacteristicProperties, value: [UInt8] = [],
                descriptors: [GATTDescriptor] = [], extendedProperties: CharacteristicExtendedProperties = [],
                valueHandle: UInt16? = nil) {
        self.uuid = uuid
        self.properties = properties
        self.value = value
        self.descriptors = descriptors
        self.extendedProperties = extendedProperties
        self.valueHandle = valueHandle
    }

    /// The descriptors the database lays out itself, by the property that requires each.
    static let automaticDescriptors: [(BluetoothUUID, CharacteristicProperties)] = [
        (.clientCharacteristicConfiguration, [.notify, .indicate]),
        (.characteristicExtendedProperties, .extendedProperties),
        (.serverCharacteristicConfiguration, .broadcast),
    ]

    /// Whether the database lays out a descriptor of type `uuid` itself (so a listed one is ignored).
    func addsAutomatically(_ uuid: BluetoothUUID) -> Bool {
        Self.automaticDescriptors.contains { $0.0 == uuid && !properties.isDisjoint(with: $0.1) }
    }
}

extension BluetoothUUID {
    /// Characteristic Presentation Format (Part G, 3.3.3.5): seven octets.
    public static let characteristicPresentationFormat: BluetoothUUID = 0x2904
    /// Characteristic Aggregate Format (Part G, 3.3.3.6): a list of 0x2904 handles.
    public static let characteristicAggregateFormat: BluetoothUUID = 0x2905
}

/// A characteristic descriptor (Part G, 3.3.3). Its access is set here, since descriptors have no
/// properties octet.
public struct GATTDescriptor: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var value: [UInt8]
    public var isReadable: Bool
    public var isWritable: Bool

    public init(uuid: BluetoothUUID, value: [UInt8] = [], isReadable: Bool = true, isWritable: Bool = false) {
        self.uuid = uuid
        self.value = value
        self.isReadable = isReadable
        self.isWritable = isWritable
    }

    /// Characteristic User Description (Part G, 3.3.3.2), read-only.
    public static func userDescription(_ text: String) -> GATTDescriptor {
        GATTDescriptor(uuid: .characteristicUserDescription, value: Array(text.utf8))
    }
}

/// The Client Characteristic Configuration bits (Part G, 3.3.3.3, Table 3.11), kept per client.
public struct GATTClientConfiguration: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let notification = GATTClientConfiguration(rawValue: 0x0001)
    public static let indication = GATTClientConfiguration(rawValue: 0x0002)

    /// The two octets written to the descriptor.
    public var littleEndianBytes: [UInt8] { [UInt8(truncatingIfNeeded: rawValue), UInt8(truncatingIfNeeded: rawValue >> 8)] }

    public var description: String {
        var parts: [String] = []
        if contains(.notification) { parts.append("notify") }
        if contains(.indication) { parts.append("indicate") }
        return parts.isEmpty ? "none" : parts.joined(separator: "+")
    }
}

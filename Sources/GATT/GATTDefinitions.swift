import BLEWire

/// A service to put in a database (Core 5.4, Vol 3, Part G, 3.1). Includes (0x2802) are not
/// supported yet.
public struct GATTService: Hashable, Sendable {
    public var uuid: BluetoothUUID
    /// Primary (0x2800) or secondary (0x2801) service declaration.
    public var isPrimary: Bool
    public var characteristics: [GATTCharacteristic]

    public init(uuid: BluetoothUUID, isPrimary: Bool = true, characteristics: [GATTCharacteristic] = []) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.characteristics = characteristics
    }
}

/// A characteristic definition (Part G, 3.3): declaration, value, then descriptors. A Client
/// Characteristic Configuration descriptor is added automatically when `properties` has notify or
/// indicate; a 0x2902 listed in `descriptors` is ignored in favour of it.
public struct GATTCharacteristic: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var properties: CharacteristicProperties
    /// The initial value (at most 512 octets, Part F, 3.2.9).
    public var value: [UInt8]
    /// Descriptors after the automatic CCCD, in order.
    public var descriptors: [GATTDescriptor]

    public init(uuid: BluetoothUUID, properties: CharacteristicProperties, value: [UInt8] = [],
                descriptors: [GATTDescriptor] = []) {
        self.uuid = uuid
        self.properties = properties
        self.value = value
        self.descriptors = descriptors
    }
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

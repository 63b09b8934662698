import BLEWire
import ATT

/// One attribute of a server's database (Core 5.4, Vol 3, Part F, 3.2): handle, type, value, and
/// what GATT made it (which decides its permissions).
public struct GATTAttribute: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// «Primary Service» 0x2800 or «Secondary Service» 0x2801; read-only.
        case serviceDeclaration(isPrimary: Bool)
        /// «Characteristic» 0x2803; read-only (Part G, 3.3.1).
        case characteristicDeclaration
        /// A characteristic value; its properties govern reads and writes (Part G, 3.3.1.1).
        case characteristicValue(CharacteristicProperties)
        /// A Client Characteristic Configuration descriptor: its value is kept per connection.
        case clientCharacteristicConfiguration
        /// Any other descriptor.
        case descriptor(isReadable: Bool, isWritable: Bool)
    }

    public let handle: UInt16
    public let type: BluetoothUUID
    /// The stored value (for a CCCD, the default every connection starts from).
    public internal(set) var value: [UInt8]
    public let kind: Kind
    /// Last handle of the group this attribute opens: the service's end for a service declaration,
    /// the characteristic's end for a characteristic declaration, else the attribute's own handle.
    public internal(set) var groupEndHandle: UInt16
    /// The value handle of the characteristic this attribute belongs to (0 outside characteristics).
    public let characteristicValueHandle: UInt16
    /// For a characteristic value or its CCCD: index of the CCCD in each connection's
    /// configuration table; -1 when there is none.
    public internal(set) var configurationSlot: Int
    /// What the link must have for a read or write (AttributePermissions): the characteristic's
    /// for its value, its `configurationPermissions` for its CCCD.
    public internal(set) var permissions = AttributePermissions.open

    /// The characteristic properties, for a characteristic value.
    public var properties: CharacteristicProperties? {
        if case let .characteristicValue(properties) = kind { return properties }
        return nil
    }

    /// Whether the specification fixes the attribute's length, so that a Read Blob Request for it
    /// is answered Attribute Not Long when it fits in ATT_MTU - 1 octets (Part F, 3.4.4.5):
    /// declarations (Part G, 3.1-3.3.1) and the Characteristic Extended Properties, Client and
    /// Server Characteristic Configuration (two octets each) and Presentation Format (seven)
    /// descriptors (Part G, 3.3.3).
    public var hasFixedLength: Bool {
        if isDeclaration { return true }
        switch type {
        case .characteristicExtendedProperties, .clientCharacteristicConfiguration, .serverCharacteristicConfiguration,
             .characteristicPresentationFormat:
            return true
        default:
            return false
        }
    }

    /// Declarations, whose value the database computes.
    public var isDeclaration: Bool {
        switch kind {
        case .serviceDeclaration, .characteristicDeclaration: return true
        default: return false
        }
    }
}

/// The handles a service got in a database.
public struct GATTServiceHandles: Hashable, Sendable {
    public let uuid: BluetoothUUID
    public let isPrimary: Bool
    /// Service declaration handle (`start`) to the last handle of the service (`end`).
    public let range: ATTHandleRange
    public let characteristics: [GATTCharacteristicHandles]

    /// The first characteristic with `uuid` in this service.
    public func characteristic(_ uuid: BluetoothUUID) -> GATTCharacteristicHandles? {
        characteristics.first { $0.uuid == uuid }
    }
}

/// The handles a characteristic got in a database.
public struct GATTCharacteristicHandles: Hashable, Sendable {
    public let uuid: BluetoothUUID
    public let properties: CharacteristicProperties
    public let declarationHandle: UInt16
    public let valueHandle: UInt16
    /// The Client Characteristic Configuration descriptor, when notify or indicate is set.
    public let configurationHandle: UInt16?
    /// Last handle of the characteristic (its last descriptor, or the value).
    public let endHandle: UInt16
    /// Every descriptor, CCCD included, in handle order.
    public let descriptors: [ATTHandleUUID]
}

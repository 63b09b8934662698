import Foundation
import GATT

/// The possible states of a Core Bluetooth manager.
public enum CBManagerState: Int, CustomStringConvertible {
    /// The manager's state is unknown (until its controller has powered on).
    case unknown = 0
    /// A state that indicates the connection with the system service was momentarily lost
    /// (in the lab: its controller was reset).
    case resetting = 1
    /// A state that indicates this device doesn't support the Bluetooth low energy central or
    /// client role (in the lab: the manager was made with no lab current).
    case unsupported = 2
    /// A state that indicates the application isn't authorized to use the Bluetooth low energy role.
    case unauthorized = 3
    /// A state that indicates Bluetooth is currently powered off.
    case poweredOff = 4
    /// A state that indicates Bluetooth is currently powered on and available to use.
    case poweredOn = 5

    public var description: String {
        switch self {
        case .unknown: return "unknown"
        case .resetting: return "resetting"
        case .unsupported: return "unsupported"
        case .unauthorized: return "unauthorized"
        case .poweredOff: return "poweredOff"
        case .poweredOn: return "poweredOn"
        }
    }
}

/// The current authorization state of a Core Bluetooth manager. The lab always allows.
public enum CBManagerAuthorization: Int {
    case notDetermined = 0
    case restricted = 1
    case denied = 2
    case allowedAlways = 3
}

/// Values that represent the connection state of a peripheral.
public enum CBPeripheralState: Int, CustomStringConvertible {
    case disconnected = 0
    case connecting = 1
    case connected = 2
    case disconnecting = 3

    public var description: String {
        switch self {
        case .disconnected: return "disconnected"
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .disconnecting: return "disconnecting"
        }
    }
}

/// Values representing the possible write types to a characteristic's value.
public enum CBCharacteristicWriteType: Int {
    /// Write a characteristic value, with a response from the peripheral to indicate whether the
    /// write was successful (an ATT Write Request, or Prepare/Execute Write for long values).
    case withResponse = 0
    /// Write a characteristic value, without any response from the peripheral (an ATT Write Command).
    case withoutResponse = 1
}

/// Values that represent the possible properties of a characteristic.
public struct CBCharacteristicProperties: OptionSet, Hashable {
    public let rawValue: UInt

    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let broadcast = CBCharacteristicProperties(rawValue: 0x01)
    public static let read = CBCharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = CBCharacteristicProperties(rawValue: 0x04)
    public static let write = CBCharacteristicProperties(rawValue: 0x08)
    public static let notify = CBCharacteristicProperties(rawValue: 0x10)
    public static let indicate = CBCharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = CBCharacteristicProperties(rawValue: 0x40)
    public static let extendedProperties = CBCharacteristicProperties(rawValue: 0x80)
    /// Only trusted devices can enable notifications (local characteristics only).
    public static let notifyEncryptionRequired = CBCharacteristicProperties(rawValue: 0x100)
    /// Only trusted devices can enable indications (local characteristics only).
    public static let indicateEncryptionRequired = CBCharacteristicProperties(rawValue: 0x200)

    /// The octet of a characteristic declaration (the two encryption bits are local only).
    var gattProperties: CharacteristicProperties {
        var p = CharacteristicProperties(rawValue: UInt8(truncatingIfNeeded: rawValue & 0xFF))
        if contains(.notifyEncryptionRequired) { p.insert(.notify) }
        if contains(.indicateEncryptionRequired) { p.insert(.indicate) }
        return p
    }

    init(_ gatt: CharacteristicProperties) {
        self.init(rawValue: UInt(gatt.rawValue))
    }
}

/// Values that represent the read, write, and encryption permissions for a characteristic's value.
public struct CBAttributePermissions: OptionSet, Hashable {
    /// What the GATT server enforces beyond `readable`/`writeable` (checked by the manager).
    var gattPermissions: AttributePermissions {
        AttributePermissions(read: contains(.readEncryptionRequired) ? .encrypted : .open,
                             write: contains(.writeEncryptionRequired) ? .encrypted : .open)
    }

    public let rawValue: UInt

    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let readable = CBAttributePermissions(rawValue: 0x01)
    public static let writeable = CBAttributePermissions(rawValue: 0x02)
    public static let readEncryptionRequired = CBAttributePermissions(rawValue: 0x04)
    public static let writeEncryptionRequired = CBAttributePermissions(rawValue: 0x08)
}

/// The latency of a peripheral-central connection controlled by the peripheral.
public enum CBPeripheralManagerConnectionLatency: Int {
    case low = 0
    case medium = 1
    case high = 2
}

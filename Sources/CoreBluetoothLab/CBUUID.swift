import BLEWire
import Foundation

/// A universally unique identifier, as defined by Bluetooth standards (Apple: `CBUUID`).
///
/// 16- and 32-bit UUIDs are aliases inside the Bluetooth Base UUID, so `CBUUID(string: "180D")`
/// equals `CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB")`, and both print `uuidString`
/// "180D". `description` gives the name CoreBluetooth prints for the UUIDs it names ("Heart Rate",
/// "Battery Level"…, see `CBUUID+AssignedNumbers.swift`), else `uuidString`.
public class CBUUID: NSObject, NSCopying {
    /// The UUID as the lab's stack keeps it.
    let bluetoothUUID: BluetoothUUID

    init(_ uuid: BluetoothUUID) {
        bluetoothUUID = uuid
        super.init()
    }

    /// Creates a UUID from a 16-, 32-, or 128-bit UUID string: "180D", "0000180D", or
    /// "68753A44-4D6F-1226-9C60-0050E4C00067". Like CoreBluetooth, a string that is none of these
    /// is a programming error and stops the program.
    public convenience init(string theString: String) {
        guard let uuid = BluetoothUUID(string: theString) else {
            preconditionFailure("CBUUID(string:): \"\(theString)\" is not a 16-, 32- or 128-bit UUID string")
        }
        self.init(uuid)
    }

    /// Creates a UUID from its 2, 4 or 16 bytes, most significant first (as `data` gives them).
    public convenience init(data theData: Data) {
        let bytes = [UInt8](theData)
        var high: UInt64 = 0, low: UInt64 = 0
        switch bytes.count {
        case 2:
            self.init(BluetoothUUID(uuid16: UInt16(bytes[0]) << 8 | UInt16(bytes[1])))
            return
        case 4:
            self.init(BluetoothUUID(uuid32: bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }))
            return
        case 16:
            for b in bytes[0..<8] { high = high << 8 | UInt64(b) }
            for b in bytes[8..<16] { low = low << 8 | UInt64(b) }
            self.init(BluetoothUUID(high: high, low: low))
        default:
            preconditionFailure("CBUUID(data:): \(bytes.count) bytes; a UUID has 2, 4 or 16")
        }
    }

    /// Creates a UUID from a Foundation `UUID` (128 bits).
    public convenience init(nsuuid theUUID: UUID) {
        let u = theUUID.uuid
        let bytes = [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
        self.init(data: Data(bytes))
    }

    /// The UUID as a string: 4 hex digits for a 16-bit UUID, 8 for a 32-bit one, else the
    /// 8-4-4-4-12 form; upper case.
    public var uuidString: String { bluetoothUUID.uuidString }

    /// The UUID's bytes, most significant first: 2, 4 or 16 of them.
    public var data: Data {
        if let short = bluetoothUUID.uuid16 { return Data([UInt8(short >> 8), UInt8(truncatingIfNeeded: short)]) }
        if let short = bluetoothUUID.uuid32 { return Data((0..<4).map { UInt8(truncatingIfNeeded: short >> (24 - 8 * $0)) }) }
        let h = bluetoothUUID.high, l = bluetoothUUID.low
        return Data((0..<8).map { UInt8(truncatingIfNeeded: h >> (56 - 8 * UInt64($0))) }
                    + (0..<8).map { UInt8(truncatingIfNeeded: l >> (56 - 8 * UInt64($0))) })
    }

    /// The name CoreBluetooth prints for an assigned number it knows, else `uuidString`.
    public override var description: String {
        bluetoothUUID.uuid16.flatMap { CBUUID.assignedNames[$0] } ?? uuidString
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CBUUID else { return false }
        return other.bluetoothUUID == bluetoothUUID
    }

    public override var hash: Int { bluetoothUUID.hashValue }

    /// CBUUIDs are immutable: a copy is the same object.
    public func copy(with zone: NSZone? = nil) -> Any { self }
}

/// The string representation of the UUID for the extended properties descriptor.
public let CBUUIDCharacteristicExtendedPropertiesString = "2900"
/// The string representation of the UUID for the user description descriptor.
public let CBUUIDCharacteristicUserDescriptionString = "2901"
/// The string representation of the UUID for the client configuration descriptor.
public let CBUUIDClientCharacteristicConfigurationString = "2902"
/// The string representation of the UUID for the server configuration descriptor.
public let CBUUIDServerCharacteristicConfigurationString = "2903"
/// The string representation of the UUID for the presentation format descriptor.
public let CBUUIDCharacteristicFormatString = "2904"
/// The string representation of the UUID for the aggregate descriptor.
public let CBUUIDCharacteristicAggregateFormatString = "2905"

extension BluetoothUUID {
    var cbUUID: CBUUID { CBUUID(self) }
}

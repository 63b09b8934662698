import ATT
import BLEWire
import DBus
import GATT
import ScenarioEngine

/// Conversions between BLELab's types and what org.bluez carries: addresses as
/// "C0:11:22:33:44:55" plus AddressType "public"/"random", UUIDs as lower-case 128-bit strings,
/// characteristic properties as Flags strings (doc/org.bluez.GattCharacteristic.rst), and ATT
/// error codes as org.bluez.Error.* names.
public enum BlueZMapping {
    /// "public"/"random" plus the address string.
    public static func address(_ string: String, type: String?) -> LEAddress? {
        guard let bd = BDAddr(string: string) else { return nil }
        return LEAddress(bd, type: type == "random" ? .random : .public)
    }

    /// The 128-bit lower-case form BlueZ uses for every UUID.
    public static func uuidString(_ uuid: BluetoothUUID) -> String { uuid.fullString.lowercased() }

    /// A UUID from BlueZ's 128-bit string (16- and 32-bit ones come back in their short form).
    public static func uuid(_ string: String) -> BluetoothUUID? { BluetoothUUID(string: string) }

    /// The Flags of a characteristic with `properties`, in the order of the property bits.
    public static func flags(_ properties: CharacteristicProperties) -> [String] {
        let table: [(CharacteristicProperties, String)] = [
            (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "write-without-response"), (.write, "write"),
            (.notify, "notify"), (.indicate, "indicate"), (.authenticatedSignedWrites, "authenticated-signed-writes"),
            (.extendedProperties, "extended-properties"),
        ]
        return table.filter { properties.contains($0.0) }.map(\.1)
    }

    /// The property bits in a Flags list (flags that are not property bits, such as
    /// "reliable-write" or "encrypt-read", are left out).
    public static func properties(_ flags: [String]) -> CharacteristicProperties {
        var p = CharacteristicProperties()
        for flag in flags {
            switch flag {
            case "broadcast": p.insert(.broadcast)
            case "read": p.insert(.read)
            case "write-without-response": p.insert(.writeWithoutResponse)
            case "write": p.insert(.write)
            case "notify": p.insert(.notify)
            case "indicate": p.insert(.indicate)
            case "authenticated-signed-writes": p.insert(.authenticatedSignedWrites)
            case "extended-properties": p.insert(.extendedProperties)
            default: break
            }
        }
        return p
    }

    /// The ATT error a D-Bus error from GattCharacteristic1.ReadValue/WriteValue stands for.
    /// bluetoothd 5.66 (src/gatt-client.c, create_gatt_dbus_error) turns an ATT Error Response
    /// into a D-Bus error: most codes as org.bluez.Error.Failed "Operation failed with ATT error:
    /// 0xNN", but some by name, and those lose detail: Insufficient Authentication, Insufficient
    /// Encryption and Insufficient Encryption Key Size all become NotPermitted "Not paired"
    /// (mapped back to Insufficient Authentication).
    public static func attError(_ reply: DBusErrorReply) -> ATTErrorCode? {
        let marker = "ATT error: 0x"
        if let at = Self.find(marker, in: reply.message) {
            let hex = reply.message[at...].dropFirst(marker.count).prefix { $0.isHexDigit }
            if let raw = UInt8(hex, radix: 16) { return ATTErrorCode(rawValue: raw) }
        }
        switch (reply.name, reply.message) {
        case ("org.bluez.Error.NotPermitted", "Read not permitted"): return .readNotPermitted
        case ("org.bluez.Error.NotPermitted", "Write not permitted"): return .writeNotPermitted
        case ("org.bluez.Error.NotPermitted", "Not paired"): return .insufficientAuthentication
        case ("org.bluez.Error.InvalidArguments", "Invalid offset"): return .invalidOffset
        case ("org.bluez.Error.InvalidArguments", "Invalid Length"): return .invalidAttributeValueLength
        case ("org.bluez.Error.NotAuthorized", _): return .insufficientAuthorization
        case ("org.bluez.Error.NotSupported", _): return .requestNotSupported
        default: return nil
        }
    }

    /// Where `needle` starts in `text` (Foundation-free).
    static func find(_ needle: String, in text: String) -> String.Index? {
        var i = text.startIndex
        while i < text.endIndex {
            if text[i...].hasPrefix(needle) { return i }
            i = text.index(after: i)
        }
        return nil
    }
}

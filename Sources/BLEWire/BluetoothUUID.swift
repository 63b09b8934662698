/// A Bluetooth UUID. 16- and 32-bit UUIDs are aliases inside the Bluetooth Base UUID
/// 00000000-0000-1000-8000-00805F9B34FB (Core 5.4, Vol 3, Part B, 2.5.1), so all forms are kept as
/// 128 bits and compare equal after expansion, as CoreBluetooth's CBUUID does: "FFE0" equals
/// "0000FFE0-0000-1000-8000-00805F9B34FB".
public struct BluetoothUUID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Most significant 64 bits (as written first in the string form).
    public let high: UInt64
    /// Least significant 64 bits.
    public let low: UInt64

    static let baseHigh: UInt64 = 0x0000_0000_0000_1000
    static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public init(uuid16: UInt16) {
        self.init(high: UInt64(uuid16) << 32 | Self.baseHigh, low: Self.baseLow)
    }

    public init(uuid32: UInt32) {
        self.init(high: UInt64(uuid32) << 32 | Self.baseHigh, low: Self.baseLow)
    }

    /// Parses "180D", "0000180D" (32-bit) or "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"; case-insensitive.
    public init?(string: String) {
        // Integer parsing alone would also take a sign ("+FFE"); only hex digits and dashes belong here.
        guard string.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { return nil }
        let hex = string.filter { $0 != "-" }
        switch hex.count {
        case 4:
            guard string.count == 4, let value = UInt16(hex, radix: 16) else { return nil }
            self.init(uuid16: value)
        case 8:
            guard string.count == 8, let value = UInt32(hex, radix: 16) else { return nil }
            self.init(uuid32: value)
        case 32:
            // Only the canonical 8-4-4-4-12 grouping or no dashes at all.
            if string.count == 36 {
                let dashes = string.indices.filter { string[$0] == "-" }.map { string.distance(from: string.startIndex, to: $0) }
                guard dashes == [8, 13, 18, 23] else { return nil }
            } else if string.count != 32 {
                return nil
            }
            guard let hi = UInt64(hex.prefix(16), radix: 16), let lo = UInt64(hex.suffix(16), radix: 16) else { return nil }
            self.init(high: hi, low: lo)
        default:
            return nil
        }
    }

    /// True when this UUID lies in the Bluetooth Base UUID (so a 16- or 32-bit alias exists).
    public var isBased: Bool { low == Self.baseLow && high & 0xFFFF_FFFF == Self.baseHigh }

    /// The 16-bit alias, when there is one.
    public var uuid16: UInt16? {
        isBased && high >> 48 == 0 ? UInt16(truncatingIfNeeded: high >> 32) : nil
    }

    /// The 32-bit alias, when there is one (every 16-bit UUID also has one).
    public var uuid32: UInt32? {
        isBased ? UInt32(truncatingIfNeeded: high >> 32) : nil
    }

    /// Octets in the shortest encoding: 2, 4 or 16.
    public var width: Int { uuid16 != nil ? 2 : (uuid32 != nil ? 4 : 16) }

    public func fits(width: Int) -> Bool {
        switch width {
        case 2: return uuid16 != nil
        case 4: return uuid32 != nil
        default: return width == 16
        }
    }

    /// The string CoreBluetooth's `uuidString` gives: 4 or 8 hex digits for aliases, the full form
    /// otherwise; upper case.
    public var uuidString: String {
        if let short = uuid16 { return Self.hex(UInt64(short), digits: 4) }
        if let short = uuid32 { return Self.hex(UInt64(short), digits: 8) }
        return fullString
    }

    /// Always the 128-bit 8-4-4-4-12 form.
    public var fullString: String {
        let h = Self.hex(high, digits: 16), l = Self.hex(low, digits: 16)
        return "\(h.prefix(8))-\(h.dropFirst(8).prefix(4))-\(h.suffix(4))-\(l.prefix(4))-\(l.suffix(12))"
    }

    /// Little-endian octets in the shortest form.
    public var littleEndianBytes: [UInt8] {
        var writer = ByteWriter(capacity: 16)
        writer.write(uuid: self)
        return writer.bytes
    }

    public var description: String { uuidString }

    public static func < (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let s = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - s.count)) + s
    }
}

extension BluetoothUUID: ExpressibleByIntegerLiteral {
    /// `0x180D` as a literal means the 16-bit UUID (or 32-bit when larger).
    public init(integerLiteral value: UInt32) {
        if value <= 0xFFFF { self.init(uuid16: UInt16(value)) } else { self.init(uuid32: value) }
    }
}

/// Assigned numbers used by the GATT and GAP layers (Bluetooth SIG Assigned Numbers, 3.4–3.8).
public extension BluetoothUUID {
    static let primaryService: BluetoothUUID = 0x2800
    static let secondaryService: BluetoothUUID = 0x2801
    static let include: BluetoothUUID = 0x2802
    static let characteristic: BluetoothUUID = 0x2803
    static let characteristicExtendedProperties: BluetoothUUID = 0x2900
    static let characteristicUserDescription: BluetoothUUID = 0x2901
    static let clientCharacteristicConfiguration: BluetoothUUID = 0x2902
    static let serverCharacteristicConfiguration: BluetoothUUID = 0x2903
    static let genericAccessService: BluetoothUUID = 0x1800
    static let genericAttributeService: BluetoothUUID = 0x1801
    static let deviceName: BluetoothUUID = 0x2A00
    static let appearance: BluetoothUUID = 0x2A01
    static let serviceChanged: BluetoothUUID = 0x2A05
}

/// A 48-bit Bluetooth device address (Core 5.4, Vol 2, Part B, 1.2). Stored as a number whose
/// least significant octet is the first on the wire; printed most significant first.
public struct BDAddr: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue & 0xFFFF_FFFF_FFFF }

    /// Parses `C0:11:22:33:44:55` (or with `-`), most significant octet first.
    public init?(string: String) {
        let parts = string.split(omittingEmptySubsequences: false, whereSeparator: { $0 == ":" || $0 == "-" })
        guard parts.count == 6 else { return nil }
        var raw: UInt64 = 0
        for part in parts {
            // UInt8(_:radix:) also takes a sign ("+F"), which is not an address digit.
            guard part.count == 2, part.allSatisfy(\.isHexDigit), let octet = UInt8(part, radix: 16) else { return nil }
            raw = raw << 8 | UInt64(octet)
        }
        self.init(rawValue: raw)
    }

    /// The six octets in wire order (least significant first).
    public var littleEndianBytes: [UInt8] {
        (0..<6).map { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt64($0))) }
    }

    public var description: String {
        (0..<6).reversed().map { i -> String in
            let octet = UInt8(truncatingIfNeeded: rawValue >> (8 * UInt64(i)))
            return octet < 16 ? "0" + String(octet, radix: 16, uppercase: true) : String(octet, radix: 16, uppercase: true)
        }.joined(separator: ":")
    }

    /// A random static address has its two most significant bits set
    /// (Core 5.4, Vol 6, Part B, 1.3.2.1) and is neither all ones nor all zeros in the rest.
    public var isValidRandomStatic: Bool {
        let random = rawValue & 0x3FFF_FFFF_FFFF
        return rawValue >> 46 == 0b11 && random != 0 && random != 0x3FFF_FFFF_FFFF
    }

    public static func < (lhs: BDAddr, rhs: BDAddr) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which address space a device address belongs to (HCI Address_Type / Own_Address_Type).
public struct AddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let `public` = AddressType(rawValue: 0x00)
    public static let random = AddressType(rawValue: 0x01)

    public var description: String {
        switch rawValue {
        case 0x00: return "public"
        case 0x01: return "random"
        case 0x02: return "public-identity"
        case 0x03: return "random-identity"
        default: return "0x" + String(rawValue, radix: 16)
        }
    }
}

/// An address together with its type: what identifies an LE device on the air.
public struct LEAddress: Hashable, Sendable, CustomStringConvertible {
    public var address: BDAddr
    public var type: AddressType

    public init(_ address: BDAddr, type: AddressType) {
        self.address = address
        self.type = type
    }

    /// Parses `C0:11:22:33:44:55`, `C0:11:22:33:44:55/random` or `…/public`.
    public init?(string: String) {
        let pieces = string.split(separator: "/", omittingEmptySubsequences: false)
        guard pieces.count <= 2, let address = BDAddr(string: String(pieces[0])) else { return nil }
        var type = AddressType.public
        if pieces.count == 2 {
            switch pieces[1].lowercased() {
            case "public": type = .public
            case "random": type = .random
            default: return nil
            }
        }
        self.init(address, type: type)
    }

    public var description: String { "\(address)/\(type)" }
}

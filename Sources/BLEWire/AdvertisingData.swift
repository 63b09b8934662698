/// One AD structure of advertising or scan response data
/// (Core 5.4, Vol 3, Part C, 11; data types in the Core Specification Supplement, Part A).
///
///     | Length (1) | AD Type (1) | AD Data (Length - 1) |
public enum ADStructure: Hashable, Sendable {
    /// CSS Part A, 1.3: LE Limited/General Discoverable, BR/EDR Not Supported, …
    case flags(UInt8)
    /// CSS Part A, 1.1. `complete` distinguishes "Complete List" from "Incomplete List";
    /// the width (16, 32, 128 bits) is given by the AD type.
    case serviceUUIDs16([BluetoothUUID], complete: Bool)
    case serviceUUIDs32([BluetoothUUID], complete: Bool)
    case serviceUUIDs128([BluetoothUUID], complete: Bool)
    /// CSS Part A, 1.2. Kept as octets: a name need not be valid UTF-8 on the air.
    case localName([UInt8], complete: Bool)
    /// CSS Part A, 1.5, in dBm.
    case txPowerLevel(Int8)
    /// CSS Part A, 1.4: company identifier then data.
    case manufacturerData(companyID: UInt16, data: [UInt8])
    /// CSS Part A, 1.11, for a 16-, 32- or 128-bit service UUID (the AD type follows the UUID's width).
    case serviceData(BluetoothUUID, data: [UInt8], width: Int)
    /// Any other AD type, kept verbatim.
    case other(type: UInt8, data: [UInt8])

    public enum ADType {
        public static let flags: UInt8 = 0x01
        public static let incompleteList16: UInt8 = 0x02
        public static let completeList16: UInt8 = 0x03
        public static let incompleteList32: UInt8 = 0x04
        public static let completeList32: UInt8 = 0x05
        public static let incompleteList128: UInt8 = 0x06
        public static let completeList128: UInt8 = 0x07
        public static let shortenedLocalName: UInt8 = 0x08
        public static let completeLocalName: UInt8 = 0x09
        public static let txPowerLevel: UInt8 = 0x0A
        public static let serviceData16: UInt8 = 0x16
        public static let serviceData32: UInt8 = 0x20
        public static let serviceData128: UInt8 = 0x21
        public static let manufacturerSpecificData: UInt8 = 0xFF
    }

    public var type: UInt8 {
        switch self {
        case .flags: return ADType.flags
        case let .serviceUUIDs16(_, complete): return complete ? ADType.completeList16 : ADType.incompleteList16
        case let .serviceUUIDs32(_, complete): return complete ? ADType.completeList32 : ADType.incompleteList32
        case let .serviceUUIDs128(_, complete): return complete ? ADType.completeList128 : ADType.incompleteList128
        case let .localName(_, complete): return complete ? ADType.completeLocalName : ADType.shortenedLocalName
        case .txPowerLevel: return ADType.txPowerLevel
        case .manufacturerData: return ADType.manufacturerSpecificData
        case let .serviceData(_, _, width):
            return width == 2 ? ADType.serviceData16 : (width == 4 ? ADType.serviceData32 : ADType.serviceData128)
        case let .other(type, _): return type
        }
    }

    /// The AD Data field.
    public var data: [UInt8] {
        var writer = ByteWriter(capacity: 29)
        switch self {
        case let .flags(flags): writer.write(flags)
        case let .serviceUUIDs16(uuids, _): for u in uuids { writer.write(uuid: u, width: 2) }
        case let .serviceUUIDs32(uuids, _): for u in uuids { writer.write(uuid: u, width: 4) }
        case let .serviceUUIDs128(uuids, _): for u in uuids { writer.write(uuid: u, width: 16) }
        case let .localName(name, _): writer.write(bytes: name)
        case let .txPowerLevel(level): writer.write(level)
        case let .manufacturerData(company, data):
            writer.writeUInt16LE(company)
            writer.write(bytes: data)
        case let .serviceData(uuid, data, width):
            writer.write(uuid: uuid, width: width)
            writer.write(bytes: data)
        case let .other(_, data): writer.write(bytes: data)
        }
        return writer.bytes
    }

    /// Decodes one structure's type and data. `offset` is only used in error reports.
    public init(type: UInt8, data: [UInt8], offset: Int = 0) throws {
        // A size the AD type does not allow is an invalid value of the Length octet, reported at the
        // data: `lengthMismatch` would claim fewer octets were present than actually were.
        func uuids(width: Int) throws -> [BluetoothUUID] {
            guard data.count % width == 0 else {
                throw DecodeError.invalidValue(field: "AD 0x\(String(type, radix: 16)) UUID list length (multiple of \(width))",
                                               value: UInt64(data.count), at: offset)
            }
            var reader = ByteReader(data)
            var list: [BluetoothUUID] = []
            while !reader.isAtEnd { list.append(try reader.readUUID(width: width)) }
            return list
        }
        func exactly(_ n: Int, _ field: String) throws {
            guard data.count == n else {
                throw DecodeError.invalidValue(field: "\(field) length", value: UInt64(data.count), at: offset)
            }
        }
        func atLeast(_ n: Int, _ field: String) throws {
            guard data.count >= n else { throw DecodeError.truncated(needed: n, available: data.count, at: offset) }
        }
        switch type {
        case ADType.flags:
            // CSS Part A 1.3 allows a Flags field of 0 or more octets; only the common one-octet
            // form is typed, others are kept verbatim so they re-encode identically.
            self = data.count == 1 ? .flags(data[0]) : .other(type: type, data: data)
        case ADType.incompleteList16, ADType.completeList16:
            self = .serviceUUIDs16(try uuids(width: 2), complete: type == ADType.completeList16)
        case ADType.incompleteList32, ADType.completeList32:
            self = .serviceUUIDs32(try uuids(width: 4), complete: type == ADType.completeList32)
        case ADType.incompleteList128, ADType.completeList128:
            self = .serviceUUIDs128(try uuids(width: 16), complete: type == ADType.completeList128)
        case ADType.shortenedLocalName, ADType.completeLocalName:
            self = .localName(data, complete: type == ADType.completeLocalName)
        case ADType.txPowerLevel:
            try exactly(1, "TX Power Level")
            self = .txPowerLevel(Int8(bitPattern: data[0]))
        case ADType.manufacturerSpecificData:
            try atLeast(2, "Manufacturer Specific Data")
            self = .manufacturerData(companyID: UInt16(data[0]) | UInt16(data[1]) << 8, data: Array(data[2...]))
        case ADType.serviceData16, ADType.serviceData32, ADType.serviceData128:
            let width = type == ADType.serviceData16 ? 2 : (type == ADType.serviceData32 ? 4 : 16)
            try atLeast(width, "Service Data")
            var reader = ByteReader(data)
            let uuid = try reader.readUUID(width: width)
            self = .serviceData(uuid, data: reader.readRemaining(), width: width)
        default:
            self = .other(type: type, data: data)
        }
    }
}

/// Advertising or scan response data: a sequence of AD structures.
public struct AdvertisingData: Hashable, Sendable, CustomStringConvertible {
    /// Legacy advertising PDUs carry at most 31 octets (Core 5.4, Vol 6, Part B, 2.3.1).
    public static let legacyMaximumLength = 31

    public var structures: [ADStructure]

    public init(_ structures: [ADStructure] = []) { self.structures = structures }

    /// Decodes AD structures. A zero Length octet ends the data early, as the specification allows
    /// (Vol 3, Part C, 11); anything else that does not fit is a `DecodeError`.
    public init(decoding bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        var list: [ADStructure] = []
        while !reader.isAtEnd {
            let lengthOffset = reader.offset
            let length = Int(try reader.readUInt8())
            if length == 0 { break }
            guard length <= reader.remaining else {
                throw DecodeError.truncated(needed: length, available: reader.remaining, at: lengthOffset + 1)
            }
            let type = try reader.readUInt8()
            let data = try reader.readBytes(count: length - 1)
            list.append(try ADStructure(type: type, data: data, offset: lengthOffset + 2))
        }
        structures = list
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 31)
        for s in structures {
            let data = s.data
            writer.write(UInt8(truncatingIfNeeded: data.count + 1))
            writer.write(s.type)
            writer.write(bytes: data)
        }
        return writer.bytes
    }

    // MARK: Convenience views

    public var flags: UInt8? {
        for case let .flags(f) in structures { return f }
        return nil
    }

    /// The complete local name if present, else the shortened one.
    public var localName: String? {
        var shortened: String?
        for case let .localName(bytes, complete) in structures {
            let name = String(decoding: bytes, as: UTF8.self)
            if complete { return name }
            shortened = shortened ?? name
        }
        return shortened
    }

    /// Every service UUID from the complete and incomplete lists of all widths, in order.
    public var serviceUUIDs: [BluetoothUUID] {
        var result: [BluetoothUUID] = []
        for s in structures {
            switch s {
            case let .serviceUUIDs16(u, _), let .serviceUUIDs32(u, _), let .serviceUUIDs128(u, _):
                result.append(contentsOf: u)
            default: break
            }
        }
        return result
    }

    public var txPowerLevel: Int8? {
        for case let .txPowerLevel(p) in structures { return p }
        return nil
    }

    /// Manufacturer data as CoreBluetooth reports it: company identifier (little-endian) then data.
    public var manufacturerData: [UInt8]? {
        for case let .manufacturerData(company, data) in structures {
            return [UInt8(truncatingIfNeeded: company), UInt8(truncatingIfNeeded: company >> 8)] + data
        }
        return nil
    }

    public var serviceData: [BluetoothUUID: [UInt8]] {
        var result: [BluetoothUUID: [UInt8]] = [:]
        for case let .serviceData(uuid, data, _) in structures where result[uuid] == nil { result[uuid] = data }
        return result
    }

    public var description: String {
        structures.map { s -> String in
            switch s {
            case let .flags(f): return "flags=0x\(String(f, radix: 16))"
            case let .serviceUUIDs16(u, c), let .serviceUUIDs32(u, c), let .serviceUUIDs128(u, c):
                return "\(c ? "services" : "services(incomplete)")=[\(u.map(\.uuidString).joined(separator: ","))]"
            case let .localName(n, c): return "\(c ? "name" : "short-name")=\(String(decoding: n, as: UTF8.self))"
            case let .txPowerLevel(p): return "tx-power=\(p)"
            case let .manufacturerData(c, d): return "manufacturer=0x\(String(c, radix: 16)):\(d.hexString)"
            case let .serviceData(u, d, _): return "service-data=\(u):\(d.hexString)"
            case let .other(t, d): return "ad[0x\(String(t, radix: 16))]=\(d.hexString)"
            }
        }.joined(separator: " ")
    }
}

extension AdvertisingData {
    /// Builds typical advertising data: flags, a complete local name, complete service UUID lists
    /// (grouped by width), and optional TX power, manufacturer and service data.
    public static func make(flags: UInt8? = 0x06, name: String? = nil, services: [BluetoothUUID] = [],
                            txPower: Int8? = nil, manufacturer: (UInt16, [UInt8])? = nil,
                            serviceData: [(BluetoothUUID, [UInt8])] = []) -> AdvertisingData {
        var s: [ADStructure] = []
        if let flags { s.append(.flags(flags)) }
        let by16 = services.filter { $0.width == 2 }, by32 = services.filter { $0.width == 4 }
        let by128 = services.filter { $0.width == 16 }
        if !by16.isEmpty { s.append(.serviceUUIDs16(by16, complete: true)) }
        if !by32.isEmpty { s.append(.serviceUUIDs32(by32, complete: true)) }
        if !by128.isEmpty { s.append(.serviceUUIDs128(by128, complete: true)) }
        if let name { s.append(.localName(Array(name.utf8), complete: true)) }
        if let txPower { s.append(.txPowerLevel(txPower)) }
        if let (company, data) = manufacturer { s.append(.manufacturerData(companyID: company, data: data)) }
        for (uuid, data) in serviceData { s.append(.serviceData(uuid, data: data, width: uuid.width)) }
        return AdvertisingData(s)
    }
}

extension Sequence where Element == UInt8 {
    /// Lower-case hex with no separators, e.g. "4c0002".
    public var hexString: String {
        var s = ""
        for b in self {
            s.append(Character(Unicode.Scalar(hexDigits[Int(b >> 4)])))
            s.append(Character(Unicode.Scalar(hexDigits[Int(b & 0xF)])))
        }
        return s
    }

    /// Hex with spaces between octets, e.g. "4c 00 02".
    public var spacedHex: String {
        map { b -> String in String(Character(Unicode.Scalar(hexDigits[Int(b >> 4)]))) + String(Character(Unicode.Scalar(hexDigits[Int(b & 0xF)]))) }
            .joined(separator: " ")
    }
}

private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

extension Array where Element == UInt8 {
    /// Parses hex digits, ignoring spaces, colons and dashes; nil on anything else or an odd count.
    public init?(hex: String) {
        var result: [UInt8] = []
        var pending: UInt8?
        for ch in hex.unicodeScalars {
            if ch == " " || ch == ":" || ch == "-" || ch == "\n" { continue }
            guard let v = UInt8(String(ch), radix: 16) else { return nil }
            if let high = pending { result.append(high << 4 | v); pending = nil } else { pending = v }
        }
        guard pending == nil else { return nil }
        self = result
    }
}

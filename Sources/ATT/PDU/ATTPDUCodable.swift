import BLEWire

/// One ATT PDU type with a symmetric codec (Core 5.4, Vol 3, Part F, 3.3.1):
///
///     | Attribute Opcode (1) | Attribute Parameters (0 to ATT_MTU - 1) |
///
/// `init(from:)` reads the whole PDU, opcode included, and consumes the reader to its end (an ATT
/// PDU always fills its L2CAP payload); `encode(into:)` writes the whole PDU. A PDU type never
/// carries an Authentication Signature except `ATTSignedWriteCommand`.
public protocol ATTPDUCodable: Equatable, CustomStringConvertible {
    static var opcode: ATTOpcode { get }
    init(from reader: inout ByteReader) throws
    func encode(into writer: inout ByteWriter)
}

extension ATTPDUCodable {
    /// Decodes exactly one PDU of this type from `bytes`.
    public init(decoding bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        try self.init(from: &reader)
        try reader.expectEnd()
    }

    /// The PDU's octets, opcode first.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 24)
        encode(into: &writer)
        return writer.bytes
    }
}

extension ByteReader {
    /// Reads the opcode octet and checks it is `expected`.
    mutating func readATTOpcode(_ expected: ATTOpcode) throws {
        let at = offset
        let raw = try readUInt8()
        if raw != expected.rawValue {
            throw DecodeError.invalidValue(field: "ATT opcode (expected \(expected.name))", value: UInt64(raw), at: at)
        }
    }

    /// Reads a Starting Handle / Ending Handle pair.
    mutating func readHandleRange() throws -> ATTHandleRange {
        let start = try readUInt16LE()
        let end = try readUInt16LE()
        return ATTHandleRange(start: start, end: end)
    }

    /// Reads a 2- or 16-octet UUID taking the rest of the PDU (Read By Type, Read By Group Type).
    mutating func readTrailingUUID(field: String) throws -> BluetoothUUID {
        switch remaining {
        case 2, 16: return try readUUID(width: remaining)
        default: throw DecodeError.lengthMismatch(field: field + " (2 or 16 octets)", declared: remaining, actual: remaining)
        }
    }
}

extension ByteWriter {
    mutating func write(_ opcode: ATTOpcode) { write(opcode.rawValue) }

    mutating func write(_ range: ATTHandleRange) {
        writeUInt16LE(range.start)
        writeUInt16LE(range.end)
    }

    /// A UUID field that may be 2 or 16 octets (Part F, 3.2.1): 32-bit UUIDs are sent as 128-bit.
    mutating func writeATTUUID(_ uuid: BluetoothUUID) {
        write(uuid: uuid, width: uuid.uuid16 != nil ? 2 : 16)
    }
}

/// A Starting Handle / Ending Handle pair (Part F, 3.4.3.1 and following).
public struct ATTHandleRange: Hashable, Sendable, CustomStringConvertible {
    public var start: UInt16
    public var end: UInt16

    public init(start: UInt16, end: UInt16) {
        self.start = start
        self.end = end
    }

    /// 0x0001…0xFFFF.
    public static let all = ATTHandleRange(start: 0x0001, end: 0xFFFF)

    /// Part F, 3.4.3.1: a range whose starting handle is 0x0000 or greater than its ending handle
    /// is answered with Invalid Handle.
    public var isValid: Bool { start != 0 && start <= end }

    public var description: String { "\(hex4(start))..\(hex4(end))" }
}

/// A handle and UUID pair of a Find Information Response (Part F, 3.4.3.2).
public struct ATTHandleUUID: Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID

    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// A handle and value pair of a Read By Type Response (Part F, 3.4.4.2).
public struct ATTHandleValue: Hashable, Sendable {
    public var handle: UInt16
    public var value: [UInt8]

    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// Printing helpers for descriptions: "value 72 65 71" / "value (empty)".
@usableFromInline func describeValue(_ value: [UInt8]) -> String {
    value.isEmpty ? "(empty)" : value.spacedHex
}

import BLEWire

/// Find Information Request (Core 5.4, Vol 3, Part F, 3.4.3.1).
///
///     | 0x04 (1) | Starting Handle (2) | Ending Handle (2) |
public struct ATTFindInformationRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.findInformationRequest

    public var range: ATTHandleRange

    public init(range: ATTHandleRange) { self.range = range }
    public init(start: UInt16, end: UInt16) { range = ATTHandleRange(start: start, end: end) }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        range = try reader.readHandleRange()
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(range)
    }

    public var description: String { "Find Information Request handles \(range)" }
}

/// Find Information Response (Core 5.4, Vol 3, Part F, 3.4.3.2).
///
///     | 0x05 (1) | Format (1) | Information Data (4 to ATT_MTU - 2) |
///
/// Format 0x01: each entry is Handle (2) + 16-bit UUID (2); format 0x02: Handle (2) + 128-bit
/// UUID (16). All entries of one response use the same format.
public struct ATTFindInformationResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.findInformationResponse

    public enum Format: UInt8, Sendable {
        case uuid16 = 0x01
        case uuid128 = 0x02

        /// Octets in one Information Data entry.
        public var entrySize: Int { self == .uuid16 ? 4 : 18 }
        public var uuidWidth: Int { self == .uuid16 ? 2 : 16 }

        /// The format a UUID is sent in (32-bit UUIDs go as 128-bit, Part F, 3.2.1).
        public init(for uuid: BluetoothUUID) { self = uuid.uuid16 != nil ? .uuid16 : .uuid128 }
    }

    public var format: Format
    /// At least one entry; every UUID must fit `format`.
    public var entries: [ATTHandleUUID]

    public init(format: Format, entries: [ATTHandleUUID]) {
        self.format = format
        self.entries = entries
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        let formatOffset = reader.offset
        let rawFormat = try reader.readUInt8()
        guard let format = Format(rawValue: rawFormat) else {
            throw DecodeError.invalidValue(field: "Find Information Response format", value: UInt64(rawFormat), at: formatOffset)
        }
        guard reader.remaining > 0, reader.remaining % format.entrySize == 0 else {
            throw DecodeError.lengthMismatch(field: "Find Information Response data (multiple of \(format.entrySize))",
                                             declared: reader.remaining, actual: reader.remaining - reader.remaining % format.entrySize)
        }
        var entries: [ATTHandleUUID] = []
        entries.reserveCapacity(reader.remaining / format.entrySize)
        while !reader.isAtEnd {
            let handle = try reader.readUInt16LE()
            entries.append(ATTHandleUUID(handle: handle, uuid: try reader.readUUID(width: format.uuidWidth)))
        }
        self.format = format
        self.entries = entries
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(format.rawValue)
        for entry in entries {
            writer.writeUInt16LE(entry.handle)
            writer.write(uuid: entry.uuid, width: format.uuidWidth)
        }
    }

    public var description: String {
        "Find Information Response " + entries.map { "\(hex4($0.handle)) \($0.uuid)" }.joined(separator: ", ")
    }
}

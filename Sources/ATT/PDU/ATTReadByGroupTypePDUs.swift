import BLEWire

/// Read By Group Type Request (Core 5.4, Vol 3, Part F, 3.4.4.9).
///
///     | 0x10 (1) | Starting Handle (2) | Ending Handle (2) | Attribute Group Type (2 or 16) |
public struct ATTReadByGroupTypeRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readByGroupTypeRequest

    public var range: ATTHandleRange
    public var groupType: BluetoothUUID

    public init(range: ATTHandleRange, groupType: BluetoothUUID) {
        self.range = range
        self.groupType = groupType
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        range = try reader.readHandleRange()
        groupType = try reader.readTrailingUUID(field: "Read By Group Type Request group type")
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(range)
        writer.writeATTUUID(groupType)
    }

    public var description: String { "Read By Group Type Request handles \(range) type \(groupType)" }
}

/// One Attribute Data entry of a Read By Group Type Response.
public struct ATTGroupData: Hashable, Sendable {
    public var handle: UInt16
    public var endGroupHandle: UInt16
    public var value: [UInt8]

    public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.endGroupHandle = endGroupHandle
        self.value = value
    }
}

/// Read By Group Type Response (Core 5.4, Vol 3, Part F, 3.4.4.10).
///
///     | 0x11 (1) | Length (1) | Attribute Data List (4 to ATT_MTU - 2) |
///
/// Each entry: Attribute Handle (2) | End Group Handle (2) | Attribute Value (Length - 4); all
/// entries have the same Length.
public struct ATTReadByGroupTypeResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readByGroupTypeResponse

    /// At least one entry; every value must have the same length (at most 251 octets).
    public var entries: [ATTGroupData]

    public init(entries: [ATTGroupData]) { self.entries = entries }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        let lengthOffset = reader.offset
        let length = Int(try reader.readUInt8())
        guard length >= 4 else {
            throw DecodeError.invalidValue(field: "Read By Group Type Response length", value: UInt64(length), at: lengthOffset)
        }
        guard reader.remaining > 0, reader.remaining % length == 0 else {
            throw DecodeError.lengthMismatch(field: "Read By Group Type Response data (multiple of length \(length))",
                                             declared: reader.remaining, actual: reader.remaining - reader.remaining % length)
        }
        var entries: [ATTGroupData] = []
        entries.reserveCapacity(reader.remaining / length)
        while !reader.isAtEnd {
            let handle = try reader.readUInt16LE()
            let end = try reader.readUInt16LE()
            entries.append(ATTGroupData(handle: handle, endGroupHandle: end, value: try reader.readBytes(count: length - 4)))
        }
        self.entries = entries
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(UInt8(truncatingIfNeeded: 4 + (entries.first?.value.count ?? 0)))
        for entry in entries {
            writer.writeUInt16LE(entry.handle)
            writer.writeUInt16LE(entry.endGroupHandle)
            writer.write(bytes: entry.value)
        }
    }

    public var description: String {
        "Read By Group Type Response " + entries.map {
            "\(hex4($0.handle))..\(hex4($0.endGroupHandle)) \(describeValue($0.value))"
        }.joined(separator: ", ")
    }
}

import BLEWire

/// Read By Type Request (Core 5.4, Vol 3, Part F, 3.4.4.1).
///
///     | 0x08 (1) | Starting Handle (2) | Ending Handle (2) | Attribute Type (2 or 16) |
public struct ATTReadByTypeRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readByTypeRequest

    public var range: ATTHandleRange
    public var attributeType: BluetoothUUID

    public init(range: ATTHandleRange, attributeType: BluetoothUUID) {
        self.range = range
        self.attributeType = attributeType
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        range = try reader.readHandleRange()
        attributeType = try reader.readTrailingUUID(field: "Read By Type Request attribute type")
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(range)
        writer.writeATTUUID(attributeType)
    }

    public var description: String { "Read By Type Request handles \(range) type \(attributeType)" }
}

/// Read By Type Response (Core 5.4, Vol 3, Part F, 3.4.4.2).
///
///     | 0x09 (1) | Length (1) | Attribute Data List (2 to ATT_MTU - 2) |
///
/// Each Attribute Data entry is Attribute Handle (2) | Attribute Value (Length - 2); all entries
/// have the same Length.
public struct ATTReadByTypeResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readByTypeResponse

    /// At least one entry; every value must have the same length (at most 253 octets).
    public var entries: [ATTHandleValue]

    public init(entries: [ATTHandleValue]) { self.entries = entries }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        let lengthOffset = reader.offset
        let length = Int(try reader.readUInt8())
        guard length >= 2 else {
            throw DecodeError.invalidValue(field: "Read By Type Response length", value: UInt64(length), at: lengthOffset)
        }
        guard reader.remaining > 0, reader.remaining % length == 0 else {
            throw DecodeError.lengthMismatch(field: "Read By Type Response data (multiple of length \(length))",
                                             declared: reader.remaining, actual: reader.remaining - reader.remaining % length)
        }
        var entries: [ATTHandleValue] = []
        entries.reserveCapacity(reader.remaining / length)
        while !reader.isAtEnd {
            let handle = try reader.readUInt16LE()
            entries.append(ATTHandleValue(handle: handle, value: try reader.readBytes(count: length - 2)))
        }
        self.entries = entries
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(UInt8(truncatingIfNeeded: 2 + (entries.first?.value.count ?? 0)))
        for entry in entries {
            writer.writeUInt16LE(entry.handle)
            writer.write(bytes: entry.value)
        }
    }

    public var description: String {
        "Read By Type Response " + entries.map { "\(hex4($0.handle)) \(describeValue($0.value))" }.joined(separator: ", ")
    }
}

import BLEWire

/// Find By Type Value Request (Core 5.4, Vol 3, Part F, 3.4.3.3).
///
///     | 0x06 (1) | Starting Handle (2) | Ending Handle (2) | Attribute Type (2) | Attribute Value (0 to ATT_MTU - 7) |
///
/// The Attribute Type is always a 16-bit UUID; `attributeType` must have a 16-bit alias.
public struct ATTFindByTypeValueRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.findByTypeValueRequest

    public var range: ATTHandleRange
    public var attributeType: BluetoothUUID
    public var value: [UInt8]

    public init(range: ATTHandleRange, attributeType: BluetoothUUID, value: [UInt8]) {
        self.range = range
        self.attributeType = attributeType
        self.value = value
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        range = try reader.readHandleRange()
        attributeType = try reader.readUUID(width: 2)
        value = reader.readRemaining()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(range)
        writer.write(uuid: attributeType, width: 2)
        writer.write(bytes: value)
    }

    public var description: String {
        "Find By Type Value Request handles \(range) type \(attributeType) value \(describeValue(value))"
    }
}

/// Find By Type Value Response (Core 5.4, Vol 3, Part F, 3.4.3.4).
///
///     | 0x07 (1) | Handles Information List (4 to ATT_MTU - 1) |
///
/// Each entry: Found Attribute Handle (2) | Group End Handle (2).
public struct ATTFindByTypeValueResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.findByTypeValueResponse

    /// Found Attribute Handle (`start`) and Group End Handle (`end`) pairs; at least one.
    public var handles: [ATTHandleRange]

    public init(handles: [ATTHandleRange]) { self.handles = handles }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        guard reader.remaining > 0, reader.remaining % 4 == 0 else {
            throw DecodeError.lengthMismatch(field: "Find By Type Value Response handles (multiple of 4)",
                                             declared: reader.remaining, actual: reader.remaining - reader.remaining % 4)
        }
        var handles: [ATTHandleRange] = []
        handles.reserveCapacity(reader.remaining / 4)
        while !reader.isAtEnd { handles.append(try reader.readHandleRange()) }
        self.handles = handles
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        for range in handles { writer.write(range) }
    }

    public var description: String {
        "Find By Type Value Response " + handles.map(\.description).joined(separator: ", ")
    }
}

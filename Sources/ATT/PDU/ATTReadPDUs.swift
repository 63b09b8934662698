import BLEWire

/// Read Request (Core 5.4, Vol 3, Part F, 3.4.4.3).
///
///     | 0x0A (1) | Attribute Handle (2) |
public struct ATTReadRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readRequest

    public var handle: UInt16

    public init(handle: UInt16) { self.handle = handle }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        handle = try reader.readUInt16LE()
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.writeUInt16LE(handle)
    }

    public var description: String { "Read Request handle \(hex4(handle))" }
}

/// Read Response (Core 5.4, Vol 3, Part F, 3.4.4.4).
///
///     | 0x0B (1) | Attribute Value (0 to ATT_MTU - 1) |
public struct ATTReadResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readResponse

    public var value: [UInt8]

    public init(value: [UInt8]) { self.value = value }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        value = reader.readRemaining()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(bytes: value)
    }

    public var description: String { "Read Response value \(describeValue(value))" }
}

/// Read Blob Request (Core 5.4, Vol 3, Part F, 3.4.4.5).
///
///     | 0x0C (1) | Attribute Handle (2) | Value Offset (2) |
public struct ATTReadBlobRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readBlobRequest

    public var handle: UInt16
    public var offset: UInt16

    public init(handle: UInt16, offset: UInt16) {
        self.handle = handle
        self.offset = offset
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        handle = try reader.readUInt16LE()
        offset = try reader.readUInt16LE()
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.writeUInt16LE(handle)
        writer.writeUInt16LE(offset)
    }

    public var description: String { "Read Blob Request handle \(hex4(handle)) offset \(offset)" }
}

/// Read Blob Response (Core 5.4, Vol 3, Part F, 3.4.4.6).
///
///     | 0x0D (1) | Part Attribute Value (0 to ATT_MTU - 1) |
public struct ATTReadBlobResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readBlobResponse

    public var partValue: [UInt8]

    public init(partValue: [UInt8]) { self.partValue = partValue }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        partValue = reader.readRemaining()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(bytes: partValue)
    }

    public var description: String { "Read Blob Response value \(describeValue(partValue))" }
}

/// Read Multiple Request (Core 5.4, Vol 3, Part F, 3.4.4.7).
///
///     | 0x0E (1) | Set Of Handles (4 to ATT_MTU - 1): two or more Attribute Handles (2 each) |
public struct ATTReadMultipleRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readMultipleRequest

    /// Two or more handles.
    public var handles: [UInt16]

    public init(handles: [UInt16]) { self.handles = handles }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        guard reader.remaining >= 4, reader.remaining % 2 == 0 else {
            throw DecodeError.lengthMismatch(field: "Read Multiple Request set of handles (2 or more handles)",
                                             declared: reader.remaining, actual: max(4, reader.remaining - reader.remaining % 2))
        }
        var handles: [UInt16] = []
        handles.reserveCapacity(reader.remaining / 2)
        while !reader.isAtEnd { handles.append(try reader.readUInt16LE()) }
        self.handles = handles
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        for handle in handles { writer.writeUInt16LE(handle) }
    }

    public var description: String {
        "Read Multiple Request handles " + handles.map(hex4).joined(separator: ", ")
    }
}

/// Read Multiple Response (Core 5.4, Vol 3, Part F, 3.4.4.8).
///
///     | 0x0F (1) | Set Of Values (0 to ATT_MTU - 1) |
///
/// The values are concatenated without lengths; only the client knows where each ends.
public struct ATTReadMultipleResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.readMultipleResponse

    public var values: [UInt8]

    public init(values: [UInt8]) { self.values = values }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        values = reader.readRemaining()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(bytes: values)
    }

    public var description: String { "Read Multiple Response values \(describeValue(values))" }
}

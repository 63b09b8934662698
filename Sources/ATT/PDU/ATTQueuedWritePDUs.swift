import BLEWire

/// Prepare Write Request (Core 5.4, Vol 3, Part F, 3.4.6.1).
///
///     | 0x16 (1) | Attribute Handle (2) | Value Offset (2) | Part Attribute Value (0 to ATT_MTU - 5) |
public struct ATTPrepareWriteRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.prepareWriteRequest

    public var handle: UInt16
    public var offset: UInt16
    public var partValue: [UInt8]

    public init(handle: UInt16, offset: UInt16, partValue: [UInt8]) {
        self.handle = handle
        self.offset = offset
        self.partValue = partValue
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        handle = try reader.readUInt16LE()
        offset = try reader.readUInt16LE()
        partValue = reader.readRemaining()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.writeUInt16LE(handle)
        writer.writeUInt16LE(offset)
        writer.write(bytes: partValue)
    }

    public var description: String {
        "Prepare Write Request handle \(hex4(handle)) offset \(offset) value \(describeValue(partValue))"
    }
}

/// Prepare Write Response (Core 5.4, Vol 3, Part F, 3.4.6.2): echoes the request so the client can
/// check what was queued.
///
///     | 0x17 (1) | Attribute Handle (2) | Value Offset (2) | Part Attribute Value (0 to ATT_MTU - 5) |
public struct ATTPrepareWriteResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.prepareWriteResponse

    public var handle: UInt16
    public var offset: UInt16
    public var partValue: [UInt8]

    public init(handle: UInt16, offset: UInt16, partValue: [UInt8]) {
        self.handle = handle
        self.offset = offset
        self.partValue = partValue
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        handle = try reader.readUInt16LE()
        offset = try reader.readUInt16LE()
        partValue = reader.readRemaining()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.writeUInt16LE(handle)
        writer.writeUInt16LE(offset)
        writer.write(bytes: partValue)
    }

    public var description: String {
        "Prepare Write Response handle \(hex4(handle)) offset \(offset) value \(describeValue(partValue))"
    }
}

/// Execute Write Request (Core 5.4, Vol 3, Part F, 3.4.6.3).
///
///     | 0x18 (1) | Flags (1): 0x00 cancel all prepared writes, 0x01 immediately write all |
///
/// Flags 0x02–0xFF are reserved and do not decode (a server answers Invalid PDU).
public struct ATTExecuteWriteRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.executeWriteRequest

    public enum Flags: UInt8, Sendable {
        case cancel = 0x00
        case write = 0x01
    }

    public var flags: Flags

    public init(flags: Flags) { self.flags = flags }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        let at = reader.offset
        let raw = try reader.readUInt8()
        guard let flags = Flags(rawValue: raw) else {
            throw DecodeError.invalidValue(field: "Execute Write Request flags", value: UInt64(raw), at: at)
        }
        self.flags = flags
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(flags.rawValue)
    }

    public var description: String {
        "Execute Write Request " + (flags == .write ? "write all" : "cancel all")
    }
}

/// Execute Write Response (Core 5.4, Vol 3, Part F, 3.4.6.4).
///
///     | 0x19 (1) |
public struct ATTExecuteWriteResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.executeWriteResponse

    public init() {}

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) { writer.write(Self.opcode) }

    public var description: String { "Execute Write Response" }
}

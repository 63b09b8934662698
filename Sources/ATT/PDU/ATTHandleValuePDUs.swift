import BLEWire

/// Handle Value Notification (Core 5.4, Vol 3, Part F, 3.4.7.1).
///
///     | 0x1B (1) | Attribute Handle (2) | Attribute Value (0 to ATT_MTU - 3) |
public struct ATTHandleValueNotification: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.handleValueNotification

    public var handle: UInt16
    public var value: [UInt8]

    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        handle = try reader.readUInt16LE()
        value = reader.readRemaining()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.writeUInt16LE(handle)
        writer.write(bytes: value)
    }

    public var description: String {
        "Handle Value Notification handle \(hex4(handle)) value \(describeValue(value))"
    }
}

/// Handle Value Indication (Core 5.4, Vol 3, Part F, 3.4.7.2).
///
///     | 0x1D (1) | Attribute Handle (2) | Attribute Value (0 to ATT_MTU - 3) |
public struct ATTHandleValueIndication: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.handleValueIndication

    public var handle: UInt16
    public var value: [UInt8]

    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        handle = try reader.readUInt16LE()
        value = reader.readRemaining()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.writeUInt16LE(handle)
        writer.write(bytes: value)
    }

    public var description: String {
        "Handle Value Indication handle \(hex4(handle)) value \(describeValue(value))"
    }
}

/// Handle Value Confirmation (Core 5.4, Vol 3, Part F, 3.4.7.3).
///
///     | 0x1E (1) |
public struct ATTHandleValueConfirmation: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.handleValueConfirmation

    public init() {}

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) { writer.write(Self.opcode) }

    public var description: String { "Handle Value Confirmation" }
}

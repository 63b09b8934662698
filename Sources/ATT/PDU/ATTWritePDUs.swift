import BLEWire

/// Write Request (Core 5.4, Vol 3, Part F, 3.4.5.1).
///
///     | 0x12 (1) | Attribute Handle (2) | Attribute Value (0 to ATT_MTU - 3) |
public struct ATTWriteRequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.writeRequest

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

    public var description: String { "Write Request handle \(hex4(handle)) value \(describeValue(value))" }
}

/// Write Response (Core 5.4, Vol 3, Part F, 3.4.5.2).
///
///     | 0x13 (1) |
public struct ATTWriteResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.writeResponse

    public init() {}

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) { writer.write(Self.opcode) }

    public var description: String { "Write Response" }
}

/// Write Command (Core 5.4, Vol 3, Part F, 3.4.5.3). Never answered, not even with an error.
///
///     | 0x52 (1) | Attribute Handle (2) | Attribute Value (0 to ATT_MTU - 3) |
public struct ATTWriteCommand: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.writeCommand

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

    public var description: String { "Write Command handle \(hex4(handle)) value \(describeValue(value))" }
}

/// Signed Write Command (Core 5.4, Vol 3, Part F, 3.4.5.4). BLELab decodes it but does not verify
/// signatures, so its server ignores it (a server may ignore any command it does not support).
///
///     | 0xD2 (1) | Attribute Handle (2) | Attribute Value (0 to ATT_MTU - 15) | Authentication Signature (12) |
public struct ATTSignedWriteCommand: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.signedWriteCommand
    public static let signatureLength = 12

    public var handle: UInt16
    public var value: [UInt8]
    /// Exactly 12 octets (Vol 3, Part H, 2.4.5).
    public var signature: [UInt8]

    public init(handle: UInt16, value: [UInt8], signature: [UInt8]) {
        self.handle = handle
        self.value = value
        self.signature = signature
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        handle = try reader.readUInt16LE()
        guard reader.remaining >= Self.signatureLength else {
            throw DecodeError.truncated(needed: Self.signatureLength, available: reader.remaining, at: reader.offset)
        }
        value = try reader.readBytes(count: reader.remaining - Self.signatureLength)
        signature = reader.readRemaining()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.writeUInt16LE(handle)
        writer.write(bytes: value)
        writer.write(bytes: signature)
    }

    public var description: String {
        "Signed Write Command handle \(hex4(handle)) value \(describeValue(value)) signature \(signature.spacedHex)"
    }
}

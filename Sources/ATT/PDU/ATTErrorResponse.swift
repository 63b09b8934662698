import BLEWire

/// Error Response (Core 5.4, Vol 3, Part F, 3.4.1.1).
///
///     | 0x01 (1) | Request Opcode In Error (1) | Attribute Handle In Error (2) | Error Code (1) |
///
/// A server builds these only through `ATTResponder.fail(_:handle:)` / the bearer, never by hand.
public struct ATTErrorResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.errorResponse

    /// The opcode of the request that generated this response.
    public var requestOpcode: ATTOpcode
    /// The handle of the attribute that caused the error, or 0x0000 when none applies.
    public var handle: UInt16
    public var error: ATTErrorCode

    public init(requestOpcode: ATTOpcode, handle: UInt16, error: ATTErrorCode) {
        self.requestOpcode = requestOpcode
        self.handle = handle
        self.error = error
    }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        requestOpcode = ATTOpcode(try reader.readUInt8())
        handle = try reader.readUInt16LE()
        error = ATTErrorCode(try reader.readUInt8())
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.write(requestOpcode.rawValue)
        writer.writeUInt16LE(handle)
        writer.write(error.rawValue)
    }

    public var description: String {
        "Error Response to \(requestOpcode.name) handle \(hex4(handle)): \(error)"
    }
}

import BLEWire

/// Exchange MTU Request (Core 5.4, Vol 3, Part F, 3.4.2.1).
///
///     | 0x02 (1) | Client Rx MTU (2) |
public struct ATTExchangeMTURequest: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.exchangeMTURequest

    /// The largest ATT PDU the client can receive.
    public var clientRxMTU: UInt16

    public init(clientRxMTU: UInt16) { self.clientRxMTU = clientRxMTU }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        clientRxMTU = try reader.readUInt16LE()
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.writeUInt16LE(clientRxMTU)
    }

    public var description: String { "Exchange MTU Request client rx MTU \(clientRxMTU)" }
}

/// Exchange MTU Response (Core 5.4, Vol 3, Part F, 3.4.2.2).
///
///     | 0x03 (1) | Server Rx MTU (2) |
public struct ATTExchangeMTUResponse: ATTPDUCodable, Hashable, Sendable {
    public static let opcode = ATTOpcode.exchangeMTUResponse

    /// The largest ATT PDU the server can receive.
    public var serverRxMTU: UInt16

    public init(serverRxMTU: UInt16) { self.serverRxMTU = serverRxMTU }

    public init(from reader: inout ByteReader) throws {
        try reader.readATTOpcode(Self.opcode)
        serverRxMTU = try reader.readUInt16LE()
        try reader.expectEnd()
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.opcode)
        writer.writeUInt16LE(serverRxMTU)
    }

    public var description: String { "Exchange MTU Response server rx MTU \(serverRxMTU)" }
}

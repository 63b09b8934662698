import BLEWire

/// An HCI ACL data packet (Core 5.4, Vol 4, Part E, 5.4.2).
///
///     | Handle (12 bits) | PB_Flag (2 bits) | BC_Flag (2 bits) | Data_Total_Length (2) | Data |
public struct HCIACLData: Hashable, Sendable {
    public var handle: UInt16
    public var boundary: PacketBoundary
    public var broadcast: UInt8
    public var data: [UInt8]

    public init(handle: UInt16, boundary: PacketBoundary, broadcast: UInt8 = 0, data: [UInt8]) {
        self.handle = handle & 0x0FFF
        self.boundary = boundary
        self.broadcast = broadcast & 0x3
        self.data = data
    }

    /// The packet without the H4 indicator.
    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 4 + data.count)
        w.writeUInt16LE(handle | UInt16(boundary.rawValue) << 12 | UInt16(broadcast) << 14)
        w.writeUInt16LE(UInt16(truncatingIfNeeded: data.count))
        w.write(bytes: data)
        return w.bytes
    }

    /// Writes the H4 frame (indicator 0x02 first) straight into `w`.
    public func encodeH4(into w: inout ByteWriter) {
        w.write(H4PacketType.acl.rawValue)
        w.writeUInt16LE(handle | UInt16(boundary.rawValue) << 12 | UInt16(broadcast) << 14)
        w.writeUInt16LE(UInt16(truncatingIfNeeded: data.count))
        w.write(bytes: data)
    }

    public init(decoding bytes: [UInt8], from start: Int = 0) throws {
        var r = ByteReader(bytes, from: start)
        let header = try r.readUInt16LE()
        let length = Int(try r.readUInt16LE())
        guard length == r.remaining else {
            throw DecodeError.lengthMismatch(field: "ACL Data_Total_Length", declared: length, actual: r.remaining)
        }
        handle = header & 0x0FFF
        boundary = PacketBoundary(rawValue: UInt8(header >> 12 & 0x3))
        broadcast = UInt8(header >> 14)
        data = r.readRemaining()
    }
}

/// PB_Flag (5.4.2).
public struct PacketBoundary: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x3 }
    /// Host to controller: first fragment, not automatically flushable (the only start flag
    /// allowed on LE from the host).
    public static let firstNonFlushable = PacketBoundary(rawValue: 0b00)
    /// Continuing fragment of a higher-layer message.
    public static let continuing = PacketBoundary(rawValue: 0b01)
    /// Controller to host: first fragment (automatically flushable).
    public static let firstFlushable = PacketBoundary(rawValue: 0b10)
    /// A complete L2CAP PDU (BR/EDR only; not used on LE).
    public static let complete = PacketBoundary(rawValue: 0b11)

    public var isStart: Bool { rawValue == 0b00 || rawValue == 0b10 }

    public var description: String {
        switch rawValue {
        case 0b00: return "first (non-flushable)"
        case 0b01: return "continuing"
        case 0b10: return "first"
        default: return "complete"
        }
    }
}

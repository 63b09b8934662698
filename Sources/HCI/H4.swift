import BLEWire

/// The packet indicator that precedes each HCI packet on a UART (H4) transport
/// (Core 5.4, Vol 4, Part A, 2). btsnoop datalink 1002 records carry it too.
public struct H4PacketType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let command = H4PacketType(rawValue: 0x01)
    public static let acl = H4PacketType(rawValue: 0x02)
    public static let sco = H4PacketType(rawValue: 0x03)
    public static let event = H4PacketType(rawValue: 0x04)
    public static let iso = H4PacketType(rawValue: 0x05)

    /// Octets of the header before the payload, and where its length field sits.
    var header: (size: Int, lengthOffset: Int, lengthSize: Int)? {
        switch rawValue {
        case 0x01: return (3, 2, 1)   // Opcode (2), Parameter_Total_Length (1)
        case 0x02: return (4, 2, 2)   // Handle+flags (2), Data_Total_Length (2)
        case 0x03: return (3, 2, 1)   // Handle+flags (2), Data_Total_Length (1)
        case 0x04: return (2, 1, 1)   // Event_Code (1), Parameter_Total_Length (1)
        case 0x05: return (4, 2, 2)   // Handle+flags (2), ISO_Data_Load_Length (14 bits)
        default: return nil
        }
    }

    public var description: String {
        switch rawValue {
        case 0x01: return "command"
        case 0x02: return "ACL"
        case 0x03: return "SCO"
        case 0x04: return "event"
        case 0x05: return "ISO"
        default: return "type 0x\(hex2(rawValue))"
        }
    }
}

/// Splits an H4 byte stream into whole packets, however the stream was chopped or joined: one
/// byte at a time, several packets in one read, a packet split at any octet. Each emitted frame
/// includes its indicator octet. An unknown indicator is a `DecodeError` after which the stream
/// cannot be trusted; the framer stays failed until `reset()`.
public struct H4Framer {
    private var buffer: [UInt8] = []
    /// Offset of `buffer[0]` in the stream since the last `reset()`, for error reports.
    private var streamOffset = 0
    public private(set) var failure: DecodeError?

    public init() {}

    /// Octets held while waiting for the rest of a packet.
    public var pendingCount: Int { buffer.count }

    /// Drops any pending octets and the failure; what is fed next is a new stream (offsets restart at 0).
    public mutating func reset() {
        buffer.removeAll()
        streamOffset = 0
        failure = nil
    }

    /// Feeds `bytes` and calls `emit` once per complete packet, in order. If `emit` throws, the
    /// error propagates: the frames handed over so far (the throwing one included) are consumed,
    /// the rest stays pending for the next call.
    public mutating func feed(_ bytes: [UInt8], emit: ([UInt8]) throws -> Void) throws {
        if let failure { throw failure }
        // Fast path: nothing buffered and `bytes` is exactly one whole packet (the in-process case).
        if buffer.isEmpty, let size = Self.frameSize(bytes, at: 0), size == bytes.count {
            streamOffset += size
            try emit(bytes)
            return
        }
        buffer.append(contentsOf: bytes)
        var start = 0
        // Runs on every exit, thrown ones included, so no frame is ever delivered twice.
        defer {
            if start > 0 {
                buffer.removeFirst(start)
                streamOffset += start
            }
        }
        while start < buffer.count {
            guard let type = H4PacketType(rawValue: buffer[start]).header else {
                let error = DecodeError.unknownType(field: "H4 packet indicator", value: UInt64(buffer[start]),
                                                    at: streamOffset + start)
                failure = error
                throw error
            }
            guard let size = Self.frameSize(buffer, at: start) else { break }
            _ = type
            let frame = Array(buffer[start..<start + size])
            start += size
            try emit(frame)
        }
    }

    /// Size of the frame starting at `start` if all of it is present, else nil.
    static func frameSize(_ b: [UInt8], at start: Int) -> Int? {
        guard start < b.count, let h = H4PacketType(rawValue: b[start]).header else { return nil }
        let headerEnd = start + 1 + h.size
        guard headerEnd <= b.count else { return nil }
        let lo = start + 1 + h.lengthOffset
        var length = Int(b[lo])
        if h.lengthSize == 2 { length |= Int(b[lo + 1]) << 8 }
        if b[start] == H4PacketType.iso.rawValue { length &= 0x3FFF }
        let size = 1 + h.size + length
        return start + size <= b.count ? size : nil
    }
}

/// A decoded HCI packet of any kind.
public enum HCIPacket: Hashable, Sendable {
    case command(HCICommand)
    case acl(HCIACLData)
    case event(HCIEvent)
    /// SCO and ISO are not used by BLELab; kept verbatim (without the indicator).
    case other(type: H4PacketType, bytes: [UInt8])

    /// Decodes an H4 frame (indicator first).
    public init(h4 frame: [UInt8]) throws {
        guard let indicator = frame.first else { throw DecodeError.truncated(needed: 1, available: 0, at: 0) }
        switch indicator {
        case H4PacketType.command.rawValue: self = .command(try HCICommand(decoding: frame, from: 1))
        case H4PacketType.acl.rawValue: self = .acl(try HCIACLData(decoding: frame, from: 1))
        case H4PacketType.event.rawValue: self = .event(try HCIEvent(decoding: frame, from: 1))
        case H4PacketType.sco.rawValue, H4PacketType.iso.rawValue:
            self = .other(type: H4PacketType(rawValue: indicator), bytes: Array(frame.dropFirst()))
        default:
            throw DecodeError.unknownType(field: "H4 packet indicator", value: UInt64(indicator), at: 0)
        }
    }

    public var type: H4PacketType {
        switch self {
        case .command: return .command
        case .acl: return .acl
        case .event: return .event
        case let .other(type, _): return type
        }
    }

    /// The H4 frame: indicator then packet.
    public var h4: [UInt8] {
        switch self {
        case let .command(c): return [H4PacketType.command.rawValue] + c.encoded
        case let .acl(a):
            var w = ByteWriter(capacity: 5 + a.data.count)
            a.encodeH4(into: &w)
            return w.bytes
        case let .event(e): return [H4PacketType.event.rawValue] + e.encoded
        case let .other(type, bytes): return [type.rawValue] + bytes
        }
    }
}

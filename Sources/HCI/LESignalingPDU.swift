import BLEWire

/// A command on the LE signaling channel (Core 5.4, Vol 3, Part A, 4):
///
///     | Code (1) | Identifier (1) | Length (2) | Data (Length) |
///
/// On LE-U each C-frame carries exactly one command (4).
public enum LESignalingPDU: Hashable, Sendable {
    /// 4.1: Reason (2), Data (0–4).
    case commandReject(identifier: UInt8, reason: CommandRejectReason, data: [UInt8])
    /// 4.20: Interval_Min (2), Interval_Max (2), Latency (2), Timeout (2); sent by the peripheral.
    case connectionParameterUpdateRequest(identifier: UInt8, ConnectionParameterUpdate)
    /// 4.21: Result (2): 0x0000 accepted, 0x0001 rejected.
    case connectionParameterUpdateResponse(identifier: UInt8, accepted: Bool)
    /// Any other code, kept verbatim; answered with Command Reject "not understood".
    case other(code: UInt8, identifier: UInt8, data: [UInt8])

    /// The codes of Table 4.2 that are valid on LE-U (4).
    public enum Code {
        public static let commandReject: UInt8 = 0x01
        public static let disconnectionRequest: UInt8 = 0x06
        public static let disconnectionResponse: UInt8 = 0x07
        public static let connectionParameterUpdateRequest: UInt8 = 0x12
        public static let connectionParameterUpdateResponse: UInt8 = 0x13
        public static let leCreditBasedConnectionRequest: UInt8 = 0x14
        public static let leCreditBasedConnectionResponse: UInt8 = 0x15
        public static let flowControlCreditIndication: UInt8 = 0x16
        public static let creditBasedConnectionRequest: UInt8 = 0x17
        public static let creditBasedConnectionResponse: UInt8 = 0x18
        public static let creditBasedReconfigureRequest: UInt8 = 0x19
        public static let creditBasedReconfigureResponse: UInt8 = 0x1A
    }

    public var code: UInt8 {
        switch self {
        case .commandReject: return Code.commandReject
        case .connectionParameterUpdateRequest: return Code.connectionParameterUpdateRequest
        case .connectionParameterUpdateResponse: return Code.connectionParameterUpdateResponse
        case let .other(code, _, _): return code
        }
    }

    public var identifier: UInt8 {
        switch self {
        case let .commandReject(id, _, _), let .connectionParameterUpdateRequest(id, _),
             let .connectionParameterUpdateResponse(id, _), let .other(_, id, _):
            return id
        }
    }

    public var encoded: [UInt8] {
        var data = ByteWriter(capacity: 8)
        switch self {
        case let .commandReject(_, reason, extra):
            data.writeUInt16LE(reason.rawValue)
            data.write(bytes: extra)
        case let .connectionParameterUpdateRequest(_, p):
            data.writeUInt16LE(p.intervalMin)
            data.writeUInt16LE(p.intervalMax)
            data.writeUInt16LE(p.latency)
            data.writeUInt16LE(p.timeout)
        case let .connectionParameterUpdateResponse(_, accepted):
            data.writeUInt16LE(accepted ? 0x0000 : 0x0001)
        case let .other(_, _, bytes):
            data.write(bytes: bytes)
        }
        var w = ByteWriter(capacity: 4 + data.count)
        w.write(code)
        w.write(identifier)
        w.writeUInt16LE(UInt16(data.count))
        w.write(bytes: data.bytes)
        return w.bytes
    }

    /// Reads the next command of a C-frame's payload, still encoded (Code, Identifier, Length,
    /// Data): nil once fewer than the 4 header octets remain. On LE-U a frame carries exactly one
    /// command (4), but a capture may hold a frame from a stack that packs several, and the capture
    /// importer reads them in turn, each then decoded with `init(decoding:)`. Throws
    /// `DecodeError.truncated` when the Length runs past the frame, leaving `reader` where it was.
    public static func nextCommand(from reader: inout ByteReader) throws -> [UInt8]? {
        guard reader.remaining >= 4 else { return nil }
        var header = reader
        _ = try header.readUInt16LE()   // Code, Identifier
        let length = Int(try header.readUInt16LE())
        guard length <= header.remaining else {
            throw DecodeError.truncated(needed: length, available: header.remaining, at: header.offset)
        }
        return try reader.readBytes(count: 4 + length)
    }

    /// Decodes one command from a C-frame's payload. Throws when the length field disagrees with
    /// the frame or a known command's data has the wrong size.
    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        let code = try r.readUInt8()
        let identifier = try r.readUInt8()
        let length = Int(try r.readUInt16LE())
        guard length == r.remaining else {
            throw DecodeError.lengthMismatch(field: "signaling command Length", declared: length, actual: r.remaining)
        }
        func expect(_ n: Int, _ name: String) throws {
            guard length == n else { throw DecodeError.lengthMismatch(field: name, declared: length, actual: n) }
        }
        switch code {
        case Code.commandReject:
            guard length >= 2 else { throw DecodeError.truncated(needed: 2, available: length, at: 4) }
            let reason = CommandRejectReason(rawValue: try r.readUInt16LE())
            self = .commandReject(identifier: identifier, reason: reason, data: r.readRemaining())
        case Code.connectionParameterUpdateRequest:
            try expect(8, "Connection Parameter Update Request")
            self = .connectionParameterUpdateRequest(identifier: identifier, ConnectionParameterUpdate(
                intervalMin: try r.readUInt16LE(), intervalMax: try r.readUInt16LE(),
                latency: try r.readUInt16LE(), timeout: try r.readUInt16LE()))
        case Code.connectionParameterUpdateResponse:
            try expect(2, "Connection Parameter Update Response")
            let at = r.offset
            let result = try r.readUInt16LE()
            guard result <= 1 else { throw DecodeError.invalidValue(field: "Result", value: UInt64(result), at: at) }
            self = .connectionParameterUpdateResponse(identifier: identifier, accepted: result == 0)
        default:
            self = .other(code: code, identifier: identifier, data: r.readRemaining())
        }
    }
}

/// Connection parameters as L2CAP carries them: intervals in 1.25 ms units, timeout in 10 ms.
public struct ConnectionParameterUpdate: Hashable, Sendable {
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var latency: UInt16
    public var timeout: UInt16

    public init(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.latency = latency
        self.timeout = timeout
    }
}

/// Command Reject reasons (4.1).
public struct CommandRejectReason: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let commandNotUnderstood = CommandRejectReason(rawValue: 0x0000)
    public static let signalingMTUExceeded = CommandRejectReason(rawValue: 0x0001)
    public static let invalidCID = CommandRejectReason(rawValue: 0x0002)
}

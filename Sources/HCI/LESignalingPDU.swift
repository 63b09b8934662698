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
    /// 4.6: Destination CID (2) — the channel at the receiver —, Source CID (2) — at the sender.
    case disconnectionRequest(identifier: UInt8, destinationCID: UInt16, sourceCID: UInt16)
    /// 4.7: Destination CID (2), Source CID (2): the request's two values, echoed.
    case disconnectionResponse(identifier: UInt8, destinationCID: UInt16, sourceCID: UInt16)
    /// 4.22: SPSM (2), Source CID (2), MTU (2), MPS (2), Initial Credits (2).
    case leCreditBasedConnectionRequest(identifier: UInt8, LECreditBasedConnectionRequest)
    /// 4.23: Destination CID (2), MTU (2), MPS (2), Initial Credits (2), Result (2).
    case leCreditBasedConnectionResponse(identifier: UInt8, LECreditBasedConnectionResponse)
    /// 4.24: CID (2) — the sender's receiving end —, Credits (2).
    case flowControlCreditIndication(identifier: UInt8, cid: UInt16, credits: UInt16)
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
        case .disconnectionRequest: return Code.disconnectionRequest
        case .disconnectionResponse: return Code.disconnectionResponse
        case .leCreditBasedConnectionRequest: return Code.leCreditBasedConnectionRequest
        case .leCreditBasedConnectionResponse: return Code.leCreditBasedConnectionResponse
        case .flowControlCreditIndication: return Code.flowControlCreditIndication
        case let .other(code, _, _): return code
        }
    }

    public var identifier: UInt8 {
        switch self {
        case let .commandReject(id, _, _), let .connectionParameterUpdateRequest(id, _),
             let .connectionParameterUpdateResponse(id, _), let .other(_, id, _),
             let .disconnectionRequest(id, _, _), let .disconnectionResponse(id, _, _),
             let .leCreditBasedConnectionRequest(id, _), let .leCreditBasedConnectionResponse(id, _),
             let .flowControlCreditIndication(id, _, _):
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
        case let .disconnectionRequest(_, destination, source), let .disconnectionResponse(_, destination, source):
            data.writeUInt16LE(destination)
            data.writeUInt16LE(source)
        case let .leCreditBasedConnectionRequest(_, r):
            data.writeUInt16LE(r.spsm)
            data.writeUInt16LE(r.sourceCID)
            data.writeUInt16LE(r.mtu)
            data.writeUInt16LE(r.mps)
            data.writeUInt16LE(r.initialCredits)
        case let .leCreditBasedConnectionResponse(_, r):
            data.writeUInt16LE(r.destinationCID)
            data.writeUInt16LE(r.mtu)
            data.writeUInt16LE(r.mps)
            data.writeUInt16LE(r.initialCredits)
            data.writeUInt16LE(r.result.rawValue)
        case let .flowControlCreditIndication(_, cid, credits):
            data.writeUInt16LE(cid)
            data.writeUInt16LE(credits)
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
        // `actual` is the size the command's data has by its code (the frame's own Length is
        // checked just above).
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
        case Code.disconnectionRequest:
            try expect(4, "Disconnection Request")
            self = .disconnectionRequest(identifier: identifier, destinationCID: try r.readUInt16LE(), sourceCID: try r.readUInt16LE())
        case Code.disconnectionResponse:
            try expect(4, "Disconnection Response")
            self = .disconnectionResponse(identifier: identifier, destinationCID: try r.readUInt16LE(), sourceCID: try r.readUInt16LE())
        case Code.leCreditBasedConnectionRequest:
            try expect(10, "LE Credit Based Connection Request")
            self = .leCreditBasedConnectionRequest(identifier: identifier, LECreditBasedConnectionRequest(
                spsm: try r.readUInt16LE(), sourceCID: try r.readUInt16LE(), mtu: try r.readUInt16LE(),
                mps: try r.readUInt16LE(), initialCredits: try r.readUInt16LE()))
        case Code.leCreditBasedConnectionResponse:
            try expect(10, "LE Credit Based Connection Response")
            self = .leCreditBasedConnectionResponse(identifier: identifier, LECreditBasedConnectionResponse(
                destinationCID: try r.readUInt16LE(), mtu: try r.readUInt16LE(), mps: try r.readUInt16LE(),
                initialCredits: try r.readUInt16LE(), result: LECreditBasedConnectionResult(rawValue: try r.readUInt16LE())))
        case Code.flowControlCreditIndication:
            try expect(4, "LE Flow Control Credit")
            self = .flowControlCreditIndication(identifier: identifier, cid: try r.readUInt16LE(), credits: try r.readUInt16LE())
        default:
            self = .other(code: code, identifier: identifier, data: r.readRemaining())
        }
    }
}

/// LE Credit Based Connection Request (Core 5.4, Vol 3, Part A, 4.22), code 0x14:
///
///     | SPSM (2) | Source CID (2) | MTU (2) | MPS (2) | Initial Credits (2) |
///
/// SPSM: 0x0001–0x007F fixed (SIG-assigned), 0x0080–0x00FF dynamic, the rest reserved. Source CID:
/// the sender's end, a dynamic CID 0x0040–0x007F. MTU 23–65535 (the largest SDU the sender
/// takes), MPS 23–65533 (the largest K-frame payload it takes), Initial Credits 0–65535 (K-frames
/// the receiver may send at once). The codec keeps any value; the host checks the ranges.
public struct LECreditBasedConnectionRequest: Hashable, Sendable {
    public var spsm: UInt16
    public var sourceCID: UInt16
    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16

    public init(spsm: UInt16, sourceCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16) {
        self.spsm = spsm
        self.sourceCID = sourceCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
    }
}

/// LE Credit Based Connection Response (Core 5.4, Vol 3, Part A, 4.23), code 0x15:
///
///     | Destination CID (2) | MTU (2) | MPS (2) | Initial Credits (2) | Result (2) |
///
/// Destination CID is the responder's end of the channel; it, MTU, MPS and Initial Credits mean
/// something only when Result is 0x0000 (they are 0 otherwise).
public struct LECreditBasedConnectionResponse: Hashable, Sendable {
    public var destinationCID: UInt16
    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16
    public var result: LECreditBasedConnectionResult

    public init(destinationCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: LECreditBasedConnectionResult) {
        self.destinationCID = destinationCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.result = result
    }

    /// A refusal: every field but Result is 0 (4.23).
    public static func refused(_ result: LECreditBasedConnectionResult) -> Self {
        Self(destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: result)
    }
}

/// The Result of an LE Credit Based Connection Response (Core 5.4, Vol 3, Part A, 4.23,
/// Table 4.19). Open: reserved values survive a round trip.
public struct LECreditBasedConnectionResult: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let success = Self(rawValue: 0x0000)
    public static let spsmNotSupported = Self(rawValue: 0x0002)
    public static let noResources = Self(rawValue: 0x0004)
    public static let insufficientAuthentication = Self(rawValue: 0x0005)
    public static let insufficientAuthorization = Self(rawValue: 0x0006)
    public static let encryptionKeySizeTooShort = Self(rawValue: 0x0007)
    public static let insufficientEncryption = Self(rawValue: 0x0008)
    public static let invalidSourceCID = Self(rawValue: 0x0009)
    public static let sourceCIDAlreadyAllocated = Self(rawValue: 0x000A)
    public static let unacceptableParameters = Self(rawValue: 0x000B)

    public var description: String {
        let name: String
        switch self {
        case .success: name = "Connection successful"
        case .spsmNotSupported: name = "Connection refused – SPSM not supported"
        case .noResources: name = "Connection refused – no resources available"
        case .insufficientAuthentication: name = "Connection refused – insufficient authentication"
        case .insufficientAuthorization: name = "Connection refused – insufficient authorization"
        case .encryptionKeySizeTooShort: name = "Connection refused – encryption key size too short"
        case .insufficientEncryption: name = "Connection refused – insufficient encryption"
        case .invalidSourceCID: name = "Connection refused – invalid Source CID"
        case .sourceCIDAlreadyAllocated: name = "Connection refused – Source CID already allocated"
        case .unacceptableParameters: name = "Connection refused – unacceptable parameters"
        default: name = "reserved"
        }
        let digits = String(rawValue, radix: 16)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits + " (" + name + ")"
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

/// An LL control PDU (Core 5.4, Vol 6, Part B, 2.4.2): Opcode (1 octet) and CtrData. The ones the
/// sim sends and the importer reads have their fields; every other opcode keeps its bytes.
public enum LLControlPDU: Hashable, Sendable, CustomStringConvertible {
    /// 2.4.2.1 LL_CONNECTION_UPDATE_IND: WinSize (1), WinOffset (2), Interval (2), Latency (2),
    /// Timeout (2), Instant (2).
    case connectionUpdate(windowSize: UInt8, windowOffset: UInt16, interval: UInt16, latency: UInt16, timeout: UInt16, instant: UInt16)
    /// 2.4.2.3 LL_TERMINATE_IND: ErrorCode (1).
    case terminate(errorCode: UInt8)
    /// 2.4.2.4 LL_ENC_REQ: Rand (8), EDIV (2), SKDm (8), IVm (4), each least significant octet
    /// first as on the air.
    case encryptionRequest(rand: [UInt8], ediv: UInt16, skd: [UInt8], iv: [UInt8])
    /// 2.4.2.5 LL_ENC_RSP: SKDs (8), IVs (4).
    case encryptionResponse(skd: [UInt8], iv: [UInt8])
    /// 2.4.2.6 LL_START_ENC_REQ and 2.4.2.7 LL_START_ENC_RSP: no fields.
    case startEncryptionRequest
    case startEncryptionResponse
    /// 2.4.2.11 LL_PAUSE_ENC_REQ and 2.4.2.12 LL_PAUSE_ENC_RSP (a key refresh): no fields.
    case pauseEncryptionRequest
    case pauseEncryptionResponse
    /// 2.4.2.13 LL_VERSION_IND: VersNr (1), CompId (2), SubVersNr (2).
    case version(versionNumber: UInt8, companyID: UInt16, subversion: UInt16)
    /// 2.4.2.16 LL_CONNECTION_PARAM_REQ (and 2.4.2.17 _RSP, `response`): Interval_Min (2),
    /// Interval_Max (2), Latency (2), Timeout (2), then PreferredPeriodicity, ReferenceConnEventCount
    /// and Offset0–5 (15 octets), kept as they came.
    case connectionParameters(response: Bool, intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16, rest: [UInt8])
    /// 2.4.2.18 LL_REJECT_EXT_IND: RejectOpcode (1), ErrorCode (1).
    case rejectExtended(rejectOpcode: UInt8, errorCode: UInt8)
    /// 2.4.2.21/22 LL_LENGTH_REQ / LL_LENGTH_RSP: MaxRxOctets, MaxRxTime, MaxTxOctets, MaxTxTime (2 each).
    case length(response: Bool, maxRxOctets: UInt16, maxRxTime: UInt16, maxTxOctets: UInt16, maxTxTime: UInt16)
    case other(opcode: UInt8, data: [UInt8])

    public init(decoding payload: [UInt8]) throws {
        guard let opcode = payload.first else { throw LinkLayerError.truncated(what: "an LL control PDU", needed: 1, available: 0) }
        let d = Array(payload.dropFirst())
        func need(_ n: Int, _ name: String) throws {
            guard d.count >= n else { throw LinkLayerError.truncated(what: name, needed: n + 1, available: payload.count) }
        }
        func u16(_ i: Int) -> UInt16 { UInt16(d[i]) | UInt16(d[i + 1]) << 8 }
        switch opcode {
        case 0x00:
            try need(11, "LL_CONNECTION_UPDATE_IND")
            self = .connectionUpdate(windowSize: d[0], windowOffset: u16(1), interval: u16(3), latency: u16(5), timeout: u16(7), instant: u16(9))
        case 0x02:
            try need(1, "LL_TERMINATE_IND")
            self = .terminate(errorCode: d[0])
        case 0x03:
            try need(22, "LL_ENC_REQ")
            self = .encryptionRequest(rand: Array(d[0..<8]), ediv: u16(8), skd: Array(d[10..<18]), iv: Array(d[18..<22]))
        case 0x04:
            try need(12, "LL_ENC_RSP")
            self = .encryptionResponse(skd: Array(d[0..<8]), iv: Array(d[8..<12]))
        case 0x05: self = .startEncryptionRequest
        case 0x06: self = .startEncryptionResponse
        case 0x0A: self = .pauseEncryptionRequest
        case 0x0B: self = .pauseEncryptionResponse
        case 0x0C:
            try need(5, "LL_VERSION_IND")
            self = .version(versionNumber: d[0], companyID: u16(1), subversion: u16(3))
        case 0x0F, 0x10:
            try need(8, opcode == 0x0F ? "LL_CONNECTION_PARAM_REQ" : "LL_CONNECTION_PARAM_RSP")
            self = .connectionParameters(response: opcode == 0x10, intervalMin: u16(0), intervalMax: u16(2), latency: u16(4), timeout: u16(6),
                                         rest: Array(d[8...]))
        case 0x11:
            try need(2, "LL_REJECT_EXT_IND")
            self = .rejectExtended(rejectOpcode: d[0], errorCode: d[1])
        case 0x14, 0x15:
            try need(8, opcode == 0x14 ? "LL_LENGTH_REQ" : "LL_LENGTH_RSP")
            self = .length(response: opcode == 0x15, maxRxOctets: u16(0), maxRxTime: u16(2), maxTxOctets: u16(4), maxTxTime: u16(6))
        default:
            self = .other(opcode: opcode, data: d)
        }
    }

    public var opcode: UInt8 {
        switch self {
        case .connectionUpdate: return 0x00
        case .terminate: return 0x02
        case .encryptionRequest: return 0x03
        case .encryptionResponse: return 0x04
        case .startEncryptionRequest: return 0x05
        case .startEncryptionResponse: return 0x06
        case .pauseEncryptionRequest: return 0x0A
        case .pauseEncryptionResponse: return 0x0B
        case .version: return 0x0C
        case let .connectionParameters(response, _, _, _, _, _): return response ? 0x10 : 0x0F
        case .rejectExtended: return 0x11
        case let .length(response, _, _, _, _): return response ? 0x15 : 0x14
        case let .other(opcode, _): return opcode
        }
    }

    public var encoded: [UInt8] {
        func le(_ v: UInt16) -> [UInt8] { [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        switch self {
        case let .connectionUpdate(windowSize, windowOffset, interval, latency, timeout, instant):
            return [opcode, windowSize] + le(windowOffset) + le(interval) + le(latency) + le(timeout) + le(instant)
        case let .terminate(errorCode): return [opcode, errorCode]
        case let .encryptionRequest(rand, ediv, skd, iv): return [opcode] + rand + le(ediv) + skd + iv
        case let .encryptionResponse(skd, iv): return [opcode] + skd + iv
        case .startEncryptionRequest, .startEncryptionResponse, .pauseEncryptionRequest, .pauseEncryptionResponse: return [opcode]
        case let .version(versionNumber, companyID, subversion): return [opcode, versionNumber] + le(companyID) + le(subversion)
        case let .connectionParameters(_, intervalMin, intervalMax, latency, timeout, rest):
            let tail = rest.count >= 15 ? rest : rest + [UInt8](repeating: 0, count: 15 - rest.count)
            return [opcode] + le(intervalMin) + le(intervalMax) + le(latency) + le(timeout) + tail
        case let .rejectExtended(rejectOpcode, errorCode): return [opcode, rejectOpcode, errorCode]
        case let .length(_, maxRxOctets, maxRxTime, maxTxOctets, maxTxTime):
            return [opcode] + le(maxRxOctets) + le(maxRxTime) + le(maxTxOctets) + le(maxTxTime)
        case let .other(opcode, data): return [opcode] + data
        }
    }

    public var description: String {
        switch self {
        case .connectionUpdate: return "LL_CONNECTION_UPDATE_IND"
        case .terminate: return "LL_TERMINATE_IND"
        case .encryptionRequest: return "LL_ENC_REQ"
        case .encryptionResponse: return "LL_ENC_RSP"
        case .startEncryptionRequest: return "LL_START_ENC_REQ"
        case .startEncryptionResponse: return "LL_START_ENC_RSP"
        case .pauseEncryptionRequest: return "LL_PAUSE_ENC_REQ"
        case .pauseEncryptionResponse: return "LL_PAUSE_ENC_RSP"
        case .version: return "LL_VERSION_IND"
        case let .connectionParameters(response, _, _, _, _, _): return response ? "LL_CONNECTION_PARAM_RSP" : "LL_CONNECTION_PARAM_REQ"
        case .rejectExtended: return "LL_REJECT_EXT_IND"
        case let .length(response, _, _, _, _): return response ? "LL_LENGTH_RSP" : "LL_LENGTH_REQ"
        case let .other(opcode, _): return "LL control opcode 0x" + String(opcode, radix: 16)
        }
    }
}

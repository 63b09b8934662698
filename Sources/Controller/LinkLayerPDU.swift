import BLEWire

// The LE link layer's packets as a sniffer sees them (Core 5.4, Vol 6, Part B, 2.1): access
// address (4 octets, little-endian), PDU (2-octet header, payload), CRC (3 octets). Used by the
// sim's air capture writer (`AirRecorder`) and by `blelab import` for air captures.

/// Constants and the CRC of LE Uncoded PHY packets (Vol 6, Part B, 2.1.2, 3.1.1).
public enum LinkLayer {
    /// The access address of every advertising physical channel packet (2.1.2).
    public static let advertisingAccessAddress: UInt32 = 0x8E89_BED6
    /// CRCInit on the primary advertising channels (3.1.1).
    public static let advertisingCRCInit: UInt32 = 0x55_5555

    /// The CRC-24 over `pdu` (header and payload), Vol 6, Part B, 3.1.1: polynomial
    /// x^24 + x^10 + x^9 + x^6 + x^4 + x^3 + x + 1, the LFSR preset with `initial` (position 0 its
    /// least significant bit), the PDU shifted in least significant bit of each octet first.
    /// Returns the register: position n is bit n.
    public static func crc24<C: Collection>(_ pdu: C, initial: UInt32) -> UInt32 where C.Element == UInt8 {
        var state = initial & 0xFF_FFFF
        for octet in pdu {
            for i in 0..<8 {
                let feedback = ((state >> 23) ^ UInt32(octet >> UInt8(i))) & 1
                state = (state << 1) & 0xFF_FFFF
                if feedback != 0 { state ^= 0x00_065B }
            }
        }
        return state
    }

    /// The CRC as it is stored after the PDU: transmitted from position 23 down to position 0, each
    /// octet written least significant bit first (the order on air), so octet 0 holds positions 23…16.
    public static func crcOctets(_ state: UInt32) -> [UInt8] {
        [reversed(UInt8(truncatingIfNeeded: state >> 16)), reversed(UInt8(truncatingIfNeeded: state >> 8)),
         reversed(UInt8(truncatingIfNeeded: state))]
    }

    /// Whether the three octets after a PDU are its CRC with `initial`.
    public static func crcMatches<C: Collection>(_ pdu: C, crc: [UInt8], initial: UInt32) -> Bool where C.Element == UInt8 {
        crc == crcOctets(crc24(pdu, initial: initial))
    }

    /// Access address, PDU, CRC.
    public static func packet(accessAddress: UInt32, pdu: [UInt8], crcInit: UInt32) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(pdu.count + 7)
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: accessAddress >> (8 * UInt32(i)))) }
        out += pdu
        out += crcOctets(crc24(pdu, initial: crcInit))
        return out
    }

    /// The RF channel (0–39, 2402 + 2k MHz) of a channel index (Vol 6, Part A, 2): 37 is RF 0,
    /// 38 is RF 12, 39 is RF 39, data channels 0–10 are RF 1–11 and 11–36 are RF 13–38. The
    /// pseudo-header of link type 256 gives the RF channel.
    public static func rfChannel(index: UInt8) -> UInt8 {
        switch index {
        case 37: return 0
        case 38: return 12
        case 39: return 39
        case 0...10: return index + 1
        default: return min(index, 36) + 2
        }
    }

    /// The channel index of an RF channel (the inverse of `rfChannel(index:)`).
    public static func channelIndex(rf: UInt8) -> UInt8 {
        switch rf {
        case 0: return 37
        case 12: return 38
        case 39: return 39
        case 1...11: return rf - 1
        default: return rf > 39 ? rf : rf - 2
        }
    }

    static func reversed(_ b: UInt8) -> UInt8 {
        var v = b, r: UInt8 = 0
        for _ in 0..<8 {
            r = r << 1 | v & 1
            v >>= 1
        }
        return r
    }
}

/// Why link-layer octets do not decode: what, and at which octet of the PDU.
public enum LinkLayerError: Error, Hashable, Sendable, CustomStringConvertible {
    case truncated(what: String, needed: Int, available: Int)
    case lengthMismatch(what: String, declared: Int, available: Int)

    public var description: String {
        switch self {
        case let .truncated(what, needed, available): return "\(what) needs \(needed) octets, \(available) available"
        case let .lengthMismatch(what, declared, available): return "\(what) declares \(declared) payload octets, \(available) follow"
        }
    }
}

/// An advertising physical channel PDU (Vol 6, Part B, 2.3): a 2-octet header — PDU type (4 bits),
/// RFU, ChSel, TxAdd, RxAdd; Length — and the payload.
public struct AdvertisingChannelPDU: Hashable, Sendable {
    /// The PDU types of 2.3 (legacy ones, and ADV_EXT_IND which the importer notes and skips).
    public enum PDUType: UInt8, Sendable {
        case advInd = 0, advDirectInd = 1, advNonconnInd = 2, scanReq = 3, scanRsp = 4, connectInd = 5, advScanInd = 6, advExtInd = 7
    }
    public var type: UInt8
    public var chSel: Bool
    /// TxAdd, RxAdd: the address in the payload is random (1) or public (0).
    public var txAdd: Bool
    public var rxAdd: Bool
    public var payload: [UInt8]

    public init(type: PDUType, txAdd: Bool, rxAdd: Bool = false, chSel: Bool = false, payload: [UInt8]) {
        self.type = type.rawValue
        self.txAdd = txAdd
        self.rxAdd = rxAdd
        self.chSel = chSel
        self.payload = payload
    }

    /// `bytes`: the PDU (header and payload), without access address and CRC.
    public init(decoding bytes: [UInt8]) throws {
        guard bytes.count >= 2 else { throw LinkLayerError.truncated(what: "an advertising PDU header", needed: 2, available: bytes.count) }
        type = bytes[0] & 0x0F
        chSel = bytes[0] & 0x20 != 0
        txAdd = bytes[0] & 0x40 != 0
        rxAdd = bytes[0] & 0x80 != 0
        let length = Int(bytes[1])
        guard bytes.count - 2 == length else {
            throw LinkLayerError.lengthMismatch(what: "an advertising PDU", declared: length, available: bytes.count - 2)
        }
        payload = Array(bytes[2...])
    }

    public var encoded: [UInt8] {
        [type & 0x0F | (chSel ? 0x20 : 0) | (txAdd ? 0x40 : 0) | (rxAdd ? 0x80 : 0), UInt8(truncatingIfNeeded: payload.count)] + payload
    }

    public var pduType: PDUType? { PDUType(rawValue: type) }
}

extension AdvertisingChannelPDU: CustomStringConvertible {
    /// `ADV_IND TxAdd 0, 12 octets`, in the specification's names (Vol 6, Part B, 2.3).
    public var description: String {
        let names = ["ADV_IND", "ADV_DIRECT_IND", "ADV_NONCONN_IND", "SCAN_REQ", "SCAN_RSP", "CONNECT_IND", "ADV_SCAN_IND", "ADV_EXT_IND",
                     "AUX_CONNECT_RSP"]
        let name = Int(type) < names.count ? names[Int(type)] : "PDU type 0x" + String(type, radix: 16)
        return "\(name) TxAdd \(txAdd ? 1 : 0) RxAdd \(rxAdd ? 1 : 0), \(payload.count) octets"
    }
}

extension DataChannelPDU: CustomStringConvertible {
    /// `LL data start SN 0 NESN 1, 27 octets`, `LL control LL_TERMINATE_IND SN 1 NESN 0` (Vol 6, Part B, 2.4).
    public var description: String {
        let sequence = "SN \(sn ? 1 : 0) NESN \(nesn ? 1 : 0)\(moreData ? " MD" : "")"
        switch llid {
        case Self.llidControl:
            let control = (try? LLControlPDU(decoding: payload)).map { "\($0)" } ?? "(malformed)"
            return "LL control \(control) \(sequence)"
        case Self.llidStart: return "LL data start \(sequence), \(payload.count) octets"
        case Self.llidContinuation: return payload.isEmpty ? "empty PDU \(sequence)" : "LL data continuation \(sequence), \(payload.count) octets"
        default: return "LLID 0b00 (reserved) \(sequence), \(payload.count) octets"
        }
    }
}

/// CONNECT_IND's LLData (Vol 6, Part B, 2.3.3.1): AA (4), CRCInit (3), WinSize (1), WinOffset (2),
/// Interval (2), Latency (2), Timeout (2), ChM (5), Hop (5 bits) and SCA (3 bits); after InitA
/// and AdvA (6 each).
public struct ConnectIndication: Hashable, Sendable {
    public var initiator: LEAddress
    public var advertiser: LEAddress
    public var accessAddress: UInt32
    public var crcInit: UInt32
    /// Units of 1.25 ms.
    public var windowSize: UInt8
    public var windowOffset: UInt16
    public var interval: UInt16
    public var latency: UInt16
    /// Units of 10 ms.
    public var timeout: UInt16
    /// 37 bits, channel 0 the least significant bit of octet 0.
    public var channelMap: [UInt8]
    public var hop: UInt8
    public var sca: UInt8

    public init(initiator: LEAddress, advertiser: LEAddress, accessAddress: UInt32, crcInit: UInt32, windowSize: UInt8 = 1,
                windowOffset: UInt16 = 0, interval: UInt16, latency: UInt16, timeout: UInt16,
                channelMap: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x1F], hop: UInt8, sca: UInt8 = 0) {
        self.initiator = initiator
        self.advertiser = advertiser
        self.accessAddress = accessAddress
        self.crcInit = crcInit
        self.windowSize = windowSize
        self.windowOffset = windowOffset
        self.interval = interval
        self.latency = latency
        self.timeout = timeout
        self.channelMap = channelMap
        self.hop = hop
        self.sca = sca
    }

    public static let payloadLength = 34

    public init(decoding pdu: AdvertisingChannelPDU) throws {
        let p = pdu.payload
        guard p.count >= Self.payloadLength else {
            throw LinkLayerError.truncated(what: "CONNECT_IND", needed: Self.payloadLength, available: p.count)
        }
        initiator = LEAddress(Self.address(p, 0), type: pdu.txAdd ? .random : .public)
        advertiser = LEAddress(Self.address(p, 6), type: pdu.rxAdd ? .random : .public)
        accessAddress = UInt32(p[12]) | UInt32(p[13]) << 8 | UInt32(p[14]) << 16 | UInt32(p[15]) << 24
        crcInit = UInt32(p[16]) | UInt32(p[17]) << 8 | UInt32(p[18]) << 16
        windowSize = p[19]
        windowOffset = UInt16(p[20]) | UInt16(p[21]) << 8
        interval = UInt16(p[22]) | UInt16(p[23]) << 8
        latency = UInt16(p[24]) | UInt16(p[25]) << 8
        timeout = UInt16(p[26]) | UInt16(p[27]) << 8
        channelMap = Array(p[28..<33])
        hop = p[33] & 0x1F
        sca = p[33] >> 5
    }

    public var pdu: AdvertisingChannelPDU {
        var p = Self.octets(initiator.address) + Self.octets(advertiser.address)
        for i in 0..<4 { p.append(UInt8(truncatingIfNeeded: accessAddress >> (8 * UInt32(i)))) }
        for i in 0..<3 { p.append(UInt8(truncatingIfNeeded: crcInit >> (8 * UInt32(i)))) }
        p.append(windowSize)
        for v in [windowOffset, interval, latency, timeout] { p += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        p += channelMap.count == 5 ? channelMap : [0xFF, 0xFF, 0xFF, 0xFF, 0x1F]
        p.append(hop & 0x1F | sca << 5)
        return AdvertisingChannelPDU(type: .connectInd, txAdd: initiator.type.rawValue & 1 == 1, rxAdd: advertiser.type.rawValue & 1 == 1,
                                     payload: p)
    }

    /// A device address in the payload: 6 octets, least significant first.
    static func address(_ p: [UInt8], _ at: Int) -> BDAddr {
        var raw: UInt64 = 0
        for i in 0..<6 { raw |= UInt64(p[at + i]) << (8 * UInt64(i)) }
        return BDAddr(rawValue: raw)
    }

    static func octets(_ a: BDAddr) -> [UInt8] { (0..<6).map { UInt8(truncatingIfNeeded: a.rawValue >> (8 * UInt64($0))) } }
}

extension AdvertisingChannelPDU {
    /// The address at `at` in the payload (AdvA, ScanA, InitA, TargetA), or nil when the payload is too short.
    public func address(at offset: Int, random: Bool) -> LEAddress? {
        guard payload.count >= offset + 6 else { return nil }
        return LEAddress(ConnectIndication.address(payload, offset), type: random ? .random : .public)
    }

    /// ADV_IND, ADV_NONCONN_IND, ADV_SCAN_IND, SCAN_RSP: AdvA then data. ADV_DIRECT_IND: AdvA, TargetA.
    public static func advertising(_ type: PDUType, advertiser: LEAddress, target: LEAddress? = nil, data: [UInt8]) -> AdvertisingChannelPDU {
        var p = ConnectIndication.octets(advertiser.address)
        if let target { p += ConnectIndication.octets(target.address) } else { p += data }
        return AdvertisingChannelPDU(type: type, txAdd: advertiser.type.rawValue & 1 == 1, rxAdd: (target?.type.rawValue ?? 0) & 1 == 1,
                                     payload: p)
    }

    /// SCAN_REQ (2.3.2.1): ScanA, AdvA.
    public static func scanRequest(scanner: LEAddress, advertiser: LEAddress) -> AdvertisingChannelPDU {
        AdvertisingChannelPDU(type: .scanReq, txAdd: scanner.type.rawValue & 1 == 1, rxAdd: advertiser.type.rawValue & 1 == 1,
                              payload: ConnectIndication.octets(scanner.address) + ConnectIndication.octets(advertiser.address))
    }
}

/// A data physical channel PDU (Vol 6, Part B, 2.4): header LLID (2 bits: 0b01 continuation or
/// empty, 0b10 start of an L2CAP message or complete, 0b11 LL control), NESN, SN, MD, CP, RFU;
/// Length; CTEInfo when CP is set; payload (with a MIC on encrypted links).
public struct DataChannelPDU: Hashable, Sendable {
    public static let llidContinuation: UInt8 = 0b01
    public static let llidStart: UInt8 = 0b10
    public static let llidControl: UInt8 = 0b11

    public var llid: UInt8
    public var nesn: Bool
    public var sn: Bool
    public var moreData: Bool
    public var cteInfo: UInt8?
    public var payload: [UInt8]

    public init(llid: UInt8, nesn: Bool, sn: Bool, moreData: Bool = false, payload: [UInt8]) {
        self.llid = llid
        self.nesn = nesn
        self.sn = sn
        self.moreData = moreData
        self.payload = payload
    }

    public init(decoding bytes: [UInt8]) throws {
        guard bytes.count >= 2 else { throw LinkLayerError.truncated(what: "a data PDU header", needed: 2, available: bytes.count) }
        llid = bytes[0] & 0x03
        nesn = bytes[0] & 0x04 != 0
        sn = bytes[0] & 0x08 != 0
        moreData = bytes[0] & 0x10 != 0
        let length = Int(bytes[1])
        var start = 2
        if bytes[0] & 0x20 != 0 {
            guard bytes.count >= 3 else { throw LinkLayerError.truncated(what: "a data PDU with CTEInfo", needed: 3, available: bytes.count) }
            cteInfo = bytes[2]
            start = 3
        }
        guard bytes.count - start == length else {
            throw LinkLayerError.lengthMismatch(what: "a data PDU", declared: length, available: bytes.count - start)
        }
        payload = Array(bytes[start...])
    }

    public var encoded: [UInt8] {
        let header = llid & 0x03 | (nesn ? 0x04 : 0) | (sn ? 0x08 : 0) | (moreData ? 0x10 : 0) | (cteInfo != nil ? 0x20 : 0)
        return [header, UInt8(truncatingIfNeeded: payload.count)] + (cteInfo.map { [$0] } ?? []) + payload
    }
}

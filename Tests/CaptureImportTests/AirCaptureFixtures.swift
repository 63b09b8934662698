import BLEWire
import Controller

/// A small air capture built in code: one peripheral advertising, an active scan, a connection
/// with a fragmented ATT response, an empty PDU, a retransmission, a packet with a bad CRC, a
/// connection update and a termination — written in link types 251, 256 and 272, pcap and pcapng.
enum AirFixture {
    static let central = LEAddress(BDAddr(rawValue: 0xC1_22_33_44_55_01), type: .random)
    static let peripheral = LEAddress(BDAddr(rawValue: 0x66_55_44_33_22_11), type: .public)
    static let accessAddress: UInt32 = 0x5065_7B27
    static let crcInit: UInt32 = 0x12_3456
    /// First anchor: CONNECT_IND at 100 400 µs + its 44 octets on air (352 µs) + 1.25 ms.
    static let anchor0: Int64 = 102_002
    static let intervalUnits: UInt16 = 24

    struct Packet {
        var time: Int64
        var accessAddress: UInt32
        var pdu: [UInt8]
        var crcInit: UInt32
        var fromCentral: Bool?
        var badCRC = false
        var event: UInt16 = 0
        var rssi: Int8 = -50
    }

    /// SN and NESN per side, as `AirRecorder` keeps them.
    struct Sequence {
        var sn = [false, false], nesn = [false, false]
        mutating func pdu(fromCentral: Bool, llid: UInt8, _ payload: [UInt8], acknowledged: Bool = true) -> [UInt8] {
            let side = fromCentral ? 0 : 1
            let pdu = DataChannelPDU(llid: llid, nesn: nesn[side], sn: sn[side], payload: payload)
            if acknowledged {
                sn[side].toggle()
                nesn[1 - side].toggle()
            }
            return pdu.encoded
        }
    }

    static let readByGroupTypeRequest: [UInt8] = [0x07, 0x00, 0x04, 0x00, 0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]
    /// Read By Group Type Response: one service, handles 0x0001–0x0005, UUID FFA0 (L2CAP length 8).
    static let readByGroupTypeResponse: [UInt8] = [0x08, 0x00, 0x04, 0x00, 0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0xA0, 0xFF]
    static let writeRequest: [UInt8] = [0x04, 0x00, 0x04, 0x00, 0x12, 0x03, 0x00, 0x2A]
    static let writeResponse: [UInt8] = [0x01, 0x00, 0x04, 0x00, 0x13]
    /// A Write Command that only the packet with the bad CRC carries.
    static let lostWriteCommand: [UInt8] = [0x06, 0x00, 0x04, 0x00, 0x52, 0x03, 0x00, 0x01, 0x02, 0x03]

    static func packets() -> [Packet] {
        var p: [Packet] = []
        let adv = LinkLayer.advertisingAccessAddress, advInit = LinkLayer.advertisingCRCInit
        func advertising(_ t: Int64, _ pdu: AdvertisingChannelPDU) { p.append(Packet(time: t, accessAddress: adv, pdu: pdu.encoded, crcInit: advInit)) }
        let advData: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0x09] + Array("Tag1".utf8)
        advertising(0, .advertising(.advInd, advertiser: peripheral, data: advData))
        advertising(400, .scanRequest(scanner: central, advertiser: peripheral))
        advertising(800, .advertising(.scanRsp, advertiser: peripheral, data: [0x03, 0x03, 0xA0, 0xFF]))
        advertising(100_000, .advertising(.advInd, advertiser: peripheral, data: advData))
        let connect = ConnectIndication(initiator: central, advertiser: peripheral, accessAddress: accessAddress, crcInit: crcInit,
                                        interval: intervalUnits, latency: 0, timeout: 500, hop: 7)
        advertising(100_400, connect.pdu)

        var seq = Sequence()
        func data(_ t: Int64, _ event: UInt16, fromCentral: Bool, llid: UInt8, _ payload: [UInt8], acknowledged: Bool = true, badCRC: Bool = false) {
            p.append(Packet(time: t, accessAddress: accessAddress,
                            pdu: seq.pdu(fromCentral: fromCentral, llid: llid, payload, acknowledged: acknowledged),
                            crcInit: crcInit, fromCentral: fromCentral, badCRC: badCRC, event: event))
        }
        let start = DataChannelPDU.llidStart, more = DataChannelPDU.llidContinuation, control = DataChannelPDU.llidControl
        // Event 0: the request; the response in two fragments, the second sent twice (the central's
        // empty PDU in between does not acknowledge it: its NESN stays).
        var t = anchor0
        data(t, 0, fromCentral: true, llid: start, readByGroupTypeRequest)
        data(t + 400, 0, fromCentral: false, llid: start, Array(readByGroupTypeResponse[0..<6]))
        data(t + 800, 0, fromCentral: true, llid: more, [])
        data(t + 1_200, 0, fromCentral: false, llid: more, Array(readByGroupTypeResponse[6...]), acknowledged: false)
        data(t + 1_600, 0, fromCentral: true, llid: more, [], acknowledged: false)
        data(t + 2_000, 0, fromCentral: false, llid: more, Array(readByGroupTypeResponse[6...]))
        // Event 2: a packet whose CRC failed.
        t = anchor0 + 2 * 30_000
        data(t, 2, fromCentral: true, llid: start, lostWriteCommand, acknowledged: false, badCRC: true)
        // Event 3: LL_CONNECTION_UPDATE_IND to 50 ms, 6 s, at instant 8.
        t = anchor0 + 3 * 30_000
        data(t, 3, fromCentral: true, llid: control,
             LLControlPDU.connectionUpdate(windowSize: 1, windowOffset: 0, interval: 40, latency: 0, timeout: 600, instant: 8).encoded)
        data(t + 400, 3, fromCentral: false, llid: more, [])
        // Event 10 on the new timing (instant 8 at anchor0 + 8 × 30 ms, then 50 ms): a write.
        t = anchor0 + 8 * 30_000 + 2 * 50_000
        data(t, 10, fromCentral: true, llid: start, writeRequest)
        data(t + 400, 10, fromCentral: false, llid: start, writeResponse)
        // A data length exchange (Vol 6, Part B, 5.1.9): read, not reproduced.
        data(t + 800, 10, fromCentral: true, llid: control,
             LLControlPDU.length(response: false, maxRxOctets: 251, maxRxTime: 2120, maxTxOctets: 251, maxTxTime: 2120).encoded)
        data(t + 1_200, 10, fromCentral: false, llid: control,
             LLControlPDU.length(response: true, maxRxOctets: 251, maxRxTime: 2120, maxTxOctets: 251, maxTxTime: 2120).encoded)
        // Event 11: the central ends the link (Remote User Terminated Connection).
        t += 50_000
        data(t, 11, fromCentral: true, llid: control, LLControlPDU.terminate(errorCode: 0x13).encoded)
        return p
    }

    /// The instant's anchor: when the new parameters apply.
    static let instantTime: Int64 = anchor0 + 8 * 30_000

    /// One packet under `linkType` (251, 256, 272).
    static func record(_ p: Packet, linkType: UInt32) -> [UInt8] {
        var packet = LinkLayer.packet(accessAddress: p.accessAddress, pdu: p.pdu, crcInit: p.crcInit)
        if p.badCRC { packet[packet.count - 1] ^= 0x5A }
        let isAdvertising = p.accessAddress == LinkLayer.advertisingAccessAddress
        switch linkType {
        case 256:
            var flags: UInt16 = 0x0001 | 0x0002 | 0x0400 | (p.badCRC ? 0 : 0x0800)
            if let fromCentral = p.fromCentral { flags |= 0x0010 | (fromCentral ? 2 : 3) << 7 }
            let reference = isAdvertising ? 0 : p.accessAddress
            return [isAdvertising ? 0 : 5, UInt8(bitPattern: p.rssi), 0, 0] + le32(reference) + [UInt8(flags & 0xFF), UInt8(flags >> 8)] + packet
        case 272:
            // Board, header (length 6, payload length, protocol version 2, counter, id 0x06), packet
            // header (length 10, flags, channel, RSSI magnitude, event counter, timestamp).
            let flags: UInt8 = (p.badCRC ? 0 : 0x01) | (p.fromCentral == true ? 0x02 : 0)
            let header: [UInt8] = [6, UInt8(10 + packet.count), 2, 0x01, 0x00, 0x06]
            let packetHeader: [UInt8] = [10, flags, isAdvertising ? 37 : 4, UInt8(Int(-p.rssi))] + [UInt8(p.event & 0xFF), UInt8(p.event >> 8)] + le32(0)
            return [0x00] + header + packetHeader + packet
        default:
            return packet
        }
    }

    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }

    /// A little-endian microsecond pcap of `records` (time in µs, data).
    static func pcap(linkType: UInt32, _ records: [(Int64, [UInt8])]) -> [UInt8] {
        var out = le32(0xA1B2_C3D4) + [2, 0, 4, 0] + le32(0) + le32(0) + le32(65535) + le32(linkType)
        for (t, data) in records {
            out += le32(UInt32(t / 1_000_000)) + le32(UInt32(t % 1_000_000)) + le32(UInt32(data.count)) + le32(UInt32(data.count)) + data
        }
        return out
    }

    /// A little-endian pcapng: Section Header, one Interface Description, Enhanced Packet Blocks.
    static func pcapng(linkType: UInt32, _ records: [(Int64, [UInt8])]) -> [UInt8] {
        func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
            let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
            let length = UInt32(12 + padded.count)
            return le32(type) + le32(length) + padded + le32(length)
        }
        var out = block(0x0A0D_0D0A, le32(0x1A2B_3C4D) + [1, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8))
        out += block(1, [UInt8(linkType & 0xFF), UInt8(linkType >> 8), 0, 0] + le32(0))
        for (t, data) in records {
            let ts = UInt64(t)
            out += block(6, le32(0) + le32(UInt32(ts >> 32)) + le32(UInt32(ts & 0xFFFF_FFFF)) + le32(UInt32(data.count)) + le32(UInt32(data.count)) + data)
        }
        return out
    }

    /// The fixture as a file: `linkType` 251, 256 or 272; pcap or pcapng.
    static func file(linkType: UInt32, pcapng: Bool) -> [UInt8] {
        let records = packets().map { ($0.time, record($0, linkType: linkType)) }
        return pcapng ? Self.pcapng(linkType: linkType, records) : pcap(linkType: linkType, records)
    }
}

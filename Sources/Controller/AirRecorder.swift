import BLERuntime
import BLEWire

/// Records what crossed the sim's air as a sniffer capture: a pcap file of link type 256
/// (LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR), readable by Wireshark and by `blelab import`.
///
/// What it writes (docs/import.md, "Air captures"):
/// - one packet per legacy advertising event, on channel 37 (the sim's events go on every enabled
///   channel; a sniffer follows one), SCAN_REQ and SCAN_RSP of an active scan, CONNECT_IND with the
///   connection's parameters;
/// - each ACL packet split into data PDUs of the link's payload size (LLID 0b10 for the PDU that
///   starts an L2CAP message, 0b01 for the others) and the LL control PDUs of the procedures the
///   sim runs (LL_CONNECTION_UPDATE_IND, LL_CONNECTION_PARAM_REQ, LL_REJECT_EXT_IND,
///   LL_TERMINATE_IND). Under loss every transmission is written, a lost one again with the same
///   SN. Empty PDUs of idle connection events are not written (the sim does not run idle events).
/// - access address 0x8E89BED6 and CRCInit 0x555555 on advertising channels; per connection an
///   access address, CRCInit and hop increment drawn from the recorder's own seeded stream (so the
///   sim's draws are untouched); data channel = (event + 1) × hop mod 37 (Channel Selection
///   Algorithm #1 with all 37 channels used, Vol 6, Part B, 4.5.8.2); SN and NESN as the link
///   layer's acknowledgement scheme sets them (4.5.9), a PDU the peer did not receive repeating its SN.
/// - CRC-24 over each PDU (3.1.1); the pseudo-header's flags: dewhitened, signal power valid,
///   reference access address valid (data), CRC checked and valid, and the direction for data PDUs.
/// - timestamps from the virtual clock (time zero 2000-01-01T00:00:00Z, as in the btsnoop
///   captures): each packet at the time of its event, or later when the packet before it is still
///   on the air (1 Mb/s: 8 µs per octet, then T_IFS 150 µs).
///
/// Deterministic: the same run gives the same bytes.
public final class AirRecorder: AirObserver {
    struct Connection {
        var accessAddress: UInt32
        var crcInit: UInt32
        var hop: UInt8
        /// Next SN to send and NESN, per side: index 0 central, 1 peripheral.
        var sn: [Bool] = [false, false]
        var nesn: [Bool] = [false, false]
    }

    private var random: SeededRandom
    private var connections: [Int: Connection] = [:]
    private var records: [(nanoseconds: Int64, data: [UInt8])] = []
    /// When the last packet written ends on the air.
    private var busyUntil: Int64 = .min

    public init(seed: UInt64) {
        random = SeededRandom(seed: seed, stream: "air-capture")
    }

    public var packetCount: Int { records.count }

    public func observe(_ transmission: AirTransmission, at time: Instant) {
        switch transmission {
        case let .advertising(pdu, rssi), let .scanRequest(pdu, rssi), let .scanResponse(pdu, rssi):
            write(channel: 37, rssi: rssi, accessAddress: LinkLayer.advertisingAccessAddress, pdu: pdu.encoded,
                  crcInit: LinkLayer.advertisingCRCInit, direction: nil, at: time)
        case let .connectRequest(link, initiator, advertiser, interval, latency, timeout, windowOffset, rssi):
            let c = Connection(accessAddress: drawAccessAddress(), crcInit: UInt32(truncatingIfNeeded: random.next()) & 0xFF_FFFF,
                               hop: UInt8(5 + random.int(in: 0...11)))
            connections[link] = c
            let indication = ConnectIndication(initiator: initiator, advertiser: advertiser, accessAddress: c.accessAddress, crcInit: c.crcInit,
                                               windowSize: 1, windowOffset: windowOffset, interval: interval, latency: latency,
                                               timeout: timeout, hop: c.hop)
            write(channel: 37, rssi: rssi, accessAddress: LinkLayer.advertisingAccessAddress, pdu: indication.pdu.encoded,
                  crcInit: LinkLayer.advertisingCRCInit, direction: nil, at: time)
        case let .data(link, fromCentral, frame, payloadOctets, fromPDU, event, rssi):
            let pdus = Self.fragments(frame, payloadOctets: payloadOctets)
            for (llid, payload) in pdus.dropFirst(max(0, fromPDU)) {
                dataPDU(link: link, fromCentral: fromCentral, llid: llid, payload: payload, acknowledged: true, event: event, rssi: rssi, at: time)
            }
        case let .dataAttempt(link, fromCentral, frame, payloadOctets, index, acknowledged, event, rssi):
            let pdus = Self.fragments(frame, payloadOctets: payloadOctets)
            guard pdus.indices.contains(index) else { return }
            dataPDU(link: link, fromCentral: fromCentral, llid: pdus[index].llid, payload: pdus[index].payload, acknowledged: acknowledged,
                    event: event, rssi: rssi, at: time)
        case let .control(link, fromCentral, pdu, acknowledged, event, rssi):
            dataPDU(link: link, fromCentral: fromCentral, llid: DataChannelPDU.llidControl, payload: pdu.encoded,
                    acknowledged: acknowledged, event: event, rssi: rssi, at: time)
        }
    }

    /// The data PDUs of an ACL packet (H4 frame): LLID 0b10 for the one that starts an L2CAP
    /// message (the packet's PB flag is not 0b01, continuing), 0b01 for the others (Vol 6, Part B, 2.4).
    static func fragments(_ frame: [UInt8], payloadOctets: Int) -> [(llid: UInt8, payload: [UInt8])] {
        guard frame.count >= 5 else { return [] }
        let l2cap = Array(frame[5...])
        let starts = (frame[2] >> 4) & 0x03 != 0b01
        let size = max(1, payloadOctets)
        var out: [(llid: UInt8, payload: [UInt8])] = []
        var offset = 0
        repeat {
            let end = min(l2cap.count, offset + size)
            out.append((offset == 0 && starts ? DataChannelPDU.llidStart : DataChannelPDU.llidContinuation, Array(l2cap[offset..<end])))
            offset = end
        } while offset < l2cap.count
        return out
    }

    private func dataPDU(link: Int, fromCentral: Bool, llid: UInt8, payload: [UInt8], acknowledged: Bool, event: Int64, rssi: Int8,
                         at time: Instant) {
        guard var c = connections[link] else { return }
        let side = fromCentral ? 0 : 1, peer = 1 - side
        let pdu = DataChannelPDU(llid: llid, nesn: c.nesn[side], sn: c.sn[side], payload: payload)
        if acknowledged {
            c.sn[side].toggle()
            c.nesn[peer].toggle()
            connections[link] = c
        }
        let channel = UInt8(truncatingIfNeeded: ((max(0, event) + 1) * Int64(c.hop)) % 37)
        write(channel: channel, rssi: rssi, accessAddress: c.accessAddress, pdu: pdu.encoded, crcInit: c.crcInit,
              direction: fromCentral, at: time)
    }

    /// A valid data channel access address (Vol 6, Part B, 2.1.2): not the advertising one nor one
    /// bit from it, not four equal octets, no run of more than six equal bits, at most 24
    /// transitions, at least two transitions in the six most significant bits.
    private func drawAccessAddress() -> UInt32 {
        while true {
            let aa = UInt32(truncatingIfNeeded: random.next())
            if Self.isValidAccessAddress(aa) { return aa }
        }
    }

    static func isValidAccessAddress(_ aa: UInt32) -> Bool {
        let adv = LinkLayer.advertisingAccessAddress
        guard (aa ^ adv).nonzeroBitCount > 1 else { return false }
        let b0 = aa & 0xFF
        guard !(b0 == (aa >> 8) & 0xFF && b0 == (aa >> 16) & 0xFF && b0 == aa >> 24) else { return false }
        var run = 1, longest = 1, transitions = 0
        for i in 1..<32 {
            if (aa >> UInt32(i)) & 1 == (aa >> UInt32(i - 1)) & 1 {
                run += 1
                longest = max(longest, run)
            } else {
                run = 1
                transitions += 1
            }
        }
        guard longest <= 6, transitions <= 24 else { return false }
        var top = 0
        for i in 27..<32 where (aa >> UInt32(i)) & 1 != (aa >> UInt32(i - 1)) & 1 { top += 1 }
        return top >= 2
    }

    private func write(channel: UInt8, rssi: Int8, accessAddress: UInt32, pdu: [UInt8], crcInit: UInt32, direction fromCentral: Bool?,
                       at time: Instant) {
        var flags: UInt16 = 0x0001 | 0x0002 | 0x0400 | 0x0800   // dewhitened, signal power valid, CRC checked, CRC valid
        var reference: UInt32 = 0
        if let fromCentral {
            flags |= 0x0010                                      // reference access address valid
            reference = accessAddress
            flags |= (fromCentral ? 2 : 3) << 7                  // PDU type: data, central → peripheral or back
        }
        var packet: [UInt8] = [LinkLayer.rfChannel(index: channel), UInt8(bitPattern: rssi), 0, 0]
        for i in 0..<4 { packet.append(UInt8(truncatingIfNeeded: reference >> (8 * UInt32(i)))) }
        packet += [UInt8(truncatingIfNeeded: flags), UInt8(truncatingIfNeeded: flags >> 8)]
        packet += LinkLayer.packet(accessAddress: accessAddress, pdu: pdu, crcInit: crcInit)
        let start = max(time.nanoseconds, busyUntil == .min ? time.nanoseconds : busyUntil + 150_000)
        // Preamble (1) + access address, PDU, CRC at 1 Mb/s.
        busyUntil = start + Int64(1 + 4 + pdu.count + 3) * 8_000
        records.append((start, packet))
    }

    /// Lab time zero as Unix seconds: 2000-01-01T00:00:00Z, as in the lab's btsnoop captures.
    static let labEpochSeconds: Int64 = 946_684_800

    /// The capture: a pcap file (little-endian, microsecond timestamps, version 2.4, snaplen 65535,
    /// link type 256); lab time zero is 2000-01-01T00:00:00Z, as in the btsnoop captures.
    public func pcap() -> [UInt8] {
        var out: [UInt8] = []
        func u32(_ v: UInt32) { for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
        func u16(_ v: UInt16) { out += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        u32(0xA1B2_C3D4)
        u16(2)
        u16(4)
        u32(0)
        u32(0)
        u32(65535)
        u32(256)
        for (nanoseconds, data) in records {
            let micros = max(0, nanoseconds) / 1_000
            u32(UInt32(truncatingIfNeeded: Self.labEpochSeconds + micros / 1_000_000))
            u32(UInt32(truncatingIfNeeded: micros % 1_000_000))
            u32(UInt32(data.count))
            u32(UInt32(data.count))
            out += data
        }
        return out
    }
}

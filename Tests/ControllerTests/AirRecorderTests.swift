import BLERuntime
import BLEWire
@testable import Controller
import HCI
import XCTest

/// `AirRecorder`: what it writes for each transmission the sim's air reports (pcap, link type 256,
/// Core 5.4 Vol 6 Part B 2.1–2.4, 3.1.1, 4.5.9).
final class AirRecorderTests: XCTestCase {
    let central = LEAddress(BDAddr(rawValue: 0xC1_22_33_44_55_01), type: .random)
    let peripheral = LEAddress(BDAddr(rawValue: 0x66_55_44_33_22_11), type: .public)

    /// (time µs, record data) per pcap record.
    func records(_ pcap: [UInt8]) -> [(Int64, [UInt8])] {
        func u32(_ i: Int) -> UInt32 { UInt32(pcap[i]) | UInt32(pcap[i + 1]) << 8 | UInt32(pcap[i + 2]) << 16 | UInt32(pcap[i + 3]) << 24 }
        var out: [(Int64, [UInt8])] = []
        var i = 24
        while i + 16 <= pcap.count {
            let length = Int(u32(i + 8))
            out.append((Int64(u32(i)) * 1_000_000 + Int64(u32(i + 4)), Array(pcap[(i + 16)..<(i + 16 + length)])))
            i += 16 + length
        }
        return out
    }

    func testAdvertisingConnectionAndDataPackets() throws {
        let recorder = AirRecorder(seed: 7)
        let t0 = Instant(nanoseconds: 1_000_000_000)
        recorder.observe(.advertising(.advertising(.advInd, advertiser: peripheral, data: [0x02, 0x01, 0x06]), rssi: -60), at: t0)
        recorder.observe(.connectRequest(link: 1, initiator: central, advertiser: peripheral, interval: 24, latency: 0, timeout: 500,
                                         windowOffset: 0, rssi: -40), at: t0)
        // An ACL packet of 40 L2CAP octets (PB 0b00, first): two data PDUs, 27 + 13.
        let l2cap = [UInt8](repeating: 0xAB, count: 40)
        recorder.observe(.data(link: 1, fromCentral: true, aclFrame: [0x02, 0x40, 0x00, 40, 0] + l2cap, payloadOctets: 27, fromPDU: 0, event: 0, rssi: -40),
                         at: t0 + .milliseconds(2))
        // A control PDU the peripheral missed, sent again.
        let update = LLControlPDU.connectionUpdate(windowSize: 1, windowOffset: 0, interval: 40, latency: 0, timeout: 600, instant: 7)
        recorder.observe(.control(link: 1, fromCentral: true, pdu: update, acknowledged: false, event: 1, rssi: -40), at: t0 + .milliseconds(32))
        recorder.observe(.control(link: 1, fromCentral: true, pdu: update, acknowledged: true, event: 2, rssi: -40), at: t0 + .milliseconds(62))
        let pcap = recorder.pcap()
        // File header: magic (little-endian, µs), 2.4, thiszone, sigfigs, snaplen 65535, link type 256.
        XCTAssertEqual(Array(pcap[0..<24]), [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0, 1, 0, 0])
        let r = records(pcap)
        XCTAssertEqual(r.count, 6)
        // Lab time zero is 2000-01-01T00:00:00Z (946 684 800 s).
        XCTAssertEqual(r[0].0, 946_684_801_000_000)
        // ADV_IND: RF channel 0 (advertising channel 37), −60 dBm, noise 0, offenses 0, reference AA 0,
        // flags dewhitened | signal power valid | CRC checked | CRC valid; AA 0x8E89BED6; PDU; CRC.
        XCTAssertEqual(Array(r[0].1[0..<14]), [0x00, 0xC4, 0, 0, 0, 0, 0, 0, 0x03, 0x0C, 0xD6, 0xBE, 0x89, 0x8E])
        XCTAssertEqual(Array(r[0].1[14...]), [0x00, 0x09, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x02, 0x01, 0x06, 0x11, 0x64, 0x5B])
        // The CONNECT_IND goes when the ADV_IND has ended (preamble, AA, PDU, CRC at 8 µs an octet) + T_IFS 150 µs.
        XCTAssertEqual(r[1].0 - r[0].0, (1 + 4 + 11 + 3) * 8 + 150)
        let connect = try ConnectIndication(decoding: AdvertisingChannelPDU(decoding: Array(r[1].1[14..<(r[1].1.count - 3)])))
        XCTAssertEqual(connect.initiator, central)
        XCTAssertEqual(connect.advertiser, peripheral)
        XCTAssertEqual([connect.interval, connect.latency, connect.timeout, connect.windowOffset], [24, 0, 500, 0])
        XCTAssertTrue((5...16).contains(connect.hop))
        XCTAssertTrue(AirRecorder.isValidAccessAddress(connect.accessAddress))
        // Data: AA and reference AA the connection's; flags add reference AA valid and PDU type 2 (central → peripheral).
        let aa = AirRecorderTests.le32(connect.accessAddress)
        for k in 2..<6 {
            XCTAssertEqual(Array(r[k].1[4..<8]), aa)
            XCTAssertEqual(Array(r[k].1[8..<10]), [0x13, 0x0D], "0x0D13: data central → peripheral")
            XCTAssertEqual(Array(r[k].1[10..<14]), aa)
            let pdu = Array(r[k].1[14..<(r[k].1.count - 3)])
            XCTAssertTrue(LinkLayer.crcMatches(pdu, crc: Array(r[k].1.suffix(3)), initial: connect.crcInit))
        }
        // Event 0: channel (0 + 1) × hop mod 37, as an RF channel.
        XCTAssertEqual(r[2].1[0], LinkLayer.rfChannel(index: connect.hop % 37))
        // LLID start, SN 0, then continuation, SN 1; 27 then 13 octets.
        XCTAssertEqual(Array(r[2].1[14..<16]), [0x02, 27])
        XCTAssertEqual(Array(r[3].1[14..<16]), [0x09, 13])
        // The control PDU: SN 0 again (the continuation was acknowledged), and once more after it was missed.
        XCTAssertEqual(Array(r[4].1[14..<16]), [0x03, 12])
        XCTAssertEqual(r[4].1[14...], r[5].1[14...], "a retransmission repeats SN and payload")
    }

    func testAccessAddressRules() {
        XCTAssertFalse(AirRecorder.isValidAccessAddress(0x8E89_BED6), "the advertising one")
        XCTAssertFalse(AirRecorder.isValidAccessAddress(0x8E89_BED7), "one bit from it")
        XCTAssertFalse(AirRecorder.isValidAccessAddress(0x5555_5555), "four equal octets")
        XCTAssertFalse(AirRecorder.isValidAccessAddress(0x5065_7F80), "seven equal bits in a row")
        XCTAssertFalse(AirRecorder.isValidAccessAddress(0xAAAA_AAAB), "more than 24 transitions")
        XCTAssertTrue(AirRecorder.isValidAccessAddress(0x5065_7B27))
    }

    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
}

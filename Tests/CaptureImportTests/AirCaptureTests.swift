import BLEWire
import CaptureImport
import Controller
import HCI
import XCTest

/// Air captures in: the link-layer decoder (Core 5.4, Vol 6, Part B, 2.3, 2.4, 3.1.1) and the
/// central's HCI view made from it (`AirCaptureHCI`), on the synthetic `AirFixture` in each link
/// type and container.
final class AirCaptureTests: XCTestCase {
    // MARK: The link layer's bytes

    /// CRC-24 (3.1.1) of ADV_IND, AdvA 66:55:44:33:22:11 (public), AdvData 02 01 06, CRCInit
    /// 0x555555. Wireshark's btle dissector checks this packet's CRC as correct (and flags it
    /// "Incorrect CRC" with any bit of the last octet changed).
    func testCRC24OfAnAdvertisingPacket() {
        let pdu: [UInt8] = [0x00, 0x09,                         // ADV_IND, TxAdd public; length 9
                            0x11, 0x22, 0x33, 0x44, 0x55, 0x66,  // AdvA, least significant octet first
                            0x02, 0x01, 0x06]                    // AD: Flags 0x06
        XCTAssertEqual(LinkLayer.packet(accessAddress: LinkLayer.advertisingAccessAddress, pdu: pdu, crcInit: LinkLayer.advertisingCRCInit),
                       [0xD6, 0xBE, 0x89, 0x8E] + pdu + [0x11, 0x64, 0x5B])
        XCTAssertTrue(LinkLayer.crcMatches(pdu, crc: [0x11, 0x64, 0x5B], initial: 0x55_5555))
        XCTAssertFalse(LinkLayer.crcMatches(pdu, crc: [0x11, 0x64, 0x5A], initial: 0x55_5555))
        XCTAssertFalse(LinkLayer.crcMatches(pdu, crc: [0x11, 0x64, 0x5B], initial: 0x12_3456), "CRCInit is part of the check")
    }

    func testAdvertisingAndDataPDUsRoundTrip() throws {
        let connect = ConnectIndication(initiator: AirFixture.central, advertiser: AirFixture.peripheral, accessAddress: 0x5065_7B27,
                                        crcInit: 0xABCDEF, windowSize: 2, windowOffset: 3, interval: 40, latency: 4, timeout: 600, hop: 9, sca: 5)
        let pdu = connect.pdu
        // Header: CONNECT_IND (0b0101), TxAdd 1 (InitA random), RxAdd 0; length 34.
        XCTAssertEqual(Array(pdu.encoded[0..<2]), [0x45, 34])
        // LLData after InitA and AdvA: AA, CRCInit, WinSize, WinOffset, Interval, Latency, Timeout, ChM, Hop | SCA << 5.
        XCTAssertEqual(Array(pdu.payload[12...]), [0x27, 0x7B, 0x65, 0x50, 0xEF, 0xCD, 0xAB, 0x02, 0x03, 0x00, 0x28, 0x00, 0x04, 0x00,
                                                  0x58, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0xA9])
        XCTAssertEqual(try ConnectIndication(decoding: AdvertisingChannelPDU(decoding: pdu.encoded)), connect)

        // LLID 0b11, NESN 1, SN 0, MD 1; LL_TERMINATE_IND (0x02), Remote User Terminated Connection (0x13).
        let data = DataChannelPDU(llid: 0b11, nesn: true, sn: false, moreData: true, payload: LLControlPDU.terminate(errorCode: 0x13).encoded)
        XCTAssertEqual(data.encoded, [0x17, 0x02, 0x02, 0x13])
        XCTAssertEqual(try DataChannelPDU(decoding: data.encoded), data)
        let update = LLControlPDU.connectionUpdate(windowSize: 1, windowOffset: 2, interval: 40, latency: 0, timeout: 600, instant: 0x1234)
        XCTAssertEqual(update.encoded, [0x00, 0x01, 0x02, 0x00, 0x28, 0x00, 0x00, 0x00, 0x58, 0x02, 0x34, 0x12])
        XCTAssertEqual(try LLControlPDU(decoding: update.encoded), update)
        let length = LLControlPDU.length(response: false, maxRxOctets: 251, maxRxTime: 2120, maxTxOctets: 251, maxTxTime: 2120)
        XCTAssertEqual(try LLControlPDU(decoding: length.encoded), length)
        XCTAssertEqual(try LLControlPDU(decoding: [0x0C, 0x0D, 0x59, 0x00, 0x01, 0x00]),
                       .version(versionNumber: 0x0D, companyID: 0x0059, subversion: 1))

        XCTAssertEqual(data.description, "LL control LL_TERMINATE_IND SN 0 NESN 1 MD")
        XCTAssertEqual(DataChannelPDU(llid: 0b01, nesn: false, sn: true, payload: []).description, "empty PDU SN 1 NESN 0")
        XCTAssertEqual(pdu.description, "CONNECT_IND TxAdd 1 RxAdd 0, 34 octets")
        XCTAssertThrowsError(try DataChannelPDU(decoding: [0x02, 0x05, 0x01])) { error in
            XCTAssertEqual(error as? LinkLayerError, .lengthMismatch(what: "a data PDU", declared: 5, available: 1))
        }
        XCTAssertThrowsError(try LLControlPDU(decoding: [0x00, 0x01]))
    }

    func testRFChannelsAndChannelIndexesAreInverse() {
        XCTAssertEqual(LinkLayer.rfChannel(index: 37), 0)
        XCTAssertEqual(LinkLayer.rfChannel(index: 38), 12)
        XCTAssertEqual(LinkLayer.rfChannel(index: 39), 39)
        for index in UInt8(0)...39 { XCTAssertEqual(LinkLayer.channelIndex(rf: LinkLayer.rfChannel(index: index)), index) }
    }

    // MARK: The fixture in each link type and container

    func testEachLinkTypeInPcapAndPcapngGivesTheCentralsView() throws {
        for linkType: UInt32 in [251, 256, 272] {
            for pcapng in [false, true] {
                let label = "link type \(linkType) \(pcapng ? "pcapng" : "pcap")"
                let file = try CaptureFile.decode(AirFixture.file(linkType: linkType, pcapng: pcapng))
                let t = try HCIStreamAnalysis.analyse(file)
                XCTAssertEqual(t.scans.count, 1, label)
                XCTAssertEqual(t.scans.first?.passive, false, "\(label): the central sent SCAN_REQ")
                XCTAssertEqual(t.reports.map(\.isScanResponse), [false, true, false], label)
                XCTAssertEqual(t.reports.first?.address, AirFixture.peripheral, label)
                XCTAssertEqual(t.reports.first?.rssi, linkType == 251 ? nil : -50, label)
                XCTAssertEqual(t.connections.count, 1, label)
                let c = try XCTUnwrap(t.connections.first)
                XCTAssertEqual(c.peer, AirFixture.peripheral, label)
                XCTAssertEqual([c.interval, c.latency, c.supervisionTimeout], [24, 0, 500], label)
                // The retransmitted fragment once, the bad-CRC Write Command never.
                XCTAssertEqual(c.att.map(\.bytes), [Array(AirFixture.readByGroupTypeRequest[4...]), Array(AirFixture.readByGroupTypeResponse[4...]),
                                                   Array(AirFixture.writeRequest[4...]), Array(AirFixture.writeResponse[4...])], label)
                XCTAssertEqual(c.att.map(\.fromCentral), [true, false, true, false], label)
                XCTAssertEqual(c.parameterUpdates.map(\.interval), [40], label)
                XCTAssertEqual(c.parameterUpdates.map(\.supervisionTimeout), [600], label)
                XCTAssertEqual(c.parameterUpdates.first?.mark.time, AirFixture.instantTime, "\(label): at the instant's anchor")
                XCTAssertEqual(c.requestedReason, HCIStatus(rawValue: 0x13), label)
                XCTAssertEqual(c.reason, .connectionTerminatedByLocalHost, label)
                XCTAssertTrue(t.notes.contains { $0.hasPrefix("1 link-layer packet (first record 12) failed the CRC check") }, "\(label): \(t.notes)")
                XCTAssertTrue(t.notes.contains { $0.hasPrefix("1 retransmitted data PDU") }, "\(label): \(t.notes)")
                XCTAssertTrue(t.notes.contains { $0.hasPrefix("LL_LENGTH_REQ (first at record 17) is a link-layer exchange") }, "\(label): \(t.notes)")
                XCTAssertTrue(t.notes.contains { $0.hasPrefix("LL_LENGTH_RSP (first at record 18)") }, "\(label): \(t.notes)")
            }
        }
    }

    func testTheFixtureImportsAsAScenario() throws {
        let result = try CaptureImporter.importCapture(AirFixture.file(linkType: 256, pcapng: false), source: "fixture.pcap")
        XCTAssertEqual(result.peripheralIDs.count, 1)
        XCTAssertTrue(result.yaml.contains("link type 256 (BLUETOOTH_LE_LL_WITH_PHDR)"), result.yaml)
        XCTAssertTrue(result.yaml.contains("failed the CRC check"), result.yaml)
        XCTAssertTrue(result.yaml.contains("- connect: "), result.yaml)
    }

    /// Another central's CONNECT_IND with an Interval of 0 (Vol 6 Part B 2.3.3.1 allows 6 to
    /// 3200), then data on its link: the fuzzer (Fuzzing/Pcap) found that the importer divided by
    /// the zero interval when it placed the link's first packet in a connection event. Now the
    /// foreign link's interval is at least one unit, as our own links' already were: the capture
    /// imports, with the foreign connection noted as left out, in each link type.
    func testAForeignConnectionWithAnIntervalOfZeroImportsWithoutTrapping() throws {
        let other = LEAddress(BDAddr(rawValue: 0xC1_99_88_77_66_02), type: .random)
        let accessAddress: UInt32 = 0x71A3_D2C4, crcInit: UInt32 = 0x0A_BCDE
        var packets = AirFixture.packets()
        let end = try XCTUnwrap(packets.last?.time)
        let connect = ConnectIndication(initiator: other, advertiser: AirFixture.peripheral, accessAddress: accessAddress, crcInit: crcInit,
                                        interval: 0, latency: 0, timeout: 500, hop: 7)
        packets.append(AirFixture.Packet(time: end + 100_000, accessAddress: LinkLayer.advertisingAccessAddress, pdu: connect.pdu.encoded,
                                         crcInit: LinkLayer.advertisingCRCInit))
        var sequence = AirFixture.Sequence()
        for (k, fromCentral) in [true, false, true].enumerated() {
            packets.append(AirFixture.Packet(time: end + 102_000 + Int64(k) * 5_000, accessAddress: accessAddress,
                                             pdu: sequence.pdu(fromCentral: fromCentral, llid: DataChannelPDU.llidContinuation, []),
                                             crcInit: crcInit, fromCentral: fromCentral, event: UInt16(k)))
        }
        for linkType: UInt32 in [251, 256, 272] {
            let bytes = AirFixture.pcap(linkType: linkType, packets.map { ($0.time, AirFixture.record($0, linkType: linkType)) })
            let result = try CaptureImporter.importCapture(bytes, source: "foreign-interval-0.pcap")
            XCTAssertEqual(result.transcript.connections.count, 1, "link type \(linkType)")
            XCTAssertTrue(result.yaml.contains("1 connection of another central (first \(other.address)"), "link type \(linkType)\n\(result.yaml)")
        }
    }

    // MARK: Malformed records: typed errors naming record and offset

    func testMalformedRecordsAreTypedErrors() {
        func error(_ linkType: UInt32, _ data: [UInt8]) -> CaptureError? {
            do { _ = try CaptureFile.decode(AirFixture.pcap(linkType: linkType, [(0, data)])); return nil } catch { return error as? CaptureError }
        }
        XCTAssertEqual(error(256, [0, 0, 0, 0, 0]),
                       .malformedPacket(record: 1, offset: 24, detail: "256 (BLUETOOTH_LE_LL_WITH_PHDR): 5 octets, shorter than the 10-octet pseudo-header"))
        // 251: an ADV_IND header that declares 9 payload octets, followed by 2 and the CRC.
        let short: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E, 0x00, 0x09, 0x11, 0x22, 0xAA, 0xBB, 0xCC]
        XCTAssertEqual(error(251, short), .malformedPacket(record: 1, offset: 24, detail: "251 (BLUETOOTH_LE_LL): the PDU header gives 9 payload octets, so 18 octets of packet, but 11 follow the link-type header"))
        XCTAssertEqual(error(272, [0x00, 0xBE, 0xEF]) == nil, false)
        XCTAssertEqual(error(272, [0xBE, 0xEF, 0x00])?.description.contains("0.9.7"), true)
        // A CONNECT_IND with a short LLData (valid CRC).
        let pdu: [UInt8] = [0x05, 12] + [UInt8](repeating: 1, count: 12)
        let packet = LinkLayer.packet(accessAddress: LinkLayer.advertisingAccessAddress, pdu: pdu, crcInit: LinkLayer.advertisingCRCInit)
        XCTAssertEqual(error(251, packet)?.offset, 24)
        XCTAssertTrue(error(251, packet)?.description.contains("CONNECT_IND needs 34 octets") ?? false, "\(String(describing: error(251, packet)))")
        // Cut short by the capturing tool.
        var truncated = AirFixture.pcap(linkType: 251, [(0, packet)])
        truncated.replaceSubrange(36..<40, with: AirFixture.le32(UInt32(packet.count + 4)))
        XCTAssertThrowsError(try CaptureFile.decode(truncated)) { error in
            guard case .truncatedPacket(1, 24, _, _)? = error as? CaptureError else { return XCTFail("\(error)") }
        }
    }

    func testAirAndHCIPacketsInOneFileAreRefused() {
        // pcapng: an air interface and an H4 interface.
        var bytes = AirFixture.pcapng(linkType: 256, [(0, AirFixture.record(AirFixture.packets()[0], linkType: 256))])
        // A second interface (187) and a packet on it.
        func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
            let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
            let length = UInt32(12 + padded.count)
            return AirFixture.le32(type) + AirFixture.le32(length) + padded + AirFixture.le32(length)
        }
        bytes += block(1, [187, 0, 0, 0] + AirFixture.le32(0))
        bytes += block(6, AirFixture.le32(1) + AirFixture.le32(0) + AirFixture.le32(1) + AirFixture.le32(4) + AirFixture.le32(4) + [0x01, 0x03, 0x0C, 0x00])
        XCTAssertThrowsError(try CaptureFile.decode(bytes)) { error in
            guard case let .malformedPacket(record, _, detail)? = error as? CaptureError else { return XCTFail("\(error)") }
            XCTAssertEqual(record, 2)
            XCTAssertTrue(detail.contains("either as HCI or as link-layer packets"), detail)
        }
    }
}


/// Damaged air captures, made with a seeded generator from the fixture in each link type and from
/// a sim air capture: octets flipped anywhere, records cut. Each either imports or is a
/// `CaptureError`; none traps or hangs (the test finishing is the proof).
final class AirCaptureDamageTests: XCTestCase {
    func testDamagedAirCapturesImportOrFailWithATypedError() throws {
        var bases = [251, 256, 272].map { AirFixture.file(linkType: UInt32($0), pcapng: false) }
        bases.append(AirFixture.file(linkType: 256, pcapng: true))
        var state: UInt64 = 0x5EED
        func next() -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int(truncatingIfNeeded: (z ^ (z >> 31)) >> 1)
        }
        var imported = 0, refused = 0
        for base in bases {
            for round in 0..<150 {
                var bytes = base
                if round % 5 == 4 {
                    bytes.removeLast(1 + next() % max(1, bytes.count - 24))
                } else {
                    for _ in 0..<(1 + round % 4) {
                        let i = 24 + next() % (bytes.count - 24)
                        bytes[i] ^= UInt8(truncatingIfNeeded: 1 + next() % 255)
                    }
                }
                do {
                    _ = try CaptureImporter.importCapture(bytes, source: "damaged.pcap")
                    imported += 1
                } catch is CaptureError {
                    refused += 1
                } catch {
                    XCTFail("not a CaptureError: \(error)")
                }
            }
        }
        XCTAssertEqual(imported + refused, 600)
        XCTAssertGreaterThan(imported, 0)
        XCTAssertGreaterThan(refused, 0)
    }
}

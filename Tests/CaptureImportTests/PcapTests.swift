import BLERuntime
import ScenarioFormat
import CaptureImport
import HCI
import Transport
import XCTest

/// pcap and pcapng with the Bluetooth HCI link types, from synthetic files built octet by octet
/// here: both byte orders, both pcap resolutions, SPB and EPB, several interfaces, if_tsresol,
/// every link type, and each defect a typed error naming its record or block and offset.
final class PcapTests: XCTestCase {
    // HCI packets as H4 frames.
    let scanEnable: [UInt8] = [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00]           // LE Set Scan Enable
    let commandComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]  // its Command Complete

    // MARK: writers (test-only, independent of the reader)

    static func u16(_ v: UInt16, _ be: Bool) -> [UInt8] { be ? [UInt8(v >> 8), UInt8(v & 0xFF)] : [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func u32(_ v: UInt32, _ be: Bool) -> [UInt8] {
        let o = [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
        return be ? o : o.reversed()
    }

    static func pcap(linkType: UInt32, bigEndian be: Bool, nanoseconds: Bool = false,
                     records: [(seconds: UInt32, fraction: UInt32, data: [UInt8], original: Int?)]) -> [UInt8] {
        var out = u32(nanoseconds ? 0xA1B2_3C4D : 0xA1B2_C3D4, be) + u16(2, be) + u16(4, be) + u32(0, be) + u32(0, be)
            + u32(65_535, be) + u32(linkType, be)
        for r in records {
            out += u32(r.seconds, be) + u32(r.fraction, be) + u32(UInt32(r.data.count), be) + u32(UInt32(r.original ?? r.data.count), be)
            out += r.data
        }
        return out
    }

    static func block(_ type: UInt32, _ body: [UInt8], _ be: Bool) -> [UInt8] {
        let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
        let length = UInt32(12 + padded.count)
        return u32(type, be) + u32(length, be) + padded + u32(length, be)
    }
    static func shb(_ be: Bool) -> [UInt8] {
        block(0x0A0D_0D0A, u32(0x1A2B_3C4D, be) + u16(1, be) + u16(0, be) + [UInt8](repeating: 0xFF, count: 8), be)
    }
    static func idb(linkType: UInt16, snaplen: UInt32 = 262_144, tsresol: UInt8? = nil, _ be: Bool) -> [UInt8] {
        var body = u16(linkType, be) + u16(0, be) + u32(snaplen, be)
        if let tsresol { body += u16(9, be) + u16(1, be) + [tsresol, 0, 0, 0] + u16(0, be) + u16(0, be) }
        return block(1, body, be)
    }
    static func epb(interface: UInt32, timestamp: UInt64, _ data: [UInt8], original: Int? = nil, _ be: Bool) -> [UInt8] {
        block(6, u32(interface, be) + u32(UInt32(timestamp >> 32), be) + u32(UInt32(timestamp & 0xFFFF_FFFF), be)
                + u32(UInt32(data.count), be) + u32(UInt32(original ?? data.count), be) + data, be)
    }
    static func spb(_ data: [UInt8], _ be: Bool) -> [UInt8] { block(3, u32(UInt32(data.count), be) + data, be) }

    /// Link type 201's header: 0 sent by the host, 1 received.
    static func phdr(_ direction: HCIDirection, _ frame: [UInt8]) -> [UInt8] {
        [0, 0, 0, direction == .controllerToHost ? 1 : 0] + frame
    }

    func error(_ bytes: [UInt8]) -> PcapError? {
        do { _ = try CaptureFile.decode(bytes); return nil } catch let CaptureError.pcap(e) { return e } catch { return nil }
    }

    // MARK: pcap

    func testPcapInBothByteOrdersAndBothResolutions() throws {
        for be in [true, false] {
            for nano in [false, true] {
                let bytes = Self.pcap(linkType: 201, bigEndian: be, nanoseconds: nano, records: [
                    (10, nano ? 5_000 : 5, Self.phdr(.hostToController, scanEnable), nil),
                    (10, nano ? 1_250_000 : 1_250, Self.phdr(.controllerToHost, commandComplete), nil),
                ])
                let file = try CaptureFile.decode(bytes)
                XCTAssertEqual(file.format, .pcap(linkType: .bluetoothHCIH4WithPHDR, nanoseconds: nano))
                XCTAssertEqual(file.packets.map(\.frame), [scanEnable, commandComplete])
                XCTAssertEqual(file.packets.map(\.direction), [.hostToController, .controllerToHost])
                XCTAssertEqual(file.packets.map(\.time), [0, 1_245])
                XCTAssertEqual(file.packets.map(\.record), [1, 2])
                XCTAssertEqual(file.packets.map(\.offset), [24, 24 + 16 + 10])
            }
        }
    }

    func testPcapTruncatedRecordsAreReportedAndDefectsAreTyped() throws {
        // A record the snap length cut: kept, with its missing octets (the importer refuses its values).
        let cut = Self.pcap(linkType: 201, bigEndian: true, records: [(1, 0, Self.phdr(.hostToController, [0x02, 0x40, 0x00]), 13)])
        XCTAssertEqual(try CaptureFile.decode(cut).packets.first?.missingOctets, 6)

        let two = Self.pcap(linkType: 201, bigEndian: false, records: [
            (1, 0, Self.phdr(.hostToController, scanEnable), nil), (1, 9, Self.phdr(.controllerToHost, commandComplete), nil),
        ])
        let second = 24 + 16 + 10
        XCTAssertEqual(error(Array(two.prefix(second + 7))), .truncatedRecordHeader(record: 2, available: 7, at: second))
        XCTAssertEqual(error(Array(two.dropLast(3))), .truncatedRecordData(record: 2, needed: 11, available: 8, at: second))
        var long = two
        long[second + 10] = 0x10   // captured length 0x0010000b
        XCTAssertEqual(error(long), .badRecordLength(record: 2, captured: 0x0010_000B, original: 11, at: second))
        var version = two
        version[4] = 3
        XCTAssertEqual(error(version), .unsupportedVersion(major: 3, minor: 4, at: 4))
        XCTAssertEqual(error(Array(two.prefix(10))), .truncatedHeader(format: "pcap", available: 10, needed: 24))
        XCTAssertEqual(PcapError.truncatedRecordData(record: 2, needed: 11, available: 8, at: 50).description,
                       "pcap: record 2 at offset 50: packet truncated: needed 11 octets, 8 left")
    }

    // MARK: pcapng

    func testPcapngBothByteOrdersEPBSPBTwoInterfacesAndTimestampResolution() throws {
        for be in [true, false] {
            // Interface 0: link type 201, default microseconds. Interface 1: link type 187 in
            // nanoseconds (if_tsresol 9). A custom block (0x00000BAD) in between is skipped.
            let t0: UInt64 = 1_700_000_000_000_000
            let bytes = Self.shb(be) + Self.idb(linkType: 201, be) + Self.idb(linkType: 187, tsresol: 9, be)
                + Self.epb(interface: 0, timestamp: t0, Self.phdr(.hostToController, scanEnable), be)
                + Self.block(0x0BAD, [1, 2, 3, 4, 5], be)
                + Self.epb(interface: 1, timestamp: (t0 + 2_000) * 1_000 + 999, commandComplete, be)
                + Self.spb(Self.phdr(.controllerToHost, commandComplete), be)
            let file = try CaptureFile.decode(bytes)
            XCTAssertEqual(file.format, .pcapng(linkTypes: [.bluetoothHCIH4WithPHDR, .bluetoothHCIH4]))
            XCTAssertEqual(file.recordCount, 3)
            XCTAssertEqual(file.packets.map(\.record), [1, 2, 3])
            XCTAssertEqual(file.packets.map(\.frame), [scanEnable, commandComplete, commandComplete])
            XCTAssertEqual(file.packets.map(\.direction), [.hostToController, .controllerToHost, .controllerToHost])
            // The SPB has no time: it is taken at the packet before it.
            XCTAssertEqual(file.packets.map(\.time), [0, 2_000, 2_000])
            let shbLength = 28, idbLength = 20, idb2Length = 32
            XCTAssertEqual(file.packets[0].offset, shbLength + idbLength + idb2Length)
        }
    }

    func testBinaryTimestampResolutionAndTwoSectionsOfOppositeOrders() throws {
        // 2^-10 s units: 1024 units are one second. The second section, little-endian, restarts its
        // interface numbering.
        let bytes = Self.shb(true) + Self.idb(linkType: 201, tsresol: 0x8A, true)
            + Self.epb(interface: 0, timestamp: 1_024, Self.phdr(.hostToController, scanEnable), true)
            + Self.epb(interface: 0, timestamp: 1_024 + 512, Self.phdr(.controllerToHost, commandComplete), true)
            + Self.shb(false) + Self.idb(linkType: 201, false)
            + Self.epb(interface: 0, timestamp: 3_000_000, Self.phdr(.controllerToHost, commandComplete), false)
        let file = try CaptureFile.decode(bytes)
        XCTAssertEqual(file.packets.map(\.time), [0, 500_000, 2_000_000])
        XCTAssertEqual(file.packets.map(\.direction), [.hostToController, .controllerToHost, .controllerToHost])
    }

    func testPcapngDefectsAreTypedErrorsWithBlockAndOffset() {
        let be = true
        let head = Self.shb(be) + Self.idb(linkType: 201, be)
        let packet = Self.epb(interface: 0, timestamp: 5, Self.phdr(.hostToController, scanEnable), be)
        let at = head.count
        // Cut inside the third block.
        XCTAssertEqual(error(head + packet.prefix(20)), .truncatedBlock(block: 3, needed: packet.count, available: 20, at: at))
        XCTAssertEqual(error(head + packet.prefix(8)), .truncatedBlock(block: 3, needed: 12, available: 8, at: at))
        // The trailing length differs from the leading one.
        var mismatch = head + packet
        mismatch[mismatch.count - 1] ^= 0x04
        XCTAssertEqual(error(mismatch), .blockLengthMismatch(block: 3, first: UInt32(packet.count), last: UInt32(packet.count) ^ 4, at: at))
        // A length that is not a multiple of 4, and one too short for an EPB's fields.
        var odd = head + packet
        odd[at + 7] = UInt8(packet.count + 1)
        XCTAssertEqual(error(odd), .badBlockLength(block: 3, type: 6, length: UInt32(packet.count + 1), at: at))
        XCTAssertEqual(error(head + Self.block(6, [0, 0, 0, 0], be)), .badBlockLength(block: 3, type: 6, length: 16, at: at))
        // A packet naming interface 1 of a section with one.
        XCTAssertEqual(error(head + Self.epb(interface: 1, timestamp: 5, scanEnable, be)),
                       .unknownInterface(block: 3, interface: 1, interfaces: 1, at: at))
        // A byte-order magic that is neither.
        var magic = Self.shb(be)
        magic[8] = 0x77
        XCTAssertEqual(error(magic), .badByteOrderMagic(block: 1, found: 0x772B_3C4D, at: 0))
        // An option running past the block.
        var option = Self.shb(be) + Self.idb(linkType: 201, tsresol: 6, be)
        option[28 + 16 + 3] = 0x40   // if_tsresol's length: 64
        XCTAssertEqual(error(option), .badOption(block: 2, code: 9, length: 64, at: 28 + 16))
        // A link-type header cut short, captured beyond the original.
        XCTAssertEqual(error(head + Self.epb(interface: 0, timestamp: 5, [0, 0, 0], be)),
                       .truncatedLinkHeader(.bluetoothHCIH4WithPHDR, record: 1, length: 3, needed: 5, at: at))
        XCTAssertEqual(error(head + Self.epb(interface: 0, timestamp: 5, [0, 0, 0, 0, 1, 3], original: 2, be)),
                       .badRecordLength(record: 1, captured: 6, original: 2, at: at))
        // Garbage after a good block: its length makes no sense.
        XCTAssertEqual(error(head + packet + [0xDE, 0xAD, 0xBE, 0xEF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]),
                       .badBlockLength(block: 4, type: 0xDEAD_BEEF, length: 0xFFFF_FFFF, at: at + packet.count))
        XCTAssertEqual(PcapError.blockLengthMismatch(block: 3, first: 44, last: 40, at: 48).description,
                       "pcapng: block 3 at offset 48 has total length 44 at its start and 40 at its end")
    }

    // MARK: link types

    func testLinuxMonitorReadsOneControllerAndSkipsIndexAndNoteRecords() throws {
        func monitor(_ index: UInt16, _ opcode: UInt16, _ payload: [UInt8]) -> [UInt8] {
            [UInt8(index >> 8), UInt8(index & 0xFF), UInt8(opcode >> 8), UInt8(opcode & 0xFF)] + payload
        }
        let newIndex = monitor(0, 0, [0x00, 0x00, 1, 2, 3, 4, 5, 6] + Array("hci0".utf8) + [0, 0, 0, 0])
        let note = monitor(0xFFFF, 12, Array("Bluetooth daemon 5.66".utf8) + [0])
        let bytes = Self.pcap(linkType: 254, bigEndian: false, records: [
            (1, 0, newIndex, nil), (1, 1, note, nil),
            (1, 2, monitor(0, 2, Array(scanEnable.dropFirst())), nil), (1, 3, monitor(0, 3, Array(commandComplete.dropFirst())), nil),
            (1, 4, monitor(0, 5, [0x40, 0x20, 0x01, 0x00, 0xAA]), nil),
        ])
        let file = try CaptureFile.decode(bytes)
        XCTAssertEqual(file.recordCount, 5)
        XCTAssertEqual(file.packets.map(\.record), [3, 4, 5])
        XCTAssertEqual(file.packets.map(\.frame), [scanEnable, commandComplete, [0x02, 0x40, 0x20, 0x01, 0x00, 0xAA]])
        XCTAssertEqual(file.packets.map(\.direction), [.hostToController, .controllerToHost, .controllerToHost])
        // HCI packets of hci0 and hci1: refused, naming both.
        let two = Self.pcap(linkType: 254, bigEndian: true, records: [
            (1, 0, monitor(0, 2, Array(scanEnable.dropFirst())), nil), (1, 1, monitor(1, 2, Array(scanEnable.dropFirst())), nil),
            (1, 2, monitor(1, 3, Array(commandComplete.dropFirst())), nil),
        ])
        XCTAssertThrowsError(try CaptureFile.decode(two)) { error in
            XCTAssertEqual(error as? CaptureError, .severalControllers(indexes: [0: 1, 1: 2]))
            XCTAssertEqual("\(error)", "the Linux monitor capture holds the HCI traffic of several controllers: hci0 (1 packets), hci1 (2 packets); "
                           + "the importer reads one: choose it with --controller N (or capture one with btmon -i hciN)")
        }
        // --controller 1: hci1's packets only, in both readings; a controller it does not hold is named.
        for strict in [true, false] {
            let one = try CaptureFile.decode(two, strict: strict, controller: 1)
            XCTAssertEqual(one.packets.map(\.record), [2, 3])
            XCTAssertEqual(one.selectedController, 1)
        }
        XCTAssertThrowsError(try CaptureFile.decode(two, controller: 2)) { error in
            XCTAssertEqual("\(error)", "--controller 2: the capture holds no HCI traffic of hci2; it holds hci0 (1 packets), hci1 (2 packets)")
        }
    }

    func testH4WithoutDirectionPlacesATTByOpcodeAndRoleAndReportsTheRest() throws {
        // LE Connection Complete, handle 0x0040, role 1 (the host is peripheral, so the GATT server).
        let connected: [UInt8] = [0x04, 0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x01] + [UInt8](repeating: 0, count: 15)
        // ATT Write Request (0x12) from the client on 0x0040: received by this host.
        let writeRequest: [UInt8] = [0x02, 0x40, 0x20, 0x08, 0x00, 0x04, 0x00, 0x04, 0x00, 0x12, 0x03, 0x00, 0x01]
        // Its Write Response: sent by this host.
        let writeResponse: [UInt8] = [0x02, 0x40, 0x20, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x13]
        // A notification (0x1B) on 0x0041, no connection event seen: the host is taken as the client.
        let notification: [UInt8] = [0x02, 0x41, 0x20, 0x09, 0x00, 0x07, 0x00, 0x04, 0x00, 0x1B, 0x03, 0x00, 0xAA]
        // A continuing fragment on 0x0041 goes the same way; an SMP Pairing Request cannot be placed.
        let continuation: [UInt8] = [0x02, 0x41, 0x10, 0x02, 0x00, 0xBB, 0xCC]
        let smp: [UInt8] = [0x02, 0x40, 0x20, 0x0B, 0x00, 0x07, 0x00, 0x06, 0x00, 0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07]
        let be = false
        let bytes = Self.shb(be) + Self.idb(linkType: 187, be)
            + [scanEnable, connected, writeRequest, writeResponse, notification, continuation, smp].enumerated()
            .flatMap { Self.epb(interface: 0, timestamp: UInt64($0.offset), $0.element, be) }
        let file = try CaptureFile.decode(bytes)
        XCTAssertEqual(file.packets.map(\.record), [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(file.packets.map(\.direction),
                       [.hostToController, .controllerToHost, .controllerToHost, .hostToController, .controllerToHost, .controllerToHost])
        XCTAssertEqual(file.undirectedRecords, [7])
        XCTAssertEqual(file.assumedClientHandles, [0x41])
    }

    /// Air packets are read as an air capture (AirCaptureTests); the HCI reader refuses them.
    func testAirPacketsInTheHCIReaderAndOtherLinkTypesAreRefusedNamingTheLinkType() throws {
        for linkType: UInt32 in [251, 256, 272] {
            let bytes = Self.pcap(linkType: linkType, bigEndian: true, records: [(1, 0, [0xD6, 0xBE, 0x89, 0x8E, 0x00, 0x00], nil)])
            XCTAssertThrowsError(try PcapHCI.captureFile(PcapReader.decode(bytes))) { e in
                XCTAssertEqual(e as? PcapError, .airCapture(PcapLinkType(rawValue: linkType), record: 1, at: 24))
                XCTAssertTrue("\(e)".contains("link type \(PcapLinkType(rawValue: linkType)) is an air capture's"), "\(e)")
                XCTAssertTrue("\(e)".contains("either as HCI or as an air capture"), "\(e)")
            }
        }
        XCTAssertEqual(PcapLinkType(rawValue: 256).description, "256 (BLUETOOTH_LE_LL_WITH_PHDR)")
        let ethernet = Self.pcap(linkType: 1, bigEndian: true, records: [(1, 0, [0, 1, 2], nil)])
        XCTAssertEqual(error(ethernet), .unsupportedLinkType(PcapLinkType(rawValue: 1), record: 1, at: 24))
    }

    func testUnknownFormatsListEveryFormat() throws {
        do {
            _ = try CaptureFile.decode(Array("GIF89a, not a capture".utf8))
            XCTFail("decoded")
        } catch {
            XCTAssertTrue("\(error)".hasPrefix("not a btsnoop, PacketLogger, pcap or pcapng file"), "\(error)")
        }
    }

    // MARK: round trip

    /// The lab's own captures rewritten as pcapng, link type 201, import to the scenario the
    /// btsnoop gives (the header line naming the format aside).
    func testLabCapturesAsPcapngImportToTheSameScenarioAsTheirBTSnoop() throws {
        let fixture = try FileText.readBytes(repositoryRoot + "/Tests/TransportTests/Fixtures/central.btsnoop")
        let run = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml")))
        for (name, btsnoop) in [("fixture", fixture), ("hm10-serial", run)] {
            let file = try BTSnoopReader.decode(btsnoop)
            for be in [true, false] {
                var pcapng = Self.shb(be) + Self.idb(linkType: 201, be)
                for record in file.records {
                    guard let frame = record.h4Frame else { continue }
                    let micros = UInt64(clamping: BTSnoopTime.unixMicroseconds(of: record.timestamp))
                    pcapng += Self.epb(interface: 0, timestamp: micros, Self.phdr(record.direction, frame), be)
                }
                func body(_ yaml: String) -> [Substring] { yaml.split(separator: "\n").filter { !$0.hasPrefix("# (") } }
                let reference = try CaptureImporter.importCapture(btsnoop, source: "c").yaml
                let (result, _) = try importAndLoad(pcapng, source: "c")
                XCTAssertEqual(body(result.yaml), body(reference), name)
                XCTAssertTrue(result.yaml.contains("(pcapng, link type 201 (BLUETOOTH_HCI_H4_WITH_PHDR)"), name)
            }
        }
    }
}

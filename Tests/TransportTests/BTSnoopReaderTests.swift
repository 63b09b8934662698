import BLERuntime
import HCI
import Transport
import XCTest

/// The reader against real captures from another stack (Bumble), and against datalinks 1001 and
/// 2001 built by hand from their definitions (Wireshark wiretap/btsnoop.c, BlueZ src/shared/btsnoop.c).
final class BTSnoopReaderTests: XCTestCase {
    func testReferenceCapturesEqualTheirListingsPacketByPacket() throws {
        for name in ["central", "peripheral"] {
            let file = try BTSnoopReader.decode(BTSnoopFixtures.bytes("\(name).btsnoop"))
            let listing = try BTSnoopFixtures.listing("\(name).txt")
            XCTAssertEqual(file.datalink, .hciUART, name)
            XCTAssertGreaterThan(listing.count, 100, name)
            XCTAssertEqual(file.records.count, listing.count, name)
            for (record, listed) in zip(file.records, listing) {
                let at = "\(name) packet \(listed.number) (\(listed.summary))"
                XCTAssertEqual(record.data, listed.h4, at)
                XCTAssertEqual(record.direction, listed.direction, at)
                XCTAssertEqual(record.originalLength, UInt32(listed.h4.count), at)
                XCTAssertEqual(record.drops, 0, at)
                // The listing's "Sent"/"Rcvd" summary and the flags' command/event bit agree.
                XCTAssertEqual(listed.summary.hasPrefix("Sent"), record.direction == .hostToController, at)
                let indicator = listed.h4.first
                XCTAssertEqual(record.isCommandOrEvent, indicator == 0x01 || indicator == 0x04, at)
                XCTAssertEqual(record.flags, BTSnoopFlags.forH4(listed.h4, direction: listed.direction), at)
                // Every frame is one whole HCI packet our decoder accepts.
                XCTAssertNoThrow(try HCIPacket(h4: listed.h4), at)
            }
        }
    }

    func testReferenceTimestampsAreMonotonicWallClockTimes() throws {
        let file = try BTSnoopReader.decode(BTSnoopFixtures.bytes("central.btsnoop"))
        let first = try XCTUnwrap(file.records.first)
        // 0x00e33f1e916dedc6 is 1 795 964 234.788294 s after 1970: the capture was made in late 2026.
        XCTAssertEqual(first.timestamp, 0x00e3_3f1e_916d_edc6)
        XCTAssertEqual(BTSnoopTime.unixMicroseconds(of: first.timestamp), 1_795_964_234_788_294)
        for (a, b) in zip(file.records, file.records.dropFirst()) { XCTAssertLessThanOrEqual(a.timestamp, b.timestamp) }
        // Relative to the first record, the session starts at zero and takes well under a minute.
        let packets = file.loggedPackets(relativeTo: first.timestamp)
        XCTAssertEqual(packets.first?.time, .zero)
        XCTAssertEqual(packets[1].time, Instant(nanoseconds: 204_000))   // 0x…ee92 − 0x…edc6 = 204 µs
        XCTAssertLessThan(try XCTUnwrap(packets.last).time, .zero + .seconds(60))
    }

    func testReferenceCapturesReencodeToTheirOwnBytes() throws {
        for name in ["central.btsnoop", "peripheral.btsnoop"] {
            let bytes = try BTSnoopFixtures.bytes(name)
            XCTAssertEqual(BTSnoopWriter.encode(try BTSnoopReader.decode(bytes)), bytes, name)
        }
    }

    func testReferenceCapturesAsLoggedPacketsRewriteAsTheSameRecords() throws {
        // Bumble's writer and ours agree on lengths, flags, drops and data: with the capture's first
        // timestamp as the time base, our encoding of its packets reproduces Bumble's file exactly.
        let bytes = try BTSnoopFixtures.bytes("peripheral.btsnoop")
        let file = try BTSnoopReader.decode(bytes)
        let origin = try XCTUnwrap(file.records.first).timestamp
        XCTAssertEqual(BTSnoopWriter.encode(file.loggedPackets(relativeTo: origin), timeBase: origin), bytes)
    }

    func testDatalink1001TakesThePacketTypeFromTheFlags() throws {
        var bytes = Array("btsnoop".utf8) + [0x00, 0, 0, 0, 1, 0, 0, 0x03, 0xe9]   // version 1, datalink 1001
        func record(flags: UInt32, _ data: [UInt8]) {
            let n = UInt32(data.count)
            for v in [n, n, flags, 0] { bytes += [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
            bytes += [0x00, 0xe0, 0x3a, 0xb4, 0x4a, 0x67, 0x60, 0x00]   // lab epoch
            bytes += data
        }
        record(flags: 0b10, [0x03, 0x0c, 0x00])                   // command, sent: Reset
        record(flags: 0b11, [0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00]) // event, received
        record(flags: 0b00, [0x40, 0x00, 0x01, 0x00, 0xaa])       // ACL, sent
        record(flags: 0b01, [0x40, 0x20, 0x01, 0x00, 0xbb])       // ACL, received
        let file = try BTSnoopReader.decode(bytes)
        XCTAssertEqual(file.datalink, .hciUnencapsulated)
        XCTAssertEqual(file.records.map(\.packetType), [.command, .event, .acl, .acl])
        XCTAssertEqual(file.records.map(\.direction), [.hostToController, .controllerToHost, .hostToController, .controllerToHost])
        XCTAssertEqual(file.records.map(\.isCommandOrEvent), [true, true, false, false])
        XCTAssertEqual(file.loggedPackets().map(\.frame), [
            [0x01, 0x03, 0x0c, 0x00],
            [0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00],
            [0x02, 0x40, 0x00, 0x01, 0x00, 0xaa],
            [0x02, 0x40, 0x20, 0x01, 0x00, 0xbb],
        ])
        XCTAssertEqual(file.loggedPackets().map(\.time), Array(repeating: Instant.zero, count: 4))
        XCTAssertEqual(BTSnoopWriter.encode(file), bytes)
    }

    func testDatalink2001DecodesMonitorOpcodesAndIndex() throws {
        var bytes = Array("btsnoop".utf8) + [0x00, 0, 0, 0, 1, 0, 0, 0x07, 0xd1]   // version 1, datalink 2001
        func record(index: UInt16, opcode: UInt16, _ data: [UInt8], at us: Int64 = 0) {
            let n = UInt32(data.count)
            let flags = UInt32(index) << 16 | UInt32(opcode)   // BlueZ: (index << 16) | opcode
            for v in [n, n, flags, 0] { bytes += [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
            let t = UInt64(BTSnoopTime.labEpoch + us)
            for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(t >> UInt64(s) & 0xff)) }
            bytes += data
        }
        // New Index: type primary, bus virtual, address, name "hci1"
        record(index: 1, opcode: 0, [0x00, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11] + Array("hci1".utf8) + [0, 0, 0, 0])
        record(index: 1, opcode: 2, [0x03, 0x0c, 0x00], at: 10)                   // command: Reset
        record(index: 1, opcode: 3, [0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00], at: 20) // event
        record(index: 1, opcode: 4, [0x40, 0x00, 0x01, 0x00, 0xaa], at: 30)       // ACL TX
        record(index: 1, opcode: 5, [0x40, 0x20, 0x01, 0x00, 0xbb], at: 40)       // ACL RX
        record(index: 0xffff, opcode: 12, Array("note\0".utf8), at: 50)           // System Note
        record(index: 1, opcode: 19, [0x60, 0x00, 0x00, 0x00], at: 60)            // ISO RX

        let file = try BTSnoopReader.decode(bytes)
        XCTAssertEqual(file.datalink, .linuxMonitor)
        XCTAssertEqual(file.records.map(\.monitorOpcode), [.newIndex, .commandPacket, .eventPacket, .aclTransmit,
                                                           .aclReceive, .systemNote, .isoReceive])
        XCTAssertEqual(file.records.map(\.adapterIndex), [1, 1, 1, 1, 1, 0xffff, 1])
        XCTAssertEqual(file.records.map(\.packetType), [nil, .command, .event, .acl, .acl, nil, .iso])
        XCTAssertEqual(file.records.map(\.isCommandOrEvent), [false, true, true, false, false, false, false])
        XCTAssertEqual(file.records.map(\.direction), [.controllerToHost, .hostToController, .controllerToHost,
                                                       .hostToController, .controllerToHost, .controllerToHost, .controllerToHost])
        XCTAssertNil(file.records[0].h4Frame)
        XCTAssertNil(file.records[0].loggedPacket())
        let packets = file.loggedPackets()   // index and note records are not HCI packets: skipped
        XCTAssertEqual(packets.map(\.frame), [
            [0x01, 0x03, 0x0c, 0x00],
            [0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00],
            [0x02, 0x40, 0x00, 0x01, 0x00, 0xaa],
            [0x02, 0x40, 0x20, 0x01, 0x00, 0xbb],
            [0x05, 0x60, 0x00, 0x00, 0x00],
        ])
        XCTAssertEqual(packets.map(\.time.nanoseconds), [10_000, 20_000, 30_000, 40_000, 60_000])
        XCTAssertEqual(BTSnoopWriter.encode(file), bytes)
    }

    func testMonitorOpcodeTables() {
        for opcode in (0...25).map({ BTSnoopMonitorOpcode(rawValue: $0) }) {
            guard let carried = opcode.hciPacket else { continue }
            XCTAssertEqual(BTSnoopMonitorOpcode.carrying(carried.type, direction: carried.direction), opcode)
        }
        XCTAssertNil(BTSnoopMonitorOpcode.carrying(.event, direction: .hostToController))
        XCTAssertNil(BTSnoopMonitorOpcode.carrying(.command, direction: .controllerToHost))
        XCTAssertEqual(BTSnoopMonitorOpcode.aclReceive.description, "ACL RX")
        XCTAssertEqual(BTSnoopMonitorOpcode(rawValue: 99).description, "opcode 99")
        XCTAssertEqual(BTSnoopDatalink.linuxMonitor.description, "2001 (Linux monitor)")
        XCTAssertEqual(BTSnoopDatalink(rawValue: 7).description, "7 (unknown)")
    }

    func testEmptyH4RecordIsKeptButIsNoPacket() throws {
        var bytes = BTSnoopWriter.header()
        bytes += [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]   // zero-length record
        let file = try BTSnoopReader.decode(bytes)
        XCTAssertEqual(file.records.count, 1)
        XCTAssertNil(file.records[0].packetType)
        XCTAssertEqual(file.loggedPackets(), [])
    }

    func testTruncatedSnapshotsKeepTheirOriginalLength() throws {
        // Included < original is legal (a capture cut at a snapshot length).
        var bytes = BTSnoopWriter.header()
        bytes += [0, 0, 0, 9, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0]
        bytes += [0x02, 0x40, 0x00, 0x04]
        let record = try XCTUnwrap(BTSnoopReader.decode(bytes).records.first)
        XCTAssertEqual(record.originalLength, 9)
        XCTAssertEqual(record.data.count, 4)
        XCTAssertEqual(record.drops, 5)
        XCTAssertEqual(BTSnoopWriter.encode(try BTSnoopReader.decode(bytes)), bytes)
    }
}

import BLERuntime
import Foundation
import HCI
import Transport
import XCTest

/// The btsnoop writer: exact bytes, the lab time base, determinism, round trips through the reader,
/// and the streaming file form.
final class BTSnoopWriterTests: XCTestCase {
    private let reset = LoggedPacket(time: .zero, direction: .hostToController, frame: [0x01, 0x03, 0x0c, 0x00])
    private let resetComplete = LoggedPacket(time: Instant(nanoseconds: 1_500_999), direction: .controllerToHost,
                                             frame: [0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00])
    private let aclIn = LoggedPacket(time: Instant(nanoseconds: 2_000_000), direction: .controllerToHost,
                                     frame: [0x02, 0x40, 0x20, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x13])

    func testExactBytesOfAHandBuiltLog() {
        XCTAssertEqual(BTSnoopWriter.encode([reset, resetComplete, aclIn]), [
            // File header
            0x62, 0x74, 0x73, 0x6e, 0x6f, 0x6f, 0x70, 0x00,   // identification pattern "btsnoop\0"
            0x00, 0x00, 0x00, 0x01,                           // version 1
            0x00, 0x00, 0x03, 0xea,                           // datalink 1002: HCI UART (H4)

            // Record 1: Reset, sent at lab time 0
            0x00, 0x00, 0x00, 0x04,                           // original length 4
            0x00, 0x00, 0x00, 0x04,                           // included length 4
            0x00, 0x00, 0x00, 0x02,                           // flags: sent (bit 0 clear), command (bit 1 set)
            0x00, 0x00, 0x00, 0x00,                           // cumulative drops 0
            0x00, 0xe0, 0x3a, 0xb4, 0x4a, 0x67, 0x60, 0x00,   // 2000-01-01T00:00:00Z: BTSnoopTime.labEpoch
            0x01, 0x03, 0x0c, 0x00,                           // H4 frame: command, Reset, no parameters

            // Record 2: Command Complete, received at 1 500 999 ns (floored to 1 500 µs)
            0x00, 0x00, 0x00, 0x07,                           // original length 7
            0x00, 0x00, 0x00, 0x07,                           // included length 7
            0x00, 0x00, 0x00, 0x03,                           // flags: received (bit 0), event (bit 1)
            0x00, 0x00, 0x00, 0x00,                           // cumulative drops 0
            0x00, 0xe0, 0x3a, 0xb4, 0x4a, 0x67, 0x65, 0xdc,   // lab epoch + 1 500 (0x5dc) µs
            0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00,         // H4 frame: event, Command Complete (Reset)

            // Record 3: ACL data, received at 2 ms
            0x00, 0x00, 0x00, 0x0a,                           // original length 10
            0x00, 0x00, 0x00, 0x0a,                           // included length 10
            0x00, 0x00, 0x00, 0x01,                           // flags: received (bit 0), data (bit 1 clear)
            0x00, 0x00, 0x00, 0x00,                           // cumulative drops 0
            0x00, 0xe0, 0x3a, 0xb4, 0x4a, 0x67, 0x67, 0xd0,   // lab epoch + 2 000 (0x7d0) µs
            0x02, 0x40, 0x20, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x13,   // H4 frame: ACL, ATT Write Response
        ])
    }

    func testEmptyLogIsJustTheHeader() {
        XCTAssertEqual(BTSnoopWriter.encode([]), BTSnoopWriter.header())
        XCTAssertEqual(BTSnoopWriter.header().count, 16)
    }

    func testFlagsForEveryH4Type() {
        // Wireshark's writer: bit 1 only for indicators 0x01 (command) and 0x04 (event).
        XCTAssertEqual(BTSnoopFlags.forH4([0x01, 0, 0, 0], direction: .hostToController), 0b10)
        XCTAssertEqual(BTSnoopFlags.forH4([0x04, 0, 0], direction: .controllerToHost), 0b11)
        XCTAssertEqual(BTSnoopFlags.forH4([0x02, 0, 0, 0, 0], direction: .hostToController), 0b00)
        XCTAssertEqual(BTSnoopFlags.forH4([0x02, 0, 0, 0, 0], direction: .controllerToHost), 0b01)
        XCTAssertEqual(BTSnoopFlags.forH4([0x03, 0, 0, 0], direction: .controllerToHost), 0b01)
        XCTAssertEqual(BTSnoopFlags.forH4([0x05, 0, 0, 0, 0], direction: .hostToController), 0b00)
        XCTAssertEqual(BTSnoopFlags.forH4([], direction: .controllerToHost), 0b01)
    }

    func testTimeBaseConstants() {
        // BlueZ subtracts 0x00E03AB44A676000 to get time since 2000-01-01; Wireshark 0x00dcddb30f2f8000
        // for 1970-01-01. Both must agree with the 946 684 800 s between the two dates.
        XCTAssertEqual(BTSnoopTime.unixEpoch, 0x00dc_ddb3_0f2f_8000)
        XCTAssertEqual(BTSnoopTime.labEpoch, 0x00e0_3ab4_4a67_6000)
        XCTAssertEqual(BTSnoopTime.unixMicroseconds(of: BTSnoopTime.labEpoch), 946_684_800_000_000)
        // The constant is 719 540 days of 86 400 s, not the 719 528 days from 0000-01-01 to 1970-01-01
        // in the proleptic Gregorian calendar: the tools' shared constant, not the calendar, defines
        // the format, so BLELab uses the constant.
        XCTAssertEqual(BTSnoopTime.unixEpoch, 719_540 * 86_400 * 1_000_000)
    }

    func testInstantToTimestampFloorsToTheMicrosecondAndSaturates() {
        let base = BTSnoopTime.labEpoch
        XCTAssertEqual(BTSnoopTime.timestamp(of: Instant(nanoseconds: 999)), base)
        XCTAssertEqual(BTSnoopTime.timestamp(of: Instant(nanoseconds: 1_000)), base + 1)
        XCTAssertEqual(BTSnoopTime.timestamp(of: Instant(nanoseconds: -1)), base - 1)
        XCTAssertEqual(BTSnoopTime.timestamp(of: Instant(nanoseconds: -1_000)), base - 1)
        XCTAssertEqual(BTSnoopTime.timestamp(of: Instant(nanoseconds: -1_001)), base - 2)
        XCTAssertEqual(BTSnoopTime.timestamp(of: .distantFuture, base: .max - 5), .max)
        XCTAssertEqual(BTSnoopTime.timestamp(of: Instant(nanoseconds: 7_000), base: 0), 7)

        XCTAssertEqual(BTSnoopTime.instant(of: base + 1_500), Instant(nanoseconds: 1_500_000))
        XCTAssertEqual(BTSnoopTime.instant(of: .max, base: .min), Instant(nanoseconds: .max))
        XCTAssertEqual(BTSnoopTime.instant(of: .min, base: .max), Instant(nanoseconds: .min))
        XCTAssertEqual(BTSnoopTime.instant(of: base + (Int64.max / 1_000) + 1), Instant(nanoseconds: .max))
    }

    func testSameLogGivesIdenticalBytes() {
        let session = HandBuiltSession.packets
        XCTAssertEqual(BTSnoopWriter.encode(session), BTSnoopWriter.encode(session))
        var later = session
        later[3].time = later[3].time + .microseconds(1)
        XCTAssertNotEqual(BTSnoopWriter.encode(session), BTSnoopWriter.encode(later))
    }

    func testRoundTripThroughTheReader() throws {
        let session = HandBuiltSession.packets
        let file = try BTSnoopReader.decode(BTSnoopWriter.encode(session))
        XCTAssertEqual(file.datalink, .hciUART)
        XCTAssertEqual(file.records.count, session.count)
        XCTAssertEqual(file.loggedPackets(), session)   // microsecond times come back exactly
        for (record, packet) in zip(file.records, session) {
            XCTAssertEqual(record.direction, packet.direction)
            XCTAssertEqual(record.data, packet.frame)
            XCTAssertEqual(record.h4Frame, packet.frame)
            XCTAssertEqual(record.originalLength, UInt32(packet.frame.count))
            XCTAssertEqual(record.drops, 0)
            XCTAssertEqual(record.packetType?.rawValue, packet.frame.first)
            XCTAssertEqual(record.isCommandOrEvent, packet.frame.first == 0x01 || packet.frame.first == 0x04)
            XCTAssertNil(record.monitorOpcode)
        }
        // And re-encoding the decoded file gives the same bytes.
        XCTAssertEqual(BTSnoopWriter.encode(file), BTSnoopWriter.encode(session))
    }

    func testSubMicrosecondTimesRoundTripFloored() throws {
        let packet = LoggedPacket(time: Instant(nanoseconds: 12_345_678), direction: .controllerToHost, frame: [0x04, 0x0e, 0x00])
        let back = try BTSnoopReader.decode(BTSnoopWriter.encode([packet])).loggedPackets()
        XCTAssertEqual(back.map(\.time), [Instant(nanoseconds: 12_345_000)])
    }

    func testCustomTimeBase() throws {
        let bytes = BTSnoopWriter.encode([reset], timeBase: BTSnoopTime.unixEpoch)
        let file = try BTSnoopReader.decode(bytes)
        XCTAssertEqual(file.records[0].timestamp, BTSnoopTime.unixEpoch)
        XCTAssertEqual(file.loggedPackets(relativeTo: BTSnoopTime.unixEpoch)[0].time, .zero)
    }

    func testWriteToAPathAndStreamingGiveTheSameBytesAsEncode() throws {
        let dir = try scratchFolder(self)
        let session = HandBuiltSession.packets
        let whole = dir.appendingPathComponent("whole.btsnoop").path
        try BTSnoopWriter.write(session, to: whole)
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: whole))), BTSnoopWriter.encode(session))

        // A tiny buffer makes every append reach the disk, exercising partial flushes.
        let streamed = dir.appendingPathComponent("streamed.btsnoop").path
        let stream = try BTSnoopStreamWriter(path: streamed, bufferLimit: 8)
        for packet in session { try stream.append(packet) }
        try stream.close()
        XCTAssertEqual(stream.packetCount, session.count)
        XCTAssertTrue(stream.isClosed)
        XCTAssertEqual(try BTSnoopReader.read(path: streamed), try BTSnoopReader.decode(BTSnoopWriter.encode(session)))
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: streamed))), BTSnoopWriter.encode(session))
    }

    func testStreamingCapturesAPacketLogAsItGrows() throws {
        let dir = try scratchFolder(self)
        let path = dir.appendingPathComponent("live.btsnoop").path
        let log = PacketLog(keepsPackets: false)   // a long run keeps nothing in memory
        let stream = try BTSnoopStreamWriter(path: path)
        stream.capture(log)
        for packet in HandBuiltSession.packets { log.record(packet) }
        try stream.close()
        log.record(HandBuiltSession.packets[0])   // after close: ignored, not an error
        XCTAssertEqual(try BTSnoopReader.read(path: path).loggedPackets(), HandBuiltSession.packets)
        XCTAssertNil(stream.failure)
    }

    func testAppendAfterCloseThrowsNamingThePath() throws {
        let dir = try scratchFolder(self)
        let path = dir.appendingPathComponent("closed.btsnoop").path
        let stream = try BTSnoopStreamWriter(path: path)
        try stream.close()
        try stream.close()   // closing twice is harmless
        XCTAssertThrowsError(try stream.append(reset)) { error in
            XCTAssertEqual((error as? BTSnoopFileError)?.path, path)
        }
    }

    func testFileErrorsNameThePathAndTheReason() throws {
        let dir = try scratchFolder(self)
        let missing = dir.appendingPathComponent("no/such/folder/capture.btsnoop").path
        XCTAssertThrowsError(try BTSnoopWriter.write([reset], to: missing)) { error in
            guard let error = error as? BTSnoopFileError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.path, missing)
            XCTAssertEqual(error.errno, ENOENT)
            XCTAssertTrue(error.description.contains(missing), error.description)
            XCTAssertTrue(error.description.contains("No such file or directory"), error.description)
        }
        XCTAssertThrowsError(try BTSnoopReader.read(path: missing)) { error in
            XCTAssertEqual((error as? BTSnoopFileError)?.path, missing)
            XCTAssertEqual((error as? BTSnoopFileError)?.operation, "open for reading")
        }
        // A folder opens for reading but cannot be read as a file.
        XCTAssertThrowsError(try BTSnoopReader.read(path: dir.path)) { error in
            XCTAssertEqual((error as? BTSnoopFileError)?.errno, EISDIR)
        }
    }

    func testWriteFailureSeenByCaptureSurfacesOnClose() throws {
        guard FileManager.default.isWritableFile(atPath: "/dev/full") else { return }
        // /dev/full accepts the open and fails every write with ENOSPC.
        let log = PacketLog()
        let stream = try BTSnoopStreamWriter(path: "/dev/full", bufferLimit: 1)
        stream.capture(log)
        log.record(reset)
        XCTAssertEqual(stream.failure?.errno, ENOSPC)
        XCTAssertEqual(stream.failure?.path, "/dev/full")
        XCTAssertThrowsError(try stream.close())
    }
}

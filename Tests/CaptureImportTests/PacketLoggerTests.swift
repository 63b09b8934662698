import CaptureImport
import HCI
import Transport
import XCTest

/// Apple's PacketLogger format: both byte orders, records that are not HCI packets skipped, and
/// every defect a typed error naming the offset.
final class PacketLoggerTests: XCTestCase {
    // A record: length 0x0000000D (9 + 4), 1 s, 2 µs, type 0x00 (command), HCI Reset (03 0c 00)
    // would be 3 octets; here LE Set Scan Enable (0c 20 02 01 00) is 5: length 9 + 5 = 14.
    let command: [UInt8] = [0x00, 0x00, 0x00, 0x0E,  0x00, 0x00, 0x00, 0x01,  0x00, 0x00, 0x00, 0x02,  0x00,
                            0x0C, 0x20, 0x02, 0x01, 0x00]
    // A note (0xFC) "hi": length 11.
    let note: [UInt8] = [0x00, 0x00, 0x00, 0x0B,  0x00, 0x00, 0x00, 0x01,  0x00, 0x00, 0x00, 0x03,  0xFC, 0x68, 0x69]
    // An event, Command Complete for it (0e 04 01 0c 20 00): length 15, 1 s, 10 µs, type 0x01.
    let event: [UInt8] = [0x00, 0x00, 0x00, 0x0F,  0x00, 0x00, 0x00, 0x01,  0x00, 0x00, 0x00, 0x0A,  0x01,
                          0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]

    func testBigEndianRecordsDecodeWithTypesTimesAndNotesSkipped() throws {
        let file = try CaptureFile.decode(command + note + event)
        XCTAssertEqual(file.format, .packetLogger(bigEndian: true))
        XCTAssertEqual(file.recordCount, 3)
        XCTAssertEqual(file.packets.map(\.record), [1, 3])
        XCTAssertEqual(file.packets.map(\.offset), [0, command.count + note.count])
        XCTAssertEqual(file.packets.map(\.time), [0, 8])
        XCTAssertEqual(file.packets.map(\.direction), [.hostToController, .controllerToHost])
        XCTAssertEqual(file.packets[0].frame, [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00])
        XCTAssertEqual(file.packets[1].frame, [0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00])
    }

    func testLittleEndianFilesAreRecognisedByTheirFirstLength() throws {
        func swapped(_ r: [UInt8]) -> [UInt8] {
            Array(r[0..<4].reversed()) + Array(r[4..<8].reversed()) + Array(r[8..<12].reversed()) + Array(r[12...])
        }
        let file = try CaptureFile.decode(swapped(command) + swapped(note) + swapped(event))
        XCTAssertEqual(file.format, .packetLogger(bigEndian: false))
        XCTAssertEqual(file.packets.map(\.frame), try CaptureFile.decode(command + note + event).packets.map(\.frame))
    }

    func testTheWriterRoundTripsALabCaptureInBothOrders() throws {
        let btsnoop = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml")))
        let frames = try BTSnoopReader.decode(btsnoop).records.compactMap(\.h4Frame)
        for bigEndian in [true, false] {
            let file = try CaptureFile.decode(try packetLogger(btsnoop, bigEndian: bigEndian))
            XCTAssertEqual(file.packets.map(\.frame), frames)
            XCTAssertEqual(file.recordCount, frames.count + 1)   // the note
        }
    }

    func testDefectsAreTypedErrorsWithTheirOffset() {
        func error(_ bytes: [UInt8]) -> CaptureError? {
            do { _ = try CaptureFile.decode(bytes); return nil } catch { return error as? CaptureError }
        }
        let two = command + event
        // Cut inside the second record's header, and inside its data.
        XCTAssertEqual(error(Array(two.prefix(command.count + 7))), .packetLogger(.truncatedRecordHeader(available: 7, at: command.count)))
        XCTAssertEqual(error(Array(two.dropLast(2))),
                       .packetLogger(.truncatedRecordData(needed: 6, available: 4, at: command.count + 13)))
        // A length below 9 or beyond any HCI packet in the second record.
        var short = two
        short[command.count + 3] = 0x08
        XCTAssertEqual(error(short), .packetLogger(.badRecordLength(8, at: command.count)))
        var long = two
        long[command.count + 1] = 0x7F
        XCTAssertEqual(error(long), .packetLogger(.badRecordLength(0x007F_000F, at: command.count)))
        // Microseconds past a second.
        var time = two
        time[command.count + 9] = 0x7F
        XCTAssertEqual(error(time), .packetLogger(.badTimestamp(microseconds: 0x007F_000A, at: command.count)))
        // Neither btsnoop nor PacketLogger.
        guard case .packetLogger(.notPacketLogger)? = error(Array("GIF89a, not a capture".utf8)) else {
            return XCTFail("\(String(describing: error(Array("GIF89a, not a capture".utf8))))")
        }
        XCTAssertEqual(error([]), .packetLogger(.empty))
        XCTAssertTrue(CaptureError.packetLogger(.truncatedRecordHeader(available: 7, at: 18)).description.contains("offset 18"))
    }
}

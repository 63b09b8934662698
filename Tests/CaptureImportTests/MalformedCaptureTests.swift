import BLELabTestSupport
import CaptureImport
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// Unreadable captures: each gives a typed error naming the byte offset, and `blelab import
/// --strict` exits 2 (TolerantReadingTests: what `blelab import` does without `--strict`).
final class MalformedCaptureTests: XCTestCase {
    var capture: [UInt8] = []
    /// Where each record of `capture` starts.
    var recordStarts: [Int] = []

    override func setUpWithError() throws {
        capture = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml")))
        recordStarts = []
        var offset = 16
        while offset < capture.count {
            recordStarts.append(offset)
            let included = Int(capture[offset + 4]) << 24 | Int(capture[offset + 5]) << 16 | Int(capture[offset + 6]) << 8 | Int(capture[offset + 7])
            offset += 24 + included
        }
    }

    private func error(_ bytes: [UInt8]) -> CaptureError? {
        do {
            _ = try CaptureImporter.importCapture(bytes, source: "bad", strict: true)
            return nil
        } catch {
            return error as? CaptureError
        }
    }

    func testTruncatedRecords() {
        let third = recordStarts[2]
        XCTAssertEqual(error(Array(capture.prefix(third + 10))), .btsnoop(.truncatedRecordHeader(available: 10, at: third)))
        let fourth = recordStarts[3]
        guard case let .btsnoop(.truncatedRecordData(_, available, at))? = error(Array(capture.prefix(fourth + 24 + 1))) else {
            return XCTFail("\(String(describing: error(Array(capture.prefix(fourth + 24 + 1)))))")
        }
        XCTAssertEqual(available, 1)
        XCTAssertEqual(at, fourth + 24)
        XCTAssertEqual(error(Array(capture.prefix(9))), .btsnoop(.truncatedHeader(available: 9, at: 0)))
    }

    func testWrongMagicUnsupportedVersionAndDatalink() {
        var magic = capture
        magic[3] = UInt8(ascii: "X")
        XCTAssertEqual(error(magic), .btsnoop(.wrongMagic(found: Array("btsXoop".utf8) + [0], at: 0)))
        var version = capture
        version[11] = 2
        XCTAssertEqual(error(version), .btsnoop(.unsupportedVersion(2, at: 8)))
        for datalink: UInt32 in [1003, 1004, 2002, 0x1234] {
            var bytes = capture
            bytes[12] = UInt8(datalink >> 24)
            bytes[13] = UInt8(datalink >> 16 & 0xFF)
            bytes[14] = UInt8(datalink >> 8 & 0xFF)
            bytes[15] = UInt8(datalink & 0xFF)
            XCTAssertEqual(error(bytes), .btsnoop(.unsupportedDatalink(BTSnoopDatalink(rawValue: datalink), at: 12)), "\(datalink)")
        }
    }

    func testBadLengths() {
        let r = recordStarts[5]
        // Included length past the end of the file (original raised with it).
        var past = capture
        past[r + 0] = 0x00; past[r + 1] = 0x00; past[r + 2] = 0xFF; past[r + 3] = 0xFF
        past[r + 4] = 0x00; past[r + 5] = 0x00; past[r + 6] = 0xFF; past[r + 7] = 0xFF
        XCTAssertEqual(error(past), .btsnoop(.truncatedRecordData(needed: 0xFFFF, available: capture.count - r - 24, at: r + 24)))
        // Included more than original.
        var more = capture
        more[r + 3] = 0x01
        guard case .btsnoop(.includedLengthExceedsOriginal(_, 1, r))? = error(more) else { return XCTFail("\(String(describing: error(more)))") }
        // A length no HCI packet can have.
        var huge = capture
        huge[r] = 0x10
        guard case .btsnoop(.recordTooLong(_, _, r))? = error(huge) else { return XCTFail("\(String(describing: error(huge)))") }
        // A record that keeps fewer octets than the packet had (Android's filtered log).
        var cut = capture
        cut[r + 3] &+= 1
        XCTAssertEqual(error(cut)?.offset, r)
        guard case .truncatedPacket(6, r, _, _)? = error(cut) else { return XCTFail("\(String(describing: error(cut)))") }
        // An HCI packet whose own length disagrees with the record's: the event's Parameter_Total_Length.
        let event = recordStarts.first { capture[$0 + 24] == 0x04 }!
        var inner = capture
        inner[event + 24 + 2] &+= 1
        guard case .malformedPacket(_, event, _)? = error(inner) else { return XCTFail("\(String(describing: error(inner)))") }
    }

    func testNoPacketsAndAPacketCutShort() throws {
        XCTAssertEqual(error(BTSnoopWriter.header()), .noPackets(records: 0))
        // One record (original 1, included 1, flags 3, drops 0, time 0) holding a lone event indicator.
        let lone = BTSnoopWriter.header() + [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 8) + [0x04]
        guard case .malformedPacket(1, 16, _)? = error(lone) else { return XCTFail("\(String(describing: error(lone)))") }
    }

    func testTheCLIExitsTwoNamingTheOffset() throws {
        let directory = try temporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/cut.btsnoop"
        try FileText.write(Array(capture.prefix(recordStarts[2] + 10)), to: path)
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["import", "--strict", path]), .badInput)
        XCTAssertEqual(cli.out, "")
        XCTAssertEqual(cli.err, "blelab: \(path): btsnoop: record header truncated at offset \(recordStarts[2]): 10 of 24 octets\n")
        // Without --strict the two records before the cut are read: they show nothing to import,
        // and the cut is listed after the error.
        XCTAssertEqual(cli.run(["import", path]), .badInput)
        XCTAssertEqual(cli.out, "")
        XCTAssertTrue(cli.err.hasPrefix("blelab: \(path): the capture's 2 HCI packets hold no scan"), cli.err)
        XCTAssertTrue(cli.err.contains("record 3 at offset \(recordStarts[2]) and the rest of the file (10 octets) not read: "
                                       + "btsnoop: record header truncated at offset \(recordStarts[2]): 10 of 24 octets"), cli.err)
        XCTAssertEqual(cli.run(["import", directory + "/missing.btsnoop"]), .badInput)
        XCTAssertTrue(cli.err.contains("missing.btsnoop"), cli.err)
    }
}

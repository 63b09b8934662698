import BLEWire
import HCI
import WireTestSupport
import XCTest

/// The L2CAP basic frame (Core 5.4, Vol 3, Part A, 3.1) and its reassembly from ACL fragments
/// (7.2; PB_Flag, Vol 4, Part E, 5.4.2).
final class L2CAPBasicFrameTests: XCTestCase {
    typealias Reassembler = L2CAPReassembler<UInt16>

    func testBasicFrameRoundTrip() throws {
        let frame = L2CAPBasicFrame(channel: L2CAPChannelID.att, payload: bytes("12 10 00 72 65 71"))
        let vector = bytes(
            "06 00",               // Length 6
            "04 00",               // Channel ID 0x0004 (ATT)
            "12 10 00 72 65 71"    // ATT Write Request handle 0x0010 "req"
        )
        XCTAssertEqual(frame.encoded, vector)
        XCTAssertEqual(try L2CAPBasicFrame(decoding: vector), frame)
        XCTAssertEqual(L2CAPChannelID.leSignaling, 0x0005)
        XCTAssertEqual(L2CAPChannelID.smp, 0x0006)
    }

    func testBasicFrameWhoseLengthDisagrees() {
        XCTAssertThrowsDecodeError(try L2CAPBasicFrame(decoding: bytes("05 00 04 00", "1b 19")),
                                   .lengthMismatch(field: "L2CAP Length", declared: 5, actual: 2))
        XCTAssertThrowsDecodeError(try L2CAPBasicFrame(decoding: bytes("05 00 04")), .truncated(needed: 2, available: 1, at: 2))
    }

    func testHeaderOfAStartFragment() {
        // A start fragment with 2 of its 9 payload octets: the header is all there.
        let header = L2CAPBasicFrame.header(of: bytes("02 ff", "09 00 04 00 1b 19"), at: 2)
        XCTAssertEqual(header?.length, 9)
        XCTAssertEqual(header?.channel, L2CAPChannelID.att)
        XCTAssertNil(L2CAPBasicFrame.header(of: bytes("09 00 04")))
        XCTAssertEqual(L2CAPBasicFrame.expectedSize(bytes("09 00")), 13)
        XCTAssertNil(L2CAPBasicFrame.expectedSize(bytes("09")))
    }

    func testWholeFrameInOneFragment() {
        var r = Reassembler()
        let outcome = r.feed(bytes("02 00 04 00 0a 03"), boundary: .firstFlushable, stream: 1)
        XCTAssertEqual(outcome.frame, L2CAPBasicFrame(channel: 4, payload: [0x0A, 0x03]))
        XCTAssertNil(outcome.problem)
        XCTAssertNil(outcome.droppedUnfinished)
        XCTAssertTrue(r.isEmpty)
    }

    /// Fragments split anywhere, even inside the header, interleaved with another stream.
    func testFragmentsOfTwoStreamsInterleaved() {
        var r = Reassembler()
        XCTAssertNil(r.feed(bytes("05"), boundary: .firstNonFlushable, stream: 1).frame)
        XCTAssertNil(r.feed(bytes("03 00 05"), boundary: .firstFlushable, stream: 2).frame)
        XCTAssertNil(r.feed(bytes("00 04 00 1b"), boundary: .continuing, stream: 1).frame)
        XCTAssertEqual(r.unfinished(1), bytes("05 00 04 00 1b"))
        XCTAssertEqual(r.feed(bytes("00 01 02 03"), boundary: .continuing, stream: 2).frame,
                       L2CAPBasicFrame(channel: 5, payload: [1, 2, 3]))
        XCTAssertEqual(r.feed(bytes("19 00 01 02"), boundary: .continuing, stream: 1).frame,
                       L2CAPBasicFrame(channel: 4, payload: bytes("1b 19 00 01 02")))
        XCTAssertTrue(r.isEmpty)
    }

    func testBrokenSequencesAreReportedNotSilentlyDropped() {
        var r = Reassembler()
        XCTAssertEqual(r.feed(bytes("aa"), boundary: .continuing, stream: 1).problem, .continuationWithoutStart(octets: [0xAA]))
        XCTAssertEqual(r.feed(bytes("bb"), boundary: .complete, stream: 1).problem, .invalidBoundary(.complete, octets: [0xBB]))
        // A new start while a frame is unfinished: the old octets are handed back, the new frame goes on.
        _ = r.feed(bytes("09 00 04 00 01"), boundary: .firstFlushable, stream: 1)
        let restart = r.feed(bytes("01 00 04 00 0a"), boundary: .firstFlushable, stream: 1)
        XCTAssertEqual(restart.droppedUnfinished, bytes("09 00 04 00 01"))
        XCTAssertEqual(restart.frame, L2CAPBasicFrame(channel: 4, payload: [0x0A]))
        // More octets than the Length: the frame the Length describes, and the overrun.
        let long = r.feed(bytes("01 00 04 00 0a ff ff"), boundary: .firstFlushable, stream: 1)
        XCTAssertEqual(long.frame, L2CAPBasicFrame(channel: 4, payload: [0x0A]))
        XCTAssertEqual(long.problem, .longerThanLength(octets: bytes("01 00 04 00 0a ff ff"), expected: 5))
        XCTAssertTrue(r.isEmpty)
    }

    func testDiscardHandsBackTheUnfinishedFrame() {
        var r = Reassembler()
        _ = r.feed(bytes("09 00 04 00 01"), boundary: .firstFlushable, stream: 7)
        _ = r.feed(bytes("09 00"), boundary: .firstFlushable, stream: 8)
        XCTAssertEqual(r.discard(7), bytes("09 00 04 00 01"))
        XCTAssertNil(r.discard(7))
        r.discardAll { $0 == 8 }
        XCTAssertTrue(r.isEmpty)
        // After a discard a continuation has nothing to continue.
        XCTAssertEqual(r.feed(bytes("02"), boundary: .continuing, stream: 7).problem, .continuationWithoutStart(octets: [2]))
    }
}

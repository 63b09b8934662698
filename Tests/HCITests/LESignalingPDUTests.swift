import BLEWire
import HCI
import WireTestSupport
import XCTest

/// `LESignalingPDU` codec: `| Code (1) | Identifier (1) | Length (2) | Data |` (Core 5.4, Vol 3,
/// Part A, 4). Every case round-trips through its octets; broken input throws a `DecodeError`
/// that says what was wrong.
final class LESignalingPDUTests: XCTestCase {

    private func assertRoundTrip(_ pdu: LESignalingPDU, _ hexBytes: String, file: StaticString = #filePath, line: UInt = #line) {
        let octets = bytes(hexBytes, file: file, line: line)
        XCTAssertEqual(pdu.encoded.spacedHex, octets.spacedHex, "encode", file: file, line: line)
        XCTAssertEqual(try LESignalingPDU(decoding: octets), pdu, "decode", file: file, line: line)
    }

    private func assertThrows(_ hexBytes: String, _ expected: DecodeError, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try LESignalingPDU(decoding: bytes(hexBytes, file: file, line: line)), file: file, line: line) {
            XCTAssertEqual($0 as? DecodeError, expected, file: file, line: line)
        }
    }

    // MARK: Round trips

    func testConnectionParameterUpdateRequest() {
        // 4.20: Code 0x12 | Identifier 1 | Length 8 | Interval_Min 6 | Interval_Max 12 | Latency 0 | Timeout 200
        assertRoundTrip(.connectionParameterUpdateRequest(identifier: 1, ConnectionParameterUpdate(
            intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200)),
                        "12 | 01 | 08 00 | 06 00 | 0c 00 | 00 00 | c8 00")
    }

    func testConnectionParameterUpdateResponse() {
        // 4.21: Result 0x0000 accepted, 0x0001 rejected
        assertRoundTrip(.connectionParameterUpdateResponse(identifier: 1, accepted: true), "13 | 01 | 02 00 | 00 00")
        assertRoundTrip(.connectionParameterUpdateResponse(identifier: 0xff, accepted: false), "13 | ff | 02 00 | 01 00")
    }

    func testCommandReject() {
        // 4.1: Reason (2), Data (0–4)
        assertRoundTrip(.commandReject(identifier: 1, reason: .commandNotUnderstood, data: []), "01 | 01 | 02 00 | 00 00")
        assertRoundTrip(.commandReject(identifier: 5, reason: .signalingMTUExceeded, data: [0x17, 0x00]),
                        "01 | 05 | 04 00 | 01 00 | 17 00")
        // Invalid CID in request: Local Endpoint (2), Remote Endpoint (2)
        assertRoundTrip(.commandReject(identifier: 9, reason: .invalidCID, data: [0x40, 0x00, 0x41, 0x00]),
                        "01 | 09 | 06 00 | 02 00 | 40 00 41 00")
        // Reasons are open: a value the table does not name survives.
        assertRoundTrip(.commandReject(identifier: 2, reason: CommandRejectReason(rawValue: 0x0003), data: []),
                        "01 | 02 | 02 00 | 03 00")
    }

    func testOtherCodesKeepTheirBytes() {
        // LE Credit Based Connection Request (4.22), not modelled: kept verbatim.
        assertRoundTrip(.other(code: 0x14, identifier: 0x21, data: bytes("80 00 40 00 17 00 17 00 0a 00")),
                        "14 | 21 | 0a 00 | 80 00 40 00 17 00 17 00 0a 00")
        assertRoundTrip(.other(code: 0x06, identifier: 3, data: []), "06 | 03 | 00 00")   // Disconnection Request, empty
    }

    func testCodeAndIdentifierAccessors() {
        let pdu = LESignalingPDU.connectionParameterUpdateResponse(identifier: 7, accepted: true)
        XCTAssertEqual(pdu.code, LESignalingPDU.Code.connectionParameterUpdateResponse)
        XCTAssertEqual(pdu.identifier, 7)
        XCTAssertEqual(LESignalingPDU.other(code: 0x14, identifier: 2, data: []).code, 0x14)
    }

    // MARK: Malformed input

    func testEmptyInputIsTruncatedAtTheCode() {
        assertThrows("", .truncated(needed: 1, available: 0, at: 0))
    }

    func testHeaderCutShortIsTruncated() {
        assertThrows("12 01 08", .truncated(needed: 2, available: 1, at: 2))
    }

    func testLengthLongerThanTheDataIsALengthMismatch() {
        assertThrows("12 01 08 00 | 06 00 0c 00",
                     .lengthMismatch(field: "signaling command Length", declared: 8, actual: 4))
    }

    func testLengthShorterThanTheDataIsALengthMismatch() {
        assertThrows("13 01 02 00 | 00 00 00",
                     .lengthMismatch(field: "signaling command Length", declared: 2, actual: 3))
    }

    func testParameterUpdateRequestOfTheWrongSize() {
        assertThrows("12 01 06 00 | 06 00 0c 00 00 00",
                     .lengthMismatch(field: "Connection Parameter Update Request", declared: 6, actual: 8))
    }

    func testParameterUpdateResponseOfTheWrongSize() {
        assertThrows("13 01 03 00 | 00 00 00",
                     .lengthMismatch(field: "Connection Parameter Update Response", declared: 3, actual: 2))
    }

    func testParameterUpdateResponseWithAReservedResult() {
        assertThrows("13 01 02 00 | 02 00", .invalidValue(field: "Result", value: 2, at: 4))
    }

    func testCommandRejectWithoutAReason() {
        assertThrows("01 01 01 00 | 00", .truncated(needed: 2, available: 1, at: 4))
        assertThrows("01 01 00 00", .truncated(needed: 2, available: 0, at: 4))
    }

    // MARK: Several commands in one frame (as a capture may hold them)

    func testNextCommandReadsEachInTurnAndStopsBeforeAShortTail() throws {
        var r = ByteReader(bytes("12 01 08 00 | 06 00 0c 00 00 00 c8 00", "13 02 02 00 | 00 00", "06 03"))
        XCTAssertEqual(try LESignalingPDU.nextCommand(from: &r), bytes("12 01 08 00 | 06 00 0c 00 00 00 c8 00"))
        XCTAssertEqual(try LESignalingPDU.nextCommand(from: &r), bytes("13 02 02 00 | 00 00"))
        // Two octets left: fewer than a header, so no command.
        XCTAssertNil(try LESignalingPDU.nextCommand(from: &r))
    }

    func testNextCommandWhoseLengthRunsPastTheFrameThrowsAndStays() throws {
        var r = ByteReader(bytes("13 02 02 00 | 00 00", "12 01 08 00 | 06 00"))
        XCTAssertEqual(try LESignalingPDU.nextCommand(from: &r), bytes("13 02 02 00 | 00 00"))
        XCTAssertThrowsDecodeError(.truncated(needed: 8, available: 2, at: 10)) { try LESignalingPDU.nextCommand(from: &r) }
        XCTAssertEqual(r.offset, 6, "the reader stays at the command that did not fit")
    }
}

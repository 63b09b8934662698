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
        // Credit Based Connection Request (4.25, enhanced mode), not modelled: kept verbatim.
        assertRoundTrip(.other(code: 0x17, identifier: 0x21, data: bytes("80 00 40 00 17 00 17 00 0a 00")),
                        "17 | 21 | 0a 00 | 80 00 40 00 17 00 17 00 0a 00")
        assertRoundTrip(.other(code: 0x0b, identifier: 3, data: []), "0b | 03 | 00 00")   // BR/EDR Information Request, empty
    }

    // MARK: Credit based channels (4.6, 4.7, 4.22–4.24)

    func testDisconnectionRequest() {
        // 4.6: Code 0x06 | Identifier 3 | Length 4 | Destination CID 0x0041 | Source CID 0x0040
        assertRoundTrip(.disconnectionRequest(identifier: 3, destinationCID: 0x0041, sourceCID: 0x0040),
                        "06 | 03 | 04 00 | 41 00 | 40 00")
    }

    func testDisconnectionResponse() {
        // 4.7: Code 0x07 | Identifier 3 | Length 4 | Destination CID 0x0041 | Source CID 0x0040
        assertRoundTrip(.disconnectionResponse(identifier: 3, destinationCID: 0x0041, sourceCID: 0x0040),
                        "07 | 03 | 04 00 | 41 00 | 40 00")
    }

    func testLECreditBasedConnectionRequest() {
        // 4.22: Code 0x14 | Identifier 0x21 | Length 10 | SPSM 0x0080 | Source CID 0x0040 |
        // MTU 512 | MPS 247 | Initial Credits 10
        assertRoundTrip(.leCreditBasedConnectionRequest(identifier: 0x21, LECreditBasedConnectionRequest(
            spsm: 0x0080, sourceCID: 0x0040, mtu: 512, mps: 247, initialCredits: 10)),
                        "14 | 21 | 0a 00 | 80 00 | 40 00 | 00 02 | f7 00 | 0a 00")
        // The largest values the fields hold: MTU 65535, MPS 65533, 65535 credits.
        assertRoundTrip(.leCreditBasedConnectionRequest(identifier: 1, LECreditBasedConnectionRequest(
            spsm: 0x00ff, sourceCID: 0x007f, mtu: 0xffff, mps: 0xfffd, initialCredits: 0xffff)),
                        "14 | 01 | 0a 00 | ff 00 | 7f 00 | ff ff | fd ff | ff ff")
    }

    func testLECreditBasedConnectionResponse() {
        // 4.23: Code 0x15 | Identifier 0x21 | Length 10 | Destination CID 0x0040 | MTU 23 | MPS 23 |
        // Initial Credits 5 | Result 0x0000 Connection successful
        assertRoundTrip(.leCreditBasedConnectionResponse(identifier: 0x21, LECreditBasedConnectionResponse(
            destinationCID: 0x0040, mtu: 23, mps: 23, initialCredits: 5, result: .success)),
                        "15 | 21 | 0a 00 | 40 00 | 17 00 | 17 00 | 05 00 | 00 00")
        // A refusal: every field 0 but Result 0x0002 SPSM not supported.
        assertRoundTrip(.leCreditBasedConnectionResponse(identifier: 0x22, .refused(.spsmNotSupported)),
                        "15 | 22 | 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 02 00")
        // Results are open: a reserved value survives.
        assertRoundTrip(.leCreditBasedConnectionResponse(identifier: 1, .refused(LECreditBasedConnectionResult(rawValue: 0x000c))),
                        "15 | 01 | 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 0c 00")
    }

    func testLECreditBasedConnectionResultsOfTable() {
        let named: [(LECreditBasedConnectionResult, UInt16)] = [
            (.success, 0x0000), (.spsmNotSupported, 0x0002), (.noResources, 0x0004), (.insufficientAuthentication, 0x0005),
            (.insufficientAuthorization, 0x0006), (.encryptionKeySizeTooShort, 0x0007), (.insufficientEncryption, 0x0008),
            (.invalidSourceCID, 0x0009), (.sourceCIDAlreadyAllocated, 0x000a), (.unacceptableParameters, 0x000b),
        ]
        for (result, raw) in named { XCTAssertEqual(result.rawValue, raw) }
        XCTAssertEqual(LECreditBasedConnectionResult.spsmNotSupported.description, "0x0002 (Connection refused – SPSM not supported)")
        XCTAssertEqual(LECreditBasedConnectionResult(rawValue: 0x0001).description, "0x0001 (reserved)")
    }

    func testFlowControlCreditIndication() {
        // 4.24: Code 0x16 | Identifier 7 | Length 4 | CID 0x0040 | Credits 65535
        assertRoundTrip(.flowControlCreditIndication(identifier: 7, cid: 0x0040, credits: 0xffff), "16 | 07 | 04 00 | 40 00 | ff ff")
        assertRoundTrip(.flowControlCreditIndication(identifier: 8, cid: 0x0041, credits: 1), "16 | 08 | 04 00 | 41 00 | 01 00")
    }

    func testCreditBasedCodesAndIdentifiers() {
        let cases: [(LESignalingPDU, UInt8)] = [
            (.disconnectionRequest(identifier: 1, destinationCID: 0x40, sourceCID: 0x41), 0x06),
            (.disconnectionResponse(identifier: 1, destinationCID: 0x40, sourceCID: 0x41), 0x07),
            (.leCreditBasedConnectionRequest(identifier: 1, LECreditBasedConnectionRequest(spsm: 0x80, sourceCID: 0x40, mtu: 23, mps: 23, initialCredits: 1)), 0x14),
            (.leCreditBasedConnectionResponse(identifier: 1, .refused(.noResources)), 0x15),
            (.flowControlCreditIndication(identifier: 1, cid: 0x40, credits: 1), 0x16),
        ]
        for (pdu, code) in cases {
            XCTAssertEqual(pdu.code, code)
            XCTAssertEqual(pdu.identifier, 1)
            XCTAssertEqual(pdu.encoded.first, code)
        }
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

    func testDisconnectionRequestOfTheWrongSize() {
        assertThrows("06 01 02 00 | 40 00", .lengthMismatch(field: "Disconnection Request", declared: 2, actual: 4))
        assertThrows("06 01 00 00", .lengthMismatch(field: "Disconnection Request", declared: 0, actual: 4))
    }

    func testDisconnectionResponseOfTheWrongSize() {
        assertThrows("07 01 05 00 | 40 00 41 00 00", .lengthMismatch(field: "Disconnection Response", declared: 5, actual: 4))
    }

    func testLECreditBasedConnectionRequestOfTheWrongSize() {
        // Initial Credits missing: 8 octets of data, not 10.
        assertThrows("14 21 08 00 | 80 00 40 00 17 00 17 00",
                     .lengthMismatch(field: "LE Credit Based Connection Request", declared: 8, actual: 10))
    }

    func testLECreditBasedConnectionResponseOfTheWrongSize() {
        assertThrows("15 21 0c 00 | 40 00 17 00 17 00 05 00 00 00 00 00",
                     .lengthMismatch(field: "LE Credit Based Connection Response", declared: 12, actual: 10))
    }

    func testFlowControlCreditIndicationOfTheWrongSize() {
        assertThrows("16 07 02 00 | 40 00", .lengthMismatch(field: "LE Flow Control Credit", declared: 2, actual: 4))
    }

    func testCreditBasedRequestWhoseLengthRunsPastTheFrame() {
        // Length says 10, only 6 octets follow: the frame's own Length check comes first.
        assertThrows("14 21 0a 00 | 80 00 40 00 17 00",
                     .lengthMismatch(field: "signaling command Length", declared: 10, actual: 6))
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

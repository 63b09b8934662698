import XCTest
import BLEWire
@testable import ATT

/// Each decoder refuses bad input with a DecodeError that says where, never a crash or a guess.
final class ATTMalformedPDUTests: XCTestCase {
    func testEmptyInput() {
        assertMalformed("") { XCTAssertEqual($0, .truncated(needed: 1, available: 0, at: 0)) }
    }

    func testTruncatedFixedSizePDUs() {
        assertMalformed("01 12 10") { XCTAssertEqual($0, .truncated(needed: 2, available: 1, at: 2)) }  // Error Response
        assertMalformed("02 17")          // Exchange MTU Request
        assertMalformed("03")             // Exchange MTU Response
        assertMalformed("04 01 00 ff")    // Find Information Request
        assertMalformed("06 01 00 ff ff 00")  // Find By Type Value Request without a full type
        assertMalformed("0a 10")          // Read Request
        assertMalformed("0c 10 00 01")    // Read Blob Request
        assertMalformed("12 10")          // Write Request without a full handle
        assertMalformed("52")             // Write Command
        assertMalformed("16 10 00 01")    // Prepare Write Request without a full offset
        assertMalformed("17 10 00")       // Prepare Write Response
        assertMalformed("18")             // Execute Write Request
        assertMalformed("1b 19")          // Handle Value Notification
        assertMalformed("1d")             // Handle Value Indication
    }

    func testTrailingOctetsOnFixedSizePDUs() {
        assertMalformed("0a 10 00 00") { XCTAssertEqual($0, .trailingBytes(count: 1, at: 3)) }
        assertMalformed("01 12 10 00 03 00")
        assertMalformed("02 17 00 00")
        assertMalformed("13 00")          // Write Response carries nothing
        assertMalformed("19 00")
        assertMalformed("1e 00")
        assertMalformed("18 01 00")
    }

    func testReservedExecuteWriteFlags() {
        assertMalformed("18 02") { XCTAssertEqual($0, .invalidValue(field: "Execute Write Request flags", value: 2, at: 1)) }
    }

    func testFindInformationResponseFormatAndLength() {
        assertMalformed("05 03 09 00 02 29") {  // format 3 does not exist
            XCTAssertEqual($0, .invalidValue(field: "Find Information Response format", value: 3, at: 1))
        }
        assertMalformed("05 00 09 00 02 29")
        assertMalformed("05 01 09 00 02")            // 16-bit entries are 4 octets
        assertMalformed("05 02 09 00 02 29 00 00")   // 128-bit entries are 18 octets
        assertMalformed("05 01")                     // no entries at all
    }

    func testReadByTypeResponseLengthMustMatchData() {
        assertMalformed("09 07 02 00 02 03 00 00 2a 04 00") {  // second entry cut short
            guard case .lengthMismatch = $0 else { return XCTFail("\($0)") }
        }
        assertMalformed("09 01 02 00")      // length below the handle's two octets
        assertMalformed("09 00")
        assertMalformed("09 07")            // no entries
    }

    func testReadByGroupTypeResponseLengthMustMatchData() {
        assertMalformed("11 06 01 00 05 00 00 18 06 00")
        assertMalformed("11 03 01 00 05")   // length below handle + end group handle
        assertMalformed("11 06")
    }

    func testFindByTypeValueResponseLength() {
        assertMalformed("07 17 00 1a")
        assertMalformed("07")
    }

    func testRequestUUIDWidths() {
        assertMalformed("08 01 00 ff ff 03")          // 1-octet attribute type
        assertMalformed("08 01 00 ff ff 03 28 00 00") // 4-octet attribute type (32-bit UUIDs go as 128-bit)
        assertMalformed("10 01 00 ff ff")             // no group type
    }

    func testReadMultipleNeedsTwoWholeHandles() {
        assertMalformed("0e 03 00")
        assertMalformed("0e 03 00 05")
    }

    func testSignedWriteCommandNeedsTheSignature() {
        assertMalformed("d2 12 00 01 02 03 04 05 06 07 08 09 0a 0b")  // 11 octets of signature
    }

    func testTypedDecoderRefusesAnotherOpcode() {
        XCTAssertThrowsError(try ATTReadRequest(decoding: [0x0B, 0x10, 0x00])) { error in
            guard case DecodeError.invalidValue(_, 0x0B, 0)? = error as? DecodeError else { return XCTFail("\(error)") }
        }
    }
}

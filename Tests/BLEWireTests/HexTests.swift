import XCTest
import BLEWire

final class HexTests: XCTestCase {

    func testHexStringIsLowerCaseWithoutSeparators() {
        XCTAssertEqual([UInt8]([0x4C, 0x00, 0x02, 0xFF]).hexString, "4c0002ff")
        XCTAssertEqual([UInt8]().hexString, "")
        XCTAssertEqual([UInt8]([0x0A])[...].hexString, "0a", "any sequence of octets, slices included")
    }

    func testSpacedHexSeparatesOctets() {
        XCTAssertEqual([UInt8]([0x4C, 0x00, 0x02]).spacedHex, "4c 00 02")
        XCTAssertEqual([UInt8]([0x07]).spacedHex, "07")
        XCTAssertEqual([UInt8]().spacedHex, "")
    }

    func testParsingAcceptsEitherCaseAndCommonSeparators() {
        XCTAssertEqual([UInt8](hex: "4c0002ff"), [0x4C, 0x00, 0x02, 0xFF])
        XCTAssertEqual([UInt8](hex: "4C 00 02 FF"), [0x4C, 0x00, 0x02, 0xFF])
        XCTAssertEqual([UInt8](hex: "C0:11-22\n33"), [0xC0, 0x11, 0x22, 0x33])
        XCTAssertEqual([UInt8](hex: "  "), [])
        XCTAssertEqual([UInt8](hex: ""), [])
        // Separators may fall anywhere, even inside an octet: they are simply skipped.
        XCTAssertEqual([UInt8](hex: "4 c"), [0x4C])
    }

    func testParsingRejectsOddCountsAndNonHex() {
        for string in ["4c0", "4", "4g", "0x4c", "+4", "4c\t00", "4c,00", "é1"] {
            XCTAssertNil([UInt8](hex: string), "accepted \"\(string)\"")
        }
    }

    func testPrintedFormsParseBack() {
        let octets: [UInt8] = Array(0...255)
        XCTAssertEqual([UInt8](hex: octets.hexString), octets)
        XCTAssertEqual([UInt8](hex: octets.spacedHex), octets)
    }
}

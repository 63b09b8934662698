import XCTest
import BLEWire

final class BDAddrTests: XCTestCase {

    // MARK: Parsing and printing

    func testParsesMostSignificantOctetFirst() throws {
        let address = try XCTUnwrap(BDAddr(string: "C0:11:22:33:44:55"))
        XCTAssertEqual(address.rawValue, 0xC011_2233_4455)
        XCTAssertEqual(address.description, "C0:11:22:33:44:55")
        // On the wire the least significant octet goes first (Core 5.4, Vol 2, Part B, 1.2).
        XCTAssertEqual(address.littleEndianBytes, [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0])
    }

    func testAcceptsLowerCaseAndDashesAndPrintsUpperCaseWithColons() {
        XCTAssertEqual(BDAddr(string: "c0:11:22:33:44:5a"), BDAddr(rawValue: 0xC011_2233_445A))
        XCTAssertEqual(BDAddr(string: "C0-11-22-33-44-5A"), BDAddr(rawValue: 0xC011_2233_445A))
        XCTAssertEqual(BDAddr(string: "c0-11-22-33-44-5a")?.description, "C0:11:22:33:44:5A")
    }

    func testPrintsLeadingZeros() {
        XCTAssertEqual(BDAddr(rawValue: 0x0001_0A00_0F00).description, "00:01:0A:00:0F:00")
        XCTAssertEqual(BDAddr(rawValue: 0).description, "00:00:00:00:00:00")
        XCTAssertEqual(BDAddr(rawValue: 0xFFFF_FFFF_FFFF).description, "FF:FF:FF:FF:FF:FF")
    }

    func testPrintedFormParsesBack() {
        for raw: UInt64 in [0, 1, 0x0A0B_0C0D_0E0F, 0xC011_2233_4455, 0xFFFF_FFFF_FFFF] {
            let address = BDAddr(rawValue: raw)
            XCTAssertEqual(BDAddr(string: address.description), address)
        }
    }

    func testRejectsMalformedStrings() {
        let malformed = [
            "",
            "C0:11:22:33:44",            // five octets
            "C0:11:22:33:44:55:66",      // seven octets
            "C0:11:22:33:44:5",          // one digit in the last group
            "C0:11:22:33:44:555",        // three digits
            "C0:11:22:33:44:",           // empty group
            ":C0:11:22:33:44",
            "C0:11:22:33:44:5G",         // not hex
            "C011:22:33:44:55:",
            "C0 11 22 33 44 55",         // spaces are not separators
            " C0:11:22:33:44:55",
            "C0:11:22:33:44:55 ",
            "+0:11:22:33:44:55",         // a sign is not a hex digit
            "-0:11:22:33:44:55",
            "C0:11:22:+3:44:55",
            "C0112233445 5",
            "C0112233445",
        ]
        for string in malformed {
            XCTAssertNil(BDAddr(string: string), "accepted \"\(string)\"")
        }
    }

    func testRawValueIsMaskedTo48Bits() {
        XCTAssertEqual(BDAddr(rawValue: 0xFFFF_C011_2233_4455).rawValue, 0xC011_2233_4455)
        XCTAssertEqual(BDAddr(rawValue: 0xFFFF_C011_2233_4455), BDAddr(rawValue: 0xC011_2233_4455))
    }

    func testOrderingAndHashingFollowTheNumber() {
        let low = BDAddr(rawValue: 0x0000_0000_0001), high = BDAddr(rawValue: 0x0100_0000_0000)
        XCTAssertLessThan(low, high)
        XCTAssertEqual(Set([low, high, BDAddr(rawValue: 1)]).count, 2)
    }

    // MARK: Random static addresses

    /// Core 5.4, Vol 6, Part B, 1.3.2.1: the two most significant bits are 0b11 and the remaining
    /// 46 random bits are neither all zeros nor all ones.
    func testRandomStaticCheck() {
        let cases: [(String, Bool, String)] = [
            ("C0:11:22:33:44:55", true, "top bits 11"),
            ("FF:11:22:33:44:55", true, "top bits 11"),
            ("C0:00:00:00:00:01", true, "lowest random part"),
            ("FF:FF:FF:FF:FF:FE", true, "highest random part"),
            ("C0:00:00:00:00:00", false, "random part all zeros"),
            ("FF:FF:FF:FF:FF:FF", false, "random part all ones"),
            ("7F:11:22:33:44:55", false, "top bits 01: resolvable private"),
            ("3F:11:22:33:44:55", false, "top bits 00: non-resolvable private"),
            ("80:11:22:33:44:55", false, "top bits 10: reserved"),
            ("00:00:00:00:00:00", false, "all zeros"),
        ]
        for (string, expected, why) in cases {
            XCTAssertEqual(BDAddr(string: string)?.isValidRandomStatic, expected, "\(string): \(why)")
        }
    }

    // MARK: Address types and LE addresses

    func testAddressTypeDescriptions() {
        XCTAssertEqual(AddressType.public.description, "public")
        XCTAssertEqual(AddressType.random.description, "random")
        XCTAssertEqual(AddressType(rawValue: 0x02).description, "public-identity")
        XCTAssertEqual(AddressType(rawValue: 0x03).description, "random-identity")
        XCTAssertEqual(AddressType(rawValue: 0xFF).description, "0xff")
    }

    func testLEAddressParsesTheTypeSuffix() throws {
        let random = try XCTUnwrap(LEAddress(string: "C0:11:22:33:44:55/random"))
        XCTAssertEqual(random.address, BDAddr(rawValue: 0xC011_2233_4455))
        XCTAssertEqual(random.type, .random)
        XCTAssertEqual(random.description, "C0:11:22:33:44:55/random")

        XCTAssertEqual(LEAddress(string: "00:1A:7D:DA:71:13")?.type, .public, "no suffix means public")
        XCTAssertEqual(LEAddress(string: "00:1A:7D:DA:71:13/public")?.type, .public)
        XCTAssertEqual(LEAddress(string: "c0:11:22:33:44:55/RANDOM")?.type, .random)
        XCTAssertEqual(LEAddress(string: "00:1A:7D:DA:71:13")?.description, "00:1A:7D:DA:71:13/public")
    }

    func testLEAddressRoundTripsThroughItsDescription() {
        for address in [LEAddress(BDAddr(rawValue: 0xC011_2233_4455), type: .random),
                        LEAddress(BDAddr(rawValue: 0x001A_7DDA_7113), type: .public)] {
            XCTAssertEqual(LEAddress(string: address.description), address)
        }
    }

    func testLEAddressRejectsMalformedStrings() {
        for string in ["C0:11:22:33:44:55/", "C0:11:22:33:44:55/static", "C0:11:22:33:44:55/random/public",
                       "/random", "C0:11:22:33:44/random", ""] {
            XCTAssertNil(LEAddress(string: string), "accepted \"\(string)\"")
        }
    }

    func testSameAddressDifferentTypeIsADifferentDevice() {
        let address = BDAddr(rawValue: 0xC011_2233_4455)
        XCTAssertNotEqual(LEAddress(address, type: .public), LEAddress(address, type: .random))
    }
}

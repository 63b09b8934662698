import BLEWire
import WireTestSupport
import XCTest

final class BluetoothUUIDTests: XCTestCase {
    let nordicUART = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"

    // MARK: Base UUID aliases (Core 5.4, Vol 3, Part B, 2.5.1)

    func testShortLongAndLiteralFormsOfA16BitUUIDAreEqualAndHashAlike() throws {
        let short = try XCTUnwrap(BluetoothUUID(string: "FFE0"))
        let long = try XCTUnwrap(BluetoothUUID(string: "0000FFE0-0000-1000-8000-00805F9B34FB"))
        let literal: BluetoothUUID = 0xFFE0
        let thirtyTwo = try XCTUnwrap(BluetoothUUID(string: "0000FFE0"))
        XCTAssertEqual(short, long)
        XCTAssertEqual(short, literal)
        XCTAssertEqual(short, thirtyTwo)
        XCTAssertEqual(short, BluetoothUUID(uuid16: 0xFFE0))
        XCTAssertEqual(short, BluetoothUUID(uuid32: 0x0000_FFE0))
        XCTAssertEqual(short.hashValue, long.hashValue)
        XCTAssertEqual(short.hashValue, literal.hashValue)
        XCTAssertEqual(Set([short, long, literal, thirtyTwo]).count, 1)
        XCTAssertEqual([long: "HM-10"][short], "HM-10", "usable as a dictionary key in either form")
    }

    func testParsingIsCaseInsensitive() {
        XCTAssertEqual(BluetoothUUID(string: "ffe0"), BluetoothUUID(string: "FFE0"))
        XCTAssertEqual(BluetoothUUID(string: "fFe0"), 0xFFE0)
        XCTAssertEqual(BluetoothUUID(string: nordicUART.lowercased()), BluetoothUUID(string: nordicUART))
    }

    func testA16BitUUIDHasBothAliases() {
        let heartRate: BluetoothUUID = 0x180D
        XCTAssertTrue(heartRate.isBased)
        XCTAssertEqual(heartRate.uuid16, 0x180D)
        XCTAssertEqual(heartRate.uuid32, 0x0000_180D, "every 16-bit UUID is also a 32-bit one")
        XCTAssertEqual(heartRate.width, 2)
        XCTAssertTrue(heartRate.fits(width: 2))
        XCTAssertTrue(heartRate.fits(width: 4))
        XCTAssertTrue(heartRate.fits(width: 16))
        XCTAssertFalse(heartRate.fits(width: 3))
    }

    func testA32BitUUIDAboveFFFFHasNo16BitAlias() throws {
        let uuid = BluetoothUUID(uuid32: 0x1234_5678)
        XCTAssertEqual(uuid.uuid16, nil)
        XCTAssertEqual(uuid.uuid32, 0x1234_5678)
        XCTAssertEqual(uuid.width, 4)
        XCTAssertFalse(uuid.fits(width: 2))
        XCTAssertTrue(uuid.fits(width: 4))
        XCTAssertEqual(BluetoothUUID(string: "12345678"), uuid)
        XCTAssertEqual(BluetoothUUID(string: "12345678-0000-1000-8000-00805F9B34FB"), uuid)
        let literal: BluetoothUUID = 0x1234_5678
        XCTAssertEqual(literal, uuid, "a literal above 0xFFFF is the 32-bit alias")
        XCTAssertEqual(literal.hashValue, uuid.hashValue)
    }

    func testA128BitUUIDOutsideTheBaseKeepsWidth16() throws {
        let nordic = try XCTUnwrap(BluetoothUUID(string: nordicUART))
        XCTAssertFalse(nordic.isBased)
        XCTAssertNil(nordic.uuid16)
        XCTAssertNil(nordic.uuid32)
        XCTAssertEqual(nordic.width, 16)
        XCTAssertFalse(nordic.fits(width: 2))
        XCTAssertFalse(nordic.fits(width: 4))
        XCTAssertTrue(nordic.fits(width: 16))
        XCTAssertEqual(nordic.high, 0x6E40_0001_B5A3_F393)
        XCTAssertEqual(nordic.low, 0xE0A9_E50E_24DC_CA9E)
        // The same 16 bits as 0x0001 in the Base UUID would be a different UUID altogether.
        XCTAssertNotEqual(nordic, 0x0001)
    }

    func testOneBitAwayFromTheBaseIsNotBased() {
        // The last octet of the base is 0xFB; 0xFA makes it a vendor UUID that merely looks close.
        let nearBase = BluetoothUUID(string: "0000180D-0000-1000-8000-00805F9B34FA")
        XCTAssertEqual(nearBase?.width, 16)
        XCTAssertNotEqual(nearBase, 0x180D)
        let otherVersion = BluetoothUUID(string: "0000180D-0000-2000-8000-00805F9B34FB")
        XCTAssertEqual(otherVersion?.width, 16)
    }

    func testA128BitStringWithoutDashesIsAccepted() {
        XCTAssertEqual(BluetoothUUID(string: "6E400001B5A3F393E0A9E50E24DCCA9E"), BluetoothUUID(string: nordicUART))
        XCTAssertEqual(BluetoothUUID(string: "0000FFE000001000800000805F9B34FB"), 0xFFE0)
    }

    // MARK: Strings

    func testUUIDStringUsesTheShortestFormUpperCase() throws {
        XCTAssertEqual(BluetoothUUID(0x180D).uuidString, "180D")
        XCTAssertEqual(BluetoothUUID(0x0001).uuidString, "0001", "leading zeros kept")
        XCTAssertEqual(BluetoothUUID(string: "ffe0")?.uuidString, "FFE0")
        XCTAssertEqual(BluetoothUUID(string: "0000ffe0-0000-1000-8000-00805f9b34fb")?.uuidString, "FFE0")
        XCTAssertEqual(BluetoothUUID(uuid32: 0x1234_5678).uuidString, "12345678")
        XCTAssertEqual(BluetoothUUID(uuid32: 0x0001_0000).uuidString, "00010000")
        XCTAssertEqual(BluetoothUUID(string: nordicUART.lowercased())?.uuidString, nordicUART)
        XCTAssertEqual(BluetoothUUID(0x2902).description, "2902")
    }

    func testFullStringIsAlways128Bit() throws {
        XCTAssertEqual(BluetoothUUID(0x180D).fullString, "0000180D-0000-1000-8000-00805F9B34FB")
        XCTAssertEqual(BluetoothUUID(uuid32: 0x1234_5678).fullString, "12345678-0000-1000-8000-00805F9B34FB")
        XCTAssertEqual(BluetoothUUID(high: 0, low: 0).fullString, "00000000-0000-0000-0000-000000000000")
        XCTAssertEqual(BluetoothUUID(string: nordicUART)?.fullString, nordicUART)
    }

    func testEveryStringFormParsesBack() throws {
        let uuids: [BluetoothUUID] = [0x0000, 0x180D, 0xFFFF, BluetoothUUID(uuid32: 0x1_0000),
                                      BluetoothUUID(uuid32: .max), try XCTUnwrap(BluetoothUUID(string: nordicUART)),
                                      BluetoothUUID(high: .max, low: .max)]
        for uuid in uuids {
            XCTAssertEqual(BluetoothUUID(string: uuid.uuidString), uuid)
            XCTAssertEqual(BluetoothUUID(string: uuid.fullString), uuid)
        }
    }

    func testRejectsMalformedStrings() {
        let malformed = [
            "",
            "FFE",                                        // 3 digits
            "FFE00",                                      // 5 digits
            "0FFE00",                                     // 6 digits
            "FFE0000",                                    // 7 digits
            "0000FFE00",                                  // 9 digits
            "GFE0",                                       // not hex
            "FFEZ",
            "FF E0",
            " FFE0",
            "FF-E0",                                      // a dash inside a short form
            "0000-FFE0",
            "+FFE",                                       // a sign is not a hex digit
            "+0001234",
            "0000FFE0-0000-1000-8000-00805F9B34F",        // 31 digits
            "0000FFE0-0000-1000-8000-00805F9B34FBB",      // 33 digits
            "0000FFE00-000-1000-8000-00805F9B34FB",       // dashes in the wrong places
            "0000FFE0-00001000-8000-00805F9B34FB-",
            "0000FFE0-0000-1000-800000805F9B34FB",        // a dash missing
            "0000FFE0--0000-1000-8000-00805F9B34F",
            "0000FFE0-0000-1000-8000-00805F9B34FG",       // not hex
            "{0000FFE0-0000-1000-8000-00805F9B34FB}",
            "+000FFE0-0000-1000-8000-00805F9B34FB",
            "0000FFE0-0000-1000-8000-+0805F9B34FB",
        ]
        for string in malformed {
            XCTAssertNil(BluetoothUUID(string: string), "accepted \"\(string)\"")
        }
    }

    // MARK: Wire encoding

    func testLittleEndianBytesInTheShortestForm() throws {
        XCTAssertEqual(BluetoothUUID(0x180D).littleEndianBytes, [0x0D, 0x18])
        XCTAssertEqual(BluetoothUUID(uuid32: 0x1234_5678).littleEndianBytes, [0x78, 0x56, 0x34, 0x12])
        XCTAssertEqual(try XCTUnwrap(BluetoothUUID(string: nordicUART)).littleEndianBytes, bytes("""
            9e ca dc 24 0e e5       // E50E24DCCA9E reversed
            a9 e0                   // E0A9
            93 f3                   // F393
            a3 b5                   // B5A3
            01 00 40 6e             // 6E400001
            """))
    }

    func testEncodingDecodesBackAtEveryWidth() throws {
        for uuid: BluetoothUUID in [0x180D, BluetoothUUID(uuid32: 0xABCD_EF01), try XCTUnwrap(BluetoothUUID(string: nordicUART))] {
            var reader = ByteReader(uuid.littleEndianBytes)
            XCTAssertEqual(try reader.readUUID(width: uuid.width), uuid)
            try reader.expectEnd()
        }
    }

    // MARK: Ordering and assigned numbers

    func testOrdering() throws {
        XCTAssertLessThan(BluetoothUUID(0x180D), BluetoothUUID(0x180F))
        XCTAssertLessThan(BluetoothUUID(0xFFFF), BluetoothUUID(uuid32: 0x1_0000))
        XCTAssertEqual([BluetoothUUID(0x2A37), 0x180D, 0x180F].sorted(), [0x180D, 0x180F, 0x2A37])
    }

    func testAssignedNumbers() {
        XCTAssertEqual(BluetoothUUID.primaryService.uuidString, "2800")
        XCTAssertEqual(BluetoothUUID.characteristic.uuidString, "2803")
        XCTAssertEqual(BluetoothUUID.clientCharacteristicConfiguration.uuidString, "2902")
        XCTAssertEqual(BluetoothUUID.deviceName.uuidString, "2A00")
        XCTAssertEqual(BluetoothUUID.serviceChanged.uuidString, "2A05")
    }
}

private extension BluetoothUUID {
    /// `BluetoothUUID(0x180D)` reads better than a typed `let` in a table of cases.
    init(_ uuid16: UInt16) { self.init(uuid16: uuid16) }
}

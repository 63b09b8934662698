import XCTest
import BLEWire
import ATT
@testable import GATT

/// The server's answers to discovery requests, octet for octet (ATT_MTU 23 unless said).
final class GATTServerDiscoveryTests: XCTestCase {
    func testReadByGroupTypeWalksThePrimaryServices() throws {
        let h = ServerHarness(database: try makeHM10Database())
        XCTAssertEqual(h.exchange("10 01 00 ff ff 00 28"), [
            "11 06"                  // Read By Group Type Response, length 6
            + " 01 00 05 00 00 18"   // 0x0001..0x0005 GAP
            + " 06 00 09 00 01 18"   // 0x0006..0x0009 GATT
            + " 0a 00 0d 00 e0 ff",  // 0x000A..0x000D FFE0 (a fourth would exceed ATT_MTU)
        ])
        XCTAssertEqual(h.exchange("10 0e 00 ff ff 00 28"), ["11 06 0e 00 11 00 0d 18"])
        XCTAssertEqual(h.exchange("10 12 00 ff ff 00 28"), ["01 10 12 00 0a"])  // Attribute Not Found at 0x0012
    }

    func testReadByGroupTypeErrors() throws {
        let h = ServerHarness(database: try makeHM10Database())
        XCTAssertEqual(h.exchange("10 00 00 ff ff 00 28"), ["01 10 00 00 01"])  // start 0: Invalid Handle
        XCTAssertEqual(h.exchange("10 05 00 04 00 00 28"), ["01 10 05 00 01"])  // start > end: Invalid Handle 0x0005
        XCTAssertEqual(h.exchange("10 01 00 ff ff 03 28"), ["01 10 01 00 10"])  // «Characteristic»: Unsupported Group Type
        XCTAssertEqual(h.exchange("10 01 00 ff ff 01 28"), ["01 10 01 00 0a"])  // no secondary services
    }

    func testSecondaryServicesGroupToo() throws {
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFF0, isPrimary: false)], includeStandardServices: false)
        let h = ServerHarness(database: db)
        XCTAssertEqual(h.exchange("10 01 00 ff ff 01 28"), ["11 06 01 00 01 00 f0 ff"])
        XCTAssertEqual(h.exchange("10 01 00 ff ff 00 28"), ["01 10 01 00 0a"])
    }

    func testReadByGroupTypeKeepsEntriesTheSameLength() throws {
        let uuid128 = try XCTUnwrap(BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFF0), GATTService(uuid: uuid128), GATTService(uuid: 0xFFF1)],
                                  includeStandardServices: false)
        let h = ServerHarness(database: db)
        XCTAssertEqual(h.exchange("10 01 00 ff ff 00 28"), ["11 06 01 00 01 00 f0 ff"])
        XCTAssertEqual(h.exchange("10 02 00 ff ff 00 28"), ["11 14 02 00 02 00 9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 01 00 40 6e"])
        XCTAssertEqual(h.exchange("10 03 00 ff ff 00 28"), ["11 06 03 00 03 00 f1 ff"])
    }

    func testReadByTypeDiscoversCharacteristics() throws {
        let h = ServerHarness(database: try makeHM10Database())
        XCTAssertEqual(h.exchange("08 01 00 05 00 03 28"), [
            "09 07"                    // length 7
            + " 02 00 02 03 00 00 2a"  // 0x0002: read, value 0x0003, 2A00
            + " 04 00 02 05 00 01 2a", // 0x0004: read, value 0x0005, 2A01
        ])
        XCTAssertEqual(h.exchange("08 05 00 05 00 03 28"), ["01 08 05 00 0a"])
        XCTAssertEqual(h.exchange("08 0a 00 0d 00 03 28"), ["09 07 0b 00 16 0c 00 e1 ff"])
        XCTAssertEqual(h.exchange("08 00 00 0d 00 03 28"), ["01 08 00 00 01"])
        XCTAssertEqual(h.exchange("08 0d 00 0a 00 03 28"), ["01 08 0d 00 01"])
    }

    func testReadByTypeWithAnMTUOf23FitsThreeDeclarations() throws {
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: (1...4).map {
            GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0xFFF0 + UInt16($0)), properties: .read)
        })], includeStandardServices: false)
        let h = ServerHarness(database: db)
        // 2 + 3 × 7 = 23: the fourth waits for the next request.
        XCTAssertEqual(h.exchange("08 01 00 ff ff 03 28"),
                       ["09 07 02 00 02 03 00 f1 ff 04 00 02 05 00 f2 ff 06 00 02 07 00 f3 ff"])
        XCTAssertEqual(h.exchange("08 07 00 ff ff 03 28"), ["09 07 08 00 02 09 00 f4 ff"])
    }

    func testReadByTypeTruncatesALongValueToMTUMinus4() throws {
        let long = Array(UInt8(0)..<30)
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: [
            GATTCharacteristic(uuid: 0xFFF1, properties: .read, value: long),
            GATTCharacteristic(uuid: 0xFFF1, properties: .read, value: long),
        ])], includeStandardServices: false)
        let h = ServerHarness(database: db)
        // Read Using Characteristic UUID: one entry, the value cut to ATT_MTU - 4 = 19 octets.
        XCTAssertEqual(h.exchange("08 01 00 ff ff f1 ff"), ["09 15 03 00 " + Array(long[0..<19]).spacedHex])
        XCTAssertEqual(h.exchange("02 42 00"), ["03 05 02"])  // ATT_MTU 66: room for two whole entries
        XCTAssertEqual(h.exchange("08 01 00 ff ff f1 ff"), ["09 20 03 00 " + long.spacedHex + " 05 00 " + long.spacedHex])
    }

    func testReadByTypeStopsAtAValueOfAnotherLengthOrAnError() throws {
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: [
            GATTCharacteristic(uuid: 0xFFF1, properties: .read, value: [1, 2]),
            GATTCharacteristic(uuid: 0xFFF1, properties: .read, value: [3, 4]),
            GATTCharacteristic(uuid: 0xFFF1, properties: .read, value: [5]),
            GATTCharacteristic(uuid: 0xFFF1, properties: .write, value: [6]),
        ])], includeStandardServices: false)
        let h = ServerHarness(database: db)
        XCTAssertEqual(h.exchange("08 01 00 ff ff f1 ff"), ["09 04 03 00 01 02 05 00 03 04"])
        XCTAssertEqual(h.exchange("08 06 00 ff ff f1 ff"), ["09 03 07 00 05"])
        // The first match is not readable: Read Not Permitted, naming it.
        XCTAssertEqual(h.exchange("08 08 00 ff ff f1 ff"), ["01 08 09 00 02"])
    }

    func testFindInformation() throws {
        let h = ServerHarness(database: try makeHM10Database())
        XCTAssertEqual(h.exchange("04 0d 00 0d 00"), ["05 01 0d 00 02 29"])
        XCTAssertEqual(h.exchange("04 0c 00 11 00"), [
            "05 01"                                      // 16-bit UUIDs
            + " 0c 00 e1 ff 0d 00 02 29 0e 00 00 28"     // FFE1 value, CCCD, «Primary Service»
            + " 0f 00 03 28 10 00 37 2a",                // «Characteristic», 2A37 (5 × 4 + 2 = 22)
        ])
        XCTAssertEqual(h.exchange("04 12 00 ff ff"), ["01 04 12 00 0a"])
        XCTAssertEqual(h.exchange("04 00 00 ff ff"), ["01 04 00 00 01"])
        XCTAssertEqual(h.exchange("04 09 00 08 00"), ["01 04 09 00 01"])
    }

    func testFindInformationSwitchesFormatInTheNextResponse() throws {
        let tx = try XCTUnwrap(BluetoothUUID(string: "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"))
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: [
            GATTCharacteristic(uuid: tx, properties: .read),
        ])], includeStandardServices: false)
        let h = ServerHarness(database: db)
        XCTAssertEqual(h.exchange("04 01 00 ff ff"), ["05 01 01 00 00 28 02 00 03 28"])
        XCTAssertEqual(h.exchange("04 03 00 ff ff"), ["05 02 03 00 9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 03 00 40 6e"])
    }

    func testFindByTypeValueDiscoversAServiceByUUID() throws {
        let h = ServerHarness(database: try makeHM10Database())
        XCTAssertEqual(h.exchange("06 01 00 ff ff 00 28 0d 18"), ["07 0e 00 11 00"])
        // The same UUID written in 128 bits matches too.
        XCTAssertEqual(h.exchange("06 01 00 ff ff 00 28 fb 34 9b 5f 80 00 00 80 00 10 00 00 e0 ff 00 00"), ["07 0a 00 0d 00"])
        XCTAssertEqual(h.exchange("06 0f 00 ff ff 00 28 0d 18"), ["01 06 0f 00 0a"])
        XCTAssertEqual(h.exchange("06 01 00 ff ff 00 28 0f 18"), ["01 06 01 00 0a"])
        XCTAssertEqual(h.exchange("06 00 00 ff ff 00 28 0d 18"), ["01 06 00 00 01"])
    }
}

import XCTest
import BLEWire
import ATT
@testable import GATT

/// A database laid out at handles given in advance (a peripheral rebuilt from a capture whose app
/// used those handles): the service declaration and each characteristic's value where asked, the
/// declaration one before the value, the descriptors after it, unused handles between. Discovery
/// over the gaps answers as Core Vol 3 Part F 3.4 says for a range without attributes.
final class GATTDatabasePinnedHandleTests: XCTestCase {
    func testServiceAndCharacteristicsAtTheirHandles() throws {
        let db = try GATTDatabase(services: [
            GATTService(uuid: BluetoothUUID(uuid16: 0xFFE0), characteristics: [
                GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0xFFE1), properties: .writeWithoutResponse, valueHandle: 0x0042),
                GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0xFFE2), properties: .notify, value: [0x07], valueHandle: 0x0064),
                GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0xFFE3), properties: .read),
            ], handle: 0x0040),
        ])
        let layout = db.attributes.filter { $0.handle >= 0x000A }.map { "\(hex4($0.handle)) \($0.type) \($0.value.spacedHex)" }
        XCTAssertEqual(layout, [
            "0x0040 2800 e0 ff",              // «Primary Service» at 0x0040
            "0x0041 2803 04 42 00 e1 ff",     // write-without-response, value 0x0042
            "0x0042 FFE1 ",
            "0x0063 2803 10 64 00 e2 ff",     // notify, value 0x0064
            "0x0064 FFE2 07",
            "0x0065 2902 00 00",              // its CCCD right after
            "0x0066 2803 02 67 00 e3 ff",     // unpinned: right after
            "0x0067 FFE3 ",
        ])
        XCTAssertEqual(db.services.last?.range, ATTHandleRange(start: 0x0040, end: 0x0067))
        XCTAssertNil(db.attribute(0x0043))
        XCTAssertNil(db.attribute(0x000A))
        XCTAssertEqual(db.characteristic(valueHandle: 0x0064)?.configurationHandle, 0x0065)
        // The next service goes after the last handle.
        var more = db
        let added = try more.add(GATTService(uuid: BluetoothUUID(uuid16: 0x180F), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0x2A19), properties: .read, value: [100]),
        ]))
        XCTAssertEqual(added.range, ATTHandleRange(start: 0x0068, end: 0x006A))
    }

    func testAHandleAlreadyReachedIsRefused() {
        // The GAP and GATT services take 0x0001-0x0009.
        XCTAssertThrowsError(try GATTDatabase(services: [GATTService(uuid: BluetoothUUID(uuid16: 0xFFE0), handle: 0x0005)])) { error in
            XCTAssertEqual(error as? GATTDatabaseError, .handleTaken(uuid: BluetoothUUID(uuid16: 0xFFE0), wanted: 0x0005, next: 0x000A))
        }
        // A value handle whose declaration would land on the service declaration.
        XCTAssertThrowsError(try GATTDatabase(services: [GATTService(uuid: BluetoothUUID(uuid16: 0xFFE0), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0xFFE1), properties: .read, valueHandle: 0x0020),
        ], handle: 0x001F)])) { error in
            XCTAssertEqual(error as? GATTDatabaseError, .handleTaken(uuid: BluetoothUUID(uuid16: 0xFFE1), wanted: 0x0020, next: 0x0021))
        }
        // Two characteristics: the second's declaration on the first's CCCD.
        XCTAssertThrowsError(try GATTDatabase(services: [GATTService(uuid: BluetoothUUID(uuid16: 0xFFE0), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0xFFE1), properties: .notify, valueHandle: 0x0012),
            GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0xFFE2), properties: .read, valueHandle: 0x0014),
        ], handle: 0x0010)])) { error in
            XCTAssertEqual(error as? GATTDatabaseError, .handleTaken(uuid: BluetoothUUID(uuid16: 0xFFE2), wanted: 0x0014, next: 0x0015))
        }
    }
}

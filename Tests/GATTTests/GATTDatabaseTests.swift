import XCTest
import BLEWire
import ATT
@testable import GATT

final class GATTDatabaseTests: XCTestCase {
    func testLayoutIsByteExact() throws {
        let db = try makeHM10Database()
        let layout = db.attributes.map { "\(hex4($0.handle)) \($0.type) \($0.value.spacedHex)" }
        XCTAssertEqual(layout, [
            "0x0001 2800 00 18",             // «Primary Service» GAP
            "0x0002 2803 02 03 00 00 2a",    // «Characteristic»: read, value 0x0003, Device Name
            "0x0003 2A00 42 4c 45 4c 61 62", // "BLELab"
            "0x0004 2803 02 05 00 01 2a",    // read, value 0x0005, Appearance
            "0x0005 2A01 00 00",
            "0x0006 2800 01 18",             // «Primary Service» GATT
            "0x0007 2803 20 08 00 05 2a",    // indicate, value 0x0008, Service Changed
            "0x0008 2A05 00 00 00 00",
            "0x0009 2902 00 00",             // its CCCD
            "0x000a 2800 e0 ff",             // «Primary Service» FFE0
            "0x000b 2803 16 0c 00 e1 ff",    // read|write-without-response|notify, value 0x000C, FFE1
            "0x000c FFE1 72 65 61 64 79",    // "ready"
            "0x000d 2902 00 00",
            "0x000e 2800 0d 18",             // «Primary Service» Heart Rate
            "0x000f 2803 10 10 00 37 2a",    // notify, value 0x0010, Heart Rate Measurement
            "0x0010 2A37 00 48",
            "0x0011 2902 00 00",
        ])
        XCTAssertEqual(db.serviceChangedHandle, 0x0008)
        XCTAssertEqual(db.configurationHandles, [0x0009, 0x000D, 0x0011])
        XCTAssertEqual(db.attributes.map(\.groupEndHandle)[0], 0x0005)
        XCTAssertEqual(db.attribute(0x000E)?.groupEndHandle, 0x0011)
        XCTAssertEqual(db.attribute(0x000B)?.groupEndHandle, 0x000D, "a characteristic declaration groups up to its last descriptor")
    }

    func testLookupByUUID() throws {
        let db = try makeHM10Database()
        let ffe1 = try XCTUnwrap(db.characteristic(0xFFE1))
        XCTAssertEqual(ffe1.declarationHandle, 0x000B)
        XCTAssertEqual(ffe1.valueHandle, 0x000C)
        XCTAssertEqual(ffe1.configurationHandle, 0x000D)
        XCTAssertEqual(ffe1.endHandle, 0x000D)
        XCTAssertEqual(db.characteristic(0x2A37, inService: 0x180D)?.valueHandle, 0x0010)
        XCTAssertNil(db.characteristic(0x2A37, inService: 0xFFE0))
        XCTAssertEqual(db.service(0x180D)?.range, ATTHandleRange(start: 0x000E, end: 0x0011))
        XCTAssertEqual(db.characteristic(valueHandle: 0x0010)?.uuid, 0x2A37)
        XCTAssertEqual(db.index(of: 0x0011), 16)
        XCTAssertNil(db.index(of: 0x0012))
        XCTAssertNil(db.index(of: 0x0000))
        XCTAssertEqual(db.firstIndex(atOrAfter: 0x000E), 13)
    }

    func testWithoutStandardServicesAndWithDescriptorsAnd128BitUUIDs() throws {
        let nus = try XCTUnwrap(BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        let tx = try XCTUnwrap(BluetoothUUID(string: "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"))
        let db = try GATTDatabase(services: [
            GATTService(uuid: nus, characteristics: [
                GATTCharacteristic(uuid: tx, properties: [.notify, .indicate], descriptors: [
                    .userDescription("TX"),
                    GATTDescriptor(uuid: .clientCharacteristicConfiguration),  // ignored: added automatically
                ]),
            ]),
        ], includeStandardServices: false)
        XCTAssertEqual(db.attributes.map { "\(hex4($0.handle)) \($0.type) \($0.value.spacedHex)" }, [
            "0x0001 2800 9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 01 00 40 6e",
            "0x0002 2803 30 03 00 9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 03 00 40 6e",
            "0x0003 6E400003-B5A3-F393-E0A9-E50E24DCCA9E ",
            "0x0004 2902 00 00",
            "0x0005 2901 54 58",
        ])
        XCTAssertNil(db.serviceChangedHandle)
    }

    func testAddAndRemoveServicesKeepOtherHandles() throws {
        var db = try makeHM10Database()
        let battery = try db.add(GATTService(uuid: 0x180F, characteristics: [
            GATTCharacteristic(uuid: 0x2A19, properties: [.read, .notify], value: [100]),
        ]))
        XCTAssertEqual(battery.range, ATTHandleRange(start: 0x0012, end: 0x0015))
        XCTAssertEqual(db.configurationHandles, [0x0009, 0x000D, 0x0011, 0x0015])
        let removed = db.removeService(at: 0x000A)
        XCTAssertEqual(removed?.uuid, 0xFFE0)
        XCTAssertNil(db.attribute(0x000C))
        XCTAssertEqual(db.attribute(0x0014)?.value, [100])
        XCTAssertEqual(db.configurationHandles, [0x0009, 0x0011, 0x0015])
        XCTAssertEqual(db.attribute(0x0014)?.configurationSlot, 2)
        // New services go after the last handle, not into the gap.
        let next = try db.add(GATTService(uuid: 0xFFF0))
        XCTAssertEqual(next.range, ATTHandleRange(start: 0x0016, end: 0x0016))
        XCTAssertNil(db.removeService(at: 0x000B))
    }

    func testRefusesValuesLongerThan512AndHandleOverflow() {
        XCTAssertThrowsError(try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: [
            GATTCharacteristic(uuid: 0xFFF1, properties: .read, value: Array(repeating: 0, count: 513)),
        ])])) { XCTAssertEqual($0 as? GATTDatabaseError, .valueTooLong(uuid: 0xFFF1, length: 513)) }
        let many = (0..<32_800).map { _ in GATTCharacteristic(uuid: 0xFFF1, properties: .read) }
        XCTAssertThrowsError(try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: many)])) {
            XCTAssertEqual($0 as? GATTDatabaseError, .outOfHandles(service: 0xFFF0))
        }
    }

    func testCharacteristicPropertyNames() {
        let all: CharacteristicProperties = [.broadcast, .read, .writeWithoutResponse, .write, .notify, .indicate,
                                             .authenticatedSignedWrites, .extendedProperties]
        XCTAssertEqual(all.rawValue, 0xFF)
        XCTAssertEqual(all.names, ["broadcast", "read", "write-without-response", "write", "notify", "indicate",
                                   "authenticated-signed-writes", "extended-properties"])
        XCTAssertEqual(CharacteristicProperties(names: ["read", "write-without-response", "notify"]), [.read, .writeWithoutResponse, .notify])
        XCTAssertEqual(CharacteristicProperties(name: "Write"), .write)
        XCTAssertNil(CharacteristicProperties(names: ["read", "writable"]))
        XCTAssertEqual(CharacteristicProperties([.read, .notify]).description, "[read, notify]")
        XCTAssertEqual(CharacteristicProperties.writeWithoutResponse.rawValue, 0x04)
        XCTAssertEqual(CharacteristicProperties.indicate.rawValue, 0x20)
    }
}

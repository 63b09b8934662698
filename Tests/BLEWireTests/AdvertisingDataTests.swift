import BLEWire
import WireTestSupport
import XCTest

/// AD structures: Core 5.4, Vol 3, Part C, 11; data types in the Core Specification Supplement (CSS), Part A.
final class AdvertisingDataTests: XCTestCase {
    let nordicUART = BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    /// The Nordic UART Service UUID as it goes on the air.
    let nordicUARTWire = "9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 01 00 40 6e"

    // MARK: The reference peer's advertising data

    func testReferencePeerVectorDecodesAndReencodesByteIdentically() throws {
        let wire = bytes("""
            02 01 06                    // Flags: LE General Discoverable, BR/EDR Not Supported
            05 03 e0 ff 0d 18           // Complete List of 16-bit Service UUIDs: FFE0, 180D
            08 09 52 65 66 50 65 65 72  // Complete Local Name: "RefPeer"
            """)
        let data = try AdvertisingData(decoding: wire)
        XCTAssertEqual(data.structures, [
            .flags(0x06),
            .serviceUUIDs16([0xFFE0, 0x180D], complete: true),
            .localName(Array("RefPeer".utf8), complete: true),
        ])
        XCTAssertEqual(data.flags, 0x06)
        XCTAssertEqual(data.serviceUUIDs, [0xFFE0, 0x180D])
        XCTAssertEqual(data.localName, "RefPeer")
        XCTAssertNil(data.txPowerLevel)
        XCTAssertNil(data.manufacturerData)
        XCTAssertEqual(data.serviceData, [:])
        XCTAssertEqual(data.encoded, wire)
        XCTAssertEqual(data.description, "flags=0x6 services=[FFE0,180D] name=RefPeer")
    }

    func testTheBuilderProducesTheReferencePeerVector() {
        let data = AdvertisingData.make(name: "RefPeer", services: [0xFFE0, 0x180D])
        XCTAssertEqual(data.encoded, bytes("02 01 06  05 03 e0 ff 0d 18  08 09 52 65 66 50 65 65 72"))
    }

    // MARK: Every AD type, both directions

    /// One structure per case: its bytes decode to the structure, and the structure encodes to the bytes.
    func testEveryADTypeDecodesAndEncodes() throws {
        let cases: [(wire: String, structure: ADStructure)] = [
            // CSS Part A, 1.3 Flags
            ("02 01 05                  // Flags: LE Limited Discoverable, BR/EDR Not Supported",
             .flags(0x05)),
            // CSS Part A, 1.1 Service UUIDs, each width and completeness
            ("05 02 0d 18 0f 18         // Incomplete List of 16-bit UUIDs: 180D, 180F",
             .serviceUUIDs16([0x180D, 0x180F], complete: false)),
            ("03 03 e0 ff               // Complete List of 16-bit UUIDs: FFE0",
             .serviceUUIDs16([0xFFE0], complete: true)),
            ("05 04 78 56 34 12         // Incomplete List of 32-bit UUIDs: 12345678",
             .serviceUUIDs32([BluetoothUUID(uuid32: 0x1234_5678)], complete: false)),
            ("09 05 78 56 34 12 0d 18 00 00   // Complete List of 32-bit UUIDs: 12345678, 0000180D",
             .serviceUUIDs32([BluetoothUUID(uuid32: 0x1234_5678), 0x180D], complete: true)),
            ("11 06 \(nordicUARTWire)   // Incomplete List of 128-bit UUIDs: Nordic UART",
             .serviceUUIDs128([nordicUART], complete: false)),
            ("11 07 \(nordicUARTWire)   // Complete List of 128-bit UUIDs: Nordic UART",
             .serviceUUIDs128([nordicUART], complete: true)),
            ("01 03                     // Complete List of 16-bit UUIDs, empty: no services",
             .serviceUUIDs16([], complete: true)),
            // CSS Part A, 1.2 Local Name
            ("04 08 52 65 66            // Shortened Local Name: \"Ref\"",
             .localName(Array("Ref".utf8), complete: false)),
            ("0e 09 53 6d 61 72 74 5f 43 75 72 74 61 69 6e   // Complete Local Name: \"Smart_Curtain\"",
             .localName(Array("Smart_Curtain".utf8), complete: true)),
            ("03 09 ff fe               // Complete Local Name that is not UTF-8: kept as octets",
             .localName([0xFF, 0xFE], complete: true)),
            // CSS Part A, 1.5 TX Power Level, signed dBm
            ("02 0a f4                  // TX Power Level: -12 dBm",
             .txPowerLevel(-12)),
            ("02 0a 04                  // TX Power Level: +4 dBm",
             .txPowerLevel(4)),
            // CSS Part A, 1.4 Manufacturer Specific Data: company identifier LE, then data
            ("05 ff 4c 00 02 15         // Manufacturer: Apple 0x004C, data 02 15",
             .manufacturerData(companyID: 0x004C, data: [0x02, 0x15])),
            ("03 ff 59 00               // Manufacturer: Nordic 0x0059, no data",
             .manufacturerData(companyID: 0x0059, data: [])),
            // CSS Part A, 1.11 Service Data, the UUID width given by the AD type
            ("04 16 0f 18 64            // Service Data - 16-bit UUID: Battery 180F, 100 %",
             .serviceData(0x180F, data: [0x64], width: 2)),
            ("03 16 0f 18               // Service Data - 16-bit UUID with no data",
             .serviceData(0x180F, data: [], width: 2)),
            ("06 20 78 56 34 12 aa      // Service Data - 32-bit UUID: 12345678, data aa",
             .serviceData(BluetoothUUID(uuid32: 0x1234_5678), data: [0xAA], width: 4)),
            ("13 21 \(nordicUARTWire) 01 02   // Service Data - 128-bit UUID: Nordic UART, data 01 02",
             .serviceData(nordicUART, data: [0x01, 0x02], width: 16)),
            // Types this layer does not interpret are kept verbatim.
            ("03 19 c1 03               // Appearance 0x03C1 (not interpreted)",
             .other(type: 0x19, data: [0xC1, 0x03])),
            ("01 e0                     // unassigned type 0xE0, no data",
             .other(type: 0xE0, data: [])),
        ]
        for (vector, structure) in cases {
            let wire = bytes(vector)
            XCTAssertEqual(try AdvertisingData(decoding: wire).structures, [structure], vector)
            XCTAssertEqual(AdvertisingData([structure]).encoded, wire, vector)
            XCTAssertEqual(structure.type, wire[1], vector)
            XCTAssertEqual(structure.data, Array(wire[2...]), vector)
        }
    }

    func testA16BitUUIDInA32BitListKeepsTheListWidth() throws {
        // 0000180D is based and compares equal to 180D, but re-encoding must not shrink the list.
        let wire = bytes("05 05 0d 18 00 00   // Complete List of 32-bit UUIDs: 0000180D")
        let data = try AdvertisingData(decoding: wire)
        XCTAssertEqual(data.serviceUUIDs, [0x180D])
        XCTAssertEqual(data.encoded, wire)
    }

    func testServiceDataWidthFollowsTheADTypeNotTheUUID() throws {
        // 180F sent with the 128-bit Service Data type: decode keeps the width, encode the type.
        let wire = bytes("""
            12 21                                               // Length 18, Service Data - 128-bit UUID
            fb 34 9b 5f 80 00 00 80 00 10 00 00 0f 18 00 00     // 0000180F-0000-1000-8000-00805F9B34FB
            55                                                  // data
            """)
        let data = try AdvertisingData(decoding: wire)
        XCTAssertEqual(data.structures, [.serviceData(0x180F, data: [0x55], width: 16)])
        XCTAssertEqual(data.serviceData[0x180F], [0x55])
        XCTAssertEqual(data.encoded, wire)
    }

    // MARK: Convenience views

    func testViewsGatherAcrossStructures() throws {
        let data = try AdvertisingData(decoding: bytes("""
            04 08 48 52 4d                          // Shortened Local Name "HRM"
            03 02 0d 18                             // Incomplete 16-bit list: 180D
            05 05 78 56 34 12                       // Complete 32-bit list: 12345678
            11 07 \(nordicUARTWire)                 // Complete 128-bit list: Nordic UART
            08 09 48 52 4d 2d 30 30 31              // Complete Local Name "HRM-001"
            02 0a 00                                // TX Power 0 dBm
            02 0a 08                                // a second TX Power: the first one wins
            05 ff 4c 00 02 15                       // Manufacturer 0x004C: 02 15
            04 16 0f 18 64                          // Service Data 180F: 64
            04 16 0f 18 32                          // Service Data 180F again: the first one wins
            05 16 0d 18 00 48                       // Service Data 180D: 00 48
            """))
        XCTAssertEqual(data.localName, "HRM-001", "the complete name wins over the shortened one")
        XCTAssertEqual(data.serviceUUIDs, [0x180D, BluetoothUUID(uuid32: 0x1234_5678), nordicUART])
        XCTAssertEqual(data.txPowerLevel, 0)
        XCTAssertEqual(data.manufacturerData, [0x4C, 0x00, 0x02, 0x15], "company identifier first, little-endian")
        XCTAssertEqual(data.serviceData, [0x180F: [0x64], 0x180D: [0x00, 0x48]])
        XCTAssertNil(data.flags)
    }

    func testShortenedNameIsUsedWhenThereIsNoCompleteOne() throws {
        let data = try AdvertisingData(decoding: bytes("04 08 48 52 4d   // Shortened Local Name \"HRM\""))
        XCTAssertEqual(data.localName, "HRM")
        XCTAssertNil(try AdvertisingData(decoding: bytes("02 01 06")).localName)
    }

    func testDescriptionOfEachKind() {
        let data = AdvertisingData([
            .flags(0x1A), .serviceUUIDs16([0x180D], complete: false), .serviceUUIDs128([nordicUART], complete: true),
            .localName(Array("HR".utf8), complete: false), .txPowerLevel(-4),
            .manufacturerData(companyID: 0x004C, data: [0x02, 0x15]), .serviceData(0x180F, data: [0x64], width: 2),
            .other(type: 0x19, data: [0xC1, 0x03]),
        ])
        XCTAssertEqual(data.description, "flags=0x1a services(incomplete)=[180D] "
            + "services=[6E400001-B5A3-F393-E0A9-E50E24DCCA9E] short-name=HR tx-power=-4 "
            + "manufacturer=0x4c:0215 service-data=180F:64 ad[0x19]=c103")
    }

    func testBuilderGroupsServicesByWidthAndAddsTheOptionalFields() {
        let data = AdvertisingData.make(flags: nil, name: "HRM", services: [nordicUART, 0x180D, BluetoothUUID(uuid32: 0x1234_5678), 0x180F],
                                        txPower: -8, manufacturer: (0x0059, [0x01]), serviceData: [(0x180F, [0x64])])
        XCTAssertEqual(data.encoded, bytes("""
            05 03 0d 18 0f 18               // Complete 16-bit list: 180D, 180F
            05 05 78 56 34 12               // Complete 32-bit list: 12345678
            11 07 \(nordicUARTWire)         // Complete 128-bit list: Nordic UART
            04 09 48 52 4d                  // Complete Local Name "HRM"
            02 0a f8                        // TX Power -8 dBm
            04 ff 59 00 01                  // Manufacturer 0x0059: 01
            04 16 0f 18 64                  // Service Data 180F: 64
            """))
        XCTAssertEqual(AdvertisingData.make().encoded, bytes("02 01 06"), "flags 0x06 by default, nothing else")
        XCTAssertEqual(AdvertisingData.legacyMaximumLength, 31)
    }

    // MARK: Early termination

    func testAZeroLengthStructureEndsTheData() throws {
        // Core 5.4, Vol 3, Part C, 11: a zero Length octet ends the significant part; the rest is padding.
        let data = try AdvertisingData(decoding: bytes("""
            02 01 06                    // Flags
            00                          // Length 0: end of significant part
            05 03 e0 ff 0d 18           // ignored
            """))
        XCTAssertEqual(data.structures, [.flags(0x06)])
    }

    func testPaddingToThirtyOneOctetsIsIgnored() throws {
        let wire = bytes("02 01 06") + [UInt8](repeating: 0, count: 28)
        XCTAssertEqual(try AdvertisingData(decoding: wire).structures, [.flags(0x06)])
    }

    func testEmptyInputs() throws {
        XCTAssertEqual(try AdvertisingData(decoding: []).structures, [])
        XCTAssertEqual(try AdvertisingData(decoding: [0x00]).structures, [])
        XCTAssertEqual(AdvertisingData().encoded, [])
    }

    // MARK: Malformed data: a typed error that says where, never a crash

    func testLengthRunningPastTheEnd() {
        XCTAssertThrowsDecodeError(.truncated(needed: 5, available: 3, at: 4)) {
            try AdvertisingData(decoding: bytes("""
                02 01 06                // Flags
                05 03 e0 ff             // Length 5 at offset 3, but only 3 octets follow it
                """))
        }
        XCTAssertThrowsDecodeError(.truncated(needed: 2, available: 0, at: 1), "a length octet at the very end") {
            try AdvertisingData(decoding: [0x02])
        }
    }

    func testUUIDListNotAMultipleOfItsWidth() {
        let cases: [(String, DecodeError)] = [
            ("04 03 e0 ff 0d            // 3 octets of 16-bit UUIDs",
             .invalidValue(field: "AD 0x3 UUID list length (multiple of 2)", value: 3, at: 2)),
            ("06 05 78 56 34 12 00      // 5 octets of 32-bit UUIDs",
             .invalidValue(field: "AD 0x5 UUID list length (multiple of 4)", value: 5, at: 2)),
            ("02 01 06  10 06 \(nordicUARTWire.dropLast(3))   // 15 octets of 128-bit UUIDs, after Flags",
             .invalidValue(field: "AD 0x6 UUID list length (multiple of 16)", value: 15, at: 5)),
        ]
        for (vector, error) in cases {
            XCTAssertThrowsDecodeError(error, vector) { try AdvertisingData(decoding: bytes(vector)) }
        }
    }

    func testTXPowerOfTheWrongSize() {
        XCTAssertThrowsDecodeError(.invalidValue(field: "TX Power Level length", value: 2, at: 5)) {
            try AdvertisingData(decoding: bytes("""
                02 01 06                // Flags
                03 0a f4 00             // TX Power Level with 2 octets (must be 1), data at offset 5
                """))
        }
        XCTAssertThrowsDecodeError(.invalidValue(field: "TX Power Level length", value: 0, at: 2)) {
            try AdvertisingData(decoding: bytes("01 0a   // TX Power Level with no octet"))
        }
    }

    func testManufacturerDataShorterThanItsCompanyIdentifier() {
        XCTAssertThrowsDecodeError(.truncated(needed: 2, available: 1, at: 2)) {
            try AdvertisingData(decoding: bytes("02 ff 4c   // one octet of a two-octet company identifier"))
        }
        XCTAssertThrowsDecodeError(.truncated(needed: 2, available: 0, at: 2)) {
            try AdvertisingData(decoding: bytes("01 ff"))
        }
    }

    func testServiceDataShorterThanItsUUID() {
        let cases: [(String, DecodeError)] = [
            ("02 16 0f                  // Service Data 16-bit, 1 of 2 UUID octets",
             .truncated(needed: 2, available: 1, at: 2)),
            ("04 20 78 56 34            // Service Data 32-bit, 3 of 4 UUID octets",
             .truncated(needed: 4, available: 3, at: 2)),
            ("02 01 06  05 21 01 02 03 04   // Service Data 128-bit, 4 of 16 UUID octets, after Flags",
             .truncated(needed: 16, available: 4, at: 5)),
        ]
        for (vector, error) in cases {
            XCTAssertThrowsDecodeError(error, vector) { try AdvertisingData(decoding: bytes(vector)) }
        }
    }

    func testFlagsOfOtherSizesAreKeptVerbatim() throws {
        // CSS Part A 1.3: the Flags field is "0 or more octets"; only one octet is typed.
        for vector in ["01 01", "03 01 06 00"] {
            let data = try AdvertisingData(decoding: bytes(vector))
            XCTAssertEqual(data.structures, [.other(type: 0x01, data: Array(bytes(vector).dropFirst(2)))])
            XCTAssertNil(data.flags)
            XCTAssertEqual(data.encoded, bytes(vector))
        }
    }

    func testAnErrorInALaterStructureFailsTheWhole() {
        // A scanner must not act on half of a malformed report.
        XCTAssertThrowsDecodeError(.truncated(needed: 8, available: 4, at: 4)) {
            try AdvertisingData(decoding: bytes("""
                02 01 06                // Flags: valid
                08 09 52 65 66          // Length 8 at offset 3, but only 4 octets follow: "Ref" cut short
                """))
        }
    }
}

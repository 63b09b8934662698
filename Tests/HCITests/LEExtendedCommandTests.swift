import BLEWire
@testable import HCI
import WireTestSupport
import XCTest

/// The extended advertising, scanning and initiating commands (Core 5.4, Vol 4, Part E,
/// 7.8.52–7.8.66) and the Bluetooth 5 LE Meta subevents (7.7.65.10, 7.7.65.13): byte vectors
/// with a comment per field, from the reference traffic where it has them.
final class LEExtendedCommandTests: XCTestCase {
    func assertCommand(_ command: HCICommand, _ expected: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(command.encoded.spacedHex, expected.spacedHex, "encoding of \(command)", file: file, line: line)
        XCTAssertEqual(Int(expected[2]), expected.count - 3, "vector's own Parameter_Total_Length", file: file, line: line)
        XCTAssertEqual(try HCICommand(decoding: expected), command, file: file, line: line)
    }

    func reference(_ packets: [ReferencePacket], _ number: Int, _ name: String, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        let packet = packets[number - 1]
        XCTAssertTrue(packet.summary.contains(name), "#\(number) is \(packet.summary)", file: file, line: line)
        return Array(packet.h4.dropFirst())
    }

    // MARK: Advertising (7.8.52–7.8.56)

    /// peripheral #31
    func testLESetAdvertisingSetRandomAddress() {
        assertCommand(.leSetAdvertisingSetRandomAddress(advertisingHandle: 0, address: ReferenceDevice.peripheral), bytes(
            "35 20",              // Opcode 0x2035 (OGF 0x08, OCF 0x035)
            "07",                 // Parameter_Total_Length
            "00",                 // Advertising_Handle
            "02 00 00 ee ff c0"   // Random_Address C0:FF:EE:00:00:02
        ))
        XCTAssertEqual(try HCICommand(decoding: reference(ReferenceTraffic.peripheral, 31, "LE Set Advertising Set Random Address")),
                       .leSetAdvertisingSetRandomAddress(advertisingHandle: 0, address: ReferenceDevice.peripheral))
    }

    /// peripheral #29: connectable, scannable, legacy PDUs, 100–1000 ms, own random address.
    func testLESetExtendedAdvertisingParametersMatchesReferenceTraffic() throws {
        let expected = LEExtendedAdvertisingParameters(
            advertisingHandle: 0, eventProperties: AdvertisingEventProperties(rawValue: 0x0013), intervalMin: 0xA0, intervalMax: 0x640,
            channelMap: 0x07, ownAddressType: .random, txPower: 127, primaryPHY: 1, secondaryMaxSkip: 0, secondaryPHY: 1, advertisingSID: 0)
        let vector = bytes(
            "36 20",              // Opcode 0x2036
            "19",                 // Parameter_Total_Length 25
            "00",                 // Advertising_Handle
            "13 00",              // Advertising_Event_Properties: connectable, scannable, legacy
            "a0 00 00",           // Primary_Advertising_Interval_Min 160 × 0.625 ms
            "40 06 00",           // Primary_Advertising_Interval_Max 1600 × 0.625 ms
            "07",                 // Primary_Advertising_Channel_Map: 37, 38, 39
            "01",                 // Own_Address_Type random
            "00",                 // Peer_Address_Type
            "00 00 00 00 00 00",  // Peer_Address
            "00",                 // Advertising_Filter_Policy
            "7f",                 // Advertising_TX_Power: no preference
            "01",                 // Primary_Advertising_PHY LE 1M
            "00",                 // Secondary_Advertising_Max_Skip
            "01",                 // Secondary_Advertising_PHY LE 1M
            "00",                 // Advertising_SID
            "00"                  // Scan_Request_Notification_Enable
        )
        assertCommand(.leSetExtendedAdvertisingParameters(expected), vector)
        XCTAssertEqual(reference(ReferenceTraffic.peripheral, 29, "LE Set Extended Advertising Parameters"), vector)
        XCTAssertTrue(expected.eventProperties.contains(.connectable))
        XCTAssertTrue(expected.eventProperties.contains(.legacy))
        XCTAssertFalse(expected.eventProperties.contains(.directed))
        // A flag octet other than 0 or 1 is invalid.
        var bad = vector
        bad[27] = 0x02
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bad), .invalidValue(field: "Scan_Request_Notification_Enable", value: 2, at: 27))
    }

    /// peripheral #33
    func testLESetExtendedAdvertisingDataMatchesReferenceTraffic() {
        let vector = bytes(
            "37 20",   // Opcode 0x2037
            "16",      // Parameter_Total_Length 22
            "00",      // Advertising_Handle
            "03",      // Operation: complete
            "01",      // Fragment_Preference: should not fragment
            "12",      // Advertising_Data_Length 18
            "02 01 06  05 03 e0 ff 0d 18  08 09 52 65 66 50 65 65 72"  // Flags, UUIDs, name "RefPeer"
        )
        assertCommand(.leSetExtendedAdvertisingData(LEExtendedAdvertisingData(data: ReferenceDevice.advertisingData)), vector)
        XCTAssertEqual(reference(ReferenceTraffic.peripheral, 33, "LE Set Extended Advertising Data"), vector)
    }

    /// 7.8.55 shares 7.8.54's layout; fragments say what they are.
    func testLESetExtendedScanResponseDataFragment() {
        assertCommand(.leSetExtendedScanResponseData(LEExtendedAdvertisingData(advertisingHandle: 1, operation: .lastFragment,
                                                                                fragmentPreference: 0, data: [0x02, 0x0A, 0x00])), bytes(
            "38 20",     // Opcode 0x2038
            "07",        // Parameter_Total_Length
            "01",        // Advertising_Handle
            "02",        // Operation: last fragment
            "00",        // Fragment_Preference: may fragment
            "03",        // Scan_Response_Data_Length
            "02 0a 00"   // TX Power Level 0 dBm
        ))
    }

    func testExtendedAdvertisingDataLengthMustMatchAndStayWithin251() {
        // Data_Length 5, 3 octets there.
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("37 20 07", "00 03 01", "05", "01 02 03")),
                                   .lengthMismatch(field: "Advertising_Data_Length", declared: 5, actual: 3))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("37 20 04", "00 03 01", "fc")),
                                   .invalidValue(field: "Advertising_Data_Length", value: 252, at: 6))
        let full = LEExtendedAdvertisingData(data: [UInt8](repeating: 0xAB, count: 251))
        XCTAssertEqual(try HCICommand(decoding: HCICommand.leSetExtendedAdvertisingData(full).encoded), .leSetExtendedAdvertisingData(full))
    }

    /// peripheral #35: one set, no duration, no event limit.
    func testLESetExtendedAdvertisingEnableMatchesReferenceTraffic() {
        let vector = bytes(
            "39 20",   // Opcode 0x2039
            "06",      // Parameter_Total_Length
            "01",      // Enable
            "01",      // Num_Sets
            "00",      // Advertising_Handle[0]
            "00 00",   // Duration[0]: until disabled
            "00"       // Max_Extended_Advertising_Events[0]: no limit
        )
        assertCommand(.leSetExtendedAdvertisingEnable(LEExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable()])), vector)
        XCTAssertEqual(reference(ReferenceTraffic.peripheral, 35, "LE Set Extended Advertising Enable"), vector)
        // Disable every set: Num_Sets 0.
        assertCommand(.leSetExtendedAdvertisingEnable(LEExtendedAdvertisingEnable(enable: false, sets: [])), bytes("39 20", "02", "00", "00"))
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingEnable(LEExtendedAdvertisingEnable(enable: false, sets: [])).description,
                       "LE Set Extended Advertising Enable off (all sets)")
        // Num_Sets 2 with one set's octets.
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("39 20 06", "01 02", "00 00 00 00")),
                                   .lengthMismatch(field: "LE Set Extended Advertising Enable (Num_Sets 2)", declared: 8, actual: 4))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("39 20 02", "02 00")), .invalidValue(field: "Enable", value: 2, at: 3))
    }

    // MARK: Scanning and initiating (7.8.64–7.8.66)

    /// central #29: active scanning on LE 1M and LE Coded, 60 ms interval and window on each.
    func testLESetExtendedScanParametersOnTwoPHYsMatchesReferenceTraffic() {
        let both = ExtendedScanPHYParameters(active: true, interval: 0x60, window: 0x60)
        let vector = bytes(
            "41 20",         // Opcode 0x2041
            "0d",            // Parameter_Total_Length 13
            "01",            // Own_Address_Type random
            "00",            // Scanning_Filter_Policy
            "05",            // Scanning_PHYs: LE 1M and LE Coded
            "01 60 00 60 00",  // LE 1M: Scan_Type active, Scan_Interval, Scan_Window
            "01 60 00 60 00"   // LE Coded: the same
        )
        assertCommand(.leSetExtendedScanParameters(LEExtendedScanParameters(ownAddressType: .random, phys: LEPHYs(rawValue: 0x05),
                                                                            perPHY: [both, both])), vector)
        XCTAssertEqual(reference(ReferenceTraffic.central, 29, "LE Set Extended Scan Parameters"), vector)
        // Two PHYs announced, one block there; no PHY at all.
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("41 20 08", "01 00 05", "01 60 00 60 00")),
                                   .lengthMismatch(field: "LE Set Extended Scan Parameters (Scanning_PHYs 0x05)", declared: 10, actual: 5))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("41 20 03", "01 00 00")),
                                   .invalidValue(field: "Scanning_PHYs", value: 0, at: 5))
    }

    /// central #31 and #35: on, then off.
    func testLESetExtendedScanEnableMatchesReferenceTraffic() {
        let on = bytes(
            "42 20",   // Opcode 0x2042
            "06",      // Parameter_Total_Length
            "01",      // Enable
            "00",      // Filter_Duplicates off
            "00 00",   // Duration: until disabled
            "00 00"    // Period: not periodic
        )
        assertCommand(.leSetExtendedScanEnable(LEExtendedScanEnable(enable: true)), on)
        XCTAssertEqual(reference(ReferenceTraffic.central, 31, "LE Set Extended Scan Enable"), on)
        XCTAssertEqual(try HCICommand(decoding: reference(ReferenceTraffic.central, 35, "LE Set Extended Scan Enable")),
                       .leSetExtendedScanEnable(LEExtendedScanEnable(enable: false)))
        assertCommand(.leSetExtendedScanEnable(LEExtendedScanEnable(enable: true, filterDuplicates: 2, duration: 0x0064, period: 0x0002)),
                      bytes("42 20 06", "01", "02", "64 00", "02 00"))
    }

    func testLEExtendedCreateConnection() {
        let block = ExtendedInitiatingPHYParameters(scanInterval: 0x0060, scanWindow: 0x0030, connectionIntervalMin: 0x0018,
                                                    connectionIntervalMax: 0x0028, maxLatency: 0, supervisionTimeout: 0x0048)
        let command = HCICommand.leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
            ownAddressType: .random, peer: LEAddress(ReferenceDevice.peripheral, type: .random), perPHY: [block]))
        assertCommand(command, bytes(
            "43 20",              // Opcode 0x2043
            "1a",                 // Parameter_Total_Length 26
            "00",                 // Initiator_Filter_Policy: the peer below
            "01",                 // Own_Address_Type random
            "01",                 // Peer_Address_Type random
            "02 00 00 ee ff c0",  // Peer_Address
            "01",                 // Initiating_PHYs: LE 1M
            "60 00",              // Scan_Interval 60 ms
            "30 00",              // Scan_Window 30 ms
            "18 00",              // Connection_Interval_Min 30 ms
            "28 00",              // Connection_Interval_Max 50 ms
            "00 00",              // Max_Latency
            "48 00",              // Supervision_Timeout 720 ms
            "00 00",              // Min_CE_Length
            "00 00"               // Max_CE_Length
        ))
        XCTAssertEqual(command.description, "LE Extended Create Connection to C0:FF:EE:00:00:02/random interval 30.0–50.0 ms timeout 720 ms")
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("43 20 0a", "00 01 01", "02 00 00 ee ff c0", "00")),
                                   .invalidValue(field: "Initiating_PHYs", value: 0, at: 12))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("43 20 0c", "00 01 01", "02 00 00 ee ff c0", "01", "60 00")),
                                   .lengthMismatch(field: "LE Extended Create Connection (Initiating_PHYs 0x01)", declared: 16, actual: 2))
    }

    // MARK: Events (7.7.65.10, 7.7.65.13)

    func testLEEnhancedConnectionCompleteV1() {
        let event = LEEnhancedConnectionComplete(
            handle: 0x0040, role: .central, peerAddressType: AddressType(rawValue: 0x03), peerAddress: ReferenceDevice.peripheral,
            localResolvablePrivateAddress: BDAddr(string: "4A:00:00:00:00:01")!, peerResolvablePrivateAddress: BDAddr(string: "5B:00:00:00:00:02")!,
            connectionInterval: 0x0018, peripheralLatency: 0, supervisionTimeout: 0x0048, centralClockAccuracy: 0)
        assertEvent(.leMeta(.enhancedConnectionComplete(event)), bytes(
            "3e 1f",              // LE Meta, length 31
            "0a",                 // Subevent_Code LE Enhanced Connection Complete [v1]
            "00",                 // Status
            "40 00",              // Connection_Handle
            "00",                 // Role central
            "03",                 // Peer_Address_Type: random (static) identity address
            "02 00 00 ee ff c0",  // Peer_Address
            "01 00 00 00 00 4a",  // Local_Resolvable_Private_Address
            "02 00 00 00 00 5b",  // Peer_Resolvable_Private_Address
            "18 00",              // Connection_Interval 30 ms
            "00 00",              // Peripheral_Latency
            "48 00",              // Supervision_Timeout 720 ms
            "00"                  // Central_Clock_Accuracy
        ))
        XCTAssertEqual(event.peerIdentity, LEAddress(ReferenceDevice.peripheral, type: .random))
        XCTAssertEqual(LEMetaEvent.enhancedConnectionComplete(event).description,
                       "LE Enhanced Connection Complete status success handle 0x0040 role central peer C0:FF:EE:00:00:02/random-identity interval 30.0 ms timeout 720 ms")
        // [v1] is exactly 30 octets after the subevent code.
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("3e 20 0a") + [UInt8](repeating: 0, count: 31)),
                                   .lengthMismatch(field: "LE Enhanced Connection Complete [v1]", declared: 30, actual: 31))
    }

    func testLEEnhancedConnectionCompleteV2() {
        var event = LEEnhancedConnectionComplete(handle: 0x0001, role: .peripheral, peerAddressType: .public, peerAddress: ReferenceDevice.central,
                                                 connectionInterval: 0x0006, supervisionTimeout: 0x000A, centralClockAccuracy: 0x05)
        event.version2 = .init(advertisingHandle: 0x00, syncHandle: 0x0FFF)
        assertEvent(.leMeta(.enhancedConnectionComplete(event)), bytes(
            "3e 22",              // LE Meta, length 34
            "29",                 // Subevent_Code LE Enhanced Connection Complete [v2]
            "00",                 // Status
            "01 00",              // Connection_Handle
            "01",                 // Role peripheral
            "00",                 // Peer_Address_Type public
            "01 00 00 ee ff c0",  // Peer_Address
            "00 00 00 00 00 00",  // Local_Resolvable_Private_Address: none
            "00 00 00 00 00 00",  // Peer_Resolvable_Private_Address: none
            "06 00",              // Connection_Interval 7.5 ms
            "00 00",              // Peripheral_Latency
            "0a 00",              // Supervision_Timeout 100 ms
            "05",                 // Central_Clock_Accuracy 50 ppm
            "00",                 // Advertising_Handle: set 0
            "ff 0f"               // Sync_Handle: none
        ))
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("3e 1f 29") + [UInt8](repeating: 0, count: 30)),
                                   .lengthMismatch(field: "LE Enhanced Connection Complete [v2]", declared: 33, actual: 30))
    }

    /// central #34: a scan response, field by field.
    func testLEExtendedAdvertisingReportMatchesReferenceTraffic() {
        let report = LEExtendedAdvertisingReport(
            eventType: .scanResponse, address: LEAddress(ReferenceDevice.peripheral, type: .random), primaryPHY: 1, secondaryPHY: 1,
            advertisingSID: 0, txPower: 0, rssi: -50, data: ReferenceDevice.advertisingData)
        let vector = bytes(
            "3e 2c",              // LE Meta, length 44
            "0d",                 // Subevent_Code LE Extended Advertising Report
            "01",                 // Num_Reports
            "08 00",              // Event_Type: scan response
            "01",                 // Address_Type random
            "02 00 00 ee ff c0",  // Address
            "01",                 // Primary_PHY LE 1M
            "01",                 // Secondary_PHY LE 1M
            "00",                 // Advertising_SID
            "00",                 // TX_Power 0 dBm
            "ce",                 // RSSI -50 dBm
            "00 00",              // Periodic_Advertising_Interval: none
            "00",                 // Direct_Address_Type
            "00 00 00 00 00 00",  // Direct_Address
            "12",                 // Data_Length 18
            "02 01 06  05 03 e0 ff 0d 18  08 09 52 65 66 50 65 65 72"
        )
        assertEvent(.leMeta(.extendedAdvertisingReport([report])), vector)
        XCTAssertEqual(Array(ReferenceTraffic.central[33].h4.dropFirst()), vector)
        XCTAssertTrue(report.eventType.isScanResponse)
        XCTAssertFalse(report.eventType.isConnectable)
        XCTAssertEqual(report.eventType.dataStatus, 0)
        // Data_Length past the end: a typed error.
        XCTAssertThrowsError(try HCIEvent(decoding: Array(vector.dropLast())))
    }

    func testIdentityAddressTypes() {
        XCTAssertEqual(AddressType(rawValue: 0x02).identity, .public)
        XCTAssertEqual(AddressType(rawValue: 0x03).identity, .random)
        XCTAssertEqual(AddressType.random.identity, .random)
        XCTAssertEqual(AddressType(rawValue: 0xFF).identity, AddressType(rawValue: 0xFF))  // anonymous stays
    }
}

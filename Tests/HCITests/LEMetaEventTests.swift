import BLEWire
@testable import HCI
import WireTestSupport
import XCTest

/// LE Meta events (Core 5.4, Vol 4, Part E, 7.7.65): Event_Code 0x3E, then Subevent_Code and its parameters.
final class LEMetaEventTests: XCTestCase {

    func assertLEMeta(_ event: LEMetaEvent, _ expected: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(expected[0], 0x3E, "vector is an LE Meta event", file: file, line: line)
        XCTAssertEqual(event.subevent, expected[2], file: file, line: line)
        assertEvent(.leMeta(event), expected, file: file, line: line)
    }

    // MARK: 7.7.65.1 LE Connection Complete

    func testLEConnectionCompleteAsCentralMatchesReferenceTraffic() {
        let ref = Array(ReferenceTraffic.central[38].h4.dropFirst())
        XCTAssertTrue(ReferenceTraffic.central[38].summary.contains("LE Connection Complete"))
        XCTAssertEqual(ref, bytes(
            "3e",                 // Event_Code LE Meta
            "13",                 // Parameter_Total_Length 19
            "01",                 // Subevent_Code LE Connection Complete
            "00",                 // Status success
            "01 00",              // Connection_Handle 0x0001
            "00",                 // Role central
            "01",                 // Peer_Address_Type random
            "02 00 00 ee ff c0",  // Peer_Address C0:FF:EE:00:00:02
            "0c 00",              // Connection_Interval 12 × 1.25 ms = 15 ms
            "00 00",              // Peripheral_Latency 0
            "48 00",              // Supervision_Timeout 72 × 10 ms = 720 ms
            "00"                  // Central_Clock_Accuracy 500 ppm
        ))
        let complete = LEConnectionComplete(handle: 0x0001, role: .central, peer: LEAddress(ReferenceDevice.peripheral, type: .random),
                                            connectionInterval: 0x000C, peripheralLatency: 0, supervisionTimeout: 0x0048,
                                            centralClockAccuracy: 0)
        assertLEMeta(.connectionComplete(complete), ref)
        XCTAssertEqual(complete.peer.description, "C0:FF:EE:00:00:02/random")
    }

    func testLEConnectionCompleteAsPeripheralMatchesReferenceTraffic() {
        let packet = ReferenceTraffic.peripheral[36]
        XCTAssertTrue(packet.summary.contains("LE Connection Complete"))
        XCTAssertEqual(Array(packet.h4.dropFirst()), bytes(
            "3e 13 01",           // LE Meta, length 19, LE Connection Complete
            "00",                 // Status
            "01 00",              // Connection_Handle 0x0001
            "01",                 // Role peripheral
            "01",                 // Peer_Address_Type random
            "01 00 00 ee ff c0",  // Peer_Address C0:FF:EE:00:00:01
            "0a 00",              // Connection_Interval 12.5 ms
            "00 00",              // Peripheral_Latency
            "0a 00",              // Supervision_Timeout 100 ms
            "07"                  // Central_Clock_Accuracy 20 ppm
        ))
        assertLEMeta(.connectionComplete(LEConnectionComplete(handle: 1, role: .peripheral, peer: LEAddress(ReferenceDevice.central, type: .random),
                                                              connectionInterval: 0x000A, supervisionTimeout: 0x000A,
                                                              centralClockAccuracy: 7)),
                     Array(packet.h4.dropFirst()))
    }

    func testLEConnectionCompleteFailure() {
        // A failed attempt still carries every field (7.7.65.1: the rest is not valid, but present).
        assertLEMeta(.connectionComplete(LEConnectionComplete(status: .connectionFailedToBeEstablished, handle: 0, role: .central,
                                                              peer: LEAddress(ReferenceDevice.peripheral, type: .public),
                                                              connectionInterval: 0, supervisionTimeout: 0)),
                     bytes("3e 13 01",
                           "3e",                 // Status Connection Failed To Be Established
                           "00 00 00 00",        // handle 0, role central, peer public
                           "02 00 00 ee ff c0",  // Peer_Address
                           "00 00 00 00 00 00",  // interval, latency, timeout
                           "00"))                // Central_Clock_Accuracy
    }

    // MARK: 7.7.65.2 LE Advertising Report

    func testLEAdvertisingReportWithOneReport() {
        let report = LEAdvertisingReport(eventType: .advInd, address: LEAddress(ReferenceDevice.peripheral, type: .random),
                                         data: ReferenceDevice.advertisingData, rssi: -60)
        assertLEMeta(.advertisingReport([report]), bytes(
            "3e",                                                     // Event_Code LE Meta
            "1e",                                                     // Parameter_Total_Length 30
            "02",                                                     // Subevent_Code LE Advertising Report
            "01",                                                     // Num_Reports
            "00",                                                     // Event_Type ADV_IND
            "01",                                                     // Address_Type random
            "02 00 00 ee ff c0",                                      // Address C0:FF:EE:00:00:02
            "12",                                                     // Data_Length 18
            "02 01 06 05 03 e0 ff 0d 18 08 09 52 65 66 50 65 65 72",  // Data
            "c4"                                                      // RSSI -60 dBm
        ))
        XCTAssertEqual(report.sender, LEAddress(ReferenceDevice.peripheral, type: .random))
        XCTAssertTrue(report.eventType.isConnectable)
    }

    func testLEAdvertisingReportWithSeveralReports() {
        // The layout BLELab uses (and controllers send): each report's fields one after another.
        let advInd = LEAdvertisingReport(eventType: .advInd, address: LEAddress(ReferenceDevice.peripheral, type: .random),
                                         data: bytes("02 01 06"), rssi: -60)
        let scanRsp = LEAdvertisingReport(eventType: .scanRsp, address: LEAddress(ReferenceDevice.peripheral, type: .random),
                                          data: bytes("08 09 52 65 66 50 65 65 72"), rssi: -61)
        let nonconn = LEAdvertisingReport(eventType: .advNonconnInd, address: LEAddress(ReferenceDevice.central, type: .public),
                                          data: [], rssi: 127)
        assertLEMeta(.advertisingReport([advInd, scanRsp, nonconn]), bytes(
            "3e",                            // Event_Code LE Meta
            "2c",                            // Parameter_Total_Length 44 = 2 + 13 + 19 + 10
            "02",                            // Subevent_Code LE Advertising Report
            "03",                            // Num_Reports 3
            "00 01 02 00 00 ee ff c0",       // [0] ADV_IND, random, C0:FF:EE:00:00:02
            "03",                            // [0] Data_Length
            "02 01 06",                      // [0] Flags
            "c4",                            // [0] RSSI -60
            "04 01 02 00 00 ee ff c0",       // [1] SCAN_RSP, random, C0:FF:EE:00:00:02
            "09",                            // [1] Data_Length
            "08 09 52 65 66 50 65 65 72",    // [1] Complete Local Name "RefPeer"
            "c3",                            // [1] RSSI -61
            "03 00 01 00 00 ee ff c0",       // [2] ADV_NONCONN_IND, public, C0:FF:EE:00:00:01
            "00",                            // [2] Data_Length 0
            "7f"                             // [2] RSSI 127: not available
        ))
        XCTAssertFalse(nonconn.eventType.isConnectable)
    }

    func testLEAdvertisingReportWith31OctetsOfData() {
        let data = [UInt8](repeating: 0xAB, count: 31)
        let report = LEAdvertisingReport(eventType: .advScanInd, address: LEAddress(ReferenceDevice.central, type: .public),
                                         data: data, rssi: -127)
        assertLEMeta(.advertisingReport([report]),
                     bytes("3e 2b 02 01",  // LE Meta, length 43, LE Advertising Report, one report
                           "02 00 01 00 00 ee ff c0",  // ADV_SCAN_IND, public, C0:FF:EE:00:00:01
                           "1f")           // Data_Length 31, the maximum
                        + data + bytes("81"))  // RSSI -127
    }

    // MARK: 7.7.65.3 LE Connection Update Complete

    func testLEConnectionUpdateComplete() {
        assertLEMeta(.connectionUpdateComplete(LEConnectionUpdateComplete(handle: 0x0001, connectionInterval: 0x0028,
                                                                          peripheralLatency: 4, supervisionTimeout: 0x01F4)),
                     bytes("3e",     // Event_Code LE Meta
                           "0a",     // Parameter_Total_Length 10
                           "03",     // Subevent_Code LE Connection Update Complete
                           "00",     // Status
                           "01 00",  // Connection_Handle 0x0001
                           "28 00",  // Connection_Interval 50 ms
                           "04 00",  // Peripheral_Latency 4
                           "f4 01")) // Supervision_Timeout 5 s
        assertLEMeta(.connectionUpdateComplete(LEConnectionUpdateComplete(status: .unacceptableConnectionParameters, handle: 0x0002,
                                                                          connectionInterval: 0, peripheralLatency: 0, supervisionTimeout: 0)),
                     bytes("3e 0a 03", "3b", "02 00", "00 00 00 00 00 00"))  // Status 0x3B Unacceptable Connection Parameters
    }

    // MARK: 7.7.65.6 LE Remote Connection Parameter Request

    func testLERemoteConnectionParameterRequest() {
        assertLEMeta(.remoteConnectionParameterRequest(LERemoteConnectionParameterRequest(
            handle: 0x0001, intervalMin: 0x0010, intervalMax: 0x0018, maxLatency: 2, timeout: 0x0190)),
                     bytes("3e",     // Event_Code LE Meta
                           "0b",     // Parameter_Total_Length 11
                           "06",     // Subevent_Code LE Remote Connection Parameter Request
                           "01 00",  // Connection_Handle 0x0001
                           "10 00",  // Interval_Min 20 ms
                           "18 00",  // Interval_Max 30 ms
                           "02 00",  // Max_Latency 2
                           "90 01")) // Timeout 4 s
        // One octet short: a typed error, never a crash.
        XCTAssertThrowsError(try HCIEvent(decoding: bytes("3e 0a 06 01 00 10 00 18 00 02 00 90")))
        XCTAssertEqual(LEMetaEvent.remoteConnectionParameterRequest(LERemoteConnectionParameterRequest(
            handle: 1, intervalMin: 0x10, intervalMax: 0x18, maxLatency: 2, timeout: 0x190)).description,
                       "LE Remote Connection Parameter Request handle 0x0001 interval 20.0–30.0 ms latency 2 timeout 4000 ms")
    }

    // MARK: Subevents outside the subset

    /// central #33/#34: LE Extended Advertising Report (0x0D) decodes to its case and re-encodes
    /// byte for byte (field by field in LEExtendedCommandTests).
    func testLEExtendedAdvertisingReportFromReferenceTrafficDecodesAndReencodesIdentically() throws {
        for (index, isScanResponse) in [(32, false), (33, true)] {
            let packet = ReferenceTraffic.central[index]
            XCTAssertTrue(packet.summary.contains("LE Extended Advertising Report"))
            let event = Array(packet.h4.dropFirst())
            XCTAssertEqual(Array(event.prefix(3)), bytes("3e", "2c", "0d"))  // LE Meta, length 44, subevent 0x0D
            let decoded = try HCIEvent(decoding: event)
            guard case let .leMeta(.extendedAdvertisingReport(reports)) = decoded else { return XCTFail("\(decoded)") }
            XCTAssertEqual(reports.count, 1)
            XCTAssertEqual(reports[0].senderIdentity, LEAddress(ReferenceDevice.peripheral, type: .random))
            XCTAssertEqual(reports[0].eventType.isScanResponse, isScanResponse)
            XCTAssertEqual(reports[0].data, ReferenceDevice.advertisingData)
            XCTAssertEqual(decoded.encoded, event)
            XCTAssertEqual(try HCIPacket(h4: packet.h4).h4, packet.h4)
            XCTAssertTrue(decoded.description.hasPrefix("LE Extended Advertising Report "), decoded.description)
        }
    }

    func testLEAdvertisingSetTerminatedFromReferenceTrafficIsUnknown() throws {
        let packet = ReferenceTraffic.peripheral[37]
        XCTAssertTrue(packet.summary.contains("LE Advertising Set Terminated"))
        assertLEMeta(.unknown(subevent: 0x12, parameters: bytes("00 00 01 00 00")),
                     bytes("3e 06",  // LE Meta, length 6
                           "12",     // Subevent_Code LE Advertising Set Terminated
                           "00",     // Status
                           "00",     // Advertising_Handle
                           "01 00",  // Connection_Handle 0x0001
                           "00"))    // Num_Completed_Extended_Advertising_Events
        XCTAssertEqual(try HCIEvent(decoding: Array(packet.h4.dropFirst())), .leMeta(.unknown(subevent: 0x12, parameters: bytes("00 00 01 00 00"))))
    }

    func testUnknownSubeventWithoutParameters() {
        assertLEMeta(.unknown(subevent: 0xFF, parameters: []), bytes("3e 01 ff"))
    }

    // MARK: Descriptions

    func testDescriptions() {
        let complete = LEMetaEvent.connectionComplete(LEConnectionComplete(handle: 1, role: .central, peer: LEAddress(ReferenceDevice.peripheral, type: .random),
                                                                           connectionInterval: 12, supervisionTimeout: 72))
        XCTAssertEqual(complete.description,
                       "LE Connection Complete status success handle 0x0001 role central peer C0:FF:EE:00:00:02/random interval 15.0 ms timeout 720 ms")
        let report = LEMetaEvent.advertisingReport([LEAdvertisingReport(eventType: .advInd, address: LEAddress(ReferenceDevice.peripheral, type: .random),
                                                                        data: ReferenceDevice.advertisingData, rssi: -60)])
        XCTAssertTrue(report.description.hasPrefix("LE Advertising Report ADV_IND C0:FF:EE:00:00:02/random rssi -60 ["), report.description)
        let update = LEMetaEvent.connectionUpdateComplete(LEConnectionUpdateComplete(handle: 1, connectionInterval: 40, peripheralLatency: 4,
                                                                                    supervisionTimeout: 500))
        XCTAssertEqual(update.description, "LE Connection Update Complete status success handle 0x0001 interval 50.0 ms latency 4 timeout 5000 ms")
        XCTAssertEqual(AdvertisingReportType(rawValue: 0x09).description, "Event_Type 0x09")
        XCTAssertEqual(ConnectionRole(rawValue: 0x02).description, "role 0x02")
    }
}

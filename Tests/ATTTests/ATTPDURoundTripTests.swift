@testable import ATT
import BLEWire
import WireTestSupport
import XCTest

/// Every PDU both ways: decode(encode(x)) == x and encode(decode(octets)) == octets. Vectors are
/// commented field by field.
final class ATTPDURoundTripTests: XCTestCase {
    func testErrorResponse() {
        assertRoundTrip(ATTErrorResponse(requestOpcode: .writeRequest, handle: 0x0010, error: .writeNotPermitted),
                        "01"        // Error Response
                        + " 12"     // Request Opcode In Error: Write Request
                        + " 10 00"  // Attribute Handle In Error 0x0010
                        + " 03",    // Error Code: Write Not Permitted
                        as: ATTPDU.errorResponse)
    }

    func testExchangeMTU() {
        assertRoundTrip(ATTExchangeMTURequest(clientRxMTU: 185),
                        "02 b9 00",  // opcode, Client Rx MTU 185
                        as: ATTPDU.exchangeMTURequest)
        assertRoundTrip(ATTExchangeMTUResponse(serverRxMTU: 517),
                        "03 05 02",  // opcode, Server Rx MTU 517
                        as: ATTPDU.exchangeMTUResponse)
    }

    func testFindInformation() {
        assertRoundTrip(ATTFindInformationRequest(start: 0x0009, end: 0xFFFF),
                        "04 09 00 ff ff",  // opcode, Starting Handle 0x0009, Ending Handle 0xFFFF
                        as: ATTPDU.findInformationRequest)
        assertRoundTrip(ATTFindInformationResponse(format: .uuid16, entries: [
            ATTHandleUUID(handle: 0x0009, uuid: .clientCharacteristicConfiguration),
            ATTHandleUUID(handle: 0x000A, uuid: .characteristicUserDescription),
        ]), "05"          // opcode
            + " 01"       // Format: 16-bit UUIDs
            + " 09 00 02 29"  // handle 0x0009, UUID 0x2902
            + " 0a 00 01 29", // handle 0x000A, UUID 0x2901
            as: ATTPDU.findInformationResponse)
        let uuid128 = BluetoothUUID(string: "6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
        assertRoundTrip(ATTFindInformationResponse(format: .uuid128, entries: [ATTHandleUUID(handle: 0x0020, uuid: uuid128)]),
                        "05 02"   // opcode, Format: 128-bit UUIDs
                        + " 20 00"  // handle 0x0020
                        + " 9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 02 00 40 6e",  // UUID, little-endian
                        as: ATTPDU.findInformationResponse)
    }

    func testFindByTypeValue() {
        assertRoundTrip(ATTFindByTypeValueRequest(range: .all, attributeType: .primaryService, value: [0x0D, 0x18]),
                        "06"         // opcode
                        + " 01 00 ff ff"  // Starting Handle 0x0001, Ending Handle 0xFFFF
                        + " 00 28"   // Attribute Type 0x2800 (Primary Service)
                        + " 0d 18",  // Attribute Value: UUID 0x180D
                        as: ATTPDU.findByTypeValueRequest)
        assertRoundTrip(ATTFindByTypeValueResponse(handles: [ATTHandleRange(start: 0x0017, end: 0x001A),
                                                             ATTHandleRange(start: 0x0030, end: 0xFFFF)]),
                        "07"             // opcode
                        + " 17 00 1a 00" // Found Attribute Handle 0x0017, Group End Handle 0x001A
                        + " 30 00 ff ff",
                        as: ATTPDU.findByTypeValueResponse)
    }

    func testReadByType() {
        assertRoundTrip(ATTReadByTypeRequest(range: ATTHandleRange(start: 0x0001, end: 0x0005), attributeType: .characteristic),
                        "08 01 00 05 00"  // opcode, Starting Handle, Ending Handle
                        + " 03 28",       // Attribute Type 0x2803 (Characteristic)
                        as: ATTPDU.readByTypeRequest)
        let uuid128 = BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        assertRoundTrip(ATTReadByTypeRequest(range: .all, attributeType: uuid128),
                        "08 01 00 ff ff 9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 01 00 40 6e",
                        as: ATTPDU.readByTypeRequest)
        assertRoundTrip(ATTReadByTypeResponse(entries: [
            ATTHandleValue(handle: 0x0002, value: [0x02, 0x03, 0x00, 0x00, 0x2A]),
            ATTHandleValue(handle: 0x0004, value: [0x02, 0x05, 0x00, 0x01, 0x2A]),
        ]), "09"                     // opcode
            + " 07"                  // Length: 2 + 5
            + " 02 00 02 03 00 00 2a"  // handle 0x0002: properties read, value handle 0x0003, UUID 0x2A00
            + " 04 00 02 05 00 01 2a", // handle 0x0004: read, 0x0005, 0x2A01
            as: ATTPDU.readByTypeResponse)
    }

    func testReadByGroupType() {
        assertRoundTrip(ATTReadByGroupTypeRequest(range: .all, groupType: .primaryService),
                        "10 01 00 ff ff 00 28",  // opcode, 0x0001..0xFFFF, group type 0x2800
                        as: ATTPDU.readByGroupTypeRequest)
        assertRoundTrip(ATTReadByGroupTypeResponse(entries: [
            ATTGroupData(handle: 0x0001, endGroupHandle: 0x0005, value: [0x00, 0x18]),
            ATTGroupData(handle: 0x0006, endGroupHandle: 0x000D, value: [0x01, 0x18]),
        ]), "11"                 // opcode
            + " 06"              // Length: 4 + 2
            + " 01 00 05 00 00 18"  // 0x0001..0x0005 UUID 0x1800
            + " 06 00 0d 00 01 18", // 0x0006..0x000D UUID 0x1801
            as: ATTPDU.readByGroupTypeResponse)
    }

    func testReadBlobAndMultiple() {
        assertRoundTrip(ATTReadRequest(handle: 0x0010), "0a 10 00", as: ATTPDU.readRequest)
        assertRoundTrip(ATTReadResponse(value: Array("init".utf8)), "0b 69 6e 69 74", as: ATTPDU.readResponse)
        assertRoundTrip(ATTReadResponse(value: []), "0b", as: ATTPDU.readResponse)
        assertRoundTrip(ATTReadBlobRequest(handle: 0x0016, offset: 44),
                        "0c 16 00 2c 00",  // opcode, handle 0x0016, Value Offset 44
                        as: ATTPDU.readBlobRequest)
        assertRoundTrip(ATTReadBlobResponse(partValue: [0x5C, 0x5D]), "0d 5c 5d", as: ATTPDU.readBlobResponse)
        assertRoundTrip(ATTReadMultipleRequest(handles: [0x0003, 0x0005]),
                        "0e 03 00 05 00",  // opcode, Set Of Handles 0x0003 0x0005
                        as: ATTPDU.readMultipleRequest)
        assertRoundTrip(ATTReadMultipleResponse(values: [0x41, 0x42, 0x00, 0x00]),
                        "0f 41 42 00 00",  // opcode, Set Of Values concatenated
                        as: ATTPDU.readMultipleResponse)
    }

    func testWrites() {
        assertRoundTrip(ATTWriteRequest(handle: 0x0010, value: Array("req".utf8)),
                        "12 10 00 72 65 71",  // opcode, handle 0x0010, value "req"
                        as: ATTPDU.writeRequest)
        assertRoundTrip(ATTWriteResponse(), "13", as: ATTPDU.writeResponse)
        assertRoundTrip(ATTWriteCommand(handle: 0x0012, value: Array("cmd".utf8)),
                        "52 12 00 63 6d 64",  // opcode, handle 0x0012, value "cmd"
                        as: ATTPDU.writeCommand)
        assertRoundTrip(ATTSignedWriteCommand(handle: 0x0012, value: [0xAA], signature: Array(1...12)),
                        "d2 12 00"                               // opcode, handle 0x0012
                        + " aa"                                  // value
                        + " 01 02 03 04 05 06 07 08 09 0a 0b 0c", // Authentication Signature (12)
                        as: ATTPDU.signedWriteCommand)
    }

    func testQueuedWrites() {
        assertRoundTrip(ATTPrepareWriteRequest(handle: 0x0010, offset: 36, partValue: [0x24, 0x25, 0x26, 0x27]),
                        "16 10 00 24 00"  // opcode, handle 0x0010, Value Offset 36
                        + " 24 25 26 27", // Part Attribute Value
                        as: ATTPDU.prepareWriteRequest)
        assertRoundTrip(ATTPrepareWriteResponse(handle: 0x0010, offset: 36, partValue: [0x24, 0x25, 0x26, 0x27]),
                        "17 10 00 24 00 24 25 26 27",
                        as: ATTPDU.prepareWriteResponse)
        assertRoundTrip(ATTExecuteWriteRequest(flags: .write), "18 01", as: ATTPDU.executeWriteRequest)
        assertRoundTrip(ATTExecuteWriteRequest(flags: .cancel), "18 00", as: ATTPDU.executeWriteRequest)
        assertRoundTrip(ATTExecuteWriteResponse(), "19", as: ATTPDU.executeWriteResponse)
    }

    func testHandleValue() {
        assertRoundTrip(ATTHandleValueNotification(handle: 0x0019, value: [0x00, 0x3C]),
                        "1b 19 00 00 3c",  // opcode, handle 0x0019, value: flags 0x00, 60 bpm
                        as: ATTPDU.handleValueNotification)
        assertRoundTrip(ATTHandleValueIndication(handle: 0x001D, value: [0x00, 0x6E, 0x01, 0x00, 0xFF]),
                        "1d 1d 00 00 6e 01 00 ff",
                        as: ATTPDU.handleValueIndication)
        assertRoundTrip(ATTHandleValueConfirmation(), "1e", as: ATTPDU.handleValueConfirmation)
    }

    func testUnknownOpcodeKeepsParameters() throws {
        let octets = bytes("20 03 00 05 00")  // Read Multiple Variable Request: not implemented
        let pdu = try ATTPDU(decoding: octets)
        XCTAssertEqual(pdu, .unknown(opcode: .readMultipleVariableRequest, parameters: [0x03, 0x00, 0x05, 0x00]))
        XCTAssertEqual(pdu.encoded, octets)
        XCTAssertEqual(try ATTPDU(decoding: [0x7F]), .unknown(opcode: ATTOpcode(0x7F), parameters: []))
    }

    func testDescriptionsUseSpecTerms() {
        XCTAssertEqual(ATTPDU.writeRequest(ATTWriteRequest(handle: 0x0010, value: [0x72, 0x65, 0x71])).description,
                       "Write Request handle 0x0010 value 72 65 71")
        XCTAssertEqual(ATTPDU.errorResponse(ATTErrorResponse(requestOpcode: .readRequest, handle: 0x0003,
                                                              error: .readNotPermitted)).description,
                       "Error Response to Read Request handle 0x0003: read-not-permitted (0x02)")
        XCTAssertEqual(ATTPDU.readByGroupTypeRequest(ATTReadByGroupTypeRequest(range: .all, groupType: .primaryService)).description,
                       "Read By Group Type Request handles 0x0001..0xffff type 2800")
        XCTAssertTrue(ATTPDU.describe([0x12, 0x10]).hasPrefix("malformed ATT PDU 12 10"))
    }
}

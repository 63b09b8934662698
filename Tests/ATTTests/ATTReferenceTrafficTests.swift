@testable import ATT
import BLEWire
import WireTestSupport
import XCTest

/// ATT PDUs from /work/shared/reference-traffic/central.txt: one GATT session between two Bumble
/// 0.0.236 devices (an independent stack). Each entry: packet number and tshark's summary, then the
/// ATT PDU (the ACL payload after the 4-octet L2CAP header). peripheral.txt holds the same PDUs.
let referenceATTPDUs: [(String, String)] = [
        ("40 Sent Read By Group Type Request, Primary Service, Handles: 0…", "10 01 00 ff ff 00 28"),
        ("42 Rcvd Read By Group Type Response, Attribute List Length: 3, …", "11 06 01 00 05 00 00 18 06 00 0d 00 01 18 0e 00 16 00 e0 ff"),
        ("43 Sent Read By Group Type Request, Primary Service, Handles: 0…", "10 17 00 ff ff 00 28"),
        ("45 Rcvd Read By Group Type Response, Attribute List Length: 2, …", "11 06 17 00 1a 00 0d 18 1b 00 1e 00 09 18"),
        ("46 Sent Read By Group Type Request, Primary Service, Handles: 0…", "10 1f 00 ff ff 00 28"),
        ("48 Rcvd Error Response - Attribute Not Found, Handle: 0x001f (H…", "01 10 1f 00 0a"),
        ("49 Sent Read By Type Request, Characteristic, Handles: 0x0001..…", "08 01 00 05 00 03 28"),
        ("51 Rcvd Read By Type Response, Attribute List Length: 2, Device…", "09 07 02 00 02 03 00 00 2a 04 00 02 05 00 01 2a"),
        ("52 Sent Read By Type Request, Characteristic, Handles: 0x0005..…", "08 05 00 05 00 03 28"),
        ("54 Rcvd Error Response - Attribute Not Found, Handle: 0x0005 (G…", "01 08 05 00 0a"),
        ("55 Sent Read By Type Request, Characteristic, Handles: 0x0006..…", "08 06 00 0d 00 03 28"),
        ("57 Rcvd Read By Type Response, Attribute List Length: 3, Servic…", "09 07 07 00 20 08 00 05 2a 0a 00 0a 0b 00 29 2b 0c 00 02 0d 00 2a 2b"),
        ("58 Sent Read By Type Request, Characteristic, Handles: 0x000d..…", "08 0d 00 0d 00 03 28"),
        ("60 Rcvd Error Response - Attribute Not Found, Handle: 0x000d (G…", "01 08 0d 00 0a"),
        ("61 Sent Find Information Request, Handles: 0x0009..0x0009", "04 09 00 09 00"),
        ("63 Rcvd Find Information Response, Handle: 0x0009 (Generic Attr…", "05 01 09 00 02 29"),
        ("64 Sent Read By Type Request, Characteristic, Handles: 0x000e..…", "08 0e 00 16 00 03 28"),
        ("66 Rcvd Read By Type Response, Attribute List Length: 3, Unknow…", "09 07 0f 00 0a 10 00 e1 ff 11 00 04 12 00 e2 ff 13 00 02 14 00 e3 ff"),
        ("67 Sent Read By Type Request, Characteristic, Handles: 0x0014..…", "08 14 00 16 00 03 28"),
        ("69 Rcvd Read By Type Response, Attribute List Length: 1, Unknow…", "09 07 15 00 02 16 00 e4 ff"),
        ("70 Sent Read By Type Request, Characteristic, Handles: 0x0016..…", "08 16 00 16 00 03 28"),
        ("72 Rcvd Error Response - Attribute Not Found, Handle: 0x0016 (U…", "01 08 16 00 0a"),
        ("73 Sent Read By Type Request, Characteristic, Handles: 0x0017..…", "08 17 00 1a 00 03 28"),
        ("75 Rcvd Read By Type Response, Attribute List Length: 1, Heart …", "09 07 18 00 10 19 00 37 2a"),
        ("76 Sent Read By Type Request, Characteristic, Handles: 0x0019..…", "08 19 00 1a 00 03 28"),
        ("78 Rcvd Error Response - Attribute Not Found, Handle: 0x0019 (H…", "01 08 19 00 0a"),
        ("79 Sent Find Information Request, Handles: 0x001a..0x001a", "04 1a 00 1a 00"),
        ("81 Rcvd Find Information Response, Handle: 0x001a (Heart Rate: …", "05 01 1a 00 02 29"),
        ("82 Sent Read By Type Request, Characteristic, Handles: 0x001b..…", "08 1b 00 1e 00 03 28"),
        ("84 Rcvd Read By Type Response, Attribute List Length: 1, Temper…", "09 07 1c 00 20 1d 00 1c 2a"),
        ("85 Sent Read By Type Request, Characteristic, Handles: 0x001d..…", "08 1d 00 1e 00 03 28"),
        ("87 Rcvd Error Response - Attribute Not Found, Handle: 0x001d (H…", "01 08 1d 00 0a"),
        ("88 Sent Find Information Request, Handles: 0x001e..0x001e", "04 1e 00 1e 00"),
        ("90 Rcvd Find Information Response, Handle: 0x001e (Health Therm…", "05 01 1e 00 02 29"),
        ("91 Sent Read Request, Handle: 0x0010 (Unknown: Unknown)", "0a 10 00"),
        ("93 Rcvd Read Response, Handle: 0x0010 (Unknown: Unknown)", "0b 69 6e 69 74"),
        ("94 Sent Read Request, Handle: 0x0016 (Unknown: Unknown)", "0a 16 00"),
        ("96 Rcvd Read Response, Handle: 0x0016 (Unknown: Unknown)", "0b 30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e 3f 40 41 42 43 44 45"),
        ("97 Sent Read Blob Request, Handle: 0x0016 (Unknown: Unknown), O…", "0c 16 00 16 00"),
        ("99 Rcvd Read Blob Response, Handle: 0x0016 (Unknown: Unknown)", "0d 46 47 48 49 4a 4b 4c 4d 4e 4f 50 51 52 53 54 55 56 57 58 59 5a 5b"),
        ("100 Sent Read Blob Request, Handle: 0x0016 (Unknown: Unknown), O…", "0c 16 00 2c 00"),
        ("102 Rcvd Read Blob Response, Handle: 0x0016 (Unknown: Unknown)", "0d 5c 5d 5e 5f 60 61 62 63 64 65 66 67 68 69 6a 6b"),
        ("103 Sent Write Request, Handle: 0x0010 (Unknown: Unknown)", "12 10 00 72 65 71"),
        ("105 Rcvd Write Response, Handle: 0x0010 (Unknown: Unknown)", "13"),
        ("106 Sent Write Command, Handle: 0x0012 (Unknown: Unknown)", "52 12 00 63 6d 64"),
        ("107 Sent Read Request, Handle: 0x0014 (Unknown: Unknown)", "0a 14 00"),
        ("110 Rcvd Read Response, Handle: 0x0014 (Unknown: Unknown)", "0b 72 65 61 64 2d 6f 6e 6c 79"),
        ("111 Sent Prepare Write Request, Handle: 0x0010 (Unknown: Unknown…", "16 10 00 00 00 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11"),
        ("113 Rcvd Prepare Write Response, Handle: 0x0010 (Unknown: Unknow…", "17 10 00 00 00 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11"),
        ("114 Sent Prepare Write Request, Handle: 0x0010 (Unknown: Unknown…", "16 10 00 12 00 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f 20 21 22 23"),
        ("116 Rcvd Prepare Write Response, Handle: 0x0010 (Unknown: Unknow…", "17 10 00 12 00 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f 20 21 22 23"),
        ("117 Sent Prepare Write Request, Handle: 0x0010 (Unknown: Unknown…", "16 10 00 24 00 24 25 26 27"),
        ("119 Rcvd Prepare Write Response, Handle: 0x0010 (Unknown: Unknow…", "17 10 00 24 00 24 25 26 27"),
        ("120 Sent Execute Write Request, Immediately Write All", "18 01"),
        ("122 Rcvd Execute Write Response", "19"),
        ("123 Sent Find Information Request, Handles: 0x001a..0x001a", "04 1a 00 1a 00"),
        ("125 Rcvd Find Information Response, Handle: 0x001a (Heart Rate: …", "05 01 1a 00 02 29"),
        ("126 Sent Write Request, Handle: 0x001a (Heart Rate: Heart Rate M…", "12 1a 00 01 00"),
        ("128 Rcvd Write Response, Handle: 0x001a (Heart Rate: Heart Rate …", "13"),
        ("129 Sent Find Information Request, Handles: 0x001e..0x001e", "04 1e 00 1e 00"),
        ("131 Rcvd Find Information Response, Handle: 0x001e (Health Therm…", "05 01 1e 00 02 29"),
        ("132 Sent Write Request, Handle: 0x001e (Health Thermometer: Temp…", "12 1e 00 02 00"),
        ("134 Rcvd Write Response, Handle: 0x001e (Health Thermometer: Tem…", "13"),
        ("135 Rcvd Handle Value Notification, Handle: 0x0019 (Heart Rate: …", "1b 19 00 00 3c"),
        ("136 Rcvd Handle Value Notification, Handle: 0x0019 (Heart Rate: …", "1b 19 00 00 3d"),
        ("137 Rcvd Handle Value Notification, Handle: 0x0019 (Heart Rate: …", "1b 19 00 00 3b"),
        ("138 Rcvd Handle Value Indication, Handle: 0x001d (Health Thermom…", "1d 1d 00 00 6e 01 00 ff"),
        ("139 Sent Handle Value Confirmation, Handle: 0x001d (Health Therm…", "1e"),
        ("141 Sent Exchange MTU Request, Client Rx MTU: 185", "02 b9 00"),
        ("143 Rcvd Exchange MTU Response, Server Rx MTU: 517", "03 05 02"),
]

final class ATTReferenceTrafficTests: XCTestCase {
    /// Every PDU another implementation sent decodes, and re-encodes to the same octets.
    func testEveryReferencePDUDecodesAndReencodes() throws {
        XCTAssertEqual(referenceATTPDUs.count, 70)
        for (summary, hex) in referenceATTPDUs {
            let octets = bytes(hex)
            let pdu = try ATTPDU(decoding: octets)
            if case .unknown = pdu { XCTFail("\(summary) decoded as unknown") }
            XCTAssertEqual(pdu.encoded, octets, summary)
        }
    }

    func testPrimaryServiceDiscoveryVectors() throws {
        // 40: Read By Group Type Request, Primary Service, 0x0001..0xffff
        XCTAssertEqual(try ATTPDU(decoding: bytes("10 01 00 ff ff 00 28")),
                       .readByGroupTypeRequest(ATTReadByGroupTypeRequest(range: .all, groupType: .primaryService)))
        // 42: three services: GAP 0x0001..0x0005, GATT 0x0006..0x000D, FFE0 0x000E..0x0016
        XCTAssertEqual(try ATTPDU(decoding: bytes("11 06 01 00 05 00 00 18 06 00 0d 00 01 18 0e 00 16 00 e0 ff")),
                       .readByGroupTypeResponse(ATTReadByGroupTypeResponse(entries: [
                           ATTGroupData(handle: 0x0001, endGroupHandle: 0x0005, value: [0x00, 0x18]),
                           ATTGroupData(handle: 0x0006, endGroupHandle: 0x000D, value: [0x01, 0x18]),
                           ATTGroupData(handle: 0x000E, endGroupHandle: 0x0016, value: [0xE0, 0xFF]),
                       ])))
        // 48: Error Response - Attribute Not Found, handle 0x001f
        XCTAssertEqual(try ATTPDU(decoding: bytes("01 10 1f 00 0a")),
                       .errorResponse(ATTErrorResponse(requestOpcode: .readByGroupTypeRequest, handle: 0x001F,
                                                       error: .attributeNotFound)))
    }

    func testCharacteristicAndDescriptorDiscoveryVectors() throws {
        // 66: FFE1 (read|write 0x0A) value 0x0010, FFE2 (write-without-response) 0x0012, FFE3 (read) 0x0014
        XCTAssertEqual(try ATTReadByTypeResponse(decoding: bytes("09 07 0f 00 0a 10 00 e1 ff 11 00 04 12 00 e2 ff 13 00 02 14 00 e3 ff")),
                       ATTReadByTypeResponse(entries: [
                           ATTHandleValue(handle: 0x000F, value: [0x0A, 0x10, 0x00, 0xE1, 0xFF]),
                           ATTHandleValue(handle: 0x0011, value: [0x04, 0x12, 0x00, 0xE2, 0xFF]),
                           ATTHandleValue(handle: 0x0013, value: [0x02, 0x14, 0x00, 0xE3, 0xFF]),
                       ]))
        // 63: Find Information Response, 0x0009 is a CCCD
        XCTAssertEqual(try ATTFindInformationResponse(decoding: bytes("05 01 09 00 02 29")),
                       ATTFindInformationResponse(format: .uuid16, entries: [
                           ATTHandleUUID(handle: 0x0009, uuid: .clientCharacteristicConfiguration)]))
    }

    func testReadWriteAndNotificationVectors() throws {
        // 97: Read Blob Request, handle 0x0016, offset 22
        XCTAssertEqual(try ATTPDU(decoding: bytes("0c 16 00 16 00")), .readBlobRequest(ATTReadBlobRequest(handle: 0x0016, offset: 22)))
        // 103 / 106: Write Request "req" to 0x0010, Write Command "cmd" to 0x0012
        XCTAssertEqual(try ATTPDU(decoding: bytes("12 10 00 72 65 71")), .writeRequest(ATTWriteRequest(handle: 0x0010, value: Array("req".utf8))))
        XCTAssertEqual(try ATTPDU(decoding: bytes("52 12 00 63 6d 64")), .writeCommand(ATTWriteCommand(handle: 0x0012, value: Array("cmd".utf8))))
        // 114: Prepare Write Request, 0x0010, offset 18, 18 octets 0x12…0x23
        XCTAssertEqual(try ATTPDU(decoding: bytes("16 10 00 12 00 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f 20 21 22 23")),
                       .prepareWriteRequest(ATTPrepareWriteRequest(handle: 0x0010, offset: 18, partValue: Array(0x12...0x23))))
        // 120: Execute Write Request, write all
        XCTAssertEqual(try ATTPDU(decoding: bytes("18 01")), .executeWriteRequest(ATTExecuteWriteRequest(flags: .write)))
        // 126: CCCD write enabling notifications
        XCTAssertEqual(try ATTPDU(decoding: bytes("12 1a 00 01 00")), .writeRequest(ATTWriteRequest(handle: 0x001A, value: [0x01, 0x00])))
        // 135: Heart Rate Measurement notification, 60 bpm
        XCTAssertEqual(try ATTPDU(decoding: bytes("1b 19 00 00 3c")),
                       .handleValueNotification(ATTHandleValueNotification(handle: 0x0019, value: [0x00, 0x3C])))
        // 138 / 139: Temperature Measurement indication and its confirmation
        XCTAssertEqual(try ATTPDU(decoding: bytes("1d 1d 00 00 6e 01 00 ff")),
                       .handleValueIndication(ATTHandleValueIndication(handle: 0x001D, value: [0x00, 0x6E, 0x01, 0x00, 0xFF])))
        XCTAssertEqual(try ATTPDU(decoding: bytes("1e")), .handleValueConfirmation(ATTHandleValueConfirmation()))
        // 141 / 143: MTU 185 offered, 517 answered
        XCTAssertEqual(try ATTPDU(decoding: bytes("02 b9 00")), .exchangeMTURequest(ATTExchangeMTURequest(clientRxMTU: 185)))
        XCTAssertEqual(try ATTPDU(decoding: bytes("03 05 02")), .exchangeMTUResponse(ATTExchangeMTUResponse(serverRxMTU: 517)))
    }
}

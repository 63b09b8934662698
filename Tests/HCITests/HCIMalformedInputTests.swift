import BLEWire
@testable import HCI
import WireTestSupport
import XCTest

/// What a peer may send that does not fit Core 5.4, Vol 4, Part E: each decoder answers with a
/// specific `DecodeError` that says where, never a crash. Offsets count from the start of the
/// bytes handed to the decoder (the H4 indicator included when decoding through `HCIPacket`).
final class HCIMalformedInputTests: XCTestCase {

    // MARK: H4 indicator

    func testEmptyFrameAndUnknownIndicators() {
        XCTAssertThrowsDecodeError(try HCIPacket(h4: []), .truncated(needed: 1, available: 0, at: 0))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("07 03 0c 00")),
                                   .unknownType(field: "H4 packet indicator", value: 0x07, at: 0))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("00")), .unknownType(field: "H4 packet indicator", value: 0, at: 0))
    }

    // MARK: Commands (5.4.1)

    func testTruncatedCommandHeaders() {
        XCTAssertThrowsDecodeError(try HCICommand(decoding: []), .truncated(needed: 2, available: 0, at: 0))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("03")), .truncated(needed: 2, available: 1, at: 0))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("03 0c")), .truncated(needed: 1, available: 0, at: 2))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("01")), .truncated(needed: 2, available: 0, at: 1))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("01 03 0c")), .truncated(needed: 1, available: 0, at: 3))
    }

    func testParameterTotalLengthDisagreeingWithTheParameters() {
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("03 0c", "01")),  // Reset claiming one octet, none there
                                   .lengthMismatch(field: "Reset Parameter_Total_Length", declared: 1, actual: 0))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("06 04", "03", "01 00")),  // Disconnect missing its Reason
                                   .lengthMismatch(field: "Disconnect Parameter_Total_Length", declared: 3, actual: 2))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("06 04", "02", "01 00 13")),
                                   .lengthMismatch(field: "Disconnect Parameter_Total_Length", declared: 2, actual: 3))
        // Unknown opcodes are framed the same way: their length must agree too.
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("60 20", "0d", "01")),
                                   .lengthMismatch(field: "Opcode 0x2060 (OGF 0x8, OCF 0x60) Parameter_Total_Length", declared: 13, actual: 1))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("01 0d 20 19 60 00")),
                                   .lengthMismatch(field: "LE Create Connection Parameter_Total_Length", declared: 25, actual: 2))
    }

    /// Parameter sizes fixed by each command's section (7.1.6 … 7.8.18).
    static let fixedSizes: [(HCIOpcode, Int)] = [
        (.disconnect, 3), (.setEventMask, 8), (.reset, 0), (.readLocalVersionInformation, 0),
        (.readLocalSupportedCommands, 0), (.readLocalSupportedFeatures, 0), (.readBufferSize, 0), (.readBDAddr, 0),
        (.readRSSI, 2), (.leSetEventMask, 8), (.leReadBufferSize, 0), (.leReadLocalSupportedFeatures, 0),
        (.leSetRandomAddress, 6), (.leSetAdvertisingParameters, 15), (.leReadAdvertisingPhysicalChannelTxPower, 0),
        (.leSetAdvertisingData, 32), (.leSetScanResponseData, 32), (.leSetAdvertisingEnable, 1),
        (.leSetScanParameters, 7), (.leSetScanEnable, 2), (.leCreateConnection, 25), (.leCreateConnectionCancel, 0),
        (.leConnectionUpdate, 14), (.leRemoteConnectionParameterRequestReply, 14),
        (.leRemoteConnectionParameterRequestNegativeReply, 3),
        (.leSetAdvertisingSetRandomAddress, 7), (.leSetExtendedAdvertisingParameters, 25), (.leSetExtendedScanEnable, 6),
        (.leEncrypt, 32), (.leRand, 0), (.leEnableEncryption, 28), (.leLongTermKeyRequestReply, 18),
        (.leLongTermKeyRequestNegativeReply, 2),
        (.leReadFilterAcceptListSize, 0), (.leClearFilterAcceptList, 0), (.leAddDeviceToFilterAcceptList, 7),
        (.leRemoveDeviceFromFilterAcceptList, 7), (.leAddDeviceToResolvingList, 39), (.leRemoveDeviceFromResolvingList, 7),
        (.leClearResolvingList, 0), (.leReadResolvingListSize, 0), (.leSetAddressResolutionEnable, 1),
        (.leSetResolvablePrivateAddressTimeout, 2),
    ]

    /// The named opcodes whose parameters have no fixed size (LEExtendedCommandTests checks them).
    static let variableSizes: Set<HCIOpcode> = [
        .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable,
        .leSetExtendedScanParameters, .leExtendedCreateConnection,
    ]

    static func command(_ opcode: HCIOpcode, parameters: [UInt8]) -> [UInt8] {
        [UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), UInt8(parameters.count)] + parameters
    }

    func testEveryKnownCommandRejectsParametersOfTheWrongSize() {
        let named = (0...0xFFFF).map { HCIOpcode(rawValue: UInt16($0)) }.filter { $0.name != nil }
        XCTAssertEqual(Set(Self.fixedSizes.map(\.0)).union(Self.variableSizes), Set(named), "one row per named opcode")
        XCTAssertEqual(Self.fixedSizes.count, 43)
        for (opcode, size) in Self.fixedSizes {
            // The right size (all zero octets) decodes to the command's own case.
            let right = Self.command(opcode, parameters: [UInt8](repeating: 0, count: size))
            XCTAssertEqual((try? HCICommand(decoding: right))?.opcode, opcode, "\(opcode) with \(size) octets")
            for wrong in [size - 1, size + 1, size + 2] where wrong >= 0 {
                let frame = Self.command(opcode, parameters: [UInt8](repeating: 0, count: wrong))
                XCTAssertThrowsDecodeError(try HCICommand(decoding: frame),
                                           .lengthMismatch(field: "\(opcode) parameters", declared: wrong, actual: size))
            }
        }
    }

    func testOutOfRangeBooleans() {
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("0a 20 01", "02")),  // Advertising_Enable 2
                                   .invalidValue(field: "Advertising_Enable", value: 2, at: 3))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("01 0a 20 01", "ff")),
                                   .invalidValue(field: "Advertising_Enable", value: 0xFF, at: 4))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("0c 20 02", "02", "00")),  // LE_Scan_Enable 2
                                   .invalidValue(field: "LE_Scan_Enable", value: 2, at: 3))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: bytes("0c 20 02", "01", "05")),  // Filter_Duplicates 5
                                   .invalidValue(field: "Filter_Duplicates", value: 5, at: 4))
    }

    func testAdvertisingDataLengthAbove31() {
        let tooLong = Self.command(.leSetAdvertisingData, parameters: [0x20] + [UInt8](repeating: 0, count: 31))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: tooLong),
                                   .invalidValue(field: "LE Set Advertising Data data length", value: 32, at: 3))
        let scanResponse = Self.command(.leSetScanResponseData, parameters: [0xFF] + [UInt8](repeating: 0, count: 31))
        XCTAssertThrowsDecodeError(try HCICommand(decoding: scanResponse),
                                   .invalidValue(field: "LE Set Scan Response Data data length", value: 0xFF, at: 3))
        // 31 is the largest length allowed.
        let full = Self.command(.leSetAdvertisingData, parameters: [0x1F] + [UInt8](repeating: 7, count: 31))
        XCTAssertEqual(try HCICommand(decoding: full), .leSetAdvertisingData([UInt8](repeating: 7, count: 31)))
    }

    // MARK: Events (5.4.4, 7.7)

    func testTruncatedEventHeaders() {
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: []), .truncated(needed: 1, available: 0, at: 0))
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("0e")), .truncated(needed: 1, available: 0, at: 1))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("04")), .truncated(needed: 1, available: 0, at: 1))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("04 0e")), .truncated(needed: 1, available: 0, at: 2))
    }

    func testEventParameterTotalLengthDisagreeingWithTheParameters() {
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("0e", "05", "01 03 0c 00")),
                                   .lengthMismatch(field: "event 0x0e Parameter_Total_Length", declared: 5, actual: 4))
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("0e", "03", "01 03 0c 00")),
                                   .lengthMismatch(field: "event 0x0e Parameter_Total_Length", declared: 3, actual: 4))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("04 3e 13 01 00")),
                                   .lengthMismatch(field: "event 0x3e Parameter_Total_Length", declared: 19, actual: 2))
        // Unknown event codes are framed too.
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("ff", "02", "00")),
                                   .lengthMismatch(field: "event 0xff Parameter_Total_Length", declared: 2, actual: 1))
    }

    func testFixedSizeEventsTooShortOrTooLong() {
        // 7.7.5 Disconnection Complete: Status, Connection_Handle, Reason (4).
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("05 03", "00", "01 00")), .truncated(needed: 1, available: 0, at: 5))
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("05 05", "00", "01 00", "13", "00")), .trailingBytes(count: 1, at: 6))
        // 7.7.14 Command Complete: at least Num_HCI_Command_Packets and Command_Opcode (3).
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("0e 02", "01", "03")), .truncated(needed: 2, available: 1, at: 3))
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("0e 00")), .truncated(needed: 1, available: 0, at: 2))
        // 7.7.15 Command Status: Status, Num_HCI_Command_Packets, Command_Opcode (4).
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("0f 03", "00", "01", "0d")), .truncated(needed: 2, available: 1, at: 4))
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("0f 05", "00", "01", "0d 20", "00")), .trailingBytes(count: 1, at: 6))
        // 7.7.16 Hardware Error: Hardware_Code (1).
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("10 00")), .truncated(needed: 1, available: 0, at: 2))
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("10 02", "2a", "00")), .trailingBytes(count: 1, at: 3))
    }

    func testNumberOfCompletedPacketsWhoseCountDoesNotMatch() {
        // Num_Handles 2 promises 8 octets of handles and counts; 4 are there.
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("13 05", "02", "01 00 01 00")),
                                   .lengthMismatch(field: "Number Of Completed Packets (Num_Handles 2)", declared: 8, actual: 4))
        // Num_Handles 1 promises 4 octets; 7 are there.
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("13 08", "01", "01 00 01 00", "02 00 02")),
                                   .lengthMismatch(field: "Number Of Completed Packets (Num_Handles 1)", declared: 4, actual: 7))
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("13 00")), .truncated(needed: 1, available: 0, at: 2))
    }

    func testLEMetaWithoutSubevent() {
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("3e 00")), .truncated(needed: 1, available: 0, at: 2))
    }

    func testLEAdvertisingReportWithNoReports() {
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("3e 02", "02", "00")),  // Num_Reports 0 (range is 1–25)
                                   .invalidValue(field: "Num_Reports", value: 0, at: 3))
    }

    func testLEAdvertisingReportWithDataLengthAbove31() {
        // Data_Length 32 with 32 octets really there: rejected for the value, not for running out of input.
        let event = bytes("3e", "2c",                 // LE Meta, length 44
                          "02 01",                    // LE Advertising Report, one report
                          "00 01 02 00 00 ee ff c0",  // ADV_IND, random, C0:FF:EE:00:00:02
                          "20")                       // Data_Length 32 (at offset 12)
            + [UInt8](repeating: 0, count: 32) + bytes("c4")
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: event), .invalidValue(field: "Data_Length", value: 32, at: 12))
    }

    func testLEAdvertisingReportsRunningPastTheEvent() {
        // Num_Reports 2 but only one report present.
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("3e 0c", "02 02", "00 01 02 00 00 ee ff c0", "00", "c4")),
                                   .truncated(needed: 1, available: 0, at: 14))
        // Data_Length 5 but two octets of data.
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("3e 0d", "02 01", "00 01 02 00 00 ee ff c0", "05", "aa bb")),
                                   .truncated(needed: 5, available: 2, at: 13))
        // One complete report followed by a stray octet.
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("3e 0d", "02 01", "00 01 02 00 00 ee ff c0", "00", "c4", "99")),
                                   .trailingBytes(count: 1, at: 14))
    }

    func testLEConnectionCompleteAndUpdateCompleteOfTheWrongSize() {
        let complete = bytes("3e 13 01 00 01 00 00 01 02 00 00 ee ff c0 0c 00 00 00 48 00 00")
        var short = Array(complete.dropLast())
        short[1] = 0x12
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: short), .truncated(needed: 1, available: 0, at: 20))
        var long = complete + [0x00]
        long[1] = 0x14
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: long), .trailingBytes(count: 1, at: 21))
        XCTAssertThrowsDecodeError(try HCIEvent(decoding: bytes("3e 09", "03", "00", "01 00", "28 00", "04 00", "f4")),
                                   .truncated(needed: 2, available: 1, at: 10))  // Supervision_Timeout cut short
    }

    func testErrorsDescribeThemselves() {
        XCTAssertEqual(DecodeError.lengthMismatch(field: "Number Of Completed Packets (Num_Handles 2)", declared: 8, actual: 4).description,
                       "length mismatch in Number Of Completed Packets (Num_Handles 2): declared 8, actual 4")
        XCTAssertEqual(DecodeError.invalidValue(field: "Advertising_Enable", value: 2, at: 3).description,
                       "invalid Advertising_Enable 0x2 at offset 3")
    }
}

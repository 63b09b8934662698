import BLEWire
@testable import HCI
import WireTestSupport
import XCTest

/// Typed Return_Parameters of Command Complete (Core 5.4, Vol 4, Part E, 7.7.14 and each command's section).
final class ReturnParametersTests: XCTestCase {

    /// The Return_Parameters of reference Command Complete `number` of `packets`, after checking the opcode.
    func returnParameters(_ packets: [ReferencePacket], _ number: Int, opcode: HCIOpcode,
                          file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        let packet = packets[number - 1]
        guard case let .event(.commandComplete(complete))? = try? HCIPacket(h4: packet.h4) else {
            XCTFail("#\(number) \(packet.summary) is not a Command Complete", file: file, line: line)
            return []
        }
        XCTAssertEqual(complete.opcode, opcode, file: file, line: line)
        return complete.returnParameters
    }

    /// Decode → value; value → the same octets; and the Command Complete built from the value
    /// encodes to the whole reference event.
    func assertReturn<R: ReturnParameters & Equatable>(_ value: R, _ expected: [UInt8],
                                                       file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(value.encoded, expected, file: file, line: line)
        XCTAssertEqual(try R(decoding: expected), value, file: file, line: line)
        XCTAssertEqual(try R(decoding: value.encoded), value, file: file, line: line)
    }

    // MARK: 7.4.1 Read Local Version Information

    func testReadLocalVersionInformationMatchesReferenceTraffic() {
        let packet = ReferenceTraffic.central[5]
        XCTAssertEqual(packet.h4, bytes(
            "04",     // H4 event
            "0e",     // Command Complete
            "0c",     // Parameter_Total_Length 12
            "01",     // Num_HCI_Command_Packets
            "01 10",  // Command_Opcode 0x1001 Read Local Version Information
            "00",     // Status
            "09",     // HCI_Version 5.0
            "00 00",  // HCI_Subversion
            "09",     // LMP_Version 5.0
            "ff ff",  // Company_Identifier 0xFFFF (none)
            "00 00"   // LMP_Subversion
        ))
        let value = ReadLocalVersionInformationReturn(hciVersion: 0x09, hciSubversion: 0, lmpVersion: 0x09,
                                                      companyIdentifier: 0xFFFF, lmpSubversion: 0)
        let parameters = returnParameters(ReferenceTraffic.central, 6, opcode: .readLocalVersionInformation)
        assertReturn(value, parameters)
        let event = HCIEvent.commandComplete(CommandComplete(opcode: .readLocalVersionInformation, returnParameters: value.encoded))
        XCTAssertEqual([0x04] + event.encoded, packet.h4)
    }

    // MARK: 7.4.6 Read BD_ADDR

    func testReadBDAddrMatchesReferenceTraffic() throws {
        let parameters = returnParameters(ReferenceTraffic.central, 26, opcode: .readBDAddr)
        XCTAssertEqual(parameters, bytes(
            "00",                 // Status
            "01 00 00 ee ff c0"   // BD_ADDR, least significant octet first
        ))
        let value = try ReadBDAddrReturn(decoding: parameters)
        XCTAssertEqual(value.address.description, "C0:FF:EE:00:00:01")
        assertReturn(ReadBDAddrReturn(address: BDAddr(string: "C0:FF:EE:00:00:01")!), parameters)
        let peripheral = try ReadBDAddrReturn(decoding: returnParameters(ReferenceTraffic.peripheral, 26, opcode: .readBDAddr))
        XCTAssertEqual(peripheral.address, BDAddr(string: "C0:FF:EE:00:00:02"))
    }

    // MARK: 7.4.2 Read Local Supported Commands

    func testReadLocalSupportedCommandsHas64OctetsWithTheSubsetsBits() throws {
        let parameters = returnParameters(ReferenceTraffic.central, 4, opcode: .readLocalSupportedCommands)
        XCTAssertEqual(parameters.count, 1 + 64)  // Status, Supported_Commands (64)
        let value = try BitFieldReturn(decoding: parameters)
        XCTAssertEqual(value.status, .success)
        XCTAssertEqual(value.bits.count, 64)
        assertReturn(value, parameters)
        // Bit positions of 6.27 (Supported Commands) for commands BLELab sends, all set by the reference controller.
        let supported: [(octet: Int, bit: Int, name: String)] = [
            (0, 5, "Disconnect"), (5, 6, "Set Event Mask"), (5, 7, "Reset"),
            (14, 3, "Read Local Version Information"), (14, 5, "Read Local Supported Features"), (14, 7, "Read Buffer Size"),
            (15, 1, "Read BD_ADDR"), (15, 5, "Read RSSI"),
            (25, 0, "LE Set Event Mask"), (25, 1, "LE Read Buffer Size"), (25, 2, "LE Read Local Supported Features"),
            (25, 4, "LE Set Random Address"), (25, 5, "LE Set Advertising Parameters"),
            (25, 6, "LE Read Advertising Physical Channel Tx Power"), (25, 7, "LE Set Advertising Data"),
            (26, 0, "LE Set Scan Response Data"), (26, 1, "LE Set Advertising Enable"), (26, 2, "LE Set Scan Parameters"),
            (26, 3, "LE Set Scan Enable"), (26, 4, "LE Create Connection"), (26, 5, "LE Create Connection Cancel"),
            (27, 2, "LE Connection Update"),
        ]
        for entry in supported {
            XCTAssertTrue(value.isSet(octet: entry.octet, bit: entry.bit), entry.name)
        }
        XCTAssertFalse(value.isSet(octet: 0, bit: 0))    // Inquiry: not on an LE-only controller
        XCTAssertFalse(value.isSet(octet: 25, bit: 3))   // reserved
        XCTAssertFalse(value.isSet(octet: 63, bit: 7))
        XCTAssertFalse(value.isSet(octet: 64, bit: 0))   // past the field: not set, not a crash
    }

    // MARK: 7.4.3 / 7.8.3 Supported Features

    func testSupportedFeaturesBitFieldsMatchReferenceTraffic() throws {
        let le = returnParameters(ReferenceTraffic.central, 8, opcode: .leReadLocalSupportedFeatures)
        XCTAssertEqual(le, bytes("00",                        // Status
                                 "ff 79 01 00 00 00 00 00"))  // LE_Features
        let leValue = try BitFieldReturn(decoding: le)
        XCTAssertTrue(leValue.isSet(octet: 0, bit: 0))   // LE Encryption
        XCTAssertTrue(leValue.isSet(octet: 0, bit: 5))   // LE Data Packet Length Extension
        XCTAssertFalse(leValue.isSet(octet: 1, bit: 1))
        assertReturn(leValue, le)

        let lmp = returnParameters(ReferenceTraffic.central, 10, opcode: .readLocalSupportedFeatures)
        XCTAssertEqual(lmp, bytes("00", "00 00 00 00 60 00 00 80"))  // Status, LMP_Features
        let lmpValue = try BitFieldReturn(decoding: lmp)
        XCTAssertTrue(lmpValue.isSet(octet: 4, bit: 5))   // BR/EDR Not Supported
        XCTAssertTrue(lmpValue.isSet(octet: 4, bit: 6))   // LE Supported (Controller)
        assertReturn(lmpValue, lmp)
    }

    // MARK: 7.4.5 Read Buffer Size

    func testReadBufferSizeMatchesReferenceTraffic() {
        let parameters = returnParameters(ReferenceTraffic.central, 18, opcode: .readBufferSize)
        XCTAssertEqual(parameters, bytes(
            "00",     // Status
            "1b 00",  // ACL_Data_Packet_Length 27
            "00",     // Synchronous_Data_Packet_Length 0
            "40 00",  // Total_Num_ACL_Data_Packets 64
            "00 00"   // Total_Num_Synchronous_Data_Packets 0
        ))
        assertReturn(ReadBufferSizeReturn(aclDataPacketLength: 27, synchronousDataPacketLength: 0,
                                          totalNumACLDataPackets: 64, totalNumSynchronousDataPackets: 0), parameters)
    }

    // MARK: 7.8.2 LE Read Buffer Size

    func testLEReadBufferSize() {
        assertReturn(LEReadBufferSizeReturn(aclDataPacketLength: 251, totalNumACLDataPackets: 8),
                     bytes("00",     // Status
                           "fb 00",  // LE_ACL_Data_Packet_Length 251
                           "08"))    // Total_Num_LE_ACL_Data_Packets 8
        // 0 / 0 means "share the BR/EDR buffers" (7.8.2); still a plain value here.
        assertReturn(LEReadBufferSizeReturn(aclDataPacketLength: 0, totalNumACLDataPackets: 0), bytes("00 00 00 00"))
    }

    func testLEReadBufferSizeV2ReturnIsNotTakenForV1() {
        // central #20 answers LE Read Buffer Size [v2] (7.8.2, 0x2060), which adds ISO_Data_Packet_Length (2)
        // and Total_Num_ISO_Data_Packets (1): three octets a v1 decoder must not silently drop.
        let v2 = returnParameters(ReferenceTraffic.central, 20, opcode: HCIOpcode(rawValue: 0x2060))
        XCTAssertEqual(v2, bytes("00", "1b 00", "40", "c0 03", "40"))
        XCTAssertThrowsDecodeError(try LEReadBufferSizeReturn(decoding: v2), .trailingBytes(count: 3, at: 4))
    }

    // MARK: 7.5.4 Read RSSI

    func testReadRSSI() {
        assertReturn(ReadRSSIReturn(handle: 0x0001, rssi: -60),
                     bytes("00",     // Status
                           "01 00",  // Handle 0x0001
                           "c4"))    // RSSI -60 dBm
        assertReturn(ReadRSSIReturn(status: .unknownConnectionIdentifier, handle: 0x0EFF, rssi: 20), bytes("02 ff 0e 14"))
    }

    // MARK: 7.8.31 / 7.8.32 LE Remote Connection Parameter Request (Negative) Reply

    func testConnectionHandleReturn() {
        assertReturn(ConnectionHandleReturn(handle: 0x0041),
                     bytes("00",      // Status
                           "41 00"))  // Connection_Handle
        assertReturn(ConnectionHandleReturn(status: .commandDisallowed, handle: 0x0EFF), bytes("0c ff 0e"))
        XCTAssertThrowsDecodeError(try ConnectionHandleReturn(decoding: bytes("00 41")), .truncated(needed: 2, available: 1, at: 1))
        XCTAssertThrowsDecodeError(try ConnectionHandleReturn(decoding: bytes("00 41 00 00")), .trailingBytes(count: 1, at: 3))
    }

    // MARK: 7.8.6 LE Read Advertising Physical Channel Tx Power

    func testLEReadAdvertisingPhysicalChannelTxPower() {
        assertReturn(LEReadAdvertisingPhysicalChannelTxPowerReturn(txPowerLevel: -9),
                     bytes("00",   // Status
                           "f7"))  // TX_Power_Level -9 dBm
        assertReturn(LEReadAdvertisingPhysicalChannelTxPowerReturn(txPowerLevel: 20), bytes("00 14"))  // +20 dBm
        assertReturn(LEReadAdvertisingPhysicalChannelTxPowerReturn(txPowerLevel: -127), bytes("00 81"))
    }

    // MARK: Malformed return parameters

    func testShortOrLongReturnParametersThrowTypedErrors() {
        XCTAssertThrowsDecodeError(try ReadLocalVersionInformationReturn(decoding: bytes("00 09 00 00 09 ff ff 00")),
                                   .truncated(needed: 2, available: 1, at: 7))
        XCTAssertThrowsDecodeError(try ReadLocalVersionInformationReturn(decoding: bytes("00 09 00 00 09 ff ff 00 00 00")),
                                   .trailingBytes(count: 1, at: 9))
        XCTAssertThrowsDecodeError(try ReadBDAddrReturn(decoding: bytes("00 01 00 00 ee ff")),
                                   .truncated(needed: 6, available: 5, at: 1))
        XCTAssertThrowsDecodeError(try ReadBDAddrReturn(decoding: []), .truncated(needed: 1, available: 0, at: 0))
        XCTAssertThrowsDecodeError(try ReadBufferSizeReturn(decoding: bytes("00 1b 00 00 40 00 00")),
                                   .truncated(needed: 2, available: 1, at: 6))
        XCTAssertThrowsDecodeError(try LEReadBufferSizeReturn(decoding: bytes("00 fb 00")),
                                   .truncated(needed: 1, available: 0, at: 3))
        XCTAssertThrowsDecodeError(try ReadRSSIReturn(decoding: bytes("00 01 00 c4 00")), .trailingBytes(count: 1, at: 4))
        XCTAssertThrowsDecodeError(try LEReadAdvertisingPhysicalChannelTxPowerReturn(decoding: bytes("00")),
                                   .truncated(needed: 1, available: 0, at: 1))
        XCTAssertThrowsDecodeError(try BitFieldReturn(decoding: []), .truncated(needed: 1, available: 0, at: 0))
    }

    func testAFailedCommandStillCarriesItsStatus() throws {
        // Only the Status is meaningful after a failure, but the layout stays the same.
        let value = try ReadBDAddrReturn(decoding: bytes("01 00 00 00 00 00 00"))
        XCTAssertEqual(value.status, .unknownCommand)
        XCTAssertFalse(value.status.isSuccess)
    }
}

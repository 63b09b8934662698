import BLEWire
@testable import HCI
import WireTestSupport
import XCTest

/// Command packets (Core 5.4, Vol 4, Part E, 5.4.1): `| Opcode (2) | Parameter_Total_Length (1) | Parameters |`.
/// Every vector is checked four ways: exact encoding, decoding, and the round trip in both directions.
/// Where the reference traffic carries the same command, its bytes are the vector.
final class HCICommandTests: XCTestCase {

    /// Encode → exact bytes; decode → the value; `decode(encode(c)) == c`; `encode(decode(b)) == b`;
    /// and the same through the H4 frame.
    func assertCommand(_ command: HCICommand, _ expected: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(command.encoded.spacedHex, expected.spacedHex, "encoding of \(command)", file: file, line: line)
        XCTAssertEqual(command.opcode.rawValue, UInt16(expected[0]) | UInt16(expected[1]) << 8, file: file, line: line)
        XCTAssertEqual(Int(expected[2]), expected.count - 3, "vector's own Parameter_Total_Length", file: file, line: line)
        do {
            let decoded = try HCICommand(decoding: expected)
            XCTAssertEqual(decoded, command, file: file, line: line)
            XCTAssertEqual(decoded.encoded, expected, file: file, line: line)
            XCTAssertEqual(try HCICommand(decoding: command.encoded), command, file: file, line: line)
            let packet = try HCIPacket(h4: [0x01] + expected)
            XCTAssertEqual(packet, .command(command), file: file, line: line)
            XCTAssertEqual(packet.h4, [0x01] + expected, file: file, line: line)
        } catch {
            XCTFail("\(command): \(error)", file: file, line: line)
        }
    }

    /// The H4 bytes of reference packet `number` of central.txt, after checking its summary names the command.
    func central(_ number: Int, _ name: String, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        let packet = ReferenceTraffic.central[number - 1]
        XCTAssertEqual(packet.number, number, file: file, line: line)
        XCTAssertTrue(packet.summary.contains(name), "central #\(number) is \(packet.summary)", file: file, line: line)
        XCTAssertEqual(packet.h4.first, 0x01, "central #\(number) is a command", file: file, line: line)
        return Array(packet.h4.dropFirst())
    }

    // MARK: Link Control, Controller & Baseband, Informational, Status (7.1, 7.3, 7.4, 7.5)

    /// 7.1.6 Disconnect; central #144.
    func testDisconnectMatchesReferenceTraffic() {
        let ref = central(144, "Disconnect")
        XCTAssertEqual(ref, bytes(
            "06 04",  // Opcode 0x0406 (OGF 0x01, OCF 0x006)
            "03",     // Parameter_Total_Length
            "01 00",  // Connection_Handle 0x0001
            "13"      // Reason: Remote User Terminated Connection
        ))
        assertCommand(.disconnect(handle: 0x0001, reason: .remoteUserTerminatedConnection), ref)
    }

    func testDisconnectKeepsAllSixteenHandleBitsAndAnyReason() {
        // Connection_Handle is not masked in a command: a controller must see what the host sent.
        assertCommand(.disconnect(handle: 0x0EFF, reason: HCIStatus(rawValue: 0x3B)), bytes("06 04 03 ff 0e 3b"))
    }

    /// 7.3.1 Set Event Mask; central #11.
    func testSetEventMaskMatchesReferenceTraffic() {
        let ref = central(11, "Set Event Mask")
        XCTAssertEqual(ref, bytes(
            "01 0c",                   // Opcode 0x0C01 (OGF 0x03, OCF 0x001)
            "08",                      // Parameter_Total_Length
            "ff 9f ff bf 07 f8 bf 3d"  // Event_Mask, little-endian
        ))
        assertCommand(.setEventMask(0x3DBF_F807_BFFF_9FFF), ref)
    }

    /// 7.3.2 Reset; central #1.
    func testResetMatchesReferenceTraffic() {
        assertCommand(.reset, central(1, "Reset"))
        XCTAssertEqual(HCICommand.reset.encoded, bytes("03 0c 00"))  // Opcode 0x0C03, no parameters
    }

    /// 7.4.1, 7.4.2, 7.4.3, 7.4.5, 7.4.6: Informational commands without parameters; central #5, #3, #9, #17, #25.
    func testInformationalCommandsMatchReferenceTraffic() {
        assertCommand(.readLocalVersionInformation, central(5, "Read Local Version Information"))
        assertCommand(.readLocalSupportedCommands, central(3, "Read Local Supported Commands"))
        assertCommand(.readLocalSupportedFeatures, central(9, "Read Local Supported Features"))
        assertCommand(.readBufferSize, central(17, "Read Buffer Size"))
        assertCommand(.readBDAddr, central(25, "Read BD ADDR"))
        XCTAssertEqual(HCICommand.readBDAddr.encoded, bytes("09 10 00"))  // Opcode 0x1009 (OGF 0x04, OCF 0x009)
    }

    /// 7.5.4 Read RSSI.
    func testReadRSSI() {
        assertCommand(.readRSSI(handle: 0x0040), bytes(
            "05 14",  // Opcode 0x1405 (OGF 0x05, OCF 0x005)
            "02",     // Parameter_Total_Length
            "40 00"   // Handle 0x0040
        ))
    }

    // MARK: LE Controller commands (7.8)

    /// 7.8.1 LE Set Event Mask; central #15.
    func testLESetEventMaskMatchesReferenceTraffic() {
        let ref = central(15, "LE Set Event Mask")
        XCTAssertEqual(ref, bytes(
            "01 20",                   // Opcode 0x2001 (OGF 0x08, OCF 0x001)
            "08",                      // Parameter_Total_Length
            "ff ff f7 ff 0f ed 7b 00"  // LE_Event_Mask
        ))
        assertCommand(.leSetEventMask(0x007B_ED0F_FFF7_FFFF), ref)
    }

    /// 7.8.2 LE Read Buffer Size [v1] (the reference host used v2, 0x2060, which stays `.unknown`).
    func testLEReadBufferSize() {
        assertCommand(.leReadBufferSize, bytes("02 20 00"))  // Opcode 0x2002, no parameters
    }

    /// 7.8.3 LE Read Local Supported Features; central #7.
    func testLEReadLocalSupportedFeaturesMatchesReferenceTraffic() {
        assertCommand(.leReadLocalSupportedFeatures, central(7, "LE Read Local Supported Features"))
    }

    /// 7.8.4 LE Set Random Address; central #27 and peripheral #27.
    func testLESetRandomAddressMatchesReferenceTraffic() {
        let ref = central(27, "LE Set Random Address")
        XCTAssertEqual(ref, bytes(
            "05 20",             // Opcode 0x2005 (OGF 0x08, OCF 0x005)
            "06",                // Parameter_Total_Length
            "01 00 00 ee ff c0"  // Random_Address C0:FF:EE:00:00:01, least significant octet first
        ))
        assertCommand(.leSetRandomAddress(ReferenceDevice.central), ref)
        let peripheral = ReferenceTraffic.peripheral[26]
        XCTAssertTrue(peripheral.summary.contains("LE Set Random Address"))
        assertCommand(.leSetRandomAddress(ReferenceDevice.peripheral), Array(peripheral.h4.dropFirst()))
    }

    /// 7.8.5 LE Set Advertising Parameters.
    func testLESetAdvertisingParameters() {
        let parameters = LEAdvertisingParameters(intervalMin: 0x00A0, intervalMax: 0x00B0, advertisingType: .connectableUndirected,
                                                 ownAddressType: .random, peerAddressType: .public,
                                                 peerAddress: BDAddr(rawValue: 0), channelMap: 0x07, filterPolicy: 0x00)
        assertCommand(.leSetAdvertisingParameters(parameters), bytes(
            "06 20",              // Opcode 0x2006 (OGF 0x08, OCF 0x006)
            "0f",                 // Parameter_Total_Length 15
            "a0 00",              // Advertising_Interval_Min 0x00A0 (100 ms)
            "b0 00",              // Advertising_Interval_Max 0x00B0 (110 ms)
            "00",                 // Advertising_Type ADV_IND
            "01",                 // Own_Address_Type random
            "00",                 // Peer_Address_Type public
            "00 00 00 00 00 00",  // Peer_Address (unused for undirected)
            "07",                 // Advertising_Channel_Map: 37, 38, 39
            "00"                  // Advertising_Filter_Policy
        ))
        // A directed, high-duty-cycle variant: every field lands in its own octets.
        let directed = LEAdvertisingParameters(intervalMin: 0x0020, intervalMax: 0x4000, advertisingType: .connectableDirectedHighDuty,
                                               ownAddressType: .public, peerAddressType: .random,
                                               peerAddress: ReferenceDevice.peripheral, channelMap: 0x01, filterPolicy: 0x03)
        assertCommand(.leSetAdvertisingParameters(directed), bytes(
            "06 20 0f",           // Opcode 0x2006, length 15
            "20 00 00 40",        // Advertising_Interval_Min 0x0020, Advertising_Interval_Max 0x4000
            "01 00 01",           // ADV_DIRECT_IND (high duty), own public, peer random
            "02 00 00 ee ff c0",  // Peer_Address C0:FF:EE:00:00:02
            "01 03"               // Advertising_Channel_Map 37 only, Advertising_Filter_Policy 3
        ))
    }

    /// 7.8.6 LE Read Advertising Physical Channel Tx Power.
    func testLEReadAdvertisingPhysicalChannelTxPower() {
        assertCommand(.leReadAdvertisingPhysicalChannelTxPower, bytes("07 20 00"))  // Opcode 0x2007, no parameters
    }

    /// 7.8.7 LE Set Advertising Data: the length octet first, then the significant part padded to 31 octets.
    func testLESetAdvertisingDataPadsTo31OctetsWithLengthFirst() {
        let expected = bytes(
            "08 20",                                                  // Opcode 0x2008 (OGF 0x08, OCF 0x008)
            "20",                                                     // Parameter_Total_Length 32
            "12",                                                     // Advertising_Data_Length 18
            "02 01 06 05 03 e0 ff 0d 18 08 09 52 65 66 50 65 65 72",  // Flags; UUIDs 0xFFE0 0x180D; "RefPeer"
            "00 00 00 00 00 00 00 00 00 00 00 00 00"                   // 13 zero octets of padding (31 - 18)
        )
        XCTAssertEqual(expected.count, 3 + 1 + 31)
        assertCommand(.leSetAdvertisingData(ReferenceDevice.advertisingData), expected)
    }

    func testLESetAdvertisingDataEmptyAndFull() {
        // No significant part: length 0 then 31 zero octets.
        assertCommand(.leSetAdvertisingData([]), bytes("08 20 20 00") + [UInt8](repeating: 0, count: 31))
        // 31 significant octets: no padding at all.
        let full = (1...31).map { UInt8($0) }
        assertCommand(.leSetAdvertisingData(full), bytes("08 20 20 1f") + full)
    }

    func testLESetAdvertisingDataEncodingKeepsOnlyTheFirst31Octets() {
        // The enum cannot refuse 32+ octets when encoding; what goes on the wire is still a valid
        // 31-octet field (decoders reject a length above 31: see HCICommandMalformedTests).
        let long = (1...40).map { UInt8($0) }
        let encoded = HCICommand.leSetAdvertisingData(long).encoded
        XCTAssertEqual(encoded, bytes("08 20 20 1f") + Array(long.prefix(31)))
        XCTAssertEqual(try HCICommand(decoding: encoded), .leSetAdvertisingData(Array(long.prefix(31))))
    }

    /// 7.8.8 LE Set Scan Response Data: same layout as 7.8.7.
    func testLESetScanResponseData() {
        let name = bytes("08 09 52 65 66 50 65 65 72")  // Complete Local Name "RefPeer"
        assertCommand(.leSetScanResponseData(name), bytes(
            "09 20",                      // Opcode 0x2009 (OGF 0x08, OCF 0x009)
            "20",                         // Parameter_Total_Length 32
            "09",                         // Scan_Response_Data_Length 9
            "08 09 52 65 66 50 65 65 72"  // Complete Local Name "RefPeer"
        ) + [UInt8](repeating: 0, count: 22))
    }

    /// 7.8.9 LE Set Advertising Enable.
    func testLESetAdvertisingEnable() {
        assertCommand(.leSetAdvertisingEnable(true), bytes("0a 20 01 01"))   // Opcode 0x200A, length 1, Advertising_Enable 1
        assertCommand(.leSetAdvertisingEnable(false), bytes("0a 20 01 00"))  // Advertising_Enable 0
    }

    /// 7.8.10 LE Set Scan Parameters.
    func testLESetScanParameters() {
        let parameters = LEScanParameters(active: true, interval: 0x0060, window: 0x0030, ownAddressType: .random, filterPolicy: 0)
        assertCommand(.leSetScanParameters(parameters), bytes(
            "0b 20",  // Opcode 0x200B (OGF 0x08, OCF 0x00B)
            "07",     // Parameter_Total_Length
            "01",     // LE_Scan_Type active
            "60 00",  // LE_Scan_Interval 0x0060 (60 ms)
            "30 00",  // LE_Scan_Window 0x0030 (30 ms)
            "01",     // Own_Address_Type random
            "00"      // Scanning_Filter_Policy
        ))
        let passive = LEScanParameters(active: false, interval: 0x4000, window: 0x0004, ownAddressType: .public, filterPolicy: 1)
        XCTAssertFalse(passive.isActive)
        assertCommand(.leSetScanParameters(passive), bytes("0b 20 07  00  00 40  04 00  00  01"))
    }

    /// 7.8.11 LE Set Scan Enable.
    func testLESetScanEnable() {
        assertCommand(.leSetScanEnable(enable: true, filterDuplicates: false), bytes(
            "0c 20",  // Opcode 0x200C (OGF 0x08, OCF 0x00C)
            "02",     // Parameter_Total_Length
            "01",     // LE_Scan_Enable
            "00"      // Filter_Duplicates
        ))
        assertCommand(.leSetScanEnable(enable: false, filterDuplicates: true), bytes("0c 20 02 00 01"))
    }

    /// 7.8.12 LE Create Connection; central #37.
    func testLECreateConnectionMatchesReferenceTraffic() {
        let ref = central(37, "LE Create Connection")
        XCTAssertEqual(ref, bytes(
            "0d 20",              // Opcode 0x200D (OGF 0x08, OCF 0x00D)
            "19",                 // Parameter_Total_Length 25
            "60 00",              // LE_Scan_Interval 0x0060
            "60 00",              // LE_Scan_Window 0x0060
            "00",                 // Initiator_Filter_Policy: use Peer_Address
            "01",                 // Peer_Address_Type random
            "02 00 00 ee ff c0",  // Peer_Address C0:FF:EE:00:00:02
            "01",                 // Own_Address_Type random
            "0c 00",              // Connection_Interval_Min 0x000C (15 ms)
            "18 00",              // Connection_Interval_Max 0x0018 (30 ms)
            "00 00",              // Max_Latency 0
            "48 00",              // Supervision_Timeout 0x0048 (720 ms)
            "00 00",              // Min_CE_Length
            "00 00"               // Max_CE_Length
        ))
        let parameters = LECreateConnectionParameters(peer: LEAddress(ReferenceDevice.peripheral, type: .random), ownAddressType: .random,
                                                      scanInterval: 0x0060, scanWindow: 0x0060,
                                                      connectionIntervalMin: 0x000C, connectionIntervalMax: 0x0018,
                                                      maxLatency: 0, supervisionTimeout: 0x0048, minCELength: 0, maxCELength: 0)
        assertCommand(.leCreateConnection(parameters), ref)
        guard case let .leCreateConnection(decoded) = try? HCICommand(decoding: ref) else { return XCTFail("not LE Create Connection") }
        XCTAssertEqual(decoded.peer, LEAddress(ReferenceDevice.peripheral, type: .random))
        XCTAssertEqual(decoded.initiatorFilterPolicy, 0)
    }

    /// 7.8.13 LE Create Connection Cancel.
    func testLECreateConnectionCancel() {
        assertCommand(.leCreateConnectionCancel, bytes("0e 20 00"))  // Opcode 0x200E, no parameters
    }

    /// 7.8.18 LE Connection Update.
    func testLEConnectionUpdate() {
        let parameters = LEConnectionUpdateParameters(handle: 0x0001, intervalMin: 0x0018, intervalMax: 0x0028, maxLatency: 4,
                                                      supervisionTimeout: 0x01F4, minCELength: 0x0002, maxCELength: 0x0003)
        assertCommand(.leConnectionUpdate(parameters), bytes(
            "13 20",  // Opcode 0x2013 (OGF 0x08, OCF 0x013)
            "0e",     // Parameter_Total_Length 14
            "01 00",  // Connection_Handle 0x0001
            "18 00",  // Connection_Interval_Min 0x0018 (30 ms)
            "28 00",  // Connection_Interval_Max 0x0028 (50 ms)
            "04 00",  // Max_Latency 4
            "f4 01",  // Supervision_Timeout 0x01F4 (5 s)
            "02 00",  // Min_CE_Length
            "03 00"   // Max_CE_Length
        ))
    }

    // MARK: Opcodes outside the subset

    /// Commands the subset does not model decode to `.unknown` and re-encode byte for byte
    /// (the extended advertising and scanning ones are modelled: LEExtendedCommandTests).
    func testUnknownCommandsFromReferenceTrafficRoundTrip() {
        assertCommand(.unknown(opcode: HCIOpcode(ogf: 0x08, ocf: 0x024), parameters: bytes("fb 00 48 08")),
                      central(23, "LE Write Suggested Default Data Length"))
        assertCommand(.unknown(opcode: HCIOpcode(rawValue: 0x0C63), parameters: bytes("00 00 00 02 00 00 00 00")),
                      central(13, "Set Event Mask Page 2"))
        assertCommand(.unknown(opcode: HCIOpcode(rawValue: 0x2060), parameters: []), central(19, "LE Read Buffer Size [v2]"))
        // Vendor-specific OGF 0x3F with no parameters.
        assertCommand(.unknown(opcode: HCIOpcode(ogf: 0x3F, ocf: 0x3FF), parameters: []), bytes("ff ff 00"))
    }

    // MARK: 7.8.31, 7.8.32 Connection Parameters Request procedure

    /// 7.8.31: the same layout as LE Connection Update (7.8.18), under OCF 0x020.
    func testLERemoteConnectionParameterRequestReply() {
        assertCommand(.leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters(
            handle: 0x0041, intervalMin: 0x0010, intervalMax: 0x0020, maxLatency: 4, supervisionTimeout: 0x0258,
            minCELength: 0x0002, maxCELength: 0x0003)), bytes(
            "20 20",   // Opcode 0x2020 (OGF 0x08, OCF 0x020)
            "0e",      // Parameter_Total_Length 14
            "41 00",   // Connection_Handle
            "10 00",   // Interval_Min 20 ms
            "20 00",   // Interval_Max 40 ms
            "04 00",   // Max_Latency
            "58 02",   // Timeout 6 s
            "02 00",   // Min_CE_Length
            "03 00"    // Max_CE_Length
        ))
    }

    /// 7.8.32: Connection_Handle and Reason.
    func testLERemoteConnectionParameterRequestNegativeReply() {
        assertCommand(.leRemoteConnectionParameterRequestNegativeReply(handle: 0x0EFF, reason: .unacceptableConnectionParameters), bytes(
            "21 20",   // Opcode 0x2021 (OGF 0x08, OCF 0x021)
            "03",      // Parameter_Total_Length
            "ff 0e",   // Connection_Handle
            "3b"       // Reason: Unacceptable Connection Parameters
        ))
        XCTAssertEqual(HCICommand.leRemoteConnectionParameterRequestNegativeReply(handle: 1, reason: .unacceptableConnectionParameters).description,
                       "LE Remote Connection Parameter Request Negative Reply handle 0x0001 reason unacceptable-connection-parameters (0x3b)")
    }

    // MARK: Encryption (7.8.22–7.8.26)

    func testEncryptionCommandsFieldByField() throws {
        let start = HCICommand.leEnableEncryption(handle: 0x0EFF, random: bytes("01 02 03 04 05 06 07 08"), ediv: 0xBEEF,
                                                  longTermKey: bytes("00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff"))
        XCTAssertEqual(start.encoded, bytes(
            "19 20 1c",                                        // LE Enable Encryption, 28 octets
            "ff 0e",                                           // Connection_Handle
            "01 02 03 04 05 06 07 08",                         // Random_Number
            "ef be",                                           // Encrypted_Diversifier
            "00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff"  // Long_Term_Key
        ))
        XCTAssertEqual(try HCICommand(decoding: start.encoded), start)
        XCTAssertEqual(HCICommand.leLongTermKeyRequestNegativeReply(handle: 1).encoded, bytes("1b 20 02 01 00"))
        XCTAssertEqual(HCICommand.leRand.encoded, bytes("18 20 00"))
        XCTAssertEqual(HCICommand.leEncrypt(key: Array(0..<16), plaintext: Array(16..<32)).encoded.count, 35)
        XCTAssertThrowsError(try HCICommand(decoding: bytes("1a 20 03 01 00 00")), "an LTK Reply of 3 octets")
    }

    // MARK: Filter Accept List and resolving list (7.8.14–7.8.17, 7.8.38–7.8.45)

    func testListCommandsFieldByField() throws {
        XCTAssertEqual(HCICommand.leAddDeviceToFilterAcceptList(addressType: 0x01, address: BDAddr(string: "C0:11:22:33:44:55")!).encoded,
                       bytes("11 20 07", "01", "55 44 33 22 11 c0"))
        let add = HCICommand.leAddDeviceToResolvingList(peerIdentityType: 0x00, peerIdentity: BDAddr(string: "00:1B:DC:07:31:42")!,
                                                        peerIRK: Array(0..<16), localIRK: [UInt8](repeating: 0xAA, count: 16))
        XCTAssertEqual(add.encoded, bytes("27 20 27", "00", "42 31 07 dc 1b 00", "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f",
                                          "aa aa aa aa aa aa aa aa aa aa aa aa aa aa aa aa"))
        XCTAssertEqual(try HCICommand(decoding: add.encoded), add)
        XCTAssertEqual(HCICommand.leSetResolvablePrivateAddressTimeout(0x0384).encoded, bytes("2e 20 02 84 03"))
        XCTAssertThrowsError(try HCICommand(decoding: bytes("2d 20 01 02")), "Address_Resolution_Enable 2")
    }

    // MARK: Coverage

    /// Every case of `HCICommand` with one vector. The switch has no default: adding a case to the
    /// enum without a vector here stops this file from compiling.
    static let oneOfEach: [HCICommand] = [
        .disconnect(handle: 1, reason: .remoteUserTerminatedConnection), .setEventMask(1), .reset,
        .readLocalVersionInformation, .readLocalSupportedCommands, .readLocalSupportedFeatures, .readBufferSize,
        .readBDAddr, .readRSSI(handle: 1), .leSetEventMask(1), .leReadBufferSize, .leReadLocalSupportedFeatures,
        .leSetRandomAddress(ReferenceDevice.central), .leSetAdvertisingParameters(LEAdvertisingParameters()),
        .leReadAdvertisingPhysicalChannelTxPower, .leSetAdvertisingData(ReferenceDevice.advertisingData), .leSetScanResponseData([]),
        .leSetAdvertisingEnable(true), .leSetScanParameters(LEScanParameters()),
        .leSetScanEnable(enable: true, filterDuplicates: true),
        .leCreateConnection(LECreateConnectionParameters(peer: LEAddress(ReferenceDevice.peripheral, type: .random))),
        .leCreateConnectionCancel,
        .leConnectionUpdate(LEConnectionUpdateParameters(handle: 1, intervalMin: 6, intervalMax: 6, maxLatency: 0, supervisionTimeout: 10)),
        .leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters(handle: 1, intervalMin: 6, intervalMax: 6, maxLatency: 0,
                                                                               supervisionTimeout: 10)),
        .leRemoteConnectionParameterRequestNegativeReply(handle: 1, reason: .unacceptableConnectionParameters),
        .leEncrypt(key: Array(0..<16), plaintext: Array(16..<32)), .leRand,
        .leReadFilterAcceptListSize, .leClearFilterAcceptList,
        .leAddDeviceToFilterAcceptList(addressType: 0x00, address: ReferenceDevice.peripheral),
        .leRemoveDeviceFromFilterAcceptList(addressType: 0x01, address: ReferenceDevice.central),
        .leAddDeviceToResolvingList(peerIdentityType: 0x00, peerIdentity: ReferenceDevice.peripheral, peerIRK: Array(0..<16), localIRK: Array(16..<32)),
        .leRemoveDeviceFromResolvingList(peerIdentityType: 0x00, peerIdentity: ReferenceDevice.peripheral),
        .leClearResolvingList, .leReadResolvingListSize, .leSetAddressResolutionEnable(true), .leSetResolvablePrivateAddressTimeout(900),
        .leEnableEncryption(handle: 1, random: Array(0..<8), ediv: 0x1234, longTermKey: Array(0..<16)),
        .leLongTermKeyRequestReply(handle: 1, longTermKey: Array(0..<16)), .leLongTermKeyRequestNegativeReply(handle: 1),
        .leSetAdvertisingSetRandomAddress(advertisingHandle: 0, address: ReferenceDevice.peripheral),
        .leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters(eventProperties: .connectable, intervalMin: 0xA0, intervalMax: 0xA0)),
        .leSetExtendedAdvertisingData(LEExtendedAdvertisingData(data: ReferenceDevice.advertisingData)),
        .leSetExtendedScanResponseData(LEExtendedAdvertisingData(operation: .firstFragment, data: [])),
        .leSetExtendedAdvertisingEnable(LEExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable()])),
        .leSetExtendedScanParameters(LEExtendedScanParameters(perPHY: [ExtendedScanPHYParameters(active: true, interval: 0x60, window: 0x30)])),
        .leSetExtendedScanEnable(LEExtendedScanEnable(enable: true, filterDuplicates: 1)),
        .leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
            peer: LEAddress(ReferenceDevice.peripheral, type: .random),
            perPHY: [ExtendedInitiatingPHYParameters(scanInterval: 0x60, scanWindow: 0x60, connectionIntervalMin: 0x18,
                                                     connectionIntervalMax: 0x28, supervisionTimeout: 0x48)])),
        .unknown(opcode: HCIOpcode(rawValue: 0xFC00), parameters: [1, 2, 3]),
    ]

    static func isCovered(_ command: HCICommand) -> Bool {
        switch command {
        case .disconnect, .setEventMask, .reset, .readLocalVersionInformation, .readLocalSupportedCommands,
             .readLocalSupportedFeatures, .readBufferSize, .readBDAddr, .readRSSI, .leSetEventMask, .leReadBufferSize,
             .leReadLocalSupportedFeatures, .leSetRandomAddress, .leSetAdvertisingParameters,
             .leReadAdvertisingPhysicalChannelTxPower, .leSetAdvertisingData, .leSetScanResponseData,
             .leSetAdvertisingEnable, .leSetScanParameters, .leSetScanEnable, .leCreateConnection,
             .leCreateConnectionCancel, .leConnectionUpdate, .leRemoteConnectionParameterRequestReply,
             .leRemoteConnectionParameterRequestNegativeReply, .leSetAdvertisingSetRandomAddress,
             .leEncrypt, .leRand, .leEnableEncryption, .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply,
             .leReadFilterAcceptListSize, .leClearFilterAcceptList, .leAddDeviceToFilterAcceptList, .leRemoveDeviceFromFilterAcceptList,
             .leAddDeviceToResolvingList, .leRemoveDeviceFromResolvingList, .leClearResolvingList, .leReadResolvingListSize,
             .leSetAddressResolutionEnable, .leSetResolvablePrivateAddressTimeout,
             .leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData,
             .leSetExtendedAdvertisingEnable, .leSetExtendedScanParameters, .leSetExtendedScanEnable,
             .leExtendedCreateConnection, .unknown:
            return true
        }
    }

    func testEveryNamedOpcodeDecodesToItsOwnCase() throws {
        let named = (0...0xFFFF).map { HCIOpcode(rawValue: UInt16($0)) }.filter { $0.name != nil }
        XCTAssertEqual(named.count, 48)
        let modelled = Set(Self.oneOfEach.map(\.opcode)).subtracting([HCIOpcode(rawValue: 0xFC00)])
        XCTAssertEqual(Set(named), modelled, "every named opcode has a case and a vector")
        for command in Self.oneOfEach {
            XCTAssertTrue(Self.isCovered(command))
            let decoded = try HCICommand(decoding: command.encoded)
            XCTAssertEqual(decoded, command)
            XCTAssertEqual(decoded.encoded, command.encoded)
            if case .unknown = command { continue }
            if case .unknown = decoded { XCTFail("\(command.opcode) decoded as .unknown") }
        }
    }

    func testDecodingStartsAtTheGivenOffset() throws {
        // `from:` lets a caller decode in place behind the H4 indicator (or any other prefix).
        XCTAssertEqual(try HCICommand(decoding: bytes("ee ee 03 0c 00"), from: 2), .reset)
    }

    func testDescriptionsUseSpecNames() {
        XCTAssertEqual(HCICommand.reset.description, "Reset")
        XCTAssertEqual(HCICommand.disconnect(handle: 1, reason: .remoteUserTerminatedConnection).description,
                       "Disconnect handle 0x0001 reason remote-user-terminated (0x13)")
        XCTAssertEqual(HCICommand.leSetAdvertisingEnable(true).description, "LE Set Advertising Enable on")
        XCTAssertEqual(HCICommand.leSetScanEnable(enable: true, filterDuplicates: true).description,
                       "LE Set Scan Enable on filter duplicates")
        XCTAssertTrue(HCICommand.leSetRandomAddress(ReferenceDevice.central).description.contains("C0:FF:EE:00:00:01"))
        XCTAssertTrue(HCICommand.unknown(opcode: HCIOpcode(rawValue: 0x2060), parameters: [1]).description.contains("0x2060"))
        for command in Self.oneOfEach { XCTAssertFalse(command.description.isEmpty) }
    }
}

import BLEWire
@testable import HCI
import WireTestSupport
import XCTest

/// Event packets (Core 5.4, Vol 4, Part E, 5.4.4): `| Event_Code (1) | Parameter_Total_Length (1) | Parameters |`.
/// The LE Meta subevents are in LEMetaEventTests.
final class HCIEventTests: XCTestCase {

    /// Event bytes (without the indicator) of reference packet `number`, after checking its summary.
    func reference(_ packets: [ReferencePacket], _ number: Int, _ summary: String,
                   file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        let packet = packets[number - 1]
        XCTAssertEqual(packet.number, number, file: file, line: line)
        XCTAssertTrue(packet.summary.contains(summary), "#\(number) is \(packet.summary)", file: file, line: line)
        XCTAssertEqual(packet.h4.first, 0x04, "#\(number) is an event", file: file, line: line)
        return Array(packet.h4.dropFirst())
    }

    // MARK: 7.7.5 Disconnection Complete

    func testDisconnectionCompleteMatchesReferenceTraffic() {
        let ref = reference(ReferenceTraffic.central, 146, "Disconnect Complete")
        XCTAssertEqual(ref, bytes(
            "05",     // Event_Code Disconnection Complete
            "04",     // Parameter_Total_Length
            "00",     // Status success
            "01 00",  // Connection_Handle 0x0001
            "13"      // Reason: Remote User Terminated Connection
        ))
        assertEvent(.disconnectionComplete(DisconnectionComplete(handle: 0x0001, reason: .remoteUserTerminatedConnection)), ref)
        XCTAssertEqual(reference(ReferenceTraffic.peripheral, 145, "Disconnect Complete"), ref)
    }

    func testDisconnectionCompleteWithErrorStatusAndTimeoutReason() {
        assertEvent(.disconnectionComplete(DisconnectionComplete(status: .commandDisallowed, handle: 0x0EFF, reason: .connectionTimeout)),
                    bytes("05 04",   // Disconnection Complete, length 4
                          "0c",      // Status Command Disallowed
                          "ff 0e",   // Connection_Handle 0x0EFF, the highest valid handle
                          "08"))     // Reason Connection Timeout
    }

    func testConnectionHandlesKeepTheirReservedBitsSoEventsReencodeIdentically() {
        // Connection_Handle is 12 bits (0x0000–0x0EFF) in a 2-octet field. A decoder that masked the
        // top bits would answer a different packet than the one it read; the field is kept whole.
        let odd = bytes("05 04 00 01 f0 13")  // Connection_Handle 0xF001
        XCTAssertEqual(try HCIEvent(decoding: odd).encoded, odd)
        XCTAssertEqual(try HCIEvent(decoding: odd), .disconnectionComplete(DisconnectionComplete(handle: 0xF001, reason: .remoteUserTerminatedConnection)))
    }

    // MARK: 7.7.14 Command Complete

    func testCommandCompleteForResetMatchesReferenceTraffic() {
        let ref = reference(ReferenceTraffic.central, 2, "Command Complete (Reset)")
        XCTAssertEqual(ref, bytes(
            "0e",     // Event_Code Command Complete
            "04",     // Parameter_Total_Length
            "01",     // Num_HCI_Command_Packets
            "03 0c",  // Command_Opcode 0x0C03 Reset
            "00"      // Return_Parameters: Status success
        ))
        let event = HCIEvent.commandComplete(CommandComplete(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0x00]))
        assertEvent(event, ref)
        guard case let .commandComplete(complete) = event else { return }
        XCTAssertEqual(complete.status, .success)
    }

    func testCommandCompleteWithReturnParametersOfAnUnmodelledCommand() {
        // peripheral #30: LE Set Extended Advertising Parameters returns Status and Selected_TX_Power.
        let ref = reference(ReferenceTraffic.peripheral, 30, "Command Complete (LE Set Extended Advertising Parameters)")
        XCTAssertEqual(ref, bytes(
            "0e 05",  // Command Complete, length 5
            "01",     // Num_HCI_Command_Packets
            "36 20",  // Command_Opcode 0x2036
            "00",     // Status
            "00"      // Selected_TX_Power 0 dBm
        ))
        assertEvent(.commandComplete(CommandComplete(opcode: HCIOpcode(rawValue: 0x2036), returnParameters: [0x00, 0x00])), ref)
    }

    func testCommandCompleteWithoutReturnParametersAndWithFailureStatus() {
        // Num_HCI_Command_Packets 0 with opcode 0x0000 (a NOP): nothing returned, so no status.
        let nop = HCIEvent.commandComplete(CommandComplete(numHCICommandPackets: 0, opcode: HCIOpcode(rawValue: 0), returnParameters: []))
        assertEvent(nop, bytes("0e 03", "00", "00 00"))
        guard case let .commandComplete(complete) = nop else { return }
        XCTAssertNil(complete.status)

        let failed = HCIEvent.commandComplete(CommandComplete(numHCICommandPackets: 5, opcode: .leSetAdvertisingEnable, returnParameters: [0x0C]))
        assertEvent(failed, bytes("0e 04", "05", "0a 20", "0c"))  // 5 packets allowed; LE Set Advertising Enable; Command Disallowed
    }

    /// Every Command Complete and Command Status in both files answers the command sent just before it.
    func testEveryCommandCompleteAndStatusAnswersThePrecedingCommand() throws {
        for packets in [ReferenceTraffic.central, ReferenceTraffic.peripheral] {
            var lastCommand: HCIOpcode?
            var answered = 0
            for packet in packets {
                switch try HCIPacket(h4: packet.h4) {
                case let .command(command):
                    lastCommand = command.opcode
                case let .event(.commandComplete(complete)):
                    XCTAssertEqual(complete.opcode, lastCommand, "#\(packet.number) \(packet.summary)")
                    XCTAssertEqual(complete.status, .success, "#\(packet.number)")
                    XCTAssertEqual(complete.numHCICommandPackets, 1)
                    answered += 1
                case let .event(.commandStatus(status)):
                    XCTAssertEqual(status.opcode, lastCommand, "#\(packet.number) \(packet.summary)")
                    XCTAssertEqual(status.status, .success)
                    answered += 1
                default:
                    break
                }
            }
            XCTAssertGreaterThanOrEqual(answered, 18)
        }
    }

    // MARK: 7.7.15 Command Status

    func testCommandStatusMatchesReferenceTraffic() {
        let ref = reference(ReferenceTraffic.central, 38, "Command Status (LE Create Connection)")
        XCTAssertEqual(ref, bytes(
            "0f",     // Event_Code Command Status
            "04",     // Parameter_Total_Length
            "00",     // Status: pending (success)
            "01",     // Num_HCI_Command_Packets
            "0d 20"   // Command_Opcode 0x200D LE Create Connection
        ))
        assertEvent(.commandStatus(CommandStatus(status: .success, opcode: .leCreateConnection)), ref)
        assertEvent(.commandStatus(CommandStatus(status: .success, opcode: .disconnect)),
                    reference(ReferenceTraffic.central, 145, "Command Status (Disconnect)"))
    }

    func testCommandStatusWithError() {
        assertEvent(.commandStatus(CommandStatus(status: .unknownConnectionIdentifier, numHCICommandPackets: 2, opcode: .disconnect)),
                    bytes("0f 04",  // Command Status, length 4
                          "02",     // Status Unknown Connection Identifier
                          "02",     // Num_HCI_Command_Packets
                          "06 04")) // Command_Opcode Disconnect
    }

    // MARK: 7.7.16 Hardware Error

    func testHardwareError() {
        assertEvent(.hardwareError(0x2A), bytes("10", "01", "2a"))  // Event_Code, length 1, Hardware_Code
    }

    // MARK: 7.7.8 Encryption Change, 7.7.39 Encryption Key Refresh Complete, 7.7.65.5 LE Long Term Key Request

    func testEncryptionEvents() {
        assertEvent(.encryptionChange(EncryptionChange(handle: 0x0040, encryptionEnabled: 1)),
                    bytes("08", "04", "00", "40 00", "01"))    // Status, Connection_Handle, Encryption_Enabled
        assertEvent(.encryptionChange(EncryptionChange(status: .pinOrKeyMissing, handle: 1, encryptionEnabled: 0)),
                    bytes("08", "04", "06", "01 00", "00"))
        assertEvent(.encryptionKeyRefreshComplete(status: .success, handle: 2), bytes("30", "03", "00", "02 00"))
        assertEvent(.leMeta(.longTermKeyRequest(handle: 1, random: Array(1...8), ediv: 0xBEEF)),
                    bytes("3e", "0d", "05", "01 00", "01 02 03 04 05 06 07 08", "ef be"))   // Rand, then EDIV
        XCTAssertEqual(EventMask.encryptionChange, 1 << 7)
        XCTAssertEqual(EventMask.encryptionKeyRefreshComplete, 1 << 47)
        XCTAssertEqual(EventMask.leLongTermKeyRequest, 1 << 4)
        XCTAssertThrowsError(try HCIEvent(decoding: bytes("3e 0c 05 01 00 01 02 03 04 05 06 07 08 ef")), "a request one octet short")
    }

    // MARK: 7.7.19 Number Of Completed Packets

    func testNumberOfCompletedPacketsMatchesReferenceTraffic() {
        let ref = reference(ReferenceTraffic.central, 41, "Number of Completed Packets")
        XCTAssertEqual(ref, bytes(
            "13",     // Event_Code Number Of Completed Packets
            "05",     // Parameter_Total_Length
            "01",     // Num_Handles
            "01 00",  // Connection_Handle[0] 0x0001
            "01 00"   // Num_Completed_Packets[0] 1
        ))
        assertEvent(.numberOfCompletedPackets([CompletedPackets(handle: 0x0001, count: 1)]), ref)
    }

    func testNumberOfCompletedPacketsWithSeveralHandles() {
        assertEvent(.numberOfCompletedPackets([CompletedPackets(handle: 0x0001, count: 2),
                                               CompletedPackets(handle: 0x0040, count: 5),
                                               CompletedPackets(handle: 0x0EFF, count: 0xFFFF)]),
                    bytes("13",     // Event_Code
                          "0d",     // Parameter_Total_Length 1 + 3 × 4
                          "03",     // Num_Handles
                          "01 00",  // Connection_Handle 0x0001
                          "02 00",  // its Num_Completed_Packets 2
                          "40 00",  // Connection_Handle 0x0040
                          "05 00",  // its Num_Completed_Packets 5
                          "ff 0e",  // Connection_Handle 0x0EFF
                          "ff ff")) // its Num_Completed_Packets 65535
    }

    // MARK: Events outside the subset

    func testUnknownEventCodesKeepTheirParameters() {
        // 7.7.59 Encryption Change [v2]: Status, Connection_Handle, Encryption_Enabled, Encryption_Key_Size.
        assertEvent(.unknown(code: 0x59, parameters: bytes("00 01 00 01 10")), bytes("59 05", "00", "01 00", "01", "10"))
        // Vendor-specific event 0xFF, and an event without parameters.
        assertEvent(.unknown(code: 0xFF, parameters: bytes("de ad be ef")), bytes("ff 04 de ad be ef"))
        assertEvent(.unknown(code: 0x1A, parameters: []), bytes("1a 00"))
    }

    func testDecodingStartsAtTheGivenOffset() throws {
        XCTAssertEqual(try HCIEvent(decoding: bytes("04 0e 04 01 03 0c 00"), from: 1),
                       .commandComplete(CommandComplete(opcode: .reset, returnParameters: [0])))
    }

    // MARK: Event masks (7.3.1, 7.8.1)

    func testEventMaskBitsAndDefaults() {
        XCTAssertEqual(EventMask.disconnectionComplete, 0x0000_0000_0000_0010)  // bit 4
        XCTAssertEqual(EventMask.hardwareError, 0x0000_0000_0000_8000)          // bit 15
        XCTAssertEqual(EventMask.leMeta, 0x2000_0000_0000_0000)                 // bit 61
        XCTAssertEqual(EventMask.defaultMask, 0x0000_1FFF_FFFF_FFFF)            // bits 0–44 after Reset
        XCTAssertEqual(EventMask.defaultMask & EventMask.leMeta, 0, "LE Meta is off after Reset")
        XCTAssertEqual(EventMask.leDefaultMask, 0x1F)
        XCTAssertEqual([EventMask.leConnectionComplete, EventMask.leAdvertisingReport, EventMask.leConnectionUpdateComplete], [1, 2, 4])
    }

    func testTheReferenceHostEnablesTheEventsBLELabUses() throws {
        guard case let .command(.setEventMask(mask)) = try HCIPacket(h4: ReferenceTraffic.central[10].h4),
              case let .command(.leSetEventMask(leMask)) = try HCIPacket(h4: ReferenceTraffic.central[14].h4) else {
            return XCTFail("central #11 / #15 are not the event masks")
        }
        for bit in [EventMask.disconnectionComplete, EventMask.hardwareError, EventMask.leMeta] { XCTAssertNotEqual(mask & bit, 0) }
        for bit in [EventMask.leConnectionComplete, EventMask.leAdvertisingReport, EventMask.leConnectionUpdateComplete] {
            XCTAssertNotEqual(leMask & bit, 0)
        }
    }

    // MARK: Descriptions

    func testDescriptionsUseSpecNames() {
        XCTAssertEqual(HCIEvent.disconnectionComplete(DisconnectionComplete(handle: 1, reason: .remoteUserTerminatedConnection)).description,
                       "Disconnection Complete status success handle 0x0001 reason remote-user-terminated (0x13)")
        XCTAssertEqual(HCIEvent.commandComplete(CommandComplete(opcode: .reset, returnParameters: [0])).description,
                       "Command Complete (Reset) status success")
        XCTAssertEqual(HCIEvent.commandComplete(CommandComplete(opcode: .readBDAddr, returnParameters: bytes("00 01 00 00 ee ff c0"))).description,
                       "Command Complete (Read BD_ADDR) status success [01 00 00 ee ff c0]")
        XCTAssertEqual(HCIEvent.commandStatus(CommandStatus(status: .success, opcode: .leCreateConnection)).description,
                       "Command Status (LE Create Connection) status success")
        XCTAssertEqual(HCIEvent.hardwareError(0x2A).description, "Hardware Error 0x2a")
        XCTAssertEqual(HCIEvent.numberOfCompletedPackets([CompletedPackets(handle: 1, count: 1), CompletedPackets(handle: 2, count: 3)]).description,
                       "Number Of Completed Packets handle 0x0001: 1, handle 0x0002: 3")
        XCTAssertEqual(HCIEvent.unknown(code: 0x08, parameters: [0, 1]).description, "Event 0x08 [00 01]")
    }
}

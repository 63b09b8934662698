import BLERuntime
import BLEWire
import HCI
import HostLink
import Transport
import XCTest

/// Command flow control: Num_HCI_Command_Packets credits, Command Complete / Command Status
/// matching, the host's command timeout and transport failure (Core 5.4, Vol 4, Part E, 4.4 and
/// 7.7.14 / 7.7.15). Vectors come from the reference central capture where one exists.
final class HCIDriverCommandTests: XCTestCase {

    func testCommandGoesOutAsH4FrameAndCompletesWithReturnParameters() throws {
        let h = DriverHarness()
        let reset = h.send(.reset)
        h.controller.expectSent("01 | 03 0c | 00")            // command, HCI_Reset (0x0C03), no parameters
        XCTAssertFalse(reset.isComplete)

        h.controller.reply("04 | 0e 04 | 01 | 03 0c | 00")    // Command Complete: 1 credit, HCI_Reset, Status success
        XCTAssertEqual(reset.outcomes, [.returned(.reset, [0x00])])
    }

    func testReturnParametersDecodeToTheirType() throws {
        let h = DriverHarness()
        let buffers = h.send(.leReadBufferSize)
        h.controller.expectSent("01 | 02 20 | 00")
        // Command Complete (LE Read Buffer Size [v1], 7.8.2): Status, LE_ACL_Data_Packet_Length 27,
        // Total_Num_LE_ACL_Data_Packets 3.
        h.controller.reply("04 | 0e 07 | 01 | 02 20 | 00 | 1b 00 | 03")
        let result = try XCTUnwrap(buffers.result).get()
        XCTAssertEqual(try result.decode(LEReadBufferSizeReturn.self),
                       LEReadBufferSizeReturn(aclDataPacketLength: 27, totalNumACLDataPackets: 3))
    }

    func testReferenceReadBDAddrReturnsTheControllerAddress() throws {
        let h = DriverHarness()
        let read = h.send(.readBDAddr)
        h.controller.expectSent("01 09 10 00")
        h.controller.reply("04 0e 0a 01 09 10 00 | 01 00 00 ee ff c0")   // reference packet 26
        let address = try XCTUnwrap(read.result).get().decode(ReadBDAddrReturn.self).address
        XCTAssertEqual(address, BDAddr(rawValue: 0xC0FF_EE00_0001))
    }

    // MARK: Credits (4.4)

    func testSecondCommandWaitsForTheFirstCommandComplete() {
        let h = DriverHarness()
        let reset = h.send(.reset)
        let version = h.send(.readLocalVersionInformation)
        h.controller.expectSent("01 03 0c 00")
        h.controller.expectNothingSent()               // one credit, and it is spent on Reset

        h.controller.reply("04 0e 04 01 03 0c 00")       // returns the credit
        XCTAssertTrue(reset.isComplete)
        h.controller.expectSent("01 01 10 00")           // Read Local Version Information
        XCTAssertFalse(version.isComplete)

        h.controller.reply("04 0e 0c 01 01 10 00 09 00 00 09 ff ff 00 00")   // reference packet 6
        XCTAssertEqual(version.outcomes, [.returned(.readLocalVersionInformation, hex("00 09 00 00 09 ff ff 00 00"))])
    }

    func testZeroCreditsStallUntilANOPCommandCompleteGrantsOne() {
        let h = DriverHarness()
        let reset = h.send(.reset)
        let address = h.send(.readBDAddr)
        h.controller.expectSent("01 03 0c 00")

        // Num_HCI_Command_Packets 0: Reset is done, but the controller takes no command for now.
        h.controller.reply("04 0e 04 | 00 | 03 0c | 00")
        XCTAssertTrue(reset.isComplete)
        h.controller.expectNothingSent()

        // 7.7.14: a Command Complete with opcode 0x0000 (NOP) only updates the credits.
        h.controller.reply("04 0e 03 | 01 | 00 00")
        h.controller.expectSent("01 09 10 00")
        XCTAssertFalse(address.isComplete, "the NOP must not complete the waiting command")
        XCTAssertEqual(h.protocolErrors, [])
    }

    func testNOPWhileACommandIsInFlightDoesNotCompleteIt() {
        let h = DriverHarness()
        let reset = h.send(.reset)
        h.controller.expectSent("01 03 0c 00")
        h.controller.reply("04 0e 03 01 00 00")
        XCTAssertFalse(reset.isComplete)
        h.controller.reply("04 0e 04 01 03 0c 00")
        XCTAssertEqual(reset.results.count, 1)
    }

    func testCommandCompleteForAnotherOpcodeDoesNotCompleteTheCommandInFlight() {
        let h = DriverHarness()
        let scan = h.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        h.controller.expectSent("01 | 0c 20 | 02 | 01 00")
        h.controller.reply("04 0e 04 01 03 0c 00")        // a stray Reset completion
        XCTAssertFalse(scan.isComplete)
        h.controller.reply("04 0e 04 01 0c 20 00")
        XCTAssertEqual(scan.outcomes, [.returned(.leSetScanEnable, [0x00])])
    }

    // MARK: Command Status (7.7.15)

    func testCommandStatusCompletesACommandWithItsStatus() throws {
        let h = DriverHarness()
        // Reference packet 37: LE Create Connection to C0:FF:EE:00:00:02, decoded and sent again.
        let frame = hex("01 0d 20 19 60 00 60 00 00 01 02 00 00 ee ff c0 01 0c 00 18 00 00 00 48 00 00 00 00 00")
        let command = try HCICommand(decoding: frame, from: 1)
        let create = h.send(command)
        h.controller.expectSent(frame)

        h.controller.reply("04 0f 04 | 00 | 01 | 0d 20")   // Command Status: success, 1 credit (packet 38)
        XCTAssertEqual(create.outcomes, [.returned(.leCreateConnection, [0x00])])
    }

    func testCommandStatusErrorBecomesCommandError() {
        let h = DriverHarness()
        let disconnect = h.send(.disconnect(handle: 0x0001, reason: .remoteUserTerminatedConnection))
        h.controller.expectSent("01 | 06 04 | 03 | 01 00 | 13")   // reference packet 144
        h.controller.reply("04 0f 04 | 02 | 01 | 06 04")          // Unknown Connection Identifier
        XCTAssertEqual(disconnect.outcomes, [.failed(.command(.disconnect, .unknownConnectionIdentifier))])
    }

    func testCommandCompleteErrorStatusBecomesCommandError() {
        let h = DriverHarness()
        let scan = h.send(.leSetScanEnable(enable: true, filterDuplicates: true))
        h.controller.expectSent("01 0c 20 02 01 01")
        h.controller.reply("04 0e 04 01 0c 20 | 0c")               // Command Disallowed
        XCTAssertEqual(scan.outcomes, [.failed(.command(.leSetScanEnable, .commandDisallowed))])
    }

    func testAnErrorStatusStillReturnsTheCredit() {
        let h = DriverHarness()
        h.send(.leSetAdvertisingEnable(true))
        let next = h.send(.leSetAdvertisingEnable(false))
        h.controller.expectSent("01 0a 20 01 01")
        h.controller.reply("04 0e 04 01 0a 20 12")                 // Invalid HCI Command Parameters
        h.controller.expectSent("01 0a 20 01 00")
        h.controller.reply("04 0e 04 01 0a 20 00")
        XCTAssertEqual(next.outcomes, [.returned(.leSetAdvertisingEnable, [0x00])])
    }

    // MARK: Timeout (4.4: the host times out a command the controller never answers)

    func testUnansweredCommandTimesOutAfterTwoSecondsAndTheNextIsSent() {
        let h = DriverHarness()
        let reset = h.send(.reset)
        let address = h.send(.readBDAddr)
        h.controller.expectSent("01 03 0c 00")

        h.loop.advance(by: .milliseconds(1_999))
        XCTAssertFalse(reset.isComplete)
        h.controller.expectNothingSent()

        h.loop.advance(by: .milliseconds(1))
        XCTAssertEqual(reset.outcomes, [.failed(.commandTimeout(.reset))])
        XCTAssertEqual(reset.completedAt, Instant.zero + .seconds(2))
        h.controller.expectSent("01 09 10 00")

        // A late answer to the timed-out command must not complete the one now in flight.
        h.controller.reply("04 0e 04 01 03 0c 00")
        XCTAssertFalse(address.isComplete)

        // The next command gets a full timeout of its own, counted from when it was sent.
        h.loop.advance(by: .milliseconds(1_999))
        XCTAssertFalse(address.isComplete)
        h.loop.advance(by: .milliseconds(1))
        XCTAssertEqual(address.outcomes, [.failed(.commandTimeout(.readBDAddr))])
        XCTAssertEqual(address.completedAt, Instant.zero + .seconds(4))
    }

    func testAnsweredCommandDoesNotTimeOutLater() {
        let h = DriverHarness()
        let reset = h.send(.reset)
        h.controller.reply("04 0e 04 01 03 0c 00")
        h.loop.advance(by: .seconds(10))
        XCTAssertEqual(reset.outcomes, [.returned(.reset, [0x00])])
        XCTAssertTrue(h.loop.isIdle, "the command timer must be cancelled")
    }

    // MARK: Transport failure

    func testTransportCloseFailsEveryPendingCommand() {
        let h = DriverHarness()
        let inFlight = h.send(.reset)
        let queued1 = h.send(.readBDAddr)
        let queued2 = h.send(.leReadBufferSize)
        h.controller.expectSent("01 03 0c 00")

        let error = TransportError.closed(endpoint: "scripted controller")
        h.controller.close(error)
        XCTAssertEqual(inFlight.outcomes, [.failed(.transport(error))])
        XCTAssertEqual(queued1.outcomes, [.failed(.transport(error))])
        XCTAssertEqual(queued2.outcomes, [.failed(.transport(error))])
        XCTAssertEqual(h.transportClosures, [error])
        h.controller.expectNothingSent()

        // Nothing is left to time out, and later commands fail at once without being sent.
        h.loop.advance(by: .seconds(5))
        XCTAssertEqual(inFlight.results.count, 1)
        let late = h.send(.reset)
        XCTAssertEqual(late.outcomes, [.failed(.transport(error))])
        h.controller.expectNothingSent()
    }

    func testSecondCloseIsIgnored() {
        let h = DriverHarness()
        h.controller.close(.closed(endpoint: "scripted controller"))
        h.controller.close(.malformed(endpoint: "scripted controller", detail: "again"))
        XCTAssertEqual(h.transportClosures, [.closed(endpoint: "scripted controller")])
    }

    // MARK: Events that are not about commands

    func testOtherEventsGoUpUnchanged() throws {
        let h = DriverHarness()
        h.controller.reply("04 05 04 00 01 00 13")   // Disconnection Complete (reference packet 146)
        XCTAssertEqual(h.events, [.disconnectionComplete(DisconnectionComplete(handle: 0x0001, reason: .remoteUserTerminatedConnection))])
        XCTAssertEqual(h.protocolErrors, [])
    }
}

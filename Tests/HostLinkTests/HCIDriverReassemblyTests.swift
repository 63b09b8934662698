import BLERuntime
import HCI
import HostLink
import XCTest

/// Incoming ACL data: reassembly of L2CAP PDUs by the basic header's length (Core 5.4, Vol 3,
/// Part A, 3.1 and 7.2; PB flags Vol 4, Part E, 5.4.2), and what happens to packets that cannot
/// be used: each is reported as a protocol error and dropped, and the driver goes on.
final class HCIDriverReassemblyTests: XCTestCase {

    func testReferenceIncomingACLPacketsDeliverTheirExactL2CAPPDUs() {
        let h = DriverHarness()
        let incoming = CentralReferenceTraffic.incomingACL
        XCTAssertEqual(incoming.count, 36)
        for packet in incoming { h.controller.reply(packet.frame) }
        // H4 indicator (1) and ACL header (4) stripped; the L2CAP basic header stays.
        XCTAssertEqual(h.pdus, incoming.map { ReceivedPDU(handle: 0x0001, bytes: Array($0.frame[5...])) })
        XCTAssertEqual(h.protocolErrors, [])
    }

    func testReferenceNotificationIsDeliveredAsItsL2CAPPDU() {
        let h = DriverHarness()
        // Reference packet 135: ACL | handle 0x001, PB 0b10 | 9 | L2CAP length 5, CID ATT | Handle Value Notification 0x0019 = 00 3c
        h.controller.reply("02 | 01 20 | 09 00 | 05 00 04 00 | 1b 19 00 00 3c")
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0001, bytes: hex("05 00 04 00 1b 19 00 00 3c"))])
    }

    func testPDUInThreeFragmentsIsDeliveredOnceWhenComplete() {
        let h = DriverHarness()
        // Reference packet 99 (Read Blob Response, 27-octet L2CAP PDU) split 10 + 10 + 7.
        h.controller.reply("02 | 01 20 | 0a 00 | 17 00 04 00 | 0d 46 47 48 49 4a")   // PB 0b10 first
        h.controller.reply("02 | 01 10 | 0a 00 | 4b 4c 4d 4e 4f 50 51 52 53 54")     // PB 0b01 continuing
        XCTAssertEqual(h.pdus, [], "nothing goes up before the PDU is complete")
        h.controller.reply("02 | 01 10 | 07 00 | 55 56 57 58 59 5a 5b")
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0001, bytes: hex(
            "17 00 04 00 0d 46 47 48 49 4a 4b 4c 4d 4e 4f 50 51 52 53 54 55 56 57 58 59 5a 5b"))])
        XCTAssertEqual(h.protocolErrors, [])
    }

    func testBasicHeaderSplitAcrossFragments() {
        let h = DriverHarness()
        h.controller.reply("02 01 20 01 00 | 05")                        // only the Length's low octet
        h.controller.reply("02 01 10 03 00 | 00 04 00")                  // rest of the header
        h.controller.reply("02 01 10 05 00 | 1b 19 00 00 3d")
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0001, bytes: hex("05 00 04 00 1b 19 00 00 3d"))])
        XCTAssertEqual(h.protocolErrors, [])
    }

    func testFirstNonFlushableFlagAlsoStartsAPDU() {
        let h = DriverHarness()
        h.controller.reply("02 | 01 00 | 05 00 | 01 00 04 00 1e")       // PB 0b00
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0001, bytes: hex("01 00 04 00 1e"))])
    }

    func testFragmentsOnTwoHandlesReassembleIndependently() {
        let h = DriverHarness()
        h.controller.reply("02 01 20 06 00 | 05 00 04 00 1b 19")
        h.controller.reply("02 02 20 06 00 | 05 00 04 00 1b 1d")
        h.controller.reply("02 02 10 03 00 | 00 00 6e")
        h.controller.reply("02 01 10 03 00 | 00 00 3b")
        XCTAssertEqual(h.pdus, [
            ReceivedPDU(handle: 0x0002, bytes: hex("05 00 04 00 1b 1d 00 00 6e")),
            ReceivedPDU(handle: 0x0001, bytes: hex("05 00 04 00 1b 19 00 00 3b")),
        ])
    }

    func testEmptyL2CAPPayloadIsAWholePDU() {
        let h = DriverHarness()
        h.controller.reply("02 01 20 04 00 | 00 00 04 00")
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0001, bytes: hex("00 00 04 00"))])
    }

    // MARK: Broken sequences

    func testContinuationWithoutAStartIsReportedAndDropped() {
        let h = DriverHarness()
        h.controller.reply("02 | 01 10 | 03 00 | 00 00 3b")
        XCTAssertEqual(h.pdus, [])
        XCTAssertEqual(h.protocolErrorTexts, ["continuing ACL fragment on handle 0x1 without a start; dropped"])
        XCTAssertEqual(h.violations, [ProtocolViolation(layer: .l2cap, kind: .unexpectedContinuation, handle: 0x0001,
                                                        detail: h.protocolErrorTexts[0], octets: hex("00 00 3b"))])

        // The next good PDU still arrives.
        h.controller.reply("02 01 20 05 00 01 00 04 00 1e")
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0001, bytes: hex("01 00 04 00 1e"))])
    }

    func testNewStartBeforeCompletionDropsTheUnfinishedPDU() {
        let h = DriverHarness()
        h.controller.reply("02 01 20 06 00 | 17 00 04 00 0d 46")           // 27-octet PDU begun
        h.controller.reply("02 01 20 09 00 | 05 00 04 00 1b 19 00 00 3c")  // a whole new one instead
        XCTAssertEqual(h.protocolErrors.count, 1)
        XCTAssertTrue(h.protocolErrorTexts[0].contains("before the previous one was complete"), h.protocolErrorTexts[0])
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0001, bytes: hex("05 00 04 00 1b 19 00 00 3c"))])

        // The dropped PDU's tail now has no start.
        h.controller.reply("02 01 10 03 00 | 47 48 49")
        XCTAssertEqual(h.violationKinds, ["l2cap/incomplete-frame", "l2cap/unexpected-continuation"])
        XCTAssertEqual(h.violations.map(\.octets), [hex("17 00 04 00 0d 46"), hex("47 48 49")])
        XCTAssertEqual(h.pdus.count, 1)
    }

    func testSingleFragmentLongerThanItsHeaderSaysIsDropped() {
        let h = DriverHarness()
        h.controller.reply("02 01 20 07 00 | 01 00 04 00 | 1e ff ff")     // Length 1, three octets follow
        XCTAssertEqual(h.pdus, [])
        XCTAssertEqual(h.protocolErrorTexts, ["L2CAP PDU on handle 0x1 longer (7) than its header says (5); dropped"])
        XCTAssertEqual(h.violationKinds, ["l2cap/frame-length-mismatch"])
        XCTAssertEqual(h.violations.first?.octets, hex("01 00 04 00 1e ff ff"))
        h.controller.reply("02 01 20 05 00 01 00 04 00 1e")
        XCTAssertEqual(h.pdus.count, 1)
    }

    func testContinuationOverrunningTheHeaderLengthDropsThePDU() {
        let h = DriverHarness()
        h.controller.reply("02 01 20 06 00 | 03 00 04 00 0a 10")          // 7 octets expected, 6 so far
        h.controller.reply("02 01 10 04 00 | 00 aa bb cc")                 // 10 > 7
        XCTAssertEqual(h.pdus, [])
        XCTAssertEqual(h.protocolErrors.count, 1)
        // Nothing is left half-assembled: a further continuation has no start.
        h.controller.reply("02 01 10 01 00 | dd")
        XCTAssertEqual(h.violationKinds, ["l2cap/frame-length-mismatch", "l2cap/unexpected-continuation"])
    }

    func testCompletePBFlagIsNotUsedOnLE() {
        let h = DriverHarness()
        h.controller.reply("02 | 01 30 | 05 00 | 01 00 04 00 1e")         // PB 0b11
        XCTAssertEqual(h.pdus, [])
        XCTAssertEqual(h.violationKinds, ["hci/invalid-packet-boundary"])
        XCTAssertEqual(h.violations.first?.handle, 0x0001)
    }

    func testConnectionClosedDiscardsAndReportsAHalfAssembledPDU() {
        let h = DriverHarness()
        h.controller.reply("02 01 20 06 00 | 05 00 04 00 1b 19")
        XCTAssertEqual(h.protocolErrors, [])
        h.driver.connectionClosed(handle: 0x0001)
        XCTAssertEqual(h.violations, [ProtocolViolation(
            layer: .l2cap, kind: .incompleteFrame, handle: 0x0001,
            detail: "the link ended with an L2CAP PDU unfinished (6 octets of 9); discarded", octets: hex("05 00 04 00 1b 19"))])
        h.controller.reply("02 01 10 03 00 | 00 00 3b")
        XCTAssertEqual(h.pdus, [])
        XCTAssertEqual(h.violationKinds, ["l2cap/incomplete-frame", "l2cap/unexpected-continuation"],
                       "the tail of the old connection's PDU has no start")
    }

    func testConnectionClosedWithNothingHalfAssembledReportsNothing() {
        let h = DriverHarness()
        h.controller.reply("02 01 20 09 00 | 05 00 04 00 1b 19 00 00 3c")
        h.driver.connectionClosed(handle: 0x0001)
        h.driver.connectionClosed(handle: 0x0002)
        XCTAssertEqual(h.protocolErrors, [])
    }

    // MARK: Packets that cannot be decoded

    func testTruncatedCommandCompleteIsAProtocolErrorAndTheCommandStillCompletesLater() {
        let h = DriverHarness()
        let reset = h.send(.reset)
        h.controller.reply("04 | 0e 02 | 01 03")                          // Command_Opcode cut short
        XCTAssertEqual(h.violationKinds, ["hci/malformed-packet"])
        XCTAssertEqual(h.violations.first?.handle, nil)
        XCTAssertTrue(h.protocolErrorTexts[0].hasPrefix("event [04 0e 02 01 03]"), h.protocolErrorTexts[0])
        XCTAssertFalse(reset.isComplete)

        h.controller.reply("04 0e 04 01 03 0c 00")
        XCTAssertEqual(reset.outcomes, [.returned(.reset, [0x00])])
    }

    func testEventWhoseLengthDisagreesWithItsParametersIsAProtocolError() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 1)
        h.driver.sendL2CAP(handle: 0x0001, pdu: hex("01 00 04 00 1e"))
        h.controller.reply("04 13 05 | 01 01 00 01")                       // Parameter_Total_Length 5, 4 present
        h.controller.reply("04 13 04 | 02 01 00 01 00")                    // Num_Handles 2, one entry
        XCTAssertEqual(h.violationKinds, ["hci/malformed-packet", "hci/malformed-packet"])
        XCTAssertEqual(h.events, [])

        // Neither returned a credit.
        h.driver.sendL2CAP(handle: 0x0001, pdu: hex("01 00 04 00 1e"))
        XCTAssertEqual(h.controller.unmatched.count, 1)
    }

    func testACLPacketWhoseLengthDisagreesIsAProtocolError() {
        let h = DriverHarness()
        h.controller.reply("02 | 01 20 | 09 00 | 05 00 04 00 1b")         // Data_Total_Length 9, 5 present
        h.controller.reply("02 | 01")                                     // no header at all
        XCTAssertEqual(h.pdus, [])
        XCTAssertEqual(h.violationKinds, ["hci/malformed-packet", "hci/malformed-packet"])
        XCTAssertEqual(h.violations.map(\.handle), [0x0001, nil])
    }

    func testUnknownH4PacketTypeIsAProtocolError() {
        let h = DriverHarness()
        h.controller.reply("07 | 00 00")
        XCTAssertEqual(h.protocolErrorTexts, ["unexpected H4 packet type 0x7 from the controller"])
        XCTAssertEqual(h.violationKinds, ["hci/unexpected-packet-type"])
    }
}

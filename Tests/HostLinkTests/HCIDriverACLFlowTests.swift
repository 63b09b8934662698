import BLERuntime
import HCI
import HostLink
import XCTest

/// Outgoing ACL data: fragmentation of L2CAP PDUs to LE_ACL_Data_Packet_Length, PB flags
/// (Core 5.4, Vol 4, Part E, 5.4.2), LE buffer credits returned by Number Of Completed Packets
/// (4.1.1, 7.7.19), round-robin between connections, and credits freed on disconnection (4.3).
final class HCIDriverACLFlowTests: XCTestCase {

    /// An ATT Write Request to handle 0x0010 with a 53-octet value 00 01 … 34: a 60-octet
    /// L2CAP PDU.
    static let sixtyOctetPDU: [UInt8] = hex("38 00 | 04 00 | 12 | 10 00") + (0x00...0x34).map { UInt8($0) }

    func testSixtyOctetPDUBecomesThreeFragmentsOf27_27_6() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 3)
        XCTAssertEqual(Self.sixtyOctetPDU.count, 60)

        h.driver.sendL2CAP(handle: 0x0001, pdu: Self.sixtyOctetPDU)
        // ACL | Handle 0x001, PB 0b00 (first, non-flushable) | Length 27 | L2CAP length 56, CID ATT | Write Request, handle 0x0010 | value 00…13
        h.controller.expectSent("02 | 01 00 | 1b 00 | 38 00 04 00 | 12 10 00 | 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13")
        // ACL | Handle 0x001, PB 0b01 (continuing) | Length 27 | value 14…2e
        h.controller.expectSent("02 | 01 10 | 1b 00 | 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f 20 21 22 23 24 25 26 27 28 29 2a 2b 2c 2d 2e")
        // ACL | Handle 0x001, PB 0b01 (continuing) | Length 6 | value 2f…34
        h.controller.expectSent("02 | 01 10 | 06 00 | 2f 30 31 32 33 34")
        h.controller.expectNothingSent()
    }

    func testPDUThatFitsGoesOutWhole() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 1)
        // Reference packet 111: a 27-octet PDU (Prepare Write Request) in one 27-octet packet.
        let frame = hex("02 01 00 1b 00 17 00 04 00 16 10 00 00 00 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11")
        h.driver.sendL2CAP(handle: 0x0001, pdu: Array(frame[5...]))
        h.controller.expectSent(frame)
        h.controller.expectNothingSent()
    }

    func testLongerBuffersMeanFewerFragments() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 251, count: 1)
        h.driver.sendL2CAP(handle: 0x0002, pdu: Self.sixtyOctetPDU)
        h.controller.expectSent(hex("02 | 02 00 | 3c 00") + Self.sixtyOctetPDU)
        h.controller.expectNothingSent()
    }

    // MARK: Credits

    func testOnlyCountFragmentsGoOutUntilNumberOfCompletedPacketsReturnsCredits() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 2)
        h.driver.sendL2CAP(handle: 0x0001, pdu: Self.sixtyOctetPDU)
        XCTAssertEqual(h.controller.unmatched.count, 2)
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 1)

        // Number Of Completed Packets: 1 handle | 0x0001 | 1 packet (reference packet 41)
        h.controller.reply("04 13 05 | 01 | 01 00 | 01 00")
        XCTAssertEqual(h.controller.unmatched.count, 3)
        XCTAssertEqual(h.controller.unmatched.last, hex("02 01 10 06 00 2f 30 31 32 33 34"))
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 0)
        XCTAssertEqual(h.protocolErrors, [])
    }

    func testEveryFragmentHandedToTheControllerIsReportedWithWhatStillWaits() {
        let h = DriverHarness()
        var sent: [(handle: UInt16, stillQueued: Int)] = []
        h.driver.onACLSent = { sent.append(($0, $1)) }
        h.driver.setLEBuffers(packetLength: 27, count: 1)
        h.driver.sendL2CAP(handle: 0x0001, pdu: Self.sixtyOctetPDU)   // three fragments, one credit
        XCTAssertEqual(sent.map(\.handle), [0x0001])
        XCTAssertEqual(sent.map(\.stillQueued), [2])

        // Number Of Completed Packets: 1 handle | 0x0001 | 1 packet
        h.controller.reply("04 13 05 | 01 | 01 00 | 01 00")
        h.controller.reply("04 13 05 | 01 | 01 00 | 01 00")
        XCTAssertEqual(sent.map(\.stillQueued), [2, 1, 0])
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 0)
    }

    func testNoBuffersMeansNothingIsSent() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 0)
        h.driver.sendL2CAP(handle: 0x0001, pdu: hex("01 00 04 00 1e"))
        h.controller.expectNothingSent()
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 1)
    }

    func testFragmentsAlternateBetweenTwoConnections() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 1)
        h.driver.sendL2CAP(handle: 0x0003, pdu: hex("01 00 04 00 1e"))   // takes the only buffer
        h.controller.expectSent("02 03 00 05 00 01 00 04 00 1e")
        h.driver.sendL2CAP(handle: 0x0001, pdu: Self.sixtyOctetPDU)
        h.driver.sendL2CAP(handle: 0x0002, pdu: Self.sixtyOctetPDU)
        h.controller.expectNothingSent()

        // Each report frees the one buffer, held by the packet sent last; the handles take turns.
        for completedHandle in ["03 00", "01 00", "02 00", "01 00", "02 00", "01 00"] {
            h.controller.reply("04 13 05 01 | \(completedHandle) | 01 00")
        }
        // ACL headers only: indicator | handle + PB | length.
        XCTAssertEqual(h.controller.unmatched.map { Array($0.prefix(5)).spacedHex }, [
            "02 01 00 1b 00", "02 02 00 1b 00",
            "02 01 10 1b 00", "02 02 10 1b 00",
            "02 01 10 06 00", "02 02 10 06 00",
        ])
        XCTAssertEqual(h.protocolErrors, [])
    }

    func testOneEventCompletingTwoHandlesSendsOneFragmentForEach() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 2)
        h.driver.sendL2CAP(handle: 0x0001, pdu: hex("05 00 04 00 1b 19 00 00 3c"))
        h.driver.sendL2CAP(handle: 0x0002, pdu: hex("05 00 04 00 1b 19 00 00 3d"))
        h.controller.expectSent("02 01 00 09 00 05 00 04 00 1b 19 00 00 3c")
        h.controller.expectSent("02 02 00 09 00 05 00 04 00 1b 19 00 00 3d")

        h.driver.sendL2CAP(handle: 0x0001, pdu: Self.sixtyOctetPDU)
        h.driver.sendL2CAP(handle: 0x0002, pdu: Self.sixtyOctetPDU)
        h.controller.expectNothingSent()

        // Number Of Completed Packets: 2 handles | 0x0001: 1 | 0x0002: 1
        h.controller.reply("04 13 09 | 02 | 01 00 01 00 | 02 00 01 00")
        XCTAssertEqual(h.controller.unmatched.map { [$0[1], $0[2]] }, [[0x01, 0x00], [0x02, 0x00]])
        XCTAssertEqual(h.protocolErrors, [])
    }

    // MARK: Disconnection (4.3)

    func testConnectionClosedReturnsItsCreditsAndDropsItsQueue() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 3)
        h.driver.sendL2CAP(handle: 0x0001, pdu: Self.sixtyOctetPDU)
        h.driver.sendL2CAP(handle: 0x0001, pdu: Self.sixtyOctetPDU)
        h.driver.sendL2CAP(handle: 0x0002, pdu: hex("01 00 04 00 1e"))
        // All three buffers hold handle 0x0001's first PDU.
        XCTAssertEqual(h.controller.takeSent().map { Array($0.prefix(5)).spacedHex },
                       ["02 01 00 1b 00", "02 01 10 1b 00", "02 01 10 06 00"])
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 3)
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0002), 1)

        // The controller frees a disconnected handle's buffers without reporting them.
        h.driver.connectionClosed(handle: 0x0001)
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 0)
        h.controller.expectSent("02 | 02 00 | 05 00 | 01 00 04 00 1e")   // the other link's packet goes at once
        h.controller.expectNothingSent()

        // Credits: 3 returned, 1 used. A late report for the closed handle is an error and adds nothing.
        h.controller.reply("04 13 05 01 01 00 03 00")
        XCTAssertEqual(h.protocolErrors.count, 1)
        h.driver.sendL2CAP(handle: 0x0002, pdu: Self.sixtyOctetPDU)
        XCTAssertEqual(h.controller.unmatched.count, 2)
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0002), 1)
    }

    func testConnectionClosedForAnIdleHandleChangesNothing() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 2)
        h.driver.connectionClosed(handle: 0x0007)
        h.driver.sendL2CAP(handle: 0x0001, pdu: Self.sixtyOctetPDU)
        XCTAssertEqual(h.controller.unmatched.count, 2, "closing an idle handle must not add credits")
    }

    // MARK: Broken Number Of Completed Packets

    func testCompletedPacketsBeyondOutstandingIsAProtocolErrorAndAddsNoCredits() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 3)
        h.driver.sendL2CAP(handle: 0x0001, pdu: hex("01 00 04 00 1e"))
        h.controller.expectSent("02 01 00 05 00 01 00 04 00 1e")

        h.controller.reply("04 13 05 01 | 01 00 | 03 00")     // 3 completed, 1 outstanding
        XCTAssertEqual(h.violationKinds, ["hci/completed-packets-overcount"])
        XCTAssertEqual(h.violations.first?.handle, 0x0001)
        XCTAssertTrue(h.protocolErrorTexts[0].contains("reports 3 for handle 0x1 with 1 outstanding"), h.protocolErrorTexts[0])

        // Only the one real packet's credit came back: 3 buffers, not 5.
        for value in UInt8(0x20)..<0x25 { h.driver.sendL2CAP(handle: 0x0001, pdu: [0x01, 0x00, 0x04, 0x00, value]) }
        XCTAssertEqual(h.controller.unmatched.count, 3)
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 2)
    }

    func testCompletedPacketsForAnUnknownHandleIsAProtocolError() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 1)
        h.controller.reply("04 13 05 01 | 40 00 | 01 00")
        XCTAssertEqual(h.violationKinds, ["hci/completed-packets-overcount"])
        h.driver.sendL2CAP(handle: 0x0001, pdu: hex("01 00 04 00 1e"))
        h.driver.sendL2CAP(handle: 0x0001, pdu: hex("01 00 04 00 1e"))
        XCTAssertEqual(h.controller.unmatched.count, 1)
    }
}

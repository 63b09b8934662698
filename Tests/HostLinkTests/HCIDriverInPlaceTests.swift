import BLERuntime
import BLEWire
import HCI
import HostLink
import XCTest

/// The driver's per-packet shortcuts, byte for byte against the general paths:
/// `sendL2CAP(handle:channel:payload:)` writes the basic frame (Core 5.4, Vol 3, Part A, 3.1)
/// straight into its ACL fragments (Vol 4, Part E, 5.4.2); a whole basic frame in one start
/// fragment and Number Of Completed Packets (7.7.19) are read in place.
final class HCIDriverInPlaceTests: XCTestCase {

    /// Every fragment the driver hands to the controller for one PDU, with `packetLength` buffers.
    private func fragments(packetLength: Int, handle: UInt16 = 0x0001, send: (HCIDriver) -> Void) -> [[UInt8]] {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: packetLength, count: 1000)
        send(h.driver)
        return h.controller.takeSent()
    }

    func testChannelAndPayloadGiveTheFragmentsOfTheEncodedFrameAtEveryBufferSize() {
        for packetLength in [1, 2, 3, 4, 5, 6, 7, 8, 9, 23, 27, 251] {
            for size in [0, 1, 2, 3, 4, 5, 19, 23, 27, 60, 300] {
                let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
                let frame = L2CAPBasicFrame(channel: 0x0004, payload: payload).encoded
                let general = fragments(packetLength: packetLength) { $0.sendL2CAP(handle: 0x0001, pdu: frame) }
                let direct = fragments(packetLength: packetLength) { $0.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: payload) }
                XCTAssertEqual(direct, general, "buffers of \(packetLength), payload of \(size)")
                XCTAssertEqual(direct.count, max(1, (frame.count + packetLength - 1) / packetLength))
            }
        }
    }

    func testHeaderSplitOverThreeOctetBuffers() {
        let sent = fragments(packetLength: 3) { $0.sendL2CAP(handle: 0x0002, channel: 0x0005, payload: hex("0a 0b 0c")) }
        // ACL | handle 0x002, PB 0b00 | 3 | Length 03 00, CID's low octet
        // ACL | handle 0x002, PB 0b01 | 3 | CID's high octet, payload 0a 0b
        // ACL | handle 0x002, PB 0b01 | 1 | payload 0c
        XCTAssertEqual(sent, [hex("02 | 02 00 | 03 00 | 03 00 05"),
                              hex("02 | 02 10 | 03 00 | 00 0a 0b"),
                              hex("02 | 02 10 | 01 00 | 0c")])
    }

    func testEmptyPayloadIsTheHeaderAlone() {
        let sent = fragments(packetLength: 27) { $0.sendL2CAP(handle: 0x0003, channel: 0x0006, payload: []) }
        XCTAssertEqual(sent, [hex("02 | 03 00 | 04 00 | 00 00 06 00")])
    }

    func testNotificationGoesOutAsOneFragment() {
        // Handle Value Notification, handle 0x0019 = 00 3c: L2CAP length 5, CID ATT.
        let sent = fragments(packetLength: 27) { $0.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("1b 19 00 00 3c")) }
        XCTAssertEqual(sent, [hex("02 | 01 00 | 09 00 | 05 00 04 00 | 1b 19 00 00 3c")])
    }

    func testDirectAndGeneralSendsShareOneQueueAndItsCredits() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 1)
        h.driver.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("1e"))
        h.driver.sendL2CAP(handle: 0x0001, pdu: hex("01 00 04 00 1f"))
        h.driver.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("20"))
        XCTAssertEqual(h.controller.takeSent(), [hex("02 01 00 05 00 01 00 04 00 1e")])
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 2)
        h.controller.reply("04 13 05 | 01 | 01 00 | 01 00")
        h.controller.reply("04 13 05 | 01 | 01 00 | 01 00")
        XCTAssertEqual(h.controller.takeSent(), [hex("02 01 00 05 00 01 00 04 00 1f"), hex("02 01 00 05 00 01 00 04 00 20")])
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 0)
        XCTAssertEqual(h.protocolErrors, [])
    }

    func testNothingIsQueuedOnceTheTransportClosed() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 0)
        h.driver.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("1e"))
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 1)
        h.controller.close(.closed(endpoint: "test"))
        h.controller.settle()
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 0)
        h.driver.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("1f"))
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 0)
        XCTAssertEqual(h.controller.takeSent(), [])
    }

    // MARK: Number Of Completed Packets

    func testCompletedPacketsForTwoHandlesInOneEventReturnBothCredits() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 2)
        h.driver.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("1e"))
        h.driver.sendL2CAP(handle: 0x0002, channel: 0x0004, payload: hex("1e"))
        h.driver.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("1f"))
        h.driver.sendL2CAP(handle: 0x0002, channel: 0x0004, payload: hex("1f"))
        XCTAssertEqual(h.controller.takeSent().count, 2)
        // Num_Handles 2 | 0x0001: 1 packet | 0x0002: 1 packet
        h.controller.reply("04 13 09 | 02 | 01 00 01 00 | 02 00 01 00")
        XCTAssertEqual(h.controller.takeSent(), [hex("02 01 00 05 00 01 00 04 00 1f"), hex("02 02 00 05 00 01 00 04 00 1f")])
        XCTAssertEqual(h.protocolErrors, [])
        XCTAssertEqual(h.events, [], "handled by the driver, not handed up")
    }

    func testCompletedPacketsBeyondWhatWasSentAreReportedAndCountOnlyWhatWasOutstanding() {
        let h = DriverHarness()
        h.driver.setLEBuffers(packetLength: 27, count: 1)
        h.driver.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("1e"))
        h.driver.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("1f"))
        h.driver.sendL2CAP(handle: 0x0001, channel: 0x0004, payload: hex("20"))
        XCTAssertEqual(h.controller.takeSent().count, 1)
        // 3 packets of 0x0001 (1 outstanding), 1 of 0x0005 (none ever sent).
        h.controller.reply("04 13 09 | 02 | 01 00 03 00 | 05 00 01 00")
        XCTAssertEqual(h.violationKinds, ["hci/completed-packets-overcount", "hci/completed-packets-overcount"])
        XCTAssertEqual(h.violations.map(\.handle), [0x0001, 0x0005])
        XCTAssertEqual(h.protocolErrorTexts, [
            "Number Of Completed Packets reports 3 for handle 0x1 with 1 outstanding",
            "Number Of Completed Packets reports 1 for handle 0x5 with 0 outstanding",
        ])
        // One credit came back: one more fragment went.
        XCTAssertEqual(h.controller.takeSent(), [hex("02 01 00 05 00 01 00 04 00 1f")])
    }

    // MARK: Whole frames in one fragment

    func testWholeFrameOnAnotherHandleWhileAPDUIsUnfinishedIsDeliveredAndTheUnfinishedOneStays() {
        let h = DriverHarness()
        h.controller.reply("02 | 01 20 | 06 00 | 05 00 04 00 1b 19")          // handle 1: 2 of 5 payload octets
        h.controller.reply("02 | 02 20 | 09 00 | 05 00 04 00 1b 1d 00 00 6e") // handle 2: whole
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0002, bytes: hex("05 00 04 00 1b 1d 00 00 6e"))])
        h.controller.reply("02 | 01 10 | 03 00 | 00 00 3b")
        XCTAssertEqual(h.pdus.last, ReceivedPDU(handle: 0x0001, bytes: hex("05 00 04 00 1b 19 00 00 3b")))
        XCTAssertEqual(h.protocolErrors, [])
    }

    func testWholeFrameWithBroadcastFlagsAndHighHandleBitsIsDeliveredOnTheTwelveBitHandle() {
        let h = DriverHarness()
        // Handle 0x0ABC, PB 0b10, BC 0b01 (the host's driver does not judge BC): 0x6ABC.
        h.controller.reply("02 | bc 6a | 05 00 | 01 00 04 00 1e")
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0ABC, bytes: hex("01 00 04 00 1e"))])
        XCTAssertEqual(h.protocolErrors, [])
    }

    func testStartFragmentShorterThanItsFrameIsKeptForTheRest() {
        let h = DriverHarness()
        h.controller.reply("02 | 01 00 | 05 00 | 02 00 04 00 1e")   // Length 2, one octet here
        XCTAssertEqual(h.pdus, [])
        h.controller.reply("02 | 01 10 | 01 00 | 1f")
        XCTAssertEqual(h.pdus, [ReceivedPDU(handle: 0x0001, bytes: hex("02 00 04 00 1e 1f"))])
        XCTAssertEqual(h.protocolErrors, [])
    }
}

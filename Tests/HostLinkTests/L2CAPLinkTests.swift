import BLERuntime
import HCI
import HostLink
import XCTest

/// Basic frames on an LE-U link (Core 5.4, Vol 3, Part A, 3.1) and the fixed channels of 2.1:
/// ATT on 0x0004 goes up, unknown CIDs are dropped.
final class L2CAPLinkTests: XCTestCase {

    func testATTPayloadIsDeliveredWithoutTheBasicHeader() {
        let l = LinkHarness(role: .central)
        l.controller.reply("02 01 20 09 00 | 05 00 04 00 | 1b 19 00 00 3c")   // reference packet 135
        l.controller.reply("02 01 20 0c 00 | 08 00 04 00 | 1d 1d 00 00 6e 01 00 ff")   // reference packet 138
        XCTAssertEqual(l.attPDUs, [hex("1b 19 00 00 3c"), hex("1d 1d 00 00 6e 01 00 ff")])
        l.controller.expectNothingSent()
    }

    func testSendATTProducesLengthCIDPayload() {
        let l = LinkHarness(role: .central)
        l.link.sendATT(hex("0a 10 00"))                                        // Read Request, handle 0x0010
        // Reference packet 91: ACL handle 0x001 PB 0b00 | 7 | L2CAP Length 3, CID 0x0004 | 0a 10 00
        l.controller.expectSent("02 | 01 00 | 07 00 | 03 00 04 00 | 0a 10 00")
        l.link.sendATT(hex("1e"))                                              // Handle Value Confirmation (packet 139)
        l.controller.expectSent("02 01 00 05 00 | 01 00 04 00 | 1e")
    }

    func testLongATTPDUIsFragmentedByTheDriver() {
        let l = LinkHarness(role: .central)
        l.link.sendATT([0x52, 0x12, 0x00] + [UInt8](repeating: 0x63, count: 30))   // Write Command, 33 octets
        XCTAssertEqual(l.controller.takeSent().map { Array($0.prefix(9)).spacedHex }, [
            "02 01 00 1b 00 21 00 04 00",   // first: L2CAP Length 33, CID ATT
            "02 01 10 0a 00 63 63 63 63",   // continuing: the last 10 octets
        ])
    }

    func testUnknownCIDIsDropped() {
        let l = LinkHarness(role: .central)
        l.receive(cid: 0x0040, "01 02 03")                                     // a dynamic CID, never opened
        l.receive(cid: 0x0000, "01")                                           // the null identifier
        XCTAssertEqual(l.attPDUs, [])
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["l2cap/unknown-channel -> none", "l2cap/unknown-channel -> none"])
        XCTAssertEqual(l.violations.map(\.octets), [hex("03 00 40 00 01 02 03"), hex("01 00 00 00 01")])
        XCTAssertEqual(l.violations.map(\.handle), [0x0001, 0x0001])
    }

    func testInconsistentBasicFrameIsReportedAndDropped() {
        let l = LinkHarness(role: .central)
        l.link.receive(pdu: hex("05 00 04 00 | 1b 19"))                       // Length 5, 2 octets present
        l.link.receive(pdu: hex("05 00 04"))                                  // no whole header
        XCTAssertEqual(l.attPDUs, [])
        XCTAssertEqual(l.reported, ["l2cap/frame-length-mismatch -> none", "l2cap/frame-length-mismatch -> none"])
    }

    func testClosedLinkNeitherDeliversNorSends() {
        let l = LinkHarness(role: .central)
        l.link.close(reason: .connectionTimeout)
        XCTAssertTrue(l.link.isClosed)
        l.controller.reply("02 01 20 09 00 05 00 04 00 1b 19 00 00 3c")
        l.receive(cid: L2CAPChannelID.smp, "01 03 00 01 10 07 07")
        l.link.sendATT(hex("0a 10 00"))
        XCTAssertEqual(l.attPDUs, [])
        l.controller.expectNothingSent()
    }

    func testQueuedFragmentsAreTheLinksShareOfTheDriverQueue() {
        let l = LinkHarness(role: .central)
        l.h.driver.setLEBuffers(packetLength: 27, count: 1)
        l.link.sendATT([0x52, 0x12, 0x00] + [UInt8](repeating: 0x63, count: 30))
        XCTAssertEqual(l.link.queuedFragments, 1)
    }
}

import BLERuntime
import HCI
import HostLink
import XCTest

/// SMP on CID 0x0006 while pairing is not supported: requests to pair are answered with
/// Pairing Failed, reason Pairing Not Supported (Core 5.4, Vol 3, Part H, 3.5.5, reason 0x05);
/// commands of a pairing never started with Command Not Supported (0x07); a Pairing Failed from
/// the peer is recorded and never answered. (SMPViolationTests: what is reported.)
final class SMPRefusalTests: XCTestCase {
    let smp = L2CAPChannelID.smp

    private func refusals(_ l: LinkHarness) -> [String] {
        l.link.smpRefusals.map { "\($0.sent ? "sent" : "received") 0x\(String($0.reason, radix: 16))" }
    }

    func testPairingRequestIsAnsweredWithPairingNotSupported() {
        let l = LinkHarness(role: .peripheral)
        // Pairing Request (3.5.1): IO_Capability NoInputNoOutput 0x03, OOB 0x00, AuthReq bonding 0x01,
        // Max_Encryption_Key_Size 16, Initiator Key Distribution 0x07, Responder Key Distribution 0x07
        l.receive(cid: smp, "01 | 03 | 00 | 01 | 10 | 07 | 07")
        // ACL handle 0x001 PB 0b00 | 6 | L2CAP Length 2, CID 0x0006 | Pairing Failed, Pairing Not Supported
        l.controller.expectSent("02 | 01 00 | 06 00 | 02 00 06 00 | 05 05")
        XCTAssertEqual(refusals(l), ["sent 0x5"])
    }

    func testSecurityRequestOnACentralIsAnsweredWithPairingNotSupported() {
        let l = LinkHarness(role: .central)
        l.receive(cid: smp, "0b | 01")                                       // Security Request (3.6.7), AuthReq bonding
        l.expectSent(cid: smp, "05 05")
        XCTAssertEqual(refusals(l), ["sent 0x5"])
    }

    func testRequestsToTheWrongRoleAreAnsweredWithCommandNotSupported() {
        // Only a central sends Pairing Request and only a peripheral sends Security Request
        // (3.5.1, 3.6.7): the other role answers Pairing Failed, Command Not Supported (0x07).
        let central = LinkHarness(role: .central)
        central.receive(cid: smp, "01 | 03 | 00 | 01 | 10 | 07 | 07")
        central.expectSent(cid: smp, "05 07")
        let peripheral = LinkHarness(role: .peripheral)
        peripheral.receive(cid: smp, "0b | 01")
        peripheral.expectSent(cid: smp, "05 07")
        XCTAssertEqual(refusals(central), ["sent 0x7"])
        XCTAssertEqual(refusals(peripheral), ["sent 0x7"])
    }

    func testIncomingPairingFailedIsRecordedAndNotAnswered() {
        let l = LinkHarness(role: .central)
        l.receive(cid: smp, "05 | 08")                                       // Pairing Failed, Unspecified Reason
        l.controller.expectNothingSent()
        XCTAssertEqual(refusals(l), ["received 0x8"])
    }

    func testOtherSMPCommandsGetCommandNotSupported() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: smp, "03 | 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f")   // Pairing Confirm
        l.expectSent(cid: smp, "05 07")
        l.receive(cid: smp, "")                                                         // empty: no Code to answer
        l.controller.expectNothingSent()
        XCTAssertEqual(refusals(l), ["sent 0x7"])
    }
}

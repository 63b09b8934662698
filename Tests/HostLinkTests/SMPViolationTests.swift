import BLERuntime
import HCI
import HostLink
import XCTest

/// Every violation on SMP (Core 5.4, Vol 3, Part H, 3) is reported once, typed, and answered
/// with Pairing Failed where the spec says so (3.5.5), never for a reserved code (3.3) or a
/// Pairing Failed.
final class SMPViolationTests: XCTestCase {
    let smp = L2CAPChannelID.smp

    func testPairingRequestWithFieldsOutOfRangeGetsInvalidParameters() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: smp, "01 | 05 | 00 | 01 | 10 | 07 07")               // IO Capability 0x05: reserved
        l.expectSent(cid: smp, "05 0a")
        l.receive(cid: smp, "01 | 03 | 02 | 01 | 10 | 07 07")               // OOB data flag 0x02
        l.expectSent(cid: smp, "05 0a")
        l.receive(cid: smp, "01 | 03 | 00 | 01 | 06 | 07 07")               // Maximum Encryption Key Size 6
        l.expectSent(cid: smp, "05 0a")
        l.receive(cid: smp, "01 | 03 | 00 | 01 | 11 | 07 07")               // … 17
        l.expectSent(cid: smp, "05 0a")
        XCTAssertEqual(l.reported, Array(repeating: "smp/invalid-parameters -> pairing-failed 0x0a", count: 4))
        XCTAssertEqual(l.violations.first?.detail, "Pairing Request with IO Capability 0x05 out of range")
    }

    func testCommandOfTheWrongLengthGetsInvalidParameters() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: smp, "01 | 03 00 01 10 07")                          // Pairing Request, 6 octets not 7
        l.expectSent(cid: smp, "05 0a")
        l.receive(cid: smp, "03 | 00 01 02")                                // Pairing Confirm, 4 octets not 17
        l.expectSent(cid: smp, "05 0a")
        XCTAssertEqual(l.reported, ["smp/invalid-length -> pairing-failed 0x0a", "smp/invalid-length -> pairing-failed 0x0a"])
    }

    func testSecurityRequestOfTheWrongLengthGetsInvalidParameters() {
        let l = LinkHarness(role: .central)
        l.receive(cid: smp, "0b | 01 00")
        l.expectSent(cid: smp, "05 0a")
        XCTAssertEqual(l.reported, ["smp/invalid-length -> pairing-failed 0x0a"])
    }

    func testRequestsToTheWrongRoleAreReported() {
        let central = LinkHarness(role: .central)
        central.receive(cid: smp, "01 | 03 | 00 | 01 | 10 | 07 | 07")
        central.expectSent(cid: smp, "05 07")
        let peripheral = LinkHarness(role: .peripheral)
        peripheral.receive(cid: smp, "0b | 01")
        peripheral.expectSent(cid: smp, "05 07")
        XCTAssertEqual(central.reported, ["smp/wrong-role -> pairing-failed 0x07"])
        XCTAssertEqual(peripheral.reported, ["smp/wrong-role -> pairing-failed 0x07"])
    }

    func testCommandsOfAPairingNeverStartedGetCommandNotSupported() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: smp, "03 | 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f")   // Pairing Confirm
        l.expectSent(cid: smp, "05 07")
        l.receive(cid: smp, "02 | 03 00 01 10 07 07")                                  // Pairing Response
        l.expectSent(cid: smp, "05 07")
        l.receive(cid: smp, "0e | 00")                                                 // Keypress Notification
        l.expectSent(cid: smp, "05 07")
        l.receive(cid: smp, "0c" + String(repeating: " 00", count: 64))              // Pairing Public Key
        l.expectSent(cid: smp, "05 07")
        XCTAssertEqual(l.reported, Array(repeating: "smp/unexpected-command -> pairing-failed 0x07", count: 4))
    }

    func testReservedCodesAndEmptyPDUsAreIgnoredAndReported() {
        let l = LinkHarness(role: .central)
        l.receive(cid: smp, "00 | 01 02")
        l.receive(cid: smp, "0f")
        l.receive(cid: smp, "ff | 00")
        l.receive(cid: smp, "")
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["smp/unknown-code -> none", "smp/unknown-code -> none", "smp/unknown-code -> none",
                                    "smp/invalid-length -> none"])
    }

    func testPairingFailedIsReportedAndNeverAnswered() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: smp, "05 | 08")
        l.receive(cid: smp, "05 | 08 00")
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["smp/unexpected-command -> none", "smp/invalid-length -> none"])
    }

    func testWellFormedRequestsInTheirRoleAreRefusalsNotViolations() {
        let peripheral = LinkHarness(role: .peripheral)
        peripheral.receive(cid: smp, "01 | 04 | 01 | 2d | 07 | 0f | 0f")   // every field at its range's end
        peripheral.expectSent(cid: smp, "05 05")
        let central = LinkHarness(role: .central)
        central.receive(cid: smp, "0b | 2d")
        central.expectSent(cid: smp, "05 05")
        XCTAssertEqual(peripheral.violations + central.violations, [])
    }
}

import BLERuntime
import HCI
import HostLink
import XCTest

/// Every violation on the LE signaling channel (Core 5.4, Vol 3, Part A, 4) is reported once,
/// typed, with the answer 4.1 demands (or none), and the answer is on the wire byte for byte.
final class SignalingViolationTests: XCTestCase {
    let sig = L2CAPChannelID.leSignaling

    func testUnknownCodeIsReportedAndRejectedAsNotUnderstood() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: sig, "02 07 04 00 | 41 00 40 00")                 // Connection Request: BR/EDR only
        l.expectSent(cid: sig, "01 07 02 00 | 00 00")
        l.receive(cid: sig, "ff 08 00 00")                               // no such code at all
        l.expectSent(cid: sig, "01 08 02 00 | 00 00")
        XCTAssertEqual(l.reported, ["signaling/unknown-code -> command-reject 0x0000",
                                    "signaling/unknown-code -> command-reject 0x0000"])
        XCTAssertEqual(l.violations.map(\.octets), [hex("02 07 04 00 41 00 40 00"), hex("ff 08 00 00")])
    }

    func testUnsupportedEnhancedCreditBasedCommandsAreReportedAndRejected() {
        let l = LinkHarness(role: .central)
        // Credit Based Connection Request (4.25, enhanced mode): SPSM 0x0080, MTU 64, MPS 64, 10 credits, one Source CID
        l.receive(cid: sig, "17 21 0a 00 | 80 00 40 00 40 00 0a 00 40 00")
        l.expectSent(cid: sig, "01 21 02 00 | 00 00")
        l.receive(cid: sig, "19 22 06 00 | 40 00 40 00 40 00")               // Credit Based Reconfigure Request (4.27)
        l.expectSent(cid: sig, "01 22 02 00 | 00 00")
        XCTAssertEqual(l.reported, ["signaling/unsupported-command -> command-reject 0x0000",
                                    "signaling/unsupported-command -> command-reject 0x0000"])
    }

    func testOversizedCommandIsReportedWithTheRejectItGot() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: sig, "14 05 14 00 | 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13")
        l.expectSent(cid: sig, "01 05 04 00 | 01 00 | 17 00")
        XCTAssertEqual(l.violations, [ProtocolViolation(
            layer: .signaling, kind: .mtuExceeded, handle: 0x0001,
            detail: "24-octet signaling command over MTU_sig 23",
            octets: hex("14 05 14 00 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13"),
            answer: .commandReject(.signalingMTUExceeded, data: [0x17, 0x00]))])
    }

    func testHeaderCutShortWithAnIdentifierIsRejected() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "12 0a 08")                                   // Length's second octet missing
        l.expectSent(cid: sig, "01 0a 02 00 | 00 00")
        XCTAssertEqual(l.reported, ["signaling/malformed-command -> command-reject 0x0000"])
    }

    func testEmptyCFrameIsReportedAndNotAnswered() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "")
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["signaling/malformed-command -> none"])
    }

    func testParameterUpdateRequestToAPeripheralIsAWrongRoleViolation() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        l.expectSent(cid: sig, "01 01 02 00 | 00 00")
        XCTAssertEqual(l.reported, ["signaling/wrong-role -> command-reject 0x0000"])
    }

    func testOutOfRangeParametersAreAViolationAnsweredWithRejected() {
        let l = LinkHarness(role: .central)
        // Interval_Min 2 (below 6), Interval_Max 12, Latency 0, Timeout 200.
        l.receive(cid: sig, "12 02 08 00 | 02 00 0c 00 00 00 c8 00")
        l.expectSent(cid: sig, "13 02 02 00 | 01 00")
        // Latency 500 (above 499).
        l.receive(cid: sig, "12 03 08 00 | 06 00 0c 00 f4 01 80 0c")
        l.expectSent(cid: sig, "13 03 02 00 | 01 00")
        XCTAssertEqual(l.reported, ["signaling/invalid-parameters -> connection-parameters-rejected",
                                    "signaling/invalid-parameters -> connection-parameters-rejected"])
        XCTAssertEqual(l.acceptedParameters, [])
    }

    func testOwnersRefusalOfValidParametersIsNoViolation() {
        let l = LinkHarness(role: .central)
        l.link.acceptsConnectionParameters = { _ in false }
        l.receive(cid: sig, "12 09 08 00 | 06 00 0c 00 00 00 c8 00")
        l.expectSent(cid: sig, "13 09 02 00 | 01 00")
        XCTAssertEqual(l.violations, [])
    }

    func testDisconnectionRequestNamesNoChannelAndGetsInvalidCID() {
        let l = LinkHarness(role: .peripheral)
        // Disconnection Request (4.6): Destination CID 0x0040, Source CID 0x0041.
        l.receive(cid: sig, "06 0c 04 00 | 40 00 41 00")
        // Command Reject, Reason 0x0002 Invalid CID in request, data: the request's destination
        // CID then its source CID (4.1).
        l.expectSent(cid: sig, "01 0c 06 00 | 02 00 | 40 00 41 00")
        XCTAssertEqual(l.reported, ["signaling/unknown-channel -> command-reject 0x0002"])
        XCTAssertEqual(l.violations.first?.answer, .commandReject(.invalidCID, data: hex("40 00 41 00")))
    }

    func testDisconnectionRequestOfTheWrongSizeIsNotUnderstood() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: sig, "06 0d 02 00 | 40 00")
        l.expectSent(cid: sig, "01 0d 02 00 | 00 00")
        XCTAssertEqual(l.reported, ["signaling/malformed-command -> command-reject 0x0000"])
    }

    func testResponsesToRequestsNeverSentAreDiscardedNotRejected() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "07 0e 04 00 | 40 00 41 00")                     // Disconnection Response
        l.receive(cid: sig, "15 0f 0a 00 | 40 00 17 00 17 00 0a 00 00 00")   // LE Credit Based Connection Response
        l.receive(cid: sig, "13 10 02 00 | 00 00")                           // Connection Parameter Update Response
        l.receive(cid: sig, "01 11 02 00 | 00 00")                           // Command Reject
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, Array(repeating: "signaling/unsolicited-response -> none", count: 4))
    }

    func testRejectOfOurOwnRequestIsNoViolation() {
        let l = LinkHarness(role: .peripheral)
        let update = l.requestUpdate(ConnectionParameterUpdate(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200))
        l.expectSent(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        l.receive(cid: sig, "01 01 02 00 | 00 00")
        XCTAssertEqual(update.results.count, 1)
        XCTAssertEqual(l.violations, [])
    }

    func testMalformedResponseToOurRequestFailsItAndIsReported() {
        let l = LinkHarness(role: .peripheral)
        let update = l.requestUpdate(ConnectionParameterUpdate(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200))
        l.expectSent(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        l.receive(cid: sig, "13 01 02 00 | 07 00")                            // Result 0x0007: not 0 or 1
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["signaling/malformed-command -> none"])
        guard case .failure? = update.results.first else { return XCTFail("\(update.results)") }
    }
}

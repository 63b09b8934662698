import BLERuntime
import HCI
import HostLink
import XCTest

/// The LE signaling channel, CID 0x0005 (Core 5.4, Vol 3, Part A, 4): Connection Parameter
/// Update Request / Response (4.20, 4.21), Command Reject (4.1), identifiers (4) and the
/// signaling MTU, and the RTX timer on our own request (6.2.1).
final class L2CAPSignalingTests: XCTestCase {
    let sig = L2CAPChannelID.leSignaling

    // MARK: A central answers Connection Parameter Update Request (4.20)

    func testCentralAcceptsValidParametersAndTellsItsOwner() {
        let l = LinkHarness(role: .central)
        // ACL handle 0x001 PB 0b10 | 16 | L2CAP 12, CID 0x0005 | Code 0x12, Identifier 1, Length 8 |
        // Interval_Min 6 (7.5 ms), Interval_Max 12 (15 ms), Latency 0, Timeout 200 (2 s)
        l.controller.reply("02 | 01 20 | 10 00 | 0c 00 05 00 | 12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        // ACL handle 0x001 PB 0b00 | 10 | L2CAP 6, CID 0x0005 | Code 0x13, Identifier 1, Length 2 | Result 0x0000 accepted
        l.controller.expectSent("02 | 01 00 | 0a 00 | 06 00 05 00 | 13 01 02 00 | 00 00")
        XCTAssertEqual(l.acceptedParameters, [ConnectionParameterUpdate(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200)])
        l.controller.expectNothingSent()
    }

    func testCentralRejectsMinimumAboveMaximum() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "12 02 08 00 | 0c 00 06 00 00 00 c8 00")
        l.expectSent(cid: sig, "13 02 02 00 | 01 00")                   // Result 0x0001 rejected
        XCTAssertEqual(l.acceptedParameters, [])
    }

    func testCentralRejectsATimeoutTooShortForTheInterval() {
        let l = LinkHarness(role: .central)
        // Interval 4 s, latency 0, timeout 100 ms: the timeout must exceed (1 + latency) × interval × 2.
        l.receive(cid: sig, "12 03 08 00 | 80 0c 80 0c 00 00 0a 00")
        l.expectSent(cid: sig, "13 03 02 00 | 01 00")
        XCTAssertEqual(l.acceptedParameters, [])
    }

    func testCentralOwnerPolicyCanRejectValidParameters() {
        let l = LinkHarness(role: .central)
        var asked: [ConnectionParameterUpdate] = []
        l.link.acceptsConnectionParameters = { asked.append($0); return false }
        l.receive(cid: sig, "12 09 08 00 | 06 00 0c 00 00 00 c8 00")
        l.expectSent(cid: sig, "13 09 02 00 | 01 00")
        XCTAssertEqual(asked, [ConnectionParameterUpdate(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200)])
        XCTAssertEqual(l.acceptedParameters, [])
    }

    func testPeripheralRejectsAParameterUpdateRequestWithCommandReject() {
        let l = LinkHarness(role: .peripheral)
        l.receive(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        // Command Reject, Identifier 1, Length 2 | Reason 0x0000 Command not understood
        l.controller.expectSent("02 01 00 0a 00 | 06 00 05 00 | 01 01 02 00 | 00 00")
        XCTAssertEqual(l.acceptedParameters, [])
    }

    // MARK: Command Reject (4.1)

    func testUnknownCodeIsRejectedAsNotUnderstoodWithTheSameIdentifier() {
        let l = LinkHarness(role: .central)
        // Credit Based Connection Request (4.25, enhanced mode), not supported here: SPSM 0x0080,
        // MTU 64, MPS 64, Initial Credits 10, Source CID 0x0040.
        l.receive(cid: sig, "17 21 0a 00 | 80 00 40 00 40 00 0a 00 40 00")
        l.expectSent(cid: sig, "01 21 02 00 | 00 00")
    }

    func testOversizedCommandIsRejectedWithSignalingMTUExceeded() {
        let l = LinkHarness(role: .central)
        // 24 octets, one more than MTU_sig 23.
        l.receive(cid: sig, "14 05 14 00 | 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13")
        // Command Reject, Identifier 5, Length 4 | Reason 0x0001 Signaling MTU exceeded | Actual MTU 0x0017
        l.expectSent(cid: sig, "01 05 04 00 | 01 00 | 17 00")
    }

    func testCommandOfExactlyTheSignalingMTUIsNotTooLong() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "14 06 13 00 | 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12")
        l.expectSent(cid: sig, "01 06 02 00 | 00 00")                    // not understood, not "MTU exceeded"
    }

    func testTheRejectCarriesThisSidesSignalingMTU() {
        let l = LinkHarness(role: .central)
        l.link.signalingMTU = 0x0100
        // 4 + 253 = 257 octets, one more than MTU_sig 256.
        l.controller.reply(LinkHarness.aclFrame(flags: 0x20, cid: sig,
                                                payload: hex("14 07 fd 00") + [UInt8](repeating: 0, count: 0xFD)))
        l.expectSent(cid: sig, "01 07 04 00 | 01 00 | 00 01")
    }

    func testIdentifierZeroIsIgnored() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "12 00 08 00 | 06 00 0c 00 00 00 c8 00")
        l.receive(cid: sig, "14 00 0a 00 | 80 00 40 00 17 00 17 00 0a 00")
        l.controller.expectNothingSent()
        XCTAssertEqual(l.acceptedParameters, [])
        XCTAssertEqual(l.reported, ["signaling/zero-identifier -> none", "signaling/zero-identifier -> none"])
    }

    func testOversizedCommandWithIdentifierZeroIsIgnoredToo() {
        let l = LinkHarness(role: .central)
        // 4: identifier 0x00 "shall never be used in any command", a Command Reject included.
        l.receive(cid: sig, "14 00 14 00 | 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13")
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["signaling/mtu-exceeded -> none"])
    }

    func testWrongLengthForAKnownCommandIsRejected() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "12 03 06 00 | 06 00 0c 00 00 00")         // Length 6, the request has 8
        l.expectSent(cid: sig, "01 03 02 00 | 00 00")
        XCTAssertEqual(l.acceptedParameters, [])
        XCTAssertEqual(l.reported, ["signaling/malformed-command -> command-reject 0x0000"])
    }

    func testLengthFieldDisagreeingWithTheFrameIsRejected() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "12 04 08 00 | 06 00 0c 00")               // Length 8, 4 octets present
        l.expectSent(cid: sig, "01 04 02 00 | 00 00")
        XCTAssertEqual(l.reported, ["signaling/malformed-command -> command-reject 0x0000"])
    }

    func testCommandTooShortToHaveAnIdentifierIsOnlyReported() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "12")
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["signaling/malformed-command -> none"])
    }

    func testCommandRejectFromThePeerIsNeverAnswered() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "01 09 02 00 | 00 00")
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["signaling/unsolicited-response -> none"])
    }

    func testUnsolicitedResponseIsIgnored() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "13 04 02 00 | 00 00")
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["signaling/unsolicited-response -> none"])
    }

    // MARK: A peripheral asks for new parameters (4.20), with the RTX timer (6.2.1)

    static let params = ConnectionParameterUpdate(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200)

    func testPeripheralRequestGoesOutAndCompletesOnAcceptance() {
        let l = LinkHarness(role: .peripheral)
        let update = l.requestUpdate(Self.params)
        l.controller.expectSent("02 | 01 00 | 10 00 | 0c 00 05 00 | 12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        XCTAssertEqual(update.results, [])

        l.receive(cid: sig, "13 01 02 00 | 00 00")
        XCTAssertEqual(update.results, [.success(true)])
        l.controller.expectNothingSent()
        l.loop.advance(by: .seconds(60))
        XCTAssertEqual(update.results.count, 1, "the RTX timer must be stopped")
    }

    func testPeripheralRequestCompletesWithFalseWhenRejected() {
        let l = LinkHarness(role: .peripheral)
        let update = l.requestUpdate(Self.params)
        l.expectSent(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        l.receive(cid: sig, "13 01 02 00 | 01 00")
        XCTAssertEqual(update.results, [.success(false)])
    }

    func testResponseWithAnotherIdentifierIsIgnoredAndIdentifiersAdvance() {
        let l = LinkHarness(role: .peripheral)
        let first = l.requestUpdate(Self.params)
        l.expectSent(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        l.receive(cid: sig, "13 02 02 00 | 00 00")
        XCTAssertEqual(first.results, [])
        l.receive(cid: sig, "13 01 02 00 | 00 00")
        XCTAssertEqual(first.results, [.success(true)])

        l.requestUpdate(ConnectionParameterUpdate(intervalMin: 24, intervalMax: 40, latency: 4, timeout: 600))
        l.expectSent(cid: sig, "12 02 08 00 | 18 00 28 00 04 00 58 02")
    }

    func testPeripheralRequestTimesOutAfterThirtySeconds() {
        let l = LinkHarness(role: .peripheral)
        let update = l.requestUpdate(Self.params)
        l.expectSent(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")

        l.loop.advance(by: .milliseconds(29_999))
        XCTAssertEqual(update.results, [])
        l.loop.advance(by: .milliseconds(1))
        XCTAssertEqual(update.results, [.failure(.timeout("Connection Parameter Update Request"))])
        XCTAssertEqual(update.completedAt, Instant.zero + .seconds(30))

        // A late response changes nothing; a new request may go.
        l.receive(cid: sig, "13 01 02 00 | 00 00")
        XCTAssertEqual(update.results.count, 1)
        l.requestUpdate(Self.params)
        l.expectSent(cid: sig, "12 02 08 00 | 06 00 0c 00 00 00 c8 00")
    }

    func testCommandRejectFailsThePeripheralRequest() {
        let l = LinkHarness(role: .peripheral)
        let update = l.requestUpdate(Self.params)
        l.expectSent(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        l.receive(cid: sig, "01 01 02 00 | 00 00")                      // Command not understood
        guard case .failure(.invalidState)? = update.results.first else {
            return XCTFail("expected a failure, got \(update.results)")
        }
        XCTAssertEqual(update.results.count, 1)
        l.controller.expectNothingSent()
    }

    func testCloseFailsThePeripheralRequest() {
        let l = LinkHarness(role: .peripheral)
        let update = l.requestUpdate(Self.params)
        l.expectSent(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        l.link.close(reason: .remoteUserTerminatedConnection)
        XCTAssertEqual(update.results, [.failure(.disconnected(.remoteUserTerminatedConnection))])
        l.loop.advance(by: .seconds(60))
        XCTAssertEqual(update.results.count, 1)

        let afterClose = l.requestUpdate(Self.params)
        XCTAssertEqual(afterClose.results, [.failure(.invalidState("link closed"))])
        l.controller.expectNothingSent()
    }

    func testSecondRequestWhileOneIsPendingFails() {
        let l = LinkHarness(role: .peripheral)
        l.requestUpdate(Self.params)
        l.expectSent(cid: sig, "12 01 08 00 | 06 00 0c 00 00 00 c8 00")
        let second = l.requestUpdate(Self.params)
        guard case .failure(.invalidState)? = second.results.first else { return XCTFail("\(second.results)") }
        l.controller.expectNothingSent()
    }

    func testCentralCannotSendTheRequest() {
        let l = LinkHarness(role: .central)
        let update = l.requestUpdate(Self.params)
        guard case .failure(.invalidState)? = update.results.first else { return XCTFail("\(update.results)") }
        l.controller.expectNothingSent()
    }
}

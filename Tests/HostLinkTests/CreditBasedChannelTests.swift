import BLERuntime
import HCI
import HostLink
import XCTest

/// LE credit based channels on one L2CAP link, octet for octet on the HCI wire (Core 5.4, Vol 3,
/// Part A): opening as initiator and accepting as responder (4.22, 4.23), K-frames with the SDU
/// Length in the first (3.4.3), credits (4.24, 10.1), disconnection (4.6, 4.7), and what a peer
/// that breaks the rules gets.
final class CreditBasedChannelTests: XCTestCase {
    let sig = L2CAPChannelID.leSignaling

    /// Collects what a channel delivers.
    final class Sink {
        var sdus: [[UInt8]] = []
        var closes: [L2CAPChannelCloseReason] = []
        func attach(_ channel: L2CAPCreditBasedChannel) {
            channel.onSDU = { [unowned self] in self.sdus.append($0) }
            channel.onClose = { [unowned self] in self.closes.append($0) }
        }
    }

    /// Opens PSM 0x0080 as initiator with our MTU 100, MPS 30, 4 credits; the peer answers with
    /// its CID 0x0041, MTU 60, MPS 23 and `peerCredits` credits.
    func openedChannel(_ l: LinkHarness, peerCredits: UInt8 = 2, sink: Sink? = nil) -> L2CAPCreditBasedChannel? {
        var result: Result<L2CAPCreditBasedChannel, L2CAPChannelError>?
        l.link.openCreditBasedChannel(psm: 0x0080, parameters: L2CAPChannelParameters(mtu: 100, mps: 30, initialCredits: 4)) { result = $0 }
        // Code 0x14, Identifier 1, Length 10 | SPSM 0x0080 | Source CID 0x0040 | MTU 100 | MPS 30 | Initial Credits 4
        l.expectSent(cid: sig, "14 01 0a 00 | 80 00 | 40 00 | 64 00 | 1e 00 | 04 00")
        XCTAssertNil(result, "no channel before the response")
        // Code 0x15, Identifier 1 | Destination CID 0x0041 | MTU 60 | MPS 23 | Initial Credits | Result 0x0000
        l.receive(cid: sig, "15 01 0a 00 | 41 00 | 3c 00 | 17 00 | \(String(format: "%02x", peerCredits)) 00 | 00 00")
        guard case let .success(channel)? = result else {
            XCTFail("channel not opened: \(String(describing: result))")
            return nil
        }
        sink?.attach(channel)
        return channel
    }

    // MARK: Opening as initiator (4.22, 4.23)

    func testInitiatorOpensWithTheResponsesParameters() throws {
        let l = LinkHarness(role: .central)
        let channel = try XCTUnwrap(openedChannel(l))
        XCTAssertEqual(channel.psm, 0x0080)
        XCTAssertEqual(channel.localCID, 0x0040)
        XCTAssertEqual(channel.remoteCID, 0x0041)
        XCTAssertEqual([channel.localMTU, channel.localMPS, channel.remoteMTU, channel.remoteMPS], [100, 30, 60, 23])
        XCTAssertEqual(channel.sendCredits, 2)
        XCTAssertEqual(channel.peerCredits, 4)
        XCTAssertTrue(channel.isInitiator)
        XCTAssertTrue(l.link.channels[0x0040] === channel)
        XCTAssertEqual(l.reported, [])
    }

    func testASecondChannelTakesTheNextCID() throws {
        let l = LinkHarness(role: .central)
        _ = try XCTUnwrap(openedChannel(l))
        l.link.openCreditBasedChannel(psm: 0x00ff) { _ in }
        // Identifier 2 | SPSM 0x00ff | Source CID 0x0041 | MTU 2048 | MPS 247 | 16 credits (the defaults)
        l.expectSent(cid: sig, "14 02 0a 00 | ff 00 | 41 00 | 00 08 | f7 00 | 10 00")
    }

    func testRefusalIsTheCompletionsError() {
        let l = LinkHarness(role: .central)
        var result: Result<L2CAPCreditBasedChannel, L2CAPChannelError>?
        l.link.openCreditBasedChannel(psm: 0x0081) { result = $0 }
        l.expectSent(cid: sig, "14 01 0a 00 | 81 00 | 40 00 | 00 08 | f7 00 | 10 00")
        l.receive(cid: sig, "15 01 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 02 00")   // SPSM not supported
        guard case .failure(.refused(.spsmNotSupported))? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertTrue(l.link.channels.isEmpty)
        XCTAssertEqual(l.reported, [])
    }

    func testCommandRejectFailsTheOpen() {
        let l = LinkHarness(role: .central)
        var result: Result<L2CAPCreditBasedChannel, L2CAPChannelError>?
        l.link.openCreditBasedChannel(psm: 0x0080) { result = $0 }
        _ = l.controller.takeSent()
        l.receive(cid: sig, "01 01 02 00 | 00 00")                           // Command not understood
        guard case .failure(.rejected(.commandNotUnderstood))? = result else { return XCTFail("\(String(describing: result))") }
    }

    func testNoResponseTimesOutAfterTheRTX() {
        let l = LinkHarness(role: .central)
        var result: Result<L2CAPCreditBasedChannel, L2CAPChannelError>?
        l.link.openCreditBasedChannel(psm: 0x0080) { result = $0 }
        l.loop.advance(by: .seconds(29))
        XCTAssertNil(result)
        l.loop.advance(by: .seconds(1))
        XCTAssertEqual(result.map { if case .failure(.timeout) = $0 { return true } else { return false } }, true)
    }

    func testReservedSPSMAndBadParametersAreNotSent() {
        let l = LinkHarness(role: .central)
        var errors: [L2CAPChannelError] = []
        l.link.openCreditBasedChannel(psm: 0x0100) { if case let .failure(e) = $0 { errors.append(e) } }
        l.link.openCreditBasedChannel(psm: 0x0080, parameters: L2CAPChannelParameters(mtu: 22, mps: 23, initialCredits: 1)) {
            if case let .failure(e) = $0 { errors.append(e) }
        }
        XCTAssertEqual(errors.count, 2)
        l.controller.expectNothingSent()
    }

    func testResponseWithAFixedDestinationCIDFailsTheOpen() {
        let l = LinkHarness(role: .central)
        var result: Result<L2CAPCreditBasedChannel, L2CAPChannelError>?
        l.link.openCreditBasedChannel(psm: 0x0080) { result = $0 }
        _ = l.controller.takeSent()
        l.receive(cid: sig, "15 01 0a 00 | 04 00 | 17 00 | 17 00 | 01 00 | 00 00")   // Destination CID 0x0004: ATT's
        guard case .failure(.invalidResponse)? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertEqual(l.reported, ["signaling/invalid-parameters -> none"])
        l.controller.expectNothingSent()
    }

    func testResponseWithAnMPSBelow23IsDisconnected() {
        let l = LinkHarness(role: .central)
        var result: Result<L2CAPCreditBasedChannel, L2CAPChannelError>?
        l.link.openCreditBasedChannel(psm: 0x0080) { result = $0 }
        _ = l.controller.takeSent()
        l.receive(cid: sig, "15 01 0a 00 | 41 00 | 17 00 | 16 00 | 01 00 | 00 00")   // MPS 22
        guard case .failure(.invalidResponse)? = result else { return XCTFail("\(String(describing: result))") }
        // Disconnection Request, Identifier 2 | Destination CID 0x0041 | Source CID 0x0040
        l.expectSent(cid: sig, "06 02 04 00 | 41 00 | 40 00")
        XCTAssertEqual(l.reported, ["signaling/invalid-parameters -> channel-disconnected 0x0040"])
    }

    // MARK: Accepting as responder (4.22, 4.23)

    private func serving(_ l: LinkHarness, _ parameters: L2CAPChannelParameters = L2CAPChannelParameters(mtu: 64, mps: 23, initialCredits: 3))
        -> () -> [L2CAPCreditBasedChannel] {
        var accepted: [L2CAPCreditBasedChannel] = []
        l.link.creditBasedServer = { psm in psm == 0x0080 ? .accept(parameters) : .refuse(.spsmNotSupported) }
        l.link.onCreditBasedChannel = { accepted.append($0) }
        return { accepted }
    }

    func testResponderAcceptsARegisteredSPSM() throws {
        let l = LinkHarness(role: .peripheral)
        let accepted = serving(l)
        // SPSM 0x0080 | Source CID 0x0045 | MTU 512 | MPS 247 | Initial Credits 10
        l.receive(cid: sig, "14 21 0a 00 | 80 00 | 45 00 | 00 02 | f7 00 | 0a 00")
        // Identifier 0x21 | Destination CID 0x0040 | MTU 64 | MPS 23 | Initial Credits 3 | Result 0x0000
        l.expectSent(cid: sig, "15 21 0a 00 | 40 00 | 40 00 | 17 00 | 03 00 | 00 00")
        let channel = try XCTUnwrap(accepted().first)
        XCTAssertEqual([Int(channel.localCID), Int(channel.remoteCID), channel.remoteMTU, channel.remoteMPS, channel.sendCredits],
                       [0x40, 0x45, 512, 247, 10])
        XCTAssertFalse(channel.isInitiator)
        XCTAssertEqual(l.reported, [])
    }

    func testUnregisteredSPSMIsRefusedAsNotSupported() {
        let l = LinkHarness(role: .peripheral)
        let accepted = serving(l)
        l.receive(cid: sig, "14 22 0a 00 | 81 00 | 40 00 | 17 00 | 17 00 | 01 00")
        // Result 0x0002 LE_PSM not supported, every other field 0
        l.expectSent(cid: sig, "15 22 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 02 00")
        XCTAssertTrue(accepted().isEmpty)
        XCTAssertEqual(l.reported, [], "asking is not a violation")
    }

    func testWithoutAServerEverySPSMIsNotSupported() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "14 21 0a 00 | 80 00 40 00 17 00 17 00 0a 00")
        l.expectSent(cid: sig, "15 21 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 02 00")
    }

    func testReservedSPSMIsNotSupportedEvenWhenTheServerSaysYes() {
        let l = LinkHarness(role: .peripheral)
        l.link.creditBasedServer = { _ in .accept(L2CAPChannelParameters()) }
        l.receive(cid: sig, "14 23 0a 00 | 00 01 | 40 00 | 17 00 | 17 00 | 01 00")   // SPSM 0x0100
        l.expectSent(cid: sig, "15 23 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 02 00")
    }

    func testInvalidSourceCIDIsRefused() {
        let l = LinkHarness(role: .peripheral)
        let accepted = serving(l)
        l.receive(cid: sig, "14 24 0a 00 | 80 00 | 04 00 | 17 00 | 17 00 | 01 00")   // Source CID 0x0004
        l.expectSent(cid: sig, "15 24 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 09 00")
        l.receive(cid: sig, "14 25 0a 00 | 80 00 | 80 00 | 17 00 | 17 00 | 01 00")   // Source CID 0x0080
        l.expectSent(cid: sig, "15 25 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 09 00")
        XCTAssertTrue(accepted().isEmpty)
        XCTAssertEqual(l.reported, ["signaling/invalid-source-cid -> channel-refused 0x0009",
                                    "signaling/invalid-source-cid -> channel-refused 0x0009"])
    }

    func testSourceCIDAlreadyAllocatedIsRefused() {
        let l = LinkHarness(role: .peripheral)
        let accepted = serving(l)
        l.receive(cid: sig, "14 01 0a 00 | 80 00 | 45 00 | 17 00 | 17 00 | 01 00")
        l.expectSent(cid: sig, "15 01 0a 00 | 40 00 | 40 00 | 17 00 | 03 00 | 00 00")
        l.receive(cid: sig, "14 02 0a 00 | 80 00 | 45 00 | 17 00 | 17 00 | 01 00")   // 0x0045 again
        l.expectSent(cid: sig, "15 02 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 0a 00")
        XCTAssertEqual(accepted().count, 1)
        XCTAssertEqual(l.reported, ["signaling/source-cid-in-use -> channel-refused 0x000a"])
    }

    func testUnacceptableParametersAreRefused() {
        let l = LinkHarness(role: .peripheral)
        _ = serving(l)
        l.receive(cid: sig, "14 01 0a 00 | 80 00 | 40 00 | 16 00 | 17 00 | 01 00")   // MTU 22
        l.expectSent(cid: sig, "15 01 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 0b 00")
        l.receive(cid: sig, "14 02 0a 00 | 80 00 | 40 00 | 17 00 | fe ff | 01 00")   // MPS 65534
        l.expectSent(cid: sig, "15 02 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 0b 00")
        XCTAssertEqual(l.reported.count, 2)
    }

    func testServersOwnRefusalGoesOutAsGiven() {
        let l = LinkHarness(role: .peripheral)
        l.link.creditBasedServer = { _ in .refuse(.insufficientEncryption) }
        l.receive(cid: sig, "14 01 0a 00 | 80 00 | 40 00 | 17 00 | 17 00 | 01 00")
        l.expectSent(cid: sig, "15 01 0a 00 | 00 00 | 00 00 | 00 00 | 00 00 | 08 00")
    }

    func testMalformedRequestIsRejectedAsNotUnderstood() {
        let l = LinkHarness(role: .peripheral)
        _ = serving(l)
        l.receive(cid: sig, "14 07 08 00 | 80 00 | 40 00 | 17 00 | 17 00")           // Initial Credits missing
        l.expectSent(cid: sig, "01 07 02 00 | 00 00")
        XCTAssertEqual(l.reported, ["signaling/malformed-command -> command-reject 0x0000"])
    }

    // MARK: Sending: K-frames of at most the peer's MPS, one credit each (3.4.3, 10.1)

    func testSDUIsSegmentedIntoKFramesOfThePeersMPS() throws {
        let l = LinkHarness(role: .central)
        let channel = try XCTUnwrap(openedChannel(l, peerCredits: 3))
        let sdu = (0..<50).map { UInt8($0) }
        try channel.send(sdu)
        // First K-frame: SDU Length 50, then 21 octets (23 with the SDU Length: the peer's MPS).
        l.expectSent(cid: 0x0041, "32 00 | " + sdu[0..<21].spacedHex)
        l.expectSent(cid: 0x0041, sdu[21..<44].spacedHex)                   // 23 octets
        l.expectSent(cid: 0x0041, sdu[44..<50].spacedHex)                   // the last 6
        XCTAssertEqual(channel.sendCredits, 0)
        XCTAssertEqual(channel.sentKFrames, 3)
        XCTAssertEqual(channel.sentSDUs, 1)
    }

    func testSendingStopsWithoutCreditsAndResumesWithThem() throws {
        let l = LinkHarness(role: .central)
        let channel = try XCTUnwrap(openedChannel(l, peerCredits: 1))
        try channel.send(Array(repeating: 0xaa, count: 30))
        l.expectSent(cid: 0x0041, "1e 00 | " + Array(repeating: UInt8(0xaa), count: 21).spacedHex)
        l.controller.expectNothingSent()
        XCTAssertEqual(channel.unsentOctets, 9)
        // LE Flow Control Credit, Identifier 9 | CID 0x0041 (the peer's end) | Credits 5
        l.receive(cid: sig, "16 09 04 00 | 41 00 | 05 00")
        l.expectSent(cid: 0x0041, Array(repeating: UInt8(0xaa), count: 9).spacedHex)
        XCTAssertEqual(channel.sendCredits, 4)
        XCTAssertEqual(channel.unsentOctets, 0)
    }

    func testEmptySDUIsOneKFrameWithItsLength() throws {
        let l = LinkHarness(role: .central)
        let channel = try XCTUnwrap(openedChannel(l))
        try channel.send([])
        l.expectSent(cid: 0x0041, "00 00")
    }

    func testSDULongerThanThePeersMTUIsRefused() throws {
        let l = LinkHarness(role: .central)
        let channel = try XCTUnwrap(openedChannel(l))
        XCTAssertThrowsError(try channel.send(Array(repeating: 0, count: 61))) {
            XCTAssertEqual($0 as? L2CAPChannelError, .sduTooLong(61, mtu: 60))
        }
        l.controller.expectNothingSent()
    }

    // MARK: Receiving: reassembly and credits back (3.4.3, 4.24)

    func testSDUIsReassembledAndCreditsGoBackAtHalfTheWindow() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        let channel = try XCTUnwrap(openedChannel(l, sink: sink))
        // SDU Length 40, 28 octets (30 with the Length: our MPS), then 12.
        let sdu = (0..<40).map { UInt8(0x80 + $0) }
        l.receive(cid: 0x0040, "28 00 | " + sdu[0..<28].spacedHex)
        XCTAssertEqual(sink.sdus, [])
        XCTAssertEqual(channel.peerCredits, 3)
        l.controller.expectNothingSent()                                        // 1 of 4 missing: not yet
        l.receive(cid: 0x0040, sdu[28..<40].spacedHex)
        XCTAssertEqual(sink.sdus, [sdu])
        // 2 of 4 missing: LE Flow Control Credit, Identifier 2 | CID 0x0040 (our end) | Credits 2
        l.expectSent(cid: sig, "16 02 04 00 | 40 00 | 02 00")
        XCTAssertEqual(channel.peerCredits, 4)
        XCTAssertEqual(channel.receivedSDUs, 1)
    }

    func testHeldSDUsReturnTheirCreditsOnlyWhenReleased() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        let channel = try XCTUnwrap(openedChannel(l, sink: sink))
        channel.releasesOnDelivery = false
        l.receive(cid: 0x0040, "02 00 | 01 02")
        l.receive(cid: 0x0040, "02 00 | 03 04")
        XCTAssertEqual(sink.sdus, [[1, 2], [3, 4]])
        l.controller.expectNothingSent()
        channel.releaseDelivered(1)
        l.controller.expectNothingSent()                                        // 1 missing of 4
        channel.releaseDelivered(1)
        l.expectSent(cid: sig, "16 02 04 00 | 40 00 | 02 00")
    }

    // MARK: A peer that breaks the rules: the channel is disconnected (3.4.3, 4.24, 10.1)

    private func assertDisconnected(_ l: LinkHarness, _ sink: Sink, kind: ProtocolViolation.Kind, layer: String,
                                    file: StaticString = #filePath, line: UInt = #line) {
        // Disconnection Request, Identifier 2 | Destination CID 0x0041 (the peer's) | Source CID 0x0040 (ours)
        l.expectSent(cid: sig, "06 02 04 00 | 41 00 | 40 00", file: file, line: line)
        XCTAssertEqual(l.reported, ["\(layer)/\(kind) -> channel-disconnected 0x0040"], file: file, line: line)
        XCTAssertEqual(sink.closes, [], "closed once the peer answers", file: file, line: line)
        l.receive(cid: sig, "07 02 04 00 | 41 00 | 40 00")
        XCTAssertEqual(sink.closes, [.violation(kind)], file: file, line: line)
        XCTAssertNil(l.link.channels[0x0040], file: file, line: line)
    }

    func testCreditOverflowDisconnectsTheChannel() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        let channel = try XCTUnwrap(openedChannel(l, peerCredits: 2, sink: sink))
        l.receive(cid: sig, "16 09 04 00 | 41 00 | fd ff")                       // 2 + 65533 = 65535: allowed
        XCTAssertEqual(channel.sendCredits, 65535)
        l.receive(cid: sig, "16 0a 04 00 | 41 00 | 01 00")                       // 65536: too many
        assertDisconnected(l, sink, kind: .creditOverflow, layer: "signaling")
    }

    func testSDULengthOverOurMTUDisconnects() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        _ = try XCTUnwrap(openedChannel(l, sink: sink))
        l.receive(cid: 0x0040, "65 00 | 01 02 03")                              // SDU Length 101 > MTU 100
        assertDisconnected(l, sink, kind: .sduExceedsMTU, layer: "l2cap")
        XCTAssertEqual(sink.sdus, [])
    }

    func testKFrameOverOurMPSDisconnects() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        _ = try XCTUnwrap(openedChannel(l, sink: sink))
        l.receive(cid: 0x0040, "1d 00 | " + Array(repeating: UInt8(7), count: 29).spacedHex)   // 31 octets > MPS 30
        assertDisconnected(l, sink, kind: .kFrameExceedsMPS, layer: "l2cap")
    }

    func testKFrameWithoutACreditDisconnects() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        let channel = try XCTUnwrap(openedChannel(l, sink: sink))
        channel.releasesOnDelivery = false                                      // so no credits go back
        for _ in 0..<4 { l.receive(cid: 0x0040, "01 00 | 55") }
        XCTAssertEqual(sink.sdus.count, 4)
        XCTAssertEqual(channel.peerCredits, 0)
        l.receive(cid: 0x0040, "01 00 | 55")                                    // a fifth, with none left
        assertDisconnected(l, sink, kind: .kFrameWithoutCredit, layer: "l2cap")
        XCTAssertEqual(sink.sdus.count, 4)
    }

    func testKFramesBeyondTheSDULengthDisconnect() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        _ = try XCTUnwrap(openedChannel(l, sink: sink))
        l.receive(cid: 0x0040, "04 00 | 01 02 03 04 05")                        // 5 octets of an SDU of 4
        assertDisconnected(l, sink, kind: .sduLengthMismatch, layer: "l2cap")
    }

    func testFirstKFrameWithoutItsSDULengthDisconnects() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        _ = try XCTUnwrap(openedChannel(l, sink: sink))
        l.receive(cid: 0x0040, "07")
        assertDisconnected(l, sink, kind: .sduLengthMismatch, layer: "l2cap")
    }

    func testCreditsForAnUnknownChannelAreReportedAndDropped() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "16 09 04 00 | 41 00 | 05 00")
        l.controller.expectNothingSent()
        XCTAssertEqual(l.reported, ["signaling/unknown-channel -> none"])
    }

    // MARK: Disconnection (4.6, 4.7)

    func testLocalDisconnectWaitsForTheResponseAndDiscardsDataMeanwhile() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        let channel = try XCTUnwrap(openedChannel(l, sink: sink))
        channel.disconnect()
        l.expectSent(cid: sig, "06 02 04 00 | 41 00 | 40 00")
        XCTAssertEqual(channel.state, .disconnecting)
        XCTAssertThrowsError(try channel.send([1]))
        l.receive(cid: 0x0040, "01 00 | 99")                                    // 4.6: discarded
        XCTAssertEqual(sink.sdus, [])
        l.receive(cid: sig, "07 02 04 00 | 41 00 | 40 00")
        XCTAssertEqual(sink.closes, [.local])
        XCTAssertEqual(channel.state, .closed(.local))
        XCTAssertNil(l.link.channels[0x0040])
        XCTAssertEqual(l.reported, [])
    }

    func testLocalDisconnectWithoutAnswerClosesAtTheRTX() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        let channel = try XCTUnwrap(openedChannel(l, sink: sink))
        channel.disconnect()
        l.loop.advance(by: .seconds(30))
        XCTAssertEqual(sink.closes, [.local])
    }

    func testPeerDisconnectIsAnsweredWithTheSameCIDs() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        _ = try XCTUnwrap(openedChannel(l, sink: sink))
        // Disconnection Request, Identifier 0x30 | Destination CID 0x0040 (ours) | Source CID 0x0041
        l.receive(cid: sig, "06 30 04 00 | 40 00 | 41 00")
        l.expectSent(cid: sig, "07 30 04 00 | 40 00 | 41 00")
        XCTAssertEqual(sink.closes, [.peer])
        XCTAssertNil(l.link.channels[0x0040])
        // The CID is free again.
        l.link.openCreditBasedChannel(psm: 0x0080) { _ in }
        l.expectSent(cid: sig, "14 02 0a 00 | 80 00 | 40 00 | 00 08 | f7 00 | 10 00")
    }

    func testDisconnectRequestFromTheWrongSourceCIDIsDiscarded() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        _ = try XCTUnwrap(openedChannel(l, sink: sink))
        l.receive(cid: sig, "06 30 04 00 | 40 00 | 42 00")
        l.controller.expectNothingSent()
        XCTAssertEqual(sink.closes, [])
        XCTAssertEqual(l.reported, ["signaling/unknown-channel -> none"])
    }

    func testDisconnectRequestForNoChannelIsRejectedWithInvalidCID() {
        let l = LinkHarness(role: .central)
        l.receive(cid: sig, "06 30 04 00 | 40 00 | 41 00")
        l.expectSent(cid: sig, "01 30 06 00 | 02 00 | 40 00 41 00")
    }

    func testLinkCloseClosesChannelsAndFailsPendingOpens() throws {
        let l = LinkHarness(role: .central)
        let sink = Sink()
        _ = try XCTUnwrap(openedChannel(l, sink: sink))
        var pending: Result<L2CAPCreditBasedChannel, L2CAPChannelError>?
        l.link.openCreditBasedChannel(psm: 0x0090) { pending = $0 }
        l.link.close(reason: .remoteUserTerminatedConnection)
        XCTAssertEqual(sink.closes, [.linkClosed(.remoteUserTerminatedConnection)])
        guard case .failure(.linkClosed(.remoteUserTerminatedConnection))? = pending else { return XCTFail("\(String(describing: pending))") }
    }

    func testKFramesOnAChannelThatIsNotOpenAreUnknownChannel() {
        let l = LinkHarness(role: .central)
        l.receive(cid: 0x0040, "01 00 | 99")
        XCTAssertEqual(l.reported, ["l2cap/unknown-channel -> none"])
    }
}

extension CreditBasedChannelTests {
    func testIdentifiersOfPendingRequestsAreNotReusedAfterWrapping() throws {
        let l = LinkHarness(role: .central)
        l.h.driver.setLEBuffers(packetLength: 27, count: 1000)         // no Number Of Completed Packets needed
        let channel = try XCTUnwrap(openedChannel(l, peerCredits: 1))   // identifier 1 used
        l.link.openCreditBasedChannel(psm: 0x0081) { _ in }            // identifier 2, pending
        l.expectSent(cid: sig, "14 02 0a 00 | 81 00 | 41 00 | 00 08 | f7 00 | 10 00")
        // 254 credit indications (one per 2 K-frames received): identifiers 3–255, then 1;
        // the next skips 2, still pending.
        for _ in 0..<508 { l.receive(cid: 0x0040, "01 00 | 00") }
        XCTAssertEqual(channel.creditIndicationsSent, 254)
        let ids = l.controller.takeSent().compactMap { frame -> UInt8? in
            frame.count > 10 && frame[7] == 0x05 && frame[9] == 0x16 ? frame[10] : nil
        }
        XCTAssertEqual(ids.count, 254)
        XCTAssertEqual(Array(ids.suffix(2)), [0xff, 0x01])
        channel.disconnect()
        l.expectSent(cid: sig, "06 03 04 00 | 41 00 | 40 00")          // 2 skipped
    }

    func testZeroInitialCreditsAreNotOffered() {
        XCTAssertFalse(L2CAPChannelParameters(mtu: 23, mps: 23, initialCredits: 0).areValid)
        XCTAssertTrue(L2CAPChannelParameters(mtu: 23, mps: 23, initialCredits: 1).areValid)
    }
}

import XCTest
import BLEWire
import BLERuntime
@testable import ATT

/// The bearer against Core 5.4 Vol 3 Part F, byte for byte: request sequencing (3.3.2), Exchange
/// MTU (3.4.2), Error Responses to invalid PDUs (3.4.1.1), opcodes it does not know (3.3, 3.4.8)
/// and Signed Write Commands (3.4.5.4).
final class ATTBearerConformanceTests: XCTestCase {
    /// Runs what is due now (the server role answers in a later turn of the loop).
    private func settle(_ h: BearerHarness) { h.loop.run(until: h.loop.now) }

    /// Answers every Read Request at once with the handle's low octet, like a database would.
    final class EchoServer: ATTServerDelegate {
        var requests: [ATTPDU] = []
        func attBearer(_ bearer: ATTBearer, didReceiveRequest request: ATTPDU, responder: ATTResponder) {
            requests.append(request)
            if case let .readRequest(r) = request { responder.respond(.readResponse(ATTReadResponse(value: [UInt8(r.handle & 0xFF)]))) }
        }
        func attBearer(_ bearer: ATTBearer, didReceiveCommand command: ATTPDU) {}
    }

    // MARK: Part F 3.3.2: one request at a time

    /// Two Read Requests back to back, the second before the first was answered: the client broke
    /// 3.3.2. Real servers drop the bearer (BlueZ shuts the ATT channel down); so does this one,
    /// and the second request is never answered.
    func testPipelinedRequestDropsTheBearerWhateverTheServerIsDoing() {
        let h = BearerHarness()
        let server = RecordingServer()
        h.bearer.server = server
        h.peer("0a 03 00")
        settle(h)                 // handed to the app, which answers later
        h.peer("0a 05 00")        // the client did not wait
        XCTAssertEqual(h.bearer.state, .failed)
        XCTAssertEqual(h.bearer.counters.protocolViolations, 1)
        server.requests.first?.1.respond(.readResponse(ATTReadResponse(value: [0x41])))
        h.loop.advance(by: .seconds(1))
        XCTAssertEqual(h.sent, [], "a dropped bearer answers nothing, not even the first request")
        XCTAssertEqual(server.requests.count, 1)
    }

    /// A server that answers from memory does so in a later turn of its loop, as real servers do:
    /// two requests arriving together still find the first one pending.
    func testRequestsArrivingTogetherArePipelinedEvenForAnImmediateServer() {
        let h = BearerHarness()
        let server = EchoServer()
        h.bearer.server = server
        h.deliver("0a 03 00")
        h.deliver("0a 05 00")
        settle(h)
        XCTAssertEqual(h.sent, [])
        XCTAssertEqual(server.requests.count, 0)
        XCTAssertEqual(h.bearer.state, .failed)
    }

    /// A client that waits for each response is served; nothing is flagged.
    func testSequentialRequestsAreAnswered() {
        let h = BearerHarness()
        let server = EchoServer()
        h.bearer.server = server
        h.peer("0a 03 00")
        settle(h)
        h.peer("0a 05 00")
        settle(h)
        XCTAssertEqual(h.sentHex, ["0b 03", "0b 05"])
        XCTAssertEqual(h.bearer.state, .open)
        XCTAssertEqual(h.bearer.counters.protocolViolations, 0)
    }

    /// Commands may be sent at any time (3.3): a Write Command right behind a request is no
    /// violation, and it reaches the server after that request, in arrival order.
    func testCommandBehindARequestIsNoViolationAndKeepsItsOrder() {
        let h = BearerHarness()
        let server = RecordingServer()
        h.bearer.server = server
        h.peer("12 10 00 01")     // Write Request
        h.peer("52 10 00 02")     // Write Command to the same handle
        settle(h)
        XCTAssertEqual(server.requests.map(\.0.opcode), [.writeRequest])
        XCTAssertEqual(server.commands.map(\.opcode), [.writeCommand])
        XCTAssertEqual(h.bearer.state, .open)
        XCTAssertEqual(h.bearer.counters.protocolViolations, 0)
    }

    // MARK: Part F 3.4.2: Exchange MTU, once per connection

    /// A repeated Exchange MTU Request is answered as BlueZ, Bumble and Zephyr answer it (with
    /// this side's Server Rx MTU), but ATT_MTU stays what the first exchange made it: it never
    /// shrinks mid-connection.
    func testRepeatedExchangeMTUIsAnsweredButATTMTUNeverShrinks() {
        let h = BearerHarness()
        h.peer("02 f7 00")        // Client Rx MTU 247
        settle(h)
        XCTAssertEqual(h.bearer.mtu, 247)
        h.peer("02 40 00")        // again, Client Rx MTU 64
        settle(h)
        XCTAssertEqual(h.sentHex, ["03 05 02", "03 05 02"])
        XCTAssertEqual(h.bearer.mtu, 247)
        h.peer("02 00 02")        // and again, larger: 512
        settle(h)
        XCTAssertEqual(h.bearer.mtu, 247, "ATT_MTU is set once per connection")
        XCTAssertEqual(h.bearer.counters.protocolViolations, 2)
        XCTAssertEqual(h.bearer.state, .open)
    }

    /// The client role sends Exchange MTU once: a second call puts nothing on the link and fails.
    func testClientSendsExchangeMTUOnlyOnce() {
        let h = BearerHarness()
        h.bearer.preferredMTU = 247
        var first: Result<Int, ATTError>?
        h.bearer.exchangeMTU { first = $0 }
        h.peer("03 f7 00")
        XCTAssertEqual(first, .success(247))
        var second: Result<Int, ATTError>?
        h.bearer.preferredMTU = 100
        h.bearer.exchangeMTU { second = $0 }
        XCTAssertEqual(h.sentHex, ["02 f7 00"])
        if case .success? = second { XCTFail("a second Exchange MTU succeeded: \(String(describing: second))") }
        XCTAssertNotNil(second)
        XCTAssertEqual(h.bearer.mtu, 247)
    }

    /// Exchanging in both directions is allowed (3.4.2.2), but the peer's request may not lower
    /// the ATT_MTU our own exchange set.
    func testExchangeInTheOtherDirectionCannotShrinkATTMTU() {
        let h = BearerHarness()
        h.bearer.preferredMTU = 247
        h.bearer.exchangeMTU { _ in }
        h.peer("03 f7 00")
        XCTAssertEqual(h.bearer.mtu, 247)
        h.peer("02 64 00")        // the peer's client offers 100
        settle(h)
        XCTAssertEqual(h.sentHex, ["02 f7 00", "03 f7 00"])
        XCTAssertEqual(h.bearer.mtu, 247)
        XCTAssertEqual(h.bearer.counters.protocolViolations, 1)
    }

    // MARK: Part F 3.4.1.1: the handle in error is the request's

    /// Invalid PDU names the handle the request carried; 0x0000 only when it carried none.
    func testInvalidPDUNamesTheHandleTheRequestCarried() {
        let cases: [(String, String)] = [
            ("0a 03 00 ff", "01 0a 03 00 04"),                  // Read Request, one octet too many
            ("0c 07 00 01", "01 0c 07 00 04"),                  // Read Blob Request, half an offset
            ("04 01 00 ff", "01 04 01 00 04"),                  // Find Information, half an end handle
            ("08 01 00 ff ff 03 28 00", "01 08 01 00 04"),      // Read By Type, a 3-octet UUID
            ("10 05 00 ff ff 00", "01 10 05 00 04"),            // Read By Group Type, a 1-octet UUID
            ("0e 09 00", "01 0e 09 00 04"),                     // Read Multiple with one handle
            ("16 12 00 01", "01 16 12 00 04"),                  // Prepare Write, half an offset
            ("06 01 00 ff", "01 06 01 00 04"),                  // Find By Type Value, half an end handle
            ("0a 10", "01 0a 00 00 04"),                        // half a handle: none to name
            ("02 17", "01 02 00 00 04"),                        // Exchange MTU has no handle
            ("18 07", "01 18 00 00 04"),                        // Execute Write has no handle
        ]
        for (request, answer) in cases {
            let h = BearerHarness()
            let server = RecordingServer()
            h.bearer.server = server
            h.peer(request)
            settle(h)
            XCTAssertEqual(h.sentHex, [answer], request)
            XCTAssertTrue(server.requests.isEmpty, request)
        }
    }

    // MARK: Part F 3.2.2 and 3.4.3.1: handles no attribute can have

    /// Handle 0x0000 is reserved (3.2.2) and a range may not start at 0x0000 or after its end
    /// (3.4.3.1 and the other range requests): the client broke the protocol whatever the server
    /// holds. Each request is answered Invalid Handle naming the handle (a range: its Starting
    /// Handle) without reaching the server, and reported as `invalid-handle`; a Write Command to
    /// handle 0x0000 is ignored and reported.
    func testHandleZeroAndBackwardsRangesAreAnsweredInvalidHandleAndReported() {
        let cases: [(request: String, answer: String?, violation: ATTProtocolViolation)] = [
            ("0a 00 00", "01 0a 00 00 01", .invalidHandle(.readRequest, start: 0, end: nil)),
            ("0c 00 00 04 00", "01 0c 00 00 01", .invalidHandle(.readBlobRequest, start: 0, end: nil)),
            ("0e 03 00 00 00", "01 0e 00 00 01", .invalidHandle(.readMultipleRequest, start: 0, end: nil)),
            ("12 00 00 41", "01 12 00 00 01", .invalidHandle(.writeRequest, start: 0, end: nil)),
            ("16 00 00 00 00 41", "01 16 00 00 01", .invalidHandle(.prepareWriteRequest, start: 0, end: nil)),
            ("04 00 00 ff ff", "01 04 00 00 01", .invalidHandle(.findInformationRequest, start: 0, end: 0xFFFF)),
            ("04 05 00 01 00", "01 04 05 00 01", .invalidHandle(.findInformationRequest, start: 5, end: 1)),
            ("06 09 00 08 00 00 28 0f 18", "01 06 09 00 01", .invalidHandle(.findByTypeValueRequest, start: 9, end: 8)),
            ("08 00 00 ff ff 00 2a", "01 08 00 00 01", .invalidHandle(.readByTypeRequest, start: 0, end: 0xFFFF)),
            ("10 ff ff 01 00 00 28", "01 10 ff ff 01", .invalidHandle(.readByGroupTypeRequest, start: 0xFFFF, end: 1)),
            ("52 00 00 41", nil, .invalidHandle(.writeCommand, start: 0, end: nil)),
        ]
        for c in cases {
            let h = BearerHarness()
            let server = RecordingServer()
            h.bearer.server = server
            var events: [ATTViolationEvent] = []
            h.bearer.observeViolations { events.append($0) }
            h.peer(c.request)
            settle(h)
            XCTAssertEqual(h.sentHex, c.answer.map { [$0] } ?? [], c.request)
            XCTAssertTrue(server.requests.isEmpty && server.commands.isEmpty, c.request)
            XCTAssertEqual(events.map(\.violation), [c.violation], c.request)
            XCTAssertEqual(events.first?.violation.name, "invalid-handle", c.request)
            XCTAssertEqual(events.first?.consequence, c.answer == nil ? .dropped : .errorResponse, c.request)
            XCTAssertEqual(events.first?.pdu.spacedHex, c.request, c.request)
            XCTAssertEqual(h.bearer.state, .open, c.request)
        }
    }

    /// Part F 3.2.8: ATT_MTU bounds every PDU. A request one octet longer than ATT_MTU (23 before
    /// an exchange) is answered Invalid PDU naming the handle it carried (3.4.1.1), a longer
    /// command is ignored; neither reaches the server, both are reported as `exceeds-mtu`. Found
    /// by the gatt-server fuzzer (docs/fuzzing.md): the server used to take the request and
    /// answer it.
    func testRequestsAndCommandsLongerThanATTMTUAreRefusedAndReported() {
        let value = String(repeating: " 41", count: 21)   // 3 + 21 = 24 octets: one over ATT_MTU 23
        let cases: [(request: String, answer: String?, opcode: ATTOpcode)] = [
            ("12 03 00" + value, "01 12 03 00 04", .writeRequest),
            ("16 03 00 00 00" + String(repeating: " 41", count: 19), "01 16 03 00 04", .prepareWriteRequest),
            ("0e 01 00 02 00 03 00 04 00 05 00 06 00 07 00 08 00 09 00 0a 00 0b 00 0c", "01 0e 01 00 04", .readMultipleRequest),
            ("52 03 00" + value, nil, .writeCommand),
        ]
        for c in cases {
            let h = BearerHarness()
            let server = RecordingServer()
            h.bearer.server = server
            var events: [ATTViolationEvent] = []
            h.bearer.observeViolations { events.append($0) }
            h.peer(c.request)
            settle(h)
            XCTAssertEqual(h.sentHex, c.answer.map { [$0] } ?? [], c.request)
            XCTAssertTrue(server.requests.isEmpty && server.commands.isEmpty, c.request)
            XCTAssertEqual(events.map(\.violation), [.exceedsMTU(c.opcode, length: 24, mtu: 23)], c.request)
            XCTAssertEqual(events.first?.violation.name, "exceeds-mtu", c.request)
            XCTAssertEqual(events.first?.consequence, c.answer == nil ? .dropped : .errorResponse, c.request)
            XCTAssertEqual(h.bearer.state, .open, c.request)
        }
        // At ATT_MTU exactly, the request is the server's.
        let h = BearerHarness()
        let server = RecordingServer()
        h.bearer.server = server
        h.peer("12 03 00" + String(repeating: " 41", count: 20))
        settle(h)
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertEqual(h.bearer.counters.protocolViolations, 0)
    }

    /// A handle range of one handle (start == end) and a valid handle naming no attribute are no
    /// violation: a client may hold handles from before the database changed.
    func testAOneHandleRangeAndAMissingHandleAreNoViolation() {
        for request in ["04 07 00 07 00", "08 ff ff ff ff 00 2a", "0a 99 00", "0e 05 00 ff ff"] {
            let h = BearerHarness()
            let server = RecordingServer()
            h.bearer.server = server
            h.peer(request)
            settle(h)
            XCTAssertEqual(server.requests.map(\.0.encoded.spacedHex), [request])
            XCTAssertEqual(h.bearer.counters.protocolViolations, 0, request)
        }
    }

    // MARK: Part F 3.3 and 3.4.8: opcodes it does not know

    /// An opcode Core 5.4 does not define is a violation: as a request it gets Request Not
    /// Supported (handle 0x0000), as a command it is ignored. One the specification defines but
    /// BLELab does not implement (Read Multiple Variable) is answered the same way without one.
    func testUnknownOpcodesAreAnsweredOrIgnoredAndReported() {
        let h = BearerHarness()
        let server = RecordingServer()
        h.bearer.server = server
        h.peer("3f 01 02")        // undefined, Command Flag clear: a request
        settle(h)
        h.peer("7f 01 02")        // undefined, Command Flag set: a command
        settle(h)
        h.peer("20 03 00 05 00")  // Read Multiple Variable Request: defined, not implemented
        settle(h)
        XCTAssertEqual(h.sentHex, ["01 3f 00 00 06", "01 20 00 00 06"])
        XCTAssertEqual(h.bearer.counters.protocolViolations, 2)
        XCTAssertEqual(h.bearer.counters.ignoredCommands, 1)
    }

    // MARK: Part F 3.4.5.4: Signed Write Command

    /// Without pairing there is no CSRK to verify a signature with, so the server ignores the
    /// command, as the specification says, but never silently: it is counted and reported.
    func testSignedWriteCommandIsIgnoredButReported() {
        let h = BearerHarness()
        let server = RecordingServer()
        h.bearer.server = server
        h.peer("d2 12 00 aa 01 02 03 04 05 06 07 08 09 0a 0b 0c")
        settle(h)
        XCTAssertEqual(h.sent, [])
        XCTAssertEqual(server.commands.count, 0)
        XCTAssertEqual(h.bearer.counters.ignoredCommands, 1)
        XCTAssertEqual(h.bearer.counters.protocolViolations, 1)
    }
}

@testable import ATT
import BLERuntime
import BLEWire
import WireTestSupport
import XCTest

/// A bearer whose peer is the test: what the bearer sends is captured, what the peer says is fed in.
final class BearerHarness {
    let loop = VirtualEventLoop()
    var sent: [[UInt8]] = []
    lazy var bearer = ATTBearer(loop: loop, transactionTimeout: .seconds(30)) { [unowned self] in self.sent.append($0) }
    var failures: [ATTError] = []

    init() {
        bearer.onFailure = { [unowned self] in self.failures.append($0) }
    }

    /// The peer sends `hex`; the bearer then runs what is due now (its server role answers in a
    /// later turn of the loop), as a peer that waits for each answer sees it.
    func peer(_ hex: String) {
        bearer.receive(bytes(hex))
        loop.run(until: loop.now)
    }

    /// The peer sends `hex` with nothing run in between: PDUs arriving together.
    func deliver(_ hex: String) { bearer.receive(bytes(hex)) }
    var sentHex: [String] { sent.map(\.spacedHex) }
}

/// A server delegate that keeps responders so tests answer when they like.
final class RecordingServer: ATTServerDelegate {
    var requests: [(ATTPDU, ATTResponder)] = []
    var commands: [ATTPDU] = []
    var closed: [ATTError] = []
    func attBearer(_ bearer: ATTBearer, didReceiveRequest request: ATTPDU, responder: ATTResponder) {
        requests.append((request, responder))
    }
    func attBearer(_ bearer: ATTBearer, didReceiveCommand command: ATTPDU) { commands.append(command) }
    func attBearerDidClose(_ bearer: ATTBearer, error: ATTError) { closed.append(error) }
}

final class RecordingClient: ATTClientDelegate {
    var events: [String] = []
    var sentCountAtIndication: Int?
    var harness: BearerHarness?
    func attBearer(_ bearer: ATTBearer, didReceiveNotification handle: UInt16, value: [UInt8]) {
        events.append("N \(hex(handle)) \(value.spacedHex)")
    }
    func attBearer(_ bearer: ATTBearer, didReceiveIndication handle: UInt16, value: [UInt8]) {
        events.append("I \(hex(handle)) \(value.spacedHex)")
        sentCountAtIndication = harness?.sent.count
    }
    func attBearerDidClose(_ bearer: ATTBearer, error: ATTError) { events.append("closed \(error)") }
    private func hex(_ h: UInt16) -> String { [UInt8(h & 0xFF), UInt8(h >> 8)].spacedHex }
}

final class ATTBearerTests: XCTestCase {
    // MARK: Client role

    func testOnlyOneRequestOutstandingOthersWaitInOrder() {
        let h = BearerHarness()
        var results: [String] = []
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { results.append("A \($0)") }
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0005))) { results.append("B \($0)") }
        h.bearer.send(request: .writeRequest(ATTWriteRequest(handle: 0x0007, value: [1]))) { results.append("C \($0)") }
        // Only the first request's octets are on the wire.
        XCTAssertEqual(h.sentHex, ["0a 03 00"])
        XCTAssertEqual(h.bearer.queuedRequestCount, 2)
        h.peer("0b 41")  // Read Response "A"
        XCTAssertEqual(h.sentHex, ["0a 03 00", "0a 05 00"])
        XCTAssertEqual(results.count, 1)
        h.peer("0b 42")
        XCTAssertEqual(h.sentHex, ["0a 03 00", "0a 05 00", "12 07 00 01"])
        h.peer("13")
        XCTAssertEqual(results, [
            "A success(Read Response value 41)",
            "B success(Read Response value 42)",
            "C success(Write Response)",
        ])
        XCTAssertFalse(h.bearer.hasOutstandingRequest)
    }

    func testErrorResponseFailsTheMatchingRequestTyped() {
        let h = BearerHarness()
        var result: Result<ATTPDU, ATTError>?
        h.bearer.send(request: .writeRequest(ATTWriteRequest(handle: 0x0010, value: [1]))) { result = $0 }
        h.peer("01 12 10 00 03")  // Error Response: Write Request, 0x0010, Write Not Permitted
        XCTAssertEqual(result, .failure(.errorResponse(ATTErrorResponse(requestOpcode: .writeRequest, handle: 0x0010,
                                                                        error: .writeNotPermitted))))
        if case let .failure(error)? = result { XCTAssertEqual(error.errorCode, .writeNotPermitted) }
    }

    func testResponseOfTheWrongKindIsATypedProtocolError() {
        let h = BearerHarness()
        var results: [Result<ATTPDU, ATTError>] = []
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { results.append($0) }
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0004))) { results.append($0) }
        h.peer("13")              // a Write Response to a Read Request
        h.peer("01 12 04 00 01")  // an Error Response naming another request
        XCTAssertEqual(results, [
            .failure(.unexpectedResponse(request: .readRequest, received: .writeResponse)),
            .failure(.unexpectedResponse(request: .readRequest, received: .errorResponse)),
        ])
        XCTAssertEqual(h.bearer.state, .open)
    }

    func testMalformedResponseFailsTheRequestAndTheNextOneProceeds() {
        let h = BearerHarness()
        var violations: [ATTProtocolViolation] = []
        h.bearer.observeViolations { violations.append($0.violation) }
        var results: [Result<ATTPDU, ATTError>] = []
        h.bearer.send(request: .readByTypeRequest(ATTReadByTypeRequest(range: .all, attributeType: .characteristic))) { results.append($0) }
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { results.append($0) }
        h.peer("09 07 02 00 02")  // length 7 but only 3 octets of data
        guard case .failure(.malformedResponse(.readByTypeResponse, _))? = results.first else {
            return XCTFail("\(results)")
        }
        XCTAssertEqual(violations.count, 1)
        XCTAssertEqual(h.sent.last, [0x0A, 0x03, 0x00])
    }

    func testUnsolicitedResponseIsReportedAndDropped() {
        let h = BearerHarness()
        var violations: [ATTProtocolViolation] = []
        h.bearer.observeViolations { violations.append($0.violation) }
        h.peer("0b 01 02")
        h.peer("1e")
        h.peer("23 03 00 01 00 41")  // Multiple Handle Value Notification: not implemented, never answered
        XCTAssertEqual(violations, [.unsolicitedResponse(.readResponse), .unsolicitedConfirmation,
                                    .unsupported(.multipleHandleValueNotification)])
        XCTAssertEqual(h.sent, [])
        XCTAssertEqual(h.bearer.counters.protocolViolations, 3)
    }

    func testTransactionTimeoutFailsTheBearerAndEverythingQueued() {
        let h = BearerHarness()
        var errors: [ATTError] = []
        func record<T>(_ result: Result<T, ATTError>) {
            if case let .failure(error) = result { errors.append(error) } else { XCTFail("succeeded") }
        }
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { record($0) }
        h.bearer.send(request: .writeRequest(ATTWriteRequest(handle: 0x0005, value: [1]))) { record($0) }
        h.bearer.sendIndication(handle: 0x0009, value: [1]) { record($0) }
        h.bearer.sendIndication(handle: 0x0009, value: [2]) { record($0) }
        XCTAssertEqual(h.bearer.requestTimeRemaining, .seconds(30))
        h.loop.advance(by: .seconds(29))
        XCTAssertEqual(h.bearer.requestTimeRemaining, .seconds(1))
        XCTAssertEqual(h.bearer.state, .open)
        XCTAssertEqual(errors, [])
        h.loop.advance(by: .seconds(1))
        XCTAssertEqual(h.bearer.state, .failed)
        XCTAssertEqual(h.failures, [.timeout(.readRequest)])
        XCTAssertEqual(errors, [.timeout(.readRequest), .timeout(.writeRequest),
                                .timeout(.handleValueIndication), .timeout(.handleValueIndication)])
        // Nothing more is ever sent: not a late response's successor, not a reply, not a notification.
        let sentBefore = h.sent
        h.peer("0b 41")
        h.peer("0a 03 00")
        h.peer("1d 09 00 01")
        XCTAssertFalse(h.bearer.sendNotification(handle: 0x0009, value: [1]))
        XCTAssertFalse(h.bearer.send(command: .writeCommand(ATTWriteCommand(handle: 1, value: []))))
        var late: Result<ATTPDU, ATTError>?
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { late = $0 }
        XCTAssertEqual(late, .failure(.timeout(.readRequest)))
        h.loop.advance(by: .seconds(60))
        XCTAssertEqual(h.sent, sentBefore)
        XCTAssertEqual(h.failures.count, 1)
    }

    func testResponseInTimeCancelsTheTimer() {
        let h = BearerHarness()
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { _ in }
        h.loop.advance(by: .seconds(29))
        h.peer("0b")
        XCTAssertNil(h.bearer.requestTimeRemaining)
        h.loop.advance(by: .seconds(120))
        XCTAssertEqual(h.bearer.state, .open)
        XCTAssertEqual(h.failures, [])
    }

    func testCloseFailsPendingWithLinkLost() {
        let h = BearerHarness()
        let server = RecordingServer(), client = RecordingClient()
        h.bearer.server = server
        h.bearer.client = client
        var results: [Result<ATTPDU, ATTError>] = []
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { results.append($0) }
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0004))) { results.append($0) }
        var indication: Result<Void, ATTError>?
        h.bearer.sendIndication(handle: 0x0009, value: [1]) { indication = $0 }
        h.bearer.close(reason: 0x08)
        XCTAssertEqual(results, [.failure(.linkLost(reason: 0x08)), .failure(.linkLost(reason: 0x08))])
        guard case .failure(.linkLost(0x08))? = indication else { return XCTFail("\(String(describing: indication))") }
        XCTAssertEqual(server.closed, [.linkLost(reason: 0x08)])
        XCTAssertEqual(client.events, ["closed link lost (reason 0x08)"])
        XCTAssertEqual(h.bearer.state, .closed)
        XCTAssertEqual(h.failures, [], "closing is the owner's doing, not a failure")
    }

    func testOperationsAfterCloseFailWithTheCloseReason() {
        let h = BearerHarness()
        h.bearer.close(reason: 0x13)
        var result: Result<ATTPDU, ATTError>?
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { result = $0 }
        XCTAssertEqual(result, .failure(.linkLost(reason: 0x13)))
        XCTAssertEqual(h.bearer.closeReason, 0x13)
        XCTAssertFalse(h.bearer.sendNotification(handle: 0x0003, value: []))
        h.peer("0a 03 00")
        XCTAssertEqual(h.sent, [])
    }

    /// Over a transport that delivers synchronously (no loop in between), completions still come
    /// in request order.
    func testCompletionsKeepRequestOrderOverASynchronousTransport() {
        final class Ends { var a: ATTBearer?; var b: ATTBearer? }
        final class EchoServer: ATTServerDelegate {
            func attBearer(_ bearer: ATTBearer, didReceiveRequest request: ATTPDU, responder: ATTResponder) {
                if case let .readRequest(r) = request { responder.respond(.readResponse(ATTReadResponse(value: [UInt8(r.handle)]))) }
            }
            func attBearer(_ bearer: ATTBearer, didReceiveCommand command: ATTPDU) {}
        }
        let loop = VirtualEventLoop()
        let ends = Ends()
        let a = ATTBearer(loop: loop) { ends.b?.receive($0) }
        let b = ATTBearer(loop: loop) { ends.a?.receive($0) }
        ends.a = a
        ends.b = b
        let server = EchoServer()
        b.server = server
        var order: [String] = []
        for handle: UInt16 in 1...3 {
            a.send(request: .readRequest(ATTReadRequest(handle: handle))) { result in
                if case let .success(.readResponse(r)) = result { order.append("read \(r.value)") }
            }
        }
        loop.runUntilIdle()
        XCTAssertEqual(b.state, .open, "each request was sent after the previous answer")
        XCTAssertEqual(order, ["read [1]", "read [2]", "read [3]"])
        XCTAssertFalse(a.hasOutstandingRequest)
    }

    func testPDULargerThanMTUIsRefused() {
        let h = BearerHarness()
        var result: Result<ATTPDU, ATTError>?
        h.bearer.send(request: .writeRequest(ATTWriteRequest(handle: 0x0003, value: Array(repeating: 0, count: 21)))) { result = $0 }
        XCTAssertEqual(result, .failure(.exceedsMTU(size: 24, mtu: 23)))
        XCTAssertEqual(h.sent, [])
    }

    // MARK: MTU

    func testMTUExchangeBackToBack() {
        let loop = VirtualEventLoop()
        var central: ATTBearer?
        var peripheral: ATTBearer?
        central = ATTBearer(loop: loop, preferredMTU: 185) { pdu in loop.execute { peripheral?.receive(pdu) } }
        peripheral = ATTBearer(loop: loop) { pdu in loop.execute { central?.receive(pdu) } }
        var changes: [Int] = []
        peripheral?.onMTUChanged = { changes.append($0) }
        var result: Result<Int, ATTError>?
        central?.exchangeMTU { result = $0 }
        loop.runUntilIdle()
        XCTAssertEqual(result, .success(185))
        XCTAssertEqual(central?.mtu, 185)
        XCTAssertEqual(peripheral?.mtu, 185)
        XCTAssertEqual(changes, [185])
    }

    func testServerAnswersExchangeMTUWithItsRxMTUAndUsesTheMinimum() {
        let h = BearerHarness()
        h.peer("02 b9 00")  // Client Rx MTU 185
        XCTAssertEqual(h.sentHex, ["03 05 02"])  // Server Rx MTU 517
        XCTAssertEqual(h.bearer.mtu, 185)
        let small = BearerHarness()
        small.peer("02 10 00")  // 16 is below the minimum: ATT_MTU stays 23
        XCTAssertEqual(small.bearer.mtu, 23)
    }

    // MARK: Server role

    func testRequestsReachTheServerOneAtATimeAndAnswersGoOutWhenGiven() {
        let h = BearerHarness()
        let server = RecordingServer()
        h.bearer.server = server
        h.deliver("0a 03 00")
        XCTAssertEqual(server.requests.count, 0, "handed over in a later turn of the loop")
        XCTAssertTrue(h.bearer.isAnsweringRequest)
        h.loop.run(until: h.loop.now)
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertTrue(h.bearer.isAnsweringRequest)
        // The app answers 100 ms later.
        let first = server.requests[0].1
        h.loop.schedule(after: .milliseconds(100)) { first.respond(.readResponse(ATTReadResponse(value: [0x41]))) }
        h.loop.advance(by: .milliseconds(99))
        XCTAssertEqual(h.sent, [])
        h.loop.advance(by: .milliseconds(1))
        XCTAssertEqual(h.sentHex, ["0b 41"])
        XCTAssertFalse(h.bearer.isAnsweringRequest)
        first.respond(.readResponse(ATTReadResponse(value: [0x99])))  // a second answer is ignored
        h.peer("0a 05 00")  // the client waited: served
        XCTAssertEqual(server.requests.count, 2)
        server.requests[1].1.fail(.readNotPermitted, handle: 0x0005)
        XCTAssertEqual(h.sentHex, ["0b 41", "01 0a 05 00 02"])
    }

    func testUnknownRequestGetsRequestNotSupportedAndUnknownCommandsAreIgnored() {
        let h = BearerHarness()
        let server = RecordingServer()   // the bearer holds its server weakly
        h.bearer.server = server
        h.peer("20 03 00 05 00")  // Read Multiple Variable Request: not implemented
        h.peer("3f 01 02")        // an opcode from the future, Command Flag clear
        h.peer("7f 01 02")        // Command Flag set: ignored
        h.peer("d2 12 00 aa 01 02 03 04 05 06 07 08 09 0a 0b 0c")  // Signed Write Command: ignored
        XCTAssertEqual(h.sentHex, ["01 20 00 00 06", "01 3f 00 00 06"])
        XCTAssertEqual(h.bearer.counters.ignoredCommands, 2)
        XCTAssertEqual(h.bearer.state, .open)
        XCTAssertTrue(server.requests.isEmpty, "the bearer answered both itself; the server saw neither")
    }

    func testMalformedRequestGetsInvalidPDU() {
        let h = BearerHarness()
        let server = RecordingServer()
        h.bearer.server = server
        h.peer("0a 10")     // Read Request with half a handle
        h.peer("18 07")     // Execute Write Request with reserved flags
        h.peer("52 01")     // malformed Write Command: never answered
        h.peer("")          // nothing at all
        XCTAssertEqual(h.sentHex, ["01 0a 00 00 04", "01 18 00 00 04"])
        XCTAssertEqual(server.requests.count, 0)
        XCTAssertEqual(server.commands.count, 0)
    }

    func testWithoutAServerRequestsAreNotSupported() {
        let h = BearerHarness()
        h.peer("0a 03 00")
        XCTAssertEqual(h.sentHex, ["01 0a 00 00 06"])
    }

    func testCommandsReachTheServerUnanswered() {
        let h = BearerHarness()
        let server = RecordingServer()
        h.bearer.server = server
        h.peer("52 12 00 63 6d 64")
        XCTAssertEqual(server.commands, [.writeCommand(ATTWriteCommand(handle: 0x0012, value: Array("cmd".utf8)))])
        XCTAssertEqual(h.sent, [])
    }

    func testNotificationIsTruncatedToMTUMinus3() {
        let h = BearerHarness()
        XCTAssertTrue(h.bearer.sendNotification(handle: 0x0010, value: Array(0..<30)))
        XCTAssertEqual(h.sent, [[0x1B, 0x10, 0x00] + Array(0..<20)])
    }

    func testNotificationOfAnEmptyValueIsOpcodeAndHandleAlone() {
        let h = BearerHarness()
        XCTAssertTrue(h.bearer.sendNotification(handle: 0xABCD, value: []))
        XCTAssertEqual(h.sentHex, ["1b cd ab"])
        XCTAssertEqual(h.bearer.counters.notificationsSent, 1)
    }

    func testNotificationOfExactlyMTUMinus3OctetsGoesOutWhole() {
        let h = BearerHarness()
        XCTAssertTrue(h.bearer.sendNotification(handle: 0x0010, value: Array(100..<120)))
        XCTAssertTrue(h.bearer.sendNotification(handle: 0x0011, value: [0x00, 0x3C]))
        XCTAssertEqual(h.sent, [[0x1B, 0x10, 0x00] + Array(100..<120), [0x1B, 0x11, 0x00, 0x00, 0x3C]])
    }

    func testIndicationsGoOneAtATime() {
        let h = BearerHarness()
        var confirmed: [Int] = []
        for i in 1...3 {
            h.bearer.sendIndication(handle: 0x0009, value: [UInt8(i)]) { result in
                if case .success = result { confirmed.append(i) }
            }
        }
        XCTAssertEqual(h.sentHex, ["1d 09 00 01"])
        XCTAssertEqual(h.bearer.queuedIndicationCount, 2)
        h.peer("1e")
        XCTAssertEqual(h.sentHex, ["1d 09 00 01", "1d 09 00 02"])
        XCTAssertEqual(confirmed, [1])
        h.peer("1e")
        h.peer("1e")
        XCTAssertEqual(confirmed, [1, 2, 3])
        XCTAssertEqual(h.sent.count, 3)
        XCTAssertNil(h.bearer.indicationTimeRemaining)
    }

    func testIndicationTimeoutFailsTheBearer() {
        let h = BearerHarness()
        var result: Result<Void, ATTError>?
        h.bearer.sendIndication(handle: 0x0009, value: [1]) { result = $0 }
        h.loop.advance(by: .seconds(30))
        guard case .failure(.timeout(.handleValueIndication))? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertEqual(h.failures, [.timeout(.handleValueIndication)])
    }

    // MARK: Client delegate

    func testNotificationsAndIndicationsReachTheClientAndIndicationsAreConfirmedAfterDelivery() {
        let h = BearerHarness()
        let client = RecordingClient()
        client.harness = h
        h.bearer.client = client
        h.peer("1b 19 00 00 3c")
        h.peer("1d 1d 00 00 6e")
        h.peer("1b 19 00 00 3d")
        XCTAssertEqual(client.events, ["N 19 00 00 3c", "I 1d 00 00 6e", "N 19 00 00 3d"])
        XCTAssertEqual(client.sentCountAtIndication, 0, "confirmed only after delivery")
        XCTAssertEqual(h.sentHex, ["1e"])
        XCTAssertEqual(h.bearer.counters.notificationsReceived, 2)
    }

    func testObservationHooks() {
        let h = BearerHarness()
        var seen: [String] = []
        h.bearer.onPDUSent = { seen.append("tx " + ATTPDU.describe($0)) }
        h.bearer.onPDUReceived = { seen.append("rx " + ATTPDU.describe($0)) }
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { _ in }
        h.peer("0b 41")
        XCTAssertEqual(seen, ["tx Read Request handle 0x0003", "rx Read Response value 41"])
        XCTAssertEqual(h.bearer.counters.pdusSent, 1)
        XCTAssertEqual(h.bearer.counters.pdusReceived, 1)
    }
}

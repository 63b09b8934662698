import XCTest
import BLEWire
import BLERuntime
@testable import ATT

/// The server role's request interceptor (how the lab's flawed peripherals answer) and the client
/// role meeting what they send: the exact octets on the bearer, Core 5.4 Vol 3 Part F.
final class ATTInterceptionTests: XCTestCase {
    /// A harness whose server answers Read Requests with "ok" and everything else Request Not Supported.
    final class Served {
        let h = BearerHarness()
        let server = RecordingServer()
        var intercepted: [ATTInterceptedRequest] = []
        var take: (ATTInterceptedRequest) -> Bool = { _ in true }

        init() {
            h.bearer.server = server
            h.bearer.requestInterceptor = { [unowned self] request in
                self.intercepted.append(request)
                return self.take(request)
            }
        }

        /// The server delegate answers what reaches it: Read Request → Read Response "ok".
        func answerReads() {
            for (pdu, responder) in server.requests where responder.bearer != nil {
                if case .readRequest = pdu { responder.respond(.readResponse(ATTReadResponse(value: Array("ok".utf8)))) }
            }
            server.requests.removeAll()
        }
    }

    func testAnInterceptedRequestAnsweredWithAnyErrorGivesThatErrorResponse() {
        let s = Served()
        s.take = { request in
            request.responder.fail(.insufficientEncryption, handle: 0x0003)
            return true
        }
        s.h.peer("0a 03 00")                       // Read Request, handle 0x0003
        // Error Response: opcode 0x01, request 0x0A, handle 0x0003, code 0x0F (Part F, 3.4.1.1).
        XCTAssertEqual(s.h.sentHex, ["01 0a 03 00 0f"])
        XCTAssertTrue(s.server.requests.isEmpty, "the server never saw it")
        s.h.peer("10 01 00 ff ff 00 28")           // Read By Group Type «Primary Service»
        XCTAssertEqual(s.h.sentHex.last, "01 10 03 00 0f", "the bearer is free for the next request")
    }

    func testServedLaterTheAnswerWaitsAndTheNextRequestIsServedAfterIt() {
        let s = Served()
        s.h.peer("0a 03 00")
        XCTAssertEqual(s.intercepted.count, 1)
        XCTAssertEqual(s.h.sent, [])
        s.h.loop.advance(by: .seconds(8))
        XCTAssertTrue(s.intercepted[0].isPending)
        s.intercepted[0].serve()
        s.answerReads()
        XCTAssertEqual(s.h.sentHex, ["0b 6f 6b"])
        XCTAssertFalse(s.intercepted[0].isPending)
        s.h.peer("0a 05 00")                       // the client waited for the answer
        XCTAssertEqual(s.intercepted.count, 2)
        s.intercepted[0].serve()                   // a second answer to the same request is ignored
        s.answerReads()
        XCTAssertEqual(s.h.sentHex, ["0b 6f 6b"])
    }

    func testServeAlteringDamagesTheNormalAnswer() {
        let s = Served()
        s.take = { request in
            request.serve(altering: { Array($0.dropLast()) })
            return true
        }
        s.h.peer("0a 03 00")
        s.answerReads()
        XCTAssertEqual(s.h.sentHex, ["0b 6f"], "the Read Response without its last octet")
        s.take = { request in
            request.serve(altering: { octets in [0x0D] + octets.dropFirst() })
            return true
        }
        s.h.peer("0a 03 00")
        s.answerReads()
        XCTAssertEqual(s.h.sentHex.last, "0d 6f 6b", "a Read Blob Response opcode over the Read Response's value")
    }

    func testExchangeMTUCanBeInterceptedAndServedLate() {
        let s = Served()
        s.h.peer("02 f7 00")                       // Exchange MTU Request, client Rx MTU 247
        XCTAssertEqual(s.h.sent, [])
        XCTAssertEqual(s.h.bearer.mtu, 23)
        s.intercepted[0].serve()
        XCTAssertEqual(s.h.sentHex, ["03 05 02"], "server Rx MTU 517")
        XCTAssertEqual(s.h.bearer.mtu, 247)
    }

    func testAnUnansweredRequestHoldsTheServerUntilTheLinkCloses() {
        let s = Served()
        s.h.peer("0a 03 00")
        s.h.loop.advance(by: .seconds(60))
        XCTAssertEqual(s.h.sent, [])
        XCTAssertTrue(s.h.bearer.isAnsweringRequest)
        s.h.bearer.close(reason: 0x13)
        s.intercepted[0].responder.fail(.unlikelyError, handle: 0)
        XCTAssertEqual(s.h.sent, [], "nothing leaves a closed bearer")
        XCTAssertFalse(s.intercepted[0].isPending)
    }

    func testRawOctetsAsAnAnswerAndOutsideAnyTransaction() {
        let s = Served()
        s.take = { request in
            request.responder.respond(octets: [0x01, 0x12, 0x03, 0x00])   // an Error Response one octet short
            return true
        }
        s.h.peer("12 03 00 01")
        XCTAssertEqual(s.h.sentHex, ["01 12 03 00"])
        XCTAssertTrue(s.h.bearer.sendUnchecked([0x0B, 0x41]))
        XCTAssertEqual(s.h.sentHex.last, "0b 41")
        s.h.bearer.close(reason: 0x13)
        XCTAssertFalse(s.h.bearer.sendUnchecked([0x0B]))
    }

    func testDeclinedRequestsGoToTheServerAsBefore() {
        let s = Served()
        s.take = { _ in false }
        s.h.peer("0a 03 00")
        s.answerReads()
        XCTAssertEqual(s.h.sentHex, ["0b 6f 6b"])
        s.h.peer("99")                             // unknown request: answered by the bearer, not shown
        XCTAssertEqual(s.intercepted.count, 1)
        XCTAssertEqual(s.h.sentHex.last, "01 99 00 00 06")
    }

    // MARK: The client meeting a flawed server

    func testAMalformedResponseOfAnotherKindEndsTheOutstandingRequest() {
        let h = BearerHarness()
        var violations: [ATTProtocolViolation] = []
        h.bearer.observeViolations { violations.append($0.violation) }
        var result: Result<ATTPDU, ATTError>?
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { result = $0 }
        h.peer("11 06 01 00")                      // a Read By Group Type Response cut short
        guard case .failure(.malformedResponse(.readByGroupTypeResponse, _))? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertEqual(violations.count, 1)
        XCTAssertEqual(h.bearer.state, .open)
        XCTAssertFalse(h.bearer.hasOutstandingRequest)
    }

    func testAnErrorResponseOfBadLengthIsATypedError() {
        let h = BearerHarness()
        var result: Result<ATTPDU, ATTError>?
        h.bearer.send(request: .writeRequest(ATTWriteRequest(handle: 0x0003, value: [1]))) { result = $0 }
        h.peer("01 12 03 00")                      // 4 octets; Part F 3.4.1.1 says 5
        guard case .failure(.malformedResponse(.errorResponse, .truncated))? = result else { return XCTFail("\(String(describing: result))") }
        var second: Result<ATTPDU, ATTError>?
        h.bearer.send(request: .writeRequest(ATTWriteRequest(handle: 0x0003, value: [1]))) { second = $0 }
        h.peer("01 12 03 00 03 00")                // 6 octets
        guard case .failure(.malformedResponse(.errorResponse, _))? = second else { return XCTFail("\(String(describing: second))") }
    }

    func testAResponseOfTheWrongKindIsReportedAsAViolation() {
        let h = BearerHarness()
        var violations: [ATTProtocolViolation] = []
        h.bearer.observeViolations { violations.append($0.violation) }
        var result: Result<ATTPDU, ATTError>?
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { result = $0 }
        h.peer("0d 6f 6b")
        XCTAssertEqual(result, .failure(.unexpectedResponse(request: .readRequest, received: .readBlobResponse)))
        XCTAssertEqual(violations, [.unexpectedResponse(request: .readRequest, received: .readBlobResponse)])
        XCTAssertEqual(violations.first?.description, "Read Blob Response in answer to a Read Request")
    }

    func testAfterATransactionTimeoutNothingMoreGoesOut() {
        let h = BearerHarness()
        var result: Result<ATTPDU, ATTError>?
        h.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003))) { result = $0 }
        XCTAssertEqual(h.bearer.requestTimeRemaining, .seconds(30))
        h.loop.advance(by: .seconds(30))
        XCTAssertEqual(result, .failure(.timeout(.readRequest)))
        XCTAssertEqual(h.failures, [.timeout(.readRequest)])
        XCTAssertEqual(h.bearer.state, .failed)
        h.peer("1d 08 00 01")                      // an indication now is neither delivered nor confirmed
        XCTAssertFalse(h.bearer.sendUnchecked([0x0A, 0x03, 0x00]))
        XCTAssertEqual(h.sentHex, ["0a 03 00"])
    }
}

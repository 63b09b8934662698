import BLEWire
import BLERuntime

/// The client role of a bearer: requests, commands, MTU exchange (Core 5.4, Vol 3, Part F, 3.3.2).
extension ATTBearer {
    /// Sends `request` when no other request is outstanding (Part F, 3.3.2) and completes with the
    /// matching response. An Error Response for it completes with `.errorResponse`; a response of
    /// another kind with `.unexpectedResponse`.
    public func send(request: ATTPDU, completion: @escaping (Result<ATTPDU, ATTError>) -> Void) {
        let opcode = request.opcode
        guard state == .open else { return completion(.failure(unusableError(opcode))) }
        let expected = opcode.responseOpcode ?? ATTOpcode(opcode.rawValue &+ 1)
        requestQueue.append(PendingRequest(opcode: opcode, expected: expected, bytes: request.encoded, completion: completion))
        sendNextRequest()
    }

    /// Number of requests waiting behind the outstanding one.
    public var queuedRequestCount: Int { requestQueue.count }
    public var hasOutstandingRequest: Bool { outstandingRequest != nil }

    /// Sends a command (a Write Command); nothing answers it. False when the bearer is not open or
    /// the PDU exceeds ATT_MTU.
    @discardableResult
    public func send(command: ATTPDU) -> Bool {
        guard state == .open else { return false }
        let bytes = command.encoded
        guard bytes.count <= mtu else { return false }
        transmit(bytes)
        return true
    }

    /// Exchange MTU (Part F, 3.4.2): offers `preferredMTU` and completes with the new ATT_MTU,
    /// min(client Rx MTU, server Rx MTU), never below 23. Part F, 3.4.2.1 allows the request once
    /// per connection: a second call sends nothing and fails with `.mtuAlreadyExchanged`. ATT_MTU
    /// never shrinks: an answer that would lower the ATT_MTU the server role already agreed on is
    /// a violation (`.shrinkingMTU`) and ATT_MTU stays.
    public func exchangeMTU(completion: @escaping (Result<Int, ATTError>) -> Void) {
        guard state == .open else { return completion(.failure(unusableError(.exchangeMTURequest))) }
        guard !sentMTURequest else { return completion(.failure(.mtuAlreadyExchanged(mtu: mtu))) }
        sentMTURequest = true
        let offered = preferredMTU
        send(request: .exchangeMTURequest(ATTExchangeMTURequest(clientRxMTU: offered))) { [weak self] result in
            switch result {
            case let .success(.exchangeMTUResponse(response)):
                guard let self else { return completion(.failure(.linkLost(reason: 0x16))) }
                let negotiated = ATTBearer.negotiatedMTU(offered, response.serverRxMTU)
                if negotiated < self.mtu {
                    self.violation(.shrinkingMTU(current: self.mtu, offered: negotiated))
                } else {
                    self.setMTU(negotiated)
                }
                completion(.success(self.mtu))
            case let .success(other):
                completion(.failure(.unexpectedResponse(request: .exchangeMTURequest, received: other.opcode)))
            case let .failure(error):
                completion(.failure(error))
            }
        }
    }

    /// Part F, 3.4.2.2: both sides use the smaller Rx MTU; a value below the default counts as 23.
    static func negotiatedMTU(_ a: UInt16, _ b: UInt16) -> Int {
        max(ATTBearer.defaultMTU, Int(min(a, b)))
    }

    func sendNextRequest() {
        guard state == .open, outstandingRequest == nil, let next = requestQueue.popFirst() else { return }
        guard next.bytes.count <= mtu else {
            next.completion(.failure(.exceedsMTU(size: next.bytes.count, mtu: mtu)))
            sendNextRequest()
            return
        }
        outstandingRequest = next
        let opcode = next.opcode
        requestTimer = loop.schedule(after: transactionTimeout) { [weak self] in self?.transactionTimedOut(opcode) }
        transmit(next.bytes)
    }

    /// A response or Error Response arrived. `errorFor` is the Error Response's Request Opcode In Error.
    func receivedResponse(_ pdu: ATTPDU, answering errorFor: ATTOpcode?) {
        guard let pending = outstandingRequest else {
            violation(.unsolicitedResponse(pdu.opcode))
            return
        }
        if let errorFor, case let .errorResponse(response) = pdu {
            if errorFor == pending.opcode {
                completeRequest(.failure(.errorResponse(response)))
            } else {
                violation(.unexpectedResponse(request: pending.opcode, received: .errorResponse))
                completeRequest(.failure(.unexpectedResponse(request: pending.opcode, received: .errorResponse)))
            }
        } else if pdu.opcode == pending.expected {
            completeRequest(.success(pdu))
        } else {
            violation(.unexpectedResponse(request: pending.opcode, received: pdu.opcode))
            completeRequest(.failure(.unexpectedResponse(request: pending.opcode, received: pdu.opcode)))
        }
    }

    /// Ends the outstanding transaction, reports it, then sends the next queued request. Reporting
    /// first keeps completions in request order even over a transport that answers synchronously.
    func completeRequest(_ result: Result<ATTPDU, ATTError>) {
        guard let pending = outstandingRequest else { return }
        outstandingRequest = nil
        requestTimer?.cancel()
        requestTimer = nil
        pending.completion(result)
        sendNextRequest()
    }
}

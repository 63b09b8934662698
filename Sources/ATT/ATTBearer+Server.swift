import BLEWire
import BLERuntime

/// Answers one request received by a bearer's server role. A value type: keep it and answer later
/// (an app responding after a delay). Only the first answer counts; answers to a request the bearer
/// no longer waits for (link closed) are ignored.
public struct ATTResponder {
    weak var bearer: ATTBearer?
    let id: UInt64
    /// The opcode of the request being answered.
    public let requestOpcode: ATTOpcode
    /// Rewrites the octets of `respond` and `fail` before they leave (a flawed peer's encoder).
    var alteration: (([UInt8]) -> [UInt8])?

    init(bearer: ATTBearer?, id: UInt64, requestOpcode: ATTOpcode, alteration: (([UInt8]) -> [UInt8])? = nil) {
        self.bearer = bearer
        self.id = id
        self.requestOpcode = requestOpcode
        self.alteration = alteration
    }

    /// The bearer's ATT_MTU, which bounds the response.
    public var mtu: Int { bearer?.mtu ?? ATTBearer.defaultMTU }

    /// Sends `response`.
    public func respond(_ response: ATTPDU) {
        send(response.encoded)
    }

    /// Sends an Error Response for this request (Part F, 3.4.1.1).
    public func fail(_ error: ATTErrorCode, handle: UInt16) {
        send(ATTBearer.errorResponse(to: requestOpcode, handle: handle, error: error))
    }

    /// Answers with exactly these octets, whatever they are: what a flawed peer's server sends
    /// (a truncated PDU, another request's response). The bearer treats the request as answered.
    public func respond(octets: [UInt8]) {
        bearer?.answerIncoming(id: id, with: octets)
    }

    private func send(_ octets: [UInt8]) {
        bearer?.answerIncoming(id: id, with: alteration.map { $0(octets) } ?? octets)
    }
}

/// The server role of a bearer: request serialisation, notifications and indications.
extension ATTBearer {
    /// The one place Error Responses are built (Core 5.4, Vol 3, Part F, 3.4.1.1).
    static func errorResponse(to request: ATTOpcode, handle: UInt16, error: ATTErrorCode) -> [UInt8] {
        ATTErrorResponse(requestOpcode: request, handle: handle, error: error).encoded
    }

    /// Queues what arrived for the server, to be handed over in a later turn of the loop. A
    /// request while another is pending (queued, or handed over and unanswered) breaks Part F,
    /// 3.3.2: the bearer is dropped, as BlueZ drops it.
    func enqueueIncoming(_ item: Incoming) {
        let opcode: ATTOpcode?
        switch item {
        case let .request(pdu): opcode = pdu.opcode
        case let .reject(o, _, _): opcode = o
        case .command: opcode = nil
        }
        if let opcode {
            if let pending = queuedRequest ?? activeIncoming?.opcode {
                let what = ATTProtocolViolation.pipelinedRequest(pending: pending, received: opcode)
                violation(what)
                dropBearer(what)
                return
            }
            queuedRequest = opcode
        }
        incomingQueue.append(item)
        guard !pumpScheduled else { return }
        pumpScheduled = true
        loop.execute { [weak self] in
            guard let self else { return }
            self.pumpScheduled = false
            self.pumpIncoming()
        }
    }

    /// Hands what arrived to the server in order: commands at once, requests one at a time; a
    /// server answering synchronously is handled by this loop rather than by recursion.
    func pumpIncoming() {
        guard !pumpingIncoming else { return }
        pumpingIncoming = true
        defer { pumpingIncoming = false }
        while state == .open, let next = incomingQueue.first {
            if case let .command(command) = next {
                _ = incomingQueue.popFirst()
                server?.attBearer(self, didReceiveCommand: command)
                continue
            }
            guard activeIncoming == nil else { return }
            _ = incomingQueue.popFirst()
            queuedRequest = nil
            nextIncomingID &+= 1
            let id = nextIncomingID
            switch next {
            case .command:
                continue
            case let .reject(opcode, error, handle):
                activeIncoming = (id, opcode)
                answerIncoming(id: id, with: ATTBearer.errorResponse(to: opcode, handle: handle, error: error))
            case let .request(request):
                activeIncoming = (id, request.opcode)
                if let interceptor = requestInterceptor,
                   interceptor(ATTInterceptedRequest(bearer: self, id: id, pdu: request)) {
                    continue
                }
                serveIncoming(request, id: id, alteration: nil)
            }
        }
    }

    /// Answers a request the normal way: Exchange MTU here, anything else by the server delegate.
    func serveIncoming(_ request: ATTPDU, id: UInt64, alteration: (([UInt8]) -> [UInt8])?) {
        guard state == .open, let active = activeIncoming, active.id == id else { return }
        let responder = ATTResponder(bearer: self, id: id, requestOpcode: request.opcode, alteration: alteration)
        if case let .exchangeMTURequest(mtuRequest) = request {
            // The new ATT_MTU governs everything after the response (Part F, 3.4.2.2); set it
            // first so that a peer answering synchronously already meets it. A repeated request
            // (Part F, 3.4.2.1: once per connection) is answered as real servers answer it, with
            // this side's Rx MTU, but ATT_MTU stays; it never shrinks.
            let negotiated = ATTBearer.negotiatedMTU(mtuRequest.clientRxMTU, preferredMTU)
            if answeredMTURequests > 0 {
                violation(.repeatedMTUExchange(clientRxMTU: mtuRequest.clientRxMTU, mtu: mtu), pdu: request.encoded)
            } else if negotiated < mtu {
                violation(.shrinkingMTU(current: mtu, offered: negotiated), pdu: request.encoded)
            } else {
                setMTU(negotiated)
            }
            answeredMTURequests += 1
            responder.respond(.exchangeMTUResponse(ATTExchangeMTUResponse(serverRxMTU: preferredMTU)))
        } else if let server {
            server.attBearer(self, didReceiveRequest: request, responder: responder)
        } else {
            responder.fail(.requestNotSupported, handle: 0x0000)
        }
    }

    func answerIncoming(id: UInt64, with bytes: [UInt8]) {
        guard state == .open, let active = activeIncoming, active.id == id else { return }
        activeIncoming = nil
        transmit(bytes)
        pumpIncoming()
    }

    /// True while a request that arrived awaits its answer.
    public var isAnsweringRequest: Bool { activeIncoming != nil || queuedRequest != nil }

    /// Sends a Handle Value Notification (Part F, 3.4.7.1) at once; a value longer than
    /// ATT_MTU - 3 is truncated to its first ATT_MTU - 3 octets. False when the bearer is not open.
    @discardableResult
    public func sendNotification(handle: UInt16, value: [UInt8]) -> Bool {
        guard state == .open else { return false }
        let count = min(value.count, mtu - 3)
        // Opcode, handle, then the value cut to ATT_MTU - 3, written once into place.
        let bytes = [UInt8](unsafeUninitializedCapacity: 3 + count) { buffer, initialized in
            buffer[0] = ATTOpcode.handleValueNotification.rawValue
            buffer[1] = UInt8(truncatingIfNeeded: handle)
            buffer[2] = UInt8(truncatingIfNeeded: handle >> 8)
            value.withUnsafeBufferPointer { source in
                if let from = source.baseAddress, count > 0 {
                    (buffer.baseAddress! + 3).initialize(from: from, count: count)
                }
            }
            initialized = 3 + count
        }
        counters.notificationsSent &+= 1
        transmit(bytes)
        return true
    }

    /// Queues a Handle Value Indication (Part F, 3.4.7.2); one is outstanding at a time, and the
    /// peer's Handle Value Confirmation completes it. Truncated to ATT_MTU - 3 like a notification.
    public func sendIndication(handle: UInt16, value: [UInt8], completion: ((Result<Void, ATTError>) -> Void)? = nil) {
        guard state == .open else {
            completion?(.failure(unusableError(.handleValueIndication)))
            return
        }
        indicationQueue.append(PendingIndication(handle: handle, value: value, completion: completion))
        sendNextIndication()
    }

    /// Indications waiting behind the outstanding one.
    public var queuedIndicationCount: Int { indicationQueue.count }
    public var hasOutstandingIndication: Bool { outstandingIndication != nil }

    func sendNextIndication() {
        guard state == .open, outstandingIndication == nil, let next = indicationQueue.popFirst() else { return }
        outstandingIndication = next
        indicationTimer = loop.schedule(after: transactionTimeout) { [weak self] in
            self?.transactionTimedOut(.handleValueIndication)
        }
        let count = min(next.value.count, mtu - 3)
        transmit(ATTHandleValueIndication(handle: next.handle, value: Array(next.value[..<count])).encoded)
    }

    func receivedConfirmation() {
        guard let pending = outstandingIndication else {
            violation(.unsolicitedConfirmation)
            return
        }
        outstandingIndication = nil
        indicationTimer?.cancel()
        indicationTimer = nil
        pending.completion?(.success(()))
        sendNextIndication()
    }
}

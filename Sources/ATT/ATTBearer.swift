import BLEWire
import BLERuntime

/// The server role's view of a bearer: requests and commands from the peer's client.
public protocol ATTServerDelegate: AnyObject {
    /// A request (never Exchange MTU, which the bearer answers itself). Answer through `responder`,
    /// now or later; requests are handed over one at a time, in order, so answers go out in order.
    func attBearer(_ bearer: ATTBearer, didReceiveRequest request: ATTPDU, responder: ATTResponder)
    /// A Write Command (never answered), in arrival order with the requests. Signed Write
    /// Commands never arrive here: the bearer ignores them, reporting
    /// `ATTProtocolViolation.unverifiedSignedWrite`.
    func attBearer(_ bearer: ATTBearer, didReceiveCommand command: ATTPDU)
    /// The bearer was closed; nothing more will arrive.
    func attBearerDidClose(_ bearer: ATTBearer, error: ATTError)
}

/// The client role's view of a bearer: notifications and indications from the peer's server.
public protocol ATTClientDelegate: AnyObject {
    func attBearer(_ bearer: ATTBearer, didReceiveNotification handle: UInt16, value: [UInt8])
    /// The bearer sends the Handle Value Confirmation as soon as this returns (Part F, 3.4.7.3).
    func attBearer(_ bearer: ATTBearer, didReceiveIndication handle: UInt16, value: [UInt8])
    func attBearerDidClose(_ bearer: ATTBearer, error: ATTError)
}

extension ATTServerDelegate {
    public func attBearerDidClose(_ bearer: ATTBearer, error: ATTError) {}
}

extension ATTClientDelegate {
    public func attBearerDidClose(_ bearer: ATTBearer, error: ATTError) {}
}

/// One ATT bearer: the L2CAP LE fixed channel 0x0004 of one connection, carrying both the client
/// and the server role (Core 5.4, Vol 3, Part F, 3.2.11 and 3.3).
///
/// - Client role: at most one request outstanding (Part F, 3.3.2); later requests wait in order.
///   Each response or Error Response completes the outstanding request.
/// - Server role: what the peer sends is handed to `server` in arrival order, in a later turn of
///   the loop (as BlueZ's server answers from its main loop); the answer may come later still. A
///   request is pending from its arrival until its answer was sent. Unknown requests get Request
///   Not Supported, malformed ones Invalid PDU with the handle they carried (Part F, 3.4.1.1),
///   those naming handle 0x0000 or a range that starts after its end Invalid Handle (Part F,
///   3.2.2, 3.4.3.1); commands that are not understood are ignored (Part F, 3.3).
/// - A request that arrives while another is pending breaks Part F, 3.3.2 (the client must wait
///   for the response): like BlueZ (src/shared/att.c shuts the channel down) the bearer gives up —
///   everything pending fails with `.protocolViolation`, nothing more is sent — and asks its owner
///   to end the link (`onDropLink`).
/// - Exchange MTU (Part F, 3.4.2): the client role sends it at most once; the server role answers
///   a repeated one, as BlueZ, Bumble and Zephyr do, but ATT_MTU never changes after the first
///   exchange and never shrinks.
/// - Indications are sent one at a time and completed by the peer's confirmation.
/// - A request or indication unanswered for `transactionTimeout` (30 s, Part F, 3.3.3) fails the
///   bearer: everything pending fails with `.timeout`, nothing more is sent, `onFailure` is called.
/// - Every protocol violation of the peer is counted and reported to the violation observers
///   (`observeViolations`), with the octets and what the bearer did about it.
///
/// All time comes from `loop`; the bearer is not thread-safe and lives on the loop's thread.
public final class ATTBearer {
    /// The default ATT_MTU for LE (Part F, 3.2.8).
    public static let defaultMTU = 23
    /// The largest attribute value (Part F, 3.2.9).
    public static let maximumAttributeValueLength = 512

    public enum State: Equatable {
        case open
        /// A transaction timed out, or the peer broke the protocol in a way that ends the bearer;
        /// the bearer is unusable until the link is closed (`failure` says why).
        case failed
        case closed
    }

    /// Cheap counters for debugging and benchmarks.
    public struct Counters: Equatable {
        public var pdusSent: UInt64 = 0
        public var pdusReceived: UInt64 = 0
        public var notificationsSent: UInt64 = 0
        public var notificationsReceived: UInt64 = 0
        /// PDUs dropped as malformed or unsolicited.
        public var protocolViolations: UInt64 = 0
        /// Commands the server role ignored (unknown commands, Signed Write Commands).
        public var ignoredCommands: UInt64 = 0
    }

    public let loop: EventLoop
    let sendPDU: ([UInt8]) -> Void

    /// The receive MTU this side offers: sent in our Exchange MTU Request and answered to the peer's.
    public var preferredMTU: UInt16
    /// Part F, 3.3.3: 30 seconds. Configurable for tests.
    public var transactionTimeout: TimeSpan

    /// The current ATT_MTU, shared by both roles (Part F, 3.4.2).
    public internal(set) var mtu: Int = ATTBearer.defaultMTU
    public internal(set) var state: State = .open
    public internal(set) var counters = Counters()

    /// The HCI reason given to `close(reason:)`, once closed.
    public internal(set) var closeReason: UInt8?
    /// Why the bearer failed (`state == .failed`): `.timeout` or `.protocolViolation`.
    public internal(set) var failure: ATTError?

    public weak var server: ATTServerDelegate?
    public weak var client: ATTClientDelegate?

    /// Called once when the bearer fails: a transaction timeout (`.timeout`), or a violation that
    /// ends the bearer (`.protocolViolation`, after which `onDropLink` is called too).
    public var onFailure: ((ATTError) -> Void)?
    /// Called once when the peer broke the protocol in a way real stacks answer by dropping the
    /// bearer (`ATTProtocolViolation.Consequence.linkDropped`): the owner ends the link. GAP's
    /// `Connection` does, with Remote User Terminated Connection (0x13).
    public var onDropLink: ((ATTProtocolViolation) -> Void)?
    /// Called when an MTU exchange changes the ATT_MTU.
    public var onMTUChanged: ((Int) -> Void)?
    /// Observation hooks, each PDU as octets. They cost one nil check when unset.
    public var onPDUSent: (([UInt8]) -> Void)?
    public var onPDUReceived: (([UInt8]) -> Void)?
    /// Everyone who asked to hear of the peer's violations (`observeViolations`), in order.
    var violationObservers: [(ATTViolationEvent) -> Void] = []
    /// The PDU being received, for violation reports.
    var receiving: [UInt8] = []
    /// Sees each request before the server role answers it (Exchange MTU included); returning true
    /// takes the request over: answer it through the request's responder, `serve` it later, or
    /// never (a flawed peer; the bearer then answers nothing more until the link closes, as
    /// requests are sequential, Part F 3.3.2). Unknown and malformed requests, and those naming
    /// handle 0x0000 or an invalid range, are not shown.
    public var requestInterceptor: ((ATTInterceptedRequest) -> Bool)?

    // Client role.
    struct PendingRequest {
        let opcode: ATTOpcode
        let expected: ATTOpcode
        let bytes: [UInt8]
        let completion: (Result<ATTPDU, ATTError>) -> Void
    }
    var outstandingRequest: PendingRequest?
    var requestQueue = FIFO<PendingRequest>()
    var requestTimer: LoopTimer?

    /// Our Exchange MTU Request was sent (Part F, 3.4.2.1: once per connection).
    var sentMTURequest = false

    // Server role.
    enum Incoming {
        case request(ATTPDU)
        /// Answered with an Error Response without bothering the server (unknown or malformed).
        case reject(ATTOpcode, ATTErrorCode, handle: UInt16)
        case command(ATTPDU)
    }
    /// What arrived and was not yet handed to the server, in order.
    var incomingQueue = FIFO<Incoming>()
    /// The request waiting in `incomingQueue`, if any (at most one: a second is a violation).
    var queuedRequest: ATTOpcode?
    /// The transaction the server is answering, if any.
    var activeIncoming: (id: UInt64, opcode: ATTOpcode)?
    var nextIncomingID: UInt64 = 0
    var pumpingIncoming = false
    var pumpScheduled = false
    /// Exchange MTU Requests the server role answered.
    var answeredMTURequests = 0

    struct PendingIndication {
        let handle: UInt16
        let value: [UInt8]
        let completion: ((Result<Void, ATTError>) -> Void)?
    }
    var outstandingIndication: PendingIndication?
    var indicationQueue = FIFO<PendingIndication>()
    var indicationTimer: LoopTimer?

    /// - Parameters:
    ///   - send: hands one ATT PDU to L2CAP for channel 0x0004.
    ///   - preferredMTU: this side's receive MTU (default 517, the largest useful: 512 + 5).
    public init(loop: EventLoop, preferredMTU: UInt16 = 517, transactionTimeout: TimeSpan = .seconds(30),
                send: @escaping ([UInt8]) -> Void) {
        self.loop = loop
        self.preferredMTU = max(preferredMTU, UInt16(ATTBearer.defaultMTU))
        self.transactionTimeout = transactionTimeout
        self.sendPDU = send
    }

    public var isOpen: Bool { state == .open }

    /// Time left before the outstanding request times out (nil when none is outstanding).
    public var requestTimeRemaining: TimeSpan? { requestTimer.map { $0.remaining(on: loop) } }
    /// Time left before the outstanding indication times out (nil when none is outstanding).
    public var indicationTimeRemaining: TimeSpan? { indicationTimer.map { $0.remaining(on: loop) } }

    // MARK: Sending

    /// Every PDU leaves through here; nothing leaves a failed or closed bearer.
    @inline(__always) func transmit(_ bytes: [UInt8]) {
        guard state == .open else { return }
        counters.pdusSent &+= 1
        if let hook = onPDUSent { hook(bytes) }
        sendPDU(bytes)
    }

    func setMTU(_ newMTU: Int) {
        guard newMTU != mtu else { return }
        mtu = newMTU
        onMTUChanged?(newMTU)
    }

    // MARK: Receiving

    /// Takes one ATT PDU from L2CAP (the payload of a channel 0x0004 frame).
    public func receive(_ pdu: [UInt8]) {
        guard state == .open else { return }
        counters.pdusReceived &+= 1
        if let hook = onPDUReceived { hook(pdu) }
        receiving = pdu
        guard let first = pdu.first else {
            violation(.emptyPDU)
            return
        }
        // The hot path: skip the generic decoder for notifications.
        if first == ATTOpcode.handleValueNotification.rawValue, pdu.count >= 3 {
            counters.notificationsReceived &+= 1
            let handle = UInt16(pdu[1]) | UInt16(pdu[2]) << 8
            client?.attBearer(self, didReceiveNotification: handle, value: Array(pdu[3...]))
            return
        }
        // Part F, 3.2.8: ATT_MTU bounds every PDU. A longer request is answered Invalid PDU
        // (3.4.1.1), a longer command ignored; the server never sees either.
        if pdu.count > mtu {
            let opcode = ATTOpcode(first)
            switch opcode.method {
            case .request:
                violation(.exceedsMTU(opcode, length: pdu.count, mtu: mtu))
                enqueueIncoming(.reject(opcode, .invalidPDU, handle: ATTBearer.handleInError(ofMalformed: pdu)))
                return
            case .command:
                counters.ignoredCommands &+= 1
                violation(.exceedsMTU(opcode, length: pdu.count, mtu: mtu))
                return
            case .response, .notification, .indication, .confirmation:
                break
            }
        }
        let decoded: ATTPDU
        do {
            decoded = try ATTPDU(decoding: pdu)
        } catch {
            let reason = error as? DecodeError ?? .truncated(needed: 1, available: 0, at: 0)
            receivedMalformed(ATTOpcode(first), reason, pdu)
            return
        }
        dispatch(decoded)
    }

    private func dispatch(_ pdu: ATTPDU) {
        switch pdu {
        case let .errorResponse(response):
            receivedResponse(pdu, answering: response.requestOpcode)
        case .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse, .readByTypeResponse,
             .readResponse, .readBlobResponse, .readMultipleResponse, .readByGroupTypeResponse, .writeResponse,
             .prepareWriteResponse, .executeWriteResponse:
            receivedResponse(pdu, answering: nil)
        case .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest,
             .readRequest, .readBlobRequest, .readMultipleRequest, .readByGroupTypeRequest, .writeRequest,
             .prepareWriteRequest, .executeWriteRequest:
            if let invalid = ATTBearer.invalidHandle(in: pdu), case let .invalidHandle(opcode, start, _) = invalid {
                // Answered here, like a malformed request: no server holds handle 0x0000, and a
                // range that ends before it starts holds nothing (Part F 3.4.3.1: Invalid Handle,
                // naming the Starting Handle).
                violation(invalid)
                enqueueIncoming(.reject(opcode, .invalidHandle, handle: start))
            } else {
                enqueueIncoming(.request(pdu))
            }
        case .writeCommand:
            if let invalid = ATTBearer.invalidHandle(in: pdu) {
                counters.ignoredCommands &+= 1
                violation(invalid)
            } else {
                enqueueIncoming(.command(pdu))
            }
        case let .signedWriteCommand(command):
            // No pairing, so no CSRK to verify the signature with: ignored (Part F, 3.4.5.4), and
            // reported, never dropped silently.
            counters.ignoredCommands &+= 1
            violation(.unverifiedSignedWrite(handle: command.handle))
        case let .handleValueNotification(notification):
            counters.notificationsReceived &+= 1
            client?.attBearer(self, didReceiveNotification: notification.handle, value: notification.value)
        case let .handleValueIndication(indication):
            client?.attBearer(self, didReceiveIndication: indication.handle, value: indication.value)
            transmit(ATTHandleValueConfirmation().encoded)
        case .handleValueConfirmation:
            receivedConfirmation()
        case let .unknown(opcode, _):
            switch opcode.method {
            case .request:
                // Part F, 3.4.1.1: a request that is not supported names handle 0x0000.
                if !opcode.isDefined { violation(.unknownOpcode(opcode)) }
                enqueueIncoming(.reject(opcode, .requestNotSupported, handle: 0x0000))
            case .command:
                counters.ignoredCommands &+= 1
                if !opcode.isDefined { violation(.unknownOpcode(opcode)) }
            case .response: receivedResponse(pdu, answering: nil)
            case .notification, .indication, .confirmation: violation(.unsupported(opcode))
            }
        }
    }

    private func receivedMalformed(_ opcode: ATTOpcode, _ error: DecodeError, _ octets: [UInt8]) {
        violation(.malformed(opcode, error))
        switch opcode.method {
        case .request:
            enqueueIncoming(.reject(opcode, .invalidPDU, handle: ATTBearer.handleInError(ofMalformed: octets)))
        case .response:
            // A response can only answer the outstanding request (Part F, 3.3.2), so a malformed
            // one ends it, whichever response opcode it carries; with none outstanding it is
            // dropped like any unsolicited response.
            if outstandingRequest != nil {
                completeRequest(.failure(.malformedResponse(opcode, error)))
            }
        case .command, .notification, .indication, .confirmation:
            break
        }
    }

    /// Counts and reports a protocol violation in the PDU being received (also for layers above
    /// that find one in a PDU the bearer handed them).
    public func violation(_ what: ATTProtocolViolation) {
        violation(what, pdu: what == .emptyPDU ? [] : receiving)
    }

    /// Counts and reports a violation carried by `pdu`.
    func violation(_ what: ATTProtocolViolation, pdu: [UInt8]) {
        counters.protocolViolations &+= 1
        guard !violationObservers.isEmpty else { return }
        let event = ATTViolationEvent(violation: what, pdu: pdu)
        for observer in violationObservers { observer(event) }
    }

    /// Calls `observer` with every protocol violation of the peer, before the bearer acts on it,
    /// for as long as the bearer lives. Observers are called in the order they were added.
    public func observeViolations(_ observer: @escaping (ATTViolationEvent) -> Void) {
        violationObservers.append(observer)
    }

    /// The handle or handle range of a request or Write Command that no attribute can answer to,
    /// whatever the server holds (`ATTProtocolViolation.invalidHandle`): handle 0x0000 (Part F,
    /// 3.2.2), or a range starting at 0x0000 or after its end (Part F, 3.4.3.1 and the other
    /// range requests). Nil for anything else.
    static func invalidHandle(in pdu: ATTPDU) -> ATTProtocolViolation? {
        func single(_ handle: UInt16) -> ATTProtocolViolation? {
            handle == 0x0000 ? .invalidHandle(pdu.opcode, start: 0x0000, end: nil) : nil
        }
        func range(_ range: ATTHandleRange) -> ATTProtocolViolation? {
            range.isValid ? nil : .invalidHandle(pdu.opcode, start: range.start, end: range.end)
        }
        switch pdu {
        case let .findInformationRequest(r): return range(r.range)
        case let .findByTypeValueRequest(r): return range(r.range)
        case let .readByTypeRequest(r): return range(r.range)
        case let .readByGroupTypeRequest(r): return range(r.range)
        case let .readRequest(r): return single(r.handle)
        case let .readBlobRequest(r): return single(r.handle)
        case let .readMultipleRequest(r): return r.handles.contains(0x0000) ? single(0x0000) : nil
        case let .writeRequest(r): return single(r.handle)
        case let .prepareWriteRequest(r): return single(r.handle)
        case let .writeCommand(c): return single(c.handle)
        default: return nil
        }
    }

    /// The Attribute Handle In Error for a malformed request (Part F, 3.4.1.1: the handle in the
    /// request that caused the error): the first handle its parameters carry, when the octets
    /// reach that far; 0x0000 for requests without one (Exchange MTU, Execute Write).
    static func handleInError(ofMalformed octets: [UInt8]) -> UInt16 {
        guard octets.count >= 3, let opcode = octets.first else { return 0x0000 }
        switch ATTOpcode(opcode) {
        case .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest, .readRequest, .readBlobRequest,
             .readMultipleRequest, .readByGroupTypeRequest, .writeRequest, .prepareWriteRequest, .readMultipleVariableRequest:
            return UInt16(octets[1]) | UInt16(octets[2]) << 8
        default:
            return 0x0000
        }
    }

    // MARK: Ending

    /// The link is gone: everything pending fails with `.linkLost(reason)`, delegates are told, and
    /// nothing more is sent or received. `reason` is the HCI disconnection reason.
    public func close(reason: UInt8) {
        guard state != .closed else { return }
        let error = ATTError.linkLost(reason: reason)
        state = .closed
        closeReason = reason
        failEverything { _ in error }
        server?.attBearerDidClose(self, error: error)
        client?.attBearerDidClose(self, error: error)
    }

    /// What an operation started on a bearer that is not open fails with.
    func unusableError(_ opcode: ATTOpcode) -> ATTError {
        if state == .failed {
            if case let .protocolViolation(v)? = failure { return .protocolViolation(v) }
            return .timeout(opcode)
        }
        return .linkLost(reason: closeReason ?? 0x16)
    }

    /// A transaction timed out (Part F, 3.3.3).
    func transactionTimedOut(_ opcode: ATTOpcode) {
        guard state == .open else { return }
        state = .failed
        failure = .timeout(opcode)
        failEverything { .timeout($0) }
        onFailure?(.timeout(opcode))
    }

    /// Gives the bearer up after a violation that ends it: everything pending fails with
    /// `.protocolViolation`, nothing more is sent or received, and the owner is asked to end the
    /// link.
    func dropBearer(_ what: ATTProtocolViolation) {
        guard state == .open else { return }
        state = .failed
        let error = ATTError.protocolViolation(what)
        failure = error
        failEverything { _ in error }
        onFailure?(error)
        onDropLink?(what)
    }

    /// Fails every pending request and indication, outstanding ones first, each in order.
    private func failEverything(_ error: (ATTOpcode) -> ATTError) {
        requestTimer?.cancel()
        requestTimer = nil
        indicationTimer?.cancel()
        indicationTimer = nil
        var requests: [PendingRequest] = []
        if let outstanding = outstandingRequest { requests.append(outstanding) }
        outstandingRequest = nil
        requests += requestQueue.drain()
        var indications: [PendingIndication] = []
        if let outstanding = outstandingIndication { indications.append(outstanding) }
        outstandingIndication = nil
        indications += indicationQueue.drain()
        _ = incomingQueue.drain()
        queuedRequest = nil
        activeIncoming = nil
        for request in requests { request.completion(.failure(error(request.opcode))) }
        for indication in indications { indication.completion?(.failure(error(.handleValueIndication))) }
    }
}

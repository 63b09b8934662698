import BLEWire
import BLERuntime

/// The server role's view of a bearer: requests and commands from the peer's client.
public protocol ATTServerDelegate: AnyObject {
    /// A request (never Exchange MTU, which the bearer answers itself). Answer through `responder`,
    /// now or later; requests are handed over one at a time, in order, so answers go out in order.
    func attBearer(_ bearer: ATTBearer, didReceiveRequest request: ATTPDU, responder: ATTResponder)
    /// A Write Command (never answered). Signed Write Commands are dropped by the bearer.
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
/// - Server role: requests go to `server` one at a time; answers may come later and are sent in
///   order. Unknown requests get Request Not Supported, malformed ones Invalid PDU; commands that
///   are not understood are ignored (Part F, 3.3).
/// - Indications are sent one at a time and completed by the peer's confirmation.
/// - A request or indication unanswered for `transactionTimeout` (30 s, Part F, 3.3.3) fails the
///   bearer: everything pending fails with `.timeout`, nothing more is sent, `onFailure` is called.
///
/// All time comes from `loop`; the bearer is not thread-safe and lives on the loop's thread.
public final class ATTBearer {
    /// The default ATT_MTU for LE (Part F, 3.2.8).
    public static let defaultMTU = 23
    /// The largest attribute value (Part F, 3.2.9).
    public static let maximumAttributeValueLength = 512

    public enum State: Equatable {
        case open
        /// A transaction timed out; the bearer is unusable until the link is closed.
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

    public weak var server: ATTServerDelegate?
    public weak var client: ATTClientDelegate?

    /// Called once when a transaction timeout fails the bearer; the owner should drop the link.
    public var onFailure: ((ATTError) -> Void)?
    /// Called when an MTU exchange changes the ATT_MTU.
    public var onMTUChanged: ((Int) -> Void)?
    /// Observation hooks, each PDU as octets. They cost one nil check when unset.
    public var onPDUSent: (([UInt8]) -> Void)?
    public var onPDUReceived: (([UInt8]) -> Void)?
    public var onProtocolViolation: ((ATTProtocolViolation) -> Void)?
    /// Sees each request before the server role answers it (Exchange MTU included); returning true
    /// takes the request over: answer it through the request's responder, `serve` it later, or
    /// never (a flawed peer; the bearer then answers nothing more until the link closes, as
    /// requests are sequential, Part F 3.3.2). Unknown and malformed requests are not shown.
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

    // Server role.
    enum IncomingRequest {
        case request(ATTPDU)
        /// Answered with an Error Response without bothering the server (unknown or malformed).
        case reject(ATTOpcode, ATTErrorCode)
    }
    var incomingQueue = FIFO<IncomingRequest>()
    /// The transaction the server is answering, if any.
    var activeIncoming: (id: UInt64, opcode: ATTOpcode)?
    var nextIncomingID: UInt64 = 0
    var pumpingIncoming = false

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
        let decoded: ATTPDU
        do {
            decoded = try ATTPDU(decoding: pdu)
        } catch {
            let reason = error as? DecodeError ?? .truncated(needed: 1, available: 0, at: 0)
            receivedMalformed(ATTOpcode(first), reason)
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
            enqueueIncoming(.request(pdu))
        case .writeCommand:
            server?.attBearer(self, didReceiveCommand: pdu)
        case .signedWriteCommand:
            // Signing is not supported; a server ignores commands it does not support (Part F, 3.3).
            counters.ignoredCommands &+= 1
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
            case .request: enqueueIncoming(.reject(opcode, .requestNotSupported))
            case .command: counters.ignoredCommands &+= 1
            case .response: receivedResponse(pdu, answering: nil)
            case .notification, .indication, .confirmation: violation(.unsupported(opcode))
            }
        }
    }

    private func receivedMalformed(_ opcode: ATTOpcode, _ error: DecodeError) {
        violation(.malformed(opcode, error))
        switch opcode.method {
        case .request:
            enqueueIncoming(.reject(opcode, .invalidPDU))
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

    /// Counts and reports a protocol violation (also for layers above that find one in a PDU).
    public func violation(_ what: ATTProtocolViolation) {
        counters.protocolViolations &+= 1
        onProtocolViolation?(what)
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
        state == .failed ? .timeout(opcode) : .linkLost(reason: closeReason ?? 0x16)
    }

    /// A transaction timed out (Part F, 3.3.3).
    func transactionTimedOut(_ opcode: ATTOpcode) {
        guard state == .open else { return }
        state = .failed
        failEverything { .timeout($0) }
        onFailure?(.timeout(opcode))
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
        activeIncoming = nil
        for request in requests { request.completion(.failure(error(request.opcode))) }
        for indication in indications { indication.completion?(.failure(error(.handleValueIndication))) }
    }
}

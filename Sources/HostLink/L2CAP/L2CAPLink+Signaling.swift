import BLERuntime
import BLEWire
import HCI

/// The LE signaling channel, CID 0x0005 (Core 5.4, Vol 3, Part A, 4): one command per C-frame.
///
/// What is answered how:
/// - A C-frame larger than MTU_sig: Command Reject "Signaling MTU exceeded" with our MTU_sig (4.1).
/// - Identifier 0x00 "shall never be used" (4): ignored (no answer can carry it).
/// - A frame too short for the header, a Length that disagrees with the frame, a known command
///   whose data has the wrong size: Command Reject "Command not understood".
/// - Connection Parameter Update Request (4.20): a central answers with the response, rejecting
///   parameters out of their ranges; a peripheral answers Command Reject "not understood".
/// - LE credit based channels (4.6, 4.7, 4.22–4.24): L2CAPLink+CreditBased.swift. A Disconnection
///   Request that names a channel that does not exist here: Command Reject "Invalid CID in
///   request" with the request's destination and source CIDs (4.1).
/// - Other LE requests this host does not implement (enhanced credit based channels, 4.25–4.28)
///   and codes with no meaning on LE: Command Reject "Command not understood".
/// - Responses, and Command Rejects, that answer no request of ours: discarded (a response is
///   never answered; answering it could start an endless exchange of rejects).
extension L2CAPLink {
    func receiveSignaling(_ payload: [UInt8]) {
        let identifier: UInt8? = payload.count >= 2 ? payload[1] : nil
        if payload.count > signalingMTU {
            guard let id = identifier, id != 0 else {
                report(.signaling, .mtuExceeded, octets: payload,
                       "\(payload.count)-octet signaling command over MTU_sig \(signalingMTU) with identifier 0: ignored")
                return
            }
            let data = [UInt8(truncatingIfNeeded: signalingMTU), UInt8(truncatingIfNeeded: signalingMTU >> 8)]
            reject(id, .signalingMTUExceeded, data: data, kind: .mtuExceeded, octets: payload,
                   "\(payload.count)-octet signaling command over MTU_sig \(signalingMTU)")
            return
        }
        guard payload.count >= 4 else {
            if let id = identifier, id != 0 {
                reject(id, .commandNotUnderstood, kind: .malformedCommand, octets: payload,
                       "signaling command of \(payload.count) octets, shorter than its 4-octet header")
            } else {
                report(.signaling, .malformedCommand, octets: payload,
                       "signaling command of \(payload.count) octets, shorter than its header, with no identifier to answer")
            }
            return
        }
        let code = payload[0], id = payload[1]
        let length = Int(payload[2]) | Int(payload[3]) << 8
        guard id != 0 else {
            report(.signaling, .zeroIdentifier, octets: payload, "signaling code 0x\(hex2(code)) with identifier 0: ignored")
            return
        }
        guard length == payload.count - 4 else {
            reject(id, .commandNotUnderstood, kind: .malformedCommand, octets: payload,
                   "signaling code 0x\(hex2(code)) whose Length (\(length)) disagrees with its data (\(payload.count - 4) octets)")
            return
        }
        typealias Code = LESignalingPDU.Code
        switch code {
        case Code.commandReject:
            if pendingOpens[id] != nil || pendingDisconnects[id] != nil {
                receiveCreditBasedCommandReject(payload)
            } else {
                receiveCommandReject(payload)
            }
        case Code.connectionParameterUpdateResponse:
            receiveUpdateResponse(payload)
        case Code.leCreditBasedConnectionResponse:
            receiveCreditBasedConnectionResponse(payload)
        case Code.disconnectionResponse:
            receiveDisconnectionResponse(payload)
        case Code.creditBasedConnectionResponse, Code.creditBasedReconfigureResponse:
            report(.signaling, .unsolicitedResponse, octets: payload,
                   "signaling response code 0x\(hex2(code)) (identifier \(id)) to a request this side never sends; discarded")
        case Code.connectionParameterUpdateRequest:
            receiveUpdateRequest(payload)
        case Code.disconnectionRequest:
            guard length == 4 else {
                reject(id, .commandNotUnderstood, kind: .malformedCommand, octets: payload,
                       "Disconnection Request with \(length) octets of data, not 4")
                return
            }
            receiveDisconnectionRequest(payload)
        case Code.leCreditBasedConnectionRequest:
            receiveCreditBasedConnectionRequest(payload)
        case Code.flowControlCreditIndication:
            receiveFlowControlCredit(payload)
        case Code.creditBasedConnectionRequest, Code.creditBasedReconfigureRequest:
            reject(id, .commandNotUnderstood, kind: .unsupportedCommand, octets: payload,
                   "signaling code 0x\(hex2(code)) (enhanced credit based channels) is not supported")
        default:
            reject(id, .commandNotUnderstood, kind: .unknownCode, octets: payload,
                   "signaling code 0x\(hex2(code)) has no meaning on the LE signaling channel")
        }
    }

    func reject(_ id: UInt8, _ reason: CommandRejectReason, data: [UInt8] = [], kind: ProtocolViolation.Kind,
                        octets: [UInt8], _ detail: String) {
        sendSignaling(.commandReject(identifier: id, reason: reason, data: data))
        report(.signaling, kind, octets: octets, answer: .commandReject(reason, data: data), detail)
    }

    private func receiveCommandReject(_ payload: [UInt8]) {
        let id = payload[1]
        guard let pending = pendingUpdate, pending.identifier == id else {
            report(.signaling, .unsolicitedResponse, octets: payload,
                   "Command Reject (identifier \(id)) with no request of ours outstanding; discarded")
            return
        }
        guard payload.count >= 6 else {
            report(.signaling, .malformedCommand, octets: payload, "Command Reject without its 2-octet Reason; discarded")
            finishUpdate(identifier: id, result: .failure(.invalidState("the central answered the connection parameter update with a malformed Command Reject")))
            return
        }
        // The peer refused our request: not a violation, the request's completion says so.
        finishUpdate(identifier: id, result: .failure(.invalidState("connection parameter update rejected by the peer (Command Reject)")))
    }

    private func receiveUpdateResponse(_ payload: [UInt8]) {
        let id = payload[1]
        guard let pending = pendingUpdate, pending.identifier == id else {
            report(.signaling, .unsolicitedResponse, octets: payload,
                   "Connection Parameter Update Response (identifier \(id)) with no request of ours outstanding; discarded")
            return
        }
        guard case let .connectionParameterUpdateResponse(_, accepted)? = try? LESignalingPDU(decoding: payload) else {
            report(.signaling, .malformedCommand, octets: payload,
                   "Connection Parameter Update Response whose Result is not 2 octets of 0x0000 or 0x0001; discarded")
            finishUpdate(identifier: id, result: .failure(.invalidState("the central answered the connection parameter update with a malformed response")))
            return
        }
        finishUpdate(identifier: id, result: .success(accepted))
    }

    private func receiveUpdateRequest(_ payload: [UInt8]) {
        let id = payload[1]
        guard role == .central else {
            // 4.20: "If a Peripheral receives this command it shall respond with a Command Reject
            // with reason 0x0000 (Command not understood)."
            reject(id, .commandNotUnderstood, kind: .wrongRole, octets: payload,
                   "Connection Parameter Update Request sent to a peripheral (only a central handles it)")
            return
        }
        guard case let .connectionParameterUpdateRequest(_, params)? = try? LESignalingPDU(decoding: payload) else {
            reject(id, .commandNotUnderstood, kind: .malformedCommand, octets: payload,
                   "Connection Parameter Update Request with \(payload.count - 4) octets of data, not 8")
            return
        }
        guard connectionParametersAreValid(intervalMin: params.intervalMin, intervalMax: params.intervalMax,
                                           latency: params.latency, timeout: params.timeout) else {
            sendSignaling(.connectionParameterUpdateResponse(identifier: id, accepted: false))
            report(.signaling, .invalidParameters, octets: payload, answer: .connectionParametersRejected,
                   "Connection Parameter Update Request out of range (interval \(params.intervalMin)–\(params.intervalMax), "
                   + "latency \(params.latency), timeout \(params.timeout))")
            return
        }
        let accepted = acceptsConnectionParameters(params)
        sendSignaling(.connectionParameterUpdateResponse(identifier: id, accepted: accepted))
        if accepted { onConnectionParametersAccepted?(params) }
    }

    func sendSignaling(_ pdu: LESignalingPDU) {
        send(cid: L2CAPChannelID.leSignaling, payload: pdu.encoded)
    }

    /// A peripheral asks its central for new parameters (4.20); the completion says whether the
    /// central accepted. The central then runs the LE Connection Update itself.
    public func requestConnectionParameterUpdate(_ params: ConnectionParameterUpdate,
                                                 completion: @escaping (Result<Bool, HostError>) -> Void) {
        guard !isClosed else { return completion(.failure(.invalidState("link closed"))) }
        guard role == .peripheral else {
            return completion(.failure(.invalidState("only a peripheral sends Connection Parameter Update Request")))
        }
        guard pendingUpdate == nil else {
            return completion(.failure(.invalidState("a connection parameter update request is already pending")))
        }
        let id = allocateIdentifier()
        let timer = loop.schedule(after: signalingTimeout) { [weak self] in
            self?.finishUpdate(identifier: id, result: .failure(.timeout("Connection Parameter Update Request")))
        }
        pendingUpdate = (id, timer, completion)
        sendSignaling(.connectionParameterUpdateRequest(identifier: id, params))
    }

    /// The next signaling identifier: 1–255, never 0 (4), and never one a request of ours still
    /// waits on (credit indications use identifiers too, hundreds in a long transfer).
    func allocateIdentifier() -> UInt8 {
        for _ in 0..<255 {
            let id = nextIdentifier
            nextIdentifier = nextIdentifier == 0xFF ? 1 : nextIdentifier + 1
            if pendingUpdate?.identifier != id, pendingOpens[id] == nil, pendingDisconnects[id] == nil { return id }
        }
        return nextIdentifier   // 255 requests outstanding: cannot happen with 64 dynamic CIDs
    }

    func finishUpdate(identifier: UInt8, result: Result<Bool, HostError>) {
        guard let pending = pendingUpdate, pending.identifier == identifier else { return }
        pendingUpdate = nil
        pending.timer.cancel()
        pending.completion(result)
    }
}

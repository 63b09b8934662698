import BLERuntime
import BLEWire
import HCI

/// LE credit based connection-oriented channels on the signaling channel (Core 5.4, Vol 3,
/// Part A): LE Credit Based Connection Request and Response (4.22, 4.23), LE Flow Control
/// Credit (4.24), Disconnection Request and Response (4.6, 4.7), and the K-frames on the
/// channels' dynamic CIDs (3.4, 10.1; CreditBasedChannel.swift holds a channel's own state).
///
/// What is answered how:
/// - A request for an SPSM nobody serves here (`creditBasedServer` has none for it, or the
///   value is reserved): refused, "SPSM not supported" (0x0002).
/// - A request whose Source CID is not a dynamic CID (0x0040–0x007F): "invalid Source CID"
///   (0x0009); one that names a channel the peer already has on the link: "Source CID already
///   allocated" (0x000A); MTU or MPS out of range: "unacceptable parameters" (0x000B); every
///   dynamic CID taken here: "no resources" (0x0004). The server's own refusal (e.g. encryption
///   required) goes out as it gave it.
/// - K-frames with no credit left, longer than MPS, over MTU, or over their SDU Length, and
///   credits past 65535: the channel is disconnected (Disconnection Request) and the violation
///   reported.
/// - A Disconnection Request for a CID with no channel: Command Reject "Invalid CID in request";
///   one whose Source CID is not the channel's peer: discarded (4.6).
/// - Credits for a channel that does not exist: reported and dropped (an indication has no answer).
extension L2CAPLink {
    struct PendingOpen {
        let psm: UInt16
        let localCID: UInt16
        let parameters: L2CAPChannelParameters
        let timer: LoopTimer
        let completion: (Result<L2CAPCreditBasedChannel, L2CAPChannelError>) -> Void
    }

    struct PendingDisconnect {
        let localCID: UInt16
        let remoteCID: UInt16
        /// Nil when the channel was never handed out (a response we could not accept).
        let channel: L2CAPCreditBasedChannel?
        let reason: L2CAPChannelCloseReason
        let timer: LoopTimer
    }

    // MARK: Opening (initiator)

    /// Opens a credit based channel to the peer's `psm` (LE Credit Based Connection Request,
    /// 4.22): `parameters` are our end's MTU, MPS and the credits we grant. The completion gets
    /// the open channel, or why not: the peer's refusal (4.23), a Command Reject, the timeout.
    public func openCreditBasedChannel(psm: UInt16, parameters: L2CAPChannelParameters = .init(),
                                       completion: @escaping (Result<L2CAPCreditBasedChannel, L2CAPChannelError>) -> Void) {
        guard !isClosed else { return completion(.failure(.linkClosed(.connectionTerminatedByLocalHost))) }
        guard LEPSM.isValid(psm) else {
            return completion(.failure(.invalidRequest("SPSM 0x\(hex4(psm)) is reserved (0x0001–0x00FF are usable on LE)")))
        }
        guard parameters.areValid else {
            return completion(.failure(.invalidRequest("MTU \(parameters.mtu) / MPS \(parameters.mps) out of range (MTU ≥ 23, MPS 23–65533)")))
        }
        guard let cid = freeDynamicCID() else { return completion(.failure(.noFreeCID)) }
        let id = allocateIdentifier()
        let timer = loop.schedule(after: signalingTimeout) { [weak self] in
            guard let self, let pending = self.pendingOpens.removeValue(forKey: id) else { return }
            pending.completion(.failure(.timeout))
        }
        pendingOpens[id] = PendingOpen(psm: psm, localCID: cid, parameters: parameters, timer: timer, completion: completion)
        sendSignaling(.leCreditBasedConnectionRequest(identifier: id, LECreditBasedConnectionRequest(
            spsm: psm, sourceCID: cid, mtu: parameters.mtu, mps: parameters.mps, initialCredits: parameters.initialCredits)))
    }

    /// The lowest dynamic CID that no channel and no pending request of ours uses.
    func freeDynamicCID() -> UInt16? {
        let reserved = Set(pendingOpens.values.map(\.localCID)).union(pendingDisconnects.values.map(\.localCID))
        return L2CAPChannelID.leDynamicRange.first { channels[$0] == nil && !reserved.contains($0) }
    }

    func receiveCreditBasedConnectionResponse(_ payload: [UInt8]) {
        let id = payload[1]
        guard let pending = pendingOpens.removeValue(forKey: id) else {
            report(.signaling, .unsolicitedResponse, octets: payload,
                   "LE Credit Based Connection Response (identifier \(id)) with no request of ours outstanding; discarded")
            return
        }
        pending.timer.cancel()
        guard case let .leCreditBasedConnectionResponse(_, response)? = try? LESignalingPDU(decoding: payload) else {
            report(.signaling, .malformedCommand, octets: payload,
                   "LE Credit Based Connection Response with \(payload.count - 4) octets of data, not 10; discarded")
            return pending.completion(.failure(.invalidResponse("\(payload.count - 4) octets of data, not 10")))
        }
        guard response.result == .success else {
            return pending.completion(.failure(.refused(response.result)))
        }
        let remote = response.destinationCID
        guard L2CAPChannelID.leDynamicRange.contains(remote), !channels.values.contains(where: { $0.remoteCID == remote }) else {
            // No channel can be disconnected with this CID: the request simply failed.
            let detail = "Destination CID 0x\(hex4(remote)) is not a free dynamic CID (0x0040–0x007F)"
            report(.signaling, .invalidParameters, octets: payload, "LE Credit Based Connection Response: \(detail); discarded")
            return pending.completion(.failure(.invalidResponse(detail)))
        }
        guard response.mtu >= 23, (23...65533).contains(response.mps) else {
            let detail = "MTU \(response.mtu) / MPS \(response.mps) out of range (MTU ≥ 23, MPS 23–65533)"
            sendDisconnectionRequest(localCID: pending.localCID, remoteCID: remote, channel: nil, reason: .violation(.invalidParameters))
            report(.signaling, .invalidParameters, octets: payload, answer: .channelDisconnected(cid: pending.localCID),
                   "LE Credit Based Connection Response: \(detail)")
            return pending.completion(.failure(.invalidResponse(detail)))
        }
        let channel = L2CAPCreditBasedChannel(link: self, psm: pending.psm, localCID: pending.localCID, remoteCID: remote,
                                              local: pending.parameters, remoteMTU: Int(response.mtu), remoteMPS: Int(response.mps),
                                              remoteInitialCredits: Int(response.initialCredits), isInitiator: true)
        channels[pending.localCID] = channel
        pending.completion(.success(channel))
    }

    /// A Command Reject answering our LE Credit Based Connection Request or Disconnection Request.
    func receiveCreditBasedCommandReject(_ payload: [UInt8]) {
        let id = payload[1]
        let reason = payload.count >= 6 ? CommandRejectReason(rawValue: UInt16(payload[4]) | UInt16(payload[5]) << 8) : .commandNotUnderstood
        if let pending = pendingOpens.removeValue(forKey: id) {
            pending.timer.cancel()
            pending.completion(.failure(.rejected(reason)))
        } else if let pending = pendingDisconnects.removeValue(forKey: id) {
            // The peer no longer knows the channel: it is gone either way.
            pending.timer.cancel()
            finishDisconnect(pending)
        }
    }

    // MARK: Accepting (responder)

    func receiveCreditBasedConnectionRequest(_ payload: [UInt8]) {
        let id = payload[1]
        guard case let .leCreditBasedConnectionRequest(_, request)? = try? LESignalingPDU(decoding: payload) else {
            reject(id, .commandNotUnderstood, kind: .malformedCommand, octets: payload,
                   "LE Credit Based Connection Request with \(payload.count - 4) octets of data, not 10")
            return
        }
        func refuse(_ result: LECreditBasedConnectionResult, _ kind: ProtocolViolation.Kind? = nil, _ detail: String = "") {
            sendSignaling(.leCreditBasedConnectionResponse(identifier: id, .refused(result)))
            if let kind {
                report(.signaling, kind, octets: payload, answer: .channelRefused(result), "LE Credit Based Connection Request: \(detail)")
            }
        }
        let decision: L2CAPServerDecision
        if LEPSM.isValid(request.spsm), let server = creditBasedServer { decision = server(request.spsm) } else { decision = .refuse(.spsmNotSupported) }
        // Not a violation: asking for a service a device does not offer is how a client finds out.
        if case .refuse(.spsmNotSupported) = decision { return refuse(.spsmNotSupported) }
        let source = request.sourceCID
        guard L2CAPChannelID.leDynamicRange.contains(source) else {
            return refuse(.invalidSourceCID, .invalidSourceCID, "Source CID 0x\(hex4(source)) is not a dynamic CID (0x0040–0x007F)")
        }
        guard !channels.values.contains(where: { $0.remoteCID == source }) else {
            return refuse(.sourceCIDAlreadyAllocated, .sourceCIDInUse, "Source CID 0x\(hex4(source)) already names a channel of this link")
        }
        guard request.mtu >= 23, (23...65533).contains(request.mps) else {
            return refuse(.unacceptableParameters, .invalidParameters,
                          "MTU \(request.mtu) / MPS \(request.mps) out of range (MTU ≥ 23, MPS 23–65533)")
        }
        let local: L2CAPChannelParameters
        switch decision {
        case let .refuse(result): return refuse(result)
        case let .accept(parameters): local = parameters
        }
        guard let cid = freeDynamicCID() else { return refuse(.noResources) }
        let channel = L2CAPCreditBasedChannel(link: self, psm: request.spsm, localCID: cid, remoteCID: source, local: local,
                                              remoteMTU: Int(request.mtu), remoteMPS: Int(request.mps),
                                              remoteInitialCredits: Int(request.initialCredits), isInitiator: false)
        channels[cid] = channel
        sendSignaling(.leCreditBasedConnectionResponse(identifier: id, LECreditBasedConnectionResponse(
            destinationCID: cid, mtu: local.mtu, mps: local.mps, initialCredits: local.initialCredits, result: .success)))
        onCreditBasedChannel?(channel)
    }

    // MARK: Credits and K-frames

    func receiveFlowControlCredit(_ payload: [UInt8]) {
        let id = payload[1]
        guard case let .flowControlCreditIndication(_, cid, credits)? = try? LESignalingPDU(decoding: payload) else {
            reject(id, .commandNotUnderstood, kind: .malformedCommand, octets: payload,
                   "LE Flow Control Credit with \(payload.count - 4) octets of data, not 4")
            return
        }
        // 4.24: the CID is the sender's end, our channel's remote CID.
        guard let channel = channels.values.first(where: { $0.remoteCID == cid }) else {
            report(.signaling, .unknownChannel, octets: payload, "LE Flow Control Credit for CID 0x\(hex4(cid)), which has no channel; dropped")
            return
        }
        guard channel.isOpen else { return }
        if !channel.addSendCredits(Int(credits)) {
            violated(channel, .signaling, .creditOverflow, octets: payload,
                     "LE Flow Control Credit of \(credits) on top of \(channel.sendCredits) passes 65535")
        }
    }

    func receiveKFrame(_ payload: [UInt8], on channel: L2CAPCreditBasedChannel) {
        guard let problem = channel.receive(kFramePayload: payload) else { return }
        let octets = L2CAPBasicFrame(channel: channel.localCID, payload: payload).encoded
        switch problem {
        case .noCredits:
            violated(channel, .l2cap, .kFrameWithoutCredit, octets: octets, "K-frame on CID 0x\(hex4(channel.localCID)) with no credit left")
        case let .longerThanMPS(count):
            violated(channel, .l2cap, .kFrameExceedsMPS, octets: octets,
                     "K-frame of \(count) octets on CID 0x\(hex4(channel.localCID)), over its MPS \(channel.localMPS)")
        case .missingSDULength:
            violated(channel, .l2cap, .sduLengthMismatch, octets: octets,
                     "first K-frame of an SDU on CID 0x\(hex4(channel.localCID)) too short for its SDU Length")
        case let .sduLongerThanMTU(length):
            violated(channel, .l2cap, .sduExceedsMTU, octets: octets,
                     "SDU Length \(length) on CID 0x\(hex4(channel.localCID)), over its MTU \(channel.localMTU)")
        case let .overrunsSDULength(expected, received):
            violated(channel, .l2cap, .sduLengthMismatch, octets: octets,
                     "K-frames on CID 0x\(hex4(channel.localCID)) carry \(received) octets of an SDU of \(expected)")
        }
    }

    /// Sends LE Flow Control Credit for `channel` (4.24: the CID is our end).
    func sendCredits(_ credits: Int, on channel: L2CAPCreditBasedChannel) {
        sendSignaling(.flowControlCreditIndication(identifier: allocateIdentifier(), cid: channel.localCID, credits: UInt16(credits)))
    }

    /// The peer broke the channel's rules: disconnect it and report why.
    private func violated(_ channel: L2CAPCreditBasedChannel, _ layer: ProtocolViolation.Layer, _ kind: ProtocolViolation.Kind,
                          octets: [UInt8], _ detail: String) {
        disconnectChannel(channel, reason: .violation(kind))
        report(layer, kind, octets: octets, answer: .channelDisconnected(cid: channel.localCID), detail)
    }

    // MARK: Disconnecting

    func disconnectChannel(_ channel: L2CAPCreditBasedChannel, reason: L2CAPChannelCloseReason = .local) {
        guard channel.state == .open else { return }
        channel.state = .disconnecting
        sendDisconnectionRequest(localCID: channel.localCID, remoteCID: channel.remoteCID, channel: channel, reason: reason)
    }

    /// 4.6: Destination CID is the peer's end, Source CID ours. The channel stays known (its CID
    /// taken) until the response, or the RTX timeout.
    private func sendDisconnectionRequest(localCID: UInt16, remoteCID: UInt16, channel: L2CAPCreditBasedChannel?,
                                          reason: L2CAPChannelCloseReason) {
        let id = allocateIdentifier()
        let timer = loop.schedule(after: signalingTimeout) { [weak self] in
            guard let self, let pending = self.pendingDisconnects.removeValue(forKey: id) else { return }
            self.finishDisconnect(pending)
        }
        pendingDisconnects[id] = PendingDisconnect(localCID: localCID, remoteCID: remoteCID, channel: channel, reason: reason, timer: timer)
        sendSignaling(.disconnectionRequest(identifier: id, destinationCID: remoteCID, sourceCID: localCID))
    }

    private func finishDisconnect(_ pending: PendingDisconnect) {
        if let channel = pending.channel {
            if channels[pending.localCID] === channel { channels[pending.localCID] = nil }
            channel.closed(pending.reason)
        }
    }

    func receiveDisconnectionRequest(_ payload: [UInt8]) {
        let id = payload[1]
        let destination = UInt16(payload[4]) | UInt16(payload[5]) << 8
        let source = UInt16(payload[6]) | UInt16(payload[7]) << 8
        guard let channel = channels[destination] else {
            // 4.1: the data are the rejected request's destination CID, then its source CID.
            reject(id, .invalidCID, data: Array(payload[4..<8]), kind: .unknownChannel, octets: payload,
                   "Disconnection Request for CID 0x\(hex4(destination)), which has no channel")
            return
        }
        guard channel.remoteCID == source else {
            // 4.6: "If the receiver finds a DCID match but the SCID fails to find the same match,
            // the request should be silently discarded."
            report(.signaling, .unknownChannel, octets: payload,
                   "Disconnection Request for CID 0x\(hex4(destination)) from Source CID 0x\(hex4(source)), not its peer 0x\(hex4(channel.remoteCID)); discarded")
            return
        }
        sendSignaling(.disconnectionResponse(identifier: id, destinationCID: destination, sourceCID: source))
        channels[destination] = nil
        // Our own request may have crossed this one: the channel is closed now, by the peer.
        for (key, pending) in pendingDisconnects where pending.localCID == destination {
            pending.timer.cancel()
            pendingDisconnects[key] = nil
        }
        channel.closed(.peer)
    }

    func receiveDisconnectionResponse(_ payload: [UInt8]) {
        let id = payload[1]
        guard let pending = pendingDisconnects[id] else {
            report(.signaling, .unsolicitedResponse, octets: payload,
                   "Disconnection Response (identifier \(id)) with no request of ours outstanding; discarded")
            return
        }
        guard case let .disconnectionResponse(_, destination, source)? = try? LESignalingPDU(decoding: payload),
              destination == pending.remoteCID, source == pending.localCID else {
            report(.signaling, .malformedCommand, octets: payload,
                   "Disconnection Response (identifier \(id)) that does not echo our request's CIDs "
                   + "(0x\(hex4(pending.remoteCID)), 0x\(hex4(pending.localCID))); discarded")
            return
        }
        pendingDisconnects[id] = nil
        pending.timer.cancel()
        finishDisconnect(pending)
    }

    /// The link ended: every channel closes, every pending open fails.
    func closeCreditBasedChannels(reason: HCIStatus) {
        let opens = pendingOpens.values.sorted { $0.localCID < $1.localCID }
        pendingOpens = [:]
        for pending in opens {
            pending.timer.cancel()
            pending.completion(.failure(.linkClosed(reason)))
        }
        for pending in pendingDisconnects.values { pending.timer.cancel() }
        pendingDisconnects = [:]
        let open = channels.values.sorted { $0.localCID < $1.localCID }
        channels = [:]
        for channel in open { channel.closed(.linkClosed(reason)) }
    }
}

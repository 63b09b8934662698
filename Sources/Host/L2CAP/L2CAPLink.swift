import BLERuntime
import BLEWire
import HCI

/// L2CAP on one LE-U logical link: the basic frame (Core 5.4, Vol 3, Part A, 3.1)
///
///     | Length (2) | Channel ID (2) | Information payload (Length) |
///
/// and the three LE fixed channels: ATT (0x0004) passed up, the LE signaling channel (0x0005)
/// answered here, and SMP (0x0006), where pairing is refused ("Pairing Not Supported").
public final class L2CAPLink {
    public let handle: UInt16
    public let role: ConnectionRole
    private let driver: HCIDriver
    private var loop: EventLoop { driver.loop }

    /// Each ATT PDU received on CID 0x0004.
    public var onATT: (([UInt8]) -> Void)?
    /// A central was asked by its peripheral for new connection parameters and accepted them:
    /// the owner should now issue LE Connection Update (Vol 3 Part A 4.20).
    public var onConnectionParametersAccepted: ((ConnectionParameterUpdate) -> Void)?
    /// Decides whether a central accepts a peripheral's request; default: accept valid parameters.
    public var acceptsConnectionParameters: (ConnectionParameterUpdate) -> Bool = { p in
        connectionParametersAreValid(intervalMin: p.intervalMin, intervalMax: p.intervalMax, latency: p.latency, timeout: p.timeout)
    }
    /// Anything received that was malformed or refused (for logs and tests).
    public var onProtocolNote: ((String) -> Void)?
    /// SMP Pairing Failed reason codes this side sent or received (observable refusal of pairing).
    public private(set) var smpRefusals: [(sent: Bool, reason: UInt8)] = []

    /// The signaling MTU this side accepts (MTU_sig, at least 23 on LE: 4.2 / 4.20).
    public var signalingMTU = 23
    /// Response timeout for our signaling requests (the RTX timer, 6.2.1).
    public var signalingTimeout: TimeSpan = .seconds(30)

    private var nextIdentifier: UInt8 = 1
    private var pendingUpdate: (identifier: UInt8, timer: LoopTimer, completion: (Result<Bool, HostError>) -> Void)?
    public private(set) var isClosed = false

    public init(handle: UInt16, role: ConnectionRole, driver: HCIDriver) {
        self.handle = handle
        self.role = role
        self.driver = driver
    }

    // MARK: Sending

    /// Sends `payload` on fixed channel `cid` in one basic frame.
    public func send(cid: UInt16, payload: [UInt8]) {
        guard !isClosed else { return }
        var w = ByteWriter(capacity: 4 + payload.count)
        w.writeUInt16LE(UInt16(truncatingIfNeeded: payload.count))
        w.writeUInt16LE(cid)
        w.write(bytes: payload)
        driver.sendL2CAP(handle: handle, pdu: w.bytes)
    }

    public func sendATT(_ pdu: [UInt8]) { send(cid: L2CAPChannelID.att, payload: pdu) }

    /// Fragments of this link still waiting in the host for controller buffers.
    public var queuedFragments: Int { driver.queuedFragments(for: handle) }

    // MARK: Receiving

    /// One whole L2CAP PDU from the driver's reassembly.
    public func receive(pdu: [UInt8]) {
        guard !isClosed else { return }
        var r = ByteReader(pdu)
        guard let length = try? r.readUInt16LE(), let cid = try? r.readUInt16LE(), Int(length) == r.remaining else {
            onProtocolNote?("L2CAP basic frame with an inconsistent length: [\(pdu.prefix(16).spacedHex)]")
            return
        }
        let payload = r.readRemaining()
        switch cid {
        case L2CAPChannelID.att: onATT?(payload)
        case L2CAPChannelID.leSignaling: receiveSignaling(payload)
        case L2CAPChannelID.smp: receiveSMP(payload)
        default:
            // Unknown fixed channels are silently discarded (Vol 3 Part A 2.1).
            onProtocolNote?("L2CAP frame on unsupported CID 0x\(String(cid, radix: 16)) dropped")
        }
    }

    /// The link is gone: pending signaling fails, nothing more is sent.
    public func close(reason: HCIStatus) {
        guard !isClosed else { return }
        isClosed = true
        if let pending = pendingUpdate {
            pendingUpdate = nil
            pending.timer.cancel()
            pending.completion(.failure(.disconnected(reason)))
        }
    }

    // MARK: LE signaling (Vol 3 Part A 4)

    private func receiveSignaling(_ payload: [UInt8]) {
        if payload.count > signalingMTU {
            // 4.1: Signaling MTU exceeded, data = our MTU_sig.
            let id = payload.count > 1 ? payload[1] : 0
            // Identifier 0x00 may not be used in any command, a Command Reject included (4).
            guard id != 0 else {
                onProtocolNote?("oversized signaling command with identifier 0 ignored")
                return
            }
            sendSignaling(.commandReject(identifier: id, reason: .signalingMTUExceeded,
                                         data: [UInt8(truncatingIfNeeded: signalingMTU), UInt8(truncatingIfNeeded: signalingMTU >> 8)]))
            return
        }
        let command: LESignalingPDU
        do {
            command = try LESignalingPDU(decoding: payload)
        } catch {
            onProtocolNote?("malformed signaling command [\(payload.spacedHex)]: \(error)")
            if payload.count >= 2, payload[1] != 0 {
                sendSignaling(.commandReject(identifier: payload[1], reason: .commandNotUnderstood, data: []))
            }
            return
        }
        // Identifier 0x00 is never valid (4); such commands are ignored.
        guard command.identifier != 0 else {
            onProtocolNote?("signaling command with identifier 0 ignored")
            return
        }
        switch command {
        case let .connectionParameterUpdateRequest(id, params):
            guard role == .central else {
                // 4.20: only a central handles this request; a peripheral rejects the command.
                sendSignaling(.commandReject(identifier: id, reason: .commandNotUnderstood, data: []))
                return
            }
            let accepted = acceptsConnectionParameters(params)
            sendSignaling(.connectionParameterUpdateResponse(identifier: id, accepted: accepted))
            if accepted { onConnectionParametersAccepted?(params) }
        case let .connectionParameterUpdateResponse(id, accepted):
            finishUpdate(identifier: id, result: .success(accepted))
        case let .commandReject(id, reason, _):
            onProtocolNote?("peer rejected signaling command \(id): reason 0x\(String(reason.rawValue, radix: 16))")
            finishUpdate(identifier: id, result: .failure(.invalidState("connection parameter update rejected by the peer (Command Reject)")))
        case let .other(code, id, _):
            onProtocolNote?("signaling code 0x\(String(code, radix: 16)) not supported: Command Reject")
            sendSignaling(.commandReject(identifier: id, reason: .commandNotUnderstood, data: []))
        }
    }

    private func sendSignaling(_ pdu: LESignalingPDU) {
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
        let id = nextIdentifier
        nextIdentifier = nextIdentifier == 0xFF ? 1 : nextIdentifier + 1
        let timer = loop.schedule(after: signalingTimeout) { [weak self] in
            self?.finishUpdate(identifier: id, result: .failure(.timeout("Connection Parameter Update Request")))
        }
        pendingUpdate = (id, timer, completion)
        sendSignaling(.connectionParameterUpdateRequest(identifier: id, params))
    }

    private func finishUpdate(identifier: UInt8, result: Result<Bool, HostError>) {
        guard let pending = pendingUpdate, pending.identifier == identifier else { return }
        pendingUpdate = nil
        pending.timer.cancel()
        pending.completion(result)
    }

    // MARK: SMP (Vol 3 Part H 3)

    /// Pairing is not supported yet: a Pairing Request to a peripheral, or a Security Request to
    /// a central, is answered with Pairing Failed, reason Pairing Not Supported (0x05) (Part H
    /// 3.5.5). The same requests arriving at the wrong role get Command Not Supported (0x07).
    private func receiveSMP(_ payload: [UInt8]) {
        guard let code = payload.first else { return }
        switch code {
        case 0x01, 0x0B: // Pairing Request (to a peripheral), Security Request (to a central)
            let inRole = (code == 0x01) == (role == .peripheral)
            let reason: UInt8 = inRole ? 0x05 : 0x07
            smpRefusals.append((sent: true, reason: reason))
            send(cid: L2CAPChannelID.smp, payload: [0x05, reason])
        case 0x05:
            smpRefusals.append((sent: false, reason: payload.count > 1 ? payload[1] : 0))
        default:
            // Other SMP commands arrive only inside a pairing we never started; ignore them.
            onProtocolNote?("SMP code 0x\(String(code, radix: 16)) ignored (pairing not supported)")
        }
    }
}

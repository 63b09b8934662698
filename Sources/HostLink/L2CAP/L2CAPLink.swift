import BLERuntime
import BLEWire
import HCI

/// L2CAP on one LE-U logical link: the basic frame (Core 5.4, Vol 3, Part A, 3.1)
///
///     | Length (2) | Channel ID (2) | Information payload (Length) |
///
/// the three LE fixed channels: ATT (0x0004) passed up, the LE signaling channel (0x0005)
/// answered here (L2CAPLink+Signaling.swift), and SMP (0x0006), where pairing is refused
/// ("Pairing Not Supported", L2CAPLink+SMP.swift) unless the host pairs; and LE credit based
/// channels on dynamic CIDs (L2CAPLink+CreditBased.swift, CreditBasedChannel.swift).
///
/// Everything the peer sends that breaks a rule is reported once through `onViolation`, typed
/// (`ProtocolViolation`: layer, kind, octets and what was answered), and answered as the spec
/// says: Command Reject on the signaling channel, Pairing Failed on SMP, nothing for frames on
/// channels that do not exist.
public final class L2CAPLink {
    public let handle: UInt16
    public let role: ConnectionRole
    private let driver: HCIDriver
    var loop: EventLoop { driver.loop }

    /// Each ATT PDU received on CID 0x0004.
    public var onATT: (([UInt8]) -> Void)?
    /// A central was asked by its peripheral for new connection parameters and accepted them:
    /// the owner should now issue LE Connection Update (Vol 3 Part A 4.20).
    public var onConnectionParametersAccepted: ((ConnectionParameterUpdate) -> Void)?
    /// Decides whether a central accepts a peripheral's valid request; default: accept. Invalid
    /// parameters (`connectionParametersAreValid`) are rejected before this is asked.
    public var acceptsConnectionParameters: (ConnectionParameterUpdate) -> Bool = { _ in true }
    /// Each protocol violation on this link, once, after the answer (if any) was queued.
    public var onViolation: ((ProtocolViolation) -> Void)?
    /// The host's Security Manager, when it pairs: each SMP PDU received goes to it first, and
    /// what it does not take (returns false) is answered here as by a host that does not pair.
    public var onSMP: (([UInt8]) -> Bool)?
    /// SMP Pairing Failed reason codes this side sent or received (observable refusal of pairing).
    public internal(set) var smpRefusals: [(sent: Bool, reason: UInt8)] = []

    /// The signaling MTU this side accepts (MTU_sig, at least 23 on LE: 4.2 / 4.20).
    public var signalingMTU = 23
    /// Response timeout for our signaling requests (the RTX timer, 6.2.1).
    public var signalingTimeout: TimeSpan = .seconds(30)

    /// Decides on a peer's LE Credit Based Connection Request for an SPSM (4.22): our end's
    /// parameters to accept it, or the refusal's result. Nil (the default), or an SPSM it does not
    /// serve: "SPSM not supported" (0x0002). Set by the host from its registered SPSMs.
    public var creditBasedServer: ((_ spsm: UInt16) -> L2CAPServerDecision)?
    /// A channel the peer opened and we accepted (after our response was queued).
    public var onCreditBasedChannel: ((L2CAPCreditBasedChannel) -> Void)?

    /// Open credit based channels by our CID (L2CAPLink+CreditBased.swift).
    public internal(set) var channels: [UInt16: L2CAPCreditBasedChannel] = [:]
    var pendingOpens: [UInt8: PendingOpen] = [:]
    var pendingDisconnects: [UInt8: PendingDisconnect] = [:]

    var nextIdentifier: UInt8 = 1
    var pendingUpdate: (identifier: UInt8, timer: LoopTimer, completion: (Result<Bool, HostError>) -> Void)?
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
        driver.sendL2CAP(handle: handle, channel: cid, payload: payload)
    }

    public func sendATT(_ pdu: [UInt8]) { send(cid: L2CAPChannelID.att, payload: pdu) }
    public func sendSMP(_ pdu: [UInt8]) { send(cid: L2CAPChannelID.smp, payload: pdu) }

    /// Fragments of this link still waiting in the host for controller buffers.
    public var queuedFragments: Int { driver.queuedFragments(for: handle) }

    // MARK: Receiving

    /// One L2CAP PDU as octets (basic header included); its Length must match the payload.
    public func receive(pdu: [UInt8]) {
        guard !isClosed else { return }
        guard let frame = try? L2CAPBasicFrame(decoding: pdu) else {
            report(.l2cap, .frameLengthMismatch, octets: pdu,
                   "L2CAP basic frame whose Length disagrees with its payload (\(max(0, pdu.count - 4)) octets); dropped")
            return
        }
        receive(frame: frame)
    }

    /// One whole basic frame from the driver's reassembly.
    public func receive(frame: L2CAPBasicFrame) {
        guard !isClosed else { return }
        let cid = frame.channel, payload = frame.payload
        switch cid {
        case L2CAPChannelID.att: onATT?(payload)
        case L2CAPChannelID.leSignaling: receiveSignaling(payload)
        case L2CAPChannelID.smp: receiveSMP(payload)
        case L2CAPChannelID.leDynamicRange where channels[cid] != nil:
            receiveKFrame(payload, on: channels[cid]!)
        default:
            // 2.1: no channel has this CID on LE-U (0x0000 is the null identifier, 0x0001–0x0003
            // are BR/EDR's, the rest are reserved or dynamic ones never opened); a basic frame
            // has nobody to answer it, so it is discarded.
            report(.l2cap, .unknownChannel, octets: frame.encoded, "L2CAP frame on CID 0x\(hex4(cid)), which has no channel; dropped")
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
        closeCreditBasedChannels(reason: reason)
    }

    /// Reports a violation on this link (after its answer, if any, was queued).
    func report(_ layer: ProtocolViolation.Layer, _ kind: ProtocolViolation.Kind, octets: [UInt8],
                answer: ProtocolViolation.Answer = .none, _ detail: String) {
        onViolation?(ProtocolViolation(layer: layer, kind: kind, handle: handle, detail: detail,
                                       octets: Array(octets.prefix(ProtocolViolation.octetLimit)), answer: answer))
    }
}

import BLERuntime
import BLEWire
import HCI

/// One LE credit based connection-oriented channel (an "L2CAP CoC", Core 5.4, Vol 3, Part A,
/// 3.4 and 10.1) on an `L2CAPLink`: SDUs go out segmented into K-frames, one credit each, and
/// come in reassembled.
///
/// A K-frame (3.4.3) is a basic frame on the channel's CID whose payload, in the first K-frame of
/// an SDU only, begins with the SDU's length:
///
///     first:  | Length (2) | CID (2) | L2CAP SDU Length (2) | Information payload |
///     others: | Length (2) | CID (2) | Information payload |
///
/// The payload a K-frame carries — the SDU Length field included — is at most the receiver's
/// MPS, an SDU at most its MTU. Each K-frame costs its sender one credit; the receiver grants
/// more with LE Flow Control Credit (4.24). What breaks these rules ends the channel (3.4.3,
/// 10.1): a K-frame with no credit left, one longer than MPS, an SDU Length over MTU, K-frames
/// that carry more than their SDU Length, and credits that would push the count past 65535.
///
/// Created by `L2CAPLink.openCreditBasedChannel` (initiator) or by the link when it accepts a
/// peer's request (`L2CAPLink.creditBasedServer`); everything happens on the link's loop.
public final class L2CAPCreditBasedChannel {
    public enum State: Equatable, Sendable {
        /// Both ends configured: data flows.
        case open
        /// Our Disconnection Request is out (4.6); incoming data is discarded meanwhile.
        case disconnecting
        case closed(L2CAPChannelCloseReason)
    }

    /// The SPSM the channel was opened on.
    public let psm: UInt16
    /// Our end (the CID the peer's K-frames carry) and the peer's (the CID ours carry).
    public let localCID: UInt16
    public let remoteCID: UInt16
    /// The largest SDU and K-frame payload we take (what we told the peer).
    public let localMTU: Int
    public let localMPS: Int
    /// The largest SDU and K-frame payload the peer takes.
    public let remoteMTU: Int
    public let remoteMPS: Int
    /// Whether we sent the LE Credit Based Connection Request.
    public let isInitiator: Bool
    public internal(set) var state: State = .open

    /// K-frames we may still send (credits the peer gave us).
    public internal(set) var sendCredits: Int
    /// K-frames the peer may still send us (credits we gave and it has not used).
    public internal(set) var peerCredits: Int
    /// How many credits the peer holds when every SDU we received was consumed: what we grant
    /// at the start and top it up to (the receive window, in K-frames).
    public let receiveWindow: Int

    /// Each SDU received whole, in order.
    public var onSDU: (([UInt8]) -> Void)?
    /// The channel closed (once): the peer disconnected it, we did, it broke a rule, the link ended.
    public var onClose: ((L2CAPChannelCloseReason) -> Void)?
    /// A K-frame went to the link (credits allowed it): the outbound queue shrank. A writer that
    /// held back because `queuedOctets` was high waits for this.
    public var onSendProgress: (() -> Void)?

    /// False: the credits an SDU cost are returned to the peer only when the owner calls
    /// `releaseDelivered(_:)` (e.g. once an app read its octets). True (default): as soon as the
    /// SDU is handed to `onSDU`.
    public var releasesOnDelivery = true

    /// Counters, for tests and benchmarks.
    public private(set) var sentKFrames = 0
    public private(set) var receivedKFrames = 0
    public private(set) var sentSDUs = 0
    public private(set) var receivedSDUs = 0
    /// LE Flow Control Credit indications we sent, and the credits they carried.
    public private(set) var creditIndicationsSent = 0
    public private(set) var creditsGranted = 0

    weak var link: L2CAPLink?

    // Outbound: whole SDUs waiting, the one being segmented first.
    private var outbound = FIFO<[UInt8]>()
    private var sendingOffset = 0
    /// Octets of SDUs not yet handed to the link.
    public private(set) var queuedOctets = 0

    // Inbound: the SDU being reassembled.
    private var reassembly: [UInt8] = []
    private var expectedSDULength: Int?
    private var framesOfCurrentSDU = 0
    /// K-frames of delivered SDUs whose credits wait for `releaseDelivered` (oldest first).
    private var heldFrames = FIFO<Int>()
    private var heldFrameCount = 0

    init(link: L2CAPLink, psm: UInt16, localCID: UInt16, remoteCID: UInt16, local: L2CAPChannelParameters,
         remoteMTU: Int, remoteMPS: Int, remoteInitialCredits: Int, isInitiator: Bool) {
        self.link = link
        self.psm = psm
        self.localCID = localCID
        self.remoteCID = remoteCID
        localMTU = Int(local.mtu)
        localMPS = Int(local.mps)
        receiveWindow = Int(local.initialCredits)
        peerCredits = Int(local.initialCredits)
        self.remoteMTU = remoteMTU
        self.remoteMPS = remoteMPS
        sendCredits = remoteInitialCredits
        self.isInitiator = isInitiator
    }

    public var isOpen: Bool { state == .open }

    // MARK: Sending

    /// Queues one SDU (at most the peer's MTU octets) and sends its K-frames as credits allow.
    public func send(_ sdu: [UInt8]) throws(L2CAPChannelError) {
        guard state == .open else { throw .notOpen }
        guard sdu.count <= remoteMTU else { throw .sduTooLong(sdu.count, mtu: remoteMTU) }
        outbound.append(sdu)
        queuedOctets += sdu.count
        pump()
    }

    /// Whether every SDU queued has gone to the link in K-frames.
    public var isSendQueueEmpty: Bool { outbound.isEmpty }

    func pump() {
        guard state == .open, let link else { return }
        var sent = false
        while sendCredits > 0, let sdu = outbound.first {
            // 3.4.3: the first K-frame carries the SDU Length; its payload counts towards MPS.
            var w: ByteWriter
            if sendingOffset == 0 {
                let take = min(sdu.count, remoteMPS - 2)
                w = ByteWriter(capacity: 2 + take)
                w.writeUInt16LE(UInt16(sdu.count))
                w.write(bytes: sdu[0..<take])
                sendingOffset = take
            } else {
                let take = min(sdu.count - sendingOffset, remoteMPS)
                w = ByteWriter(capacity: take)
                w.write(bytes: sdu[sendingOffset..<(sendingOffset + take)])
                sendingOffset += take
            }
            sendCredits -= 1
            sentKFrames += 1
            link.send(cid: remoteCID, payload: w.bytes)
            sent = true
            if sendingOffset >= sdu.count {
                queuedOctets -= sdu.count
                _ = outbound.popFirst()
                sendingOffset = 0
                sentSDUs += 1
            }
        }
        if sent { onSendProgress?() }
    }

    /// Octets still to send: the unsent part of the SDU in progress and the SDUs behind it.
    public var unsentOctets: Int { queuedOctets - sendingOffset }

    // MARK: Receiving

    /// One K-frame's payload (the basic header removed). Returns the rule it broke, if any; the
    /// link then disconnects the channel.
    func receive(kFramePayload payload: [UInt8]) -> KFrameViolation? {
        guard state == .open else { return nil }   // 4.6: discarded while disconnecting
        // 10.1: "If a K-frame is received when the credit count is zero ... disconnect."
        guard peerCredits > 0 else { return .noCredits }
        peerCredits -= 1
        receivedKFrames += 1
        // 3.4.3: a K-frame whose payload exceeds the receiver's MPS ends the channel.
        guard payload.count <= localMPS else { return .longerThanMPS(payload.count) }
        var data = payload[...]
        if expectedSDULength == nil {
            guard payload.count >= 2 else { return .missingSDULength }
            let length = Int(payload[0]) | Int(payload[1]) << 8
            guard length <= localMTU else { return .sduLongerThanMTU(length) }
            expectedSDULength = length
            data = payload[2...]
            reassembly.reserveCapacity(length)
        }
        let expected = expectedSDULength!
        guard reassembly.count + data.count <= expected else {
            return .overrunsSDULength(expected: expected, received: reassembly.count + data.count)
        }
        reassembly.append(contentsOf: data)
        framesOfCurrentSDU += 1
        if reassembly.count == expected {
            let sdu = reassembly
            let frames = framesOfCurrentSDU
            reassembly = []
            expectedSDULength = nil
            framesOfCurrentSDU = 0
            receivedSDUs += 1
            if releasesOnDelivery {
                onSDU?(sdu)
                returnCredits()
            } else {
                heldFrames.append(frames)
                heldFrameCount += frames
                onSDU?(sdu)
            }
        } else {
            // The SDU's own K-frames are not held: an SDU may need more of them than the
            // receive window, and holding them would stall its sender for good.
            returnCredits()
        }
        return nil
    }

    /// The owner consumed the `count` oldest SDUs delivered (only when `releasesOnDelivery` is
    /// false): their credits go back to the peer.
    public func releaseDelivered(_ count: Int = 1) {
        var left = count
        while left > 0, let frames = heldFrames.popFirst() {
            heldFrameCount -= frames
            left -= 1
        }
        returnCredits()
    }

    /// Tops the peer's credits up to the window once half of it (at least one) is missing, in
    /// one LE Flow Control Credit (4.24): fewer indications than one per K-frame.
    private func returnCredits() {
        guard state == .open, let link else { return }
        let missing = receiveWindow - peerCredits - heldFrameCount
        guard missing > 0, missing >= max(1, receiveWindow / 2) else { return }
        peerCredits += missing
        creditIndicationsSent += 1
        creditsGranted += missing
        link.sendCredits(missing, on: self)
    }

    /// 4.24: the peer granted `credits`. Returns false when the count would pass 65535.
    func addSendCredits(_ credits: Int) -> Bool {
        guard sendCredits + credits <= 0xFFFF else { return false }
        sendCredits += credits
        pump()
        return true
    }

    // MARK: Closing

    /// Disconnects the channel (Disconnection Request, 4.6); `onClose` follows the peer's response
    /// (or the signaling timeout). K-frames not yet sent are dropped.
    public func disconnect() {
        guard state == .open, let link else { return }
        link.disconnectChannel(self)
    }

    func closed(_ reason: L2CAPChannelCloseReason) {
        if case .closed = state { return }
        state = .closed(reason)
        outbound = FIFO()
        queuedOctets = 0
        sendingOffset = 0
        reassembly = []
        onClose?(reason)
    }
}

/// What a channel end takes: MTU (23–65535), MPS (23–65533) and the credits it grants at once.
public struct L2CAPChannelParameters: Hashable, Sendable {
    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16

    public init(mtu: UInt16 = 2048, mps: UInt16 = 247, initialCredits: UInt16 = 16) {
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
    }

    /// 4.22: MTU at least 23, MPS 23–65533. And at least one initial credit: the specification
    /// allows 0, but this host grants credits only to top its window up to `initialCredits`.
    public var areValid: Bool { mtu >= 23 && (23...65533).contains(mps) && initialCredits >= 1 }
}

/// A server's answer to a peer's LE Credit Based Connection Request for its SPSM (4.22).
public enum L2CAPServerDecision: Equatable, Sendable {
    /// Accept, with our end's parameters.
    case accept(L2CAPChannelParameters)
    /// Refuse with this result (4.23): `.spsmNotSupported` for an SPSM not served, or a security
    /// result (`.insufficientEncryption`, `.insufficientAuthentication`).
    case refuse(LECreditBasedConnectionResult)
}

/// Why a channel closed.
public enum L2CAPChannelCloseReason: Equatable, Sendable, CustomStringConvertible {
    /// We disconnected it and the peer answered (or did not, in time).
    case local
    /// The peer sent a Disconnection Request.
    case peer
    /// The peer broke a rule of the channel and we disconnected it (the violation was reported).
    case violation(ProtocolViolation.Kind)
    /// The LE link ended.
    case linkClosed(HCIStatus)

    public var description: String {
        switch self {
        case .local: return "disconnected by this side"
        case .peer: return "disconnected by the peer"
        case let .violation(kind): return "disconnected: the peer broke the channel's rules (\(kind))"
        case let .linkClosed(status): return "the link ended (\(status))"
        }
    }
}

/// Why a channel could not be opened or used.
public enum L2CAPChannelError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer refused the request with this result (4.23).
    case refused(LECreditBasedConnectionResult)
    /// The peer answered with Command Reject (it has no credit based channels).
    case rejected(CommandRejectReason)
    /// No answer within the signaling timeout (RTX, 6.2.1).
    case timeout
    /// The peer's response broke the rules (invalid CID, MTU or MPS); the violation was reported.
    case invalidResponse(String)
    /// Our own request would be invalid: an SPSM outside 0x0001–0x00FF, parameters out of range.
    case invalidRequest(String)
    /// Every dynamic CID (0x0040–0x007F) of the link is in use.
    case noFreeCID
    /// An SDU longer than the peer's MTU.
    case sduTooLong(Int, mtu: Int)
    /// The channel is disconnecting or closed.
    case notOpen
    /// The link ended.
    case linkClosed(HCIStatus)

    public var description: String {
        switch self {
        case let .refused(result): return "the peer refused the channel: \(result)"
        case let .rejected(reason): return "the peer rejected the request (Command Reject \(reason))"
        case .timeout: return "no LE Credit Based Connection Response in time"
        case let .invalidResponse(detail): return "invalid LE Credit Based Connection Response: \(detail)"
        case let .invalidRequest(detail): return detail
        case .noFreeCID: return "no free dynamic CID on the link"
        case let .sduTooLong(length, mtu): return "an SDU of \(length) octets is longer than the peer's MTU \(mtu)"
        case .notOpen: return "the channel is not open"
        case let .linkClosed(status): return "the link ended (\(status))"
        }
    }
}

/// A rule of 3.4.3 / 10.1 that an incoming K-frame broke.
enum KFrameViolation: Equatable {
    case noCredits
    case longerThanMPS(Int)
    case missingSDULength
    case sduLongerThanMTU(Int)
    case overrunsSDULength(expected: Int, received: Int)
}

import BLEWire
import HCI

/// Something a peer (or the controller) sent that broke the protocol, as the host reports it:
/// the layer that found it, what was wrong, the octets, and what the host answered — what the
/// specification says to answer (Command Reject on the LE signaling channel, Vol 3 Part A 4.1;
/// Pairing Failed on SMP, Vol 3 Part H 3.5.5; an ATT Error Response, Vol 3 Part F 3.4.1.1) or
/// nothing (the PDU was dropped, as the spec says for frames on unknown channels, reserved SMP
/// codes and unsolicited responses).
///
/// One type for every layer, so a log, a timeline or a test harness reads them all the same way:
/// `HCIDriver` and `L2CAPLink` raise the `hci`, `l2cap`, `signaling` and `smp` ones; layers
/// that cannot import this module (ATT) have their own event, which the host wraps into this one
/// with its layer and a kind of their own (`Kind` is open: any layer adds its constants).
public struct ProtocolViolation: Equatable, Sendable, CustomStringConvertible {
    /// The layer whose rules were broken.
    public enum Layer: String, Sendable, CaseIterable {
        /// HCI packets from the controller (Vol 4 Part E 5.4).
        case hci
        /// Basic frames and their recombination from ACL fragments (Vol 3 Part A 3.1, 7.2).
        case l2cap
        /// The LE signaling channel, CID 0x0005 (Vol 3 Part A 4).
        case signaling
        /// The Security Manager Protocol, CID 0x0006 (Vol 3 Part H 3).
        case smp
        /// The Attribute Protocol, CID 0x0004 (Vol 3 Part F 3).
        case att
        /// GATT above ATT (Vol 3 Part G): e.g. a notification for a handle never discovered.
        case gatt
        /// GAP data (Vol 3 Part C 11): advertising data that does not parse.
        case gap
    }

    /// What was wrong, in a few stable words (`unknown-channel`, `mtu-exceeded`): the same text
    /// in logs, timelines and tests. Open, so layers above add their own.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
    }

    /// What the host sent back because of it.
    public enum Answer: Equatable, Sendable, CustomStringConvertible {
        /// Nothing: the PDU was dropped or ignored.
        case none
        /// An LE signaling Command Reject (Vol 3 Part A 4.1) with this reason and data.
        case commandReject(CommandRejectReason, data: [UInt8])
        /// A Connection Parameter Update Response with result 0x0001, rejected (Vol 3 Part A 4.21).
        case connectionParametersRejected
        /// SMP Pairing Failed (Vol 3 Part H 3.5.5) with this reason.
        case pairingFailed(SMPPairingFailedReason)
        /// An ATT Error Response (Vol 3 Part F 3.4.1.1) to the request with `opcode`.
        case errorResponse(opcode: UInt8, code: UInt8)
        /// The host ended the link (HCI Disconnect, Vol 4 Part E 7.1.6) with this reason: what
        /// real stacks do about some violations (a pipelined ATT request, Vol 3 Part F 3.3.2).
        case disconnect(HCIStatus)
        /// An LE Credit Based Connection Response refusing the channel (Vol 3 Part A 4.23).
        case channelRefused(LECreditBasedConnectionResult)
        /// A Disconnection Request (Vol 3 Part A 4.6) for the credit based channel whose CID at
        /// this side is `cid`: what 3.4.3 and 10.1 say to do about a peer that breaks its rules.
        case channelDisconnected(cid: UInt16)

        public var description: String {
            switch self {
            case .none: return "none"
            case let .commandReject(reason, data):
                return "Command Reject \(reason)" + (data.isEmpty ? "" : " [\(data.spacedHex)]")
            case .connectionParametersRejected: return "Connection Parameter Update Response rejected"
            case let .pairingFailed(reason): return "Pairing Failed \(reason)"
            case let .errorResponse(opcode, code): return "Error Response to 0x\(hex2(opcode)): 0x\(hex2(code))"
            case let .disconnect(reason): return "Disconnect, \(reason)"
            case let .channelRefused(result): return "LE Credit Based Connection Response \(result)"
            case let .channelDisconnected(cid): return "Disconnection Request for channel 0x\(hex4(cid))"
            }
        }

        /// Short and stable, for machine-readable reports: `none`, `command-reject 0x0000`,
        /// `connection-parameters-rejected`, `pairing-failed 0x07`, `error-response 0x0a 0x04`,
        /// `disconnect 0x13`, `channel-refused 0x0009`, `channel-disconnected 0x0040`.
        public var token: String {
            switch self {
            case .none: return "none"
            case let .commandReject(reason, _): return "command-reject 0x" + hex4(reason.rawValue)
            case .connectionParametersRejected: return "connection-parameters-rejected"
            case let .pairingFailed(reason): return "pairing-failed 0x" + hex2(reason.rawValue)
            case let .errorResponse(opcode, code): return "error-response 0x\(hex2(opcode)) 0x\(hex2(code))"
            case let .disconnect(reason): return "disconnect 0x" + hex2(reason.rawValue)
            case let .channelRefused(result): return "channel-refused 0x" + hex4(result.rawValue)
            case let .channelDisconnected(cid): return "channel-disconnected 0x" + hex4(cid)
            }
        }
    }

    public var layer: Layer
    public var kind: Kind
    /// The connection it arrived on (nil for what concerns no connection, e.g. an HCI event).
    public var handle: UInt16?
    /// What was wrong, for people.
    public var detail: String
    /// The offending octets as received (the PDU, the fragment or the packet; may be cut short).
    public var octets: [UInt8]
    public var answer: Answer

    /// At most this many octets are kept in `octets` (a report, not a capture).
    public static let octetLimit = 64

    public init(layer: Layer, kind: Kind, handle: UInt16?, detail: String, octets: [UInt8] = [], answer: Answer = .none) {
        self.layer = layer
        self.kind = kind
        self.handle = handle
        self.detail = detail
        self.octets = octets
        self.answer = answer
    }

    public var description: String {
        let on = handle.map { " on handle 0x\(hex4($0))" } ?? ""
        let answered = answer == .none ? "dropped" : "answered \(answer)"
        return "\(layer) \(kind)\(on): \(detail); \(answered)"
    }
}

// MARK: Kinds raised by the host

extension ProtocolViolation.Kind {
    // hci
    /// An HCI event or ACL packet that does not decode (its lengths disagree, it is cut short).
    public static let malformedPacket = Self("malformed-packet")
    /// An H4 packet type a controller never sends to a host.
    public static let unexpectedPacketType = Self("unexpected-packet-type")
    /// Number Of Completed Packets for more packets than were outstanding (Vol 4 Part E 7.7.19).
    public static let completedPacketsOvercount = Self("completed-packets-overcount")
    /// An ACL packet boundary flag not used from controller to host on LE (Vol 4 Part E 5.4.2).
    public static let invalidPacketBoundary = Self("invalid-packet-boundary")
    /// ACL data for a connection handle the host does not have (Vol 4 Part E 5.4.2).
    public static let unknownConnectionHandle = Self("unknown-connection-handle")
    /// An LE Connection Complete for a connection handle the host still has (Vol 4 Part E 5.3,
    /// 7.7.65.1: a handle names one connection until its Disconnection Complete).
    public static let connectionHandleInUse = Self("connection-handle-in-use")

    // l2cap
    /// A continuing fragment with no PDU begun (Vol 3 Part A 7.2).
    public static let unexpectedContinuation = Self("unexpected-continuation")
    /// A PDU whose fragments never completed: a new start came first, or the link ended.
    public static let incompleteFrame = Self("incomplete-frame")
    /// A PDU longer than its basic header's Length says (Vol 3 Part A 3.1).
    public static let frameLengthMismatch = Self("frame-length-mismatch")
    /// A basic frame on a channel ID with no channel (Vol 3 Part A 2.1): dropped. On the
    /// signaling channel: a request naming a channel that does not exist (Invalid CID, 4.1).
    public static let unknownChannel = Self("unknown-channel")

    // signaling (and some shared with smp / att)
    /// A C-frame larger than this side's MTU_sig (Vol 3 Part A 4.1: Signaling MTU exceeded).
    public static let mtuExceeded = Self("mtu-exceeded")
    /// A command shorter than its header, whose Length disagrees with the frame, or whose data
    /// has the wrong size for its code.
    public static let malformedCommand = Self("malformed-command")
    /// Identifier 0x00, which "shall never be used" (Vol 3 Part A 4): ignored.
    public static let zeroIdentifier = Self("zero-identifier")
    /// A code with no meaning on the LE signaling channel (or in SMP: a reserved code).
    public static let unknownCode = Self("unknown-code")
    /// A command defined for LE that this host does not implement (enhanced credit based channels).
    public static let unsupportedCommand = Self("unsupported-command")
    /// A command only the other role sends (Connection Parameter Update Request to a peripheral,
    /// Pairing Request to a central, Security Request to a peripheral).
    public static let wrongRole = Self("wrong-role")
    /// Parameters outside their ranges (connection parameters of 4.20; SMP Pairing Request
    /// fields of Vol 3 Part H 3.5.1).
    public static let invalidParameters = Self("invalid-parameters")
    /// A response (or Command Reject) that answers no request of ours.
    public static let unsolicitedResponse = Self("unsolicited-response")

    // credit based channels (Vol 3 Part A 3.4.3, 4.22–4.24, 10.1)
    /// A K-frame received while the peer held no credits (10.1): the channel is disconnected.
    public static let kFrameWithoutCredit = Self("k-frame-without-credit")
    /// A K-frame whose payload exceeds our MPS (3.4.3): the channel is disconnected.
    public static let kFrameExceedsMPS = Self("k-frame-exceeds-mps")
    /// An SDU Length over our MTU (3.4.3): the channel is disconnected.
    public static let sduExceedsMTU = Self("sdu-exceeds-mtu")
    /// K-frames carrying more than their SDU Length, or a first K-frame too short to hold it
    /// (3.4.3): the channel is disconnected.
    public static let sduLengthMismatch = Self("sdu-length-mismatch")
    /// LE Flow Control Credit pushing the credit count past 65535 (4.24): the channel is disconnected.
    public static let creditOverflow = Self("credit-overflow")
    /// An LE Credit Based Connection Request whose Source CID is not a dynamic CID (4.22, 0x0009).
    public static let invalidSourceCID = Self("invalid-source-cid")
    /// An LE Credit Based Connection Request whose Source CID already names one of the peer's
    /// channels on the link (4.22, 0x000A).
    public static let sourceCIDInUse = Self("source-cid-in-use")

    // smp
    /// An SMP command whose length is not its code's (Vol 3 Part H 3.3).
    public static let invalidLength = Self("invalid-length")
    /// An SMP command that belongs inside a pairing, with none in progress.
    public static let unexpectedCommand = Self("unexpected-command")
}

func hex2(_ value: UInt8) -> String {
    value < 0x10 ? "0" + String(value, radix: 16) : String(value, radix: 16)
}

func hex4(_ value: UInt16) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 4 - digits.count) + digits
}

import BLEWire

/// Something the peer sent that broke the Attribute Protocol (Core 5.4, Vol 3, Part F), as the
/// bearer that received it saw it. Every violation is counted (`ATTBearer.Counters`) and reported
/// to the bearer's violation observers (`ATTBearer.observeViolations`) before the bearer acts on
/// it; `consequence` says what it then does.
public enum ATTProtocolViolation: Equatable, CustomStringConvertible {
    /// An empty L2CAP payload: no opcode at all.
    case emptyPDU
    /// A known opcode whose parameters did not decode. A request is answered Invalid PDU; a
    /// response fails the outstanding request; anything else is dropped.
    case malformed(ATTOpcode, DecodeError)
    /// A response with no request outstanding (Part F, 3.3.2); dropped.
    case unsolicitedResponse(ATTOpcode)
    /// A response of the wrong kind for the outstanding request; it fails that request with
    /// `ATTError.unexpectedResponse`.
    case unexpectedResponse(request: ATTOpcode, received: ATTOpcode)
    /// A Handle Value Confirmation with no indication outstanding (Part F, 3.4.7.3); dropped.
    case unsolicitedConfirmation
    /// A notification-like PDU BLELab's client never enabled: a Multiple Handle Value
    /// Notification needs the client to have set it in Client Supported Features (Part G, 7.2),
    /// which BLELab's client never does. Dropped.
    case unsupported(ATTOpcode)
    /// An opcode Core 5.4 does not define (Part F, 3.4.8, Table 3.37). With the Command Flag
    /// clear it is answered Request Not Supported; with it set, ignored (Part F, 3.3).
    case unknownOpcode(ATTOpcode)
    /// A request that arrived while the server was still answering the previous one: the client
    /// did not wait for the response (Part F, 3.3.2). Real servers end the bearer (BlueZ's
    /// src/shared/att.c shuts the ATT channel down); so does this one: the link is dropped.
    case pipelinedRequest(pending: ATTOpcode, received: ATTOpcode)
    /// A second Exchange MTU Request from the peer's client (Part F, 3.4.2.1: once per
    /// connection). Answered, as BlueZ, Bumble and Zephyr answer it, but ATT_MTU is kept.
    case repeatedMTUExchange(clientRxMTU: UInt16, mtu: Int)
    /// An MTU exchange that would lower the ATT_MTU already in use (the peer's MTU differs from
    /// the one it gave in the other direction, Part F, 3.4.2.2). ATT_MTU is kept.
    case shrinkingMTU(current: Int, offered: Int)
    /// A Signed Write Command. BLELab has no pairing, so no CSRK was ever shared and its signature
    /// cannot be verified; the server ignores it (Part F, 3.4.5.4; Part G, 4.9.2).
    case unverifiedSignedWrite(handle: UInt16)
    /// A request or command that names a handle no attribute can have, whatever the server holds:
    /// handle 0x0000, which is reserved (Part F, 3.2.2), or a handle range that starts at 0x0000
    /// or after its end (Part F, 3.4.3.1, 3.4.3.3, 3.4.4.1, 3.4.4.9: "shall be less than or equal
    /// to"). `end` is nil for a single handle (Read, Read Blob, Read Multiple, Write, Prepare
    /// Write, Write Command), given for a range. A request is answered Invalid Handle naming
    /// `start` (for a range, its Starting Handle), as those sections say and BlueZ's and Bumble's
    /// servers do; a Write Command is ignored. A handle that is valid but names no attribute of
    /// this server is no violation: a client may hold handles from before a database change.
    case invalidHandle(ATTOpcode, start: UInt16, end: UInt16?)
    /// A request or command longer than ATT_MTU, "the maximum size of any packet sent between a
    /// client and a server" (Part F, 3.2.8). A request is answered Invalid PDU ("the attribute PDU
    /// was invalid", Part F, 3.4.1.1) with the handle it carried, as any malformed request; a
    /// command is ignored. Nothing of it reaches the server.
    case exceedsMTU(ATTOpcode, length: Int, mtu: Int)

    /// What the bearer does about a violation.
    public enum Consequence: String, Equatable, CustomStringConvertible {
        /// The PDU is dropped (or the command ignored); nothing is sent.
        case dropped
        /// An Error Response answers the request.
        case errorResponse = "error-response"
        /// The outstanding request fails with the typed error.
        case requestFailed = "request-failed"
        /// Answered as the specification says, with ATT_MTU unchanged.
        case answered
        /// The bearer is given up and its owner ends the link.
        case linkDropped = "link-dropped"

        public var description: String { rawValue }
    }

    /// What the bearer does about this violation.
    public var consequence: Consequence {
        switch self {
        case let .malformed(opcode, _):
            switch opcode.method {
            case .request: return .errorResponse
            case .response: return .requestFailed
            default: return .dropped
            }
        case .unexpectedResponse: return .requestFailed
        case let .unknownOpcode(opcode), let .invalidHandle(opcode, _, _), let .exceedsMTU(opcode, _, _):
            return opcode.method == .request ? .errorResponse : .dropped
        case .pipelinedRequest: return .linkDropped
        case .repeatedMTUExchange, .shrinkingMTU: return .answered
        case .emptyPDU, .unsolicitedResponse, .unsolicitedConfirmation, .unsupported, .unverifiedSignedWrite: return .dropped
        }
    }

    /// A stable kebab-case name per kind, for counting and reports ("pipelined-request").
    public var name: String {
        switch self {
        case .emptyPDU: return "empty-pdu"
        case .malformed: return "malformed-pdu"
        case .unsolicitedResponse: return "unsolicited-response"
        case .unexpectedResponse: return "unexpected-response"
        case .unsolicitedConfirmation: return "unsolicited-confirmation"
        case .unsupported: return "unsupported-pdu"
        case .unknownOpcode: return "unknown-opcode"
        case .pipelinedRequest: return "pipelined-request"
        case .repeatedMTUExchange: return "repeated-mtu-exchange"
        case .shrinkingMTU: return "shrinking-mtu"
        case .unverifiedSignedWrite: return "unverified-signed-write"
        case .invalidHandle: return "invalid-handle"
        case .exceedsMTU: return "exceeds-mtu"
        }
    }

    public var description: String {
        switch self {
        case .emptyPDU: return "empty ATT PDU"
        case let .malformed(opcode, error): return "malformed \(opcode.name): \(error)"
        case let .unsolicitedResponse(opcode): return "\(opcode.name) with no request outstanding"
        case let .unexpectedResponse(request, received): return "\(received.name) in answer to a \(request.name)"
        case .unsolicitedConfirmation: return "Handle Value Confirmation with no indication outstanding"
        case let .unsupported(opcode): return "\(opcode.name) is not supported"
        case let .unknownOpcode(opcode): return "\(opcode.name) is not an ATT opcode of Core 5.4"
        case let .pipelinedRequest(pending, received):
            return "\(received.name) while the \(pending.name) was still unanswered (Part F 3.3.2: one request at a time)"
        case let .repeatedMTUExchange(clientRxMTU, mtu):
            return "second Exchange MTU Request (Client Rx MTU \(clientRxMTU)); Part F 3.4.2.1 allows one; ATT_MTU stays \(mtu)"
        case let .shrinkingMTU(current, offered):
            return "MTU exchange offering ATT_MTU \(offered) below the \(current) in use; ATT_MTU stays \(current)"
        case let .unverifiedSignedWrite(handle):
            return "Signed Write Command to \(hex4(handle)) with no CSRK shared (no pairing): its signature cannot be verified, ignored"
        case let .invalidHandle(opcode, start, nil):
            return "\(opcode.name) of handle \(hex4(start)), which is reserved (Part F 3.2.2): no attribute has it"
        case let .invalidHandle(opcode, start, end?):
            return "\(opcode.name) for handles \(hex4(start))..\(hex4(end)): a range starts at 0x0001 or above and not after its end (Part F 3.4.3.1)"
        case let .exceedsMTU(opcode, length, mtu):
            return "\(opcode.name) of \(length) octets, longer than ATT_MTU \(mtu) (Part F 3.2.8)"
        }
    }
}

/// One violation as a bearer reports it to its observers: what it was, the octets that carried it
/// (empty for an empty PDU), and what the bearer did about it.
public struct ATTViolationEvent: Equatable, CustomStringConvertible {
    public let violation: ATTProtocolViolation
    /// The PDU as received, opcode first.
    public let pdu: [UInt8]

    public init(violation: ATTProtocolViolation, pdu: [UInt8]) {
        self.violation = violation
        self.pdu = pdu
    }

    public var consequence: ATTProtocolViolation.Consequence { violation.consequence }

    /// "pipelined-request: Read Request while … (octets 0a 05 00; link-dropped)".
    public var description: String {
        "\(violation.name): \(violation) (octets \(pdu.isEmpty ? "(none)" : pdu.spacedHex); \(consequence))"
    }
}

import ATT
import HCI
import HostLink

/// The join between ATT's own violation event (`ATTBearer.observeViolations`, which cannot
/// name HostLink's types: ATT sits beside HostLink, not above it) and the host's `ProtocolViolation`:
/// each `ATTProtocolViolation` becomes one with layer `att`, the kind its `name` gives, the
/// PDU's octets and what the host answered (an Error Response, or ending the link). A new ATT case needs a line in the switch below
/// (it is exhaustive, so the build says where).
extension ProtocolViolation.Kind {
    // ATT's own kinds are `ATTProtocolViolation.name` ("pipelined-request", …); these two are
    // reported above ATT.
    /// A notification or indication for a handle the client never discovered (GATT).
    public static let notificationForUnknownHandle = Self("notification-for-unknown-handle")
    /// Advertising or scan response data whose AD structures do not parse (Vol 3 Part C 11).
    public static let malformedAdvertisingData = Self("malformed-advertising-data")
}

extension ProtocolViolation {
    /// `event` as the host reports it, for the connection `handle`: layer `att`, the kind named
    /// as `ATTProtocolViolation.name` names it, the PDU's octets and the answer the host sent: an
    /// Error Response, or the end of the link for a violation the bearer gives up on.
    public init(att event: ATTViolationEvent, handle: UInt16) {
        let violation = event.violation
        var answer = Answer.none
        switch violation {
        case let .malformed(opcode, _):
            if opcode.method == .request {
                answer = .errorResponse(opcode: opcode.rawValue, code: ATTErrorCode.invalidPDU.rawValue)
            }
        case let .unknownOpcode(opcode):
            if opcode.method == .request {
                answer = .errorResponse(opcode: opcode.rawValue, code: ATTErrorCode.requestNotSupported.rawValue)
            }
        case let .invalidHandle(opcode, _, _):
            if opcode.method == .request {
                answer = .errorResponse(opcode: opcode.rawValue, code: ATTErrorCode.invalidHandle.rawValue)
            }
        case let .exceedsMTU(opcode, _, _):
            if opcode.method == .request {
                answer = .errorResponse(opcode: opcode.rawValue, code: ATTErrorCode.invalidPDU.rawValue)
            }
        case .pipelinedRequest:
            // The bearer gives up and `Connection` ends the link, as BlueZ does.
            answer = .disconnect(Connection.attDropReason)
        case .emptyPDU, .unsolicitedResponse, .unexpectedResponse, .unsolicitedConfirmation, .unsupported,
             .repeatedMTUExchange, .shrinkingMTU, .unverifiedSignedWrite:
            break
        }
        self.init(layer: .att, kind: Kind(violation.name), handle: handle, detail: violation.description,
                  octets: Array(event.pdu.prefix(ProtocolViolation.octetLimit)), answer: answer)
    }
}

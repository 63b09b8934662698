import ATT
import Host

/// The join between ATT's own violation event (`ATTBearer.observeViolations`, which cannot
/// name Host's types: ATT sits beside Host, not above it) and the host's `ProtocolViolation`:
/// each `ATTProtocolViolation` becomes one with layer `att`, a kind of its own, the PDU's octets
/// and the answer the bearer sent. A new ATT case needs a line here (the switch is exhaustive,
/// so the build says where).
extension ProtocolViolation.Kind {
    /// An L2CAP payload on CID 0x0004 with no opcode at all.
    public static let emptyPDU = Self("empty-pdu")
    /// A known opcode whose parameters do not decode (Vol 3 Part F 3.4): a request gets Error
    /// Response Invalid PDU (0x04), anything else is dropped.
    public static let malformedPDU = Self("malformed-pdu")
    /// A response of another kind than the outstanding request's (Part F 3.3.2).
    public static let unexpectedResponse = Self("unexpected-response")
    /// A Handle Value Confirmation with no indication outstanding (Part F 3.4.7.3).
    public static let unsolicitedConfirmation = Self("unsolicited-confirmation")
    /// A notification-like PDU this host does not implement (Multiple Handle Value Notification).
    public static let unsupportedPDU = Self("unsupported-pdu")
    /// A notification or indication for a handle the client never discovered (GATT).
    public static let notificationForUnknownHandle = Self("notification-for-unknown-handle")
    /// Advertising or scan response data whose AD structures do not parse (Vol 3 Part C 11).
    public static let malformedAdvertisingData = Self("malformed-advertising-data")
}

extension ProtocolViolation {
    /// `event` as the host reports it, for the connection `handle`: layer `att`, the kind named
    /// as `ATTProtocolViolation.name` names it, the PDU's octets and the answer the bearer sent.
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
        case .emptyPDU, .unsolicitedResponse, .unexpectedResponse, .unsolicitedConfirmation, .unsupported,
             .pipelinedRequest, .repeatedMTUExchange, .shrinkingMTU, .unverifiedSignedWrite:
            break
        }
        self.init(layer: .att, kind: Kind(violation.name), handle: handle, detail: violation.description,
                  octets: Array(event.pdu.prefix(ProtocolViolation.octetLimit)), answer: answer)
    }
}

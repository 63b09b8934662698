import BLEWire

/// Why an ATT operation (a request sent as client, or an indication sent as server) failed.
public enum ATTError: Error, Equatable, CustomStringConvertible {
    /// The peer answered the request with an Error Response (Core 5.4, Vol 3, Part F, 3.4.1.1).
    case errorResponse(ATTErrorResponse)
    /// No response or confirmation came within the transaction timeout (Part F, 3.3.3). The bearer
    /// is then failed: this error is also given to everything queued on it and started after it.
    case timeout(ATTOpcode)
    /// The link went away (`ATTBearer.close(reason:)`); `reason` is the HCI disconnection reason
    /// (Core 5.4, Vol 1, Part F), e.g. 0x08 Connection Timeout, 0x13 Remote User Terminated.
    case linkLost(reason: UInt8)
    /// The response to this request arrived but did not decode.
    case malformedResponse(ATTOpcode, DecodeError)
    /// A response of another kind arrived while this request was outstanding (Part F, 3.3.2).
    case unexpectedResponse(request: ATTOpcode, received: ATTOpcode)
    /// The PDU would not fit the bearer's current ATT_MTU.
    case exceedsMTU(size: Int, mtu: Int)

    /// The error code when the peer answered with an Error Response.
    public var errorCode: ATTErrorCode? {
        if case let .errorResponse(response) = self { return response.error }
        return nil
    }

    public var description: String {
        switch self {
        case let .errorResponse(response): return response.description
        case let .timeout(opcode): return "\(opcode.name) timed out (ATT transaction timeout)"
        case let .linkLost(reason): return "link lost (reason \(hex2(reason)))"
        case let .malformedResponse(opcode, error): return "malformed \(opcode.name): \(error)"
        case let .unexpectedResponse(request, received):
            return "unexpected \(received.name) while waiting for the response to \(request.name)"
        case let .exceedsMTU(size, mtu): return "PDU of \(size) octets exceeds ATT_MTU \(mtu)"
        }
    }
}

/// Something the peer sent that broke the protocol and was dropped (or answered Invalid PDU).
/// Reported through `ATTBearer.onProtocolViolation` for debugging and failure reports.
public enum ATTProtocolViolation: Equatable, CustomStringConvertible {
    /// An empty L2CAP payload: no opcode at all.
    case emptyPDU
    /// A known opcode whose parameters did not decode.
    case malformed(ATTOpcode, DecodeError)
    /// A response with no request outstanding.
    case unsolicitedResponse(ATTOpcode)
    /// A response of the wrong kind for the outstanding request (it fails that request with
    /// `ATTError.unexpectedResponse`).
    case unexpectedResponse(request: ATTOpcode, received: ATTOpcode)
    /// A Handle Value Confirmation with no indication outstanding.
    case unsolicitedConfirmation
    /// A notification-like PDU BLELab does not implement (Multiple Handle Value Notification).
    case unsupported(ATTOpcode)

    public var description: String {
        switch self {
        case .emptyPDU: return "empty ATT PDU"
        case let .malformed(opcode, error): return "malformed \(opcode.name): \(error)"
        case let .unsolicitedResponse(opcode): return "\(opcode.name) with no request outstanding"
        case let .unexpectedResponse(request, received): return "\(received.name) in answer to a \(request.name)"
        case .unsolicitedConfirmation: return "Handle Value Confirmation with no indication outstanding"
        case let .unsupported(opcode): return "\(opcode.name) is not supported"
        }
    }
}

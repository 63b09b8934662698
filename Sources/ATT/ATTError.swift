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
    /// The bearer gave up because the peer broke the protocol in a way real stacks answer by
    /// dropping the bearer (a request sent before the previous one was answered, Part F, 3.3.2).
    /// Everything pending fails with it; the link is being ended.
    case protocolViolation(ATTProtocolViolation)
    /// This side already sent its Exchange MTU Request on the bearer, which Part F, 3.4.2.1 allows
    /// once per connection; nothing was sent. `mtu` is the ATT_MTU in use.
    case mtuAlreadyExchanged(mtu: Int)

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
        case let .protocolViolation(violation): return "the bearer was dropped (\(violation))"
        case let .mtuAlreadyExchanged(mtu):
            return "Exchange MTU was already sent on this connection (ATT_MTU \(mtu)); Core Vol 3 Part F 3.4.2.1 allows it once"
        }
    }
}

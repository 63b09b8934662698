import BLEWire
import ATT

/// Why a GATT procedure failed.
public enum GATTError: Error, Equatable, CustomStringConvertible {
    /// The server answered with an ATT Error Response: which code, about which handle.
    case att(ATTErrorCode, handle: UInt16)
    /// The ATT transaction timed out (Core 5.4, Vol 3, Part F, 3.3.3); the bearer is failed.
    case timeout
    /// The link went away; `reason` is the HCI disconnection reason.
    case linkLost(reason: UInt8)
    /// The peer broke the ATT protocol: a malformed or unexpected response, or a violation that
    /// made the bearer give up (`ATTError.protocolViolation`).
    case protocolViolation(ATTError)
    /// A response decoded but its content makes no sense for the procedure (e.g. a discovery that
    /// does not progress, a characteristic declaration of the wrong length).
    case invalidResponse(String)
    /// A Prepare Write Response did not echo the request (Part G, 4.9.4); the queue was cancelled.
    case preparedWriteMismatch(handle: UInt16, offset: UInt16)
    /// The characteristic has no Client Characteristic Configuration descriptor.
    case noConfigurationDescriptor(valueHandle: UInt16)
    /// A value longer than the procedure allows (e.g. a Write Command over ATT_MTU - 3, or more
    /// than 512 octets).
    case valueTooLong(length: Int, maximum: Int)
    /// Exchange MTU was already done on this connection (Part F, 3.4.2.1: once); nothing was
    /// sent. `mtu` is the ATT_MTU in use.
    case mtuAlreadyExchanged(mtu: Int)

    public init(_ error: ATTError) {
        switch error {
        case let .errorResponse(response): self = .att(response.error, handle: response.handle)
        case .timeout: self = .timeout
        case let .linkLost(reason): self = .linkLost(reason: reason)
        case let .exceedsMTU(size, mtu): self = .valueTooLong(length: size, maximum: mtu)
        case .malformedResponse, .unexpectedResponse, .protocolViolation: self = .protocolViolation(error)
        case let .mtuAlreadyExchanged(mtu): self = .mtuAlreadyExchanged(mtu: mtu)
        }
    }

    /// The ATT error code, when the server answered with an Error Response.
    public var attErrorCode: ATTErrorCode? {
        if case let .att(code, _) = self { return code }
        return nil
    }

    public var description: String {
        switch self {
        case let .att(code, handle): return "ATT error \(code) on handle \(hex4(handle))"
        case .timeout: return "ATT transaction timeout"
        case let .linkLost(reason): return "link lost (reason \(hex2(reason)))"
        case let .protocolViolation(error): return "protocol violation: \(error)"
        case let .invalidResponse(why): return "invalid response: \(why)"
        case let .preparedWriteMismatch(handle, offset):
            return "Prepare Write Response for handle \(hex4(handle)) offset \(offset) did not echo the request"
        case let .noConfigurationDescriptor(handle): return "characteristic \(hex4(handle)) has no CCCD"
        case let .valueTooLong(length, maximum): return "value of \(length) octets exceeds \(maximum)"
        case let .mtuAlreadyExchanged(mtu):
            return "Exchange MTU was already done on this connection (ATT_MTU \(mtu)); Core Vol 3 Part F 3.4.2.1 allows one Exchange MTU Request per connection"
        }
    }
}

func hex2(_ v: UInt8) -> String {
    let s = String(v, radix: 16)
    return "0x" + (s.count < 2 ? "0" + s : s)
}

func hex4(_ v: UInt16) -> String {
    let s = String(v, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 4 - s.count)) + s
}

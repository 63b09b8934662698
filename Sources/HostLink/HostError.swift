import BLERuntime
import HCI
import Transport

/// What went wrong below GATT, typed so callers can tell a controller's refusal from a dead link.
public enum HostError: Error, Equatable, CustomStringConvertible {
    /// The controller answered a command with an error status.
    case command(HCIOpcode, HCIStatus)
    /// The controller never answered a command (Vol 4 Part E 4.4: the host must time it out).
    case commandTimeout(HCIOpcode)
    /// A command or event that could not be decoded.
    case malformed(String)
    /// The transport to the controller failed or closed.
    case transport(TransportError)
    /// The connection ended, with the controller's reason.
    case disconnected(HCIStatus)
    /// No such connection.
    case unknownConnection(UInt16)
    /// An operation that needs a powered-on host was called before `powerOn` finished.
    case notReady
    /// A request that is invalid in the current state (e.g. scanning twice).
    case invalidState(String)
    /// A procedure did not finish in time.
    case timeout(String)
    /// The caller cancelled the procedure.
    case cancelled(String)
    /// The peer or the controller broke a protocol rule (typed: layer, kind, octets, answer).
    indirect case violation(ProtocolViolation)

    public var description: String {
        switch self {
        case let .command(op, status): return "\(op) failed: \(status)"
        case let .commandTimeout(op): return "\(op): no answer from the controller"
        case let .malformed(detail): return "malformed HCI packet: \(detail)"
        case let .transport(e): return e.description
        case let .disconnected(reason): return "disconnected: \(reason)"
        case let .unknownConnection(h): return "no connection with handle 0x\(String(h, radix: 16))"
        case .notReady: return "the host is not powered on"
        case let .invalidState(s): return s
        case let .timeout(s): return "\(s) timed out"
        case let .cancelled(s): return "\(s) cancelled"
        case let .violation(v): return "protocol violation: \(v)"
        }
    }
}

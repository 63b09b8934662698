import BLERuntime
import HCI

/// Expectations that a step did not get to do what it says, because of the link: an operation cut
/// short when the link ended, a connect that gave no connection. Like `expect: { error }`, each
/// stands among the `expect` steps right after the step it is about (validation checks it); that
/// step then reports the interruption instead of failing, and the expectation fails when the step
/// did complete.
public enum InterruptionExpectation: Hashable {
    /// The operation right before (discover, mtu, read, write, subscribe, unsubscribe) ended
    /// because the link to the peripheral ended, or could not start because it had; with that
    /// disconnection reason when given.
    case linkLost(peripheral: String, reason: HCIStatus?)
    /// The `connect` right before gave no connection: none within its `within`, the controller
    /// refused or failed it, or the connection it made was never established (Core Vol 6 Part B
    /// 4.5.2: no packet within six connection events, Connection Failed to be Established).
    case connectFailed(peripheral: String, reason: ConnectFailureReason?)

    public var peripheral: String {
        switch self {
        case let .linkLost(p, _), let .connectFailed(p, _): return p
        }
    }

    public var summary: String {
        switch self {
        case let .linkLost(p, reason):
            return "the operation right before to be cut short by the end of the link to \(p)\(reason.map { " (\($0))" } ?? "")"
        case let .connectFailed(p, reason):
            return "the connect right before to give no connection to \(p)\(reason.map { " (\($0))" } ?? "")"
        }
    }
}

/// Why a connect gave no connection: no connectable advertisement answered within the step's
/// `within`, or an HCI status (the controller refused LE Create Connection, or the connection
/// failed, as Connection Failed to be Established, 0x3E).
public enum ConnectFailureReason: Hashable, CustomStringConvertible {
    case timeout
    case status(HCIStatus)

    public var description: String {
        switch self {
        case .timeout: return "timeout"
        case let .status(s): return "\(s)"
        }
    }
}

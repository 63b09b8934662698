import BLERuntime
import HCI

/// The host's connection to a controller: whole H4 frames (indicator first) in both directions.
/// Byte-stream transports (sockets, UARTs) frame with `H4Framer` before calling `onFrame`, so the
/// host never sees partial packets. Implementations deliver on the owner's event loop.
public protocol HCITransport: AnyObject {
    /// Sends one H4 frame to the controller.
    func send(_ frame: [UInt8])
    /// Called with each H4 frame from the controller.
    var onFrame: (([UInt8]) -> Void)? { get set }
    /// Called once if the transport fails or closes; nothing more arrives after it.
    var onClose: ((TransportError) -> Void)? { get set }
    /// Where the frames go, for error messages ("sim controller 'hm10'", "tcp 127.0.0.1:6402").
    var endpointDescription: String { get }
}

/// Why a transport stopped.
public enum TransportError: Error, Equatable, CustomStringConvertible {
    /// The far end closed the connection.
    case closed(endpoint: String)
    /// Bytes that cannot be HCI (e.g. an unknown H4 indicator): the stream can't be trusted.
    case malformed(endpoint: String, detail: String)
    /// An operating-system error (socket, device).
    case system(endpoint: String, operation: String, errno: Int32, message: String)

    public var description: String {
        switch self {
        case let .closed(endpoint): return "\(endpoint): connection closed"
        case let .malformed(endpoint, detail): return "\(endpoint): malformed HCI stream: \(detail)"
        case let .system(endpoint, operation, errno, message): return "\(endpoint): \(operation) failed: \(message) (errno \(errno))"
        }
    }
}

/// Direction of a frame as seen from the host.
public enum HCIDirection: UInt8, Sendable {
    case hostToController = 0
    case controllerToHost = 1
}

import BLERuntime

/// Joins a host and an in-process controller with H4 frames, as a socket would, but without
/// copies or framing cost. Each frame is handed over by `loop.execute`, never by a direct call,
/// so neither side re-enters the other and ordering follows the loop's (time, sequence) rule.
public final class InProcessTransport: HCITransport {
    private let loop: EventLoop
    /// Delivers a host→controller frame to the controller.
    private let deliverToController: ([UInt8]) -> Void
    public var onFrame: (([UInt8]) -> Void)?
    public var onClose: ((TransportError) -> Void)?
    public let endpointDescription: String
    public private(set) var isClosed = false
    /// Bumped by `discardInFlight`: frames handed over before it are not delivered.
    private var generation: UInt64 = 0

    /// - Parameter deliverToController: the controller's input, e.g. `controller.receive(fromHost:)`.
    public init(loop: EventLoop, endpoint: String, deliverToController: @escaping ([UInt8]) -> Void) {
        self.loop = loop
        self.endpointDescription = endpoint
        self.deliverToController = deliverToController
    }

    public func send(_ frame: [UInt8]) {
        guard !isClosed else { return }
        let deliver = deliverToController
        loop.execute { deliver(frame) }
    }

    /// The controller's output: call with each frame the controller emits for its host.
    public func deliverToHost(_ frame: [UInt8]) {
        guard !isClosed else { return }
        let sent = generation
        loop.execute { [weak self] in
            guard let self, !self.isClosed, self.generation == sent else { return }
            self.onFrame?(frame)
        }
    }

    /// Drops the frames the controller handed over that the host has not received yet: what a
    /// device that loses power had on its way from its controller to its host dies with it.
    public func discardInFlight() {
        generation &+= 1
    }

    /// Ends the link, as a closed socket would: the host is told once.
    public func close(_ error: TransportError? = nil) {
        guard !isClosed else { return }
        isClosed = true
        let reason = error ?? .closed(endpoint: endpointDescription)
        loop.execute { [weak self] in self?.onClose?(reason) }
    }
}

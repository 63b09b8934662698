import BLERuntime

/// Joins a host and an in-process controller with H4 frames, as a socket would, but without
/// copies or framing cost. Each frame is handed over by `loop.execute`, never by a direct call,
/// so neither side re-enters the other and ordering follows the loop's (time, sequence) rule.
public final class InProcessTransport: HCITransport {
    private let loop: EventLoop
    /// Delivers a host→controller frame to the controller.
    private let deliverToController: ([UInt8]) -> Void
    public var onFrame: (([UInt8]) -> Void)? {
        get { toHost.onFrame }
        set { toHost.onFrame = newValue }
    }
    public var onClose: ((TransportError) -> Void)?
    public let endpointDescription: String
    /// True once `close` ran (the host queue says so: nothing more is delivered).
    public var isClosed: Bool { toHost.isClosed }
    /// Frames handed over and not yet delivered, each way. Each frame still gets its own
    /// `loop.execute`, at the moment it is handed over (so the loop's order is the same as with a
    /// closure per frame); the task is one closure made once, which takes the oldest frame: no
    /// allocation and no weak reference per frame. Each task holds its queue, not the transport.
    /// (Frames to the controller are delivered even when the transport is gone by then, as the
    /// controller's input does not depend on it; frames to the host are not: `deinit` closes
    /// `toHost`.)
    private let toController = FrameQueue()
    private let toHost = HostQueue()
    private lazy var controllerTask: () -> Void = { [toController, deliverToController] in
        guard let frame = toController.frames.popFirst() else { return }
        deliverToController(frame)
    }
    private lazy var hostTask: () -> Void = { [toHost] in toHost.deliverOne() }

    /// - Parameter deliverToController: the controller's input, e.g. `controller.receive(fromHost:)`.
    public init(loop: EventLoop, endpoint: String, deliverToController: @escaping ([UInt8]) -> Void) {
        self.loop = loop
        self.endpointDescription = endpoint
        self.deliverToController = deliverToController
    }

    deinit {
        toHost.isClosed = true
    }

    public func send(_ frame: [UInt8]) {
        guard !isClosed else { return }
        toController.frames.append(frame)
        loop.execute(controllerTask)
    }

    /// The controller's output: call with each frame the controller emits for its host.
    public func deliverToHost(_ frame: [UInt8]) {
        guard !isClosed else { return }
        toHost.frames.append((frame, toHost.generation))
        loop.execute(hostTask)
    }

    /// Drops the frames the controller handed over that the host has not received yet: what a
    /// device that loses power had on its way from its controller to its host dies with it.
    public func discardInFlight() {
        toHost.generation &+= 1
    }

    /// Ends the link, as a closed socket would: the host is told once.
    public func close(_ error: TransportError? = nil) {
        guard !isClosed else { return }
        toHost.isClosed = true
        let reason = error ?? .closed(endpoint: endpointDescription)
        loop.execute { [weak self] in self?.onClose?(reason) }
    }
}

/// Frames on their way to a controller.
private final class FrameQueue {
    var frames = FIFO<[UInt8]>()
}

/// Frames on their way to the host, and the host's input: what the transport's host task needs,
/// so that the task holds this instead of a weak reference to the transport (one load per frame).
private final class HostQueue {
    var frames = FIFO<(frame: [UInt8], generation: UInt64)>()
    var onFrame: (([UInt8]) -> Void)?
    /// Bumped by `discardInFlight`: frames handed over before it are not delivered.
    var generation: UInt64 = 0
    /// The transport closed or went: nothing more is delivered.
    var isClosed = false

    func deliverOne() {
        guard let (frame, sent) = frames.popFirst(), !isClosed, generation == sent else { return }
        onFrame?(frame)
    }
}

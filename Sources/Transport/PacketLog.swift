import BLERuntime
import HCI

/// One HCI packet as it crossed a transport.
public struct LoggedPacket: Hashable, Sendable {
    public var time: Instant
    public var direction: HCIDirection
    /// The H4 frame, indicator first.
    public var frame: [UInt8]

    public init(time: Instant, direction: HCIDirection, frame: [UInt8]) {
        self.time = time
        self.direction = direction
        self.frame = frame
    }
}

/// Records every frame that crosses a transport, with the loop's time: the raw material of
/// captures, determinism checks and "what actually crossed the link" assertions.
public final class PacketLog {
    public private(set) var packets: [LoggedPacket] = []
    /// Observers called for each packet as it is recorded (e.g. an ATT opcode watcher).
    private var observers: [(LoggedPacket) -> Void] = []
    /// When false, packets are passed to observers but not kept (long benchmarks).
    public var keepsPackets: Bool

    /// When set, `packets` keeps only the latest packets: at least `window` of them (at most twice
    /// that, trimmed in batches), so a log used for recent history (failure reports) does not grow
    /// with the length of a run. Observers still see every packet.
    public var window: Int?

    public init(keepsPackets: Bool = true) { self.keepsPackets = keepsPackets }

    public func record(_ packet: LoggedPacket) {
        if keepsPackets {
            packets.append(packet)
            if let window, packets.count >= 2 * max(window, 1) { packets.removeFirst(packets.count - window) }
        }
        for o in observers { o(packet) }
    }

    public func observe(_ observer: @escaping (LoggedPacket) -> Void) { observers.append(observer) }

    public func removeAll() { packets.removeAll() }

    /// Every frame with its time and direction in one byte string: equal logs give equal bytes.
    public var serialized: [UInt8] {
        var out: [UInt8] = []
        for p in packets {
            let t = UInt64(bitPattern: p.time.nanoseconds)
            for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: t >> (8 * UInt64(i)))) }
            out.append(p.direction.rawValue)
            let n = UInt32(p.frame.count)
            for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: n >> (8 * UInt32(i)))) }
            out.append(contentsOf: p.frame)
        }
        return out
    }
}

/// Wraps a transport and records every frame in both directions in a `PacketLog`.
public final class TappedTransport: HCITransport {
    public let inner: HCITransport
    public let log: PacketLog
    private let loop: EventLoop
    public var onFrame: (([UInt8]) -> Void)?
    public var onClose: ((TransportError) -> Void)? {
        get { inner.onClose }
        set { inner.onClose = newValue }
    }
    public var endpointDescription: String { inner.endpointDescription }

    public init(_ inner: HCITransport, log: PacketLog, loop: EventLoop) {
        self.inner = inner
        self.log = log
        self.loop = loop
        // The inner transport may outlive the tap and still deliver a frame: `deinit` takes this
        // closure back, so it never runs after the tap is gone (no weak load per frame).
        inner.onFrame = { [unowned(unsafe) self] frame in
            self.log.record(LoggedPacket(time: self.loop.now, direction: .controllerToHost, frame: frame))
            self.onFrame?(frame)
        }
    }

    deinit {
        inner.onFrame = nil
    }

    public func send(_ frame: [UInt8]) {
        log.record(LoggedPacket(time: loop.now, direction: .hostToController, frame: frame))
        inner.send(frame)
    }
}

/// Readiness of a file descriptor, as poll(2) reports it: what a watch asks for (`readable`,
/// `writable`) and what its callback is told. `error`, `hangUp` and `invalid` are always reported,
/// whatever was asked for, as poll(2) does for POLLERR, POLLHUP and POLLNVAL.
public struct FDEvents: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// POLLIN: a read will not block (data, end of file, or a pending connection on a listener).
    public static let readable = FDEvents(rawValue: 1 << 0)
    /// POLLOUT: a write will not block (or a non-blocking connect(2) has finished).
    public static let writable = FDEvents(rawValue: 1 << 1)
    /// POLLERR: an error is pending; the next read/write or getsockopt(SO_ERROR) returns it.
    public static let error = FDEvents(rawValue: 1 << 2)
    /// POLLHUP: the peer hung up; reads return what is left, then end of file.
    public static let hangUp = FDEvents(rawValue: 1 << 3)
    /// POLLNVAL: the descriptor is not open (closed while watched). The loop cancels the watch
    /// before telling its callback, so a forgotten watch cannot spin the loop.
    public static let invalid = FDEvents(rawValue: 1 << 4)

    public var description: String {
        let names: [(FDEvents, String)] = [(.readable, "readable"), (.writable, "writable"), (.error, "error"),
                                           (.hangUp, "hangUp"), (.invalid, "invalid")]
        return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: ", ") + "]"
    }
}

/// Interest in one file descriptor's readiness, registered with `SystemEventLoop.watch…`. The
/// callback runs on the loop, never re-entered, each time poll(2) reports the descriptor ready
/// (level-triggered: a readable watch whose callback does not read fires again at once).
/// Cancelling is idempotent and safe from inside any callback, including this watch's own.
/// The loop does not own the descriptor: cancel the watch before closing it.
public final class FDWatch {
    public let fd: Int32
    /// What the watch asked for (`readable`, `writable` or both).
    public let events: FDEvents
    var callback: ((FDEvents) -> Void)?
    weak var loop: SystemEventLoop?

    init(fd: Int32, events: FDEvents, loop: SystemEventLoop, callback: @escaping (FDEvents) -> Void) {
        self.fd = fd
        self.events = events
        self.loop = loop
        self.callback = callback
    }

    /// True until cancelled (by the owner, or by the loop when the descriptor turned out closed).
    public var isActive: Bool { callback != nil }

    public func cancel() {
        guard callback != nil else { return }
        callback = nil
        loop?.watchCancelled()
    }
}

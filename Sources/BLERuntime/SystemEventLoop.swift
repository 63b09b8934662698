#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An event loop on real time, for labs whose controllers live outside the process (H4 over
/// sockets, the HCI user channel). Its clock is CLOCK_MONOTONIC (`now` is the time since the loop
/// was made; see `MonotonicClock`, the one place that reads a clock), and when nothing is due it
/// waits in poll(2) for the watched file descriptors and the next timer.
///
/// Ordering follows `VirtualEventLoop`: every task has a deadline and a sequence number taken when
/// it was scheduled, and due tasks run in (deadline, sequence) order. `execute` gives a task the
/// current time as its deadline, so executed tasks run first in, first out, after the work already
/// due. Descriptor callbacks run when poll(2) reports readiness, before the tasks that are due.
///
/// Each turn of the loop polls (without waiting when work is due), runs the ready descriptors'
/// callbacks, then runs the tasks that were due *and scheduled* when the turn began; tasks those
/// schedule wait for the next turn, so a task that keeps executing itself never starves the
/// descriptors. A timer never runs before its deadline on the loop's clock.
///
/// Single-threaded: create it, schedule on it, watch descriptors and run it from one thread.
/// Callbacks are never re-entered: calling `run…` from inside a callback is a programming error
/// (it traps). To stop it from a signal handler or another thread, write to a pipe the loop
/// watches (write(2) is async-signal-safe) and call `stop()` from that watch's callback.
public final class SystemEventLoop: DrivableEventLoop {
    /// CLOCK_MONOTONIC when the loop was made: `now` counts from here.
    private let origin: Int64
    private let timers = TimerQueue()
    private var ready = FIFO<ReadyTask>()
    private var nextSequence: UInt64 = 0
    private var stopRequested = false
    private var isRunning = false

    private var watches: [FDWatch] = []
    /// Set when a watch is added or cancelled; the poll set is rebuilt before the next wait.
    private var watchesChanged = false
    private var pollSet: [pollfd] = []

    /// Tasks and callbacks run so far (for benchmarks and sanity checks).
    public private(set) var tasksRun: UInt64 = 0
    /// Times poll(2) was called (a loop that waits properly calls it about once per event).
    public private(set) var pollCount: UInt64 = 0

    private struct ReadyTask {
        var sequence: UInt64
        /// `now` when `execute` was called: its deadline for ordering against timers.
        var enqueuedAt: Instant
        var task: () -> Void
    }

    public init() {
        origin = MonotonicClock.nanoseconds()
    }

    /// Monotonic time since the loop was made. Read afresh on each access: two reads inside one
    /// task may differ.
    public var now: Instant { Instant(nanoseconds: MonotonicClock.nanoseconds() - origin) }

    // MARK: Scheduling

    @discardableResult
    public func schedule(at deadline: Instant, _ task: @escaping () -> Void) -> LoopTimer {
        nextSequence &+= 1
        let timer = LoopTimer(deadline: max(deadline, now), sequence: nextSequence, task: task)
        timers.insert(timer)
        return timer
    }

    public func reschedule(_ timer: LoopTimer, at deadline: Instant, _ task: @escaping () -> Void) {
        nextSequence &+= 1
        timer.rearm(deadline: max(deadline, now), sequence: nextSequence, task: task, in: timers)
    }

    public func execute(_ task: @escaping () -> Void) {
        nextSequence &+= 1
        ready.append(ReadyTask(sequence: nextSequence, enqueuedAt: now, task: task))
    }

    /// Asks the running `run…` call to return after the task or callback in progress. Outside a
    /// run it does nothing (the next run starts afresh).
    public func stop() { stopRequested = true }

    /// The deadline of the earliest pending timer, or now when a task is ready.
    public var nextDeadline: Instant? {
        ready.isEmpty ? timers.first?.deadline : now
    }

    // MARK: File descriptors

    /// Calls `callback` on the loop whenever `fd` is readable (or at end of file, or on error).
    @discardableResult
    public func watchReadable(fd: Int32, _ callback: @escaping () -> Void) -> FDWatch {
        watch(fd: fd, for: .readable) { _ in callback() }
    }

    /// Calls `callback` on the loop whenever `fd` is writable (or on error). Sockets are nearly
    /// always writable: watch only while there is something to write, then cancel.
    @discardableResult
    public func watchWritable(fd: Int32, _ callback: @escaping () -> Void) -> FDWatch {
        watch(fd: fd, for: .writable) { _ in callback() }
    }

    /// Calls `callback` with what poll(2) reported whenever `fd` is ready for any of `events`
    /// (`error`, `hangUp` and `invalid` are reported whatever was asked). Several watches on one
    /// descriptor are allowed; each is told.
    @discardableResult
    public func watch(fd: Int32, for events: FDEvents, _ callback: @escaping (FDEvents) -> Void) -> FDWatch {
        let w = FDWatch(fd: fd, events: events, loop: self, callback: callback)
        watches.append(w)
        watchesChanged = true
        return w
    }

    /// Active watches (a transport that closed should leave none behind).
    public var watchCount: Int { watches.reduce(0) { $0 + ($1.isActive ? 1 : 0) } }

    func watchCancelled() { watchesChanged = true }

    // MARK: Running

    public func run(until deadline: Instant) {
        run(until: deadline, orUntil: { false })
    }

    /// Runs descriptor callbacks and due tasks until `condition` holds (checked first, then after
    /// each task and callback), `stop()` is called, or `deadline` passes on the loop's clock with
    /// nothing due by then left to run. Waits in poll(2) in between, never spinning. When nothing
    /// can happen any more (no tasks, no timers, no watches) and the deadline is `distantFuture`,
    /// it returns at once instead of waiting forever. Returns whether the condition held.
    @discardableResult
    public func run(until deadline: Instant, orUntil condition: () -> Bool) -> Bool {
        precondition(!isRunning, "SystemEventLoop.run was called from inside one of its own callbacks")
        isRunning = true
        defer { isRunning = false }
        stopRequested = false
        if condition() { return true }

        while !stopRequested {
            guard let timeout = pollTimeout(deadline: deadline) else { break }   // nothing can happen
            if waitAndDispatch(timeout: timeout, condition: condition) { return true }
            if stopRequested { break }

            // Tasks due by this turn's time (but not after `deadline`) and scheduled before it.
            let turnNow = now
            let dueLimit = min(turnNow, deadline)
            let sequenceLimit = nextSequence &+ 1   // everything scheduled so far
            while let task = popDue(notAfter: dueLimit, sequenceBelow: sequenceLimit) {
                tasksRun &+= 1
                task()
                if condition() { return true }
                if stopRequested { return condition() }
            }
            if turnNow >= deadline, ready.isEmpty, !timerDue(notAfter: deadline) { break }
        }
        return condition()
    }

    /// The next due task in (deadline, sequence) order among ready tasks and timers, or nil.
    private func popDue(notAfter limit: Instant, sequenceBelow sequenceLimit: UInt64) -> (() -> Void)? {
        while true {
            var timer = timers.first
            if let t = timer, t.deadline > limit || t.sequence >= sequenceLimit { timer = nil }
            var readyHead = ready.first
            if let r = readyHead, r.sequence >= sequenceLimit { readyHead = nil }

            if let r = readyHead, timer == nil || (r.enqueuedAt, r.sequence) < (timer!.deadline, timer!.sequence) {
                _ = ready.popFirst()
                return r.task
            }
            guard let t = timer else { return nil }
            _ = timers.popFirst()
            if let task = t.task {   // a cancelled timer leaves the heap at once; this is defensive
                t.task = nil
                return task
            }
        }
    }

    private func timerDue(notAfter limit: Instant) -> Bool {
        guard let t = timers.first else { return false }
        return t.deadline <= limit
    }

    /// Milliseconds for poll(2): 0 when work is due, until the next timer or the deadline
    /// (rounded up, so a wake-up is never early), -1 to wait only for descriptors, nil when nothing
    /// can ever happen.
    private func pollTimeout(deadline: Instant) -> Int32? {
        let current = now
        if !ready.isEmpty { return 0 }
        let wake = min(timers.first?.deadline ?? .distantFuture, deadline)
        if wake == .distantFuture {
            return watchCount == 0 ? nil : -1
        }
        if wake <= current { return 0 }
        let nanoseconds = (wake - current).nanoseconds
        let milliseconds = (nanoseconds + 999_999) / 1_000_000
        return Int32(clamping: milliseconds)
    }

    /// One poll(2), then the callbacks of the ready descriptors in the order they were watched.
    /// Returns true when `condition` held after a callback.
    private func waitAndDispatch(timeout: Int32, condition: () -> Bool) -> Bool {
        if watchesChanged {
            watches.removeAll { !$0.isActive }
            pollSet = watches.map { w in
                var interest: Int16 = 0
                if w.events.contains(.readable) { interest |= Int16(POLLIN) }
                if w.events.contains(.writable) { interest |= Int16(POLLOUT) }
                return pollfd(fd: w.fd, events: interest, revents: 0)
            }
            watchesChanged = false
        }
        let polled = watches
        var set = pollSet
        pollCount &+= 1
        let n = set.withUnsafeMutableBufferPointer { buffer in
            poll(buffer.baseAddress, nfds_t(buffer.count), timeout)
        }
        if n < 0 {
            let code = errno
            // EINTR: a signal arrived; EAGAIN/ENOMEM: the kernel was short of memory. Try again
            // on the next turn (with a fresh timeout). Anything else is a bug in the poll set.
            precondition(code == EINTR || code == EAGAIN || code == ENOMEM,
                         "poll(2) failed: \(String(cString: strerror(code))) (errno \(code))")
            return false
        }
        guard n > 0 else { return false }
        for (index, entry) in set.enumerated() where entry.revents != 0 {
            let watch = polled[index]
            guard let callback = watch.callback else { continue }   // cancelled by an earlier callback
            let reported = Self.events(entry.revents)
            if reported.contains(.invalid) { watch.cancel() }
            tasksRun &+= 1
            callback(reported)
            if condition() { return true }
            if stopRequested { return false }
        }
        return false
    }

    private static func events(_ revents: Int16) -> FDEvents {
        var e: FDEvents = []
        if revents & Int16(POLLIN | POLLPRI) != 0 { e.insert(.readable) }
        if revents & Int16(POLLOUT) != 0 { e.insert(.writable) }
        if revents & Int16(POLLERR) != 0 { e.insert(.error) }
        if revents & Int16(POLLHUP) != 0 { e.insert(.hangUp) }
        if revents & Int16(POLLNVAL) != 0 { e.insert(.invalid) }
        return e
    }
}

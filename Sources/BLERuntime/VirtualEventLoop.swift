/// An event loop on simulated time. Nothing waits: when no task is due, the clock jumps to the
/// next timer's deadline. Tasks run in (deadline, scheduling order), so a run is a pure function
/// of its inputs and seed.
public final class VirtualEventLoop: DrivableEventLoop {
    public private(set) var now: Instant = .zero
    private let timers = TimerQueue()
    /// Tasks due now, in FIFO order (a cheap path for `execute`, which dominates packet passing).
    private var ready: [(sequence: UInt64, task: () -> Void)] = []
    private var readyHead = 0
    private var nextSequence: UInt64 = 0
    /// Set by `stop()`; the current `run…` call returns after the task in progress.
    private var stopRequested = false
    /// Tasks run so far (for benchmarks and sanity checks).
    public private(set) var tasksRun: UInt64 = 0

    public init() {}

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
        ready.append((nextSequence, task))
    }

    /// True when no task is ready and no timer is pending.
    public var isIdle: Bool { readyHead >= ready.count && timers.isEmpty }

    /// The deadline of the earliest pending timer.
    public var nextDeadline: Instant? {
        readyHead < ready.count ? now : timers.first?.deadline
    }

    /// Asks the running `run…` call to return after the current task.
    public func stop() { stopRequested = true }

    /// Runs one task if any is due at or before `limit`, advancing the clock to it. Returns false
    /// when there is none.
    @discardableResult
    public func runOne(notAfter limit: Instant = .distantFuture) -> Bool {
        // A timer due now that was scheduled before the head of the ready queue runs first.
        if readyHead < ready.count {
            if let t = timers.first, t.deadline <= now, t.sequence < ready[readyHead].sequence {
                return fireTimer()
            }
            let task = ready[readyHead].task
            readyHead += 1
            if readyHead == ready.count {
                ready.removeAll(keepingCapacity: true)
                readyHead = 0
            } else if readyHead > 4096 && readyHead * 2 > ready.count {
                ready.removeFirst(readyHead)
                readyHead = 0
            }
            tasksRun &+= 1
            task()
            return true
        }
        guard let t = timers.first, t.deadline <= limit else { return false }
        return fireTimer()
    }

    private func fireTimer() -> Bool {
        guard let timer = timers.popFirst() else { return false }
        if timer.deadline > now { now = timer.deadline }
        guard let task = timer.task else { return true }
        timer.task = nil
        tasksRun &+= 1
        task()
        return true
    }

    /// Runs until nothing is left to do (or `stop()`); returns the number of tasks run.
    @discardableResult
    public func runUntilIdle() -> Int {
        stopRequested = false
        var n = 0
        while !stopRequested, runOne() { n += 1 }
        return n
    }

    /// Runs every task due up to `deadline`, then sets the clock to `deadline`.
    public func run(until deadline: Instant) {
        stopRequested = false
        while !stopRequested, runOne(notAfter: deadline) {}
        if !stopRequested, now < deadline { now = deadline }
    }

    /// Runs until `condition` holds (checked after each task) or `deadline` passes.
    /// Returns whether the condition held.
    @discardableResult
    public func run(until deadline: Instant, orUntil condition: () -> Bool) -> Bool {
        stopRequested = false
        if condition() { return true }
        while !stopRequested, runOne(notAfter: deadline) {
            if condition() { return true }
        }
        if !stopRequested, now < deadline { now = deadline }
        return condition()
    }
}

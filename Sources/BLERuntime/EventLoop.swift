/// The one thread of control a lab runs on. Protocol code gets the time and schedules work only
/// through this interface: it never reads the wall clock, sleeps, or uses a global queue.
public protocol EventLoop: AnyObject {
    /// The loop's current time.
    var now: Instant { get }

    /// Runs `task` at `deadline` (or as soon as possible if that has passed). Tasks with equal
    /// deadlines run in the order they were scheduled.
    @discardableResult
    func schedule(at deadline: Instant, _ task: @escaping () -> Void) -> LoopTimer

    /// Runs `task` at `deadline` on `timer` (one this loop made, or a new `LoopTimer()`): exactly
    /// `timer.cancel()` followed by `schedule(at: deadline, task)` (the task takes its place among
    /// equal deadlines now, and a past deadline means as soon as possible), except that no new
    /// timer is made: `timer` is the one pending afterwards. For work that recurs, such as an
    /// advertiser's events, whose owner keeps one timer instead of allocating one per occurrence.
    func reschedule(_ timer: LoopTimer, at deadline: Instant, _ task: @escaping () -> Void)

    /// Runs `task` soon, at the current time, after the work already due now.
    func execute(_ task: @escaping () -> Void)
}

/// A loop a lab can drive from the outside: run until a deadline on its own clock, or until a
/// condition holds. The virtual loop jumps its clock; a system loop (real controllers over
/// sockets) waits for file descriptors and timers on the monotonic clock.
public protocol DrivableEventLoop: EventLoop {
    /// Runs what falls due until `condition` holds (checked after each task) or `deadline`
    /// passes; returns whether the condition held.
    @discardableResult
    func run(until deadline: Instant, orUntil condition: () -> Bool) -> Bool

    /// Runs what falls due until `deadline`.
    func run(until deadline: Instant)
}

extension DrivableEventLoop {
    /// Lets `span` pass on the loop's clock, running what falls due.
    public func advance(by span: TimeSpan) { run(until: now + span) }
}

extension EventLoop {
    @discardableResult
    public func schedule(after delay: TimeSpan, _ task: @escaping () -> Void) -> LoopTimer {
        schedule(at: now + delay, task)
    }
}

/// A scheduled task. Cancelling is idempotent; a timer that already ran ignores it.
public final class LoopTimer {
    /// When it runs (or ran); `EventLoop.reschedule` moves it.
    public internal(set) var deadline: Instant
    var sequence: UInt64
    var task: (() -> Void)?
    /// Index in the loop's heap, or -1 when not scheduled.
    var heapIndex: Int = -1
    weak var owner: TimerQueue?

    init(deadline: Instant, sequence: UInt64, task: @escaping () -> Void) {
        self.deadline = deadline
        self.sequence = sequence
        self.task = task
    }

    /// A timer not scheduled yet (not pending, deadline zero): `EventLoop.reschedule` arms it.
    /// For an owner that keeps one timer for work that recurs.
    public init() {
        deadline = .zero
        sequence = 0
        task = nil
    }

    /// True until the timer has run or been cancelled.
    public var isPending: Bool { task != nil }

    /// How long until it fires, measured on `loop`'s clock (zero when due or done).
    public func remaining(on loop: EventLoop) -> TimeSpan {
        guard isPending else { return .zero }
        return max(.zero, deadline - loop.now)
    }

    public func cancel() {
        guard task != nil else { return }
        task = nil
        owner?.remove(self)
    }

    /// Cancels it if pending, then makes it pending again with a new deadline, sequence and task
    /// (the loops' `reschedule`).
    func rearm(deadline: Instant, sequence: UInt64, task: @escaping () -> Void, in queue: TimerQueue) {
        cancel()
        self.deadline = deadline
        self.sequence = sequence
        self.task = task
        queue.insert(self)
    }
}

/// A min-heap of timers ordered by (deadline, sequence): the order that makes a run
/// deterministic (keys are unique, so the order timers leave the heap does not depend on its
/// shape). Shared by the virtual and system loops. Each slot holds its timer's key beside it, so
/// that sifting compares plain integers in one array instead of following a reference per
/// comparison. The heap is 4-ary: a crowded air keeps one timer per advertiser (thousands), and
/// each advertising event takes the first off and puts one back; four children per node halve
/// the levels a removal walks down, each level a cache miss in a heap that size.
final class TimerQueue {
    private struct Slot {
        var deadline: Int64
        var sequence: UInt64
        var timer: LoopTimer

        @inline(__always) func precedes(_ other: Slot) -> Bool {
            deadline < other.deadline || (deadline == other.deadline && sequence < other.sequence)
        }
    }

    private var heap: [Slot] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var first: LoopTimer? { heap.first?.timer }

    func insert(_ timer: LoopTimer) {
        timer.owner = self
        heap.append(Slot(deadline: timer.deadline.nanoseconds, sequence: timer.sequence, timer: timer))
        siftUp(heap.count - 1)
    }

    func popFirst() -> LoopTimer? {
        guard !heap.isEmpty else { return nil }
        let top = heap[0].timer
        removeAt(0)
        return top
    }

    func remove(_ timer: LoopTimer) {
        let i = timer.heapIndex
        guard i >= 0, i < heap.count, heap[i].timer === timer else { return }
        removeAt(i)
    }

    private func removeAt(_ i: Int) {
        heap[i].timer.heapIndex = -1
        let last = heap.removeLast()
        guard i < heap.count else { return }
        // The last slot fills the hole, then moves down or up to its place.
        heap[i] = last
        last.timer.heapIndex = i
        siftDown(i)
        siftUp(last.timer.heapIndex)
    }

    /// Children per node.
    private static let arity = 4

    /// Moves the slot at `start` up while it precedes its parent (a hole moves, not the slot).
    /// The slots move through the buffer's memory (`moveInitialize`): no retain and release of
    /// their timers per level, which a heap of thousands of timers would pay on every insert.
    private func siftUp(_ start: Int) {
        heap.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            var i = start
            let moving = (base + i).move()
            while i > 0 {
                let parent = (i - 1) / Self.arity
                guard moving.precedes(base[parent]) else { break }
                (base + i).moveInitialize(from: base + parent, count: 1)
                base[i].timer.heapIndex = i
                i = parent
            }
            moving.timer.heapIndex = i
            (base + i).initialize(to: moving)
        }
    }

    /// Moves the slot at `start` down while a child precedes it (a hole moves, as in `siftUp`).
    private func siftDown(_ start: Int) {
        heap.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            let n = buffer.count
            var i = start
            let moving = (base + i).move()
            while true {
                let first = Self.arity * i + 1
                guard first < n else { break }
                var m = first
                var c = first + 1
                let end = min(first + Self.arity, n)
                while c < end {
                    if base[c].precedes(base[m]) { m = c }
                    c += 1
                }
                guard base[m].precedes(moving) else { break }
                (base + i).moveInitialize(from: base + m, count: 1)
                base[i].timer.heapIndex = i
                i = m
            }
            moving.timer.heapIndex = i
            (base + i).initialize(to: moving)
        }
    }
}

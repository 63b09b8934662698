/// The one thread of control a lab runs on. Protocol code gets the time and schedules work only
/// through this interface: it never reads the wall clock, sleeps, or uses a global queue.
public protocol EventLoop: AnyObject {
    /// The loop's current time.
    var now: Instant { get }

    /// Runs `task` at `deadline` (or as soon as possible if that has passed). Tasks with equal
    /// deadlines run in the order they were scheduled.
    @discardableResult
    func schedule(at deadline: Instant, _ task: @escaping () -> Void) -> LoopTimer

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
    public let deadline: Instant
    let sequence: UInt64
    var task: (() -> Void)?
    /// Index in the loop's heap, or -1 when not scheduled.
    var heapIndex: Int = -1
    weak var owner: TimerQueue?

    init(deadline: Instant, sequence: UInt64, task: @escaping () -> Void) {
        self.deadline = deadline
        self.sequence = sequence
        self.task = task
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
}

/// A binary min-heap of timers ordered by (deadline, sequence): the order that makes a run
/// deterministic. Shared by the virtual and system loops.
final class TimerQueue {
    private var heap: [LoopTimer] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var first: LoopTimer? { heap.first }

    func insert(_ timer: LoopTimer) {
        timer.owner = self
        timer.heapIndex = heap.count
        heap.append(timer)
        siftUp(heap.count - 1)
    }

    func popFirst() -> LoopTimer? {
        guard !heap.isEmpty else { return nil }
        let top = heap[0]
        removeAt(0)
        return top
    }

    func remove(_ timer: LoopTimer) {
        let i = timer.heapIndex
        guard i >= 0, i < heap.count, heap[i] === timer else { return }
        removeAt(i)
    }

    private func removeAt(_ i: Int) {
        let last = heap.count - 1
        heap[i].heapIndex = -1
        if i != last {
            heap[i] = heap[last]
            heap[i].heapIndex = i
            heap.removeLast()
            siftDown(i)
            siftUp(i)
        } else {
            heap.removeLast()
        }
    }

    @inline(__always) private func less(_ a: LoopTimer, _ b: LoopTimer) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.sequence < b.sequence)
    }

    private func siftUp(_ start: Int) {
        var i = start
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(heap[i], heap[parent]) else { return }
            heap.swapAt(i, parent)
            heap[i].heapIndex = i
            heap[parent].heapIndex = parent
            i = parent
        }
    }

    private func siftDown(_ start: Int) {
        var i = start
        let n = heap.count
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < n, less(heap[l], heap[m]) { m = l }
            if r < n, less(heap[r], heap[m]) { m = r }
            guard m != i else { return }
            heap.swapAt(i, m)
            heap[i].heapIndex = i
            heap[m].heapIndex = m
            i = m
        }
    }
}

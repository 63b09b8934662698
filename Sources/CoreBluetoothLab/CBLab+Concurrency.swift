import BLERuntime
import Foundation

// Swift concurrency on the lab: a clock on its virtual time (`LabClock`), an executor that runs
// jobs as tasks of its loop (`LabExecutor`), and the lab current in tasks (`CBLab.current`).
//
// An async app (delegates wrapped in `withCheckedContinuation` and `AsyncStream`s) runs
// unchanged; what it must be given is time and a place to run: `Task.sleep(for:)` sleeps on the
// wall clock, and a `Task { }` runs on the global pool, in parallel with the loop. Inject
// `lab.clock` where the app sleeps and start its tasks with `lab.task { }` (or
// `Task(executorPreference: lab.executor)`): every job then runs on the thread that runs the
// loop, at a virtual instant, in loop order, and the same seed gives the same timeline.

extension CBLab: @unchecked Sendable, LabLocked {
    var labLock: LabLock? { lock }

    /// The lab a task started inside `attach(_:)` or `task(_:)` (or by such a task) belongs to:
    /// managers created in it join that lab, on whatever thread the task runs.
    @TaskLocal static var taskLab: CBLab?

    /// The lab's virtual clock, for async code: `try await clock.sleep(for: .seconds(1))` returns
    /// when a second of the lab's virtual time has passed.
    public var clock: LabClock { LabClock(loop: loop, lock: lock) }

    /// Starts `body` as a task whose jobs run on the lab's loop (`executor`), with the lab current
    /// in it. It runs while the lab runs (`run(for:)`, `run(within:until:)`).
    @discardableResult
    public func task<Success: Sendable>(_ body: sending @escaping () async throws -> Success) -> Task<Success, any Error> {
        Task(executorPreference: executor) { [self] in
            try await CBLab.$taskLab.withValue(self) { try await body() }
        }
    }

    /// The same for a body that does not throw.
    @discardableResult
    public func task<Success: Sendable>(_ body: sending @escaping () async -> Success) -> Task<Success, Never> {
        Task(executorPreference: executor) { [self] in
            await CBLab.$taskLab.withValue(self) { await body() }
        }
    }
}

/// Runs Swift concurrency jobs as tasks of a lab's virtual loop, in the order they were enqueued,
/// on the thread that runs the loop, with the lab's lock held. As a task executor
/// (`Task(executorPreference: lab.executor)`, `withTaskExecutorPreference(lab.executor)`) it runs
/// a task's nonisolated code; as a serial executor it can back an app's actor
/// (`nonisolated var unownedExecutor: UnownedSerialExecutor { lab.executor.asUnownedSerialExecutor() }`).
///
/// A job enqueued from another thread while the lab runs waits for the run to end (the lab's
/// lock); one enqueued while it does not run waits for the next run.
public final class LabExecutor: TaskExecutor, SerialExecutor, @unchecked Sendable {
    private let loop: VirtualEventLoop
    private let lock: LabLock

    init(loop: VirtualEventLoop, lock: LabLock) {
        self.loop = loop
        self.lock = lock
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        lock.locked {
            loop.execute { [self] in
                job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
        }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Code isolated to this executor runs only as a loop task, on the thread holding the lock.
    public func checkIsolated() {
        precondition(lock.isHeldByCurrentThread, "not on the lab's loop")
    }
}

/// A lab's virtual clock as a Swift `Clock`: inject it where the app sleeps
/// (`try await clock.sleep(for: .seconds(1))`, `Task.sleep(for:clock:)`). A sleep is a timer on
/// the lab's loop: it ends when the loop reaches its deadline, and the task resumes at that
/// virtual instant (on the lab's loop when it runs on `lab.executor`). Cancelling the task ends
/// the sleep with `CancellationError`.
public struct LabClock: Clock, @unchecked Sendable {
    /// A point in the lab's virtual time: the time since the lab started.
    public struct Instant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
        public var sinceStart: Swift.Duration

        public init(sinceStart: Swift.Duration) { self.sinceStart = sinceStart }

        public func advanced(by duration: Swift.Duration) -> Instant { Instant(sinceStart: sinceStart + duration) }
        public func duration(to other: Instant) -> Swift.Duration { other.sinceStart - sinceStart }
        public static func < (a: Instant, b: Instant) -> Bool { a.sinceStart < b.sinceStart }
        public var description: String { "\(BLERuntime.Instant(sinceStart: sinceStart))" }
    }

    private let loop: VirtualEventLoop
    private let lock: LabLock

    init(loop: VirtualEventLoop, lock: LabLock) {
        self.loop = loop
        self.lock = lock
    }

    public var now: Instant { lock.locked { Instant(sinceStart: .nanoseconds(loop.now.nanoseconds)) } }
    public var minimumResolution: Swift.Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Swift.Duration? = nil) async throws {
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard sleeper.store(continuation) else { return }
                lock.locked {
                    let timer = loop.schedule(at: BLERuntime.Instant(sinceStart: deadline.sinceStart)) { sleeper.wake(nil) }
                    sleeper.timer = timer
                }
            }
        } onCancel: {
            // Not under the lab's lock: the task runtime may hold locks of its own here. The
            // timer stays on the loop and finds the sleeper woken.
            sleeper.wake(CancellationError())
        }
    }

    /// One sleep: its continuation, resumed once, by the timer or by cancellation.
    private final class Sleeper: @unchecked Sendable {
        private let mutex = NSLock()
        private var continuation: CheckedContinuation<Void, any Error>?
        private var cancelled = false
        var timer: LoopTimer?

        /// False (and the continuation resumed) when the task was cancelled already.
        func store(_ continuation: CheckedContinuation<Void, any Error>) -> Bool {
            mutex.lock()
            if cancelled {
                mutex.unlock()
                continuation.resume(throwing: CancellationError())
                return false
            }
            self.continuation = continuation
            mutex.unlock()
            return true
        }

        func wake(_ error: (any Error)?) {
            mutex.lock()
            if error != nil { cancelled = true }
            let continuation = self.continuation
            self.continuation = nil
            mutex.unlock()
            if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
        }
    }
}

extension BLERuntime.Instant {
    init(sinceStart duration: Swift.Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(nanoseconds: seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

extension TimeSpan {
    /// A Swift `Duration` as a span of the lab's time (nanoseconds).
    public init(_ duration: Swift.Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(nanoseconds: seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blelab run --jobs N`: scenario runs on N worker threads, each with a runner (a backend) of its
/// own, taken from one list in a given order (the longest first: see `BLELabCLI.startOrder`), while
/// the calling thread takes their results in the list's own order. Results wait for their turn in
/// memory, so no run starts more than `window` places after the one the caller waits for: memory
/// stays bounded however many runs (`--repeat`); within the window the given order holds, beyond
/// it the runs start in list order. The calling thread alone writes files and prints, so everything a run leaves — captures
/// and their names, the console's lines, JUnit, the timeline — comes in the order and with the
/// content of a run with one job; only wall times differ.
///
/// Each run builds its own lab (its own loop, air, controllers and hosts), and nothing below the
/// runner has global mutable state (docs/architecture.md, STYLE 9): runs on different threads
/// share only the scenarios, which they read.
final class ParallelRuns<Result> {
    private let lock = Lock()
    private let order: [Int]
    private let window: Int
    /// The first position in `order` not taken yet, and the first index (list order) not taken.
    private var nextInOrder = 0
    private var nextInList = 0
    private var taken: [Bool]
    /// How many results the caller has taken (it takes them in list order).
    private var released = 0
    private var results: [Result?]
    private var threads: [pthread_t] = []

    /// Starts one thread per element of `workers`; thread k calls `workers[k]` with each index it
    /// takes from 0..<count, taken in the order of `order` (a permutation of 0..<count) across threads.
    init(count: Int, order: [Int]? = nil, window: Int = 256, workers: [(Int) -> Result]) {
        results = Array(repeating: nil, count: count)
        taken = Array(repeating: false, count: count)
        self.window = max(1, window)
        self.order = order ?? Array(0..<count)
        precondition(self.order.sorted() == Array(0..<count), "order must be a permutation of the runs")
        for work in workers {
            threads.append(Thread.start { [self] in
                while let index = self.take() {
                    let result = work(index)
                    self.lock.locked { self.results[index] = result }
                    self.lock.broadcast()
                }
            })
        }
    }

    private func take() -> Int? {
        lock.locked {
            while true {
                while nextInOrder < order.count, taken[order[nextInOrder]] { nextInOrder += 1 }
                while nextInList < taken.count, taken[nextInList] { nextInList += 1 }
                guard nextInList < taken.count else { return nil }
                // The next in the given order if it is within the window, else the first in
                // list order if that is (always so once the caller has caught up), else wait.
                let candidates = [nextInOrder < order.count ? order[nextInOrder] : nextInList, nextInList]
                if let index = candidates.first(where: { $0 < released + window }) {
                    taken[index] = true
                    return index
                }
                lock.wait()
            }
        }
    }

    /// The result of run `index`, waiting for it; the caller takes each once (it is released).
    func result(_ index: Int) -> Result {
        lock.locked {
            while results[index] == nil { lock.wait() }
            defer {
                results[index] = nil
                released = max(released, index + 1)
                lock.signalAll()
            }
            return results[index]!
        }
    }

    /// Waits until every thread has ended (all runs taken).
    func join() {
        for thread in threads { pthread_join(thread, nil) }
        threads = []
    }

    deinit { join() }
}

/// A pthread mutex with its condition variable, on memory that never moves.
final class Lock {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// With the lock held (inside `locked`): releases it until `broadcast`, then holds it again.
    func wait() { pthread_cond_wait(condition, mutex) }

    func broadcast() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// `broadcast` with the lock held (inside `locked`).
    func signalAll() { pthread_cond_broadcast(condition) }
}

/// Starting a pthread on a Swift closure.
enum Thread {
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// A scenario's stack goes deep (a lab's callbacks nest): as much stack as the main thread's
    /// usual 8 MiB.
    static let stackSize = 8 << 20

    static func start(_ body: @escaping () -> Void) -> pthread_t {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setstacksize(&attributes, stackSize)
        defer { pthread_attr_destroy(&attributes) }
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
#if canImport(Glibc)
        var thread = pthread_t()
#else
        var thread: pthread_t?
#endif
        let status = pthread_create(&thread, &attributes, { context in
            let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
            body.run()
            return nil
        }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
#if canImport(Glibc)
        return thread
#else
        return thread!
#endif
    }
}

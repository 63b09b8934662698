import BLELab
import BLERuntime
import CoreBluetoothLab
import Dispatch
import Foundation
import XCTest

/// Swift concurrency on the lab: `lab.clock` sleeps on virtual time, `lab.task` / `lab.executor`
/// run jobs as loop tasks (same seed, same order), and a manager created in a task joins the lab.
final class AsyncLabTests: XCTestCase {
    /// What a task hands back to the test thread, which reads it only after the loop ran it.
    private final class Box<T>: @unchecked Sendable {
        private let mutex = NSLock()
        private var stored: T

        init(_ value: T) { stored = value }

        var value: T {
            get { mutex.withLock { stored } }
            set { mutex.withLock { stored = newValue } }
        }
    }

    func testTheClockSleepsOnVirtualTime() throws {
        let lab = CBLab(seed: 1)
        let clock = lab.clock
        let woke = Box<[Duration]>([])
        lab.task {
            let start = clock.now
            for _ in 0..<10 {
                try await clock.sleep(for: .seconds(1))
                woke.value.append(start.duration(to: clock.now))
            }
            try await Task.sleep(for: .milliseconds(250), clock: clock)
            woke.value.append(start.duration(to: clock.now))
        }
        lab.run(for: .milliseconds(4_500))
        XCTAssertEqual(woke.value, (1...4).map { .seconds($0) }, "four of the ten one-second sleeps in 4.5 s")
        lab.run(for: .seconds(10))
        XCTAssertEqual(woke.value, (1...10).map { .seconds($0) } + [.milliseconds(10_250)])
        XCTAssertEqual(lab.now, Instant(nanoseconds: 14_500_000_000))
    }

    func testASleepingTaskCancelledEndsWithCancellationError() throws {
        let lab = CBLab(seed: 1)
        let clock = lab.clock
        let outcome = Box<String?>(nil)
        let task = lab.task {
            do {
                try await clock.sleep(for: .seconds(60))
                outcome.value = "slept"
            } catch {
                outcome.value = "\(type(of: error)) at \(clock.now)"
            }
        }
        lab.run(for: .seconds(5))
        XCTAssertNil(outcome.value)
        task.cancel()
        lab.run(for: .seconds(1))
        XCTAssertEqual(outcome.value, "CancellationError at \(LabClock.Instant(sinceStart: .seconds(5)))")
    }

    /// Tasks on the lab's executor interleave in loop order: each wakes at its virtual instant,
    /// ties in the order the sleeps began, and a run with the same seed gives the same trace.
    func testTasksOnTheLabExecutorInterleaveDeterministically() throws {
        func trace() -> [String] {
            let lab = CBLab(seed: 3)
            let clock = lab.clock
            let lines = Box<[String]>([])
            for (name, period) in [("a", 300), ("b", 200), ("c", 300)] {
                lab.task {
                    for step in 0..<4 {
                        try await clock.sleep(for: .milliseconds(period))
                        lines.value.append("\(clock.now) \(name)\(step)")
                        // A child task (async let) inherits the executor: it runs on the loop too.
                        async let echoed = Task.isCancelled ? "" : name.uppercased()
                        lines.value.append("\(clock.now) \(await echoed)\(step)")
                    }
                }
            }
            lab.run(for: .seconds(2))
            return lines.value
        }
        let first = trace()
        XCTAssertEqual(first.count, 24)
        XCTAssertEqual(Array(first.prefix(8)), [
            "200ms b0", "200ms B0",
            // a's and c's timers both fire at 0.3 s before either task's job runs.
            "300ms a0", "300ms c0", "300ms A0", "300ms C0",
            "400ms b1", "400ms B1",
        ])
        XCTAssertEqual(trace(), first)
    }

    /// The cause of `.unsupported` in a task: the current lab was per thread, and a task runs on
    /// a pool thread. Now a task started inside `attach` (or by `lab.task`) carries the lab.
    func testAManagerCreatedInATaskJoinsTheLab() throws {
        let lab = CBLab(seed: 4)
        let made = Box<CBCentralManager?>(nil)
        let poolThread = Box<Bool?>(nil)
        let created = DispatchSemaphore(value: 0)
        _ = lab.attach {
            Task {
                poolThread.value = !Thread.isMainThread
                made.value = CBCentralManager(delegate: nil, queue: nil)
                created.signal()
            }
        }
        // The task runs on the global pool: the test waits for it, then runs the loop.
        created.wait()
        XCTAssertEqual(poolThread.value, true)
        XCTAssertEqual(made.value?.state, .unknown, "not .unsupported: powering on")
        XCTAssertTrue(lab.run(within: .seconds(5)) { made.value?.state == .poweredOn })

        let onLoop = Box<CBCentralManager?>(nil)
        lab.task { onLoop.value = CBCentralManager() }
        XCTAssertTrue(lab.run(within: .seconds(5)) { onLoop.value?.state == .poweredOn })

        // A detached task outside any lab still finds none, as on hardware without Bluetooth LE.
        let detached = Box<CBManagerState?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached { detached.value = CBCentralManager().state; done.signal() }
        done.wait()
        XCTAssertEqual(detached.value, .unsupported)
    }

    /// An actor whose executor is the lab's: its methods run as loop tasks.
    private actor Counter {
        let lab: CBLab
        var ticks: [String] = []
        nonisolated var unownedExecutor: UnownedSerialExecutor { lab.executor.asUnownedSerialExecutor() }

        init(lab: CBLab) { self.lab = lab }

        func tick(_ clock: LabClock) async throws {
            for _ in 0..<3 {
                try await clock.sleep(for: .milliseconds(500))
                lab.executor.checkIsolated()
                ticks.append("\(clock.now)")
            }
        }
    }

    func testAnActorOnTheLabExecutorRunsOnTheLoop() throws {
        let lab = CBLab(seed: 5)
        let counter = Counter(lab: lab)
        let clock = lab.clock
        let ticks = Box<[String]>([])
        lab.task {
            try await counter.tick(clock)
            ticks.value = await counter.ticks
        }
        lab.run(for: .seconds(2))
        XCTAssertEqual(ticks.value, ["500ms", "1s", "1.5s"])
    }
}

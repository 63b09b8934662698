import XCTest
import BLERuntime

/// Thousands of timers against a reference that simply sorts: the heap, its removals and the
/// ready queue must together fire everything in (deadline, scheduling order).
final class TimerOrderFuzzTests: XCTestCase {

    func testRandomDeadlinesAndCancellationsFireInSortedOrder() {
        let loop = VirtualEventLoop()
        var random = SeededRandom(seed: 2024, stream: "timers")
        let count = 8_000
        // Few distinct deadlines, so ties (broken by scheduling order) are common.
        let deadlines = (0..<count).map { _ in Instant(nanoseconds: random.int(in: 0...999) * 1_000_000) }
        var fired: [Int] = []
        var timers: [LoopTimer] = []
        for (id, deadline) in deadlines.enumerated() {
            timers.append(loop.schedule(at: deadline) {
                XCTAssertEqual(loop.now, deadline, "timer \(id) ran at the wrong time")
                fired.append(id)
            })
        }
        var cancelled = Set<Int>()
        for _ in 0..<count / 3 {
            let id = Int(random.int(in: 0...Int64(count - 1)))
            timers[id].cancel()
            cancelled.insert(id)
        }

        loop.runUntilIdle()

        let expected = (0..<count).filter { !cancelled.contains($0) }
            .sorted { (deadlines[$0], $0) < (deadlines[$1], $1) }
        XCTAssertEqual(fired.count, expected.count)
        XCTAssertTrue(fired == expected, "fire order differs from the sorted order")
        XCTAssertEqual(loop.now, expected.last.map { deadlines[$0] })
        XCTAssertTrue(timers.allSatisfy { !$0.isPending })
    }

    /// While running, tasks cancel other timers (pending, fired, or themselves) and schedule new ones,
    /// some due at once and some via `execute`. The reference replays the same decisions on a plain
    /// sorted list; the decisions come from a generator drawn in firing order, so any divergence in
    /// order shows up as a different history.
    func testCancellingAndSchedulingFromInsideTasksMatchesAReference() {
        let initialCount = 4_000
        var setup = SeededRandom(seed: 99, stream: "deadlines")
        let initialDeadlines = (0..<initialCount).map { _ in setup.int(in: 0...500) * 1_000_000 }

        let actual = runOnLoop(initialDeadlines)
        let expected = runOnReference(initialDeadlines)
        XCTAssertGreaterThan(expected.count, initialCount / 2)
        XCTAssertEqual(actual.count, expected.count)
        if let i = actual.indices.first(where: { $0 < expected.count && actual[$0] != expected[$0] }) {
            XCTFail("step \(i): loop ran \(actual[i]), reference \(expected[i])")
        }
    }

    /// `reschedule` against `cancel` + `schedule`: the same random program, in which tasks move
    /// other timers (pending, fired, cancelled, or themselves) to new deadlines, some in the past,
    /// runs the same history on a loop that reschedules as on one that cancels and schedules anew.
    func testReschedulingRunsExactlyAsCancelAndSchedule() {
        let viaReschedule = runMoving(seed: 5, rescheduling: true)
        let viaCancel = runMoving(seed: 5, rescheduling: false)
        XCTAssertGreaterThan(viaCancel.count, 1_500)
        XCTAssertEqual(viaReschedule.count, viaCancel.count)
        if let i = viaReschedule.indices.first(where: { $0 < viaCancel.count && viaReschedule[$0] != viaCancel[$0] }) {
            XCTFail("step \(i): rescheduling ran \(viaReschedule[i]), cancel + schedule \(viaCancel[i])")
        }
    }

    private func runMoving(seed: UInt64, rescheduling: Bool) -> [Step] {
        let loop = VirtualEventLoop()
        var setup = SeededRandom(seed: seed, stream: "deadlines")
        var decisions = SeededRandom(seed: seed, stream: "moves")
        // The timer that runs each task id (nil for executed tasks); a move gives the new run a new
        // id, and the timer of the id it moved runs that new id from then on.
        var timers: [LoopTimer?] = []
        var steps: [Step] = []
        var moves = 0

        func task(_ id: Int) -> () -> Void {
            {
                steps.append(Step(id: id, time: loop.now.nanoseconds))
                guard steps.count < 6_000 else { return }
                switch decisions.int(in: 0...9) {
                case 0...3:
                    let target = Int(decisions.int(in: 0...Int64(timers.count - 1)))
                    // From up to 5 ms in the past (clamped to now) to 30 ms ahead.
                    let deadline = loop.now + .nanoseconds(decisions.int(in: -5...30) * 1_000_000)
                    guard let timer = timers[target] else { break }
                    let child = timers.count
                    timers.append(nil)
                    moves += 1
                    if rescheduling {
                        loop.reschedule(timer, at: deadline, task(child))
                        timers[child] = timer
                    } else {
                        timer.cancel()
                        timers[child] = loop.schedule(at: deadline, task(child))
                    }
                    timers[target] = nil
                case 4:
                    let target = Int(decisions.int(in: 0...Int64(timers.count - 1)))
                    timers[target]?.cancel()
                case 5...6:
                    let child = timers.count
                    timers.append(nil)
                    timers[child] = loop.schedule(after: .nanoseconds(decisions.int(in: 0...20) * 1_000_000), task(child))
                case 7:
                    let child = timers.count
                    timers.append(nil)
                    loop.execute(task(child))
                default: break
                }
            }
        }
        for id in 0..<1_000 {
            timers.append(loop.schedule(at: Instant(nanoseconds: setup.int(in: 0...100) * 1_000_000), task(id)))
        }
        loop.runUntilIdle()
        XCTAssertGreaterThan(moves, 500)
        return steps
    }

    /// What a task decides to do when it runs.
    private enum Action {
        case nothing
        case cancel(Int)
        case schedule(delayNanoseconds: Int64)
        case execute

        static func draw(_ random: inout SeededRandom, created: Int) -> Action {
            switch random.int(in: 0...9) {
            case 0...2: return .cancel(Int(random.int(in: 0...Int64(created - 1))))
            case 3...4: return .schedule(delayNanoseconds: random.int(in: 0...40) * 1_000_000)
            case 5: return .schedule(delayNanoseconds: 0)
            case 6: return .execute
            default: return .nothing
            }
        }
    }

    /// (id, time) in the order tasks ran.
    private struct Step: Equatable, CustomStringConvertible {
        let id: Int
        let time: Int64
        var description: String { "task \(id) at \(time) ns" }
    }

    private func runOnLoop(_ initialDeadlines: [Int64]) -> [Step] {
        let loop = VirtualEventLoop()
        var decisions = SeededRandom(seed: 99, stream: "actions")
        var timers: [LoopTimer?] = []
        var steps: [Step] = []

        func task(_ id: Int) -> () -> Void {
            {
                steps.append(Step(id: id, time: loop.now.nanoseconds))
                switch Action.draw(&decisions, created: timers.count) {
                case .nothing: break
                case let .cancel(target): timers[target]?.cancel()
                case let .schedule(delay):
                    let child = timers.count
                    timers.append(nil)
                    timers[child] = loop.schedule(after: .nanoseconds(delay), task(child))
                case .execute:
                    let child = timers.count
                    timers.append(nil)   // executes cannot be cancelled
                    loop.execute(task(child))
                }
            }
        }
        for (id, deadline) in initialDeadlines.enumerated() {
            timers.append(loop.schedule(at: Instant(nanoseconds: deadline), task(id)))
        }
        loop.runUntilIdle()
        return steps
    }

    private func runOnReference(_ initialDeadlines: [Int64]) -> [Step] {
        var decisions = SeededRandom(seed: 99, stream: "actions")
        // Pending entries sorted by (deadline, sequence); the sequence is the creation order.
        var pending: [(deadline: Int64, sequence: Int)] = []
        var cancellable: [Bool] = []
        var cancelled: Set<Int> = []
        var now: Int64 = 0
        var steps: [Step] = []

        func insert(deadline: Int64, sequence: Int) {
            // A new sequence is the largest so far: it goes after every entry not later than it.
            let index = pending.firstIndex { $0.deadline > deadline } ?? pending.endIndex
            pending.insert((deadline, sequence), at: index)
        }
        for (id, deadline) in initialDeadlines.enumerated() {
            insert(deadline: deadline, sequence: id)
            cancellable.append(true)
        }
        var head = 0
        while head < pending.count {
            let (deadline, id) = pending[head]
            head += 1
            if cancelled.contains(id) { continue }
            cancelled.insert(id)   // ran: a later cancel is a no-op, exactly as cancelling
            now = max(now, deadline)
            steps.append(Step(id: id, time: now))
            switch Action.draw(&decisions, created: cancellable.count) {
            case .nothing: break
            case let .cancel(target): if cancellable[target] { cancelled.insert(target) }
            case let .schedule(delay):
                insert(deadline: now + delay, sequence: cancellable.count)
                cancellable.append(true)
            case .execute:
                insert(deadline: now, sequence: cancellable.count)
                cancellable.append(false)
            }
            if head > 1_024 { pending.removeFirst(head); head = 0 }
        }
        return steps
    }
}

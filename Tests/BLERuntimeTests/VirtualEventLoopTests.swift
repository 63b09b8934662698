import XCTest
import BLERuntime

final class VirtualEventLoopTests: XCTestCase {
    private var loop: VirtualEventLoop!
    /// What ran, in order, with the loop's time when it ran.
    private var log: [String] = []

    override func setUp() {
        loop = VirtualEventLoop()
        log = []
    }

    /// A task that records its name and the time it ran at.
    private func note(_ name: String) -> () -> Void {
        { [unowned self] in self.log.append("\(name)@\(self.loop.now)") }
    }

    // MARK: Order

    func testTimersRunInDeadlineOrder() {
        loop.schedule(at: .seconds(3), note("c"))
        loop.schedule(at: .seconds(1), note("a"))
        loop.schedule(at: .seconds(2), note("b"))
        XCTAssertEqual(loop.runUntilIdle(), 3)
        XCTAssertEqual(log, ["a@1s", "b@2s", "c@3s"])
    }

    func testEqualDeadlinesRunInSchedulingOrder() {
        for name in ["first", "second", "third", "fourth"] {
            loop.schedule(at: .milliseconds(10), note(name))
        }
        loop.schedule(at: .milliseconds(5), note("earlier"))
        loop.runUntilIdle()
        XCTAssertEqual(log, ["earlier@5ms", "first@10ms", "second@10ms", "third@10ms", "fourth@10ms"])
    }

    func testExecuteRunsAtTheCurrentTimeAfterWorkAlreadyDue() {
        loop.schedule(at: .seconds(2), note("timer due at 2s, scheduled first"))
        loop.schedule(at: .seconds(2)) { [unowned self] in
            self.log.append("task@\(self.loop.now)")
            self.loop.execute(self.note("executed 1"))
            self.loop.schedule(after: .zero, self.note("timer due now"))
            self.loop.execute(self.note("executed 2"))
        }
        loop.schedule(at: .seconds(2), note("timer due at 2s, scheduled third"))
        loop.runUntilIdle()
        XCTAssertEqual(log, [
            "timer due at 2s, scheduled first@2s",
            "task@2s",
            "timer due at 2s, scheduled third@2s",   // already due, and scheduled before the executes
            "executed 1@2s",
            "timer due now@2s",
            "executed 2@2s",
        ])
    }

    func testATimerDueNowScheduledBeforeAnExecuteRunsFirst() {
        loop.schedule(at: loop.now, note("timer"))
        loop.execute(note("execute"))
        loop.runUntilIdle()
        XCTAssertEqual(log, ["timer@0s", "execute@0s"])
    }

    func testAnExecuteBeforeATimerDueNowRunsFirst() {
        loop.execute(note("execute"))
        loop.schedule(at: loop.now, note("timer"))
        loop.runUntilIdle()
        XCTAssertEqual(log, ["execute@0s", "timer@0s"])
    }

    func testExecuteDoesNotWaitForALaterTimer() {
        loop.schedule(at: .seconds(1), note("timer"))
        loop.execute(note("execute"))
        loop.runUntilIdle()
        XCTAssertEqual(log, ["execute@0s", "timer@1s"])
    }

    func testADeadlineInThePastMeansNowAfterWhatIsAlreadyDue() {
        loop.advance(by: .seconds(5))
        loop.execute(note("already due"))
        let late = loop.schedule(at: .seconds(1), note("late"))
        XCTAssertEqual(late.deadline, .seconds(5), "clamped to the current time")
        loop.runUntilIdle()
        XCTAssertEqual(log, ["already due@5s", "late@5s"])
    }

    func testTasksSchedulingTasks() {
        var ticks = 0
        func tick() {
            ticks += 1
            log.append("tick \(ticks)@\(loop.now)")
            if ticks < 4 { loop.schedule(after: .milliseconds(250), tick) }
            if ticks == 2 { loop.execute(note("executed from tick 2")) }
        }
        loop.schedule(after: .milliseconds(250), tick)
        XCTAssertEqual(loop.runUntilIdle(), 5)
        XCTAssertEqual(log, ["tick 1@250ms", "tick 2@500ms", "executed from tick 2@500ms", "tick 3@750ms", "tick 4@1s"])
    }

    // MARK: Cancelling

    func testACancelledTimerNeverRunsAndDoesNotMoveTheClock() {
        let timer = loop.schedule(at: .seconds(30), note("cancelled"))
        XCTAssertTrue(timer.isPending)
        timer.cancel()
        XCTAssertFalse(timer.isPending)
        XCTAssertTrue(loop.isIdle)
        XCTAssertNil(loop.nextDeadline)
        XCTAssertEqual(loop.runUntilIdle(), 0)
        XCTAssertEqual(log, [])
        XCTAssertEqual(loop.now, .zero, "nothing was left to jump to")
        timer.cancel()   // twice is harmless
    }

    func testCancellingOneOfSeveralLeavesTheOthersInOrder() {
        loop.schedule(at: .seconds(1), note("a"))
        let b = loop.schedule(at: .seconds(1), note("b"))
        loop.schedule(at: .seconds(1), note("c"))
        loop.schedule(at: .seconds(2), note("d"))
        b.cancel()
        loop.runUntilIdle()
        XCTAssertEqual(log, ["a@1s", "c@1s", "d@2s"])
    }

    func testCancelAfterFiringIsANoOp() {
        let fired = loop.schedule(at: .seconds(1), note("fired"))
        loop.schedule(at: .seconds(2), note("later"))
        loop.advance(by: .seconds(1))
        XCTAssertFalse(fired.isPending)
        fired.cancel()
        loop.runUntilIdle()
        XCTAssertEqual(log, ["fired@1s", "later@2s"])
    }

    func testCancelFromInsideAnotherTaskAtTheSameDeadline() {
        var victim: LoopTimer!
        loop.schedule(at: .seconds(1)) { [unowned self] in
            self.log.append("canceller")
            victim.cancel()
        }
        victim = loop.schedule(at: .seconds(1), note("victim"))
        loop.schedule(at: .seconds(1), note("bystander"))
        loop.runUntilIdle()
        XCTAssertEqual(log, ["canceller", "bystander@1s"])
        XCTAssertFalse(victim.isPending)
    }

    func testATaskCancellingItsOwnTimerIsHarmless() {
        var timer: LoopTimer!
        timer = loop.schedule(at: .seconds(1)) { [unowned self] in
            XCTAssertFalse(timer.isPending, "a running timer is no longer pending")
            timer.cancel()
            self.log.append("ran")
        }
        loop.schedule(at: .seconds(1), note("next"))
        loop.runUntilIdle()
        XCTAssertEqual(log, ["ran", "next@1s"])
    }

    // MARK: Rescheduling (the same order and deadlines as cancel + schedule)

    func testReschedulingAPendingTimerMovesItAfterWhatIsAlreadyScheduledForItsNewDeadline() {
        let moved = loop.schedule(at: .milliseconds(10), note("old task"))
        loop.schedule(at: .milliseconds(30), note("scheduled before the move"))
        loop.reschedule(moved, at: .milliseconds(30), note("moved"))
        loop.schedule(at: .milliseconds(30), note("scheduled after the move"))
        XCTAssertTrue(moved.isPending)
        XCTAssertEqual(moved.deadline, .milliseconds(30))
        XCTAssertEqual(loop.runUntilIdle(), 3, "the old task is gone, as if cancelled")
        XCTAssertEqual(log, ["scheduled before the move@30ms", "moved@30ms", "scheduled after the move@30ms"])
        XCTAssertFalse(moved.isPending)
    }

    func testReschedulingEarlierRunsAtTheNewDeadline() {
        let moved = loop.schedule(at: .seconds(5), note("moved"))
        loop.schedule(at: .seconds(2), note("other"))
        loop.reschedule(moved, at: .seconds(1), note("moved"))
        loop.runUntilIdle()
        XCTAssertEqual(log, ["moved@1s", "other@2s"])
    }

    func testATimerRescheduledFromItsOwnTaskRecursOnOneTimer() {
        var timer: LoopTimer?
        var runs = 0
        func tick() {
            runs += 1
            log.append("tick \(runs)@\(loop.now)")
            if runs < 4 { loop.reschedule(timer!, at: loop.now + .milliseconds(250), tick) }
        }
        timer = loop.schedule(at: .milliseconds(250), tick)
        let first = timer
        XCTAssertEqual(loop.runUntilIdle(), 4)
        XCTAssertEqual(log, ["tick 1@250ms", "tick 2@500ms", "tick 3@750ms", "tick 4@1s"])
        XCTAssertTrue(timer === first)
        XCTAssertFalse(timer!.isPending)
    }

    func testReschedulingACancelledTimerMakesItPendingAgain() {
        let timer = loop.schedule(at: .seconds(1), note("cancelled"))
        timer.cancel()
        loop.reschedule(timer, at: .seconds(2), note("rescheduled"))
        XCTAssertTrue(timer.isPending)
        loop.runUntilIdle()
        XCTAssertEqual(log, ["rescheduled@2s"])
    }

    func testReschedulingToAPastDeadlineMeansNowAfterWhatIsAlreadyDue() {
        let timer = loop.schedule(at: .seconds(9), note("old"))
        loop.advance(by: .seconds(5))
        loop.execute(note("already due"))
        loop.reschedule(timer, at: .seconds(1), note("late"))
        loop.execute(note("executed after"))
        XCTAssertEqual(timer.deadline, .seconds(5), "clamped to the current time")
        loop.runUntilIdle()
        XCTAssertEqual(log, ["already due@5s", "late@5s", "executed after@5s"])
    }

    func testANewTimerIsNotPendingUntilRescheduledAndThenRunsAsIfScheduled() {
        let timer = LoopTimer()
        XCTAssertFalse(timer.isPending)
        timer.cancel()   // harmless
        loop.schedule(at: .seconds(1), note("scheduled before"))
        loop.reschedule(timer, at: .seconds(1), note("new timer"))
        loop.schedule(at: .seconds(1), note("scheduled after"))
        XCTAssertTrue(timer.isPending)
        XCTAssertEqual(timer.deadline, .seconds(1))
        XCTAssertEqual(timer.remaining(on: loop), .seconds(1))
        loop.runUntilIdle()
        XCTAssertEqual(log, ["scheduled before@1s", "new timer@1s", "scheduled after@1s"])
    }

    func testAfterReschedulingCancelStopsTheNewRun() {
        let timer = loop.schedule(at: .seconds(1), note("first"))
        loop.reschedule(timer, at: .seconds(2), note("second"))
        timer.cancel()
        XCTAssertEqual(loop.runUntilIdle(), 0)
        XCTAssertEqual(log, [])
    }

    // MARK: Time

    func testTheClockJumpsToTheNextDeadlineWhenIdle() {
        loop.schedule(at: .seconds(10), note("far"))
        XCTAssertEqual(loop.nextDeadline, .seconds(10))
        XCTAssertTrue(loop.runOne())
        XCTAssertEqual(loop.now, .seconds(10))
        XCTAssertEqual(log, ["far@10s"])
        XCTAssertFalse(loop.runOne(), "nothing left")
        XCTAssertEqual(loop.now, .seconds(10))
    }

    func testRunOneRespectsItsLimit() {
        loop.schedule(at: .seconds(10), note("far"))
        XCTAssertFalse(loop.runOne(notAfter: .seconds(9)))
        XCTAssertEqual(loop.now, .zero)
        XCTAssertTrue(loop.runOne(notAfter: .seconds(10)), "a deadline equal to the limit is due")
    }

    func testNextDeadlineIsNowWhileWorkIsReady() {
        loop.schedule(at: .seconds(10), note("far"))
        loop.execute(note("ready"))
        XCTAssertEqual(loop.nextDeadline, .zero)
        XCTAssertFalse(loop.isIdle)
    }

    func testAdvanceStopsTheClockExactlyAtTheTargetEvenWithNoTasks() {
        loop.advance(by: .microseconds(7_500))
        XCTAssertEqual(loop.now, .milliseconds(7) + .microseconds(500))
        loop.advance(by: .seconds(2))
        XCTAssertEqual(loop.now, .zero + .microseconds(2_007_500))
    }

    func testAdvanceRunsWhatFallsDueAndStopsBeforeWhatDoesNot() {
        loop.schedule(at: .seconds(1), note("a"))
        loop.schedule(at: .seconds(3), note("exactly at the target"))
        loop.schedule(at: .milliseconds(3_001), note("just after"))
        loop.advance(by: .seconds(3))
        XCTAssertEqual(loop.now, .seconds(3), "not the last task's time, the target")
        XCTAssertEqual(log, ["a@1s", "exactly at the target@3s"])
        loop.advance(by: .milliseconds(1))
        XCTAssertEqual(log.last, "just after@3.001s")
    }

    func testATimerScheduledDuringAnAdvanceBeyondItsTargetWaits() {
        loop.schedule(at: .seconds(1)) { [unowned self] in self.loop.schedule(after: .seconds(5), self.note("child")) }
        loop.advance(by: .seconds(2))
        XCTAssertEqual(log, [])
        XCTAssertEqual(loop.nextDeadline, .seconds(6))
        loop.advance(by: .seconds(4))
        XCTAssertEqual(log, ["child@6s"])
    }

    func testRunUntilAnInstant() {
        loop.schedule(at: .seconds(1), note("a"))
        loop.run(until: .milliseconds(1_500))
        XCTAssertEqual(loop.now, .milliseconds(1_500))
        loop.run(until: .seconds(1))   // the past: nothing to do, time does not go back
        XCTAssertEqual(loop.now, .milliseconds(1_500))
        XCTAssertEqual(log, ["a@1s"])
    }

    func testRunUntilAConditionStopsAsSoonAsItHolds() {
        var count = 0
        for second in 1...5 { loop.schedule(at: .seconds(Int64(second))) { count += 1 } }

        XCTAssertTrue(loop.run(until: .seconds(10), orUntil: { count == 2 }))
        XCTAssertEqual(count, 2)
        XCTAssertEqual(loop.now, .seconds(2), "stopped at the task that made it true, not at the deadline")

        XCTAssertFalse(loop.run(until: .seconds(4), orUntil: { count == 99 }))
        XCTAssertEqual(count, 4)
        XCTAssertEqual(loop.now, .seconds(4), "condition never held: the clock reaches the deadline")

        XCTAssertTrue(loop.run(until: .seconds(10), orUntil: { true }))
        XCTAssertEqual(count, 4, "already true: nothing runs")
        XCTAssertEqual(loop.now, .seconds(4))
    }

    func testRunUntilAConditionOnAnIdleLoopTimesOut() {
        XCTAssertFalse(loop.run(until: .seconds(30), orUntil: { false }))
        XCTAssertEqual(loop.now, .seconds(30))
    }

    // MARK: Stopping

    func testStopReturnsAfterTheCurrentTask() {
        loop.schedule(at: .seconds(1), note("a"))
        loop.schedule(at: .seconds(2)) { [unowned self] in
            self.log.append("stopper")
            self.loop.stop()
        }
        loop.schedule(at: .seconds(3), note("c"))
        XCTAssertEqual(loop.runUntilIdle(), 2)
        XCTAssertEqual(log, ["a@1s", "stopper"])
        XCTAssertEqual(loop.now, .seconds(2))
        XCTAssertEqual(loop.runUntilIdle(), 1, "the next run carries on")
        XCTAssertEqual(log.last, "c@3s")
    }

    func testStopDuringRunUntilLeavesTheClockWhereItStopped() {
        loop.schedule(at: .seconds(1)) { [unowned self] in self.loop.stop() }
        loop.schedule(at: .seconds(2), note("b"))
        loop.run(until: .seconds(10))
        XCTAssertEqual(loop.now, .seconds(1))
        XCTAssertEqual(log, [])
    }

    func testStopDuringRunUntilAConditionReportsTheCondition() {
        var count = 0
        loop.schedule(at: .seconds(1)) { [unowned self] in count += 1; self.loop.stop() }
        loop.schedule(at: .seconds(2)) { count += 1 }
        XCTAssertFalse(loop.run(until: .seconds(10), orUntil: { count == 2 }))
        XCTAssertEqual(loop.now, .seconds(1))
    }

    func testStopBeforeARunDoesNotAffectIt() {
        loop.schedule(at: .seconds(1), note("a"))
        loop.stop()
        XCTAssertEqual(loop.runUntilIdle(), 1)
    }

    // MARK: Timers report the time left

    func testTimerRemainingIsTheTimeLeft() {
        let eventLoop: EventLoop = loop
        let supervision = eventLoop.schedule(after: .seconds(30), note("supervision timeout"))
        XCTAssertEqual(supervision.deadline, .seconds(30))
        XCTAssertEqual(supervision.remaining(on: loop), .seconds(30))
        XCTAssertEqual(supervision.remaining(on: loop).description, "30s")
        loop.advance(by: .seconds(20))
        XCTAssertEqual(supervision.remaining(on: loop), .seconds(10))
        loop.advance(by: .milliseconds(9_999))
        XCTAssertEqual(supervision.remaining(on: loop).description, "1ms")
        loop.advance(by: .milliseconds(1))
        XCTAssertEqual(log, ["supervision timeout@30s"])
        XCTAssertEqual(supervision.remaining(on: loop), .zero, "fired")
    }

    func testACancelledTimerHasNoTimeLeft() {
        let timer = loop.schedule(after: .seconds(30), note("x"))
        timer.cancel()
        XCTAssertEqual(timer.remaining(on: loop), .zero)
    }

    // MARK: Bookkeeping

    func testTasksRunCountsTimersAndExecutesButNotCancelledTimers() {
        loop.schedule(at: .seconds(1)) {}
        loop.schedule(at: .seconds(2)) {}.cancel()
        loop.execute {}
        XCTAssertFalse(loop.isIdle)
        loop.runUntilIdle()
        XCTAssertEqual(loop.tasksRun, 2)
        XCTAssertTrue(loop.isIdle)
    }

    func testManyExecutesRunInOrder() {
        // Enough to make the ready queue compact itself while it is being drained.
        var order: [Int] = []
        for i in 0..<10_000 { loop.execute { order.append(i) } }
        loop.execute { [unowned self] in for i in 10_000..<12_000 { self.loop.execute { order.append(i) } } }
        loop.runUntilIdle()
        XCTAssertEqual(order, Array(0..<12_000))
        XCTAssertEqual(loop.now, .zero)
    }
}

extension Instant {
    /// `.seconds(3)` where an Instant is expected: that long after the loop started.
    static func seconds(_ n: Int64) -> Instant { .zero + .seconds(n) }
    static func milliseconds(_ n: Int64) -> Instant { .zero + .milliseconds(n) }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import XCTest

/// `SystemEventLoop` keeps the virtual loop's ordering on the monotonic clock and waits in poll(2).
/// Times are measured only with the loop's own `now`; nothing sleeps.
final class SystemEventLoopTests: XCTestCase {
    /// How late a wake-up may be on a loaded two-core machine (a build and a VM beside the tests
    /// made 160 ms happen): the bound catches waiting for the wrong deadline or forever, not
    /// scheduling jitter. Never early.
    private let lateness = TimeSpan.milliseconds(500)
    private var loop: SystemEventLoop!
    private var log: [String] = []

    override func setUp() {
        loop = SystemEventLoop()
        log = []
    }

    private func note(_ name: String) -> () -> Void {
        { [unowned self] in self.log.append(name) }
    }

    /// Runs until `count` entries are logged, failing after a second.
    private func runUntilLogged(_ count: Int, file: StaticString = #filePath, line: UInt = #line) {
        let done = loop.run(until: loop.now + .seconds(1)) { [unowned self] in self.log.count >= count }
        XCTAssertTrue(done, "only \(log) ran", file: file, line: line)
    }

    // MARK: Order

    func testTimersRunInDeadlineOrderAndNeverEarly() {
        let base = loop.now
        var ranAt: [String: Instant] = [:]
        for (name, ms) in [("c", 30), ("a", 10), ("b", 20)] {
            loop.schedule(at: base + .milliseconds(Int64(ms))) { [unowned self] in
                self.log.append(name)
                ranAt[name] = self.loop.now
            }
        }
        runUntilLogged(3)
        XCTAssertEqual(log, ["a", "b", "c"])
        for (name, ms) in [("a", 10), ("b", 20), ("c", 30)] {
            let late = ranAt[name]! - (base + .milliseconds(Int64(ms)))
            XCTAssertGreaterThanOrEqual(late, .zero, "\(name) ran early")
            XCTAssertLessThan(late, lateness, "\(name) ran \(late) late")
        }
    }

    func testEqualDeadlinesRunInSchedulingOrder() {
        let deadline = loop.now + .milliseconds(10)
        for name in ["first", "second", "third", "fourth"] { loop.schedule(at: deadline, note(name)) }
        loop.schedule(at: deadline - .milliseconds(5), note("earlier"))
        runUntilLogged(5)
        XCTAssertEqual(log, ["earlier", "first", "second", "third", "fourth"])
    }

    func testExecutedTasksRunInOrderAfterWorkAlreadyDue() {
        let deadline = loop.now + .milliseconds(5)
        loop.schedule(at: deadline, note("timer scheduled first"))
        loop.schedule(at: deadline) { [unowned self] in
            self.log.append("task")
            self.loop.execute(self.note("executed 1"))
            self.loop.schedule(after: .zero, self.note("timer due now"))
            self.loop.execute(self.note("executed 2"))
        }
        loop.schedule(at: deadline, note("timer scheduled third"))
        runUntilLogged(6)
        XCTAssertEqual(log, ["timer scheduled first", "task", "timer scheduled third",
                             "executed 1", "timer due now", "executed 2"])
    }

    func testATimerDueNowScheduledBeforeAnExecuteRunsFirst() {
        loop.schedule(at: loop.now, note("timer"))
        loop.execute(note("execute"))
        loop.execute(note("execute 2"))
        runUntilLogged(3)
        XCTAssertEqual(log, ["timer", "execute", "execute 2"])
    }

    func testAPastDeadlineRunsAsSoonAsPossibleInItsSchedulingOrder() {
        loop.advance(by: .milliseconds(2))
        loop.schedule(at: .zero, note("past"))
        loop.execute(note("execute"))
        runUntilLogged(2)
        XCTAssertEqual(log, ["past", "execute"])
    }

    // MARK: Deadlines and waiting

    func testRunUntilADeadlineReturnsOnTimeWithoutSpinning() {
        let start = loop.now
        let polls = loop.pollCount
        loop.run(until: start + .milliseconds(50))
        let elapsed = loop.now - start
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(50))
        XCTAssertLessThan(elapsed, .milliseconds(50) + lateness)
        XCTAssertLessThanOrEqual(loop.pollCount - polls, 3, "the loop must wait in poll, not spin")
    }

    func testAdvanceLetsTimePassAndRunsWhatFallsDue() {
        let start = loop.now
        let polls = loop.pollCount
        loop.schedule(after: .milliseconds(10), note("due"))
        loop.schedule(after: .seconds(10), note("not yet"))
        loop.advance(by: .milliseconds(30))
        XCTAssertEqual(log, ["due"])
        XCTAssertLessThanOrEqual(loop.pollCount - polls, 6, "one wait per timer, give or take a rounding")
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(30))
    }

    func testRunReturnsWhenTheConditionHoldsLongBeforeTheDeadline() {
        let start = loop.now
        var flag = false
        loop.schedule(after: .milliseconds(10)) { flag = true }
        XCTAssertTrue(loop.run(until: start + .seconds(5)) { flag })
        XCTAssertLessThan(loop.now - start, .milliseconds(10) + lateness)
    }

    func testRunReportsAConditionThatNeverHeld() {
        let start = loop.now
        XCTAssertFalse(loop.run(until: start + .milliseconds(20)) { false })
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(20))
    }

    func testAConditionAlreadyTrueRunsNothing() {
        loop.execute(note("task"))
        XCTAssertTrue(loop.run(until: loop.now + .seconds(1)) { true })
        XCTAssertEqual(log, [])
    }

    func testNothingLeftToHappenReturnsAtOnceInsteadOfWaitingForever() {
        let start = loop.now
        XCTAssertFalse(loop.run(until: .distantFuture) { false })
        loop.run(until: .distantFuture)
        XCTAssertLessThan(loop.now - start, lateness)
    }

    func testASignalInterruptingPollIsNotAnEarlyReturn() {
        // SIGALRM every 5 ms interrupts poll(2) with EINTR; the loop must wait out its deadline.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        action.sa_flags = 0   // no SA_RESTART: poll really fails with EINTR
        var previous = sigaction()
        sigaction(SIGALRM, &action, &previous)
        var interval = itimerval(it_interval: timeval(tv_sec: 0, tv_usec: 5_000), it_value: timeval(tv_sec: 0, tv_usec: 5_000))
        setitimer(Int32(ITIMER_REAL.rawValue), &interval, nil)
        defer {
            var off = itimerval()
            setitimer(Int32(ITIMER_REAL.rawValue), &off, nil)
            sigaction(SIGALRM, &previous, nil)
        }
        let start = loop.now
        loop.schedule(at: start + .milliseconds(60), note("timer"))
        loop.run(until: start + .milliseconds(60))
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(60))
        XCTAssertEqual(log, ["timer"])
        XCTAssertLessThan(loop.pollCount, 40, "interrupted waits resume with the remaining time")
    }

    // MARK: File descriptors

    private func makePipe() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        addTeardownBlock { close(fds[0]); close(fds[1]) }
        return (fds[0], fds[1])
    }

    private func readAll(_ fd: Int32) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = read(fd, &buffer, buffer.count)
        return n > 0 ? Array(buffer[0..<n]) : []
    }

    func testAReadableWatchFiresWhenDataArrives() {
        let (r, w) = makePipe()
        let start = loop.now
        var got: [UInt8] = []
        var arrivedAt = Instant.zero
        let watch = loop.watchReadable(fd: r) { [unowned self] in
            got += self.readAll(r)
            arrivedAt = self.loop.now
        }
        loop.schedule(after: .milliseconds(15)) { _ = write(w, [1, 2, 3] as [UInt8], 3) }
        XCTAssertTrue(loop.run(until: start + .seconds(1)) { got.count == 3 })
        XCTAssertEqual(got, [1, 2, 3])
        XCTAssertGreaterThanOrEqual(arrivedAt - start, .milliseconds(15))
        XCTAssertTrue(watch.isActive)
        XCTAssertEqual(loop.watchCount, 1)
        watch.cancel()
        XCTAssertEqual(loop.watchCount, 0)
    }

    func testAWritableWatchOnASocketFiresAtOnce() {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        var fired = 0
        let watch = loop.watchWritable(fd: fds[0]) { fired += 1 }
        XCTAssertTrue(loop.run(until: loop.now + .seconds(1)) { fired > 0 })
        watch.cancel()
        loop.advance(by: .milliseconds(5))
        XCTAssertEqual(fired, 1, "a cancelled watch is not called again")
    }

    func testHangUpIsReportedToAReadableWatch() {
        let (r, w) = makePipe()
        var reported: FDEvents = []
        loop.watch(fd: r, for: .readable) { events in reported = events }
        close(w)
        XCTAssertTrue(loop.run(until: loop.now + .seconds(1)) { !reported.isEmpty })
        XCTAssertTrue(reported.contains(.hangUp), "\(reported)")
    }

    func testAWatchOnAClosedDescriptorIsCancelledInsteadOfSpinning() {
        let (r, _) = makePipe()
        // A high descriptor number: once closed, another thread of the test process opening a
        // file gets the lowest free number, so this one stays closed while the loop polls it.
        var dup = fcntl(r, F_DUPFD_CLOEXEC, 900)
        if dup < 0 { dup = fcntl(r, F_DUPFD_CLOEXEC, 200) }  // a low RLIMIT_NOFILE
        XCTAssertGreaterThanOrEqual(dup, 200)
        var reports: [FDEvents] = []
        let watch = loop.watch(fd: dup, for: .readable) { reports.append($0) }
        close(dup)
        loop.advance(by: .milliseconds(20))
        XCTAssertEqual(reports, [.invalid])
        XCTAssertFalse(watch.isActive)
    }

    func testAnEndlessChainOfTasksDoesNotStarveDescriptors() {
        let (r, w) = makePipe()
        var readable = false
        loop.watchReadable(fd: r) { readable = true }
        func again() { loop.execute(again) }
        loop.execute(again)
        _ = write(w, [7] as [UInt8], 1)
        XCTAssertTrue(loop.run(until: loop.now + .seconds(1)) { readable })
    }

    // MARK: Cancelling from inside callbacks

    func testATimerCancelledByAnEarlierTaskDoesNotRun() {
        let deadline = loop.now + .milliseconds(5)
        var victim: LoopTimer?
        loop.schedule(at: deadline) { [unowned self] in
            self.log.append("canceller")
            victim?.cancel()
        }
        victim = loop.schedule(at: deadline, note("victim"))
        loop.schedule(at: deadline, note("after"))
        runUntilLogged(2)
        loop.advance(by: .milliseconds(10))
        XCTAssertEqual(log, ["canceller", "after"])
        XCTAssertFalse(victim!.isPending)
    }

    func testATimerCancellingItselfIsHarmless() {
        var timer: LoopTimer?
        timer = loop.schedule(after: .milliseconds(1)) { [unowned self] in
            timer?.cancel()
            self.log.append("ran")
        }
        runUntilLogged(1)
        XCTAssertEqual(log, ["ran"])
    }

    func testWatchesCancelledInsideCallbacksAreNotCalled() {
        let (r1, w1) = makePipe()
        let (r2, w2) = makePipe()
        var watches: [FDWatch] = []
        var calls: [String] = []
        // Whichever of the two watches runs first cancels both; the other must not be called.
        watches.append(loop.watchReadable(fd: r1) { calls.append("one"); watches.forEach { $0.cancel() } })
        watches.append(loop.watchReadable(fd: r2) { calls.append("two"); watches.forEach { $0.cancel() } })
        _ = write(w1, [1] as [UInt8], 1)
        _ = write(w2, [2] as [UInt8], 1)
        loop.advance(by: .milliseconds(20))
        XCTAssertEqual(calls, ["one"])
        XCTAssertEqual(loop.watchCount, 0)
    }

    func testAWatchAddedInsideACallbackWaitsForTheNextPoll() {
        let (r, w) = makePipe()
        var calls: [String] = []
        let first = loop.watchReadable(fd: r) { [unowned self] in
            calls.append("first")
            self.loop.watchReadable(fd: r) { calls.append("second") }
        }
        _ = write(w, [1] as [UInt8], 1)
        XCTAssertTrue(loop.run(until: loop.now + .seconds(1)) { calls.count >= 1 })
        first.cancel()
        XCTAssertEqual(calls, ["first"])
        XCTAssertTrue(loop.run(until: loop.now + .seconds(1)) { calls.count >= 2 })
        XCTAssertEqual(calls, ["first", "second"])
    }

    // MARK: Rescheduling

    func testARescheduledTimerRunsOnceAtItsNewDeadlineInItsNewPlace() {
        let base = loop.now
        var ranAt: Instant?
        let moved = loop.schedule(at: base + .milliseconds(5), note("old task"))
        loop.schedule(at: base + .milliseconds(20), note("before"))
        loop.reschedule(moved, at: base + .milliseconds(20)) { [unowned self] in
            ranAt = self.loop.now
            self.log.append("moved")
        }
        loop.schedule(at: base + .milliseconds(20), note("after"))
        XCTAssertEqual(moved.deadline, base + .milliseconds(20))
        runUntilLogged(3)
        XCTAssertEqual(log, ["before", "moved", "after"])
        XCTAssertGreaterThanOrEqual(ranAt!, base + .milliseconds(20), "never early")
        XCTAssertFalse(moved.isPending)
    }

    func testATimerRescheduledFromItsOwnTaskRecurs() {
        var timer: LoopTimer?
        timer = loop.schedule(after: .milliseconds(1)) { [unowned self] in
            self.log.append("1")
            self.loop.reschedule(timer!, at: self.loop.now + .milliseconds(1), self.note("2"))
        }
        runUntilLogged(2)
        XCTAssertEqual(log, ["1", "2"])
        XCTAssertFalse(timer!.isPending)
    }

    // MARK: Stopping

    func testStopReturnsAfterTheCurrentTaskAndLaterRunsCarryOn() {
        let start = loop.now
        loop.schedule(after: .milliseconds(5)) { [unowned self] in
            self.log.append("stopper")
            self.loop.stop()
        }
        loop.schedule(after: .milliseconds(5), note("after the stop"))
        loop.run(until: start + .seconds(5))
        XCTAssertEqual(log, ["stopper"])
        XCTAssertLessThan(loop.now - start, .milliseconds(5) + lateness)
        runUntilLogged(2)
        XCTAssertEqual(log, ["stopper", "after the stop"])
    }

    func testStopFromADescriptorCallback() {
        let (r, w) = makePipe()
        loop.watchReadable(fd: r) { [unowned self] in
            _ = self.readAll(r)
            self.loop.stop()
        }
        loop.schedule(after: .milliseconds(5)) { _ = write(w, [1] as [UInt8], 1) }
        let start = loop.now
        XCTAssertFalse(loop.run(until: start + .seconds(5)) { false })
        XCTAssertLessThan(loop.now - start, .milliseconds(5) + lateness)
    }

    func testStopBeforeRunDoesNotEndTheNextRun() {
        loop.stop()
        loop.schedule(after: .milliseconds(1), note("ran"))
        runUntilLogged(1)
    }
}

import BLELab
import Foundation
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// A spooled timeline (`RunOptions.timelineDirectory`) gives back exactly the events, in exactly
/// the order, that the in-memory timeline holds; its file goes with the result.
final class TimelineSpoolTests: XCTestCase {
    private func same(_ a: TimelineEvent, _ b: TimelineEvent, _ message: String) {
        XCTAssertEqual(a.time, b.time, message)
        XCTAssertEqual(a.device, b.device, message)
        XCTAssertEqual(a.kind, b.kind, message)
        XCTAssertEqual(a.text, b.text, message)
        XCTAssertEqual(a.direction, b.direction, message)
        XCTAssertEqual(a.bytes, b.bytes, message)
        XCTAssertEqual(a.step, b.step, message)
        XCTAssertEqual(a.layer, b.layer, message)
        XCTAssertEqual(a.violation, b.violation, message)
        XCTAssertEqual(a.answer, b.answer, message)
    }

    /// Events recorded out of time order, across several blocks: read back, they are the stable
    /// sort of what went in (by time, ties in recording order), every field kept.
    func testSpoolGivesTheStableSortOfWhatWentIn() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        var random = SeededRandom(seed: 5, stream: "spool")
        var all: [TimelineEvent] = []
        var path = ""
        do {
            let spool = try TimelineSpool(directory: dir)
            path = spool.path
            var clock: Int64 = 0
            for n in 0..<(3 * TimelineSpool.blockSize + 17) {
                clock += Int64(random.int(in: 0...3))
                // Now and then an event stamped earlier than the latest (ties too).
                let late = random.int(in: 0...50) == 0 ? Int64(random.int(in: 0...20_000)) : 0
                var e = TimelineEvent(time: Instant(nanoseconds: max(0, clock - late)), device: n % 3 == 0 ? "central" : "hm10",
                                      kind: [.att, .peripheral, .stepStarted, .protocolViolation][n % 4], text: "event \(n) é\u{1F4A1}\n\"q\"")
                if n % 2 == 0 { e.direction = "sent"; e.bytes = (0..<(n % 7)).map { UInt8(truncatingIfNeeded: $0 * n) } }
                if n % 5 == 0 { e.step = n }
                if n % 11 == 0 { e.layer = "l2cap"; e.violation = "unknown-channel"; e.answer = "none" }
                spool.append(e)
                all.append(e)
            }
            XCTAssertEqual(spool.count, all.count)
            let expected = all.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
            for _ in 0..<2 {   // read twice: each walk reads the file again
                let got = Array(spool.events)
                XCTAssertEqual(got.count, expected.count)
                for (k, (a, b)) in zip(got, expected).enumerated() { same(a, b, "event \(k)") }
            }
            XCTAssertNil(spool.failure)
        }
        XCTAssertFalse(path.isEmpty)
    }

    /// The spool's file has no name from the start (unlinked, kept open): a run killed or
    /// crashed leaves nothing in the temporary folder. The folder stays empty while it is written
    /// and read back.
    func testTheSpoolLeavesNoFileBehind() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let spool = try TimelineSpool(directory: dir)
        XCTAssertTrue(spool.path.hasPrefix(dir + "/"), spool.path)
        XCTAssertEqual(FileText.kind(spool.path), .missing)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [])
        for n in 0..<(TimelineSpool.blockSize + 5) {
            spool.append(TimelineEvent(time: Instant(nanoseconds: Int64(n)), device: "central", kind: .att, text: "event \(n)"))
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [])
        XCTAssertEqual(Array(spool.events).count, TimelineSpool.blockSize + 5)
        XCTAssertEqual(Array(spool.events).last?.text, "event \(TimelineSpool.blockSize + 4)", "read twice, through the one descriptor")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [])
        XCTAssertNil(spool.failure)
    }

    func testAnEmptySpoolGivesNothing() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let spool = try TimelineSpool(directory: dir)
        XCTAssertEqual(Array(spool.events).count, 0)
        XCTAssertNil(spool.failure)
    }

    func testASpoolInAMissingFolderIsAnError() {
        XCTAssertThrowsError(try TimelineSpool(directory: "/nonexistent-blelab-folder")) { error in
            XCTAssertTrue("\(error)".hasPrefix("cannot make a timeline file in /nonexistent-blelab-folder: "), "\(error)")
        }
    }

    /// A scenario with thousands of events: spooled, the run's events are those of the run kept
    /// in memory, one for one; `timeline` stays empty.
    func testASpooledRunHasTheEventsOfAnInMemoryRun() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let text = """
        scenario: a stream and writes
        seed: 7
        peripherals:
          hm10:
            advertise: { name: HMSoft, services: [FFE0] }
            gatt:
              - service: FFE0
                characteristics:
                  - uuid: FFE1
                    properties: [read, write, write-without-response, notify]
                    on-subscribe:
                      - notify-every: { characteristic: FFE1, interval: 20ms, value: { counter-u8: 1 } }
        central:
          - scan: { services: [FFE0], for: 1s }
          - connect: hm10
          - discover: all
          - subscribe: FFE1
          - write: { characteristic: FFE1, value: "text:hello" }
          - wait: 60s
          - expect: { notification: FFE1 }
        """
        let memory = try ScenarioText.run(text, options: RunOptions(recordsTimeline: true))
        var options = RunOptions(recordsTimeline: true)
        options.timelineDirectory = dir
        let spooled = try ScenarioText.run(text, options: options)
        XCTAssertTrue(memory.passed, "\(memory.outcome)")
        XCTAssertTrue(spooled.passed, "\(spooled.outcome)")
        XCTAssertTrue(spooled.timeline.isEmpty)
        XCTAssertTrue(spooled.timelineFailures.isEmpty)
        let got = Array(spooled.events)
        XCTAssertGreaterThan(memory.timeline.count, 2 * TimelineSpool.blockSize)
        XCTAssertEqual(got.count, memory.timeline.count)
        for (k, (a, b)) in zip(got, memory.timeline).enumerated() { same(a, b, "event \(k)") }
    }

    /// After `finish()` the timeline is closed: an event appended then is not kept, and counted.
    func testAnEventAfterFinishIsNotKept() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let spool = try TimelineSpool(directory: dir)
        spool.append(TimelineEvent(time: Instant(nanoseconds: 5), device: "central", kind: .att, text: "kept"))
        spool.finish()
        spool.append(TimelineEvent(time: Instant(nanoseconds: 9), device: "counter", kind: .peripheral, text: "late"))
        XCTAssertEqual(Array(spool.events).map(\.text), ["kept"])
        XCTAssertEqual(spool.count, 1)
        XCTAssertEqual(spool.late, 1)
        XCTAssertNil(spool.failure)
    }

    /// Off the simulator the end of a run goes on after its timeline is taken: the lab stops
    /// real controllers' advertising, and meanwhile a peripheral's `notify-every` still ticks.
    /// (On Bumble's controllers in CI such a tick reached the closed spool, which trapped. Here
    /// each packet from a controller takes 2 ms to reach its host, so that stopping advertising
    /// at the end takes virtual time.)
    /// Those events are in no timeline: spooled or in memory, the run's events are the same, and
    /// none is later than the last step's end.
    func testWhatTheEndOfARunDoesIsInNoTimeline() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let scenario = try ScenarioText.load("""
            scenario: a stream that outlives the run
            seed: 3
            peripherals:
              counter:
                advertise: { name: Counter, services: [AAA0] }
                gatt:
                  - service: AAA0
                    characteristics:
                      - uuid: AAA1
                        properties: [notify]
                        on-subscribe:
                          - notify-every: { characteristic: AAA1, interval: 1ms, value: { counter-u8: 1 } }
            central:
              - scan: { services: [AAA0], for: 1s }
              - connect: counter
              - discover: all
              - subscribe: AAA1
              - expect: { notification: AAA1, count: 3, within: 1s }
              - disconnect
            """)
        let backend = ConnectedSimsBackend(latency: .milliseconds(2))
        let memory = ScenarioRunner(backend: backend).run(scenario, options: RunOptions(recordsTimeline: true))
        var options = RunOptions(recordsTimeline: true)
        options.timelineDirectory = dir
        let spooled = ScenarioRunner(backend: backend).run(scenario, options: options)
        XCTAssertTrue(memory.passed, "\(memory.outcome)")
        XCTAssertTrue(spooled.passed, "\(spooled.outcome)")
        XCTAssertTrue(spooled.timelineFailures.isEmpty, "\(spooled.timelineFailures)")
        XCTAssertEqual(spooled.timelineSpool?.late, 0, "the session stops recording before it closes the spool")
        let got = Array(spooled.events)
        XCTAssertEqual(got.count, memory.timeline.count)
        for (k, (a, b)) in zip(got, memory.timeline).enumerated() { same(a, b, "event \(k)") }
        // The last step's end; the run's virtual time goes on past it while the lab lets go.
        let end = try XCTUnwrap(spooled.steps.last?.end)
        XCTAssertGreaterThan(Instant.zero + spooled.virtualTime, end)
        XCTAssertEqual(got.filter { $0.time > end }.map(\.text), [])
        // The stream ran to the run's end (the last tick at the disconnection's instant); with the
        // session recording on after the timeline was taken, 10 more ticks came (measured).
        XCTAssertEqual(got.last { $0.kind == .peripheral && $0.text.hasPrefix("notify AAA1") }?.time, end)
    }
}

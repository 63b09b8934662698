import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// What a run keeps of a long stream is bounded, and judges exactly what keeping everything
/// judged: counts, the first values listed, the last value, `in-order`.
final class LongRunTests: XCTestCase {
    // MARK: The arrival log against the whole list

    /// A seeded walk of arrivals and marks; `since(mark)` must say what the whole list says.
    func testArrivalLogAnswersAsTheWholeList() {
        for kept in [10, 16, 64] {
            var random = SeededRandom(seed: UInt64(kept), stream: "arrivals")
            var log = ArrivalLog(kept: kept)
            var all: [LinkObservations.Arrival] = []
            var mark = 0
            for step in 0..<3_000 {
                let arrival = LinkObservations.Arrival(time: Instant(nanoseconds: Int64(step) * 1_000_000),
                                                       value: [UInt8(truncatingIfNeeded: step), UInt8(truncatingIfNeeded: step >> 8)],
                                                       isIndication: random.int(in: 0...4) == 0)
                log.append(arrival)
                all.append(arrival)
                switch random.int(in: 0...40) {
                case 0:
                    // An expectation: the mark moves to the count now.
                    mark = all.count
                    log.forget(before: mark)
                case 1:
                    // A subscribe step: the mark moves to the count read when it began, a few back.
                    let back = Int(random.int(in: 0...3))
                    mark = max(mark, all.count - back)
                    log.forget(before: mark)
                default:
                    break
                }
                let got = log.since(mark), whole = Array(all[mark...])
                XCTAssertEqual(got.count, whole.count)
                XCTAssertEqual(got.indications, whole.filter(\.isIndication).count, "kept \(kept), step \(step)")
                XCTAssertEqual(got.listed.map(\.value), whole.prefix(ArrivalLog.listed).map(\.value))
                XCTAssertEqual(got.last?.value, whole.last?.value)
                if whole.count <= kept {
                    XCTAssertEqual(got.values, whole.map(\.value), "kept \(kept), step \(step)")
                } else {
                    XCTAssertNil(got.values, "more than kept: no full list (more than any in-order list)")
                }
            }
        }
    }

    // MARK: Through the runner

    private func stream(interval: String, wait: String, expect: String) -> String {
        """
        scenario: a long stream
        seed: 3
        peripherals:
          sensor:
            advertise: { name: S, services: [FFF0] }
            gatt:
              - service: FFF0
                characteristics:
                  - uuid: FFF1
                    properties: [notify]
                    on-subscribe:
                      - notify-every: { characteristic: FFF1, interval: \(interval), value: { counter-u8: 1 } }
        central:
          - scan: { services: [FFF0], for: 1s }
          - connect: sensor
          - discover: all
          - subscribe: FFF1
          - wait: \(wait)
        \(expect)
        """
    }

    /// 12,000 notifications, more than a log keeps in full: the count is judged exactly, both ways.
    func testCountsBeyondWhatIsKeptAreExact() throws {
        // 10 ms for 2 min from the subscription: the wait begins as the subscribe step ends.
        let probe = try ScenarioText.run(stream(interval: "10ms", wait: "120s", expect: "  - expect: { notification: FFF1, count: 1 }"))
        guard case let .failed(failure) = probe.outcome else { return XCTFail("a count of 1 must fail after a 2-minute stream") }
        // "12001 notifications of FFF1: 1 at …" — the exact count the stream delivered.
        guard let n = Int(failure.seen.prefix { $0.isNumber }), n > ArrivalLog.defaultKept else {
            return XCTFail("no count beyond \(ArrivalLog.defaultKept) in: \(failure.seen)")
        }
        XCTAssertTrue(failure.seen.contains(": u8:1 at "), "the first values are listed: \(failure.seen)")
        XCTAssertTrue(failure.seen.hasSuffix(", …"), failure.seen)
        let exact = try ScenarioText.run(stream(interval: "10ms", wait: "120s", expect: "  - expect: { notification: FFF1, count: \(n) }"))
        XCTAssertTrue(exact.passed, "\(exact.outcome)")
        let oneLess = try ScenarioText.run(stream(interval: "10ms", wait: "120s", expect: "  - expect: { notification: FFF1, count: \(n - 1) }"))
        XCTAssertFalse(oneLess.passed, "one more than asked arrived")
        // The last value is the counter's, wrapped: judged on the value kept as the latest.
        let lastValue = (n - 1) % 256 + 1
        let last = try ScenarioText.run(stream(interval: "10ms", wait: "120s", expect: "  - expect: { notification: FFF1, value: u8:\(lastValue) }"))
        XCTAssertTrue(last.passed, "\(last.outcome)")
    }

    /// `in-order` is judged on every value; a longer stream than any list fails it.
    func testInOrderStillSeesEveryValue() throws {
        let values = (1...5).map { "u8:\($0)" }.joined(separator: ", ")
        let short = try ScenarioText.run(stream(interval: "100ms", wait: "400ms", expect: "  - expect: { notification: FFF1, in-order: [\(values)] }"))
        XCTAssertTrue(short.passed, "\(short.outcome)")
        let long = try ScenarioText.run(stream(interval: "10ms", wait: "60s", expect: "  - expect: { notification: FFF1, in-order: [\(values)] }"))
        XCTAssertFalse(long.passed, "thousands arrived, not five")
    }

    // MARK: Captures streamed to files

    /// A capture streamed to its file as the run goes holds, byte for byte, what the kept capture
    /// encodes to; the order the runner asks for paths is the order of `captures`.
    func testAStreamedCaptureEqualsTheKeptOne() throws {
        let text = try FileText.read(ScenarioText.fixtures + "/../../../scenarios/seeds/heart-rate.yaml")
        let kept = try ScenarioText.run(text, options: RunOptions(keepsCaptures: true))
        XCTAssertTrue(kept.passed, "\(kept.outcome)")
        let directory = try temporaryDirectory()
        defer { removeTree(directory) }
        var options = RunOptions(keepsCaptures: true)
        var asked: [String] = []
        options.captureFile = { device in
            asked.append(device)
            return directory + "/" + device + ".btsnoop"
        }
        let streamed = try ScenarioText.run(text, options: options)
        XCTAssertTrue(streamed.passed, "\(streamed.outcome)")
        XCTAssertEqual(streamed.captures.count, 0, "streamed, not kept")
        XCTAssertEqual(streamed.captureFailures, [])
        XCTAssertEqual(asked, kept.captures.map(\.device))
        for capture in kept.captures {
            let bytes = try FileText.readBytes(directory + "/" + capture.device + ".btsnoop")
            XCTAssertEqual(bytes, BTSnoopWriter.encode(capture.packets), capture.device)
            XCTAssertGreaterThan(capture.packets.count, 100)
        }
    }

    /// A file that cannot be made is a failure of the run's captures, said with its path.
    func testAStreamedCaptureThatCannotBeWrittenIsReported() throws {
        var options = RunOptions()
        options.captureFile = { "/nonexistent-folder/\($0).btsnoop" }
        let result = try ScenarioText.run(ScenarioText.hm10("  - scan: { services: [FFE0], for: 1s }"), options: options)
        XCTAssertTrue(result.passed, "the scenario itself ran")
        XCTAssertEqual(result.captureFailures.count, 2, "\(result.captureFailures)")
        XCTAssertTrue(result.captureFailures.allSatisfy { $0.contains("/nonexistent-folder/") }, "\(result.captureFailures)")
    }
}

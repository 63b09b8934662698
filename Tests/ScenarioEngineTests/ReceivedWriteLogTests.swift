import BLELab
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// The writes a peripheral received are kept only as far as expectations can still ask, and
/// judged exactly as on the whole list.
final class ReceivedWriteLogTests: XCTestCase {
    /// A seeded walk of writes and floors: what the log answers is what the whole list answers.
    func testTheLogAnswersAsTheWholeList() {
        let filters = [WriteFilter(value: [1], via: nil), WriteFilter(value: nil, via: .command), WriteFilter(value: [2], via: .request),
                       WriteFilter(value: nil, via: nil)]
        for kept in [4, 16] {
            var random = SeededRandom(seed: UInt64(kept), stream: "writes")
            var log = ReceivedWriteLog(filters: filters, kept: kept, floor: 0)
            var all: [LinkObservations.ReceivedWrite] = []
            var mark = 0
            for step in 0..<3_000 {
                let write = LinkObservations.ReceivedWrite(time: Instant(nanoseconds: Int64(step)), value: [UInt8(random.int(in: 0...3))],
                                                           method: random.int(in: 0...1) == 0 ? .command : .request, description: "write \(step)")
                log.append(write)
                all.append(write)
                if random.int(in: 0...20) == 0 {
                    mark = all.count
                    log.keep(from: mark)
                }
                XCTAssertEqual(log.count, all.count)
                let since = log.since(mark), whole = all[mark...]
                XCTAssertEqual(since.count, whole.count)
                XCTAssertEqual(since.kept.map(\.description), whole.prefix(kept).map(\.description), "kept \(kept), step \(step)")
                XCTAssertLessThanOrEqual(log.keptCount, kept)
                for f in filters {
                    XCTAssertEqual(log.latest(f, since: mark)?.description, whole.last { f.matches($0) }?.description, "kept \(kept), step \(step)")
                }
                XCTAssertEqual(log.write(mark)?.description, whole.first?.description)
            }
        }
    }

    /// Nothing asked (no floor): writes are counted, none kept; a filter's latest match is still known.
    func testAWriteLogWithNoFloorKeepsNone() {
        var log = ReceivedWriteLog(filters: [WriteFilter(value: [7], via: nil)], floor: nil)
        for n in 0..<10_000 {
            log.append(LinkObservations.ReceivedWrite(time: .zero, value: [UInt8(n % 8)], method: .command, description: "w\(n)"))
        }
        XCTAssertEqual(log.count, 10_000)
        XCTAssertEqual(log.keptCount, 0)
        XCTAssertEqual(log.latest(WriteFilter(value: [7], via: nil), since: 0)?.description, "w9999")
        log.keep(from: log.count)
        log.append(LinkObservations.ReceivedWrite(time: .zero, value: [1], method: .request, description: "after"))
        XCTAssertEqual(log.since(10_000).kept.map(\.description), ["after"])
    }

    /// Which writes a scenario can ask about, from its steps.
    func testQuestionsComeFromTheScenario() throws {
        let scenario = try ScenarioText.load(ScenarioText.hm10("""
          - scan: { services: [FFE0], for: 1s }
          - connect: hm10
          - discover: all
          - write: { characteristic: FFE1, value: "text:hi", type: command }
          - expect: { peripheral-received: { characteristic: FFE1, value: "text:hi", via: command } }
          - expect: { peripheral-received: FFE1 }
        """))
        let questions = WriteQuestions(scenario)
        XCTAssertEqual(questions.filters["hm10"], [WriteFilter(value: Array("hi".utf8), via: .command), WriteFilter(value: nil, via: nil)])
        XCTAssertFalse(questions.asksMethod)
    }

    /// A run of many writes with `peripheral-received` now and then: every expectation holds, and
    /// at the end the session keeps none of the writes an expectation already accounted for.
    func testManyWritesThroughTheRunner() throws {
        var steps = """
          - scan: { services: [FFE0], for: 1s }
          - connect: hm10
          - discover: all

        """
        for n in 0..<200 {
            steps += "  - write: { characteristic: FFE1, value: \"hex:\(String(format2: n))\", type: command }\n"
            if n % 50 == 49 { steps += "  - expect: { peripheral-received: { characteristic: FFE1, value: \"hex:\(String(format2: n))\" } }\n" }
        }
        let scenario = try ScenarioText.load(ScenarioText.hm10(steps))
        let session = ScenarioSession(scenario: scenario, backend: SimBackend(), seed: 1, options: RunOptions())
        let result = session.run()
        XCTAssertTrue(result.passed, "\(result.outcome)")
        XCTAssertEqual(session.observations.keptWrites, 0, "every write was accounted for by a mark")
    }
}

private extension String {
    init(format2 n: Int) { self = (n < 16 ? "0" : "") + String(n % 256, radix: 16) }
}

import ATT
import BLELab
import BLERuntime
import CoreBluetoothLab
import Foundation
import HM10Async
import XCTest

/// The async/await HM-10 client against the HM-10 of scenarios/seeds/hm10-serial.yaml (FFE1:
/// read "ready", write-without-response, notify; every write echoed by notification).
final class HM10AsyncExampleTests: XCTestCase {
    private final class Outcome: @unchecked Sendable {
        private let mutex = NSLock()
        private var stored: Result<(greeting: String, echoes: [String]), Error>?
        var result: Result<(greeting: String, echoes: [String]), Error>? {
            get { mutex.withLock { stored } }
            set { mutex.withLock { stored = newValue } }
        }
    }

    private struct Session {
        let greeting: String
        let echoes: [String]
        let writes: [CBLab.ATTWrite]
        /// When the app's host sent each Write Command to its controller (the air then waits for
        /// the next connection event).
        let sent: [Instant]
        /// Every HCI packet of the app's device, with its virtual time: the capture's bytes.
        let capture: [UInt8]
        let end: Instant
    }

    private let lines = ["AT", "AT+NAME?", "hello", "one more", "bye"]

    private func session(seed: UInt64, file: StaticString = #filePath, line: UInt = #line) throws -> Session {
        let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../scenarios/seeds").standardized.path
        let lab = CBLab(seed: seed)
        try lab.addPeripherals(fromScenario: seeds + "/hm10-serial.yaml")
        // The app's one injection: the lab's clock. Its task runs on the lab's executor.
        let serial = lab.attach { AsyncSerial(clock: lab.clock) }
        let outcome = Outcome()
        let lines = self.lines
        lab.task {
            do {
                let greeting = try await serial.open()
                let echoes = try await serial.chat(lines, every: .seconds(1))
                outcome.result = .success((greeting, echoes))
            } catch {
                outcome.result = .failure(error)
            }
        }
        XCTAssertTrue(lab.run(within: .seconds(30)) { outcome.result != nil }, "the session ends", file: file, line: line)
        let result = try XCTUnwrap(outcome.result, file: file, line: line).get()
        let end = lab.now
        lab.run(for: .seconds(1))
        let sent = lab.attTraffic(of: serial.central).filter { $0.wasSent && $0.opcode == .writeCommand }.map(\.time)
        return Session(greeting: result.greeting, echoes: result.echoes, writes: lab.attWrites(to: CBUUID(string: "FFE1")), sent: sent,
                       capture: try XCTUnwrap(lab.device(of: serial.central), file: file, line: line).log.serialized, end: end)
    }

    func testTheAsyncClientChatsWithTheScenarioModule() throws {
        let run = try session(seed: 21)
        XCTAssertEqual(run.greeting, "ready", "read FFE1 before subscribing")
        XCTAssertEqual(run.echoes, lines, "each line echoed by notification, through the AsyncStream")
        // Write Commands (FFE1 has no `write`), one a second as the app's sleeps say.
        XCTAssertEqual(run.writes.map(\.opcode), Array(repeating: .writeCommand, count: lines.count))
        XCTAssertEqual(run.writes.map { String(decoding: $0.value, as: UTF8.self) }, lines)
        let gaps = zip(run.sent.dropFirst(), run.sent).map { $0 - $1 }
        XCTAssertEqual(gaps, Array(repeating: .seconds(1), count: lines.count - 1), "the host sent them a second apart")
        // The session lasted as long as the sleeps, not the wall time: the last echo came within
        // a second of the last write, four seconds after the first.
        XCTAssertGreaterThanOrEqual(run.end - run.sent[0], .seconds(4))
        XCTAssertLessThan(run.end - run.sent[0], .seconds(5))
    }

    func testTheSameSeedGivesTheSameTimelineAndCapture() throws {
        let first = try session(seed: 22)
        let second = try session(seed: 22)
        XCTAssertEqual(first.sent, second.sent)
        XCTAssertEqual(first.writes.map(\.time), second.writes.map(\.time))
        XCTAssertEqual(first.end, second.end)
        XCTAssertFalse(first.capture.isEmpty)
        XCTAssertEqual(first.capture, second.capture, "the app's HCI capture, byte for byte")
    }
}

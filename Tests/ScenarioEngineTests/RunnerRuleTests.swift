import BLELab
@testable import BLELabCLI
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// The format's rules: ATT errors must be expected, the timeout names the waiting step, several
/// peripherals, failure reports, determinism, and failures that are values, never crashes.
final class RunnerRuleTests: XCTestCase {
    private let c = ScenarioText.connected

    private func verdict(_ central: String, extra: String = "", header: String = "") throws -> String {
        try ScenarioText.run(ScenarioText.hm10(central, extraPeripheral: extra, header: header)).verdict
    }

    // MARK: An ATT error must be expected right after the operation

    func testAnATTErrorFailsTheOperationUnlessTheNextExpectationsExpectIt() throws {
        XCTAssertEqual(try verdict(c + "\n  - write: { characteristic: FFE1, value: u8:1, type: request }"),
                       "step 4 (test.yaml:24): write: { characteristic: FFE1, value: u8:1, type: request }: expected the write to FFE1 to succeed, or an 'expect: { error: write-not-permitted }' right after the step; seen ATT Error Response write-not-permitted (0x03) for handle 0x000c")
        XCTAssertEqual(try verdict(c + "\n  - write: { characteristic: FFE1, value: u8:1, type: request }\n  - expect: { error: write-not-permitted }"), "passed")
        // Any of the expect steps directly after it may take it.
        XCTAssertEqual(try verdict(c + """

          - write: { characteristic: FFE1, value: u8:1, type: request }
          - expect: { connected: hm10 }
          - expect: { error: 0x03 }
        """), "passed")
        // A step in between: too late.
        XCTAssertEqual(try verdict(c + "\n  - write: { characteristic: FFE1, value: u8:1, type: request }\n  - wait: 10ms\n  - expect: { error: write-not-permitted }"),
                       "step 4 (test.yaml:24): write: { characteristic: FFE1, value: u8:1, type: request }: expected the write to FFE1 to succeed, or an 'expect: { error: write-not-permitted }' right after the step; seen ATT Error Response write-not-permitted (0x03) for handle 0x000c")
    }

    func testTheErrorExpectationChecksTheCode() throws {
        XCTAssertEqual(try verdict(c + "\n  - write: { characteristic: FFE1, value: u8:1, type: request }\n  - expect: { error: insufficient-authentication }"),
                       "step 5 (test.yaml:25): expect: { error: insufficient-authentication }: expected the last operation got ATT error insufficient-authentication (0x05); seen step 4 (write: { characteristic: FFE1, value: u8:1, type: request }) got ATT error write-not-permitted (0x03) on handle 0x000c")
        XCTAssertEqual(try verdict(c + "\n  - read: FFE1\n  - expect: { error: write-not-permitted }"),
                       "step 5 (test.yaml:25): expect: { error: write-not-permitted }: expected the last operation got ATT error write-not-permitted (0x03); seen step 4 (read: FFE1) succeeded")
    }

    // MARK: Timeout

    func testTheTimeoutNamesTheStepAndWhatItWasWaitingFor() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(c + "\n  - subscribe: FFE1\n  - expect: { notification: FFE1, within: 5s }", header: "timeout: 3s"))
        XCTAssertEqual(result.failure?.kind, .timeout)
        XCTAssertEqual(result.verdict, "step 5 (test.yaml:25): expect: { notification: FFE1, within: 5s }: expected the scenario to finish within its timeout of 3s; seen the timeout ran out at 3s while step 5 (expect: { notification: FFE1, within: 5s }) was waiting for 1 notification of FFE1 from hm10 (0 arrived, within: 5s)")
        XCTAssertEqual(result.virtualTime, .seconds(3))
        XCTAssertEqual(result.steps.map(\.outcome), [.passed, .passed, .passed, .passed, .failed])

        XCTAssertEqual(try verdict("  - scan: { for: 1s }\n  - wait: 10s", header: "timeout: 1500ms"),
                       "step 2 (test.yaml:22): wait: 10s: expected the scenario to finish within its timeout of 1.5s; seen the timeout ran out at 1.5s while step 2 (wait: 10s) was waiting for the end of wait: 10s")
        XCTAssertEqual(try verdict(c, header: "timeout: 1200ms"),
                       "step 3 (test.yaml:23): discover: all: expected the scenario to finish within its timeout of 1.2s; seen the timeout ran out at 1.2s while step 3 (discover: all) was waiting for discovery on hm10")
    }

    func testStepsAfterAFailureDoNotRun() throws {
        let result = try ScenarioText.run(ScenarioText.hm10("  - expect: { discovered: hm10 }\n  - scan\n  - wait: 1s"))
        XCTAssertEqual(result.steps.map(\.outcome), [.failed, .notRun, .notRun])
        XCTAssertEqual(result.virtualTime < .seconds(1), true)
    }

    // MARK: Several peripherals

    func testNotificationsAreCountedPerPeripheral() throws {
        let twin = """
          twin:
            advertise: { name: Twin, services: [FFE0] }
            gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [notify] }
        """
        XCTAssertEqual(try verdict("""
          - scan
          - connect: hm10
          - connect: twin
          - discover: all
            peripheral: hm10
          - discover: { peripheral: twin }
          - subscribe: { characteristic: FFE1, peripheral: hm10 }
          - subscribe: { characteristic: FFE1, peripheral: twin }
          - peripheral: { twin: [{ notify: FFE1, value: text:from-twin }], hm10: [{ notify: FFE1, value: text:from-hm10 }] }
          - expect: { notification: FFE1, peripheral: twin, count: 1, value: text:from-twin }
          - expect: { notification: FFE1, peripheral: hm10, count: 1, value: text:from-hm10 }
          - write: { characteristic: FFE1, value: text:echo, peripheral: hm10 }
          - expect: { notification: FFE1, value: text:echo, peripheral: hm10 }
          - expect: { no-notification: { characteristic: FFE1, for: 500ms, peripheral: twin } }
          - disconnect: twin
          - expect: { connected: hm10 }
          - read: FFE1
          - expect: { value: text:echo }
        """, extra: twin), "passed")
    }

    // MARK: Reports

    func testAFailureReportHasTheStepTheExpectationWhatWasSeenAndTheLastPackets() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(c + "\n  - subscribe: FFE1\n  - write: { characteristic: FFE1, value: text:hi }\n  - expect: { notification: FFE1, value: text:bye, within: 500ms }"))
        let failure = try XCTUnwrap(result.failure)
        XCTAssertEqual(failure.kind, .expectation)
        XCTAssertEqual(failure.step?.index, 6)
        XCTAssertEqual(failure.step?.location.fileAndLine, "test.yaml:26")
        XCTAssertEqual(failure.recentPackets.count, 10)
        XCTAssertEqual(failure.report(), """
          step 6 (test.yaml:26): expect: { notification: FFE1, value: text:bye, within: 500ms }
          expected: a notification of FFE1 from hm10, the last with value text:bye within 500ms
          seen:     the last of 1 was text:hi (1 notification of FFE1: text:hi at 1.875s)
          at:       1.875s (virtual)
          last packets on the central's HCI:
            1.575s → ATT Read By Type Request handles 0x0014..0x0014 type 2803 on connection 0x0001
            1.635s ← ATT Error Response to Read By Type Request handle 0x0014: attribute-not-found (0x0a) on connection 0x0001
            1.635s → ATT Find Information Request handles 0x000d..0x000d on connection 0x0001
            1.695s ← ATT Find Information Response 0x000d 2902 on connection 0x0001
            1.695s → ATT Find Information Request handles 0x0012..0x0012 on connection 0x0001
            1.755s ← ATT Find Information Response 0x0012 2902 on connection 0x0001
            1.755s → ATT Write Request handle 0x000d value 01 00 on connection 0x0001
            1.815s ← ATT Write Response on connection 0x0001
            1.815s → ATT Write Command handle 0x000c value 68 69 on connection 0x0001
            1.875s ← ATT Handle Value Notification handle 0x000c value 68 69 on connection 0x0001
        """)
    }

    // MARK: Determinism

    private func captures(_ text: String, seed: UInt64? = nil) throws -> [String: [UInt8]] {
        let result = try ScenarioText.run(text, options: RunOptions(seed: seed, keepsCaptures: true))
        XCTAssertEqual(result.verdict, "passed")
        return Dictionary(uniqueKeysWithValues: result.captures.map { ($0.device, BTSnoopWriter.encode($0.packets)) })
    }

    func testSameFileAndSeedGiveIdenticalCaptureBytes() throws {
        let text = try FileText.read(ScenarioText.fixtures + "/format-shape.yaml")
        let first = try captures(text), second = try captures(text)
        XCTAssertEqual(Set(first.keys), ["hm10", "curtain", "central"])
        XCTAssertEqual(first, second)
        XCTAssertGreaterThan(first["central"]?.count ?? 0, 1000)
        let other = try captures(text, seed: 43)
        XCTAssertNotEqual(other["central"], first["central"], "another seed, other jitter")
    }

    func testSameSeedGivesTheSameTimeline() throws {
        let text = try FileText.read(ScenarioText.fixtures + "/format-tour.yaml")
        let options = RunOptions(recordsTimeline: true)
        let a = try ScenarioText.run(text, options: options), b = try ScenarioText.run(text, options: options)
        XCTAssertEqual(RunReports.timeline([ScenarioRun(result: a)], tier: .sim).render(),
                       RunReports.timeline([ScenarioRun(result: b)], tier: .sim).render())
    }

    // MARK: Failures are values

    private struct BrokenBackend: ScenarioBackend {
        struct Unplugged: Error, CustomStringConvertible { var description: String { "the controller is unplugged" } }
        var tier: TransportTier { .socket }
        func makeLab(seed: UInt64) throws -> Lab { throw Unplugged() }
    }

    func testABackendThatCannotStartGivesASetupFailure() throws {
        let scenario = try ScenarioText.load(ScenarioText.hm10("  - scan"))
        let result = ScenarioRunner(backend: BrokenBackend()).run(scenario)
        XCTAssertEqual(result.tier, .socket)
        XCTAssertEqual(result.failure?.kind, .setup)
        XCTAssertEqual(result.verdict, "expected the lab to start; seen the controller is unplugged")
        XCTAssertEqual(result.steps.count, 0)
    }

    func testSeedComesFromTheOptionsThenTheFileThenTheDefault() throws {
        let text = ScenarioText.hm10("  - scan", header: "seed: 9")
        XCTAssertEqual(try ScenarioText.run(text).seed, 9)
        XCTAssertEqual(try ScenarioText.run(text, options: RunOptions(seed: 3)).seed, 3)
        XCTAssertEqual(try ScenarioText.run(ScenarioText.hm10("  - scan")).seed, Scenario.defaultSeed)
    }
}

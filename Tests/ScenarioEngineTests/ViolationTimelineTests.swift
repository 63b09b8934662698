import BLELab
import BLELabCLI
import BLELabTestSupport
import BLERuntime
import ScenarioEngine
import ScenarioFormat
import XCTest

/// Every protocol violation a lab device's host reports, of every layer, is in the scenario's
/// timeline once, typed (layer, kind, answer, octets), and in the note of the step it happened in.
final class ViolationTimelineTests: XCTestCase {
    /// The sim, with a device's host sending raw L2CAP basic frames on its first connection at
    /// given instants: what no scenario file can make a lab device send.
    private struct InjectingBackend: ScenarioBackend {
        /// (when, from which device, channel, payload)
        var frames: [(at: TimeSpan, device: String, cid: UInt16, payload: [UInt8])]

        var tier: TransportTier { .sim }
        var description: String { "the sim, injecting frames" }

        func makeLab(seed: UInt64) throws -> Lab {
            let lab = try SimBackend().makeLab(seed: seed)
            for frame in frames {
                lab.loop.schedule(after: frame.at) {
                    lab.device(named: frame.device)?.host.connections.values.first?.link.send(cid: frame.cid, payload: frame.payload)
                }
            }
            return lab
        }
    }

    private func protocolViolations(_ result: ScenarioResult) -> [TimelineEvent] {
        result.timeline.filter { $0.kind == .protocolViolation }
    }

    /// A flawed peripheral's response to nothing reaches the central's host as a typed ATT
    /// violation (the scenario's own flaw watching no longer hides it from `BLEHost.onViolation`),
    /// and is recorded once.
    func testAnUnsolicitedResponseIsATypedViolationOfTheCentral() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + """

              - peripheral: { hm10: [ { send-pdu: hex:0b 68 69 } ] }
              - wait: 200ms
            """), options: RunOptions(recordsTimeline: true))
        XCTAssertEqual(result.verdict, "passed")
        let events = protocolViolations(result)
        XCTAssertEqual(events.count, 1, "\(events.map(\.text))")
        let event = try XCTUnwrap(events.first)
        XCTAssertEqual(event.device, "central")
        XCTAssertEqual(event.layer, "att")
        XCTAssertEqual(event.violation, "unsolicited-response")
        XCTAssertEqual(event.answer, "none")
        XCTAssertEqual(event.bytes, [0x0B, 0x68, 0x69])
        XCTAssertEqual(event.text, "rejected from hm10: Read Response with no request outstanding; octets 0b 68 69")
        let json = RunReports.timeline([ScenarioRun(result: result)], tier: .sim).render()
        XCTAssertTrue(json.contains(#""kind":"protocol-violation","text":"rejected from hm10: Read Response with no request outstanding; octets 0b 68 69","direction":"received","bytes":"0b 68 69","layer":"att","violation":"unsolicited-response","answer":"none""#),
                      json)
        let notes = result.steps.compactMap(\.note).filter { $0.contains("unsolicited-response") }
        XCTAssertEqual(notes.count, 1, "\(result.steps.map(\.note))")
        XCTAssertTrue(notes[0].contains("protocol violation: central: att/unsolicited-response from hm10: Read Response with no request outstanding"),
                      notes[0])
    }

    /// L2CAP and LE signaling violations, on either side: the central's host answers a signaling
    /// code with no meaning on LE with Command Reject, the peripheral's drops a frame on a channel
    /// that does not exist. Both are in the timeline, typed, and in the wait step's note.
    func testViolationsOfEveryLayerAreInTheTimelineAndTheNote() throws {
        let backend = InjectingBackend(frames: [
            (at: .seconds(3), device: "hm10", cid: 0x0005, payload: [0x02, 0x07, 0x00, 0x00]),     // Connection Request: BR/EDR only
            (at: .seconds(3) + .milliseconds(100), device: "central", cid: 0x0040, payload: [0x01, 0x02]),
        ])
        let scenario = try ScenarioText.load(ScenarioText.hm10(ScenarioText.connected + "\n  - wait: 3s"))
        let result = ScenarioRunner(backend: backend).run(scenario, options: RunOptions(recordsTimeline: true))
        XCTAssertEqual(result.verdict, "passed")
        let typed = protocolViolations(result).map { "\($0.device) \($0.layer ?? "-")/\($0.violation ?? "-") -> \($0.answer ?? "-")" }
        // The Command Reject answers a request hm10's own signaling never sent (the frame was
        // injected under it), so hm10's host reports it in turn: an unsolicited response.
        XCTAssertEqual(typed, ["central signaling/unknown-code -> command-reject 0x0000", "hm10 signaling/unsolicited-response -> none",
                               "hm10 l2cap/unknown-channel -> none"])
        let events = protocolViolations(result)
        guard events.count == 3 else { return }
        XCTAssertEqual(events.map(\.bytes), [[0x02, 0x07, 0x00, 0x00], [0x01, 0x07, 0x02, 0x00, 0x00, 0x00], [0x02, 0x00, 0x40, 0x00, 0x01, 0x02]])
        XCTAssertTrue(events[0].text.hasPrefix("rejected from hm10: "), events[0].text)
        XCTAssertTrue(events[0].text.contains("; octets 02 07 00 00; answered Command Reject"), events[0].text)
        XCTAssertTrue(events[2].text.hasPrefix("rejected from central: "), events[2].text)
        let wait = try XCTUnwrap(result.steps.last)
        XCTAssertTrue(wait.note?.hasPrefix("protocol violations: central: signaling/unknown-code from hm10: ") == true, "\(wait.note ?? "no note")")
        XCTAssertTrue(wait.note?.contains("; hm10: signaling/unsolicited-response from central: ") == true, "\(wait.note ?? "no note")")
        XCTAssertTrue(wait.note?.contains("; hm10: l2cap/unknown-channel from central: ") == true, "\(wait.note ?? "no note")")
        XCTAssertEqual(result.steps.dropLast().compactMap(\.note).filter { $0.contains("protocol violation") }, [])
    }

    /// A device that powers off loses what its controller had on the way to its host: a Number Of
    /// Completed Packets already handed over when the curtain died (its Read Response had just
    /// gone out) reached the host after it had let go of the link, and the host reported an
    /// overcount that nothing broke.
    func testAPoweredOffDeviceHearsNothingMoreFromItsController() throws {
        let text = try String(contentsOfFile: FaultScenarioTests.fieldDirectory + "/air-power-off.yaml", encoding: .utf8)
        let scenario = try Scenario.parse(text, file: "scenarios/field/air-power-off.yaml")
        let result = ScenarioRunner().run(scenario, options: RunOptions(recordsTimeline: true))
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(protocolViolations(result).filter { $0.layer != nil }.map(\.text), [])
    }
}

import BLELab
import BLELabTestSupport
import BLERuntime
import BLEWire
import Controller
import Foundation
import HCI
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// The fault keys (docs/scenarios.md "Faults") and scenarios/field/: what crossed each device's
/// HCI, when, with which reason codes.
final class FaultScenarioTests: XCTestCase {
    static var fieldDirectory: String {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        parts.removeLast(3)
        return parts.joined(separator: "/") + "/scenarios/field"
    }

    func field(_ name: String, seed: UInt64? = nil, timeline: Bool = false) throws -> ScenarioResult {
        let path = Self.fieldDirectory + "/" + name
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let scenario = try Scenario.parse(text, file: "scenarios/field/" + name)
        return ScenarioRunner().run(scenario, options: RunOptions(seed: seed, keepsCaptures: true, recordsTimeline: timeline))
    }

    func packets(_ result: ScenarioResult, _ device: String) -> [LoggedPacket] {
        result.captures.first { $0.device == device }?.packets ?? []
    }

    /// ATT PDUs (unfragmented, CID 0x0004) in one direction, with their times.
    func att(_ packets: [LoggedPacket], sent: Bool) -> [(time: Instant, pdu: [UInt8])] {
        packets.compactMap { p in
            guard p.frame.first == 0x02, p.frame.count >= 10, p.frame[7] == 0x04, p.frame[8] == 0x00,
                  (p.direction == .hostToController) == sent else { return nil }
            return (p.time, Array(p.frame[9...]))
        }
    }

    /// Events with code `code`: (time, parameters).
    func events(_ packets: [LoggedPacket], code: UInt8) -> [(time: Instant, parameters: [UInt8])] {
        packets.compactMap { p in
            guard p.frame.first == 0x04, p.frame.count >= 3, p.frame[1] == code else { return nil }
            return (p.time, Array(p.frame[3...]))
        }
    }

    func assertPassed(_ result: ScenarioResult, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.verdict, "passed", file: file, line: line)
    }

    // MARK: scenarios/field

    func testEveryFieldScenarioPassesOnTheSimAndSaysWhatBugItStandsFor() throws {
        let names = try FileText.entries(Self.fieldDirectory).filter { $0.hasSuffix(".yaml") }.sorted()
        XCTAssertGreaterThanOrEqual(names.filter { $0.hasPrefix("air-") || $0.hasPrefix("link-") }.count, 9)
        // The air faults' scenarios (other field scenarios, att-*, belong to the flawed peripherals).
        for name in names where name.hasPrefix("air-") || name.hasPrefix("link-") {
            let text = try String(contentsOfFile: Self.fieldDirectory + "/" + name, encoding: .utf8)
            XCTAssertTrue(text.hasPrefix("# Field bug: "), "\(name) opens with the bug it stands for")
            let scenario = try Scenario.parse(text, file: name)
            // An MTU limit and a burst need no sim-only key: they run on every tier (and pass on
            // RootCanal, Bumble and btvirt). The others inject faults only the sim's air has.
            if ["link-mtu-limit.yaml", "link-notification-burst.yaml"].contains(name) {
                XCTAssertNotEqual(scenario.requires, [.sim], name)
            } else {
                XCTAssertEqual(scenario.requires, [.sim], name)
            }
            XCTAssertEqual(ScenarioRunner().run(scenario, options: RunOptions()).verdict, "passed", name)
        }
    }

    // MARK: 1. Loss

    func testLossDelaysTheEchoButKeepsEveryByteInOrder() throws {
        let lossy = try field("link-lossy-serial.yaml")
        assertPassed(lossy)
        let text = try String(contentsOfFile: Self.fieldDirectory + "/link-lossy-serial.yaml", encoding: .utf8)
        let clean = ScenarioRunner().run(try Scenario.parse(text.replacingOccurrences(of: "loss: 40%", with: "loss: 0%"), file: "x.yaml"),
                                         options: RunOptions(keepsCaptures: true))
        assertPassed(clean)
        let notifications = { (r: ScenarioResult) in self.att(self.packets(r, "central"), sent: false).filter { $0.pdu.first == 0x1B } }
        let values = notifications(lossy).map { String(decoding: $0.pdu.dropFirst(3), as: UTF8.self) }
        XCTAssertEqual(values, ["AT", "one", "two", "three", "four"])
        XCTAssertEqual(values, notifications(clean).map { String(decoding: $0.pdu.dropFirst(3), as: UTF8.self) })
        XCTAssertGreaterThan(notifications(lossy).last!.time, notifications(clean).last!.time, "retransmissions took later events")
        // No ATT PDU was lost on the way: each side received as many as the other sent.
        XCTAssertEqual(att(packets(lossy, "central"), sent: true).map(\.pdu), att(packets(lossy, "hm10"), sent: false).map(\.pdu))
        XCTAssertEqual(att(packets(lossy, "hm10"), sent: true).map(\.pdu), att(packets(lossy, "central"), sent: false).map(\.pdu))
        // Same seed, same bytes.
        let again = try field("link-lossy-serial.yaml")
        XCTAssertEqual(packets(again, "central"), packets(lossy, "central"))
    }

    func testTotalLossDropsTheLinkWithConnectionTimeout() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + """

              - link: { loss: 100% }
              - expect: { disconnected: { reason: connection-timeout, within: 6s } }
              - wait: 10ms
            """, header: "requires: [sim]"), options: RunOptions(keepsCaptures: true))
        assertPassed(result)
        for device in ["central", "hm10"] {
            XCTAssertEqual(events(packets(result, device), code: 0x05).map(\.parameters.last), [0x08], device)
        }
    }

    // MARK: 1. Drop the Nth ATT PDU

    /// The Write Response left the lock's host and never reached the central; the Write Request's
    /// step ended exactly 30 s after the request left (ATT transaction timeout, virtual time).
    func testDroppedWriteResponseEndsInTheATTTimeoutAfter30Seconds() throws {
        let result = try field("link-dropped-write-response.yaml", timeline: true)
        assertPassed(result)
        let dropped = result.timeline.filter { $0.text.hasPrefix("air:") }
        XCTAssertEqual(dropped.map(\.text), ["air: ATT PDU #1 from the peripheral dropped"])
        XCTAssertEqual(dropped.map(\.device), ["lock"])
        let response = try XCTUnwrap(att(packets(result, "lock"), sent: true).first { $0.pdu == [0x13] })
        XCTAssertGreaterThan(dropped[0].time, response.time, "dropped on the air after it left the lock's host")
        let request = try XCTUnwrap(att(packets(result, "central"), sent: true).last { $0.pdu.first == 0x12 })
        XCTAssertEqual(request.pdu.dropFirst(3).map { $0 }, Array("unlock".utf8))
        XCTAssertTrue(att(packets(result, "lock"), sent: true).contains { $0.pdu == [0x13] }, "the lock answered")
        XCTAssertFalse(att(packets(result, "central"), sent: false).contains { $0.pdu == [0x13] }, "the answer vanished")
        let write = try XCTUnwrap(result.steps.first { $0.step.text.hasPrefix("write:") })
        XCTAssertEqual(write.end - request.time, .seconds(30))
        XCTAssertEqual(result.steps.first { $0.step.text.contains("att-timeout") }?.outcome, .passed)
    }

    func testAnATTTimeoutNobodyExpectsFailsTheOperation() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + """

              - link: { drop: { att: 1, from: central } }
              - write: { characteristic: FFE2, value: hex:01 }
              - expect: { connected: hm10 }
            """, header: "requires: [sim]\ntimeout: 60s"))
        XCTAssertTrue(result.verdict.contains("ATT transaction timeout"), result.verdict)
        let expecting = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + """

              - link: { drop: { att: 1, from: central } }
              - write: { characteristic: FFE2, value: hex:01 }
              - expect: { att-timeout: write }
            """, header: "requires: [sim]\ntimeout: 60s"))
        assertPassed(expecting)
        let otherRequest = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + """

              - link: { drop: { att: 1, from: central } }
              - write: { characteristic: FFE2, value: hex:01 }
              - expect: { att-timeout: read }
            """, header: "requires: [sim]\ntimeout: 60s"))
        XCTAssertNotEqual(otherRequest.verdict, "passed")
        let wrong = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + """

              - write: { characteristic: FFE2, value: hex:01 }
              - expect: { att-timeout: { request: write, peripheral: hm10 } }
            """, header: "requires: [sim]"))
        XCTAssertNotEqual(wrong.verdict, "passed", "the write was answered")
    }

    // MARK: 2. Latency and jitter

    func testLatencyAndJitterKeepOrderAndAreSeeded() throws {
        let result = try field("link-slow-peripheral.yaml")
        assertPassed(result)
        let notes = att(packets(result, "central"), sent: false).filter { $0.pdu.first == 0x1B }
        XCTAssertEqual(notes.map { $0.pdu.last }, [0x3C, 0x3D, 0x3E, 0x3F, 0x40])
        // Each notification left the strap's host at least 100 ms before it reached the central.
        let sent = att(packets(result, "strap"), sent: true).filter { $0.pdu.first == 0x1B }
        XCTAssertEqual(sent.count, 5)
        for (s, r) in zip(sent, notes) { XCTAssertGreaterThanOrEqual(r.time - s.time, .milliseconds(100)) }
        let other = try field("link-slow-peripheral.yaml", seed: 99)
        assertPassed(other)
        XCTAssertNotEqual(att(packets(other, "central"), sent: false).map(\.time), att(packets(result, "central"), sent: false).map(\.time))
    }

    // MARK: 3. Link loss

    func testLinkLossTimesOutBothSidesAtTheSupervisionTimeout() throws {
        let result = try field("link-loss-reconnect.yaml")
        assertPassed(result)
        let central = events(packets(result, "central"), code: 0x05)
        let peripheral = events(packets(result, "logger"), code: 0x05)
        XCTAssertEqual(central.map(\.parameters), [[0x00, 0x01, 0x00, 0x08], [0x00, 0x01, 0x00, 0x08]])
        XCTAssertEqual(peripheral.map(\.parameters.last), [0x08, 0x08])
        XCTAssertEqual(central.map(\.time), peripheral.map(\.time), "both supervision timers fire together")
        // The second loss was timed: 2 s after its step; the timeout 5 s after the last event heard.
        let step = try XCTUnwrap(result.steps.first { $0.step.text.contains("after: 2s") })
        let lost = step.start + .seconds(2)
        let lastNotification = try XCTUnwrap(att(packets(result, "central"), sent: false).last { $0.time <= lost })
        XCTAssertLessThanOrEqual(central[1].time - lost, .seconds(5))
        XCTAssertGreaterThan(central[1].time - lost, .seconds(5) - .milliseconds(30))
        XCTAssertGreaterThanOrEqual(central[1].time - lastNotification.time, .seconds(5))
    }

    // MARK: 4. Out of range

    func testOutOfRangeRampsTheRSSIUntilReportsStop() throws {
        let result = try ScenarioText.run(ScenarioText.hm10("""
              - scan: { for: 1s }
              - out-of-range: { peripheral: hm10, rate: 20dB/s }
              - scan: { for: 1s, duplicates: true }
              - scan: { for: 2s, duplicates: true }
              - scan: { for: 1s, duplicates: true }
              - expect: { not-discovered: hm10 }
            """, header: "requires: [sim]"), options: RunOptions(keepsCaptures: true))
        assertPassed(result)
        // LE Advertising Reports (LE Meta 0x3E, subevent 0x02): the RSSI is the report's last octet.
        let reports = events(packets(result, "central"), code: 0x3E).filter { $0.parameters.first == 0x02 }
        let start = try XCTUnwrap(result.steps.first { $0.step.text.hasPrefix("out-of-range") }).start
        let ramp = reports.filter { $0.time >= start }
        XCTAssertFalse(ramp.isEmpty)
        // The scenario runner's air adds ±2 dB of seeded noise to every reading.
        for r in ramp {
            let expected = -48 - 20 * Double((r.time - start).nanoseconds) / 1e9
            XCTAssertEqual(Double(Int8(bitPattern: r.parameters.last!)), expected.rounded(.down), accuracy: 2.01)
        }
        let firstHalf = ramp.filter { $0.time - start < .milliseconds(1_000) }.map { Int(Int8(bitPattern: $0.parameters.last!)) }
        let lastHalf = ramp.filter { $0.time - start > .milliseconds(1_600) }.map { Int(Int8(bitPattern: $0.parameters.last!)) }
        XCTAssertLessThan(lastHalf.max()!, firstHalf.min()!, "the signal fell")
        // -48 dBm to -100 dBm at 20 dB/s: 2.6 s, then nothing.
        XCTAssertLessThanOrEqual(ramp.last!.time - start, .milliseconds(2_600))
        XCTAssertGreaterThan(ramp.last!.time - start, .milliseconds(2_400))
    }

    func testOutOfRangeWhileConnectedTimesOut() throws {
        let result = try field("air-out-of-range.yaml")
        assertPassed(result)
        XCTAssertEqual(events(packets(result, "central"), code: 0x05).map(\.parameters.last), [0x08])
        XCTAssertEqual(events(packets(result, "tag"), code: 0x05).map(\.parameters.last), [0x08])
    }

    // MARK: 5. Power-off

    func testPowerOffIsSilenceThenConnectionTimeoutForTheCentral() throws {
        let result = try field("air-power-off.yaml")
        assertPassed(result)
        let central = events(packets(result, "central"), code: 0x05)
        XCTAssertEqual(central.map(\.parameters.last), [0x08, 0x08])
        // The curtain's host heard nothing after the write that made it power off, until its
        // power-on began with HCI Reset (0x0C03).
        let curtain = packets(result, "curtain")
        let write = try XCTUnwrap(att(curtain, sent: false).first { $0.pdu.first == 0x52 })
        let after = curtain.filter { $0.time > write.time }
        XCTAssertEqual(after.first?.direction, .hostToController)
        XCTAssertEqual(after.first?.frame, [0x01, 0x03, 0x0C, 0x00])
        XCTAssertFalse(events(curtain, code: 0x05).contains { $0.time < central[1].time && $0.time > write.time })
    }

    // MARK: 6. Connection parameter updates

    func testConnectionParameterUpdatesOnTheWire() throws {
        let result = try field("link-connection-update.yaml")
        assertPassed(result)
        let sensor = packets(result, "sensor")
        // L2CAP Connection Parameter Update Request (CID 0x0005, code 0x12): 80 × 1.25 ms, latency 4, 600 × 10 ms.
        let request = sensor.first { $0.direction == .hostToController && $0.frame.count >= 10 && $0.frame[7] == 0x05 && $0.frame[9] == 0x12 }
        XCTAssertEqual(request.map { Array($0.frame[13...]) }, [0x50, 0x00, 0x50, 0x00, 0x04, 0x00, 0x58, 0x02])
        // The central answers accepted (0x13, result 0x0000) and sends LE Connection Update (0x2013).
        let central = packets(result, "central")
        XCTAssertTrue(central.contains { $0.direction == .hostToController && $0.frame.count == 15 && $0.frame[7] == 0x05 && $0.frame[9] == 0x13 && $0.frame[13] == 0 && $0.frame[14] == 0 })
        let updates = central.filter { $0.frame.first == 0x01 && $0.frame[1] == 0x13 && $0.frame[2] == 0x20 }
        XCTAssertEqual(updates.count, 2)
        // LE Connection Update Complete (subevent 0x03) on both sides: status, handle, interval, latency, timeout.
        for device in ["central", "sensor"] {
            let completes = events(packets(result, device), code: 0x3E).filter { $0.parameters.first == 0x03 }
            XCTAssertEqual(completes.map { Array($0.parameters[4...]) }, [[0x50, 0x00, 0x04, 0x00, 0x58, 0x02], [0x27, 0x00, 0x00, 0x00, 0xC8, 0x00]], device)
        }
    }

    func testConnectionParametersExpectationReportsWhatItSaw() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + """

              - expect: { connection-parameters: { interval: 50ms } }
            """))
        XCTAssertTrue(result.verdict.contains("interval 30ms, latency 0, timeout 5000ms"), result.verdict)
    }

    // MARK: 7. MTU

    func testPeripheralMTUCapsTheExchangeAndLongValuesSplit() throws {
        let result = try field("link-mtu-limit.yaml")
        assertPassed(result)
        let sent = att(packets(result, "central"), sent: true).map(\.pdu)
        let received = att(packets(result, "central"), sent: false).map(\.pdu)
        XCTAssertTrue(sent.contains([0x02, 0xF7, 0x00]), "Exchange MTU Request, Client Rx MTU 247")
        XCTAssertTrue(received.contains([0x03, 0x17, 0x00]), "Exchange MTU Response, Server Rx MTU 23")
        XCTAssertEqual(sent.filter { $0.first == 0x0C }.count, 3, "70 octets: Read Request (22) then 3 Read Blob Requests")
        XCTAssertEqual(sent.filter { $0.first == 0x16 }.count, 3, "53 octets: 3 Prepare Write Requests of 18")
        XCTAssertTrue(sent.contains([0x18, 0x01]), "Execute Write Request")
        XCTAssertTrue(received.allSatisfy { $0.count <= 23 })
    }

    // MARK: 8. Bursts

    func testBurstWaitsForCompletedPacketsAndArrivesInOrder() throws {
        let result = try field("link-notification-burst.yaml")
        assertPassed(result)
        let logger = packets(result, "logger")
        // Replay the logger's ACL credits: 8 buffers (LE Read Buffer Size), one per packet sent,
        // back with each Number Of Completed Packets; the host never overruns and had to wait.
        var credits = 8, waited = false, sent = 0
        for p in logger {
            if p.frame.first == 0x02, p.direction == .hostToController {
                credits -= 1
                sent += 1
                XCTAssertGreaterThanOrEqual(credits, 0)
            } else if p.frame.first == 0x04, p.frame[1] == 0x13 {
                credits += Int(p.frame[6]) | Int(p.frame[7]) << 8
            }
            if credits == 0 { waited = true }
        }
        XCTAssertTrue(waited, "the burst filled the controller's buffers")
        let notes = att(packets(result, "central"), sent: false).filter { $0.pdu.first == 0x1B }
        XCTAssertEqual(notes.map { String(decoding: $0.pdu.dropFirst(3), as: UTF8.self) }, (0..<20).map { "sample-\(Character(Unicode.Scalar(UInt8(65 + $0))))" })
        XCTAssertGreaterThan(Set(notes.map(\.time)).count, 1, "the burst took several connection events")
    }

    // MARK: Off the simulator

    // Controllers behind a connector (ConnectedSimsBackend, as on the socket tier): the lab has
    // no air to fault.

    func testAirFaultsOffTheSimulatorFailNamingTheFix() throws {
        let scenario = try ScenarioText.load(ScenarioText.hm10(ScenarioText.connected + "\n  - power-off: hm10"))
        let result = ScenarioRunner(backend: ConnectedSimsBackend()).run(scenario)
        let failure = try XCTUnwrap(result.failure)
        XCTAssertEqual(failure.step?.index, 4)
        XCTAssertEqual(failure.seen, "power-off needs the embedded simulator (--transport sim); add 'requires: [sim]' to the scenario")
        // A connection update is host behaviour: it runs on any controller.
        let update = try ScenarioText.load(ScenarioText.hm10(ScenarioText.connected + """

              - connection-update: { interval: 50ms, latency: 0, timeout: 2s }
              - expect: { connection-parameters: { interval: 50ms, timeout: 2s } }
            """))
        XCTAssertEqual(ScenarioRunner(backend: ConnectedSimsBackend()).run(update).verdict, "passed")
    }

    func testTheCentralsPowerOffOffTheSimulatorFailsNamingWhatCan() throws {
        let scenario = try ScenarioText.load(ScenarioText.hm10(ScenarioText.connected + "\n  - power-off: central"))
        let result = ScenarioRunner(backend: ConnectedSimsBackend()).run(scenario)
        let failure = try XCTUnwrap(result.failure)
        XCTAssertEqual(failure.step?.index, 4)
        XCTAssertEqual(failure.expected, "the central's controller to power off")
        XCTAssertEqual(failure.seen, "power-off: central needs the embedded simulator (--transport sim) or --central bluez")
    }
}

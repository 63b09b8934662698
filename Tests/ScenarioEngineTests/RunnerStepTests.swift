import ATT
import BLELab
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import XCTest

/// Each central step and expectation on the sim, passing and failing, with the failure's text.
/// Steps 1–3 of `connected` scenarios are scan, connect, discover.
final class RunnerStepTests: XCTestCase {
    private let c = ScenarioText.connected
    private let curtain = """
      curtain:
        advertise: { name: Smart_Curtain, services: [FFF0] }
        gatt:
          - service: FFF0
            characteristics:
              - { uuid: FFF1, properties: [write-without-response] }
              - { uuid: FFF2, properties: [read, notify], value: hex:00 }
    """

    private func verdict(_ central: String, extra: String = "", header: String = "") throws -> String {
        try ScenarioText.run(ScenarioText.hm10(central, extraPeripheral: extra, header: header)).verdict
    }

    // MARK: Scanning

    func testScanFiltersByServiceAsCoreBluetoothDoes() throws {
        XCTAssertEqual(try verdict("""
          - scan: { services: [FFE0], for: 1s }
          - expect: { discovered: hm10 }
          - expect: { not-discovered: curtain }
          - scan
          - expect: { discovered: curtain }
        """, extra: curtain), "passed")
        XCTAssertEqual(try verdict("  - scan: { services: [FFE0] }\n  - expect: { discovered: curtain }", extra: curtain),
                       "step 2 (test.yaml:28): expect: { discovered: curtain }: expected the last scan discovered curtain; seen the last scan (step 1) discovered hm10 (-49 dBm)")
    }

    func testScanByNameKeepsOnlyNamedDevices() throws {
        XCTAssertEqual(try verdict("  - scan: { names: [Smart_Curtain] }\n  - expect: { not-discovered: hm10 }\n  - expect: { discovered: curtain }",
                                   extra: curtain), "passed")
        XCTAssertEqual(try verdict("  - scan: { names: [Smart_Curtain] }\n  - expect: { discovered: hm10 }", extra: curtain),
                       "step 2 (test.yaml:28): expect: { discovered: hm10 }: expected the last scan discovered hm10; seen the last scan (step 1) discovered curtain (-59 dBm)")
    }

    func testDiscoveredNeedsAScanAndConnectNeedsADiscovery() throws {
        XCTAssertEqual(try verdict("  - expect: { discovered: hm10 }"),
                       "step 1 (test.yaml:21): expect: { discovered: hm10 }: expected the last scan discovered hm10; seen no scan has run")
        XCTAssertEqual(try verdict("  - connect: hm10"),
                       "step 1 (test.yaml:21): connect: hm10: expected hm10 discovered by a scan before connecting; seen no scan has run")
    }

    func testConnectToANonConnectableAdvertiserTimesOut() throws {
        let beacon = """
          beacon:
            advertise: { name: Beacon, connectable: false }
        """
        XCTAssertEqual(try verdict("  - scan\n  - connect: { peripheral: beacon, within: 500ms }", extra: beacon),
                       "step 2 (test.yaml:23): connect: { peripheral: beacon, within: 500ms }: expected a connection to beacon within 500ms; seen no connection within 500ms")
    }

    func testConnectedAndDisconnect() throws {
        XCTAssertEqual(try verdict(c + "\n  - expect: { connected: hm10 }\n  - disconnect\n  - expect: { disconnected: { reason: local-host-terminated } }"), "passed")
        XCTAssertEqual(try verdict(c + "\n  - disconnect\n  - expect: { connected: hm10 }"),
                       "step 5 (test.yaml:25): expect: { connected: hm10 }: expected connected to hm10; seen the connection ended (local-host-terminated (0x16))")
        XCTAssertEqual(try verdict(c + "\n  - disconnect\n  - read: FFE1"),
                       "step 5 (test.yaml:25): read: FFE1: expected a connection to hm10; seen the connection ended (local-host-terminated (0x16))")
    }

    // MARK: Discovery

    func testServicesAndCharacteristicExpectations() throws {
        XCTAssertEqual(try verdict(c + """

          - expect: { services: [FFE0, 1800] }
          - expect: { characteristic: { uuid: FFE2, properties: [write] } }
        """), "passed")
        XCTAssertEqual(try verdict(c + "\n  - expect: { services: [FFE0, 180F] }"),
                       "step 4 (test.yaml:24): expect: { services: [FFE0, 180F] }: expected hm10 has services FFE0, 180F; seen services 1800, 1801, FFE0 (no 180F)")
        XCTAssertEqual(try verdict(c + "\n  - expect: { characteristic: { uuid: FFE2, properties: [read, write] } }"),
                       "step 4 (test.yaml:24): expect: { characteristic: { uuid: FFE2, properties: [read, write] } }: expected hm10 has characteristic FFE2 with properties [read, write]; seen FFE2 has properties [write]")
    }

    func testDiscoveryByServiceFindsOnlyThoseAndReadsNeedDiscovery() throws {
        XCTAssertEqual(try verdict("  - scan\n  - connect: hm10\n  - read: FFE1"),
                       "step 3 (test.yaml:23): read: FFE1: expected characteristic FFE1 discovered on hm10; seen nothing discovered yet (add a discover step)")
        XCTAssertEqual(try verdict("  - scan\n  - connect: hm10\n  - discover: { services: [1800] }\n  - read: FFE1"),
                       "step 4 (test.yaml:24): read: FFE1: expected characteristic FFE1 discovered on hm10; seen discovery found 1800/2A00, 1800/2A01")
    }

    func testExchangeMTU() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(c + "\n  - mtu: 100\n  - write: { characteristic: FFE4, value: \"text:0123456789012345678901234567890123456789\", type: command }"))
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.steps[3].note, "ATT_MTU 100")
        XCTAssertEqual(try verdict(c + "\n  - write: { characteristic: FFE4, value: \"text:0123456789012345678901234567890123456789\", type: command }"),
                       "step 4 (test.yaml:24): write: { characteristic: FFE4, value: \"text:0123456789012345678901234567890123456789\", type: command }: expected a Write Command of 40 octets to FFE4; seen 40 octets do not fit a Write Command at ATT_MTU 23 (at most ATT_MTU - 3 = 20 octets); exchange a larger MTU first (mtu: 247), or write with type: request, which sends a long value in parts")
    }

    // MARK: Reads and writes

    func testReadAndValue() throws {
        XCTAssertEqual(try verdict(c + "\n  - read: FFE1\n  - expect: { value: text:ready }\n  - read: FFE3\n  - expect: { value: u8:1 }"), "passed")
        XCTAssertEqual(try verdict(c + "\n  - read: FFE1\n  - expect: { value: text:nope }"),
                       "step 5 (test.yaml:25): expect: { value: text:nope }: expected the last read returned text:nope; seen the read in step 4 returned text:ready")
        XCTAssertEqual(try verdict(c + "\n  - expect: { value: u8:1 }"),
                       "step 4 (test.yaml:24): expect: { value: u8:1 }: expected the last read returned u8:1; seen no read has returned a value")
    }

    func testWriteTypesAsTheyCrossTheLink() throws {
        XCTAssertEqual(try verdict(c + """

          - write: { characteristic: FFE1, value: text:a }
          - expect: { write-sent-as: command }
          - write: { characteristic: FFE2, value: text:b }
          - expect: { write-sent-as: request }
          - write: { characteristic: FFE4, value: text:c }
          - expect: { write-sent-as: request }
          - write: { characteristic: FFE4, value: text:d, type: prefer-command }
          - expect: { write-sent-as: command }
          - write: { characteristic: FFE2, value: text:e, type: prefer-command }
          - expect: { write-sent-as: request }
          - write: { characteristic: FFE4, value: text:f, type: command }
          - expect: { write-sent-as: command }
          - write: { characteristic: FFE4, value: text:g, type: request }
          - expect: { write-sent-as: request }
        """), "passed")
        XCTAssertEqual(try verdict(c + "\n  - write: { characteristic: FFE2, value: u8:5 }\n  - expect: { write-sent-as: command }"),
                       "step 5 (test.yaml:25): expect: { write-sent-as: command }: expected the last write crossed the link as a Write Command; seen ATT Write Request handle 0x000f value 05")
        XCTAssertEqual(try verdict(c + "\n  - expect: { write-sent-as: command }"),
                       "step 4 (test.yaml:24): expect: { write-sent-as: command }: expected the last write crossed the link as a Write Command; seen no write has run")
    }

    func testPeripheralReceivedIsWhatCrossedThePeripheralsHCI() throws {
        XCTAssertEqual(try verdict(c + """

          - write: { characteristic: FFE2, value: text:x }
          - expect: { peripheral-received: { characteristic: FFE2, value: text:x, via: request } }
          - write: { characteristic: FFE1, value: text:y }
          - expect: { peripheral-received: { characteristic: FFE1, value: text:y, via: command } }
        """), "passed")
        // A long write arrives as Prepare Write Requests and an Execute Write Request: one write.
        XCTAssertEqual(try verdict(c + """

          - write: { characteristic: FFE4, value: "text:0123456789012345678901234567890123456789", type: request }
          - expect: { peripheral-received: { characteristic: FFE4, value: "text:0123456789012345678901234567890123456789", via: request } }
          - read: FFE4
          - expect: { value: "text:0123456789012345678901234567890123456789" }
        """), "passed")
        XCTAssertEqual(try verdict(c + "\n  - write: { characteristic: FFE2, value: text:x, type: command }\n  - expect: { peripheral-received: { characteristic: FFE2, via: request } }"),
                       "step 5 (test.yaml:25): expect: { peripheral-received: { characteristic: FFE2, via: request } }: expected hm10 received a write of FFE2 via Write Request within 1s; seen 1.785s Write Command handle 0x000f value 78")
        XCTAssertEqual(try verdict(c + "\n  - expect: { peripheral-received: { characteristic: FFE2, within: 100ms } }"),
                       "step 4 (test.yaml:24): expect: { peripheral-received: { characteristic: FFE2, within: 100ms } }: expected hm10 received a write of FFE2 within 100ms; seen no write of FFE2 reached hm10")
    }

    func testWriteCommandWithoutWriteWithoutResponseIsLostAtTheServer() throws {
        // It crosses the link (the peripheral's HCI has it) but the server drops it: the value stays.
        XCTAssertEqual(try verdict(c + """

          - write: { characteristic: FFE2, value: u8:7, type: command }
          - expect: { peripheral-received: { characteristic: FFE2, value: u8:7, via: command } }
          - read: FFE4
          - write: { characteristic: FFE2, value: u8:8, type: request }
          - expect: { peripheral-received: { characteristic: FFE2, value: u8:8, via: request } }
        """), "passed")
        let result = try ScenarioText.run(ScenarioText.hm10(c + "\n  - write: { characteristic: FFE2, value: u8:7, type: command }\n  - wait: 1s"),
                                          options: RunOptions(recordsTimeline: true))
        XCTAssertEqual(result.verdict, "passed")
        let answered = result.timeline.filter { $0.device == "hm10" && $0.kind == .att && $0.direction == "sent" && $0.time > result.steps[3].start }
        XCTAssertEqual(answered.map(\.text), [], "the server answered nothing")
    }

    // MARK: Notifications

    func testNotificationCountsSinceSubscribingAndTheLastExpectation() throws {
        XCTAssertEqual(try verdict(c + """

          - peripheral: { hm10: [{ notify: FFE1, value: text:before }] }
          - expect: { no-notification: { characteristic: FFE1, for: 500ms } }
          - subscribe: FFE1
          - peripheral: { hm10: [{ notify: FFE1, value: text:a }, { notify: FFE1, value: text:b }, { notify: FFE1, value: text:c }] }
          - expect: { notification: FFE1, count: 3, in-order: [text:a, text:b, text:c], value: text:c }
          - write: { characteristic: FFE1, value: text:echo }
          - expect: { notification: FFE1, value: text:echo, within: 500ms }
          - unsubscribe: FFE1
          - peripheral: { hm10: [{ notify: FFE1, value: text:after }] }
          - expect: { no-notification: { characteristic: FFE1, for: 1s } }
        """), "passed")
    }

    func testNotificationFailures() throws {
        XCTAssertEqual(try verdict(c + "\n  - subscribe: FFE1\n  - expect: { notification: FFE1, within: 2s }"),
                       "step 5 (test.yaml:25): expect: { notification: FFE1, within: 2s }: expected a notification of FFE1 from hm10 within 2s; seen no notification of FFE1 arrived since step 4")
        XCTAssertEqual(try verdict(c + "\n  - subscribe: FFE1\n  - peripheral: { hm10: [{ notify: FFE1, value: text:xy }, { notify: FFE1, value: text:yz }] }\n  - expect: { notification: FFE1, in-order: [text:yz, text:xy] }"),
                       "step 6 (test.yaml:26): expect: { notification: FFE1, in-order: [text:yz, text:xy] }: expected 2 notifications of FFE1 from hm10, in order text:yz, text:xy within 1s; seen 2 notifications of FFE1: text:xy at 1.845s, text:yz at 1.845s")
        XCTAssertEqual(try verdict(c + "\n  - subscribe: FFE1\n  - peripheral: { hm10: [{ notify: FFE1, value: text:xy }] }\n  - expect: { notification: FFE1, value: text:zz }"),
                       "step 6 (test.yaml:26): expect: { notification: FFE1, value: text:zz }: expected a notification of FFE1 from hm10, the last with value text:zz within 1s; seen the last of 1 was text:xy (1 notification of FFE1: text:xy at 1.845s)")
        XCTAssertEqual(try verdict(c + "\n  - subscribe: FFE1\n  - peripheral: { hm10: [{ notify: FFE1, value: text:x }] }\n  - expect: { no-notification: { characteristic: FFE1, for: 1s } }"),
                       "step 6 (test.yaml:26): expect: { no-notification: { characteristic: FFE1, for: 1s } }: expected no notification of FFE1 from hm10 for 1s; seen 1 notification of FFE1: u8:120 (text:x) at 1.845s")
    }

    func testIndicationsCountAndAreConfirmedByTheCentral() throws {
        let result = try ScenarioText.run(ScenarioText.hm10(c + """

          - subscribe: FFE3
          - peripheral: { hm10: [{ indicate: FFE3, value: u8:42 }] }
          - expect: { notification: FFE3, value: u8:42 }
          - wait: 100ms
        """), options: RunOptions(recordsTimeline: true))
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.steps[5].note, "1 indication of FFE3: u8:42 (text:*) at 1.845s")
        let central = result.timeline.filter { $0.device == "central" && $0.kind == .att }.suffix(2).map { "\($0.direction ?? "") \($0.text)" }
        XCTAssertEqual(central, ["received Handle Value Indication handle 0x0011 value 2a", "sent Handle Value Confirmation"])
        let hm10 = result.timeline.filter { $0.device == "hm10" && $0.kind == .peripheral }.map(\.text)
        XCTAssertEqual(hm10.suffix(2), ["indicate FFE3 2a → 1 central(s)", "indication of FFE3 confirmed"])
    }

    // MARK: Peripheral actions and disconnection

    func testPeripheralDisconnectsWithAReason() throws {
        XCTAssertEqual(try verdict(c + """

          - peripheral: { hm10: [{ disconnect: { reason: remote-power-off } }] }
          - expect: { disconnected: { reason: remote-power-off, within: 500ms } }
        """), "passed")
        XCTAssertEqual(try verdict(c + "\n  - peripheral: { hm10: [disconnect] }\n  - expect: { disconnected: { reason: 0x15 } }"),
                       "step 5 (test.yaml:25): expect: { disconnected: { reason: 0x15 } }: expected disconnected from hm10 with reason remote-power-off (0x15) within 1s; seen disconnected with reason remote-user-terminated (0x13)")
        XCTAssertEqual(try verdict(c + "\n  - expect: { disconnected: { within: 300ms } }"),
                       "step 4 (test.yaml:24): expect: { disconnected: { within: 300ms } }: expected disconnected from hm10 within 300ms; seen still connected after 300ms")
    }

    func testReadHandlerAnswersWithAnErrorAfterADelay() throws {
        let flaky = """
          flaky:
            advertise: { name: Flaky }
            gatt:
              - service: AAA0
                characteristics:
                  - uuid: AAA1
                    properties: [read]
                    on-read: [{ delay: 300ms }, { respond-error: insufficient-authentication }]
        """
        let result = try ScenarioText.run(ScenarioText.hm10("""
          - scan
          - connect: flaky
          - discover: all
          - read: AAA1
          - expect: { error: insufficient-authentication }
        """, extraPeripheral: flaky))
        XCTAssertEqual(result.verdict, "passed")
        let read = result.steps[3]
        XCTAssertGreaterThanOrEqual(read.end - read.start, .milliseconds(300), "the answer waited for the delay")
        XCTAssertEqual(read.note, "ATT error insufficient-authentication (0x05)")
    }

    func testWaitLetsVirtualTimePass() throws {
        let result = try ScenarioText.run(ScenarioText.hm10("  - wait: 2m\n  - wait: 1.5s\n  - wait: 250ms"))
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.steps.map { $0.end - $0.start }, [.seconds(120), .milliseconds(1500), .milliseconds(250)])
    }

    func testScenarioOnAnotherTierIsSkipped() throws {
        let result = try ScenarioText.run(ScenarioText.hm10("  - scan", header: "requires: [socket, vhci]"))
        XCTAssertTrue(result.isSkipped)
        guard case let .skipped(reason) = result.outcome else { return XCTFail() }
        XCTAssertEqual(reason, "requires socket, vhci, not sim")
    }
}

import ATT
import BLELab
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// Flawed peripherals in scenario files: `flaws:`, the flawed actions and the expectations about
/// them — their validation messages and what the runner reports, passing and failing.
final class FlawScenarioTests: XCTestCase {
    private func errors(_ tail: String) -> [String] {
        ScenarioText.errors("""
        scenario: x
        peripherals:
          hm10:
            advertise: { name: HMSoft, services: [FFE0] }
            gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [read, write, notify] }
        \(tail)
        """)
    }

    private let requestList = "exchange-mtu, find-information, find-by-type-value, read-by-type, read, read-blob, read-multiple, read-by-group-type, write, prepare-write, execute-write"

    // MARK: Validation

    func testFlawsAreValidatedWithDidYouMean() {
        XCTAssertEqual(errors("    flaws:\n      - { request: raed, respond-error: read-not-permitted }\ncentral:\n  - scan"), [
            "test.yaml:10:20: error: found request 'raed', expected a request (\(requestList), any, or 0xNN); did you mean 'read'?",
        ])
        XCTAssertEqual(errors("    flaws:\n      - { request: read, respnd-error: read-not-permitted }\ncentral:\n  - scan"), [
            "test.yaml:10:26: error: found unknown key 'respnd-error', expected a flaw key (request, characteristic, skip, count, delay, respond-error, no-response, malformed); did you mean 'respond-error'?",
        ])
        XCTAssertEqual(errors("    flaws:\n      - { request: read, malformed: truncate }\ncentral:\n  - scan"), [
            "test.yaml:10:37: error: found 'truncate', expected truncated, wrong-opcode, bad-error-length, or the octets to send (hex:…); did you mean 'truncated'?",
        ])
        XCTAssertEqual(errors("    flaws:\n      - { request: read, characteristic: FFE9, no-response: false }\ncentral:\n  - scan"), [
            "test.yaml:10:42: error: found characteristic 'FFE9', expected a characteristic declared by hm10 (FFE1); did you mean 'FFE1'?",
            "test.yaml:10:61: error: found 'false', expected no-response: true; leave no-response out for a peripheral that answers",
        ])
    }

    func testAFlawSaysOneThingAndSaysIt() {
        XCTAssertEqual(errors("    flaws:\n      - { request: read, respond-error: read-not-permitted, malformed: truncated }\ncentral:\n  - scan"), [
            "test.yaml:10:61: error: found 'respond-error' and 'malformed' in one flaw, expected one answer per flaw (respond-error, no-response, malformed); split it into two flaws",
        ])
        XCTAssertEqual(errors("    flaws:\n      - { request: read }\ncentral:\n  - scan"), [
            "test.yaml:10:9: error: found a flaw that answers normally at once, expected respond-error, no-response, malformed, or a delay (an answer that comes late)",
        ])
        XCTAssertEqual(errors("    flaws:\n      - { request: read, no-response: true, delay: 1s }\ncentral:\n  - scan"), [
            "test.yaml:10:26: error: found no-response with a delay, expected one of them; a request that is never answered cannot be answered late",
        ])
        XCTAssertEqual(errors("    flaws:\n      - { request: exchange-mtu, characteristic: FFE1, delay: 1s }\ncentral:\n  - scan"), [
            "test.yaml:10:50: error: found 'FFE1', expected no characteristic: exchange-mtu names no handle",
        ])
        XCTAssertEqual(errors("    flaws:\n      - { respond-error: 0x80 }\ncentral:\n  - scan"), [
            "test.yaml:10:9: error: found a flaw without 'request', expected 'request: NAME' (\(requestList), or any)",
        ])
        XCTAssertEqual(errors("    flaws:\n      - { request: [read, 0x0c], skip: 2, count: 1, delay: 1s, respond-error: 0x80 }\ncentral:\n  - scan"), [])
    }

    func testFlawedActionsAreValidated() {
        XCTAssertEqual(errors("central:\n  - peripheral: { hm10: [ { notify-handle: { handle: 0, value: hex:01 } }, { send-pdu: \"hex:\" }, { add-servce: { service: FE59 } } ] }"), [
            "test.yaml:10:54: error: found '0', expected a handle from 0x0001 to 0xFFFF",
            "test.yaml:10:88: error: found 'hex:', expected at least one octet: the ATT opcode",
            "test.yaml:10:100: error: found unknown action 'add-servce', expected an action (notify, indicate, notify-every, stop-notifying, set-value, respond-error, delay, disconnect, stop-advertising, start-advertising, forget-bonds, notify-handle, indicate-handle, send-pdu, add-service, remove-service, service-changed, power-off, request-connection-update, burst); did you mean 'add-service'?",
        ])
        XCTAssertEqual(errors("central:\n  - peripheral: { hm10: [ { add-service: { service: FE59, characteristics: [ { uuid: FE5A, properties: [read], on-read: [] } ] } }, { service-changed: { start: 0x0010 } } ] }"), [
            "test.yaml:10:112: error: found unknown key 'on-read', expected an add-service characteristic key (uuid, properties, value)",
            "test.yaml:10:135: error: found 'service-changed' without 'end', expected service-changed: { start: 0x000C, end: 0xFFFF }",
        ])
    }

    func testCharacteristicsOfAnAddedServiceCanBeNamedAfterIt() {
        XCTAssertEqual(errors("central:\n  - peripheral: { hm10: [ { add-service: { service: FE59, characteristics: [ { uuid: FE5A, properties: [read] } ] } } ] }\n  - read: FE5A\n  - read: FE5B"), [
            "test.yaml:12:11: error: found characteristic 'FE5B', expected a characteristic declared by hm10 (FFE1, FE5A); did you mean 'FE5A'?",
        ])
    }

    func testFlawExpectationsAreValidated() {
        let opening = "central:\n  - scan\n  - connect: hm10\n  - read: FFE1\n"
        XCTAssertEqual(errors(opening + "  - expect: { malformed-respons: any }"), [
            "test.yaml:13:15: error: found unknown expectation 'malformed-respons', expected an expectation (discovered, not-discovered, only-discovered, connected, services, characteristic, value, write-sent-as, error, peripheral-received, notification, no-notification, disconnected, rssi, malformed-response, att-timeout, response-time, ignored-notification, service-changed, not-services, connection-parameters, mtu, link-lost, connect-failed, paired, encrypted, pairing-failed, encryption-failed, addresses-seen); did you mean 'malformed-response'?",
        ])
        XCTAssertEqual(errors(opening + "  - expect: { att-timeout: raed }"), [
            "test.yaml:13:28: error: found 'raed', expected the request that timed out (\(requestList), or any); did you mean 'read'?",
        ])
        XCTAssertEqual(errors(opening + "  - expect: { response-time: { at-least: 2s, at-most: 1s } }"), [
            "test.yaml:13:55: error: found '1s', expected at-most not below at-least",
        ])
        XCTAssertEqual(errors("central:\n  - scan\n  - connect: hm10\n  - expect: { ignored-notification: { indication: true } }"), [
            "test.yaml:12:15: error: found 'ignored-notification' without 'handle', expected ignored-notification: { handle: 0x00F0, indication: true }",
        ])
    }

    // MARK: Running

    private func run(_ central: String, flaws: String = "", recordsTimeline: Bool = false) throws -> ScenarioResult {
        try ScenarioText.run("""
        scenario: test
        timeout: 60s
        peripherals:
          tag:
            advertise: { name: Tag, services: [FFE0] }
            gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [read, write, notify], value: text:ok }
        \(flaws)
        central:
          - scan
          - connect: tag
          - discover: all
        \(central)
        """, options: RunOptions(recordsTimeline: recordsTimeline))
    }

    func testAMalformedResponseNoExpectationTakesFailsTheStepWithTheViolation() throws {
        let result = try run("  - read: FFE1\n  - expect: { value: text:ok }",
                             flaws: "    flaws:\n      - { request: read, malformed: wrong-opcode }")
        XCTAssertEqual(result.verdict, "step 4 (test.yaml:16): read: FFE1: expected the read of FFE1 to complete; seen protocol violation: unexpected Read Blob Response while waiting for the response to Read Request; octets 0d 6f 6b")
        XCTAssertEqual(result.failure?.kind, .operation)
    }

    func testTheTimelineShowsTheOctetsOfARejectedResponse() throws {
        let result = try run("  - read: FFE1\n  - expect: { malformed-response: { opcode: read-response, bytes: hex:0b 6f } }",
                             flaws: "    flaws:\n      - { request: read, malformed: hex:0b 6f 6b 21 }", recordsTimeline: true)
        XCTAssertEqual(result.verdict, "step 5 (test.yaml:17): expect: { malformed-response: { opcode: read-response, bytes: hex:0b 6f } }: expected the central to reject a response from tag, a Read Response of octets 0b 6f within 1s; seen the central rejected no response from tag")
        let wrongOpcode = try run("  - write: { characteristic: FFE1, value: text:x }\n  - expect: { malformed-response: error-response }",
                                  flaws: "    flaws:\n      - { request: write, malformed: bad-error-length }", recordsTimeline: true)
        XCTAssertEqual(wrongOpcode.verdict, "passed")
        let violation = try XCTUnwrap(wrongOpcode.timeline.first { $0.kind == .protocolViolation })
        XCTAssertEqual(violation.bytes, [0x01, 0x12, 0x0C, 0x00])
        XCTAssertEqual(violation.text, "rejected from tag: malformed Error Response: truncated: needed 1 octet(s) at offset 4, only 0 available; octets 01 12 0c 00")
        XCTAssertEqual(wrongOpcode.steps[3].note, "protocol violation: malformed Error Response: truncated: needed 1 octet(s) at offset 4, only 0 available; octets 01 12 0c 00")
    }

    func testOnlyResponsesCountAsMalformedResponses() throws {
        // A Service Changed value of 2 octets is a violation too, but of an indication, not a response.
        let result = try run("  - subscribe: 2A05\n  - peripheral: { tag: [ { indicate-handle: { handle: 0x0008, value: hex:0a00 } } ] }\n  - expect: { malformed-response: any }",
                             recordsTimeline: true)
        XCTAssertEqual(result.verdict, "step 6 (test.yaml:17): expect: { malformed-response: any }: expected the central to reject a response from tag within 1s; seen the central rejected no response from tag")
        XCTAssertTrue(result.timeline.contains { $0.kind == .protocolViolation && $0.text.hasPrefix("rejected from tag: malformed Handle Value Indication") })
    }

    func testATimeoutIsExpectedLikeAnErrorAndTheCentralDisconnects() throws {
        let result = try run("  - read: FFE1\n  - expect: { att-timeout: read }\n  - expect: { disconnected: { reason: local-host-terminated } }",
                             flaws: "    flaws:\n      - { request: read, no-response: true }")
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.steps[3].end - result.steps[3].start, .seconds(30), "the read took the whole transaction timeout")
        let unexpected = try run("  - read: FFE1", flaws: "    flaws:\n      - { request: read, no-response: true }")
        XCTAssertEqual(unexpected.verdict, "step 4 (test.yaml:16): read: FFE1: expected the read of FFE1 to complete; seen ATT transaction timeout")
        let none = try run("  - read: FFE1\n  - expect: { att-timeout: any }")
        XCTAssertEqual(none.verdict, "step 5 (test.yaml:16): expect: { att-timeout: any }: expected the central's ATT transaction timeout on tag within 1s; seen no ATT transaction timeout on tag")
    }

    func testResponseTimeMeasuresTheLastOperationOnTheLink() throws {
        let flaws = "    flaws:\n      - { request: read, delay: 2500ms }"
        XCTAssertEqual(try run("  - read: FFE1\n  - expect: { response-time: { at-least: 2.5s, at-most: 2.6s } }", flaws: flaws).verdict, "passed")
        XCTAssertEqual(try run("  - read: FFE1\n  - expect: { response-time: { at-most: 1s } }", flaws: flaws).verdict,
                       "step 5 (test.yaml:17): expect: { response-time: { at-most: 1s } }: expected the last operation's slowest response to take at most 1s; seen the slowest response of step 4 took 2.55s")
    }

    func testANotificationOfADiscoveredHandleIsNotIgnored() throws {
        // FFE1's value handle is 0x000C: discovered, so the central does not ignore it.
        let result = try run("  - peripheral: { tag: [ { notify-handle: { handle: 0x000C, value: hex:01 } } ] }\n  - expect: { ignored-notification: 0x000C }")
        XCTAssertEqual(result.verdict, "step 5 (test.yaml:16): expect: { ignored-notification: 0x000C }: expected a notification or indication from tag for handle 0x000c, which the central never discovered, received and ignored within 1s; seen no notification or indication for an undiscovered handle arrived from tag")
        XCTAssertEqual(try run("  - peripheral: { tag: [ { notify-handle: { handle: 0x000E, value: hex:01 } } ] }\n  - expect: { ignored-notification: 0x000E }").verdict,
                       "passed")
    }

    func testServiceChangedNeedsTheCentralsSubscription() throws {
        let actions = "  - peripheral: { tag: [ { add-service: { service: FE59 } }, service-changed ] }\n"
        XCTAssertEqual(try run(actions + "  - expect: { service-changed: tag }").verdict,
                       "step 5 (test.yaml:16): expect: { service-changed: tag }: expected a Service Changed indication from tag, confirmed and re-discovered within 1s; seen no Service Changed indication from tag")
        XCTAssertEqual(try run("  - subscribe: 2A05\n" + actions + "  - expect: { service-changed: { start: 0x000E, end: 0x000E } }\n  - expect: { services: [FE59] }").verdict,
                       "passed")
        XCTAssertEqual(try run("  - subscribe: 2A05\n" + actions + "  - expect: { service-changed: { start: 0x0001, end: 0xFFFF } }").verdict,
                       "step 6 (test.yaml:17): expect: { service-changed: { start: 0x0001, end: 0xFFFF } }: expected a Service Changed indication from tag for 0x0001..0xffff, confirmed and re-discovered within 1s; seen Service Changed for 0x000e..0x000e")
    }

    func testFieldScenariosGiveIdenticalCapturesRunAfterRun() throws {
        let folder = String(ScenarioText.fixtures.dropLast("Tests/ScenarioEngineTests/Fixtures".count)) + "scenarios/field"
        for name in ["att-error-response", "att-late-response", "att-no-response", "att-malformed-response",
                     "att-unknown-handle-notification", "att-service-changed"] {
            let scenario = try Scenario.load(path: "\(folder)/\(name).yaml")
            let first = ScenarioRunner().run(scenario, options: RunOptions(keepsCaptures: true))
            let second = ScenarioRunner().run(scenario, options: RunOptions(keepsCaptures: true))
            XCTAssertEqual(first.verdict, "passed", name)
            XCTAssertEqual(first.captures.map { $0.packets.map(\.frame) }, second.captures.map { $0.packets.map(\.frame) }, name)
            XCTAssertEqual(first.virtualTime, second.virtualTime, name)
        }
    }
}

import BLELabTestSupport
@testable import ScenarioEngine
import ScenarioFormat
import XCTest
import YAMLSubset

/// Error messages that were wrong or unhelpful when the broken-file fixtures were written, each
/// pinned after its fix (Fixtures/broken/ pins the same messages through `blelab validate`).
final class MessageFixTests: XCTestCase {
    private func errors(_ text: String) -> [String] { ScenarioText.errors(text) }

    /// A minimal valid file around one central step (line 10).
    private func withStep(_ step: String) -> String {
        """
        scenario: one step
        peripherals:
          hm10:
            advertise: { name: HMSoft, services: [FFE0] }
            gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [read, write-without-response, notify] }
        central:
          \(step)
        """
    }

    // MARK: Examples in messages must themselves be valid

    /// The examples for peripheral actions used to be `[notify: FFE1]`, a key: value pair directly
    /// in [ ], which the YAML subset refuses; a user who copied them got a second error.
    func testPeripheralActionExamplesAreValidYAMLSubset() {
        let bare = errors(withStep("- peripheral"))
        XCTAssertEqual(bare, [
            "test.yaml:10:5: error: found 'peripheral', expected a step (scan, connect, discover, mtu, read, write, subscribe, unsubscribe, wait, disconnect, peripheral, expect, link-loss, out-of-range, in-range, power-off, power-on, connection-update, link, parameter-requests, pair, encrypt, auto-pair); 'peripheral' needs a value, e.g. peripheral: { hm10: [{ notify: FFE1 }] }",
        ])
        XCTAssertEqual(errors(withStep("- peripheral: hm10")), [
            "test.yaml:10:17: error: found 'hm10', expected peripheral ids with their actions, such as { hm10: [{ notify: FFE1 }] }",
        ])
        XCTAssertEqual(errors(withStep("- peripheral: { hm10: notify }")), [
            "test.yaml:10:25: error: found 'notify', expected a list of actions such as [{ notify: FFE1 }]",
        ])
        XCTAssertEqual(errors(withStep("- peripheral: { hm10: [notify] }")), [
            "test.yaml:10:26: error: found 'notify', expected an action (notify, indicate, notify-every, stop-notifying, set-value, respond-error, delay, disconnect, stop-advertising, start-advertising, forget-bonds, notify-handle, indicate-handle, send-pdu, add-service, remove-service, service-changed, power-off, request-connection-update, burst); write 'notify: …' with its characteristic or value",
        ])
        // The examples, copied into a file, validate.
        XCTAssertEqual(errors(withStep("- peripheral: { hm10: [{ notify: FFE1 }] }")), [])
        XCTAssertEqual(errors("""
        scenario: x
        peripherals:
          hm10:
            on-connect: 5
        central: [scan]
        """), ["test.yaml:4:17: error: found '5', expected a list of actions such as [{ notify: FFE1 }]"])
    }
}

/// YAML subset errors that pointed at the wrong line or gave no fix.
final class YAMLMessageFixTests: XCTestCase {
    private func yamlError(_ text: String) -> String {
        do {
            _ = try parseYAML(text, file: "test.yaml")
            return "parsed"
        } catch {
            return "\(error)"
        }
    }

    /// `name:HMSoft` (no space after the colon) is one plain scalar; the error used to point at
    /// the next, innocent line ("found 'services:', expected a key at column 5").
    func testKeyWithoutSpaceAfterColonIsReportedWhereItIs() {
        XCTAssertEqual(yamlError("advertise:\n  name:HMSoft\n  services: [FFE0]\n"),
                       "test.yaml:2:3: error: found 'name:HMSoft', expected a key followed by ': '; put a space after ':' (name: HMSoft); without it the line is one plain scalar, not a key and its value")
        XCTAssertEqual(yamlError("a:\n  - uuid:FFE1\n    properties: [read]\n"),
                       "test.yaml:2:5: error: found 'uuid:FFE1', expected a key followed by ': '; put a space after ':' (uuid: FFE1); without it the line is one plain scalar, not a key and its value")
        XCTAssertEqual(yamlError("scenario:x\nperipherals:\n"),
                       "test.yaml:1:1: error: found 'scenario:x', expected a key followed by ': '; put a space after ':' (scenario: x); without it the line is one plain scalar, not a key and its value")
        // A value with a colon alone on its line stays valid; a multi-line scalar keeps its hint.
        XCTAssertEqual(yamlError("value:\n  text:hello\nnext: 1\n"), "parsed")
        XCTAssertEqual(yamlError("value:\n  text:hello\n  world\n"),
                       "test.yaml:3:3: error: found 'world', expected a key at column 1; multi-line scalars are not part of the YAML subset; keep the value on one line")
        // A key inside a value on the key's own line is a different mistake, reported as before.
        XCTAssertEqual(yamlError("a: b:c\n  d: e\n"),
                       "test.yaml:2:3: error: found 'd:', expected a key at column 1; only a key with nothing after its ':' can have an indented block below it")
    }

    /// `{ for: 1,5s }`: the comma ends the value `1`; the error used to be "found '}', expected
    /// ':' after the key '5s'".
    func testCommaInsideAFlowMappingValue() {
        XCTAssertEqual(yamlError("- scan: { for: 1,5s }\n"),
                       "test.yaml:1:18: error: found '5s', expected a key followed by ':'; ',' separates the entries of { }; write a decimal with a point (1.5s), or quote a value that contains a comma")
        XCTAssertEqual(yamlError("- { name: Smart, Curtain }\n"),
                       "test.yaml:1:18: error: found 'Curtain', expected a key followed by ':'; ',' separates the entries of { }; quote a value that contains a comma")
        XCTAssertEqual(yamlError("- { a: 1, name:HMSoft }\n"),
                       "test.yaml:1:23: error: found '}', expected ':' after the key 'name:HMSoft'; put a space after ':' (key: value)")
        XCTAssertEqual(yamlError("- { name: \"Smart, Curtain\" }\n"), "parsed")
    }

    /// `{ services: [180A, 180F }`: the '}' is reported with the '[' it does not close.
    func testMismatchedBracketNamesTheOpenOne() {
        XCTAssertEqual(yamlError("- scan: { services: [180A, 180F }\n"),
                       "test.yaml:1:33: error: found '}', expected ',' or ']'; the '[' at 1:21 is not closed before this '}'")
        XCTAssertEqual(yamlError("a: [{ b: c ]\n"),
                       "test.yaml:1:12: error: found ']', expected ',' or '}'; the '{' at 1:5 is not closed before this ']'")
    }
}

/// Schema errors that named the problem but not the fix, or suggested the wrong fix.
final class SchemaHintTests: XCTestCase {
    private func errors(_ text: String) -> [String] { ScenarioText.errors(text) }

    /// One peripheral with a characteristic written as `characteristic` (line 8), and `step` at line 11.
    private func file(characteristic: String = "{ uuid: FFE1, properties: [read, write-without-response, notify] }",
                      advertise: String = "{ name: HMSoft, services: [FFE0] }", step: String = "- scan: { for: 1s }") -> String {
        """
        scenario: hints
        peripherals:
          hm10:
            advertise: \(advertise)
            gatt:
              - service: FFE0
                characteristics:
                  - \(characteristic)
        central:
          - scan: { for: 1s }
          \(step)
        """
    }

    private func hint(_ text: String) -> String {
        let all = errors(text)
        guard all.count == 1, let semicolon = all[0].range(of: "; ", options: .backwards) else { return all.joined(separator: "\n") }
        return String(all[0][semicolon.upperBound...])
    }

    func testDurationHints() {
        XCTAssertEqual(hint(file(step: "- wait: -1s")), "a duration cannot be negative")
        XCTAssertEqual(hint(file(step: "- wait: 1,5s")), "write a decimal with a point: 1.5s")
        XCTAssertEqual(hint(file(step: "- wait: 2 s")), "write the unit right after the number: 2s")
        XCTAssertEqual(hint(file(step: "- wait: 1sec")), "write 's' for sec: 1s")
        XCTAssertEqual(hint(file(step: "- wait: 2minutes")), "write 'm' for minutes: 2m")
        XCTAssertEqual(hint(file(step: "- wait: 3d")), "the units are us, ms, s, m and h, such as 3s")
        XCTAssertEqual(errors(file(step: "- wait: soon")), [
            "test.yaml:11:11: error: found 'soon', expected a duration such as 250ms, 1s, 1.5s or 2m",
        ])
        XCTAssertEqual(errors(file(step: "- wait: 1h")), [], "hours are a unit")
    }

    func testValueHints() {
        func value(_ v: String) -> String { hint(file(step: "- write: { characteristic: FFE1, value: \(v) }")) }
        XCTAssertEqual(value("text hello"), "a value's prefix ends with a colon: text:hello")
        XCTAssertEqual(value("text"), "a value's prefix ends with a colon: text:…")
        XCTAssertEqual(value("hex=0a0b"), "a value's prefix ends with a colon: hex:0a0b")
        XCTAssertEqual(value("hello"), "write text:hello for text, hex:… for bytes")
        XCTAssertEqual(value("hex:0g"), "hex: takes hexadecimal digits (spaces allowed), and 'g' is not one")
        XCTAssertEqual(value("hex:4c00021"), "hex: needs two digits per byte, and 7 digits is an odd number")
        XCTAssertEqual(value("u16:-1"), "u16: is unsigned: it takes 0 to 65535")
        XCTAssertEqual(value("u8:-1"), "u8: is unsigned: it takes 0 to 255")
        XCTAssertEqual(value("u32:x"), "u32: takes a number, decimal or 0x…")
    }

    func testUUIDAndAddressHints() {
        XCTAssertEqual(hint(file(advertise: "{ services: [FFEO] }")), "'O' is not a hexadecimal digit (0 is)")
        XCTAssertEqual(hint(file(advertise: "{ services: [FFE] }")), "a UUID has 4, 8 or 32 hexadecimal digits, not 3")
        XCTAssertEqual(hint(file(advertise: "{ services: [6E40000-1B5A3-F393-E0A9-E50E24DCCA9E] }")),
                       "write a 128-bit UUID as 8-4-4-4-12 digits, or as 32 digits without dashes")
        func address(_ a: String) -> String {
            hint("scenario: x\nperipherals:\n  hm10:\n    address: \(a)\ncentral: [scan]\n")
        }
        XCTAssertEqual(address("C0:11:22:33:44/random"), "an address has 6 octets, not 5")
        XCTAssertEqual(address("C0:11:22:33:44:5G"), "each octet is two hexadecimal digits, not '5G'")
        XCTAssertEqual(address("C0:11:22:33:44:55/static"), "the address type after '/' is random or public")
    }

    func testBooleanWriteTypePropertyAndTierHints() {
        XCTAssertEqual(hint(file(advertise: "{ name: A, connectable: yes }")), "write true (YAML 1.2 reads only true and false as booleans)")
        XCTAssertEqual(hint(file(advertise: "{ name: A, connectable: off }")), "write false (YAML 1.2 reads only true and false as booleans)")
        XCTAssertEqual(hint(file(step: "- write: { characteristic: FFE1, value: u8:1, type: without-response }")),
                       "'command' sends a Write Command (write without response)")
        XCTAssertEqual(hint(file(step: "- write: { characteristic: FFE1, value: u8:1, type: withResponse }")),
                       "'request' sends a Write Request (write with response)")
        XCTAssertEqual(hint(file(characteristic: "{ uuid: FFE1, properties: [write-with-response] }")),
                       "a characteristic that takes Write Requests (write with response) has 'write'")
        XCTAssertEqual(hint("scenario: x\nrequires: [simulator]\nperipherals: { a: {} }\ncentral: [scan]\n"), "did you mean 'sim'?")
    }

    func testNamesSharingWordsAreSuggested() {
        XCTAssertEqual(hint(file(step: "- expect: { error: write-not-allowed }")), "did you mean 'write-not-permitted' or 'value-not-allowed'?")
        XCTAssertEqual(hint(file(step: "- expect: { disconnected: { reason: user-terminated } }")), "did you mean 'remote-user-terminated'?")
        XCTAssertEqual(Spelling.suggestion(for: "wait", in: ["wait"]), nil)
        XCTAssertEqual(Spelling.suggestion(for: "one-two", in: ["three-four"]), nil)
    }

    /// `{ notifcation: FFE1, value: … }` used to read as a `value` expectation with an unknown option:
    /// "found unknown key 'notifcation', expected a 'value' key (value)".
    func testMisspeltExpectationBesideValue() {
        XCTAssertEqual(errors(file(step: "- expect: { notifcation: FFE1, value: text:a }")), [
            "test.yaml:11:15: error: found unknown expectation 'notifcation', expected an expectation (discovered, not-discovered, only-discovered, connected, services, characteristic, value, write-sent-as, error, peripheral-received, notification, no-notification, disconnected, rssi, malformed-response, att-timeout, response-time, ignored-notification, service-changed, not-services, connection-parameters, mtu, link-lost, connect-failed, paired, encrypted, pairing-failed, encryption-failed, addresses-seen); did you mean 'notification'?",
        ])
        XCTAssertEqual(errors(file(step: "- expect: { value: text:a, colour: red }")), [
            "test.yaml:11:30: error: found unknown key 'colour', expected a 'value' key (value)",
        ])
    }

    func testOtherHints() {
        XCTAssertEqual(errors(file(step: "- discover: everything")), [
            "test.yaml:11:15: error: found 'everything', expected 'all', or the services to discover such as { services: [180D] }",
        ])
        XCTAssertEqual(hint(file(step: "- discover: al")), "did you mean 'all'?")
        XCTAssertEqual(errors(file(step: "- discover: FFE0")), [], "one service UUID alone is a list of one")
        XCTAssertEqual(errors("scenario: x\nperipherals:\n  - hm10: {}\ncentral: [scan]\n"), [
            "test.yaml:3:3: error: found a sequence, expected a mapping of peripheral ids to peripherals; write each id as a key under peripherals:, without '- ' (hm10:)",
        ])
        XCTAssertEqual(errors("scenario: x\nperipherals:\n  uart:\n    advertise: { name: Nordic UART Service Demo, services: [6E400001-B5A3-F393-E0A9-E50E24DCCA9E] }\ncentral: [scan]\n"), [
            "test.yaml:4:16: error: found 47 octets of advertising data for uart (flags 3, services 18, name 26), expected at most 31 octets (legacy advertising); move something to scan-response or shorten the name",
        ])
    }
}

/// Runner rules found wanting while writing docs/scenarios.md.
final class RunnerFixTests: XCTestCase {
    /// A notification or indication that `on-subscribe` sends at once reaches the central before
    /// the Write Response to the CCCD write; it used to be left out of "since subscribing", so
    /// `count: 2` saw only the second of two indications.
    func testWhatASubscriptionBringsAtOnceIsCounted() throws {
        let result = try ScenarioText.run("""
        scenario: on-subscribe indicates at once
        seed: 11
        peripherals:
          box:
            advertise: { name: Box, services: [CCC0] }
            gatt:
              - service: CCC0
                characteristics:
                  - uuid: CCC4
                    properties: [indicate]
                    on-subscribe:
                      - indicate: CCC4
                        value: text:one
                      - indicate: CCC4
                        value: text:two
                  - uuid: CCC5
                    properties: [notify]
                    on-subscribe:
                      - notify: CCC5
                        value: u8:1
        central:
          - scan: { for: 1s }
          - connect: box
          - discover: all
          - subscribe: CCC4
          - expect: { notification: CCC4, count: 2, in-order: [text:one, text:two] }
          - subscribe: CCC5
          - expect: { notification: CCC5, count: 1, value: u8:1, within: 200ms }
          - expect: { no-notification: { characteristic: CCC5, for: 500ms } }
        """)
        XCTAssertEqual(result.verdict, "passed")
    }

    /// Unsubscribing still starts the count afresh once the CCCD is cleared: what was in flight
    /// before is not held against a `no-notification` after it.
    func testUnsubscribingStillCountsFromItsEnd() throws {
        let result = try ScenarioText.run("""
        scenario: unsubscribe while notifications flow
        seed: 14
        peripherals:
          counter:
            advertise: { name: Counter, services: [AAA0] }
            gatt:
              - service: AAA0
                characteristics:
                  - uuid: AAA1
                    properties: [notify]
                    on-subscribe:
                      - notify-every: { characteristic: AAA1, interval: 30ms, value: { counter-u8: 1 } }
        central:
          - scan: { for: 1s }
          - connect: counter
          - discover: all
          - subscribe: AAA1
          - wait: 200ms
          - unsubscribe: AAA1
          - expect: { no-notification: { characteristic: AAA1, for: 1s } }
        """)
        XCTAssertEqual(result.verdict, "passed")
    }
}

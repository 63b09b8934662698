import XCTest
@testable import Scenario
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
            "test.yaml:10:5: error: found 'peripheral', expected a step (scan, connect, discover, mtu, read, write, subscribe, unsubscribe, wait, disconnect, peripheral, expect); 'peripheral' needs a value, e.g. peripheral: { hm10: [{ notify: FFE1 }] }",
        ])
        XCTAssertEqual(errors(withStep("- peripheral: hm10")), [
            "test.yaml:10:17: error: found 'hm10', expected peripheral ids with their actions, such as { hm10: [{ notify: FFE1 }] }",
        ])
        XCTAssertEqual(errors(withStep("- peripheral: { hm10: notify }")), [
            "test.yaml:10:25: error: found 'notify', expected a list of actions such as [{ notify: FFE1 }]",
        ])
        XCTAssertEqual(errors(withStep("- peripheral: { hm10: [notify] }")), [
            "test.yaml:10:26: error: found 'notify', expected an action (notify, indicate, notify-every, stop-notifying, set-value, respond-error, delay, disconnect, stop-advertising, start-advertising); write 'notify: …' with its characteristic or value",
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

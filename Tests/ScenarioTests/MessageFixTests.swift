import XCTest
@testable import Scenario

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

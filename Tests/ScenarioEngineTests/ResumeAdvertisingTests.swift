import BLELabTestSupport
import HCI
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// A scenario peripheral advertises again when a link ends, as most firmware does
/// (docs/scenarios.md section 3, `resume-after-disconnect:`), unless the file says otherwise.
final class ResumeAdvertisingTests: XCTestCase {
    private func lamp(_ advertise: String = "{ name: Lamp, services: [AAA0] }", onDisconnect: String = "", onConnect: String = "") -> String {
        """
        scenario: resume
        requires: [sim]
        peripherals:
          lamp:
            advertise: \(advertise)
        \(onConnect.isEmpty ? "" : "    on-connect: \(onConnect)")
        \(onDisconnect.isEmpty ? "" : "    on-disconnect: \(onDisconnect)")
            gatt:
              - service: AAA0
                characteristics:
                  - { uuid: AAA1, properties: [read], value: text:on }
        central:
        """
    }

    /// The LE Set Advertising Enable commands the peripheral sent, in order.
    private func enables(_ result: ScenarioResult, of device: String = "lamp") -> [Bool] {
        (result.captures.first { $0.device == device }?.packets ?? []).compactMap { p in
            guard p.direction == .hostToController, case let .command(.leSetAdvertisingEnable(on))? = try? HCIPacket(h4: p.frame) else { return nil }
            return on
        }
    }

    private func run(_ text: String) throws -> ScenarioResult {
        try ScenarioText.run(text, options: RunOptions(keepsCaptures: true))
    }

    /// By default: connect, disconnect, and the peripheral is heard again and accepts a second
    /// connection, with no `on-disconnect:` in the file.
    func testAPeripheralAdvertisesAgainWhenTheLinkEnds() throws {
        let result = try run(lamp() + """

          - scan: { services: [AAA0], for: 1s }
          - connect: lamp
          - disconnect
          - scan: { services: [AAA0], for: 1s }
          - expect: { discovered: lamp }
          - connect: lamp
          - discover: all
          - read: AAA1
          - expect: { value: text:on }
          - disconnect
        """)
        XCTAssertEqual(result.verdict, "passed")
        // Started, resumed after each of the two disconnections.
        XCTAssertEqual(enables(result), [true, true, true])
    }

    /// The peripheral ends the link itself (disconnect action): it advertises again too.
    func testAdvertisingResumesWhenThePeripheralEndsTheLink() throws {
        let result = try run(lamp() + """

          - scan: { services: [AAA0], for: 1s }
          - connect: lamp
          - peripheral: { lamp: [disconnect] }
          - expect: { disconnected: { within: 1s } }
          - scan: { services: [AAA0], for: 1s }
          - expect: { discovered: lamp }
        """)
        XCTAssertEqual(result.verdict, "passed")
    }

    /// `resume-after-disconnect: false` keeps the old behaviour: silent after the first link.
    func testResumeAfterDisconnectFalseStaysSilent() throws {
        let result = try run(lamp("{ name: Lamp, services: [AAA0], resume-after-disconnect: false }") + """

          - scan: { services: [AAA0], for: 1s }
          - connect: lamp
          - disconnect
          - scan: { services: [AAA0], for: 2s }
          - expect: { not-discovered: lamp }
        """)
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(enables(result), [true])
    }

    /// A file whose on-disconnect starts advertising gets exactly that, not a second start.
    func testAnOnDisconnectStartAdvertisingIsNotDoubled() throws {
        let result = try run(lamp(onDisconnect: "[start-advertising]") + """

          - scan: { services: [AAA0], for: 1s }
          - connect: lamp
          - disconnect
          - scan: { services: [AAA0], for: 1s }
          - expect: { discovered: lamp }
        """)
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(enables(result), [true, true])
    }

    /// A file that delays the restart (`on-disconnect: [delay 2s, start-advertising]`) is obeyed:
    /// nothing is heard before the delay.
    func testADelayedOnDisconnectRestartIsObeyed() throws {
        let result = try run(lamp(onDisconnect: "[{ delay: 2s }, start-advertising]") + """

          - scan: { services: [AAA0], for: 1s }
          - connect: lamp
          - disconnect
          - scan: { services: [AAA0], for: 1500ms }
          - expect: { not-discovered: lamp }
          - scan: { services: [AAA0], for: 1s }
          - expect: { discovered: lamp }
        """)
        XCTAssertEqual(result.verdict, "passed")
    }

    /// stop-advertising while connected means "stay silent": the end of the link does not undo it.
    func testAdvertisingStoppedByTheFileDoesNotResume() throws {
        let result = try run(lamp() + """

          - scan: { services: [AAA0], for: 1s }
          - connect: lamp
          - peripheral: { lamp: [stop-advertising] }
          - disconnect
          - scan: { services: [AAA0], for: 2s }
          - expect: { not-discovered: lamp }
          - peripheral: { lamp: [start-advertising] }
          - scan: { services: [AAA0], for: 1s }
          - expect: { discovered: lamp }
        """)
        XCTAssertEqual(result.verdict, "passed")
    }

    /// A peripheral restarted by on-connect (advertising while connected, for a second central)
    /// is still advertising when the link ends: nothing to resume, no redundant commands.
    func testAPeripheralStillAdvertisingIsLeftAlone() throws {
        let result = try run(lamp(onConnect: "[start-advertising]") + """

          - scan: { services: [AAA0], for: 1s }
          - connect: lamp
          - wait: 100ms
          - disconnect
          - scan: { services: [AAA0], for: 1s }
          - expect: { discovered: lamp }
        """)
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(enables(result), [true, true])
    }

    /// The key is read, written back by the writer, and refused with its place when not a boolean.
    func testTheKeyRoundTripsAndIsChecked() throws {
        let text = lamp("{ name: Lamp, services: [AAA0], resume-after-disconnect: false }") + "\n  - scan: { for: 1s }\n"
        let scenario = try ScenarioText.load(text)
        XCTAssertEqual(scenario.peripherals.first?.advertising?.resumeAfterDisconnect, false)
        let written = ScenarioWriter.write(scenario)
        XCTAssertTrue(written.contains("resume-after-disconnect: false"), written)
        XCTAssertEqual(try ScenarioText.load(written).peripherals.first?.advertising?.resumeAfterDisconnect, false)
        XCTAssertEqual(try ScenarioText.load(lamp() + "\n  - scan: { for: 1s }\n").peripherals.first?.advertising?.resumeAfterDisconnect, true)

        let errors = ScenarioText.errors(lamp("{ name: Lamp, resume-after-disconnect: sometimes }") + "\n  - scan: { for: 1s }\n")
        XCTAssertEqual(errors.count, 1, "\(errors)")
        XCTAssertTrue(errors.first?.hasPrefix("test.yaml:5:") == true, "\(errors)")
        XCTAssertTrue(errors.first?.contains("sometimes") == true, "\(errors)")
    }
}

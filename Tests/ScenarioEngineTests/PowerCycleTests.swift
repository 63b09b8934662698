import BLELabTestSupport
@testable import ScenarioEngine
import XCTest

/// What docs/scenarios.md says survives `power-off` and `power-on` (section 18), and which name the
/// Device Name characteristic 2A00 serves (section 3): each claim checked by a run.
final class PowerCycleTests: XCTestCase {
    /// The peripheral's controller loses everything; its host and application keep theirs: the
    /// GATT database with its values (also a service added at run time), its Device Name and
    /// address, its running notify-every; advertising starts again as the file declares it, even
    /// after stop-advertising. Each connection's state goes with the connection: the central
    /// times out (0x08), the peripheral runs on-disconnect, CCCDs are back to 0 and ATT_MTU to 23.
    func testWhatAPowerCycleKeepsAndWhatItLoses() throws {
        let result = try ScenarioText.run("""
        scenario: what power-off keeps
        timeout: 60s
        requires: [sim]
        peripherals:
          dev:
            address: C1:00:00:00:00:07/random
            advertise: { name: Dev, services: [AAA0] }
            on-disconnect:
              - set-value: { characteristic: AAA3, value: text:on-disconnect ran }
            gatt:
              - service: AAA0
                characteristics:
                  - { uuid: AAA1, properties: [read, write, notify], value: text:factory }
                  - { uuid: AAA2, properties: [read, notify], value: u8:0 }
                  - { uuid: AAA3, properties: [read], value: text:connected }
        central:
          - scan: { services: [AAA0], for: 1s }
          - connect: dev
          - discover: all
          - write: { characteristic: AAA1, value: text:user }
          - subscribe: AAA1
          - mtu: 100
          - peripheral: { dev: [{ add-service: { service: BBB0, characteristics: [{ uuid: BBB1, properties: [read], value: text:added }] } }, stop-advertising, { notify-every: { characteristic: AAA2, interval: 500ms, value: { counter-u8: 1 } } }] }
          - power-off: dev
          - expect: { disconnected: { reason: connection-timeout, within: 6s } }
          - scan: { services: [AAA0], for: 1s }
          - expect: { not-discovered: dev }
          - power-on: dev
          - scan: { services: [AAA0], for: 1s }
          - expect: { discovered: dev }
          - connect: dev
          - discover: all
          - expect: { services: [AAA0, BBB0] }
          - expect: { mtu: 23 }
          - read: AAA1
          - expect: { value: text:user }
          - read: BBB1
          - expect: { value: text:added }
          - read: AAA3
          - expect: { value: text:on-disconnect ran }
          - read: 2A00
          - expect: { value: text:Dev }
          - peripheral: { dev: [{ notify: AAA1, value: text:x }] }
          - expect: { no-notification: { characteristic: AAA1, for: 500ms } }
          - subscribe: AAA2
          - expect: { notification: AAA2, within: 1s }
          - disconnect
        """)
        XCTAssertEqual(result.verdict, "passed")
        let connects = result.steps.filter { $0.step.text == "connect: dev" }.compactMap(\.note)
        XCTAssertEqual(connects.count, 2)
        for note in connects { XCTAssertTrue(note.contains("at C1:00:00:00:00:07/random"), note) }
        XCTAssertEqual(result.steps.first { $0.step.text == "power-on: dev" }?.note, "dev powered on and advertising")
    }

    /// A peripheral that declares no advertising does not advertise after power-on either, and the
    /// step says so rather than "powered on and advertising".
    func testPowerOnOfAPeripheralThatNeverAdvertises() throws {
        let result = try ScenarioText.run("""
        scenario: silent
        requires: [sim]
        peripherals:
          quiet:
            gatt:
              - service: AAA0
                characteristics:
                  - { uuid: AAA1, properties: [read] }
          loud:
            advertise: { name: Loud }
        central:
          - power-off: quiet
          - power-on: quiet
          - scan: { for: 1s }
          - expect: { not-discovered: quiet }
          - expect: { discovered: loud }
        """)
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.steps[1].note, "quiet powered on (not advertising: it has no advertise block)")
    }

    /// 2A00 serves `device-name`, else the complete local name (advertising data, then scan
    /// response), else a shortened one, else the peripheral's id.
    func testTheDeviceNameCharacteristic() throws {
        func served(_ peripheral: String) throws -> String {
            let result = try ScenarioText.run("""
            scenario: names
            peripherals:
              p:
            \(peripheral)
            central:
              - scan: { for: 1s }
              - connect: p
              - discover: all
              - read: 2A00
              - expect: { value: "text:?" }
            """)
            guard let f = result.failure else { return "passed?" }
            return f.seen
        }
        XCTAssertEqual(try served("    device-name: Kitchen\n    advertise: { name: Therm }"), "the read in step 4 returned text:Kitchen")
        XCTAssertEqual(try served("    advertise: { name: Therm }"), "the read in step 4 returned text:Therm")
        XCTAssertEqual(try served("    advertise: { short-name: Therm }"), "the read in step 4 returned text:Therm")
        XCTAssertEqual(try served("    advertise: { short-name: Therm, scan-response: { name: Kitchen thermometer } }"),
                       "the read in step 4 returned \"text:Kitchen thermometer\"")
        XCTAssertEqual(try served("    advertise: { services: [FFF0], scan-response: { name: Nordic_UART } }"), "the read in step 4 returned text:Nordic_UART")
        XCTAssertEqual(try served("    advertise: { services: [FFF0] }"), "the read in step 4 returned u8:112 (text:p)")
    }
}

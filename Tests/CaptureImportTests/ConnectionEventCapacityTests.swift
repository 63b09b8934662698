import BLELabTestSupport
import CaptureImport
import Controller
import ScenarioEngine
import ScenarioFormat
import XCTest

/// A phone's connection events carry several notifications each. A peripheral notifying 61
/// values 80 ms apart over a 500 ms interval gets six through per event; at the lab's default of
/// four per event only 44 arrive in the window the capture shows. `link: { pdus-per-event: N }`
/// gives the sim's events that capacity, and the import sets it from what the capture shows.
final class ConnectionEventCapacityTests: XCTestCase {
    private func scenario(perEvent: String) throws -> Scenario {
        try ScenarioText.load("""
        scenario: six per event
        seed: 1
        peripherals:
          s:
            advertise: { name: S, services: [180D] }
            \(perEvent)
            gatt:
              - service: 180D
                characteristics:
                  - { uuid: 2A37, properties: [notify], value: hex:00 }
        central:
          - scan: { services: [180D], for: 1s }
          - connect: { peripheral: s, interval: 500ms, timeout: 6s }
          - discover: all
          - subscribe: 2A37
          - peripheral: { s: [{ notify-every: { characteristic: 2A37, interval: 80ms, count: 61, value: { counter-u8: 1 } } }] }
          - expect: { notification: 2A37, count: 61, within: 5500ms }
          - wait: 1s
        """)
    }

    func testTheSimsEventsCarryWhatTheKeySays() throws {
        let six = try scenario(perEvent: "link: { pdus-per-event: 6 }")
        XCTAssertEqual(six.faults["s"]?.link, LinkFaults(pdusPerEvent: 6))
        XCTAssertTrue(ScenarioRunner().run(six).passed)
        let four = ScenarioRunner().run(try scenario(perEvent: ""))
        XCTAssertFalse(four.passed)
        XCTAssertTrue(four.failure?.seen.hasPrefix("44 notifications of 2A37") ?? false, four.failure?.seen ?? "")
        XCTAssertEqual(ScenarioText.errors(try XCTUnwrap(String?("""
        scenario: x
        peripherals:
          s:
            advertise: { name: S }
            link: { pdus-per-event: 0 }
        central:
          - scan
        """))).count, 1)
    }

    func testTheImportGivesThePeripheralTheCapturesCapacity() throws {
        let run = runWithCaptures(try scenario(perEvent: "link: { pdus-per-event: 6 }"))
        XCTAssertTrue(run.passed)
        let (result, imported) = try importAndLoad(try centralCapture(run), source: "six.btsnoop")
        XCTAssertEqual(imported.faults["s"]?.link?.pdusPerEvent, 6, result.yaml)
        XCTAssertTrue(result.yaml.contains("6 ATT PDUs from it within one connection interval"), result.yaml)
        XCTAssertTrue(result.yaml.contains("interval: 500ms"), result.yaml)
        let replay = ScenarioRunner().run(imported)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
    }
}

import BLELab
import BLELabTestSupport
import BLERuntime
import BLEWire
import Controller
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// `ScenarioBackend.advertisingIntervalStagger`: on controllers that add no advDelay (RootCanal
/// 1.10.0) the k-th peripheral advertises every interval + k × the stagger, so advertisers
/// started together do not keep one phase (docs/tiers.md, "Advertisers in lockstep"). Seen on
/// the link: the Advertising_Interval_Min/Max each peripheral's host sends.
final class AdvertisingStaggerTests: XCTestCase {
    /// Simulated controllers behind in-process transports, on virtual time, standing in for
    /// controllers without advDelay.
    private func staggered(_ stagger: TimeSpan) -> ConnectedSimsBackend {
        ConnectedSimsBackend(airSeed: 9, addressBase: 0xD0_0000_0000, advertisingIntervalStagger: stagger)
    }

    static let scenario = """
        scenario: three advertisers
        peripherals:
          a:
            advertise: { name: A }
          b:
            advertise: { name: B, interval: 250ms }
          quiet:
            gatt:
              - service: 180F
                characteristics:
                  - { uuid: 2A19, properties: [read], value: u8:99 }
          c:
            advertise: { name: C, scan-response: { services: [181A] } }
        central:
          - scan: { for: 1s }
          - expect: { discovered: a }
          - expect: { discovered: b }
          - expect: { discovered: c }
        """

    /// Advertising_Interval_Min and _Max (0.625 ms units) of every LE Set Advertising Parameters
    /// (opcode 0x2006) each device sent.
    private func advertisingIntervals(_ result: ScenarioResult) -> [String: [[UInt16]]] {
        var found: [String: [[UInt16]]] = [:]
        for capture in result.captures {
            for packet in capture.packets where packet.direction == .hostToController {
                let f = packet.frame
                guard f.count >= 8, f[0] == 0x01, f[1] == 0x06, f[2] == 0x20 else { continue }
                found[capture.device, default: []].append([UInt16(f[4]) | UInt16(f[5]) << 8, UInt16(f[6]) | UInt16(f[7]) << 8])
            }
        }
        return found
    }

    func testTheKthPeripheralAdvertisesKStaggersLater() throws {
        let scenario = try ScenarioText.load(Self.scenario)
        let result = ScenarioRunner(backend: staggered(.milliseconds(5)))
            .run(scenario, options: RunOptions(keepsCaptures: true))
        XCTAssertEqual(result.verdict, "passed", "\(result.failure.map { "\($0.expected); seen \($0.seen)" } ?? "")")
        // a: 100 ms (160 units); b, the second: 250 + 5 ms (408); quiet advertises nothing;
        // c, the fourth: 100 + 15 ms (184).
        XCTAssertEqual(advertisingIntervals(result), ["a": [[160, 160]], "b": [[408, 408]], "c": [[184, 184]]])
    }

    func testControllersWithAdvDelayGetTheDeclaredIntervals() throws {
        let scenario = try ScenarioText.load(Self.scenario)
        for backend: ScenarioBackend in [staggered(.zero), SimBackend()] {
            let result = ScenarioRunner(backend: backend).run(scenario, options: RunOptions(keepsCaptures: true))
            XCTAssertEqual(result.verdict, "passed")
            XCTAssertEqual(advertisingIntervals(result), ["a": [[160, 160]], "b": [[400, 400]], "c": [[160, 160]]], "\(backend.tier)")
        }
        XCTAssertEqual(SimBackend().advertisingIntervalStagger, .zero, "the sim adds advDelay itself")
    }
}

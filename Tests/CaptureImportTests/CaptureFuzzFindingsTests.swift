import CaptureImport
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// What the capture-import fuzzer (Fuzzing/CaptureImport, docs/fuzzing.md) found, each as it
/// failed before its fix.
final class CaptureFuzzFindingsTests: XCTestCase {
    /// `capture` with the Peripheral_Latency of its LE Connection Complete (Vol 4 Part E
    /// 7.7.65.1: 04 3E 13 01 status handle role type address interval latency …) set to `latency`.
    private func withLatency(_ latency: UInt16, in capture: [UInt8]) throws -> [UInt8] {
        var bytes = capture
        var offset = 16
        var patched = 0
        while offset + 24 <= bytes.count {
            let length = Int(bytes[offset + 4]) << 24 | Int(bytes[offset + 5]) << 16 | Int(bytes[offset + 6]) << 8 | Int(bytes[offset + 7])
            let data = offset + 24
            if length >= 19, bytes[data] == 0x04, bytes[data + 1] == 0x3E, bytes[data + 3] == 0x01 {
                bytes[data + 17] = UInt8(latency & 0xFF)
                bytes[data + 18] = UInt8(latency >> 8)
                patched += 1
            }
            offset = data + length
        }
        XCTAssertGreaterThan(patched, 0, "no LE Connection Complete in the capture")
        return bytes
    }

    /// A Connection_Interval of 0 in LE Connection Complete (HCI allows 0x0006 to 0x0C80) trapped
    /// the importer: the window of one interval in which it counts the peripheral's PDUs per
    /// connection event (`ImportedScenario.burstiest`) was empty and its index ran past the PDU
    /// it counted from. Now the window always holds that PDU.
    func testAConnectionIntervalOfZeroImportsWithoutTrapping() throws {
        let central = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml")))
        var bytes = central
        var offset = 16
        while offset + 24 <= bytes.count {
            let length = Int(bytes[offset + 4]) << 24 | Int(bytes[offset + 5]) << 16 | Int(bytes[offset + 6]) << 8 | Int(bytes[offset + 7])
            let data = offset + 24
            if length >= 19, bytes[data] == 0x04, bytes[data + 1] == 0x3E, bytes[data + 3] == 0x01 {
                bytes[data + 15] = 0   // Connection_Interval, 2 octets, after status, handle, role, type, address
                bytes[data + 16] = 0
            }
            offset = data + length
        }
        let imported = try CaptureImporter.importCapture(bytes, source: "interval-0.btsnoop")
        XCTAssertEqual(imported.transcript.connections.first?.interval, 0)
        XCTAssertNil(imported.scenario.faults.values.first?.link, imported.yaml)
    }

    /// A Peripheral_Latency of 0xFFFF (beyond the 0x01F3 HCI allows, but a capture holds what it
    /// holds) trapped the importer: `Int64(latency + 2)` overflowed UInt16 when it weighed how late
    /// an answer was (FlawPlan.swift). Now the latency is widened first; the capture imports, from
    /// the central's side and from the peripheral's.
    func testAPeripheralLatencyOf0xFFFFImportsWithoutTrapping() throws {
        let result = runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml"))
        let central = try centralCapture(result)
        let peripheral = BTSnoopWriter.encode(try XCTUnwrap(result.captures.first).packets)
        for (side, capture) in [("central", central), ("peripheral", peripheral)] {
            let imported = try CaptureImporter.importCapture(try withLatency(0xFFFF, in: capture), source: "\(side).btsnoop")
            XCTAssertEqual(imported.transcript.connections.first?.latency, 0xFFFF, side)
            XCTAssertFalse(imported.yaml.isEmpty, side)
        }
    }
}

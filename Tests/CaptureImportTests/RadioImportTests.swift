import CaptureImport
import HCI
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// What a central's capture shows of the radio and comes back in the imported scenario: a scan's
/// and an initiator's duty cycle (LE Set Scan Parameters, LE Create Connection), connects that
/// gave no connection, RSSI read on a link, and advertising reports weaker than the lab's
/// receivers hear. Each original runs with captures; the import must say it and replay it.
final class RadioImportTests: XCTestCase {
    private func importRun(_ relative: String) throws -> (original: ScenarioResult, imported: CaptureImporter.Result, scenario: Scenario) {
        let original = runWithCaptures(try loadScenario(relative))
        XCTAssertTrue(original.passed, original.failure?.report() ?? "")
        let (imported, scenario) = try importAndLoad(try centralCapture(original), source: "central.btsnoop")
        return (original, imported, scenario)
    }

    private func assertContains(_ yaml: String, _ texts: [String], file: StaticString = #filePath, line: UInt = #line) {
        for text in texts { XCTAssertTrue(yaml.contains(text), "no \(text) in\n\(yaml)", file: file, line: line) }
    }

    /// A connect to a lock that stopped advertising and to a beacon that takes no connections:
    /// each LE Create Connection the central cancelled after its timeout (LE Connection Complete
    /// with Unknown Connection Identifier, Core Vol 4 Part E 7.8.13) is a connect with that
    /// timeout and `connect-failed: timeout`; the lock stops advertising first.
    func testConnectsThatGaveNoConnectionComeBack() throws {
        let (_, imported, scenario) = try importRun("scenarios/regressions/connect-to-absent-device.yaml")
        assertContains(imported.yaml, ["- peripheral: { lock: [stop-advertising] }",
                                       "- connect: { peripheral: lock, within: 2s }", "- expect: { connect-failed: { peripheral: lock, reason: timeout } }",
                                       "- connect: beacon", "- expect: { connect-failed: { peripheral: beacon, reason: timeout } }"])
        XCTAssertFalse(imported.yaml.contains("a connection attempt failed"), imported.yaml)
        let replay = runWithCaptures(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(imported.yaml)")
        let again = try CaptureImporter.importCapture(try centralCapture(replay), source: "replay").transcript
        func attempts(_ t: HCITranscript) -> [String] {
            t.failedConnections.map { "\($0.peer.map { "\($0.address)" } ?? "?") \($0.status) after \(($0.ended.time - $0.requested.time + 5_000) / 10_000)0 ms" }
        }
        XCTAssertEqual(attempts(imported.transcript), attempts(again))
        XCTAssertEqual(attempts(again).count, 2)
    }

    /// A scan of 100 ms every 10.24 s that hears nothing of a sensor advertising every second, a
    /// balanced one that finds it, and an initiator listening 100 ms every 200 ms: the scans and
    /// the connect keep their duty cycles, and the first scan's miss is the duty cycle's, not the
    /// sensor's (it keeps advertising). The first scan starts when the capture's did.
    func testScanAndInitiatorDutyCyclesComeBack() throws {
        let (_, imported, scenario) = try importRun("scenarios/field/scan-duty-cycle.yaml")
        assertContains(imported.yaml, ["- wait: 200ms", "- scan: { services: [181A], for: 3s, interval: 10240ms, window: 100ms }",
                                       "- scan: { services: [181A], for: 3s, interval: 100ms, window: 50ms }",
                                       "scan-interval: 200ms, scan-window: 100ms }", "- expect: { discovered: sensor }"])
        XCTAssertFalse(imported.yaml.contains("stop-advertising"), imported.yaml)
        let replay = runWithCaptures(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(imported.yaml)")
        let again = try CaptureImporter.importCapture(try centralCapture(replay), source: "replay").transcript
        XCTAssertEqual(again.scans.map { "\($0.interval ?? 0)/\($0.window ?? 0)" }, imported.transcript.scans.map { "\($0.interval ?? 0)/\($0.window ?? 0)" })
        // The first scan heard nothing in the replay either.
        XCTAssertEqual(again.reports.filter { $0.scan == 0 }.count, 0)
    }

    /// HCI Read RSSI on the link (`expect: { rssi }` in the original) comes back as the same
    /// expectation, around the value the capture read; the scenario then needs the sim.
    func testRSSIReadOnTheLinkComesBack() throws {
        let (_, imported, scenario) = try importRun("scenarios/regressions/rssi-below-sensitivity.yaml")
        assertContains(imported.yaml, ["requires: [sim]", "- expect: { rssi: { peripheral: near, at-least: -5", ", from: link } }"])
        let replay = runWithCaptures(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(imported.yaml)")
    }

    /// A phone hears devices the lab's receivers do not (-100 dBm): a device whose reports are
    /// weaker is given the weakest RSSI the lab hears every time, and the header says so.
    func testReportsWeakerThanTheLabsSensitivityAreRaisedToIt() throws {
        var bytes = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml")))
        // Every LE Advertising Report of the HM-10 (C0:11:22:33:44:55) at -103 dBm: its RSSI is the report's last octet.
        var patched = 0
        let address: [UInt8] = [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0]
        var i = 0
        while i + 12 < bytes.count {
            // H4 event, LE Meta, length, subevent 0x02, one report, event type, address type 0x01, address.
            if bytes[i] == 0x04, bytes[i + 1] == 0x3E, bytes[i + 3] == 0x02, bytes[i + 4] == 0x01, Array(bytes[(i + 7)..<(i + 13)]) == address {
                let end = i + 3 + Int(bytes[i + 2])
                bytes[end - 1] = UInt8(bitPattern: -103)
                patched += 1
            }
            i += 1
        }
        XCTAssertGreaterThan(patched, 3)
        let (imported, scenario) = try importAndLoad(bytes, source: "weak.btsnoop")
        assertContains(imported.yaml, ["    rssi: -98", "hmsoft: its advertising reports' RSSI (-103 dBm) is below what the lab's receivers hear (-100 dBm, with ±2 dB of noise); the scenario gives it -98"])
        let replay = runWithCaptures(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(imported.yaml)")
    }
}

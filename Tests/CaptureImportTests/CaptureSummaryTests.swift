import BLELabTestSupport
import CaptureImport
import Foundation
import ScenarioFormat
import Transport
import XCTest

/// `blelab import --summary`: what a capture holds, as text, from the lab's own captures of
/// scenarios whose content is known (the scenario files say what crossed the link).
final class CaptureSummaryTests: XCTestCase {
    func summary(_ capture: [UInt8], strict: Bool = false) throws -> String {
        try CaptureSummary.make(CaptureFile.decode(capture, strict: strict), source: "capture.btsnoop").text
    }

    func lines(_ text: String, containing fragment: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter { $0.contains(fragment) }
    }

    /// The HM-10 seed: two advertisers, one connection, a discovered database, one Write Command
    /// and its echo, the central's disconnect.
    func testTheHM10SessionReadsAsWhatHappened() throws {
        let text = try summary(centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml"))))
        XCTAssertTrue(text.hasPrefix("Capture capture.btsnoop: btsnoop, datalink 1002"), text)
        XCTAssertTrue(text.contains("Devices seen: 2\n"), text)
        // hm10: address C0:11:22:33:44:55/random (two top bits set: static), RSSI -48 ± 2 dB of noise.
        let hm10 = try XCTUnwrap(lines(text, containing: "\"HMSoft\"").first, text)
        XCTAssertTrue(hm10.hasPrefix("  \"HMSoft\"  C0:11:22:33:44:55/random (static)  RSSI -"), hm10)
        XCTAssertTrue(hm10.contains(" dBm  services FFE0  connectable  "), hm10)
        XCTAssertTrue(hm10.contains(" scan response"), hm10)
        XCTAssertEqual(lines(text, containing: "\"Smart_Curtain\"").count, 1, text)
        XCTAssertTrue(text.contains("Connections: 1\n"), text)
        XCTAssertTrue(text.contains("  #1 handle 0x"), text)
        XCTAssertTrue(text.contains("with C0:11:22:33:44:55/random (static) \"HMSoft\": the capturing host was the central"), text)
        // The lab's central: 30 ms, latency 0, 5 s supervision timeout.
        XCTAssertTrue(text.contains("     parameters: interval 30 ms, latency 0, supervision timeout 5000 ms\n"), text)
        XCTAssertTrue(text.contains("     GATT database (as discovery showed it):\n"), text)
        XCTAssertTrue(text.contains("       service FFE0 (handles 0x"), text)
        let ffe1 = try XCTUnwrap(lines(text, containing: "characteristic FFE1 value handle").first, text)
        XCTAssertTrue(ffe1.hasSuffix("[read, write-without-response, notify] descriptors 2902 0x" + ffe1.suffix(4)), ffe1)
        // The subscription (a Write Request to the CCCD), the write (a command), its echo.
        XCTAssertEqual(lines(text, containing: "2902 of FFE1 (0x").first?.hasSuffix("): 1 write request"), true, text)
        XCTAssertEqual(lines(text, containing: "       FFE1 (0x").first?.hasSuffix("): 1 write command, 1 notification"), true, text)
        XCTAssertTrue(text.contains("     notifications and indications: 1 from "), text)
        XCTAssertTrue(text.contains("mean all at once, peak 1 in 1 s"), text)
        let disconnected = try XCTUnwrap(lines(text, containing: "disconnected at").first, text)
        XCTAssertTrue(disconnected.contains(": local-host-terminated (0x16); the capturing host asked at record "), disconnected)
        XCTAssertTrue(disconnected.hasSuffix(" with remote-user-terminated"), disconnected)
        XCTAssertTrue(text.contains("\nSkipped: nothing (every record read)\n"), text)
        // Discovery ends with Attribute Not Found (Core 5.4, Vol 3, Part G, 4.4.1, 4.6.1, 4.7.1): not an error.
        XCTAssertFalse(text.contains("ATT error"), text)
        XCTAssertTrue(text.contains("     discovery ended with Attribute Not Found 4 times (as the procedures end)\n"), text)
    }

    /// ATT errors by request, handle and name (Core 5.4, Vol 3, Part F, 3.4.1.1): the battery
    /// sensor of att-error-response.yaml refuses the first read of 2A19 with Insufficient
    /// Encryption (its early Attribute Not Found to discovery counts as a discovery's end).
    func testATTErrorsAreListedByRequestHandleAndName() throws {
        let text = try summary(centralCapture(runWithCaptures(try loadScenario("scenarios/field/att-error-response.yaml"))))
        // The early end looks like any end of discovery: the database shows what it found.
        XCTAssertTrue(text.contains("     discovery ended with Attribute Not Found "), text)
        XCTAssertEqual(lines(text, containing: "ATT error: ").count, 1, text)
        let read = try XCTUnwrap(lines(text, containing: "ATT error: Read Request").first, text)
        XCTAssertTrue(read.contains(": insufficient-encryption (0x0f), first at record "), read)
        XCTAssertEqual(lines(text, containing: "       2A19 (0x").first?.hasSuffix("): 2 reads"), true, text)
        XCTAssertEqual(lines(text, containing: "       2A29 (0x").first?.hasSuffix("): 1 read"), true, text)
    }

    /// link-notification-burst.yaml: 20 notifications in one burst on subscribe, all within a
    /// second: the peak window holds all 20.
    func testNotificationsPerSecond() throws {
        let text = try summary(centralCapture(runWithCaptures(try loadScenario("scenarios/field/link-notification-burst.yaml"))))
        let rate = try XCTUnwrap(lines(text, containing: "notifications and indications: ").first, text)
        XCTAssertTrue(rate.hasPrefix("     notifications and indications: 20 from "), rate)
        XCTAssertTrue(rate.contains(", mean "), rate)
        XCTAssertTrue(rate.contains(", peak 20 in 1 s (from "), rate)
        XCTAssertEqual(lines(text, containing: "       FFF1 (0x").first?.hasSuffix("): 20 notifications"), true, text)
    }

    /// A capture the import refuses ("nothing to import": commands and their Command Complete
    /// events, no advertising, no connection) still says what it holds; one of advertising
    /// reports alone (logging switched on during a scan) imports, its scan taken up at the first.
    func testACaptureWithNothingToImportStillSaysWhatItHolds() throws {
        let capture = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml")))
        let file = try BTSnoopReader.decode(capture)
        // Only the LE Advertising Reports (event 0x3E, subevent 0x02).
        let reports = BTSnoopFile(datalink: file.datalink, records: file.records.filter { r in
            r.data.count > 3 && r.data[0] == 0x04 && r.data[1] == 0x3E && r.data[3] == 0x02
        })
        let imported = try CaptureImporter.importCapture(BTSnoopWriter.encode(reports), source: "reports")
        XCTAssertTrue(imported.transcript.scans.first?.startedBeforeCapture ?? false)
        XCTAssertTrue(imported.yaml.contains("  - expect: { discovered: hmsoft }"), imported.yaml)
        let reportsText = try summary(BTSnoopWriter.encode(reports))
        XCTAssertTrue(reportsText.contains("Devices seen: 2\n"), reportsText)
        XCTAssertEqual(lines(reportsText, containing: "\"HMSoft\"").count, 1, reportsText)
        // Only the Command Complete events (0x0E): nothing to import.
        let completes = BTSnoopFile(datalink: file.datalink, records: file.records.filter { r in
            r.data.count > 2 && r.data[0] == 0x04 && r.data[1] == 0x0E
        })
        let bytes = BTSnoopWriter.encode(completes)
        XCTAssertThrowsError(try CaptureImporter.importCapture(bytes, source: "completes")) { error in
            guard case .nothingToImport? = error as? CaptureError else { return XCTFail("\(error)") }
        }
        let text = try summary(bytes)
        XCTAssertTrue(text.contains("Devices seen: 0"), text)
        XCTAssertTrue(text.contains("Connections: 0\n"), text)

        let cli = CLIHarness()
        let directory = try temporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/reports.btsnoop"
        try FileText.write(bytes, to: path)
        XCTAssertEqual(cli.run(["import", path]), .badInput)
        XCTAssertTrue(cli.err.contains("nothing to import"), cli.err)
        XCTAssertEqual(cli.run(["import", "--summary", path]), .passed, cli.err)
        XCTAssertEqual(cli.out, text.replacingOccurrences(of: "capture.btsnoop", with: "reports.btsnoop"))
        XCTAssertEqual(cli.err, "")
        XCTAssertEqual(cli.run(["import", path, "--summary", "-o", "summary.txt"]), .passed, cli.err)
        XCTAssertEqual(cli.out, "")
        XCTAssertEqual(cli.files["summary.txt"].map { String(decoding: $0, as: UTF8.self) }, text.replacingOccurrences(of: "capture.btsnoop", with: "reports.btsnoop"))
        XCTAssertEqual(cli.run(["import", "--summary=yes", path]), .badInput)
        XCTAssertEqual(cli.err, "blelab: option --summary takes no value\n")
    }

    /// A damaged capture: the summary lists what was skipped, with record, offset and why.
    func testTheSummaryListsWhatWasSkipped() throws {
        var capture = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml")))
        // Cut inside the last record.
        capture.removeLast(3)
        let text = try summary(capture)
        let skipped = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("Skipped: ") }, text)
        XCTAssertTrue(skipped.hasPrefix("Skipped: the rest of the file from offset "), String(skipped))
        XCTAssertTrue(text.contains(" and the rest of the file ("), text)
        XCTAssertTrue(text.contains(" not read: btsnoop: record data truncated at offset "), text)
        XCTAssertThrowsError(try summary(capture, strict: true))
    }
}

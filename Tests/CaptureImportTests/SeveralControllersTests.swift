import BLELabCLI
import BLELabTestSupport
import BLERuntime
import CaptureImport
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// A Linux monitor capture (btmon -w, btsnoop datalink 2001) of two controllers: the central on
/// hci0 and the peripheral on hci1, as a machine running both sides logs them. The import reads one
/// (`--controller N`), and without it names both.
final class SeveralControllersTests: XCTestCase {
    /// The records of `btsnoop` (datalink 1002) as monitor records of controller `index`.
    private func monitorRecords(_ btsnoop: [UInt8], index: UInt16) throws -> [BTSnoopRecord] {
        try BTSnoopReader.decode(btsnoop).records.compactMap { r in
            guard let type = r.packetType else { return nil }
            let opcode = try XCTUnwrap(BTSnoopMonitorOpcode.carrying(type, direction: r.direction)).rawValue
            let data = Array(r.data.dropFirst())
            return BTSnoopRecord(datalink: .linuxMonitor, timestamp: r.timestamp, flags: UInt32(opcode) | UInt32(index) << 16,
                                 originalLength: UInt32(data.count), data: data)
        }
    }

    func testOneControllerIsChosenAndWithoutTheChoiceBothAreNamed() throws {
        let result = runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml"))
        let central = try centralCapture(result)
        let peripheral = BTSnoopWriter.encode(try XCTUnwrap(result.captures.first).packets)
        let merged = try (monitorRecords(central, index: 0) + monitorRecords(peripheral, index: 1)).sorted { $0.timestamp < $1.timestamp }
        let bytes = BTSnoopWriter.encode(BTSnoopFile(datalink: .linuxMonitor, records: merged))
        let directory = try temporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/two.btsnoop"
        try FileText.write(bytes, to: path)
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["import", path]), .badInput)
        XCTAssertTrue(cli.err.contains("several controllers: hci0 ("), cli.err)
        XCTAssertTrue(cli.err.contains("choose it with --controller N"), cli.err)
        // hci0: the central's side, the same scenario as its own capture gives.
        XCTAssertEqual(cli.run(["import", "--controller", "0", path]), .passed, cli.err)
        let alone = try CaptureImporter.importCapture(central, source: "two.btsnoop")
        XCTAssertEqual(try Scenario.parse(cli.out, file: "a.yaml").steps, alone.scenario.steps)
        // hci1 (also written hci1): the peripheral's side.
        XCTAssertEqual(cli.run(["import", "--controller", "hci1", path]), .passed, cli.err)
        XCTAssertTrue(cli.out.contains("taken on the peripheral"), cli.out)
        XCTAssertEqual(cli.run(["import", "--controller", "7", path]), .badInput)
        XCTAssertTrue(cli.err.contains("--controller 7: the capture holds no HCI traffic of hci7"), cli.err)
        XCTAssertEqual(cli.run(["import", "--controller", "x", path]), .badInput)
        XCTAssertEqual(cli.run(["import", "--summary", "--controller", "1", path]), .passed, cli.err)
    }
}

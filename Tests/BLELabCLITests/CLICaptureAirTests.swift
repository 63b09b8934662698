import BLELab
@testable import BLELabCLI
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// `blelab run --capture-air DIR`: one pcap of the sim's air per scenario run, named like the
/// `--capture` files; refused on tiers without an air.
final class CLICaptureAirTests: XCTestCase {
    private let f = ScenarioText.fixtures

    final class SocketLikeBackend: ScenarioBackend {
        let sim = SimBackend()
        var tier: TransportTier { .socket }
        func prepare(deviceCount: Int) throws {}
        func makeLab(seed: UInt64) throws -> Lab { try sim.makeLab(seed: seed) }
        func shutDown() {}
    }

    func testAirCapturesAreWrittenPerRunAndAreTheSameEachTime() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["run", "-q", "--capture-air", dir + "/air", f + "/passing"], writesFiles: true), .passed)
        let files = try FileText.entries(dir + "/air").sorted()
        XCTAssertEqual(files, ["echo.air.pcap", "scan.air.pcap"])
        let echo = try FileText.readBytes(dir + "/air/echo.air.pcap")
        // pcap, little-endian, microseconds, version 2.4, link type 256.
        XCTAssertEqual(Array(echo[0..<8]), [0xD4, 0xC3, 0xB2, 0xA1, 0x02, 0x00, 0x04, 0x00])
        XCTAssertEqual(Array(echo[20..<24]), [0x00, 0x01, 0x00, 0x00])
        XCTAssertEqual(cli.run(["run", "-q", "--capture-air", dir + "/again", f + "/passing"], writesFiles: true), .passed)
        XCTAssertEqual(try FileText.readBytes(dir + "/again/echo.air.pcap"), echo, "same scenario and seed, same bytes")
        XCTAssertEqual(cli.run(["run", "-q", "--repeat", "2", "--capture-air", dir + "/repeat", f + "/passing/echo.yaml"], writesFiles: true), .passed)
        XCTAssertEqual(try FileText.entries(dir + "/repeat").sorted(), ["echo.run1.air.pcap", "echo.run2.air.pcap"])
    }

    func testOtherTiersRefuseCaptureAirWithAUsageError() {
        let cli = CLIHarness(backend: { _ in SocketLikeBackend() })
        XCTAssertEqual(cli.run(["run", "--transport", "socket", "--capture-air", "/tmp/never", f + "/passing"]), .badInput)
        XCTAssertTrue(cli.err.contains("--capture-air records the sim's air, and only the sim has one"), cli.err)
        XCTAssertTrue(cli.err.hasSuffix("blelab: nothing was run\n"), cli.err)
        XCTAssertEqual(cli.out, "")
    }

    func testHelpNamesTheOption() {
        XCTAssertTrue(Help.run().contains("--capture-air DIR"))
        XCTAssertTrue(Help.run().contains("sim only"))
    }
}

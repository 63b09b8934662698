@testable import BLELabCLI
import BLELabTestSupport
@testable import ScenarioEngine
import XCTest

/// `blelab verdicts`: the cross-tier report, from JUnit files like those `blelab run --junit`
/// writes on each tier (Fixtures/verdicts/: HM-10 fails on rootcanal only, air-power-off is
/// sim-only, smart-curtain is missing from bumble's report).
final class VerdictsCommandTests: XCTestCase {
    private let dir = ScenarioText.fixtures + "/verdicts"

    func testAMismatchIsListedWithItsFailureAndExitsOne() {
        let cli = CLIHarness()
        let status = cli.run(["verdicts", "sim=\(dir)/sim.xml", "rootcanal=\(dir)/rootcanal.xml", "bumble=\(dir)/bumble.xml"])
        XCTAssertEqual(status, .failed)
        XCTAssertEqual(cli.err, "")
        XCTAssertEqual(cli.outLines, [
            "MISMATCH scenarios.seeds.hm10-serial: HM-10 serial bridge echoes what the app writes — sim passed, rootcanal failed (expected a notification of FFE1 from hm10 within 500ms; seen no notification of FFE1 arrived since step 5), bumble passed",
            "SKIP scenarios.field.air-power-off: Peripheral powers off mid-command — passed on sim; skipped on rootcanal and bumble",
            "MISSING scenarios.seeds.smart-curtain: Smart curtain receives IOS_TEST as a Write Command — passed on sim and rootcanal; not in the report of bumble",
            "scenarios: 4 (sim, rootcanal, bumble)",
            "same_verdict_everywhere: 1",
            "skipped_or_missing_somewhere: 2",
            "verdict_mismatches: 1",
            "",
        ])
    }

    /// A skip is no verdict: a sim-only scenario skipped elsewhere is listed, never a mismatch.
    func testSkipsAreListedButAreNoMismatch() {
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["verdicts", "sim=\(dir)/sim.xml", "bumble=\(dir)/bumble.xml"]), .passed)
        XCTAssertEqual(cli.outLines.filter { $0.hasPrefix("SKIP") || $0.hasPrefix("MISMATCH") }, [
            "SKIP scenarios.field.air-power-off: Peripheral powers off mid-command — passed on sim; skipped on bumble",
        ])
        XCTAssertEqual(cli.outLines.suffix(2), ["verdict_mismatches: 0", ""])
    }

    /// Without labels, a file goes by the tier its report names; two of one tier by their paths.
    func testUnlabelledFilesGoByTierThenPath() {
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["verdicts", "\(dir)/sim.xml", "\(dir)/rootcanal.xml", "\(dir)/bumble.xml"]), .failed)
        XCTAssertTrue(cli.outLines.contains("scenarios: 4 (sim, \(dir)/rootcanal.xml, \(dir)/bumble.xml)"), cli.out)
        XCTAssertEqual(cli.run(["verdicts", "\(dir)/sim.xml", "\(dir)/bumble.xml"]), .passed)
        XCTAssertTrue(cli.outLines.contains("scenarios: 4 (sim, socket)"), cli.out)
    }

    func testAMissingOrBrokenFileIsAClearErrorAndExitsTwo() {
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["verdicts", "sim=\(dir)/sim.xml", "vhci=\(dir)/no-such.xml"]), .badInput)
        XCTAssertEqual(cli.out, "")
        XCTAssertEqual(cli.err, "blelab: \(dir)/no-such.xml: cannot read (No such file or directory); run that tier first (make e2e, e2e-socket, e2e-vhci write these files)\n")
        XCTAssertEqual(cli.run(["verdicts", "sim=\(dir)/sim.xml", "vhci=\(dir)/broken.xml"]), .badInput)
        XCTAssertEqual(cli.out, "")
        XCTAssertTrue(cli.err.hasPrefix("blelab: \(dir)/broken.xml: JUnit XML: "), cli.err)
        XCTAssertTrue(cli.err.contains(" at offset "), cli.err)
    }

    func testUsage() {
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["verdicts", "\(dir)/sim.xml"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: verdicts compares the JUnit files of at least two tiers, such as: blelab verdicts sim=build/e2e/junit.xml rootcanal=build/e2e-rootcanal/junit.xml\n")
        XCTAssertEqual(cli.run(["verdicts", "--all", "a", "b"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: unknown option '--all' for verdicts; see 'blelab verdicts --help'\n")
        XCTAssertEqual(cli.run(["verdicts", "=x", "b"]), .badInput)
        XCTAssertEqual(cli.run(["help", "verdicts"]), .passed)
        XCTAssertTrue(cli.out.hasPrefix("usage: blelab verdicts"), cli.out)
    }

    /// What `blelab run --junit` writes reads back: the same runs on two tiers agree, and one
    /// failure among them is a mismatch.
    func testReportsTheRunnerWritesCompare() throws {
        let passing = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + "\n  - read: FFE1\n  - expect: { value: text:ready }"), file: "a.yaml")
        let failing = try ScenarioText.run(ScenarioText.hm10(ScenarioText.connected + "\n  - read: FFE1\n  - expect: { value: text:other }"), file: "a.yaml")
        let sim = try JUnitReport(xml: RunReports.junit([ScenarioRun(result: passing)], tier: .sim).xml)
        let socket = try JUnitReport(xml: RunReports.junit([ScenarioRun(result: failing)], tier: .socket).xml)
        XCTAssertEqual(VerdictComparison([("sim", sim), ("vhci", sim)]).mismatches, [])
        let comparison = VerdictComparison([("sim", sim), ("socket", socket)])
        XCTAssertEqual(comparison.mismatches.map(\.file), ["a"])
        XCTAssertEqual(comparison.lines.last, "verdict_mismatches: 1")
    }
}

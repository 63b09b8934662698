import BLELab
@testable import BLELabCLI
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// `blelab run`, `validate` and `list` end to end on the fixtures: exit status, output for
/// people, colour and progress, and the files a run writes.
final class CLIRunTests: XCTestCase {
    private let f = ScenarioText.fixtures
    private let cli = CLIHarness()

    func testPassingScenariosExitZeroWithOneLineEach() {
        XCTAssertEqual(cli.run(["run", f + "/passing"]), .passed)
        XCTAssertEqual(cli.outLines, [
            "PASS Serial bridge echoes a write (\(f)/passing/echo.yaml) 1.0ms wall / 925.788ms virtual",
            "PASS Scan filter keeps only FFF0 (\(f)/passing/nested/scan.yaml) 1.0ms wall / 500ms virtual",
            "2 passed, 0 failed (2 runs) in 7.0ms wall / 1.426s virtual",
            "",
        ])
        XCTAssertEqual(cli.err, "")
    }

    func testADeliberateFailureGivesAReadableReportAndExitOne() {
        XCTAssertEqual(cli.run(["run", f + "/failing"]), .failed)
        let file = f + "/failing/deliberate-failure.yaml"
        XCTAssertEqual(Array(cli.outLines.prefix(5)), [
            "FAIL Deliberately failing echo (\(file)) 1.0ms wall / 925.788ms virtual",
            "  step 6 (\(file):22): expect: { notification: FFE1, value: text:goodbye, within: 500ms }",
            "  expected: a notification of FFE1 from hm10, the last with value text:goodbye within 500ms",
            "  seen:     the last of 1 was text:hello (1 notification of FFE1: text:hello at 925.788ms)",
            "  at:       925.788ms (virtual)",
        ])
        XCTAssertEqual(cli.outLines[5], "  last packets on the central's HCI:")
        XCTAssertEqual(cli.outLines[15], "    925.788ms ← ATT Handle Value Notification handle 0x000c value 68 65 6c 6c 6f on connection 0x0001")
        XCTAssertEqual(cli.outLines[16], "  reproduce: blelab run \(file) --seed 42")
        XCTAssertEqual(cli.outLines[17], "0 passed, 1 failed (1 run) in 4.0ms wall / 925.788ms virtual")
    }

    func testAFailingScenarioDoesNotStopTheOthers() {
        XCTAssertEqual(cli.run(["run", "--quiet", f + "/passing", f + "/failing"]), .failed)
        XCTAssertEqual(cli.outLines.filter { $0.hasPrefix("PASS") || $0.hasPrefix("FAIL") }.count, 1, "quiet: only the failure")
        XCTAssertEqual(cli.outLines.last(where: { !$0.isEmpty }), "2 passed, 1 failed (3 runs) in 10.0ms wall / 2.352s virtual")
    }

    func testABrokenFileRunsNothingAndExitsTwo() {
        XCTAssertEqual(cli.run(["run", f + "/passing", f + "/broken/broken.yaml"]), .badInput)
        XCTAssertEqual(cli.out, "", "nothing ran")
        XCTAssertEqual(cli.err, """
        \(f)/broken/broken.yaml:8:5: error: found unknown key 'advertize', expected a peripheral key (address, rssi, advertise, gatt, on-connect, on-disconnect, device-name, flaws, security, privacy, link, mtu); did you mean 'advertise'?
        \(f)/broken/broken.yaml:12:46: error: found property 'notfy', expected one of broadcast, read, write-without-response, write, notify, indicate, authenticated-signed-writes, extended-properties; did you mean 'notify'?
        \(f)/broken/broken.yaml:14:18: error: found '5', expected a duration such as 250ms, 1s, 1.5s or 2m; add a unit: 5ms or 5s
        blelab: 3 errors in 1 file
        blelab: nothing was run

        """)
    }

    func testBadPathsAndTransportsExitTwo() {
        XCTAssertEqual(cli.run(["run", "/no/such/scenarios"]), .badInput)
        XCTAssertTrue(cli.err.hasPrefix("/no/such/scenarios: error: found no such file or directory"), cli.err)
        XCTAssertEqual(cli.run(["run", "--transport", "socket", f + "/passing"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: transport socket is not available (this build offers: sim)\nblelab: nothing was run\n")
        XCTAssertEqual(cli.out, "")
        XCTAssertEqual(cli.run(["run", "--shard", "3/2"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: --shard takes I/N with 1 <= I <= N, such as 2/4, not '3/2'\n")
    }

    func testAnotherStackInASeatNeedsAnOfferAndRealControllers() {
        // The default build offers no other stack (the executable adds BlueZ).
        XCTAssertEqual(cli.run(["run", "--central", "bluez", f + "/passing"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: --central bluez: this build offers no other central\nblelab: nothing was run\n")
        XCTAssertEqual(cli.run(["run", "--peripheral=bluez:hci1", f + "/passing"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: --peripheral bluez:hci1: this build offers no other peripheral\nblelab: nothing was run\n")
        // `none` is always there, but a program outside the lab cannot meet the sim's devices.
        XCTAssertEqual(cli.run(["run", "--central", "none", f + "/passing"]), .badInput)
        XCTAssertTrue(cli.err.hasPrefix("blelab: --central/--peripheral put a stack or program outside the lab in a seat"), cli.err)
        XCTAssertTrue(cli.err.hasSuffix("not on the sim: give --transport too (hci-user:1,2,… in the micro-VM, see docs/bluez.md)\nblelab: nothing was run\n"), cli.err)
        XCTAssertEqual(cli.out, "")
        XCTAssertEqual(cli.run(["run", "--central", f + "/passing"]), .badInput)
        // `--peripheral none:ID@ADDRESS` is the CLI's own too, and needs real controllers the same way.
        XCTAssertEqual(cli.run(["run", "--peripheral", "none:hm10@C0:11:22:33:44:55/random", f + "/passing"]), .badInput)
        XCTAssertTrue(cli.err.hasPrefix("blelab: --central/--peripheral put a stack or program outside the lab in a seat"), cli.err)
        XCTAssertEqual(cli.run(["run", "--peripheral", "none", f + "/passing"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: --peripheral none: say which peripheral the program outside the lab serves and where: none:ID@ADDRESS "
                       + "(e.g. none:sensor@C0:11:22:33:44:55)\nblelab: nothing was run\n")
        XCTAssertEqual(cli.run(["run", "--peripheral", "none:hm10@nowhere", f + "/passing"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: --peripheral none:hm10@nowhere: 'nowhere' is not an address (C0:11:22:33:44:55, optionally /public or /random)"
                       + "\nblelab: nothing was run\n")
        XCTAssertEqual(cli.run(["run", "--central", "none", "--peripheral", "none:hm10@C0:11:22:33:44:55", f + "/passing"]), .badInput)
        XCTAssertTrue(cli.err.hasPrefix("blelab: --peripheral none is judged on BLELab's central, so it does not go with --central none"), cli.err)
        XCTAssertEqual(cli.out, "")
    }

    func testAFolderWithoutScenariosIsBadInput() throws {
        let empty = try temporaryDirectory()
        defer { removeTree(empty) }
        XCTAssertEqual(cli.run(["run", empty]), .badInput)
        XCTAssertEqual(cli.err, "blelab: no scenario files (*.yaml) in \(empty)\nblelab: nothing was run\n")
    }

    func testTagsFilterAndShardsSelect() {
        XCTAssertEqual(cli.run(["run", "--tag", "scan", f + "/passing", f + "/failing"]), .passed)
        XCTAssertEqual(cli.outLines.filter { $0.hasPrefix("PASS") }.count, 1)
        XCTAssertEqual(cli.run(["run", "--filter", "deliberately", f + "/passing", f + "/failing"]), .failed)
        XCTAssertEqual(cli.run(["run", "--shard", "2/3", f + "/passing", f + "/failing"]), .passed)
        XCTAssertTrue(cli.out.hasPrefix("PASS Serial bridge echoes a write"), cli.out)
        XCTAssertEqual(cli.run(["run", "--tag", "nothing", f + "/passing"]), .badInput, "a selection of nothing is a typo (CLISelectionTests)")
        XCTAssertEqual(cli.out, "")
    }

    func testRepeatRunsWithSuccessiveSeeds() {
        XCTAssertEqual(cli.run(["run", "--repeat", "3", f + "/passing/echo.yaml"]), .passed)
        XCTAssertEqual(cli.outLines.filter { $0.hasPrefix("PASS") }, [
            "PASS Serial bridge echoes a write (run 1 of 3, seed 42) (\(f)/passing/echo.yaml) 1.0ms wall / 925.788ms virtual",
            "PASS Serial bridge echoes a write (run 2 of 3, seed 43) (\(f)/passing/echo.yaml) 1.0ms wall / 929.173ms virtual",
            "PASS Serial bridge echoes a write (run 3 of 3, seed 44) (\(f)/passing/echo.yaml) 1.0ms wall / 930.928ms virtual",
        ])
        XCTAssertEqual(cli.run(["run", "--repeat", "2", "--seed", "7", f + "/passing/echo.yaml"]), .passed)
        XCTAssertTrue(cli.out.contains("(run 2 of 2, seed 8)"))
    }

    func testVerboseListsSteps() {
        XCTAssertEqual(cli.run(["run", "-v", f + "/passing/nested/scan.yaml"]), .passed)
        XCTAssertEqual(Array(cli.outLines.dropFirst().prefix(3)), [
            "    0s step 1 scan: { services: [FFF0], for: 500ms }: ok — discovered curtain (-59 dBm)",
            "    500ms step 2 expect: { discovered: curtain }: ok — the last scan discovered curtain (-59 dBm)",
            "    500ms step 3 expect: { not-discovered: lamp }: ok — the last scan discovered curtain (-59 dBm)",
        ])
    }

    // MARK: Colour and progress

    func testColourOnlyOnATerminalAndNeverWithNoColor() {
        XCTAssertEqual(cli.run(["run", f + "/passing/nested/scan.yaml"], terminal: true), .passed)
        XCTAssertTrue(cli.out.hasPrefix("\u{1B}[32mPASS\u{1B}[0m Scan filter"), cli.out)
        XCTAssertEqual(cli.run(["run", f + "/passing/nested/scan.yaml"], terminal: true, environment: ["NO_COLOR": "1"]), .passed)
        XCTAssertFalse(cli.out.contains("\u{1B}"))
        XCTAssertEqual(cli.run(["run", f + "/passing/nested/scan.yaml"], terminal: true, environment: ["NO_COLOR": ""]), .passed)
        XCTAssertFalse(cli.out.contains("\u{1B}"), "set, even empty, means no colour")
        XCTAssertEqual(cli.run(["run", f + "/passing/nested/scan.yaml"], terminal: false), .passed)
        XCTAssertFalse(cli.out.contains("\u{1B}"))
        XCTAssertEqual(cli.run(["run", f + "/failing"], terminal: true), .failed)
        XCTAssertTrue(cli.out.hasPrefix("\u{1B}[31;1mFAIL\u{1B}[0m Deliberately"), cli.out)
    }

    func testProgressLineOnLongRunsOnATerminalOnly() {
        XCTAssertEqual(cli.run(["run", "--repeat", "20", f + "/passing/nested/scan.yaml"], terminal: true, environment: ["NO_COLOR": "1"]), .passed)
        XCTAssertTrue(cli.out.hasPrefix("\r\u{1B}[2K[1/20] Scan filter keeps only FFF0\r\u{1B}[2KPASS"), cli.out)
        XCTAssertTrue(cli.out.contains("\r\u{1B}[2K[20/20] Scan filter keeps only FFF0"))
        XCTAssertEqual(cli.run(["run", "--repeat", "20", f + "/passing/nested/scan.yaml"], terminal: false), .passed)
        XCTAssertFalse(cli.out.contains("\r"))
        XCTAssertEqual(cli.run(["run", "--repeat", "2", f + "/passing/nested/scan.yaml"], terminal: true), .passed)
        XCTAssertFalse(cli.out.contains("\r"), "short runs need no progress line")
    }

    // MARK: validate and list

    func testValidate() {
        XCTAssertEqual(cli.run(["validate", f + "/passing", f + "/format-shape.yaml", f + "/format-tour.yaml"]), .passed)
        XCTAssertEqual(cli.out, "4 scenario files valid\n")
        XCTAssertEqual(cli.run(["validate", f + "/broken/broken.yaml", f + "/passing"]), .badInput)
        XCTAssertEqual(cli.err.split(separator: "\n").count, 4, "three errors and the count")
        XCTAssertEqual(cli.out, "")
    }

    func testList() {
        XCTAssertEqual(cli.run(["list", f + "/passing", f + "/failing"]), .passed)
        XCTAssertEqual(cli.out, """
        Deliberately failing echo  [serial]  \(f)/failing/deliberate-failure.yaml
        Serial bridge echoes a write  [serial, smoke]  \(f)/passing/echo.yaml
        Scan filter keeps only FFF0  [scan, smoke]  \(f)/passing/nested/scan.yaml

        """)
        XCTAssertEqual(cli.run(["list", "--tag", "scan", f + "/passing"]), .passed)
        XCTAssertEqual(cli.out, "Scan filter keeps only FFF0  [scan, smoke]  \(f)/passing/nested/scan.yaml\n")
    }

    // MARK: Files a run writes

    func testJUnitJSONAndCaptures() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        XCTAssertEqual(cli.run(["run", "--junit", dir + "/junit.xml", "--json", dir + "/timeline.json", "--capture", dir + "/captures",
                                f + "/passing", f + "/failing"], writesFiles: true), .failed)
        let report = try JUnitReport(xml: try FileText.read(dir + "/junit.xml"))
        XCTAssertEqual(report.tests, 3)
        XCTAssertEqual(report.failures, 1)
        let cases = report.suites.flatMap(\.cases)
        XCTAssertEqual(cases.map(\.name), ["Deliberately failing echo", "Serial bridge echoes a write", "Scan filter keeps only FFF0"])
        // `time` is the wall time (the harness's clock: 1 ms per reading, two per run); the
        // virtual time, seed, tier and reproduce line are properties.
        XCTAssertEqual(cases.map(\.time), [0.001, 0.001, 0.001])
        XCTAssertEqual(cases.map { $0.properties.first { $0.name == "virtual_time" }?.value }, ["0.926", "0.926", "0.500"])
        XCTAssertEqual(cases[0].properties, [
            JUnitProperty("seed", "42"), JUnitProperty("tier", "sim"), JUnitProperty("virtual_time", "0.926"),
            JUnitProperty("reproduce", "blelab run \(f)/failing/deliberate-failure.yaml --seed 42"),
        ])
        XCTAssertEqual(report.suites[0].properties, [JUnitProperty("tier", "sim"), JUnitProperty("virtual_time", "2.352")])
        guard case let .failed(message, details, type) = cases[0].outcome else { return XCTFail("the first case failed") }
        XCTAssertEqual(message, "expected a notification of FFE1 from hm10, the last with value text:goodbye within 500ms; seen the last of 1 was text:hello (1 notification of FFE1: text:hello at 925.788ms)")
        XCTAssertEqual(type, "expectation")
        XCTAssertTrue(details.hasPrefix("seed 42\nstep 6 ("), details)

        let json = try FileText.read(dir + "/timeline.json")
        XCTAssertTrue(json.contains("\"outcome\": \"failed\""))
        XCTAssertTrue(json.contains("\"kind\": \"att\""))
        XCTAssertTrue(json.contains("\"kind\": \"peripheral\""))
        XCTAssertTrue(json.contains("\"text\": \"Write Command handle 0x000c value 68 65 6c 6c 6f\""))

        let captures = try FileText.entries(dir + "/captures").sorted()
        XCTAssertEqual(captures, ["deliberate-failure.central.btsnoop", "deliberate-failure.hm10.btsnoop", "echo.central.btsnoop", "echo.hm10.btsnoop",
                                  "scan.central.btsnoop", "scan.curtain.btsnoop", "scan.lamp.btsnoop"])
        let file = try BTSnoopReader.read(path: dir + "/captures/echo.central.btsnoop")
        XCTAssertEqual(file.datalink, .hciUART)
        XCTAssertGreaterThan(file.records.count, 20)

        // Same files, same seeds: byte for byte the same outputs.
        let again = try temporaryDirectory()
        defer { removeTree(again) }
        XCTAssertEqual(cli.run(["run", "--junit", again + "/junit.xml", "--json", again + "/timeline.json", "--capture", again + "/captures",
                                f + "/passing", f + "/failing"], writesFiles: true), .failed)
        for name in captures {
            XCTAssertEqual(try FileText.readBytes(again + "/captures/" + name), try FileText.readBytes(dir + "/captures/" + name), name)
        }
        XCTAssertEqual(junitWithoutWallTimes(try FileText.readBytes(again + "/junit.xml")), junitWithoutWallTimes(try FileText.readBytes(dir + "/junit.xml")))
        XCTAssertEqual(try FileText.readBytes(again + "/timeline.json"), try FileText.readBytes(dir + "/timeline.json"))
    }

    func testCaptureNamesWithRepeatsAndClashingFileNames() {
        func run(_ file: String, _ repetition: Int, _ repetitions: Int) -> ScenarioRun {
            ScenarioRun(result: ScenarioResult(name: "n", file: file, tags: [], seed: 1, tier: .sim, outcome: .passed, virtualTime: .zero, steps: [],
                                               timeline: [], captures: [DeviceCapture(device: "central", packets: [])]),
                        repetition: repetition, repetitions: repetitions)
        }
        XCTAssertEqual(RunReports.captureFiles([run("scenarios/a/x.yaml", 1, 1), run("scenarios/b/y.yaml", 1, 1)], directory: "out/").map(\.path),
                       ["out/x.central.btsnoop", "out/y.central.btsnoop"])
        XCTAssertEqual(RunReports.captureFiles([run("scenarios/a/x.yaml", 1, 1), run("scenarios/b/x.yaml", 1, 1)], directory: "out").map(\.path),
                       ["out/scenarios-a-x.central.btsnoop", "out/scenarios-b-x.central.btsnoop"])
        XCTAssertEqual(RunReports.captureFiles([run("x.yaml", 1, 2), run("x.yaml", 2, 2)], directory: "out").map(\.path),
                       ["out/x.run1.central.btsnoop", "out/x.run2.central.btsnoop"])
    }

    func testAnUnwritableCaptureFolderRunsNothing() {
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["run", "--capture", "/proc/blelab-cannot", f + "/passing"], writesFiles: true), .badInput)
        XCTAssertEqual(cli.out, "")
        XCTAssertTrue(cli.err.hasSuffix("blelab: nothing was run\n"), cli.err)
    }

    func testHelpGoesToStandardOutput() {
        XCTAssertEqual(cli.run(["run", "--help"]), .passed)
        XCTAssertEqual(cli.out, Help.run() + "\n")
        XCTAssertEqual(cli.run(["bogus"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: unknown command 'bogus': expected run, validate, list, import, verdicts or schema\n")
    }

    /// `blelab schema` prints the JSON Schema the format's code makes, and only that.
    func testSchemaPrintsTheJSONSchema() {
        XCTAssertEqual(cli.run(["schema"]), .passed)
        XCTAssertEqual(cli.out, ScenarioJSONSchema.text)
        XCTAssertTrue(cli.out.hasPrefix("{\n  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\","), String(cli.out.prefix(80)))
        XCTAssertEqual(cli.err, "")
        XCTAssertEqual(cli.run(["schema", "--help"]), .passed)
        XCTAssertEqual(cli.out, Help.schema + "\n")
        XCTAssertEqual(cli.run(["help", "schema"]), .passed)
        XCTAssertEqual(cli.out, Help.schema + "\n")
    }
}

/// The tier lifecycle: `prepare` once with the largest device count, `shutDown` once after the
/// last run, whether the runs pass or fail; a tier that cannot start runs nothing.
final class BackendLifecycleTests: XCTestCase {
    final class CountingBackend: ScenarioBackend {
        var prepared: [Int] = []
        var shutDowns = 0
        var failsToStart = false
        let sim = SimBackend()
        var tier: TransportTier { .sim }
        func prepare(deviceCount: Int) throws {
            prepared.append(deviceCount)
            if failsToStart { throw LabError.noControllers }
        }
        func makeLab(seed: UInt64) throws -> Lab { try sim.makeLab(seed: seed) }
        func shutDown() { shutDowns += 1 }
    }

    private let fixtures = ScenarioText.fixtures

    func testPrepareAndShutDownBracketTheRuns() {
        let backend = CountingBackend()
        let cli = CLIHarness(backend: { $0 == "counting" ? backend : nil })
        _ = cli.run(["run", "--transport", "counting", fixtures + "/passing", fixtures + "/failing"])
        XCTAssertEqual(backend.prepared.count, 1)
        XCTAssertGreaterThanOrEqual(backend.prepared.first ?? 0, 2, "at least a peripheral and the central")
        XCTAssertEqual(backend.shutDowns, 1)
    }

    func testATierThatCannotStartRunsNothing() {
        let backend = CountingBackend()
        backend.failsToStart = true
        let cli = CLIHarness(backend: { _ in backend })
        XCTAssertEqual(cli.run(["run", "--transport", "counting", fixtures + "/passing"]), .badInput)
        XCTAssertTrue(cli.err.contains("could not start"), cli.err)
        XCTAssertTrue(cli.err.hasSuffix("blelab: nothing was run\n"), cli.err)
        XCTAssertEqual(cli.out, "")
        XCTAssertEqual(backend.shutDowns, 1)
    }
}

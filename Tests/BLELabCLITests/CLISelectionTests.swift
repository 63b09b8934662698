@testable import BLELabCLI
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// `blelab run` through its entry point, on scenario files written for the test: what a
/// selection that matches nothing does, and the names `--capture` gives when files share a name.
final class CLISelectionTests: XCTestCase {
    private let f = ScenarioText.fixtures
    private let cli = CLIHarness()

    // MARK: A selection that matches nothing

    /// A typo in `--tag` or `--filter` must not go green in CI: exit 2, nothing run, and the
    /// tags or names there are.
    func testATagThatMatchesNothingIsBadInputAndListsTheTags() {
        XCTAssertEqual(cli.run(["run", "--tag", "scna", f + "/passing", f + "/failing"]), .badInput)
        XCTAssertEqual(cli.out, "", "nothing ran")
        XCTAssertEqual(cli.err, """
        blelab: no scenario selected: none of the 3 loaded is tagged scna; did you mean 'scan'?
        blelab: the tags are: scan, serial, smoke
        blelab: nothing was run

        """)
    }

    func testAFilterThatMatchesNothingIsBadInputAndListsTheNames() {
        XCTAssertEqual(cli.run(["run", "--filter", "no such name", f + "/passing", f + "/failing"]), .badInput)
        XCTAssertEqual(cli.out, "")
        XCTAssertEqual(cli.err, """
        blelab: no scenario selected: no name among the 3 loaded contains 'no such name'
        blelab: the scenarios are:
          Deliberately failing echo  [serial]
          Serial bridge echoes a write  [serial, smoke]
          Scan filter keeps only FFF0  [scan, smoke]
        blelab: nothing was run

        """)
    }

    func testTagAndFilterThatMatchOnlyApartAreBadInput() {
        // Each matches something, but no scenario has both.
        XCTAssertEqual(cli.run(["run", "--tag", "scan", "--filter", "echo", f + "/passing"]), .badInput)
        XCTAssertTrue(cli.err.hasPrefix("blelab: no scenario selected: none of the 2 loaded is tagged scan and has a name containing 'echo'\n"), cli.err)
        XCTAssertTrue(cli.err.contains("  Scan filter keeps only FFF0  [scan, smoke]\n"), cli.err)
        XCTAssertTrue(cli.err.hasSuffix("blelab: nothing was run\n"), cli.err)
    }

    func testListWithASelectionThatMatchesNothingIsBadInputToo() {
        XCTAssertEqual(cli.run(["list", "--tag", "nothing", f + "/passing"]), .badInput)
        XCTAssertEqual(cli.out, "")
        XCTAssertTrue(cli.err.hasPrefix("blelab: no scenario selected: none of the 2 loaded is tagged nothing\n"), cli.err)
    }

    /// An empty shard is not a typo: with more shards than scenarios some shards have none.
    func testAnEmptyShardStillPasses() {
        XCTAssertEqual(cli.run(["run", "--shard", "3/3", f + "/passing"]), .passed)
        XCTAssertEqual(cli.outLines.first, "no scenario in shard 3/3 (2 selected)")
    }

    // MARK: Controllers the vhci tier needs

    /// Scenarios written for the count: three peripherals in a flow mapping (no line of theirs
    /// starts the mapping's block, so a line-based count sees none), five in a scenario that
    /// runs only on the sim (`requires:` as a block list), and one plain scenario tagged `solo`.
    private func counted() throws -> String {
        let dir = try temporaryDirectory()
        func advertiser(_ name: String) -> String { "\(name): { advertise: { name: \(name.uppercased()), services: [FFF0] } }" }
        let flow = """
            scenario: Three in a flow mapping
            tags: [flow]
            peripherals: { \(["a", "b", "c"].map(advertiser).joined(separator: ", ")) }
            central:
              - scan: { for: 100ms }

            """
        let simOnly = """
            scenario: Five on the sim only
            requires:
              - sim
            peripherals:
            \(["a", "b", "c", "d", "e"].map { "  " + advertiser($0) }.joined(separator: "\n"))
            central:
              - scan: { for: 100ms }

            """
        let solo = """
            scenario: Solo
            tags: [solo]
            peripherals:
              # a comment line, indented like a peripheral
              \(advertiser("p"))
            central:
              - scan: { for: 100ms }

            """
        try FileText.write(Array(flow.utf8), to: dir + "/flow.yaml")
        try FileText.write(Array(simOnly.utf8), to: dir + "/sim-only.yaml")
        try FileText.write(Array(solo.utf8), to: dir + "/solo.yaml")
        return dir
    }

    /// The central plus the most peripherals of a scenario that runs on vhci, read from the
    /// parsed scenarios: the flow mapping's three count, the sim-only scenario's five don't.
    func testListControllersCountsTheCentralAndTheMostPeripheralsOnVHCI() throws {
        let dir = try counted()
        XCTAssertEqual(cli.run(["list", "--controllers", dir]), .passed, cli.err)
        XCTAssertEqual(cli.out, "4\n")
        XCTAssertEqual(cli.err, "")
        XCTAssertEqual(cli.run(["list", "--controllers", dir + "/sim-only.yaml"]), .passed, cli.err)
        XCTAssertEqual(cli.out, "2\n", "nothing counted: never fewer than 2")
        XCTAssertEqual(cli.run(["list", "--tag", "solo", "--controllers", dir]), .passed, cli.err)
        XCTAssertEqual(cli.out, "2\n", "one peripheral: the central and it")
        XCTAssertEqual(cli.run(["list", "--controllers", "--filter", "flow", dir]), .passed, cli.err)
        XCTAssertEqual(cli.out, "4\n")
    }

    /// A file that does not validate is bad input, with the errors `list` prints, and no count.
    func testListControllersRefusesBrokenFilesAsListDoes() throws {
        XCTAssertEqual(cli.run(["list", f + "/broken/broken.yaml"]), .badInput)
        let listed = cli.err
        XCTAssertEqual(cli.run(["list", "--controllers", f + "/broken/broken.yaml"]), .badInput)
        XCTAssertEqual(cli.out, "")
        XCTAssertEqual(cli.err, listed)
        XCTAssertTrue(cli.err.contains("broken.yaml:8:5: error: found unknown key 'advertize'"), cli.err)
        XCTAssertEqual(cli.run(["list", "--controllers", "--tag", "nothing", f + "/passing"]), .badInput)
        XCTAssertTrue(cli.err.hasPrefix("blelab: no scenario selected: "), cli.err)
        XCTAssertEqual(cli.run(["list", "--controllers=yes"]), .badInput)
        XCTAssertEqual(cli.err, "blelab: option --controllers takes no value\n")
    }

    // MARK: expect-failure

    /// Three scenarios with `expect-failure:` through `blelab run --junit`: one that fails with
    /// the text (passes), one that fails otherwise and one that passes (both fail, exit 1).
    func testExpectFailureVerdictsInTheConsoleAndTheJUnit() throws {
        let dir = try temporaryDirectory()
        func scenario(_ name: String, _ expected: String, _ expectation: String) -> String {
            """
            scenario: \(name)
            expect-failure: \(expected)
            peripherals:
              p:
                advertise: { name: P, services: [FFF0] }
            central:
              - scan: { services: [FFF0], for: 200ms }
              - expect: \(expectation)

            """
        }
        try FileText.write(Array(scenario("Fails as expected", "discovered p", "{ not-discovered: p }").utf8), to: dir + "/a.yaml")
        try FileText.write(Array(scenario("Fails otherwise", "no connection", "{ not-discovered: p }").utf8), to: dir + "/b.yaml")
        try FileText.write(Array(scenario("Passes", "discovered p", "{ discovered: p }").utf8), to: dir + "/c.yaml")
        XCTAssertEqual(cli.run(["run", dir, "--junit", "out.xml"]), .failed)
        XCTAssertTrue(cli.out.contains("PASS Fails as expected (\(dir)/a.yaml) "), cli.out)
        XCTAssertTrue(cli.out.contains("\n  failed as expected: step 2 (\(dir)/a.yaml:8): expect: { not-discovered: p }: expected the last scan did not discover p; seen the last scan (step 1) discovered p"), cli.out)
        XCTAssertTrue(cli.out.contains("FAIL Fails otherwise (\(dir)/b.yaml) "), cli.out)
        XCTAssertTrue(cli.out.contains("  expected: the scenario to fail with a failure containing 'no connection' (expect-failure)\n"
            + "  seen:     it failed otherwise: step 2 (\(dir)/b.yaml:8): expect: { not-discovered: p }: "), cli.out)
        XCTAssertTrue(cli.out.contains("FAIL Passes (\(dir)/c.yaml) "), cli.out)
        XCTAssertTrue(cli.out.contains("  the whole scenario\n  expected: the scenario to fail with a failure containing 'discovered p' (expect-failure)\n"
            + "  seen:     it passed: every step held\n"), cli.out)
        XCTAssertTrue(cli.out.contains("1 passed, 2 failed (3 runs)"), cli.out)
        let xml = String(decoding: try XCTUnwrap(cli.files["out.xml"]), as: UTF8.self)
        XCTAssertTrue(xml.contains("tests=\"3\" failures=\"2\" errors=\"0\""), xml)
        let cases = xml.components(separatedBy: "<testcase ").dropFirst()
        XCTAssertEqual(cases.count, 3)
        let a = try XCTUnwrap(cases.first { $0.hasPrefix("name=\"Fails as expected\"") })
        XCTAssertFalse(a.contains("<failure"), a)
        XCTAssertTrue(a.contains("<system-out>failed as expected: step 2 ("), a)
        let b = try XCTUnwrap(cases.first { $0.hasPrefix("name=\"Fails otherwise\"") })
        XCTAssertTrue(b.contains("<failure message=\"expected the scenario to fail with a failure containing &apos;no connection&apos; (expect-failure); seen it failed otherwise: "), b)
        XCTAssertTrue(b.contains("type=\"expect-failure\""), b)
        let c = try XCTUnwrap(cases.first { $0.hasPrefix("name=\"Passes\"") })
        XCTAssertTrue(c.contains("<failure message=\"expected the scenario to fail with a failure containing &apos;discovered p&apos; (expect-failure); seen it passed: every step held\""), c)
        XCTAssertEqual(cli.run(["run", dir + "/a.yaml"]), .passed, "alone, the one that failed as expected passes")
    }

    // MARK: Capture names

    /// Two files in different folders, with the same file name and the same scenario name, plus
    /// one whose name is its own. Each peripheral advertises a name of its own, so each capture
    /// shows which run wrote it.
    private func twins() throws -> (dir: String, a: String, b: String, solo: String) {
        let dir = try temporaryDirectory()
        func scenario(_ advertised: String) -> String {
            """
            scenario: Twin scan
            peripherals:
              p:
                advertise: { name: \(advertised), services: [FFF0] }
            central:
              - scan: { services: [FFF0], for: 200ms }
              - expect: { discovered: p }

            """
        }
        let (a, b, solo) = (dir + "/a/twin.yaml", dir + "/b/twin.yaml", dir + "/solo.yaml")
        try FileText.write(Array(scenario("Alpha_Twin").utf8), to: a)
        try FileText.write(Array(scenario("Bravo_Twin").utf8), to: b)
        try FileText.write(Array(scenario("Solo_One").utf8), to: solo)
        return (dir, a, b, solo)
    }

    /// `/tmp/x/a/twin.yaml` → `tmp-x-a-twin`, as docs/scenarios.md section 13 says.
    private func dashed(_ path: String) -> String {
        String(path.dropFirst().dropLast(5).map { $0 == "/" ? "-" : $0 })
    }

    /// Whether the capture at `path` holds `text` (the advertised name) somewhere in its packets.
    private func capture(_ path: String, holds text: String) throws -> Bool {
        let records = try BTSnoopReader.read(path: path).records
        let needle = Array(text.utf8)
        return records.contains { r in
            r.data.count >= needle.count && (0...(r.data.count - needle.count)).contains { Array(r.data[$0..<($0 + needle.count)]) == needle }
        }
    }

    func testFilesWithTheSameNameInDifferentFoldersKeepEveryCapture() throws {
        let (dir, a, b, solo) = try twins()
        defer { removeTree(dir) }
        let out = dir + "/captures"
        XCTAssertEqual(cli.run(["run", "--capture", out, dir], writesFiles: true), .passed, cli.out + cli.err)
        let (da, db) = (dashed(a), dashed(b))
        XCTAssertEqual(try FileText.entries(out).sorted(), [
            "solo.central.btsnoop", "solo.p.btsnoop",
            "\(da).central.btsnoop", "\(da).p.btsnoop",
            "\(db).central.btsnoop", "\(db).p.btsnoop",
        ].sorted())
        XCTAssertTrue(try capture("\(out)/\(da).p.btsnoop", holds: "Alpha_Twin"))
        XCTAssertFalse(try capture("\(out)/\(da).p.btsnoop", holds: "Bravo_Twin"))
        XCTAssertTrue(try capture("\(out)/\(db).p.btsnoop", holds: "Bravo_Twin"))
        XCTAssertTrue(try capture("\(out)/\(db).central.btsnoop", holds: "Bravo_Twin"), "the central heard b's peripheral")
        XCTAssertTrue(try capture("\(out)/solo.p.btsnoop", holds: "Solo_One"))
        _ = solo
    }

    func testRepeatedRunsOfFilesWithTheSameNameKeepEveryCapture() throws {
        let (dir, a, b, _) = try twins()
        defer { removeTree(dir) }
        let out = dir + "/captures"
        XCTAssertEqual(cli.run(["run", "--repeat", "2", "--capture", out, dir + "/a", dir + "/b"], writesFiles: true), .passed, cli.out + cli.err)
        let (da, db) = (dashed(a), dashed(b))
        var expected: [String] = []
        for base in [da, db] {
            for k in 1...2 { expected += ["\(base).run\(k).central.btsnoop", "\(base).run\(k).p.btsnoop"] }
        }
        XCTAssertEqual(try FileText.entries(out).sorted(), expected.sorted())
        for k in 1...2 {
            XCTAssertTrue(try capture("\(out)/\(da).run\(k).p.btsnoop", holds: "Alpha_Twin"), "run \(k) of a")
            XCTAssertTrue(try capture("\(out)/\(db).run\(k).p.btsnoop", holds: "Bravo_Twin"), "run \(k) of b")
        }
        // Different seeds, different runs: the two runs of a file are two captures.
        XCTAssertNotEqual(try FileText.readBytes("\(out)/\(da).run1.central.btsnoop"), try FileText.readBytes("\(out)/\(da).run2.central.btsnoop"))
    }

    /// Dashed paths can coincide (`x-y/b.yaml` and `x/y/b.yaml` are both `x-y-b`), and a dashed
    /// path can be another file's own name (`x-y-b.yaml`): in sorted file order the first keeps
    /// the name, the others take `-2`, `-3`…
    func testNamesThatStillClashAfterDashingGetANumber() {
        func run(_ file: String) -> ScenarioRun {
            ScenarioRun(result: ScenarioResult(name: "n", file: file, tags: [], seed: 1, tier: .sim, outcome: .passed, virtualTime: .zero, steps: [],
                                               timeline: [], captures: [DeviceCapture(device: "central", packets: [])]))
        }
        let files = ["x-y-b.yaml", "x-y/b.yaml", "x/y/b.yaml", "z/b.yaml"]
        XCTAssertEqual(RunReports.captureFiles(files.map(run), directory: "out").map(\.path), [
            "out/x-y-b.central.btsnoop", "out/x-y-b-2.central.btsnoop", "out/x-y-b-3.central.btsnoop", "out/z-b.central.btsnoop",
        ])
    }

    /// A device id with a dot can meet another file's name and device (`x` with device `a.p`
    /// and `x.a` with device `p`): the later capture takes `-2` rather than overwrite the first.
    func testADeviceIdWithADotNeverOverwritesAnotherCapture() {
        func run(_ file: String, _ device: String) -> ScenarioRun {
            ScenarioRun(result: ScenarioResult(name: "n", file: file, tags: [], seed: 1, tier: .sim, outcome: .passed, virtualTime: .zero, steps: [],
                                               timeline: [], captures: [DeviceCapture(device: device, packets: [])]))
        }
        XCTAssertEqual(RunReports.captureFiles([run("s/x.yaml", "a.p"), run("s/x.a.yaml", "p")], directory: "out").map(\.path), [
            "out/x.a.p.btsnoop", "out/x.a.p-2.btsnoop",
        ])
    }
}

@testable import BLELabCLI
import BLELabTestSupport
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// `blelab`'s command line: parsing, selection and sharding (no scenario runs here).
final class CLIArgumentTests: XCTestCase {
    private func run(_ arguments: [String]) throws -> RunArguments {
        guard case let .run(r) = try CLIArguments.parse(["run"] + arguments) else {
            XCTFail("not a run command")
            return RunArguments()
        }
        return r
    }

    private func usage(_ arguments: [String]) -> String? {
        do {
            _ = try CLIArguments.parse(arguments)
            return nil
        } catch {
            return "\(error)"
        }
    }

    func testRunDefaults() throws {
        let r = try run([])
        XCTAssertEqual(r, RunArguments())
        XCTAssertEqual(r.paths, [], "empty means scenarios/")
        XCTAssertEqual(r.transport, "sim")
        XCTAssertEqual(r.repeatCount, 1)
    }

    func testRunOptionsInBothForms() throws {
        let r = try run(["a.yaml", "--tag", "serial", "--tag=scan", "--filter", "Echo", "--seed=0x2A", "--repeat", "3",
                         "--shard", "2/4", "--junit", "out/j.xml", "--capture=out/cap", "--json", "out/t.json", "--transport", "sim",
                         "dir", "-q", "--", "--odd-name.yaml"])
        XCTAssertEqual(r.paths, ["a.yaml", "dir", "--odd-name.yaml"])
        XCTAssertEqual(r.tags, ["serial", "scan"])
        XCTAssertEqual(r.filter, "Echo")
        XCTAssertEqual(r.seed, 42)
        XCTAssertEqual(r.repeatCount, 3)
        XCTAssertEqual(r.shard, Shard(index: 2, count: 4))
        XCTAssertEqual(r.junit, "out/j.xml")
        XCTAssertEqual(r.capture, "out/cap")
        XCTAssertEqual(r.json, "out/t.json")
        XCTAssertTrue(r.quiet)
        XCTAssertFalse(r.verbose)
    }

    func testUsageErrors() {
        XCTAssertEqual(usage(["run", "--shard", "5/4"]), "--shard takes I/N with 1 <= I <= N, such as 2/4, not '5/4'")
        XCTAssertEqual(usage(["run", "--shard", "0/4"]), "--shard takes I/N with 1 <= I <= N, such as 2/4, not '0/4'")
        XCTAssertEqual(usage(["run", "--repeat", "0"]), "--repeat takes a count of 1 or more, not '0'")
        XCTAssertEqual(usage(["run", "--seed", "-1"]), "--seed takes a non-negative integer, not '-1'")
        XCTAssertEqual(usage(["run", "--tag"]), "option --tag needs a value")
        XCTAssertEqual(usage(["run", "--shrad", "1/2"]), "unknown option '--shrad' for run; did you mean '--shard'?; see 'blelab run --help'")
        XCTAssertEqual(usage(["run", "-q", "-v"]), "--quiet and --verbose cannot be used together")
        XCTAssertEqual(usage(["run", "--quiet=yes"]), "option --quiet takes no value")
        XCTAssertEqual(usage(["rnu"]), "unknown command 'rnu': expected run, validate, list, import, verdicts or schema; did you mean 'run'?")
        XCTAssertEqual(usage(["validate", "--tag", "x"]), "unknown option '--tag' for validate; see 'blelab validate --help'")
        XCTAssertEqual(usage(["help", "frobnicate"]), "no help for 'frobnicate': the commands are run, validate, list, import, verdicts and schema")
        XCTAssertEqual(usage(["schema", "--out", "x.json"]), "schema takes nothing after it; see 'blelab schema --help'")
        XCTAssertEqual(usage(["shcema"]), "unknown command 'shcema': expected run, validate, list, import, verdicts or schema; did you mean 'schema'?")
    }

    func testHelpForEachCommand() throws {
        XCTAssertEqual(try CLIArguments.parse([]), .help(.main))
        XCTAssertEqual(try CLIArguments.parse(["--help"]), .help(.main))
        XCTAssertEqual(try CLIArguments.parse(["run", "--help"]), .help(.run))
        XCTAssertEqual(try CLIArguments.parse(["validate", "-h"]), .help(.validate))
        XCTAssertEqual(try CLIArguments.parse(["list", "--help"]), .help(.list))
        XCTAssertEqual(try CLIArguments.parse(["help", "run"]), .help(.run))
        XCTAssertTrue(Help.run().contains("--shard I/N"))
        XCTAssertTrue(Help.run().contains("NO_COLOR"))
    }

    func testValidateAndList() throws {
        XCTAssertEqual(try CLIArguments.parse(["validate", "a", "b"]), .validate(paths: ["a", "b"]))
        var list = ListArguments()
        list.paths = ["x"]
        list.tags = ["t"]
        XCTAssertEqual(try CLIArguments.parse(["list", "x", "--tag", "t"]), .list(list))
        // run and list read operands, `--`, `--name=value` and the selection options alike.
        list.filter = "Echo"
        list.controllers = true
        list.paths = ["x", "--odd.yaml"]
        XCTAssertEqual(try CLIArguments.parse(["list", "--filter=Echo", "x", "--tag=t", "--controllers", "--", "--odd.yaml"]), .list(list))
        XCTAssertEqual(usage(["list", "--tag", ""]), "option --tag needs a tag")
        XCTAssertEqual(usage(["run", "--tag="]), "option --tag needs a tag")
        XCTAssertEqual(usage(["list", "--filter"]), "option --filter needs a value")
        XCTAssertEqual(usage(["list", "--controllers=yes"]), "option --controllers takes no value")
        XCTAssertEqual(usage(["list", "--controlers"]), "unknown option '--controlers' for list; did you mean '--controllers'?; see 'blelab list --help'")
        XCTAssertEqual(usage(["list", "--seed", "1"]), "unknown option '--seed' for list; see 'blelab list --help'")
    }

    // MARK: Selection and shards

    private func scenarios(_ count: Int) -> [Scenario] {
        (0..<count).map { i in
            Scenario(name: "scenario \(i)", file: "s\(i < 10 ? "0" : "")\(i).yaml", tags: i % 3 == 0 ? ["three"] : i % 2 == 0 ? ["two"] : [],
                     peripherals: [], steps: [])
        }
    }

    func testShardsSplitDeterministicallyAndCompletely() {
        let all = scenarios(13)
        for n in 1...6 {
            let parts = (1...n).map { ScenarioSelection(shard: Shard(index: $0, count: n)).select(all).map(\.file) }
            XCTAssertEqual(parts.flatMap { $0 }.sorted(), all.map(\.file), "shards of \(n) cover everything exactly once")
            XCTAssertTrue(parts.allSatisfy { $0 == $0.sorted() }, "each shard keeps the sorted order")
            XCTAssertLessThanOrEqual((parts.map(\.count).max() ?? 0) - (parts.map(\.count).min() ?? 0), 1, "fair shares")
            let again = (1...n).map { ScenarioSelection(shard: Shard(index: $0, count: n)).select(all).map(\.file) }
            XCTAssertEqual(parts, again)
        }
        XCTAssertEqual(ScenarioSelection(shard: Shard(index: 2, count: 4)).select(all).map(\.file), ["s01.yaml", "s05.yaml", "s09.yaml"])
        XCTAssertEqual(ScenarioSelection(shard: Shard(index: 4, count: 20)).select(all).map(\.file), ["s03.yaml"])
        XCTAssertEqual(ScenarioSelection(shard: Shard(index: 20, count: 20)).select(all).map(\.file), [], "more shards than scenarios")
    }

    func testTagsFilterThenShard() {
        let all = scenarios(13)
        XCTAssertEqual(ScenarioSelection(tags: ["three"]).select(all).map(\.name), ["scenario 0", "scenario 3", "scenario 6", "scenario 9", "scenario 12"])
        XCTAssertEqual(ScenarioSelection(tags: ["three", "two"]).select(all).count, 9, "any of the tags")
        XCTAssertEqual(ScenarioSelection(filter: "SCENARIO 1").select(all).map(\.name), ["scenario 1", "scenario 10", "scenario 11", "scenario 12"],
                       "case-insensitive substring")
        XCTAssertEqual(ScenarioSelection(tags: ["three"], shard: Shard(index: 2, count: 2)).select(all).map(\.name), ["scenario 3", "scenario 9"])
    }

    func testFilesAreFoundRecursivelyAndSorted() {
        let root = ScenarioText.fixtures
        let (files, errors) = ScenarioFiles.collect([root + "/passing", root + "/failing", root + "/passing/echo.yaml"])
        XCTAssertEqual(errors, [])
        XCTAssertEqual(files, [root + "/failing/deliberate-failure.yaml", root + "/passing/echo.yaml", root + "/passing/nested/scan.yaml"])
        let missing = ScenarioFiles.collect(["/no/such/dir"])
        XCTAssertEqual(missing.files, [])
        XCTAssertEqual(missing.errors.map(\.description), ["/no/such/dir: error: found no such file or directory, expected a scenario file or a folder of them"])
    }
}

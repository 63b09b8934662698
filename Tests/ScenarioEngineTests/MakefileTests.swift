import BLELabTestSupport
import Foundation
@testable import ScenarioEngine
import ScenarioFormat
import WireTestSupport
import XCTest

/// The Makefile's promises: every target that builds installs the build's packages first; make
/// test ends with a count line from the results and fails on a failed test; make soak's report
/// names flaky tests and scenario flakes.
final class MakefileTests: XCTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Rules of the Makefile: target → (prerequisites, recipe lines).
    private func rules() throws -> [String: (prerequisites: [String], recipe: [String])] {
        var rules: [String: (prerequisites: [String], recipe: [String])] = [:]
        var current: String?
        for line in try FileText.read(root + "/Makefile").split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("\t") {
                if let current { rules[current]?.recipe.append(line) }
                continue
            }
            current = nil
            guard !line.hasPrefix("#"), !line.hasPrefix("."), let colon = line.firstIndex(of: ":"),
                  !line.contains("="), !line.hasPrefix(" ") else { continue }
            let target = String(line[..<colon])
            guard !target.contains("$"), !target.contains(" ") else { continue }
            rules[target] = (line[line.index(after: colon)...].split(separator: " ").map(String.init), [])
            current = target
        }
        return rules
    }

    func testEveryTargetThatBuildsInstallsTheBuildsPackagesFirst() throws {
        let rules = try rules()
        XCTAssertNotNil(rules["deps"])
        let builders = rules.filter { _, rule in
            rule.recipe.contains { $0.contains("$(SWIFT) build") || $0.contains("vm/e2e-vhci.sh") || $0.contains("vm/e2e-bluez.sh") || $0.contains("tools/soak.sh") }
        }
        XCTAssertTrue(Set(["build", "test", "e2e", "e2e-bluez", "e2e-vhci", "bench-vhci", "e2e-rootcanal", "e2e-bumble", "bench-tiers", "soak"])
            .isSubset(of: builders.keys), "\(builders.keys.sorted())")
        for (target, rule) in builders {
            XCTAssertTrue(rule.prerequisites.contains("deps"), "make \(target) builds Swift but does not depend on deps (dbus/dbus.h on a fresh machine)")
        }
        // The scripts that build and are also run by hand install the packages themselves.
        for script in ["vm/e2e-vhci.sh", "vm/e2e-bluez.sh"] {
            let text = try FileText.read(root + "/" + script)
            let install = try XCTUnwrap(text.range(of: "bash tools/install-deps.sh"), script)
            let build = try XCTUnwrap(text.range(of: "\"$SWIFT\" build"), script)
            XCTAssertLessThan(install.lowerBound, build.lowerBound, script)
        }
    }

    // MARK: Scripts

    private func python(_ script: String, _ arguments: [String]) throws -> (status: Int32, lines: [String]) {
        guard let python = TestTools.executableOnPath("python3") else { throw XCTSkip("no python3 on PATH") }
        let run = try TestTools.runTool(python, [root + "/tools/" + script] + arguments)
        return (run.status, run.output.split(separator: "\n").map(String.init))
    }

    private func xunit(_ cases: [(String, Bool)], in dir: String, _ name: String) throws -> String {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"TestResults\">\n"
        for (test, passed) in cases {
            xml += "<testcase classname=\"T.C\" name=\"\(test)\" time=\"0.1\">\n" + (passed ? "" : "<failure message=\"failure\"></failure>\n") + "</testcase>\n"
        }
        xml += "</testsuite>\n</testsuites>\n"
        try FileText.write(xml, to: dir + "/" + name)
        return dir + "/" + name
    }

    func testMakeTestEndsWithOneCountLineAndFailsWhenATestFailed() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let recipe = try XCTUnwrap(try rules()["test"]?.recipe.joined(separator: "\n"))
        XCTAssertTrue(recipe.contains("--xunit-output $(TEST_RESULTS)") && recipe.contains("tools/test-summary.py --status"), recipe)

        let good = try xunit([("testA", true), ("testB", true)], in: dir, "good.xml")
        var r = try python("test-summary.py", ["--status", "0", good, dir + "/absent-swift-testing.xml"])
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.lines.last, "2 passed, 0 failed")

        let bad = try xunit([("testA", true), ("testB", false)], in: dir, "bad.xml")
        r = try python("test-summary.py", ["--status", "1", bad])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.lines, ["failed: T.C.testB", "1 passed, 1 failed"])

        let none = try xunit([], in: dir, "none.xml")
        r = try python("test-summary.py", ["--status", "0", none])
        XCTAssertEqual(r.status, 1, "no test ran is no pass")
        XCTAssertEqual(r.lines.last, "0 passed, 0 failed")

        r = try python("test-summary.py", ["--status", "0", dir + "/missing.xml"])
        XCTAssertEqual(r.status, 1)
    }

    /// tools/check-package-edges.py, run by `make test`: an import without its dependency, and a
    /// dependency no file imports, each fail the check by name; imports in comments and string
    /// literals, and the platform's modules, are not edges.
    func testPackageEdgesCheckFailsOnAnUndeclaredImportAndAnUnusedDependency() throws {
        XCTAssertTrue(try XCTUnwrap(rules()["test"]).prerequisites.contains("check-edges"))
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        for (path, text) in [
            ("Sources/Low/Low.swift", "public struct Low {}\n"),
            ("Sources/Mid/Mid.swift", "import Low\n#if canImport(Glibc)\nimport Glibc\n#endif\n// import Top\nlet help = \"\"\"\nimport Top\n\"\"\"\n"),
            ("Sources/Top/Top.swift", "import Mid\nimport struct Low.Low\n"),
            ("Tests/TopTests/TopTests.swift", "import XCTest\n@testable import Top\n"),
        ] {
            try FileText.makeDirectories(dir + "/" + path.split(separator: "/").dropLast().joined(separator: "/"))
            try FileText.write(text, to: dir + "/" + path)
        }
        func package(_ top: [String], tests: [String]) throws -> String {
            func target(_ name: String, _ type: String, _ dependencies: [String]) -> String {
                "{\"name\": \"\(name)\", \"type\": \"\(type)\", \"dependencies\": ["
                    + dependencies.map { "{\"byName\": [\"\($0)\", null]}" }.joined(separator: ", ") + "]}"
            }
            let json = "{\"targets\": [" + [target("Low", "regular", []), target("Mid", "regular", ["Low"]),
                                              target("Top", "regular", top), target("TopTests", "test", tests)].joined(separator: ", ") + "]}"
            try FileText.write(json, to: dir + "/package.json")
            return dir + "/package.json"
        }
        let good = try python("check-package-edges.py", ["--root", dir, "--dump", try package(["Mid", "Low"], tests: ["Top"])])
        XCTAssertEqual(good.status, 0)
        XCTAssertEqual(good.lines, ["check-package-edges: 4 targets, Package.swift's edges equal their imports"])

        let bad = try python("check-package-edges.py", ["--root", dir, "--dump", try package(["Mid"], tests: ["Top", "Mid"])])
        XCTAssertEqual(bad.status, 1)
        XCTAssertEqual(bad.lines, [
            "check-package-edges: Top: imports Low (Sources/Top/Top.swift) but does not declare it",
            "check-package-edges: TopTests: declares Mid but no file under Tests/TopTests imports it",
            "check-package-edges: 2 differences between Package.swift and the imports",
        ])
    }

    /// tools/check-package-edges.py: a library module the app tests' stand-in
    /// (CoreBluetoothLabTests) depends on must be a library product, else an app's own test
    /// target could not import it; the package's example apps and test support need not be.
    func testPackageEdgesCheckFailsWhenAnAppTestModuleIsNoProduct() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        for (path, text) in [
            ("Sources/Low/Low.swift", "public struct Low {}\n"),
            ("Sources/Lab/Lab.swift", "import Low\n"),
            ("Examples/App/App.swift", "import Lab\n"),
            ("Tests/CoreBluetoothLabTests/T.swift", "import XCTest\nimport Lab\nimport Low\nimport App\n"),
        ] {
            try FileText.makeDirectories(dir + "/" + path.split(separator: "/").dropLast().joined(separator: "/"))
            try FileText.write(text, to: dir + "/" + path)
        }
        func package(products: [String]) throws -> String {
            func target(_ name: String, _ type: String, _ dependencies: [String], path: String? = nil) -> String {
                "{\"name\": \"\(name)\", \"type\": \"\(type)\", \"path\": \(path.map { "\"\($0)\"" } ?? "null"), \"dependencies\": ["
                    + dependencies.map { "{\"byName\": [\"\($0)\", null]}" }.joined(separator: ", ") + "]}"
            }
            let json = "{\"products\": [" + products.map { "{\"name\": \"\($0)\", \"targets\": [\"\($0)\"], \"type\": {\"library\": [\"automatic\"]}}" }
                .joined(separator: ", ") + "], \"targets\": [" + [
                    target("Low", "regular", []), target("Lab", "regular", ["Low"]),
                    target("App", "regular", ["Lab"], path: "Examples/App"),
                    target("CoreBluetoothLabTests", "test", ["Lab", "Low", "App"]),
                ].joined(separator: ", ") + "]}"
            try FileText.write(json, to: dir + "/package.json")
            return dir + "/package.json"
        }
        let good = try python("check-package-edges.py", ["--root", dir, "--dump", try package(products: ["Lab", "Low"])])
        XCTAssertEqual(good.status, 0, good.lines.joined(separator: "\n"))
        let bad = try python("check-package-edges.py", ["--root", dir, "--dump", try package(products: ["Lab"])])
        XCTAssertEqual(bad.status, 1)
        XCTAssertEqual(bad.lines.first, "check-package-edges: CoreBluetoothLabTests: depends on Low, which no library product offers "
                       + "(an app's test target could not import it)")
    }

    /// tools/package-graph.py, `make graph` and part of `make check-edges`: the DOT has the
    /// library and executable targets with the transitive reduction of their edges, rows bottom up,
    /// no tests, test support or plugins, the example apps as one node; --check fails on a DOT that
    /// is not the package's graph and on an SVG not rendered from it.
    func testPackageGraphIsTheReducedGraphAndTheCheckFailsWhenTheDocsAreStale() throws {
        let rules = try rules()
        XCTAssertTrue(try XCTUnwrap(rules["check-edges"]).recipe.contains { $0.contains("tools/package-graph.py --check") })
        XCTAssertTrue(try XCTUnwrap(rules["graph"]).recipe.contains { $0.contains("tools/package-graph.py") })
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        func target(_ name: String, _ type: String, _ dependencies: [String], path: String? = nil) -> String {
            "{\"name\": \"\(name)\", \"type\": \"\(type)\", \"path\": " + (path.map { "\"\($0)\"" } ?? "null")
                + ", \"dependencies\": [" + dependencies.map { "{\"byName\": [\"\($0)\", null]}" }.joined(separator: ", ") + "]}"
        }
        func package(top: [String]) throws -> String {
            let json = "{\"targets\": [" + [
                target("Low", "regular", []), target("Mid", "regular", ["Low"]), target("Top", "regular", top),
                target("tool", "executable", ["Top", "Low"], path: nil), target("Build", "plugin", []),
                target("AppA", "regular", ["Top"], path: "Examples/AppA"), target("AppB", "regular", ["Top", "Mid"], path: "Examples/AppB"),
                target("Support", "regular", ["Top"], path: "Tests/Support"), target("TopTests", "test", ["Support", "Top", "Low"]),
            ].joined(separator: ", ") + "]}"
            try FileText.write(json, to: dir + "/package.json")
            return dir + "/package.json"
        }
        let written = try python("package-graph.py", ["--root", dir, "--dump", try package(top: ["Mid", "Low"]), "--dot", "graph.dot"])
        XCTAssertEqual(written.status, 0, "\(written.lines)")
        let text = try FileText.read(dir + "/graph.dot")
        let arrows = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.contains("->") }
        XCTAssertEqual(arrows, [
            "\"Examples\" -> \"Top\";", "\"Mid\" -> \"Low\";", "\"Top\" -> \"Mid\";", "\"tool\" -> \"Top\";",
        ], "Top → Low, tool → Low and AppB → Mid are implied by longer paths")
        XCTAssertTrue(text.contains("label=\"example apps (2)\\nAppA\\nAppB\""), text)
        for absent in ["TopTests", "Support", "Build", "\"AppA\""] { XCTAssertFalse(text.contains(absent), absent) }
        // Rows from the top: Examples and tool (3 targets down), Top, Mid, Low; one row's names sorted.
        let rows = text.components(separatedBy: "{ rank=same;").dropFirst().map { row in
            row.split(separator: "\n").dropFirst().prefix { $0.hasPrefix("    ") }.map { String($0.split(separator: "\"")[1]) }
        }
        XCTAssertEqual(rows, [["Examples", "tool"], ["Top"], ["Mid"], ["Low"]])

        let mark = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("comment=") }?.split(separator: "\"")[1])
        try FileText.write("<svg>\n<!-- \(mark) -->\n</svg>\n", to: dir + "/graph.svg")
        let check = ["--root", dir, "--dot", "graph.dot", "--svg", "graph.svg", "--check"]
        let good = try python("package-graph.py", check + ["--dump", try package(top: ["Mid", "Low"])])
        XCTAssertEqual(good.status, 0, "\(good.lines)")
        XCTAssertEqual(good.lines, ["package-graph: graph.dot and graph.svg show Package.swift's graph"])

        // Top imports Low directly now and not Mid: another graph, so both files are stale.
        let stale = try python("package-graph.py", check + ["--dump", try package(top: ["Low"])])
        XCTAssertEqual(stale.status, 1)
        XCTAssertEqual(stale.lines, [
            "package-graph: graph.dot is not the graph of Package.swift; run make graph",
            "package-graph: graph.svg was not rendered from the graph of Package.swift; run make graph",
        ])
    }

    func testSoakReportCountsFlakyTestsAndScenarioFlakes() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let run1 = try xunit([("testSteady", true), ("testFlaky", true), ("testBroken", false)], in: dir, "run-1.xml")
        let run2 = try xunit([("testSteady", true), ("testFlaky", false), ("testBroken", false)], in: dir, "run-2.xml")
        func pass(_ name: String, _ failedSeed: Int?) throws -> String {
            var xml = "<testsuites name=\"blelab\"><testsuite name=\"blelab.sim\">"
            for seed in 42...43 {
                xml += "<testcase name=\"Echo (run \(seed - 41) of 2, seed \(seed))\" classname=\"scenarios.echo\" time=\"1\">"
                if seed == failedSeed { xml += "<failure message=\"m\" type=\"expectation\">d</failure>" }
                xml += "</testcase>"
            }
            xml += "</testsuite></testsuites>"
            try FileText.write(xml, to: dir + "/" + name)
            return dir + "/" + name
        }
        let r = try python("soak-report.py", ["--tests", run1, run2, "--scenarios", try pass("pass-1.xml", nil), try pass("pass-2.xml", 43)])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(Array(r.lines.suffix(3)), ["flaky_tests: 1", "failing_tests: 1", "scenario_flakes: 1"])
        XCTAssertTrue(r.lines.contains("  flaky: T.C.testFlaky (failed in 1 of 2 runs)"), "\(r.lines)")
        XCTAssertTrue(r.lines.contains("  flake: Echo (scenarios.echo) seed 43: passed, failed"), "\(r.lines)")

        let steady = try xunit([("testSteady", true)], in: dir, "run-3.xml")
        let clean = try python("soak-report.py", ["--tests", steady, steady, "--scenarios", try pass("pass-3.xml", nil), try pass("pass-4.xml", nil)])
        XCTAssertEqual(Array(clean.lines.suffix(3)), ["flaky_tests: 0", "failing_tests: 0", "scenario_flakes: 0"])
        XCTAssertEqual(clean.status, 0)
        let failing = try python("soak-report.py", ["--tests", run1, run1, "--scenarios", try pass("pass-5.xml", nil)])
        XCTAssertEqual(Array(failing.lines.suffix(3)), ["flaky_tests: 0", "failing_tests: 1", "scenario_flakes: 0"])
        XCTAssertEqual(failing.status, 1, "a test failing in every run fails the soak too")
    }
}

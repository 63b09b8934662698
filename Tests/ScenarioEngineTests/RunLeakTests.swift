import BLELab
import BLELabCLI
import ScenarioEngine
import ScenarioFormat
import XCTest

/// A run lets go of everything it made: once its result is gone, its lab is (and with it the
/// devices, hosts, controllers and the air). Otherwise every scenario of a long suite, and every
/// `--repeat`, would keep its lab for the rest of the process. A closure the central's seat
/// kept, holding the seat, once kept every run's lab alive.
final class RunLeakTests: XCTestCase {
    /// The sim, noting (weakly) each lab it makes.
    private final class Labs {
        var made: [Weak] = []
        struct Weak { weak var lab: Lab? }
    }

    private struct NotingBackend: ScenarioBackend {
        let labs: Labs
        var tier: TransportTier { SimBackend().tier }
        func makeLab(seed: UInt64) throws -> Lab {
            let lab = try SimBackend().makeLab(seed: seed)
            labs.made.append(.init(lab: lab))
            return lab
        }
    }

    private static var root: String {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/ScenarioEngineTests/RunLeakTests.swift
        return parts.joined(separator: "/")
    }

    /// Every scenario of scenarios/ that runs on the sim, with every report kept (timeline,
    /// captures, air): no lab outlives its result.
    func testEveryScenarioLetsGoOfItsLab() throws {
        let (files, errors) = ScenarioFiles.collect([Self.root + "/scenarios"])
        XCTAssertEqual(errors.count, 0)
        let (scenarios, loadErrors) = ScenarioFiles.load(files)
        XCTAssertEqual(loadErrors.count, 0)
        XCTAssertGreaterThan(scenarios.count, 50)
        var options = RunOptions(keepsCaptures: true, recordsTimeline: true)
        options.capturesAir = true
        var ran = 0
        for scenario in scenarios {
            let labs = Labs()
            do {
                let result = ScenarioRunner(backend: NotingBackend(labs: labs)).run(scenario, options: options)
                if labs.made.isEmpty { continue }   // skipped: needs another tier
                ran += 1
                XCTAssertNotEqual(result.verdict, "", scenario.file)
            }
            XCTAssertEqual(labs.made.filter { $0.lab != nil }.count, 0, "\(scenario.file): its lab outlived its result")
        }
        XCTAssertGreaterThan(ran, 50)
    }
}

import BLELab
import BLERuntime
import LabTiers
import ScenarioEngine
import XCTest

/// Scans on RootCanal get the sim's verdicts, run after run (docs/tiers.md, "Advertisers in
/// lockstep"). RootCanal 1.10.0 adds no advDelay to advertising events and sends one SCAN_REQ
/// at a time: peripherals enabled within one 5 ms tick of its model stayed in that tick for
/// ever, and only the first of them in its device list was ever scanned. In
/// scan-filter-excludes-others a device that lists its service only in its scan response was
/// then never found: 3 to 6 runs in 8 failed.
final class CrossTierScanTests: TierTestCase {
    static let scanFilter = "scenarios/regressions/scan-filter-excludes-others.yaml"

    func testTheServiceFilteredScanPassesEveryRunOnRootCanal() throws {
        let scenario = try XCTUnwrap(Tiers.scenarios([Self.scanFilter]).first)
        let backend = try Tiers.backend("rootcanal")
        try backend.prepare(deviceCount: scenario.peripherals.count + 1)
        defer { backend.shutDown() }
        let runner = ScenarioRunner(backend: backend)
        var failures: [String] = []
        for seed in UInt64(10)..<20 {
            let result = runner.run(scenario, options: RunOptions(seed: seed))
            if let failure = result.failure { failures.append("seed \(seed): \(failure.expected); seen \(failure.seen)") }
        }
        XCTAssertEqual(failures, [], "10 runs on RootCanal, every one as on the sim")
    }

    /// Only RootCanal's controllers get intervals a tick apart: Bumble's lab controllers carry
    /// the scan response with the advertisement, and nothing is known of other H4 endpoints.
    func testOnlyRootCanalsPeripheralsGetStaggeredIntervals() throws {
        XCTAssertEqual(try Tiers.backend("rootcanal").advertisingIntervalStagger, .milliseconds(5))
        XCTAssertEqual(try Tiers.backend("rootcanal:127.0.0.1:6402").advertisingIntervalStagger, .milliseconds(5))
        XCTAssertEqual(try Tiers.backend("bumble").advertisingIntervalStagger, .zero)
        XCTAssertEqual(try Tiers.backend("h4:127.0.0.1:6402").advertisingIntervalStagger, .zero)
    }
}

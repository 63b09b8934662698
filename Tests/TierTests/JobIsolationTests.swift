import BLELab
import BLELabCLI
import BLERuntime
import Foundation
import LabTiers
import ScenarioEngine
import ScenarioFormat
import XCTest

/// `blelab run --jobs` on real controllers: scenarios run at the same time never hear each other
/// (docs/tiers.md, "Scenarios in parallel"). The two scan-hears-only-its-lab scenarios advertise
/// the same service under their own names and expect their scans to find their own peripheral
/// and nothing else (`only-discovered`). A rendezvous in front of the backends holds each job's
/// first lab until the other's is made too, so the two scans overlap for certain, not by luck of
/// timing. Then, as the control, the same two at once on one RootCanal: each hears the other's
/// peripheral and fails, which is what the scenarios are there to catch.
final class JobIsolationTests: TierTestCase {
    static let scenarios = ["scenarios/regressions/scan-hears-only-its-lab-a.yaml", "scenarios/regressions/scan-hears-only-its-lab-b.yaml"]

    /// Holds `makeLab` until `parties` labs have been asked for, then lets them all go; a party
    /// that waits 30 s in vain is a failure of the test (the jobs did not run together).
    final class Rendezvous {
        let parties: Int
        let condition = NSCondition()
        var arrived = 0
        var missed = false

        init(parties: Int) { self.parties = parties }

        func meet() {
            condition.lock()
            defer { condition.unlock() }
            arrived += 1
            condition.broadcast()
            let deadline = Date(timeIntervalSinceNow: 30)
            while arrived < parties {
                if !condition.wait(until: deadline) {
                    missed = true
                    return
                }
            }
        }
    }

    /// A backend in front of a real one: its jobs meet at `rendezvous` before their first lab.
    /// `oneAir`: every job gets the same backend (one RootCanal): the control.
    final class MeetingBackend: ScenarioBackend {
        let inner: ScenarioBackend
        let rendezvous: Rendezvous
        let oneAir: Bool
        private let lock = NSLock()
        private var met = false
        private var prepared = false

        init(_ inner: ScenarioBackend, rendezvous: Rendezvous, oneAir: Bool = false) {
            self.inner = inner
            self.rendezvous = rendezvous
            self.oneAir = oneAir
        }

        var tier: TransportTier { inner.tier }
        var description: String { inner.description }
        var advertisingIntervalStagger: TimeSpan { inner.advertisingIntervalStagger }

        func prepare(deviceCount: Int) throws {
            lock.lock()
            defer { lock.unlock() }
            guard !prepared else { return }   // the control's jobs share one backend: start it once
            prepared = true
            try inner.prepare(deviceCount: deviceCount)
        }

        func makeLab(seed: UInt64) throws -> Lab {
            let first: Bool = lock.withLock {
                defer { met = true }
                return !met
            }
            if first || oneAir { rendezvous.meet() }
            return try inner.makeLab(seed: seed)
        }

        func shutDown() { inner.shutDown() }

        func jobBackends(_ jobs: Int, deviceCount: Int) -> JobBackends {
            if oneAir {
                return JobBackends(Array(repeating: self, count: jobs))
            }
            let split = inner.jobBackends(jobs, deviceCount: deviceCount)
            return JobBackends(split.backends.map { MeetingBackend($0, rendezvous: rendezvous) }, note: split.note)
        }
    }

    private func run(_ transport: String, oneAir: Bool = false) throws -> (status: BLELabCLI.Status, out: String, err: String, missed: Bool) {
        let rendezvous = Rendezvous(parties: 2)
        var out = "", err = ""
        let console = Console(out: { out += $0 }, err: { err += $0 }, isTerminal: false, environment: [:])
        let transports = TransportOffer(backend: { value in
            let backend = try TransportCatalog.backend(for: value, environment: Tiers.environment)
            (backend as? RealControllerBackend)?.log = { err += "blelab: \($0)\n" }   // as blelab does (main.swift)
            return backend.map { MeetingBackend($0, rendezvous: rendezvous, oneAir: oneAir) }
        })
        let status = BLELabCLI(console: console, transports: transports)
            .main(["run", "--jobs", "2", "--transport", transport] + Self.scenarios.map { Tiers.root + "/" + $0 })
        return (status, out, err, rendezvous.missed)
    }

    private func assertEachHeardOnlyItsOwnLab(_ transport: String) throws {
        let helpers = Tiers.runningHelpers
        let (status, out, err, missed) = try run(transport)
        XCTAssertFalse(missed, "the two jobs ran at the same time")
        XCTAssertEqual(status, .passed, out + err)
        XCTAssertTrue(out.contains("PASS A scan hears only its own lab (A)"), out)
        XCTAssertTrue(out.contains("PASS A scan hears only its own lab (B)"), out)
        XCTAssertTrue(out.contains("2 passed, 0 failed (2 runs)"), out)
        XCTAssertEqual(err.components(separatedBy: "blelab: started ").count - 1, 2, "a helper per job:\n\(err)")
        XCTAssertEqual(Tiers.runningHelpers, helpers, "both helpers stopped")
    }

    func testTwoJobsOnRootCanalEachHearOnlyTheirOwnLab() throws {
        try assertEachHeardOnlyItsOwnLab("rootcanal")
    }

    func testTwoJobsOnBumbleEachHearOnlyTheirOwnLab() throws {
        try assertEachHeardOnlyItsOwnLab("bumble")
    }

    /// The control: the same two at once on one RootCanal, one air. Each scan hears both
    /// peripherals, and each scenario fails on `only-discovered`, naming the other device.
    func testOnOneAirTheyHearEachOtherAndFail() throws {
        let (status, out, err, missed) = try run("rootcanal", oneAir: true)
        XCTAssertFalse(missed, "the two jobs ran at the same time")
        XCTAssertEqual(status, .failed, out + err)
        XCTAssertTrue(out.contains("FAIL A scan hears only its own lab (A)"), out)
        XCTAssertTrue(out.contains("FAIL A scan hears only its own lab (B)"), out)
        XCTAssertTrue(out.contains("expected: the last scan discovered beacon-a and nothing else"), out)
        XCTAssertTrue(out.contains("and 1 other device(s)"), out)
    }
}

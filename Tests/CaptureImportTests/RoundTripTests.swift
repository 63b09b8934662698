import BLELab
import BLEWire
import CaptureImport
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// Every scenario in scenarios/ (the folder is read at test time, so files added later are
/// covered), run with captures; the central's capture imported; the imported scenario run: it must
/// pass, and the database its run discovers must equal the original's, handles included.
///
/// No scenario is excluded: those that need the sim's faults (`requires: [sim]`: link loss,
/// power-off, loss, latency, a dropped Write Response) round-trip too, as the capture shows their
/// effect — a disconnection by supervision timeout, a late or missing answer — and the imported
/// scenario reproduces that effect with a link-loss, a power-off or the peripheral's `flaws:`
/// (docs/import.md). FlawRoundTripTests checks that each comes back with its timing.
final class RoundTripTests: XCTestCase {
    func testEveryScenarioRoundTripsThroughItsCentralCapture() throws {
        let files = repositoryScenarioFiles()
        XCTAssertGreaterThanOrEqual(files.count, 13, "scenarios/ should hold the seeds and regressions")
        for file in files { try roundTrip(try Scenario.load(path: file), file: file) }
        print("round trip: \(files.count) scenarios imported and replayed, none skipped")
    }

    private func roundTrip(_ original: Scenario, file: String) throws {
        let first = runWithCaptures(original)
        XCTAssertTrue(first.passed, "\(file) itself failed: \(first.failure?.report() ?? "")")
        let capture = try centralCapture(first)
        let (imported, scenario) = try importAndLoad(capture, source: String(file.split(separator: "/").last ?? ""))
        let replay = runWithCaptures(scenario)
        XCTAssertTrue(replay.passed, "the scenario imported from \(file) fails:\n\(replay.failure?.report() ?? "")\n\(imported.yaml)")

        // The replay's own central capture, read the same way.
        let again = try CaptureImporter.importCapture(try centralCapture(replay), source: "replay")
        XCTAssertEqual(again.transcript.connections.count, imported.transcript.connections.count, file)
        for (i, session) in imported.sessions.enumerated() where i < again.sessions.count {
            XCTAssertEqual(again.sessions[i].database, session.database,
                           "\(file): connection \(i + 1): the replay discovered another database (handles, UUIDs, properties, descriptors)")
        }

        // The imported peripherals' declared services against the original's, for what was discovered.
        // A connect expected to give no connection (`connect-failed`) leaves none in the capture,
        // and comes back as such a connect.
        let originalConnects = Self.establishingConnects(original)
        let importedConnects = Self.establishingConnects(scenario)
        XCTAssertEqual(Self.failingConnects(scenario), Self.failingConnects(original), "\(file): connects that give no connection")
        XCTAssertEqual(importedConnects.count, originalConnects.count, "\(file): connections")
        for (i, session) in imported.sessions.enumerated() where i < min(originalConnects.count, importedConnects.count) {
            let o = try XCTUnwrap(original.peripheral(originalConnects[i]))
            let m = try XCTUnwrap(scenario.peripheral(importedConnects[i]))
            let discovered = Set(session.database.services.map(\.uuid))
            let all = session.operations.contains { op in
                if case .discover(true, _) = op.kind { return true }
                return false
            }
            // A database that changes while connected (add-service, then Service Changed) changes
            // in the imported scenario too: what it declares and what it adds, together.
            let everything = o.services + Self.addedServices(original, peripheral: o.id).filter { s in !o.services.contains { $0.uuid == s.uuid } }
            let expected = everything.filter { all || discovered.contains($0.uuid) }
            let mine = m.services + Self.addedServices(scenario, peripheral: m.id).filter { s in !m.services.contains { $0.uuid == s.uuid } }
            XCTAssertEqual(describe(mine), describe(expected), "\(file): \(o.id) as imported (\(m.id))")
            // A private address (a peripheral with `privacy:`) comes back as the static one with
            // the same octets and the two top bits set (docs/import.md).
            let peer = imported.transcript.connections[i].peer
            let declared = peer.type == .random && !peer.address.isValidRandomStatic
                ? LEAddress(BDAddr(rawValue: peer.address.rawValue | 0xC000_0000_0000), type: .random) : peer
            XCTAssertEqual(m.address, declared, "\(file): \(m.id)'s address")
        }
    }

    /// The peripherals of the scenario's `connect` steps, in order, that an `expect: { connect-failed }`
    /// does not follow (or that one does).
    static func establishingConnects(_ scenario: Scenario, failing: Bool = false) -> [String] {
        scenario.steps.enumerated().compactMap { i, step -> String? in
            guard case let .connect(p, _) = step.action else { return nil }
            let failed = scenario.steps[(i + 1)...].prefix { $0.isExpectation }.contains { next in
                if case .expect(.interruption(.connectFailed)) = next.action { return true }
                return false
            }
            return failed == failing ? p : nil
        }
    }

    static func failingConnects(_ scenario: Scenario) -> Int { establishingConnects(scenario, failing: true).count }

    /// The services `add-service` actions give the peripheral, anywhere in the scenario.
    static func addedServices(_ scenario: Scenario, peripheral id: String) -> [ServiceSpec] {
        var lists: [[PeripheralAction]] = []
        if let p = scenario.peripheral(id) {
            lists += [p.onConnect, p.onDisconnect]
            for (_, c) in p.characteristics { lists += [c.onWrite, c.onRead, c.onSubscribe, c.onUnsubscribe] }
        }
        for step in scenario.steps {
            if case let .peripheralActions(groups) = step.action { lists += groups.filter { $0.peripheral == id }.map(\.actions) }
        }
        return lists.joined().compactMap { action in
            if case let .addService(s) = action { return s }
            return nil
        }
    }

    /// Services as (UUID, characteristics with properties and extra descriptors), for comparison.
    private func describe(_ services: [ServiceSpec]) -> [String] {
        services.map { s in
            "\(s.uuid): " + s.characteristics.map { c in
                "\(c.uuid) \(c.properties.rawValue) \(c.descriptors.map(\.uuid))"
            }.joined(separator: "; ")
        }
    }

    /// Each peripheral's own capture, imported (the capturing host becomes the peripheral), replays
    /// too, and the database its replay discovers is the one the original central discovered.
    func testEveryPeripheralsCaptureImportsAndReplays() throws {
        var checked = 0
        for file in repositoryScenarioFiles() {
            let original = try Scenario.load(path: file)
            let first = runWithCaptures(original)
            let centralSessions = try CaptureImporter.importCapture(try centralCapture(first), source: "central").sessions
            for capture in first.captures.dropLast() {
                let (imported, scenario) = try importAndLoad(BTSnoopWriter.encode(capture.packets), source: "\(capture.device).btsnoop")
                let replay = runWithCaptures(scenario)
                XCTAssertTrue(replay.passed, "\(file), \(capture.device)'s capture:\n\(replay.failure?.report() ?? "")\n\(imported.yaml)")
                let discovered = try CaptureImporter.importCapture(try centralCapture(replay), source: "replay").sessions.map(\.database)
                for (i, session) in imported.sessions.enumerated() where i < discovered.count {
                    // The same connection seen from the original central, matched by its database's services.
                    let match = centralSessions.contains { $0.database.services.map(\.uuid) == session.database.services.map(\.uuid) }
                    XCTAssertTrue(match || session.database.services.isEmpty, "\(file), \(capture.device)")
                    XCTAssertEqual(discovered[i], session.database, "\(file), \(capture.device): the replay discovered another database")
                }
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 21)
    }

    /// Imports are deterministic: the same capture gives the same scenario text.
    func testTheSameCaptureGivesTheSameScenario() throws {
        let capture = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/ble-scanner.yaml")))
        let a = try CaptureImporter.importCapture(capture, source: "x").yaml
        let b = try CaptureImporter.importCapture(capture, source: "x").yaml
        XCTAssertEqual(a, b)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import BLELab
import BLELabCLI
import BLERuntime
import LabTiers
import Transport
import XCTest

/// `--transport` values: what each one makes, what a malformed one says, and the CLI around them.
final class TransportCatalogTests: XCTestCase {
    private func source(_ value: String) throws -> RealControllerBackend.Source? { try TransportCatalog.source(for: value) }

    private func error(_ value: String) -> String {
        do {
            _ = try TransportCatalog.source(for: value)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testEachValueNamesItsSource() throws {
        XCTAssertEqual(try source("rootcanal"), .rootCanal(nil))
        XCTAssertEqual(try source("rootcanal:127.0.0.1:6402"), .rootCanal(.tcp(host: "127.0.0.1", port: 6402)))
        XCTAssertEqual(try source("rootcanal:tcp:localhost:6402"), .rootCanal(.tcp(host: "localhost", port: 6402)))
        XCTAssertEqual(try source("bumble"), .bumble(unixSockets: false))
        XCTAssertEqual(try source("bumble:unix"), .bumble(unixSockets: true))
        XCTAssertEqual(try source("h4:tcp:127.0.0.1:9000,unix:/tmp/c1.sock,localhost:9002"),
                       .endpoints([.tcp(host: "127.0.0.1", port: 9000), .unix(path: "/tmp/c1.sock"), .tcp(host: "localhost", port: 9002)]))
        XCTAssertEqual(try source("hci-user:0,1,hci2"), .userChannel([0, 1, 2]))
        XCTAssertNil(try source("sim"))
        XCTAssertNil(try source("vhci"))
        XCTAssertTrue(try TransportCatalog.backend(for: "sim") is SimBackend)
        XCTAssertNil(try TransportCatalog.backend(for: "nope"))
    }

    func testTiers() throws {
        XCTAssertEqual(try TransportCatalog.backend(for: "rootcanal")?.tier, .socket)
        XCTAssertEqual(try TransportCatalog.backend(for: "bumble")?.tier, .socket)
        XCTAssertEqual(try TransportCatalog.backend(for: "h4:127.0.0.1:1")?.tier, .socket)
        XCTAssertEqual(try TransportCatalog.backend(for: "hci-user:0")?.tier, .vhci)
        XCTAssertEqual(try TransportCatalog.backend(for: "sim")?.tier, .sim)
    }

    func testMalformedValuesSayHowToWriteThem() {
        XCTAssertEqual(error("rootcanal:6402"), "'rootcanal:6402': expected tcp:HOST:PORT, unix:PATH or HOST:PORT; write rootcanal:HOST:PORT, as in rootcanal:127.0.0.1:6402")
        XCTAssertEqual(error("rootcanal:unix:/tmp/x"), "'rootcanal:unix:/tmp/x': RootCanal serves TCP: write rootcanal:HOST:PORT, as in rootcanal:127.0.0.1:6402")
        XCTAssertEqual(error("bumble:9000"), "'bumble:9000': bumble takes no address ('9000'): blelab starts the controllers; write bumble or bumble:unix")
        XCTAssertEqual(error("h4:"), "'h4:': h4 needs endpoints, one per device: h4:tcp:127.0.0.1:9000,unix:/tmp/c1.sock")
        XCTAssertEqual(error("h4:127.0.0.1:1,oops"), "'h4:127.0.0.1:1,oops': endpoint 2: 'oops' is not a socket endpoint: expected tcp:HOST:PORT, unix:PATH or HOST:PORT")
        XCTAssertEqual(error("hci-user:x"), "'hci-user:x': 'x' is not a controller number (0 for hci0)")
    }

    func testDescriptions() throws {
        XCTAssertEqual(try TransportCatalog.backend(for: "rootcanal:127.0.0.1:6402")?.description, "RootCanal at tcp 127.0.0.1:6402")
        XCTAssertEqual(try TransportCatalog.backend(for: "rootcanal")?.description, "RootCanal 1.10.0 (started by blelab)")
        XCTAssertEqual(try TransportCatalog.backend(for: "h4:127.0.0.1:1,unix:/x")?.description, "H4 sockets tcp 127.0.0.1:1, unix /x")
        XCTAssertEqual(try TransportCatalog.backend(for: "hci-user:0,1")?.description, "HCI user channel on hci0, hci1")
    }

    // MARK: Through the CLI (blelab run --transport …)

    private func cli(_ arguments: [String], environment: TierEnvironment = Tiers.environment) -> (BLELabCLI.Status, String, String) {
        var out = "", err = ""
        let console = Console(out: { out += $0 }, err: { err += $0 }, isTerminal: false, environment: [:])
        let cli = BLELabCLI(console: console, transports: Tiers.transports(environment: environment))
        let status = cli.main(arguments)
        return (status, out, err)
    }

    func testTooFewEndpointsRunNothing() {
        let (status, out, err) = cli(["run", "--transport", "h4:127.0.0.1:1,127.0.0.1:2", Tiers.root + "/scenarios/regressions/scan-filter-excludes-others.yaml"])
        XCTAssertEqual(status, .badInput)
        XCTAssertEqual(out, "")
        XCTAssertEqual(err, "blelab: H4 sockets tcp 127.0.0.1:1, tcp 127.0.0.1:2 could not start: h4: 2 endpoint(s) given, but the selected "
                       + "scenarios need up to 5 devices (the peripherals and the central; one endpoint per device, in order)\nblelab: nothing was run\n")
    }

    func testAMissingVenvSaysToMakeIt() {
        let environment = TierEnvironment(root: Tiers.root, buildDirectory: "/nonexistent/build")
        let (status, _, err) = cli(["run", "--transport", "rootcanal", Tiers.root + "/scenarios/seeds/hm10-serial.yaml"], environment: environment)
        XCTAssertEqual(status, .badInput)
        XCTAssertEqual(err, "blelab: RootCanal 1.10.0 (started by blelab) could not start: no Python venv at /nonexistent/build/venv "
                       + "(RootCanal 1.10.0 and Bumble 0.0.236 are installed there): run 'make venv' (tools/setup-venv.sh) in \(Tiers.root) first\n"
                       + "blelab: nothing was run\n")
        let (bumbleStatus, _, bumbleErr) = cli(["run", "--transport", "bumble", Tiers.root + "/scenarios/seeds/hm10-serial.yaml"], environment: environment)
        XCTAssertEqual(bumbleStatus, .badInput)
        XCTAssertTrue(bumbleErr.contains("could not start: no Python venv at /nonexistent/build/venv"), bumbleErr)
    }

    func testAnUnknownTransportListsWhatThisBuildOffers() {
        var err = ""
        let console = Console(out: { _ in }, err: { err += $0 }, isTerminal: false, environment: [:])
        let status = BLELabCLI(console: console, transports: Tiers.transports()).main(["run", "--transport", "vhci"])
        XCTAssertEqual(status, .badInput)
        XCTAssertEqual(err, "blelab: transport vhci is not available (this build offers: sim, rootcanal[:HOST:PORT], bumble[:unix], "
                       + "h4:EP,EP,…, hci-user:N,N,…[/…])\nblelab: nothing was run\n")
    }

    func testHCIUserChannelOnAKernelWithoutBluetoothFailsTheSetupSayingSo() throws {
        // These machines' kernel has no Bluetooth: opening hci0's user channel fails with a reason.
        let (status, out, _) = cli(["run", "--transport", "hci-user:0,1", Tiers.root + "/scenarios/seeds/hm10-with-write.yaml"])
        XCTAssertEqual(status, .failed)
        XCTAssertTrue(out.contains("FAIL Serial app uses Write Request when the module offers write"), out)
        XCTAssertTrue(out.contains("no controller for clone from HCI user channel on hci0, hci1: hci0 (HCI user channel): "), out)
    }

    // MARK: --jobs: controllers of its own for each job

    func testHCIUserGroupsAreAirsOfTheirOwn() throws {
        let backend = try XCTUnwrap(TransportCatalog.backend(for: "hci-user:0,1,2/3,4,5/6,7") as? RealControllerBackend)
        XCTAssertEqual(backend.source, .userChannel([0, 1, 2]), "one job uses the first group alone: one air")
        XCTAssertEqual(backend.otherAirs, [.userChannel([3, 4, 5]), .userChannel([6, 7])])
        let split = backend.jobBackends(4, deviceCount: 3)
        XCTAssertEqual(split.backends.compactMap { ($0 as? RealControllerBackend)?.source }, [.userChannel([0, 1, 2]), .userChannel([3, 4, 5])])
        XCTAssertEqual(split.note, "3 groups of controllers given, 2 with the 3 the scenarios need: 2 at a time")
        XCTAssertEqual(backend.jobBackends(2, deviceCount: 2).backends.count, 2)
        XCTAssertNil(backend.jobBackends(2, deviceCount: 2).note)
        XCTAssertThrowsError(try TransportCatalog.backend(for: "hci-user:0,1/")) { error in
            XCTAssertEqual("\(error)", "'hci-user:0,1/': group 2 is empty: groups of controllers are separated by one '/', as in hci-user:0,1/2,3")
        }
        XCTAssertThrowsError(try TransportCatalog.backend(for: "hci-user:0/x")) { error in
            XCTAssertEqual("\(error)", "'hci-user:0/x': group 2: 'x' is not a controller number (0 for hci0)")
        }
    }

    func testWhatCannotBeSplitRunsOneAtATime() throws {
        let oneGroup = try Tiers.backend("hci-user:0,1,2,3").jobBackends(2, deviceCount: 2)
        XCTAssertEqual(oneGroup.backends.count, 1)
        XCTAssertEqual(oneGroup.note, "hci-user names one group of controllers, and btvirt puts all of its controllers on one air: give a "
                       + "group per job, each from a btvirt of its own, separated by '/', such as hci-user:0,1/2,3 (vm/guest-run.sh -g J "
                       + "makes them); one scenario at a time")
        let running = try Tiers.backend("rootcanal:127.0.0.1:6402").jobBackends(3, deviceCount: 2)
        XCTAssertEqual(running.backends.count, 1)
        XCTAssertTrue(running.note?.hasPrefix("every device on one running RootCanal shares its one air") == true, running.note ?? "")
        XCTAssertEqual(try Tiers.backend("h4:127.0.0.1:1,127.0.0.1:2").jobBackends(2, deviceCount: 1).backends.count, 1)
        for transport in ["rootcanal", "bumble", "bumble:unix"] {
            let backend = try Tiers.backend(transport)
            let split = backend.jobBackends(3, deviceCount: 5)
            XCTAssertNil(split.note)
            let parts = split.backends.compactMap { $0 as? RealControllerBackend }
            XCTAssertEqual(parts.count, 3, transport)
            XCTAssertEqual(Set(parts.map { ObjectIdentifier($0) }).count, 3, "\(transport): a process of its own per job")
            XCTAssertTrue(parts.allSatisfy { $0.source == backend.source }, transport)
        }
    }

    func testHelpListsTheTransports() {
        let text = Help.run(transports: Tiers.transports())
        for value in ["sim ", "rootcanal ", "rootcanal:HOST:PORT", "bumble ", "bumble:unix", "h4:EP,EP,…", "hci-user:N,N,…"] {
            XCTAssertTrue(text.contains("\n                     \(value)"), "\(value) in:\n\(text)")
        }
    }
}

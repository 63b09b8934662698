import BLELab
import BLELabCLI
import BLERuntime
import Foundation
import LabTiers
import ScenarioEngine
import Transport
import WireTestSupport
import XCTest

/// Captures written by `blelab run --capture` on RootCanal and on Bumble's controllers open in
/// tshark with the ATT operations decoded — the same operations, directions and times our own
/// reader finds. Without tshark the captures are still checked with BTSnoopReader.
final class TierCaptureTests: TierTestCase {
    static let scenarios = ["scenarios/seeds/hm10-serial.yaml", "scenarios/seeds/hm10-with-write.yaml"]

    /// `blelab run` in process, with `transport`; returns the status and the console text.
    static func runCLI(_ arguments: [String], transport: String) -> (status: BLELabCLI.Status, out: String, err: String) {
        var out = "", err = ""
        let console = Console(out: { out += $0 }, err: { err += $0 }, isTerminal: false, environment: [:])
        let cli = BLELabCLI(console: console, wallClock: { Instant(nanoseconds: Int64(WallClock.seconds() * 1e9)) },
                            transports: Tiers.transports(environment: Tiers.environment))
        let status = cli.main(["run", "--transport", transport] + arguments)
        return (status, out, err)
    }

    /// An ATT PDU in a capture, as our reader sees it.
    struct ATTFrame: Equatable {
        var microseconds: Int64
        var sent: Bool
        var opcode: UInt8
        var handle: UInt16
    }

    static func attFrames(_ path: String) throws -> [ATTFrame] {
        let file = try BTSnoopReader.read(path: path)
        let log = PacketLog()
        let traffic = ATTTraffic(log: log)
        for packet in file.loggedPackets() { log.record(packet) }
        return traffic.records.map { ATTFrame(microseconds: $0.time.nanoseconds / 1_000, sent: $0.wasSent, opcode: $0.bytes[0], handle: $0.connectionHandle) }
    }

    func testRootCanalCapturesOpenInTsharkWithTheATTOperations() throws {
        try capturesOpenInTshark(transport: "rootcanal", connectionHandle: 0x0EFE)
    }

    func testBumbleCapturesOpenInTsharkWithTheATTOperations() throws {
        try capturesOpenInTshark(transport: "bumble", connectionHandle: 0x0001)
    }

    private func capturesOpenInTshark(transport: String, connectionHandle: UInt16) throws {
        let dir = try temporaryDirectory(self) + "/captures"
        let run = Self.runCLI(["--capture", dir] + Self.scenarios.map { Tiers.root + "/" + $0 }, transport: transport)
        XCTAssertEqual(run.status, .passed, run.out + run.err)
        let tshark = TestTools.executableOnPath("tshark")
        if tshark == nil { print("TierCaptureTests: tshark is not on PATH; the captures were checked with BTSnoopReader only") }

        for (scenario, peripheral) in [("hm10-serial", "hm10"), ("hm10-with-write", "clone")] {
            for device in ["central", peripheral] {
                let path = "\(dir)/\(scenario).\(device).btsnoop"
                let ours = try Self.attFrames(path)
                // What the scenarios do, in our own reader: discovery, the CCCD write, the write
                // under test, the echo by notification.
                let opcodes = Set(ours.map(\.opcode))
                XCTAssertTrue(opcodes.isSuperset(of: [0x52, 0x12, 0x13, 0x1B, 0x08, 0x09, 0x04, 0x05]), "\(path): \(ours)")
                XCTAssertTrue(opcodes.contains(0x10) || opcodes.contains(0x06), "\(path): primary service discovery")
                XCTAssertEqual(Set(ours.map(\.handle)), [connectionHandle], "\(path): the controller's connection handle")
                let writes = ours.filter { $0.sent == (device == "central") && [0x12, 0x52].contains($0.opcode) }.map(\.opcode)
                XCTAssertEqual(writes, scenario == "hm10-serial" ? [0x12, 0x52] : [0x12, 0x12, 0x52],
                               "\(path): the CCCD Write Request, then the scenario's writes")
                guard let tshark else { continue }

                let att = try TestTools.runTool(tshark, ["-r", path, "-Y", "btatt", "-T", "fields", "-E", "separator=|",
                                               "-e", "frame.time_epoch", "-e", "hci_h4.direction", "-e", "btatt.opcode", "-e", "bthci_acl.chandle"])
                XCTAssertEqual(att.status, 0, path)
                let rows = att.output.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
                XCTAssertEqual(rows.map { $0.count == 4 ? $0[2] : "?" }, ours.map { String(format: "0x%02x", $0.opcode) },
                               "\(path): tshark's ATT opcodes, in order, are ours")
                XCTAssertEqual(rows.map { $0.count == 4 ? $0[1] : "?" }, ours.map { $0.sent ? "0x00" : "0x01" }, "\(path): directions")
                XCTAssertEqual(Set(rows.map { $0.count == 4 ? $0[3] : "?" }), [String(format: "0x%04x", connectionHandle)], path)
                XCTAssertEqual(rows.map { Self.microseconds(epoch: $0.first ?? "") }, ours.map { 946_684_800_000_000 + $0.microseconds },
                               "\(path): 2000-01-01 + the lab's (real-time) clock")

                // tshark's names for the operations the scenarios are about.
                let text = try TestTools.runTool(tshark, ["-r", path, "-Y", "btatt"]).output
                for name in ["Write Request", "Write Response", "Write Command", "Handle Value Notification", "Read By Type Request"] {
                    XCTAssertTrue(text.contains(name), "\(path): tshark shows no \(name):\n\(text)")
                }
                // No frame malformed or flagged.
                let flagged = try TestTools.runTool(tshark, ["-r", path, "-Y", "_ws.malformed || _ws.expert.severity >= warning"]).output
                XCTAssertEqual(flagged, "", "\(path): malformed or flagged frames")
            }
        }
    }

    /// `946684801.063305000` → 946684801063305.
    static func microseconds(epoch: String) -> Int64 {
        let parts = epoch.split(separator: ".")
        guard parts.count == 2, let seconds = Int64(parts[0]) else { return -1 }
        let fraction = String(parts[1].prefix(6))
        return seconds * 1_000_000 + (Int64(fraction + String(repeating: "0", count: 6 - fraction.count)) ?? -1)
    }

    // MARK: The other socket transports

    /// `rootcanal:HOST:PORT` (one already running) and `h4:EP,EP` (here: that same port once per
    /// device) run a scenario like `rootcanal` does; blelab starts and stops nothing.
    func testARunningRootCanalAndGenericH4Endpoints() throws {
        let rootCanal = try RootCanalProcess(environment: Tiers.environment)
        defer { XCTAssertTrue(rootCanal.stop().hasSuffix("nothing left behind")) }
        let port = rootCanal.endpoint.argument.split(separator: ":").last!
        let file = Tiers.root + "/scenarios/seeds/hm10-serial.yaml"
        for transport in ["rootcanal:127.0.0.1:\(port)", "h4:127.0.0.1:\(port),tcp:127.0.0.1:\(port),127.0.0.1:\(port)"] {
            let before = HelperRegistry.recorded
            let run = Self.runCLI([file], transport: transport)
            XCTAssertEqual(run.status, .passed, "\(transport): \(run.out)\(run.err)")
            XCTAssertEqual(HelperRegistry.recorded, before, "\(transport) started no process")
        }
        XCTAssertTrue(rootCanal.isRunning, "and stopped none")
    }

    func testBumbleControllersOnUnixSockets() throws {
        let run = Self.runCLI([Tiers.root + "/scenarios/seeds/smart-curtain.yaml"], transport: "bumble:unix")
        XCTAssertEqual(run.status, .passed, run.out + run.err)
        // The socket folder is gone with the controllers.
        let left = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp"))?.filter { $0.hasPrefix("blelab-h4-") } ?? []
        for folder in left {
            XCTAssertFalse(FileManager.default.fileExists(atPath: "/tmp/\(folder)/controller-0.sock"), "/tmp/\(folder) still has sockets")
        }
    }
}

import BLELab
import BLELabTestSupport
import BLERuntime
import Foundation
import HCI
@testable import ScenarioEngine
import ScenarioFormat
import Transport
import WireTestSupport
import XCTest

/// The captures of real scenario runs (`blelab run --capture`) in the tools people open them with:
/// tshark (Wireshark) and btmon (BlueZ). Every test first checks the capture with our own reader
/// (BTSnoopReader, and the ATT PDUs reassembled from its ACL packets), so it asserts something on a
/// machine without the tools; where a tool is on PATH (.ci/run installs both) it must show the same
/// ATT operations, at the same times.
final class CaptureInteropTests: XCTestCase {
    static let scenarios = ["scenarios/seeds/hm10-serial.yaml", "scenarios/seeds/hm10-with-write.yaml"]

    /// 2000-01-01T00:00:00Z, where lab time zero goes, in microseconds since the Unix epoch.
    static let labEpochMicroseconds: Int64 = 946_684_800 * 1_000_000

    static var root: String {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }

    /// One run of both scenarios through the CLI, with captures and the JSON timeline written into
    /// a temporary folder; removed when the test ends.
    private func runWithCaptures() throws -> (dir: String, timeline: [String: Any]) {
        let dir = try temporaryDirectory()
        addTeardownBlock { removeTree(dir) }
        let cli = CLIHarness()
        let status = cli.run(["run", "--capture", dir + "/captures", "--json", dir + "/timeline.json"]
                             + Self.scenarios.map { Self.root + "/" + $0 }, writesFiles: true)
        XCTAssertEqual(status, .passed, cli.out + cli.err)
        let json = try JSONSerialization.jsonObject(with: Data(try FileText.readBytes(dir + "/timeline.json")))
        return (dir + "/captures", json as? [String: Any] ?? [:])
    }

    /// An ATT PDU in a capture: when (µs of lab time), which way, its opcode and octets.
    struct ATTFrame: Equatable, CustomStringConvertible {
        var microseconds: Int64
        var sent: Bool
        var opcode: UInt8
        var bytes: [UInt8]
        var description: String { "\(microseconds)µs \(sent ? "sent" : "received") 0x\(String(opcode, radix: 16))" }
    }

    /// The ATT PDUs of a capture as our own reader sees them: records decoded by BTSnoopReader,
    /// ACL fragments reassembled by ATTTraffic.
    static func attFrames(_ path: String) throws -> [ATTFrame] {
        let file = try BTSnoopReader.read(path: path)
        XCTAssertEqual(file.datalink, .hciUART)
        let log = PacketLog()
        let traffic = ATTTraffic(log: log)
        for packet in file.loggedPackets() { log.record(packet) }
        return traffic.records.map { r in
            ATTFrame(microseconds: r.time.nanoseconds / 1_000, sent: r.wasSent, opcode: r.bytes.first ?? 0, bytes: r.bytes)
        }
    }

    /// The ATT events of `device` in the runner's JSON timeline of the scenario in `file`, with
    /// their virtual times in nanoseconds.
    static func timelineATT(_ timeline: [String: Any], file: String, device: String) -> [(ns: Int64, sent: Bool, bytes: String)] {
        let scenarios = timeline["scenarios"] as? [[String: Any]] ?? []
        guard let scenario = scenarios.first(where: { ($0["file"] as? String)?.hasSuffix(file) == true }) else { return [] }
        let events = scenario["events"] as? [[String: Any]] ?? []
        return events.compactMap { e in
            guard e["device"] as? String == device, e["kind"] as? String == "att",
                  let ns = (e["time_ns"] as? NSNumber)?.int64Value else { return nil }
            return (ns, e["direction"] as? String == "sent", e["bytes"] as? String ?? "")
        }
    }

    static func stem(_ scenario: String) -> String {
        String(scenario.split(separator: "/").last!.dropLast(".yaml".count))
    }

    // MARK: What the captures hold (always checked)

    /// The ATT operations each scenario performs are in its captures, in order: discovery, the
    /// CCCD write (a Write Request), the write the scenario is about, the echo by notification.
    func testTheCapturesHoldTheATTOperationsOfTheRun() throws {
        let (dir, timeline) = try runWithCaptures()
        let serial = try Self.attFrames(dir + "/hm10-serial.central.btsnoop")
        assertOrdered(serial, sent: [0x10, 0x08, 0x04, 0x12, 0x52], received: [0x11, 0x09, 0x05, 0x13, 0x1b])
        XCTAssertEqual(serial.filter { $0.opcode == 0x52 }.map { Array($0.bytes.dropFirst(3)) }, [Array("hello".utf8)])
        XCTAssertEqual(serial.filter { $0.opcode == 0x1b }.map { Array($0.bytes.dropFirst(3)) }, [Array("hello".utf8)])
        // The peripheral's own capture shows the same Write Command arriving, and the notification leaving.
        let module = try Self.attFrames(dir + "/hm10-serial.hm10.btsnoop")
        XCTAssertEqual(module.filter { !$0.sent }.map(\.opcode), serial.filter(\.sent).map(\.opcode))
        XCTAssertEqual(module.filter(\.sent).map(\.opcode), serial.filter { !$0.sent }.map(\.opcode))

        let clone = try Self.attFrames(dir + "/hm10-with-write.central.btsnoop")
        assertOrdered(clone, sent: [0x06, 0x08, 0x04, 0x12, 0x12, 0x52], received: [0x07, 0x09, 0x05, 0x13, 0x13, 0x1b, 0x1b])
        XCTAssertEqual(clone.filter { $0.opcode == 0x12 }.map { Array($0.bytes.dropFirst(3)) }, [[0x01, 0x00], Array("AT+NAME".utf8)],
                       "the CCCD write, then prefer-request's Write Request")
        XCTAssertEqual(clone.filter { $0.opcode == 0x52 }.map { Array($0.bytes.dropFirst(3)) }, [Array("raw".utf8)])

        // Same PDUs, same virtual times (to the microsecond) as the runner's own timeline.
        for scenario in Self.scenarios {
            let frames = try Self.attFrames(dir + "/\(Self.stem(scenario)).central.btsnoop")
            let events = Self.timelineATT(timeline, file: scenario, device: "central")
            XCTAssertEqual(frames.map(\.microseconds), events.map { $0.ns / 1_000 }, scenario)
            XCTAssertEqual(frames.map(\.sent), events.map(\.sent), scenario)
            XCTAssertEqual(frames.map { $0.bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ") },
                           events.map(\.bytes), scenario)
        }
    }

    /// `sent` and `received` opcodes each appear in this order among the frames of that direction.
    private func assertOrdered(_ frames: [ATTFrame], sent: [UInt8], received: [UInt8], line: UInt = #line) {
        func isSubsequence(_ wanted: [UInt8], of all: [UInt8]) -> Bool {
            var rest = all[...]
            for w in wanted {
                guard let i = rest.firstIndex(of: w) else { return false }
                rest = rest[(i + 1)...]
            }
            return true
        }
        XCTAssertTrue(isSubsequence(sent, of: frames.filter(\.sent).map(\.opcode)), "\(frames)", line: line)
        XCTAssertTrue(isSubsequence(received, of: frames.filter { !$0.sent }.map(\.opcode)), "\(frames)", line: line)
    }

    // MARK: tshark

    func testTsharkShowsTheATTOperationsAtTheRunnersTimes() throws {
        let (dir, timeline) = try runWithCaptures()
        let tshark = TestTools.executableOnPath("tshark")
        if tshark == nil {
            print("CaptureInteropTests: tshark is not on PATH; the captures were checked with BTSnoopReader only")
        }
        for scenario in Self.scenarios {
            for device in ["central", scenario.hasSuffix("hm10-serial.yaml") ? "hm10" : "clone"] {
                let path = dir + "/\(Self.stem(scenario)).\(device).btsnoop"
                let ours = try Self.attFrames(path)
                // Without tshark too: the opcodes the test asks tshark for are in the file.
                let opcodes = Set(ours.map(\.opcode))
                XCTAssertTrue(opcodes.isSuperset(of: [0x52, 0x12, 0x13, 0x1b, 0x08, 0x09, 0x04, 0x05]), "\(path): \(ours)")
                XCTAssertTrue(opcodes.contains(0x10) || opcodes.contains(0x06), "\(path): primary service discovery")
                guard let tshark else { continue }

                // `tshark -r central.btsnoop -Y btatt -T fields -e btatt.opcode`, with times and directions.
                let run = try TestTools.runTool(tshark, ["-r", path, "-Y", "btatt", "-T", "fields", "-E", "separator=|",
                                                    "-e", "frame.time_epoch", "-e", "hci_h4.direction", "-e", "btatt.opcode"])
                XCTAssertEqual(run.status, 0, path)
                let rows = run.output.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
                XCTAssertEqual(rows.map { $0.count == 3 ? $0[2] : "?" }, ours.map { "0x" + ($0.opcode < 16 ? "0" : "") + String($0.opcode, radix: 16) },
                               "\(path): tshark's ATT opcodes, in order, are ours")
                XCTAssertEqual(rows.map { $0.count == 3 ? $0[1] : "?" }, ours.map { $0.sent ? "0x00" : "0x01" }, "\(path): directions")
                let times = rows.map { Self.microseconds(epoch: $0.first ?? "") }
                XCTAssertEqual(times, ours.map { Self.labEpochMicroseconds + $0.microseconds }, "\(path): 2000-01-01 + virtual time")
                XCTAssertEqual(times, times.sorted(), "\(path): times never go back")
                XCTAssertGreaterThan(times.last ?? 0, times.first ?? 0, "\(path): time passes")
                if device == "central" {
                    let events = Self.timelineATT(timeline, file: scenario, device: "central")
                    XCTAssertEqual(times, events.map { Self.labEpochMicroseconds + $0.ns / 1_000 }, "\(path): the runner's virtual times")
                }

                // Every frame (not only ATT) at its record's time, in order, none malformed, no expert notes.
                let all = try TestTools.runTool(tshark, ["-r", path, "-T", "fields", "-E", "separator=|",
                                                    "-e", "frame.time_epoch", "-e", "_ws.malformed", "-e", "_ws.expert"])
                let allRows = all.output.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
                let records = try BTSnoopReader.read(path: path).records
                let allTimes = allRows.map { Self.microseconds(epoch: $0.first ?? "") }
                XCTAssertEqual(allTimes, records.map { BTSnoopTime.unixMicroseconds(of: $0.timestamp) }, path)
                XCTAssertEqual(allTimes, allTimes.sorted(), path)
                XCTAssertEqual(allRows.filter { $0.dropFirst().contains { !$0.isEmpty } }.count, 0, "\(path): malformed or expert-flagged frames")
            }
        }
    }

    /// tools/att-check.sh, the tiers' check of the captures they bring back: it counts what our own
    /// reader counts, in one tshark run over all the files, and names the files it cannot read.
    func testTheTiersATTCheckCountsEveryATTPDUAndNamesTheFilesAtFault() throws {
        guard TestTools.executableOnPath("tshark") != nil, let bash = TestTools.executableOnPath("bash") else {
            return XCTFail("tshark and bash must be on PATH: `make test` installs tshark (tools/install-deps.sh tshark)")
        }
        let (dir, _) = try runWithCaptures()
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".btsnoop") }.sorted().map { dir + "/" + $0 }
        XCTAssertGreaterThanOrEqual(files.count, 4, "a central and a peripheral per scenario")
        let pdus = try files.reduce(0) { $0 + (try Self.attFrames($1)).count }
        XCTAssertGreaterThan(pdus, 40)
        let script = Self.root + "/tools/att-check.sh"
        func check(_ paths: [String]) throws -> (status: Int32, output: String) {
            let run = try TestTools.runTool(bash, ["-c", "\"$0\" \"$@\" 2>&1", script, dir] + paths)
            return (run.status, run.output)
        }

        let good = try check(files + [dir + "/no-such.btsnoop"])
        XCTAssertEqual(good.status, 0, good.output)
        XCTAssertEqual(good.output, "att-check: tshark decodes all \(pdus) ATT PDUs in the \(files.count) captures\n")

        // A record cut short and a file that is no capture: each named, nothing else.
        let bytes = try FileText.readBytes(files[0])
        try Data(bytes.dropLast(5)).write(to: URL(fileURLWithPath: dir + "/cut.btsnoop"))
        try Data("not a capture\n".utf8).write(to: URL(fileURLWithPath: dir + "/text.btsnoop"))
        let bad = try check(files + [dir + "/cut.btsnoop", dir + "/text.btsnoop"])
        XCTAssertEqual(bad.status, 1, bad.output)
        XCTAssertTrue(bad.output.hasSuffix("att-check: error: tshark does not decode ATT in: cut.btsnoop(unreadable) text.btsnoop(unreadable)\n"), bad.output)

        let none = try check([dir + "/no-such.btsnoop"])
        XCTAssertEqual(none.status, 1)
        XCTAssertEqual(none.output, "att-check: error: no capture came back\n")
    }

    /// `946684801.063305000` → 946684801063305.
    static func microseconds(epoch: String) -> Int64 {
        let parts = epoch.split(separator: ".")
        guard parts.count == 2, let seconds = Int64(parts[0]), let fraction = Int64(parts[1].prefix(6).padding(toLength: 6, withPad: "0", startingAt: 0)) else {
            return -1
        }
        return seconds * 1_000_000 + fraction
    }

    // MARK: btmon

    /// btmon's names for the ATT operations of the two runs.
    static let btmonLines = ["ATT: Write Command (0x52)", "ATT: Write Request (0x12)", "ATT: Write Response (0x13)",
                             "ATT: Handle Value Notification (0x1b)", "ATT: Read By Type Response (0x09)",
                             "ATT: Find Information Request (0x04)", "ATT: Find Information Response (0x05)"]

    func testBtmonShowsTheATTOperations() throws {
        let (dir, _) = try runWithCaptures()
        // Without btmon: btmon reads the original length as the octets to read and stops at 1 490
        // (BTSNOOP_MAX_PACKET_SIZE); our records keep both lengths equal and small.
        for scenario in Self.scenarios {
            let records = try BTSnoopReader.read(path: dir + "/\(Self.stem(scenario)).central.btsnoop").records
            XCTAssertTrue(records.allSatisfy { Int($0.originalLength) == $0.data.count && $0.originalLength <= 1_490 })
        }
        guard let btmon = TestTools.executableOnPath("btmon") else {
            print("CaptureInteropTests: btmon is not on PATH; checked the record lengths it relies on only")
            return
        }
        for scenario in Self.scenarios {
            let path = dir + "/\(Self.stem(scenario)).central.btsnoop"
            // Unbuffered (stdbuf), so that what btmon printed before a crash is not lost.
            let stdbuf = TestTools.executableOnPath("stdbuf")
            var run = try stdbuf.map { try TestTools.runTool($0, ["-o0", btmon, "-r", path]) } ?? TestTools.runTool(btmon, ["-r", path])
            var decoded = path
            if run.crashed || (stdbuf != nil && run.status == 128 + 11) {
                // btmon 5.66 (Debian 12) dereferences a null pointer on the first ATT Read By Type
                // Request of a trace read from a file on a machine without a local adapter
                // (monitor/att.c keeps per-connection GATT state it could not create); Bumble's
                // reference capture in Tests/TransportTests/Fixtures crashes it the same way. Check
                // that this is where it stopped, then read the same capture without those requests.
                let lastATT = run.output.split(separator: "\n").last { $0.contains("ATT: ") }
                if stdbuf != nil { XCTAssertEqual(lastATT.map { $0.trimmingCharacters(in: .whitespaces) }, "ATT: Read By Type Request (0x08) len 6",
                               "\(path): btmon crashed somewhere other than its known Read By Type Request bug:\n\(run.output.suffix(2000))") }
                decoded = path + ".without-read-by-type-requests"
                let kept = try BTSnoopReader.read(path: path).loggedPackets().filter { p in
                    !(p.frame.count > 9 && p.frame[0] == 0x02 && p.frame[7] == 0x04 && p.frame[8] == 0x00 && p.frame[9] == 0x08)
                }
                try BTSnoopWriter.write(kept, to: decoded)
                print("CaptureInteropTests: \(btmon) crashed on ATT Read By Type Request (a btmon bug); read \(decoded) instead")
                run = try TestTools.runTool(btmon, ["-r", decoded])
            }
            XCTAssertFalse(run.crashed, decoded)
            XCTAssertEqual(run.status, 0, decoded)
            for line in Self.btmonLines {
                XCTAssertTrue(run.output.contains(line), "btmon -r \(decoded) lacks \(line)")
            }
            XCTAssertTrue(run.output.contains("LE Connection Complete"), decoded)
            XCTAssertTrue(run.output.contains("< ACL Data TX") && run.output.contains("> ACL Data RX"), decoded)
            XCTAssertTrue(run.output.contains("ATT: Read By Group Type Request (0x10)") || run.output.contains("ATT: Find By Type Value Request (0x06)"),
                          "btmon -r \(decoded) lacks primary service discovery")
        }
    }

    // MARK: Tools

}

import BLELab
import BLELabTestSupport
import CaptureImport
import Controller
import Foundation
import ScenarioEngine
import ScenarioFormat
import Transport
import WireTestSupport
import XCTest

/// Air captures out and back in: every scenario in scenarios/ run on the sim with an air capture
/// (`RunOptions.capturesAir`, what `blelab run --capture-air` writes), each capture imported, and
/// the imported scenarios replayed. A representative few must replay; the count of all that do
/// is printed.
final class AirRoundTripTests: XCTestCase {
    /// Replays that must pass: the seeds, a connection update, the link layer's parameter request,
    /// a link loss and reconnection, a power-off, several notifications, a lossy link (its lost
    /// transmissions are on the air, sent again with the same SN, and read once).
    static let mustReplay = ["hm10-serial", "heart-rate", "ble-scanner", "link-connection-update", "link-parameter-requests",
                             "link-loss-reconnect", "air-power-off", "link-notification-burst", "link-lossy-serial"]

    func run(_ scenario: Scenario, air: Bool = true, captures: Bool = false) -> ScenarioResult {
        var options = RunOptions(keepsCaptures: captures)
        options.capturesAir = air
        return ScenarioRunner().run(scenario, options: options)
    }

    func testEveryScenarioRoundTripsThroughItsAirCapture() throws {
        let files = repositoryScenarioFiles()
        XCTAssertGreaterThanOrEqual(files.count, 13)
        var imported = 0, replayed = 0
        var checked: Set<String> = []
        for file in files {
            let scenario = try Scenario.load(path: file)
            let first = run(scenario)
            let air = try XCTUnwrap(first.airCapture, "\(file): no air capture")
            let name = String(file.split(separator: "/").last ?? "").replacingOccurrences(of: ".yaml", with: "")
            let result: CaptureImporter.Result
            let loaded: Scenario
            do {
                (result, loaded) = try importAndLoad(air, source: name + ".air.pcap")
            } catch {
                XCTFail("\(file): its air capture does not import: \(error)")
                continue
            }
            imported += 1
            XCTAssertEqual(result.file.format, .pcap(linkType: .bluetoothLELLWithPHDR, nanoseconds: false), file)
            if name == "link-lossy-serial" {
                XCTAssertTrue(result.transcript.notes.contains { $0.contains("retransmitted data PDUs") }, "\(result.transcript.notes)")
            }
            let replay = run(loaded, air: false)
            if replay.passed { replayed += 1 }
            if Self.mustReplay.contains(name) {
                checked.insert(name)
                XCTAssertTrue(replay.passed, "the scenario imported from \(name)'s air capture fails:\n\(replay.failure?.report() ?? "")\n\(result.yaml)")
            }
        }
        XCTAssertEqual(checked, Set(Self.mustReplay), "the representative scenarios are in scenarios/")
        XCTAssertEqual(imported, files.count)
        print("air round trip: \(files.count) scenarios, \(imported) air captures imported, \(replayed) replays passed")
    }

    /// Same scenario and seed, same bytes; and watching the air changes nothing the devices see:
    /// the btsnoop captures are the same with and without it.
    func testAirCapturesAreDeterministicAndChangeNothing() throws {
        let scenario = try loadScenario("scenarios/seeds/hm10-serial.yaml")
        let a = run(scenario, captures: true), b = run(scenario, captures: true)
        XCTAssertEqual(a.airCapture, b.airCapture)
        XCTAssertGreaterThan(a.airCapture?.count ?? 0, 1000)
        let without = run(scenario, air: false, captures: true)
        XCTAssertNil(without.airCapture)
        XCTAssertEqual(without.captures.map { BTSnoopWriter.encode($0.packets) }, a.captures.map { BTSnoopWriter.encode($0.packets) })
    }

    /// A sniffer started while the phone was already connected: no advertising of the
    /// peripheral, no CONNECT_IND, the first data PDUs lost too. The connection is taken up at its
    /// first ATT frame, the peripheral rebuilt from the traffic, and the replay passes.
    func testAnAirCaptureStartedMidConnectionImportsAndReplays() throws {
        let air = try XCTUnwrap(run(try loadScenario("scenarios/seeds/hm10-serial.yaml")).airCapture)
        // pcap: a 24-octet file header, then records of a 16-octet header and the packet.
        var records: [[UInt8]] = []
        var offset = 24
        while offset + 16 <= air.count {
            let length = Int(air[offset + 8]) | Int(air[offset + 9]) << 8 | Int(air[offset + 10]) << 16 | Int(air[offset + 11]) << 24
            records.append(Array(air[offset..<offset + 16 + length]))
            offset += 16 + length
        }
        func accessAddress(_ r: [UInt8]) -> UInt32 { r[26..<30].enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) } }
        let firstData = try XCTUnwrap(records.firstIndex { accessAddress($0) != LinkLayer.advertisingAccessAddress })
        let resumed = Array(air.prefix(24)) + records[(firstData + 2)...].flatMap { $0 }
        let (result, scenario) = try importAndLoad(resumed, source: "resumed.pcap")
        let connection = try XCTUnwrap(result.transcript.connections.first)
        XCTAssertTrue(connection.startedBeforeCapture)
        XCTAssertTrue(result.yaml.contains("the capture starts inside the connection"), result.yaml)
        XCTAssertTrue(result.yaml.contains("without its CONNECT_IND in the capture (the sniffer joined mid-connection)"), result.yaml)
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
    }

    /// Every packet's CRC-24 checks with its CRCInit (advertising 0x555555, data channel the
    /// CONNECT_IND's), and data PDUs carry the direction flag.
    func testWrittenPacketsCarryValidCRCsAndDirections() throws {
        let air = try XCTUnwrap(run(try loadScenario("scenarios/seeds/hm10-serial.yaml")).airCapture)
        let file = try PcapReader.decode(air)
        var crcInits: [UInt32: UInt32] = [LinkLayer.advertisingAccessAddress: LinkLayer.advertisingCRCInit]
        var data = 0
        for p in file.packets {
            let flags = UInt16(p.data[8]) | UInt16(p.data[9]) << 8
            XCTAssertEqual(flags & 0x0C00, 0x0C00, "CRC checked and valid")
            let aa = p.data[10..<14].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
            let pdu = Array(p.data[14..<(p.data.count - 3)])
            if aa == LinkLayer.advertisingAccessAddress, pdu[0] & 0x0F == 0x05 {
                let c = try ConnectIndication(decoding: AdvertisingChannelPDU(decoding: pdu))
                crcInits[c.accessAddress] = c.crcInit
            } else if aa != LinkLayer.advertisingAccessAddress {
                data += 1
                XCTAssertTrue([2, 3].contains((flags >> 7) & 0x07), "data PDUs say their direction")
                XCTAssertEqual(UInt32(p.data[4]) | UInt32(p.data[5]) << 8 | UInt32(p.data[6]) << 16 | UInt32(p.data[7]) << 24, aa,
                               "reference access address")
            }
            let crcInit = try XCTUnwrap(crcInits[aa], "a CONNECT_IND gave 0x\(String(aa, radix: 16))")
            XCTAssertTrue(LinkLayer.crcMatches(pdu, crc: Array(p.data.suffix(3)), initial: crcInit), "record \(p.number)")
        }
        XCTAssertGreaterThan(data, 20)
    }

    /// Wireshark reads the file: every packet decodes as Bluetooth LE link layer, the CONNECT_IND
    /// and the ATT PDUs are recognised, and (with the pseudo-header's CRC flags cleared so that it
    /// checks them itself) no advertising packet has an incorrect CRC.
    /// Without tshark (.ci/run installs it), as BTSnoopInteropTests: the file is checked with our
    /// own reader only, and the test says so.
    func testTsharkReadsTheAirCapture() throws {
        let air = try XCTUnwrap(run(try loadScenario("scenarios/seeds/hm10-serial.yaml")).airCapture)
        guard let tshark = TestTools.executableOnPath("tshark") else {
            print("AirRoundTripTests: tshark is not on PATH; checked the air capture with our own reader only")
            let file = try CaptureFile.decode(air)
            XCTAssertFalse(file.packets.isEmpty)
            XCTAssertEqual(try HCIStreamAnalysis.analyse(file).connections.count, 1)
            return
        }
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/hm10-serial.air.pcap"
        try Data(air).write(to: URL(fileURLWithPath: path))
        let protocols = try TestTools.runTool(tshark, ["-r", path, "-T", "fields", "-e", "frame.protocols"])
        XCTAssertEqual(protocols.status, 0)
        let lines = protocols.output.split(separator: "\n")
        XCTAssertEqual(lines.count, try PcapReader.decode(air).packets.count)
        XCTAssertTrue(lines.allSatisfy { $0.contains("btle_rf:btle") }, protocols.output)
        XCTAssertTrue(lines.contains { $0.hasSuffix("btl2cap:btatt") }, protocols.output)
        // The summary lines (the Info column).
        let listing = try TestTools.runTool(tshark, ["-r", path])
        XCTAssertEqual(listing.status, 0)
        XCTAssertTrue(listing.output.contains("CONNECT_IND"), listing.output)
        XCTAssertTrue(listing.output.contains("Write Command"), listing.output)
        XCTAssertTrue(listing.output.contains("LL_TERMINATE_IND"), listing.output)
        XCTAssertFalse(listing.output.contains("Malformed"), listing.output)

        // The same packets with "CRC checked" cleared: tshark computes the CRCs.
        var unchecked = air
        var offset = 24
        while offset + 16 <= unchecked.count {
            let length = Int(unchecked[offset + 8]) | Int(unchecked[offset + 9]) << 8
            unchecked[offset + 16 + 9] &= ~0x0C
            offset += 16 + length
        }
        let uncheckedPath = dir + "/unchecked.pcap"
        try Data(unchecked).write(to: URL(fileURLWithPath: uncheckedPath))
        let experts = try TestTools.runTool(tshark, ["-r", uncheckedPath, "-T", "fields", "-e", "_ws.expert.message"])
        XCTAssertEqual(experts.status, 0)
        XCTAssertFalse(experts.output.contains("Incorrect CRC"), experts.output)
    }
}

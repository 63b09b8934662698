import BLELab
import BLEWire
import CaptureImport
import Foundation
import LabTiers
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// `blelab import` on a capture another stack wrote: Bumble's Device as the central (tools/
/// bumble_central.py) against our simulated peripheral, on RootCanal or Bumble's controllers,
/// with Bumble's own snooper (bumble.snoop.BtSnooper) writing the central's btsnoop file. The
/// import must show what the capture shows — the database as Bumble discovered it, handles
/// included, the ATT opcode of every write, the MTU, the values read — and the imported scenario
/// must pass on the sim.
final class CaptureImportInteropTests: TierTestCase {
    static let service = "B1E1AB00-0000-4C0A-B1E1-AB0000000000"
    static let writeOnly = "B1E1AB01-0000-4C0A-B1E1-AB0000000000"
    static let commandOnly = "B1E1AB02-0000-4C0A-B1E1-AB0000000000"
    static let notify = "B1E1AB03-0000-4C0A-B1E1-AB0000000000"

    static let peripheralYAML = """
    scenario: the peripheral Bumble's central talks to
    peripherals:
      gadget:
        advertise:
          name: SnoopedGadget
          scan-response: { services: [\(service)] }
        gatt:
          - service: \(service)
            characteristics:
              - uuid: \(writeOnly)
                properties: [write]
                on-write: [ { notify: \(notify), value: written } ]
              - uuid: \(commandOnly)
                properties: [write-without-response]
                on-write: [ { notify: \(notify), value: written } ]
              - { uuid: \(notify), properties: [read, notify], value: text:ready }
          - service: 180F
            characteristics:
              - { uuid: 2A19, properties: [read, notify], value: u8:87 }
    central:
      - scan: { for: 1s }
    """

    func testABumbleSnooperCaptureImportsThroughBumbleControllers() throws {
        try importBumbleSnoop(transport: "bumble")
    }

    func testABumbleSnooperCaptureImportsThroughRootCanal() throws {
        try importBumbleSnoop(transport: "rootcanal")
    }

    private func importBumbleSnoop(transport: String) throws {
        let backend = try Tiers.backend(transport)
        try backend.prepare(deviceCount: 2)
        defer { backend.shutDown() }
        let lab = try backend.makeLab(seed: 1)
        defer { lab.shutDown() }
        let spec = try XCTUnwrap(Scenario.parse(Self.peripheralYAML, file: "snooped.yaml").peripherals.first)
        let ours = try lab.addPeripheral(spec)
        try lab.powerOn()
        try lab.wait(within: .seconds(5), "advertising") { done in ours.start(completion: done) }.get()

        let directory = NSTemporaryDirectory() + "blelab-snoop-\(getpid())-\(transport)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let snoop = directory + "/bumble-central.btsnoop"
        let peerEndpoint = backend.rootCanal?.endpoint ?? backend.bumble!.endpoints[1]
        let central = try BumblePeer("bumble_central.py", [
            peerEndpoint.argument, "--target", "SnoopedGadget", "--no-defaults", "--snoop", snoop, "--mtu", "100",
            "--subscribe", Self.notify, "--read", Self.notify, "--read", "2A19",
            "--write", "\(Self.writeOnly):request:hello", "--write", "\(Self.commandOnly):command:there",
            "--expect-notifications", "2", "--listen", "0.5", "--timeout", "40",
        ], name: "bumble-snoop-central")
        defer { print(central.stop()) }
        let ticker = Ticker(lab.loop)
        lab.runUntil("Bumble's central to finish", seconds: 45) { !central.process.isRunning }
        ticker.stop()
        XCTAssertEqual(central.process.exit, .exited(0), central.log)

        // Bumble's file, as written.
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: snoop), "no snoop file").map { $0 }
        let result = try CaptureImporter.importCapture(bytes, source: "bumble-central.btsnoop")
        guard case .btsnoop(.hciUART) = result.file.format else { return XCTFail("\(result.file.format)") }
        XCTAssertEqual(result.transcript.connections.count, 1, result.yaml)
        let session = try XCTUnwrap(result.sessions.first)
        let connected = try XCTUnwrap(central.lines.first("connected"), central.log)
        XCTAssertEqual(result.transcript.connections[0].peer.address.description.uppercased(),
                       (connected["peer_address"] as? String)?.uppercased(), result.yaml)

        // The database as Bumble discovered it: its own account (JSON) against the capture's.
        let discovered = try XCTUnwrap(central.lines.first("discovered")?["services"] as? [[String: Any]], central.log)
        var bumbleSaw: [String] = []
        for s in discovered {
            for c in s["characteristics"] as? [[String: Any]] ?? [] {
                bumbleSaw.append("\(s["uuid"] ?? "?")/\(c["uuid"] ?? "?") @\(c["handle"] ?? "?") \((c["properties"] as? [String] ?? []).sorted())")
            }
        }
        var captureShows: [String] = []
        for s in session.database.services {
            for c in s.characteristics {
                let names = ["broadcast", "read", "write-without-response", "write", "notify", "indicate",
                             "authenticated-signed-writes", "extended-properties"].enumerated()
                    .filter { c.properties & (1 << $0.offset) != 0 }.map(\.element)
                captureShows.append("\(s.uuid)/\(c.uuid) @\(c.valueHandle) \(names.sorted())")
            }
        }
        XCTAssertEqual(captureShows, bumbleSaw, result.yaml)

        // The imported scenario: it loads, its peripheral is ours, its steps are what Bumble did.
        let scenario = try Scenario.parse(result.yaml, file: "imported.yaml")
        XCTAssertEqual(scenario, result.scenario, "the text reads back as another scenario than the importer built:\n\(result.yaml)")
        let imported = try XCTUnwrap(scenario.peripherals.first { !$0.services.isEmpty }, result.yaml)
        XCTAssertEqual(imported.services.map { "\($0.uuid) " + $0.characteristics.map { "\($0.uuid):\($0.properties.rawValue)" }.joined(separator: ",") },
                       spec.services.map { "\($0.uuid) " + $0.characteristics.map { "\($0.uuid):\($0.properties.rawValue)" }.joined(separator: ",") },
                       result.yaml)
        var writes: [String] = []
        var reads: [String] = []
        var mtu: Int?
        for step in scenario.steps {
            switch step.action {
            case let .write(w): writes.append("\(w.characteristic) \(String(decoding: w.value, as: UTF8.self)) \(w.type.rawValue)")
            case let .read(_, c): reads.append("\(c)")
            case let .exchangeMTU(_, size): mtu = size
            default: break
            }
        }
        XCTAssertEqual(writes, ["\(Self.writeOnly) hello request", "\(Self.commandOnly) there command"], result.yaml)
        XCTAssertEqual(reads, [Self.notify, "2A19"], result.yaml)
        XCTAssertEqual(mtu, 100, result.yaml)
        // The opcodes, three ways: the imported expectations, Bumble's log, and what our peripheral's HCI received.
        XCTAssertTrue(result.yaml.contains("expect: { write-sent-as: request }") && result.yaml.contains("expect: { write-sent-as: command }"), result.yaml)
        let bumbleOpcodes = central.lines.events("write").compactMap { $0["opcode"] as? String }
        XCTAssertEqual(bumbleOpcodes, ["0x12", "0x52"], central.log)
        let received = ours.device.traffic.records.filter { !$0.wasSent && [0x12, 0x52].contains($0.bytes[0]) }.map(\.bytes)
        let writeOps = session.operations.compactMap { op -> [UInt8]? in
            switch op.kind {
            case let .write(handle, value, command): return [command ? 0x52 : 0x12, UInt8(handle & 0xFF), UInt8(handle >> 8)] + value
            case let .configure(handle, value): return [0x12, UInt8(handle & 0xFF), UInt8(handle >> 8)] + value
            default: return nil
            }
        }
        XCTAssertEqual(writeOps, received, "the imported writes are the PDUs our peripheral received")
        XCTAssertTrue(result.yaml.contains("\"text:ready\"") && result.yaml.contains("value: hex:57"), result.yaml)
        XCTAssertTrue(result.yaml.contains("on-write:"), "the echoes became on-write triggers:\n\(result.yaml)")

        // And it replays on the sim.
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
        print("import of Bumble's snoop (\(transport)): \(result.file.recordCount) records, \(session.operations.count) operations; "
              + "scenario:\n\(result.yaml)")
    }
}

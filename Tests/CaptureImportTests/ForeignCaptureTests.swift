import BLERuntime
import CaptureImport
import HCI
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// A central's capture written byte by byte, with what other stacks do and the lab's own central
/// does not: extended scanning (LE Extended Advertising Report), LE Enhanced Connection Complete,
/// an ATT response split over two ACL fragments, a long read (Read Blob), a queued write (Prepare
/// and Execute Write), notifications at a steady interval, and a link lost to a supervision timeout.
final class ForeignCaptureTests: XCTestCase {
    static let peer: [UInt8] = [0x66, 0x44, 0x33, 0x22, 0x11, 0xC0]   // C0:11:22:33:44:66, little-endian
    var packets: [LoggedPacket] = []
    var now: Int64 = 0

    func at(_ ms: Int64) { now = ms * 1000 }
    func sent(_ frame: [UInt8]) { packets.append(LoggedPacket(time: Instant(nanoseconds: now * 1000), direction: .hostToController, frame: frame)) }
    func received(_ frame: [UInt8]) { packets.append(LoggedPacket(time: Instant(nanoseconds: now * 1000), direction: .controllerToHost, frame: frame)) }
    func command(_ opcode: UInt16, _ p: [UInt8]) -> [UInt8] { [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(p.count)] + p }
    func event(_ code: UInt8, _ p: [UInt8]) -> [UInt8] { [0x04, code, UInt8(p.count)] + p }
    /// ACL on handle 0x0040: PB 0b00/0b10 first, 0b01 continuing.
    func acl(_ data: [UInt8], first: Bool = true) -> [UInt8] {
        [0x02, 0x40, first ? 0x20 : 0x10, UInt8(data.count), 0x00] + data
    }
    func att(_ pdu: [UInt8]) -> [UInt8] { [UInt8(pdu.count), 0x00, 0x04, 0x00] + pdu }
    /// A request and its response, the response `after` ms later.
    func exchange(_ request: [UInt8], _ response: [UInt8], after: Int64 = 10) {
        sent(acl(att(request)))
        now += after * 1000
        received(acl(att(response)))
        now += 1000
    }

    /// `longerRead`: the long read goes on with that many more Read Blob Responses of 22 octets.
    func capture(longerRead: Int = 0) -> [UInt8] {
        packets = []
        at(0)
        sent(command(0x2042, [0x01, 0x00, 0x00, 0x00, 0x00, 0x00]))                  // LE Set Extended Scan Enable
        received(event(0x0E, [0x01, 0x42, 0x20, 0x00]))
        let adv: [UInt8] = [0x02, 0x01, 0x06, 0x04, 0x09] + Array("Ext".utf8) + [0x03, 0x03, 0x0D, 0x18]
        let rsp: [UInt8] = [0x05, 0xFF, 0x4C, 0x00, 0x02, 0x15]
        func report(_ type: UInt16, _ data: [UInt8]) -> [UInt8] {
            // Event_Type, Address_Type (random), Address, PHYs, SID, TX power, RSSI -50, interval, direct address, data
            event(0x3E, [0x0D, 0x01, UInt8(type & 0xFF), UInt8(type >> 8), 0x01] + Self.peer + [0x01, 0x00, 0xFF, 0x7F, 0xCE, 0x00, 0x00, 0x00]
                  + [0, 0, 0, 0, 0, 0] + [UInt8(data.count)] + data)
        }
        for k in 0..<3 {
            at(10 + Int64(k) * 101)
            received(report(0x0013, adv))   // legacy ADV_IND
            received(report(0x001B, rsp))   // legacy SCAN_RSP
        }
        at(400)
        sent(command(0x2042, [0x00, 0x00, 0x00, 0x00, 0x00, 0x00]))
        at(401)
        sent(command(0x2043, [0x00, 0x01, 0x01] + Self.peer + [0x01, 0x60, 0x00, 0x60, 0x00, 0x18, 0x00, 0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x00, 0x00]))
        received(event(0x0F, [0x00, 0x01, 0x43, 0x20]))
        at(450)
        // LE Enhanced Connection Complete: handle 0x0040, central, peer random C0:11:22:33:44:66, RPAs, interval 30 ms.
        received(event(0x3E, [0x0A, 0x00, 0x40, 0x00, 0x00, 0x01] + Self.peer + [UInt8](repeating: 0, count: 12) + [0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00]))
        at(460)
        exchange([0x02, 0xF7, 0x00], [0x03, 0x17, 0x00])                              // Exchange MTU 247 / 23
        // Read By Group Type: 1800 at 1-5, 180D at 6-11; the response in two ACL fragments.
        sent(acl(att([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28])))
        now += 10_000
        let groups = att([0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18, 0x06, 0x00, 0x0B, 0x00, 0x0D, 0x18])
        received(acl(Array(groups.prefix(7))))
        received(acl(Array(groups.dropFirst(7)), first: false))
        now += 1000
        exchange([0x10, 0x0C, 0x00, 0xFF, 0xFF, 0x00, 0x28], [0x01, 0x10, 0x0C, 0x00, 0x0A])
        exchange([0x08, 0x06, 0x00, 0x0B, 0x00, 0x03, 0x28],
                 [0x09, 0x07, 0x07, 0x00, 0x10, 0x08, 0x00, 0x37, 0x2A, 0x0A, 0x00, 0x0A, 0x0B, 0x00, 0x38, 0x2A])
        exchange([0x08, 0x0B, 0x00, 0x0B, 0x00, 0x03, 0x28], [0x01, 0x08, 0x0B, 0x00, 0x0A])
        exchange([0x04, 0x09, 0x00, 0x09, 0x00], [0x05, 0x01, 0x09, 0x00, 0x02, 0x29])
        // A long read of 2A38 (handle 0x000B): 22 octets, then 3 by Read Blob.
        let long = Array("The quick brown fox jumps".utf8)
        exchange([0x0A, 0x0B, 0x00], [0x0B] + Array(long.prefix(22)))
        exchange([0x0C, 0x0B, 0x00, 0x16, 0x00], [0x0D] + Array(long.dropFirst(22)))
        for k in 0..<longerRead {
            let offset = 25 + k * 22
            exchange([0x0C, 0x0B, 0x00, UInt8(offset & 0xFF), UInt8(offset >> 8)], [0x0D] + [UInt8](repeating: UInt8(0x41 + k % 26), count: 22))
        }
        // A queued write of 22 octets to 2A38.
        let value = Array("set the rate to 72 bpm".utf8)
        exchange([0x16, 0x0B, 0x00, 0x00, 0x00] + value.prefix(18), [0x17, 0x0B, 0x00, 0x00, 0x00] + value.prefix(18))
        exchange([0x16, 0x0B, 0x00, 0x12, 0x00] + value.dropFirst(18), [0x17, 0x0B, 0x00, 0x12, 0x00] + value.dropFirst(18))
        exchange([0x18, 0x01], [0x19])
        // Subscribe to 2A37, then a notification every second.
        exchange([0x12, 0x09, 0x00, 0x01, 0x00], [0x13])
        let subscribed = now
        for (k, bpm) in [UInt8(71), 72, 73].enumerated() {
            now = subscribed + Int64(k + 1) * 1_000_000 + 12_000
            received(acl(att([0x1B, 0x08, 0x00, 0x00, bpm])))
        }
        // The link is lost: Disconnection Complete, reason 0x08, with no HCI Disconnect sent.
        now += 2_500_000
        received(event(0x05, [0x00, 0x40, 0x00, 0x08]))
        return BTSnoopWriter.encode(packets)
    }

    func testWhatOtherStacksDoImportsAndReplays() throws {
        let (result, scenario) = try importAndLoad(capture(), source: "foreign.btsnoop")
        let yaml = result.yaml
        let p = try XCTUnwrap(scenario.peripherals.first, yaml)
        XCTAssertEqual(p.id, "ext")
        XCTAssertEqual(p.address?.description, "C0:11:22:33:44:66/random")
        XCTAssertEqual(p.rssi, -50)
        XCTAssertEqual(p.advertising?.name, "Ext")
        XCTAssertEqual(p.advertising?.services.map(\.description), ["180D"])
        XCTAssertEqual(p.advertising?.interval, .milliseconds(101))
        XCTAssertEqual(p.advertising?.scanResponse?.manufacturerData, .init(companyID: 0x004C, data: [0x02, 0x15]))
        XCTAssertEqual(p.services.map(\.uuid.description), ["180D"])
        XCTAssertEqual(p.services[0].characteristics.map { "\($0.uuid) \($0.properties.rawValue)" }, ["2A37 16", "2A38 10"])
        // The long read: one read step with all 25 octets; its value became the initial one.
        XCTAssertEqual(p.services[0].characteristics[1].value, Array("The quick brown fox jumps".utf8))
        XCTAssertTrue(yaml.contains("  - expect: { value: \"text:The quick brown fox jumps\" }"), yaml)
        // The queued write: one write step, a request, with the 22 octets.
        XCTAssertTrue(yaml.contains("  - write: { characteristic: 2A38, value: \"text:set the rate to 72 bpm\", type: request }"), yaml)
        XCTAssertTrue(yaml.contains("  - mtu: 247"), yaml)
        XCTAssertTrue(yaml.contains("  - subscribe: 2A37"), yaml)
        // A steady second: notify-every on subscribe, with the three values.
        XCTAssertTrue(yaml.contains("{ notify-every: { characteristic: 2A37, interval: 1s, value: { sequence: [hex:00 47, hex:00 48, hex:00 49] }, count: 3 } }"), yaml)
        XCTAssertTrue(yaml.contains("expect: { notification: 2A37, count: 3, in-order: [hex:00 47, hex:00 48, hex:00 49]"), yaml)
        // The peripheral's receive MTU of 23 (its Exchange MTU Response) comes back.
        XCTAssertTrue(yaml.contains("    mtu: 23 "), yaml)
        XCTAssertTrue(yaml.contains("  - expect: { mtu: 23 }"), yaml)
        // The link loss: the radio path goes one supervision timeout (720 ms here) before the
        // Disconnection Complete (0x08); the replay's central asks for the capture's parameters.
        XCTAssertTrue(yaml.contains("requires: [sim]"), yaml)
        XCTAssertTrue(yaml.contains("  - link-loss: { peripheral: ext, after: 4808ms }"), yaml)
        XCTAssertTrue(yaml.contains("expect: { disconnected: { reason: connection-timeout, within: "), yaml)
        XCTAssertTrue(yaml.contains("  - connect: { peripheral: ext, interval: 30ms, latency: 0, timeout: 720ms }"), yaml)
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(yaml)")
    }

    /// A device that answered a long read with more than an attribute can hold (512 octets, Core
    /// Vol 3 Part F 3.2.9): the value is neither declared nor expected, and the header says so.
    func testAValueLongerThanAnAttributeIsListed() throws {
        let (result, scenario) = try importAndLoad(capture(longerRead: 25), source: "long.btsnoop")
        XCTAssertTrue(result.yaml.contains("the read gave 575 octets, more than an attribute holds (512"), result.yaml)
        XCTAssertEqual(scenario.peripherals.first?.services.first?.characteristics[1].value, [], result.yaml)
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
    }

    /// The same capture in every format the importer reads gives the same scenario (the header's
    /// format line aside).
    func testEveryFormatGivesTheSameScenario() throws {
        for bytes in [capture(), try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/ble-scanner.yaml")))] {
            func body(_ yaml: String) -> [Substring] { yaml.split(separator: "\n").filter { !$0.hasPrefix("# (") } }
            let reference = try CaptureImporter.importCapture(bytes, source: "c").yaml
            for (name, variant) in [("1001", try reencode(bytes, as: .hciUnencapsulated)), ("2001", try reencode(bytes, as: .linuxMonitor)),
                                    ("pklg", try packetLogger(bytes)), ("pklg-le", try packetLogger(bytes, bigEndian: false))] {
                let yaml = try CaptureImporter.importCapture(variant, source: "c").yaml
                if name.hasPrefix("pklg") || name == "2001" {
                    // Record numbers count the note and index records these formats add first.
                    XCTAssertEqual(body(yaml).count, body(reference).count, name)
                } else {
                    XCTAssertEqual(body(yaml), body(reference), name)
                }
                XCTAssertEqual(stripRecords(yaml), stripRecords(reference), name)
            }
        }
    }

    /// The lines without their "record N" references (formats number their records differently).
    private func stripRecords(_ yaml: String) -> [String] {
        yaml.split(separator: "\n").filter { !$0.hasPrefix("# (") }.map { line in
            var out = ""
            var rest = Substring(line)
            while let r = rest.firstRange(of: "record ") {
                out += rest[..<r.lowerBound]
                rest = rest[r.upperBound...].drop { $0.isNumber }
            }
            return out + rest
        }
    }
}

/// The shared reference traffic: one GATT session between two hosts of Google's Bumble stack,
/// as Bumble wrote it (Tests/TransportTests/Fixtures, read where it lies).
final class ReferenceTrafficImportTests: XCTestCase {
    func testBumblesCentralCaptureImportsAndReplays() throws {
        let bytes = try FileText.readBytes(repositoryRoot + "/Tests/TransportTests/Fixtures/central.btsnoop")
        let (result, scenario) = try importAndLoad(bytes, source: "central.btsnoop")
        let p = try XCTUnwrap(scenario.peripherals.first)
        XCTAssertEqual(scenario.peripherals.count, 1)
        XCTAssertEqual(p.address?.description, "C0:FF:EE:00:00:02/random")
        XCTAssertEqual(p.services.map(\.uuid.description), ["FFE0", "180D", "1809"])
        XCTAssertEqual(p.services[0].characteristics.map { "\($0.uuid) \($0.properties.rawValue)" }, ["FFE1 10", "FFE2 4", "FFE3 2", "FFE4 2"])
        // The 60-octet value came by Read Request and Read Blob Requests; the 40-octet write by
        // Prepare and Execute Write.
        XCTAssertEqual(p.services[0].characteristics[3].value.count, 60)
        var writes: [String] = []
        for step in scenario.steps {
            if case let .write(w) = step.action { writes.append("\(w.characteristic) \(w.value.count) \(w.type.rawValue)") }
        }
        XCTAssertEqual(writes, ["FFE1 3 request", "FFE2 3 command", "FFE1 40 request"], result.yaml)
        XCTAssertTrue(result.yaml.contains("  - mtu: 185"), result.yaml)
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
    }

    /// Its peripheral's capture: the capturing host becomes the peripheral (its own advertising
    /// commands, address and database as served), the other side the central.
    func testBumblesPeripheralCaptureImportsAsThePeripheral() throws {
        let bytes = try FileText.readBytes(repositoryRoot + "/Tests/TransportTests/Fixtures/peripheral.btsnoop")
        let (result, scenario) = try importAndLoad(bytes, source: "peripheral.btsnoop")
        XCTAssertTrue(result.yaml.contains("taken on the peripheral"), result.yaml)
        let p = try XCTUnwrap(scenario.peripherals.first)
        XCTAssertEqual(scenario.peripherals.count, 1)
        XCTAssertEqual(p.address?.description, "C0:FF:EE:00:00:02/random")
        XCTAssertEqual(p.advertising?.name, "RefPeer")
        XCTAssertEqual(p.services.map(\.uuid.description), ["FFE0", "180D", "1809"])
        // The same central operations as the central's own capture shows.
        let central = try CaptureImporter.importCapture(
            try FileText.readBytes(repositoryRoot + "/Tests/TransportTests/Fixtures/central.btsnoop"), source: "central.btsnoop")
        let centralScenario = try Scenario.parse(central.yaml, file: "central.yaml")
        func operations(_ s: Scenario) -> [String] {
            s.steps.compactMap { step -> String? in
                switch step.action {
                case let .write(w): return "write \(w.characteristic) \(w.value) \(w.type.rawValue)"
                case let .read(_, c): return "read \(c)"
                case let .subscribe(_, c): return "subscribe \(c)"
                case let .exchangeMTU(_, n): return "mtu \(n)"
                default: return nil
                }
            }
        }
        XCTAssertEqual(operations(scenario), operations(centralScenario))
        XCTAssertEqual(p.services.map { $0.characteristics.map(\.properties) }, centralScenario.peripherals[0].services.map { $0.characteristics.map(\.properties) })
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
    }
}

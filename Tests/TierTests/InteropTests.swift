import ATT
import BLELab
import BLERuntime
import BLEWire
import Foundation
import GAP
import GATT
import LabTiers
import ScenarioEngine
import ScenarioFormat
import XCTest

/// BLELab's host stack against an independent one: Bumble's Device (tools/bumble_peripheral.py,
/// tools/bumble_central.py), each side on its own controller of RootCanal or of the Bumble lab
/// controllers. Both sides' accounts are checked: the ATT PDUs on BLELab's HCI (`ATTTraffic`) and
/// the opcodes Bumble reports in its JSON lines.
///
/// The GATT layout (tools/bumble_common.py): service B1E1AB00-…, B1E1AB01 write only (Write
/// Request), B1E1AB02 write-without-response only (Write Command), B1E1AB03 notify.
final class InteropTests: TierTestCase {
    static let service = BluetoothUUID(string: "B1E1AB00-0000-4C0A-B1E1-AB0000000000")!
    static let writeOnly = BluetoothUUID(string: "B1E1AB01-0000-4C0A-B1E1-AB0000000000")!
    static let commandOnly = BluetoothUUID(string: "B1E1AB02-0000-4C0A-B1E1-AB0000000000")!
    static let notify = BluetoothUUID(string: "B1E1AB03-0000-4C0A-B1E1-AB0000000000")!

    // MARK: (a) Bumble's peripheral, our central

    func testOurCentralWritesToABumblePeripheralThroughRootCanal() throws {
        try ourCentralAgainstBumblePeripheral(transport: "rootcanal")
    }

    func testOurCentralWritesToABumblePeripheralThroughBumbleControllers() throws {
        try ourCentralAgainstBumblePeripheral(transport: "bumble")
    }

    /// Our central (a lab device) scans for Bumble's service, connects, subscribes to B1E1AB03,
    /// then writes: a Write Request to the write-only characteristic, a Write Command to the
    /// write-without-response-only one, and each the wrong way round. The peripheral (--echo)
    /// notifies every write it accepts.
    private func ourCentralAgainstBumblePeripheral(transport: String) throws {
        let backend = try Tiers.backend(transport)
        try backend.prepare(deviceCount: 2)
        defer { backend.shutDown() }
        let lab = try backend.makeLab(seed: 1)
        defer { lab.shutDown() }
        let central = try lab.addDevice("central")
        // Bumble's Device on the other controller: RootCanal's one port, or the second Bumble endpoint.
        let peerEndpoint = backend.rootCanal?.endpoint ?? backend.bumble!.endpoints[1]
        let peripheral = try BumblePeer("bumble_peripheral.py", [peerEndpoint.argument, "--echo"], name: "bumble-peripheral")
        defer { print(peripheral.stop()) }
        try peripheral.waitFor("advertising")
        try lab.powerOn()

        // Scan for the service (in the advertising data), with scan responses for the name.
        var found: ScanReport?
        try lab.wait { done in
            central.host.startScanning(ScanConfiguration(services: [Self.service], active: true),
                                       onReport: { if found == nil || found?.localName == nil { found = $0 } }, completion: done)
        }.get()
        lab.runUntil("Bumble's advertising") { found?.localName != nil }
        try lab.wait { done in central.host.stopScanning(completion: done) }.get()
        let report = try XCTUnwrap(found, peripheral.log)
        XCTAssertEqual(report.localName, "BumblePeriph")
        XCTAssertEqual(report.address.description.uppercased().hasPrefix("F0:B1:E1:00:00:01"), true, "\(report.address)")

        let connection = try lab.wait(within: .seconds(10), "the connection") { done in central.host.connect(to: report.address, completion: done) }.get()
        let services = try lab.wait(within: .seconds(10), "discovery") { done in connection.client.discoverAll(completion: done) }.get()
        let service = try XCTUnwrap(services.first { $0.uuid == Self.service }, "\(services)")
        let writeOnly = try XCTUnwrap(service.characteristic(Self.writeOnly))
        let commandOnly = try XCTUnwrap(service.characteristic(Self.commandOnly))
        let notify = try XCTUnwrap(service.characteristic(Self.notify))
        XCTAssertEqual(writeOnly.properties, [.write])
        XCTAssertEqual(commandOnly.properties, [.writeWithoutResponse])
        XCTAssertTrue(notify.properties.contains(.notify))

        var notifications: [[UInt8]] = []
        connection.client.onNotification = { if $0.handle == notify.valueHandle { notifications.append($0.value) } }
        try lab.wait(within: .seconds(10), "the subscription") { done in connection.client.subscribe(to: notify, completion: done) }.get()
        let mark = central.traffic.records.count

        // 1. Write Request to the write-only characteristic: Write Response.
        try lab.wait(within: .seconds(10), "the Write Request") { done in
            connection.client.write(Array("hello".utf8), handle: writeOnly.valueHandle, completion: done)
        }.get()
        // 2. Write Command to the write-without-response-only one: nothing comes back but the echo.
        XCTAssertTrue(connection.client.writeWithoutResponse(Array("there".utf8), handle: commandOnly.valueHandle))
        // 3. Write Request to the write-without-response-only one: Error Response 0x03.
        let refused = try lab.wait(within: .seconds(10), "the refused Write Request") { done in
            connection.client.write(Array("nope".utf8), handle: commandOnly.valueHandle, completion: done)
        }
        XCTAssertEqual(refused.failureCode, .writeNotPermitted, "\(refused)")
        // 4. Write Command to the write-only one: dropped, no answer of any kind.
        XCTAssertTrue(connection.client.writeWithoutResponse(Array("lost".utf8), handle: writeOnly.valueHandle))

        lab.runUntil("both echoes") { notifications.count >= 2 }
        // Bumble logs every write it got; wait until it has logged the last one, then a little more
        // for anything that might still come back.
        _ = try peripheral.process.waitUntil("the fifth write logged", timeout: 10) {
            lab.run(within: .milliseconds(50)) { false }
            return peripheral.lines.events("write").count >= 5 ? true : nil
        }
        lab.run(within: .milliseconds(500)) { false }
        connection.disconnect()
        lab.runUntil("the disconnection") { !connection.isConnected }

        // On our link.
        let after = central.traffic.records[mark...]
        let sent = after.filter(\.wasSent).map { ($0.bytes[0], handleOf($0.bytes)) }
        XCTAssertEqual(sent.map { Op($0.0, $0.1) }, [Op(0x12, writeOnly.valueHandle), Op(0x52, commandOnly.valueHandle),
                                                    Op(0x12, commandOnly.valueHandle), Op(0x52, writeOnly.valueHandle)],
                       "what our central sent")
        let received = after.filter { !$0.wasSent }
        XCTAssertEqual(received.filter { $0.bytes[0] != 0x1B }.map(\.bytes),
                       [[0x13], [0x01, 0x12] + le16(commandOnly.valueHandle) + [0x03]],
                       "a Write Response for the Write Request, Error Response 0x03 (Write Not Permitted) for the refused one, "
                       + "nothing for either Write Command")
        XCTAssertEqual(received.filter { $0.bytes[0] == 0x1B }.map { Array($0.bytes.dropFirst(3)) }, [Array("hello".utf8), Array("there".utf8)],
                       "the echoes of the two accepted writes, by notification")
        XCTAssertEqual(notifications, [Array("hello".utf8), Array("there".utf8)])

        // On Bumble's side: the opcode it received for each write, and whether it took it.
        let writes = peripheral.lines.events("write")
        let seen = writes.map { "\($0["role"] ?? "?") \($0["opcode"] ?? "?") \(($0["accepted"] as? Bool) == true ? "accepted" : "refused")" }
        XCTAssertEqual(seen, ["cccd 0x12 accepted", "write 0x12 accepted", "write-without-response 0x52 accepted",
                              "write-without-response 0x12 refused", "write 0x52 refused"], peripheral.log)
        XCTAssertEqual(writes.map { $0["value_text"] as? String ?? "" }, ["", "hello", "there", "nope", "lost"])
        XCTAssertEqual(peripheral.lines.events("notified").count, 2)
        print("interop (\(transport)) our central → Bumble peripheral: ours sent \(sent.map { String(format: "0x%02x@%d", $0.0, $0.1) }), "
              + "received \(received.map { String(format: "0x%02x", $0.bytes[0]) }); Bumble saw \(seen)")
    }

    // MARK: (b) Bumble's central, our peripheral

    func testABumbleCentralWritesToOurPeripheralThroughRootCanal() throws {
        try bumbleCentralAgainstOurPeripheral(transport: "rootcanal")
    }

    func testABumbleCentralWritesToOurPeripheralThroughBumbleControllers() throws {
        try bumbleCentralAgainstOurPeripheral(transport: "bumble")
    }

    /// The same layout served by a SimulatedPeripheral (a scenario's peripheral on an external
    /// controller), echoing every accepted write by notification; Bumble's central writes each
    /// characteristic both ways.
    static let peripheralYAML = """
    scenario: interop peripheral
    peripherals:
      blelab:
        advertise:
          name: BLELabPeriph
          scan-response: { services: [B1E1AB00-0000-4C0A-B1E1-AB0000000000] }
        gatt:
          - service: B1E1AB00-0000-4C0A-B1E1-AB0000000000
            characteristics:
              - uuid: B1E1AB01-0000-4C0A-B1E1-AB0000000000
                properties: [write]
                on-write: [ { notify: B1E1AB03-0000-4C0A-B1E1-AB0000000000, value: written } ]
              - uuid: B1E1AB02-0000-4C0A-B1E1-AB0000000000
                properties: [write-without-response]
                on-write: [ { notify: B1E1AB03-0000-4C0A-B1E1-AB0000000000, value: written } ]
              - { uuid: B1E1AB03-0000-4C0A-B1E1-AB0000000000, properties: [notify] }
    central:
      - scan: { for: 1s }
    """

    private func bumbleCentralAgainstOurPeripheral(transport: String) throws {
        let backend = try Tiers.backend(transport)
        try backend.prepare(deviceCount: 2)
        defer { backend.shutDown() }
        let lab = try backend.makeLab(seed: 1)
        defer { lab.shutDown() }
        let spec = try XCTUnwrap(Scenario.parse(Self.peripheralYAML, file: "interop.yaml").peripherals.first)
        let ours = try lab.addPeripheral(spec)
        try lab.powerOn()
        try lab.wait(within: .seconds(5), "advertising") { done in ours.start(completion: done) }.get()

        let peerEndpoint = backend.rootCanal?.endpoint ?? backend.bumble!.endpoints[1]
        let central = try BumblePeer("bumble_central.py", [
            peerEndpoint.argument, "--target", "BLELabPeriph", "--no-defaults",
            "--subscribe", Self.notify.description,
            "--write", "\(Self.writeOnly):request:hello", "--write", "\(Self.commandOnly):command:there",
            "--write", "\(Self.commandOnly):request:nope", "--write", "\(Self.writeOnly):command:lost",
            "--allow-write-errors", "--expect-notifications", "2", "--listen", "0.5", "--timeout", "40",
        ], name: "bumble-central")
        defer { print(central.stop()) }
        // Our peripheral lives on this loop: run it while Bumble's central does its part.
        let ticker = Ticker(lab.loop)
        lab.runUntil("Bumble's central to finish", seconds: 45) { !central.process.isRunning }
        ticker.stop()
        XCTAssertEqual(central.process.exit, .exited(0), central.log)

        // Bumble's account: the opcode its GATT client handed to L2CAP, and the outcome.
        let writes = central.lines.events("write")
        let bumbleSaw = writes.map { w -> String in
            let outcome = (w["ok"] as? Bool) == true ? "ok" : "error \(w["error"] ?? "?")"
            return "\(w["value_text"] ?? "?") \(w["opcode"] ?? "?") \(outcome)"
        }
        XCTAssertEqual(bumbleSaw, ["hello 0x12 ok", "there 0x52 ok", "nope 0x12 error ATT error 0x03 WRITE_NOT_PERMITTED", "lost 0x52 ok"],
                       central.log)
        XCTAssertEqual(central.lines.events("notification").compactMap { $0["value_text"] as? String }, ["hello", "there"], central.log)
        XCTAssertEqual(central.lines.first("done")?["ok"] as? Bool, true, central.log)

        // Ours: what our peripheral's HCI carried.
        let handles = try XCTUnwrap(ours.handles(for: CharacteristicRef(Self.writeOnly)))
        let commandHandles = try XCTUnwrap(ours.handles(for: CharacteristicRef(Self.commandOnly)))
        let notifyHandles = try XCTUnwrap(ours.handles(for: CharacteristicRef(Self.notify)))
        let traffic = ours.device.traffic.records
        let received = traffic.filter { !$0.wasSent && [0x12, 0x52].contains($0.bytes[0]) }.map { Op($0.bytes[0], handleOf($0.bytes)) }
        let cccd = try XCTUnwrap(notifyHandles.configurationHandle)
        XCTAssertEqual(received, [Op(0x12, cccd), Op(0x12, handles.valueHandle), Op(0x52, commandHandles.valueHandle),
                                  Op(0x12, commandHandles.valueHandle), Op(0x52, handles.valueHandle)], "what Bumble's central sent us")
        // Answers to writes (discovery's "Attribute Not Found" Error Responses aside).
        let answers = traffic.filter { $0.wasSent && ($0.bytes[0] == 0x13 || ($0.bytes[0] == 0x01 && $0.bytes.count > 1 && $0.bytes[1] == 0x12)) }
            .map(\.bytes)
        XCTAssertEqual(answers, [[0x13], [0x13], [0x01, 0x12] + le16(commandHandles.valueHandle) + [0x03]],
                       "Write Responses for the CCCD and the write-only characteristic, Error Response 0x03 for the refused one")
        let notified = traffic.filter { $0.wasSent && $0.bytes[0] == 0x1B }
        XCTAssertEqual(notified.map { handleOf($0.bytes) }, [notifyHandles.valueHandle, notifyHandles.valueHandle])
        XCTAssertEqual(notified.map { Array($0.bytes.dropFirst(3)) }, [Array("hello".utf8), Array("there".utf8)])
        print("interop (\(transport)) Bumble central → our peripheral: ours received \(received), answered \(answers.map { $0[0] }); "
              + "Bumble saw \(bumbleSaw)")
    }
}

/// An ATT opcode on a handle.
struct Op: Equatable, CustomStringConvertible {
    var opcode: UInt8
    var handle: UInt16
    init(_ opcode: UInt8, _ handle: UInt16) {
        self.opcode = opcode
        self.handle = handle
    }
    var description: String { String(format: "0x%02x@%d", opcode, handle) }
}

/// The attribute handle of an ATT PDU that has one after its opcode (writes, notifications).
func handleOf(_ bytes: [UInt8]) -> UInt16 { bytes.count >= 3 ? UInt16(bytes[1]) | UInt16(bytes[2]) << 8 : 0 }
func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

extension Result where Failure == GATTError {
    var failureCode: ATTErrorCode? {
        if case let .failure(error) = self { return error.attErrorCode }
        return nil
    }
}

/// Wakes a lab's loop every 50 ms, so a condition about the outside world (a process that exits)
/// is checked even when no packet arrives.
final class Ticker {
    private var timer: LoopTimer?
    private let loop: EventLoop

    init(_ loop: EventLoop) {
        self.loop = loop
        tick()
    }

    private func tick() {
        timer = loop.schedule(after: .milliseconds(50)) { [weak self] in self?.tick() }
    }

    func stop() { timer?.cancel() }
}

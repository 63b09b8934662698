import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import LabTiers
import ScenarioEngine
import XCTest

/// `blelab hostile`'s target on the sim (virtual time, no venv): what it reports is what its host
/// raised, numbered by connection, as the JSON lines tools/hostile_peer.py compares.
final class HostileTargetTests: XCTestCase {
    static let targetAddress = BDAddr(string: "C0:B1:E1:00:00:01")!

    final class Events {
        var all: [JSONValue] = []
        func named(_ name: String) -> [JSONValue] { all.filter { $0["event"] == .string(name) } }
        /// `connection layer/kind -> answer` of each violation.
        var violations: [String] {
            named("violation").map { e in
                let c: String
                if case let .int(n)? = e["connection"] { c = String(n) } else { c = "-" }
                return "\(c) \(text(e["layer"]))/\(text(e["kind"])) -> \(text(e["answer"]))"
            }
        }
        func text(_ v: JSONValue?) -> String {
            if case let .string(s)? = v { return s }
            return "?"
        }
    }

    private func makeLab() throws -> (Lab, LabDevice, LabDevice) {
        let lab = Lab(seed: 5)
        let target = try lab.addDevice("target", configuration: HostConfiguration(randomAddress: Self.targetAddress, deviceName: "BLELabHostile"))
        let peer = try lab.addDevice("peer")
        try lab.powerOn()
        return (lab, target, peer)
    }

    func testPeripheralReportsEachViolationOnItsConnectionAndAdvertisesAgain() throws {
        let (lab, target, peer) = try makeLab()
        let events = Events()
        let hostile = HostileTarget(device: target, role: .peripheral) { events.all.append($0) }
        let started: Result<Void, HostError> = try lab.wait { done in hostile.start(completion: done) }
        XCTAssertNoThrow(try started.get())
        XCTAssertEqual(events.named("advertising").count, 1)

        for round in 1...2 {
            let connected: Result<Connection, HostError> = try lab.wait { done in
                peer.host.connect(to: LEAddress(Self.targetAddress, type: .random), completion: done)
            }
            let connection = try connected.get()
            let link = connection.link
            lab.run(for: .milliseconds(50))
            link.send(cid: 0x0040, payload: [0x01, 0x02])                                 // no such channel
            link.send(cid: L2CAPChannelID.leSignaling, payload: [0x02, 0x07, 0x00, 0x00])  // a BR/EDR-only code
            link.send(cid: L2CAPChannelID.smp, payload: [0x03] + [UInt8](repeating: 0, count: 16))  // Pairing Confirm, no pairing
            link.send(cid: L2CAPChannelID.att, payload: [0x0A, 0x01])                      // Read Request cut short
            link.send(cid: L2CAPChannelID.att, payload: [0x1B, 0xF0, 0xFF, 0x41])          // notification, never discovered
            lab.run(for: .milliseconds(200))
            let done: Result<Void, HostError> = try lab.wait { finished in connection.disconnect(completion: finished) }
            XCTAssertNoThrow(try done.get())
            lab.run(for: .milliseconds(200))
            XCTAssertEqual(events.named("disconnected").count, round)
            XCTAssertEqual(events.named("advertising").count, round + 1, "advertising again after each disconnection")
        }
        let perRound = ["l2cap/unknown-channel -> none", "signaling/unknown-code -> command-reject 0x0000",
                        "smp/unexpected-command -> pairing-failed 0x07", "att/malformed-pdu -> error-response 0x0a 0x04",
                        "gatt/notification-for-unknown-handle -> none"]
        XCTAssertEqual(events.violations, perRound.map { "1 " + $0 } + perRound.map { "2 " + $0 })
        XCTAssertEqual(hostile.connectionCount, 2)
        XCTAssertEqual(hostile.violationCount, 10)
        XCTAssertNil(hostile.failure)
    }

    func testCentralRunsItsGATTScriptToTheDeviceNameReadOnEachConnection() throws {
        let (lab, target, peer) = try makeLab()
        _ = try peer.host.gattServer.addService(GATTService(uuid: BluetoothUUID(uuid16: 0xFFE0), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(uuid16: 0xFFE1), properties: [.read, .write, .notify], value: [0x41]),
        ]))
        var peerLinks: [Connection] = []
        peer.host.onConnection = { peerLinks.append($0) }
        let ad = AdvertisingData([.flags(0x06)])
        let advertising: Result<Void, HostError> = try lab.wait { peer.host.startAdvertising(AdvertisingConfiguration(data: ad), completion: $0) }
        XCTAssertNoThrow(try advertising.get())

        let events = Events()
        let hostile = HostileTarget(device: target, role: .central, peer: peer.host.address) { events.all.append($0) }
        let started: Result<Void, HostError> = try lab.wait { done in hostile.start(completion: done) }
        XCTAssertNoThrow(try started.get())
        XCTAssertTrue(lab.run(within: .seconds(10)) { events.named("script-done").count == 1 })
        let procedures = events.named("gatt").map { events.text($0["procedure"]) + " " + events.text($0["result"]) }
        XCTAssertEqual(procedures.first, "exchange-mtu ok")
        XCTAssertTrue(procedures.contains("discover-all ok"), "\(procedures)")
        XCTAssertTrue(procedures.contains { $0.hasPrefix("read 0x") && $0.hasSuffix(" ok") }, "\(procedures)")
        XCTAssertTrue(procedures.contains { $0.hasPrefix("subscribe 0x") && $0.hasSuffix(" ok") }, "\(procedures)")
        XCTAssertEqual(procedures.last, "read-device-name ok")
        XCTAssertEqual(events.violations, [])

        // The peer ends the link: the central comes back for another round.
        peerLinks.last?.disconnect()
        XCTAssertTrue(lab.run(within: .seconds(5)) { events.named("disconnected").count == 1 })
        peer.host.startAdvertising(AdvertisingConfiguration(data: ad))
        XCTAssertTrue(lab.run(within: .seconds(10)) { events.named("script-done").count == 2 })
        XCTAssertEqual(hostile.connectionCount, 2)

        var stopped = false
        hostile.stop { stopped = true }
        XCTAssertTrue(lab.run(within: .seconds(5)) { stopped })
        XCTAssertEqual(events.named("disconnected").count, 2)
    }

    /// The service a hostile peer meets in both roles: the slow characteristic's read is answered
    /// a second later, so a request right behind it is pipelined whatever the timing (reported,
    /// and the link dropped with 0x13); the long one comes back cut to ATT_MTU - 4 in a Read By
    /// Type, which shows the ATT_MTU a repeated Exchange MTU did not change.
    func testTheSlowReadMakesPipeliningCertainAndTheLongReadShowsATTMTU() throws {
        let (lab, target, peer) = try makeLab()
        let events = Events()
        let hostile = HostileTarget(device: target, role: .peripheral) { events.all.append($0) }
        let started: Result<Void, HostError> = try lab.wait { done in hostile.start(completion: done) }
        XCTAssertNoThrow(try started.get())
        func connect() throws -> Connection {
            let connected: Result<Connection, HostError> = try lab.wait { done in
                peer.host.connect(to: LEAddress(Self.targetAddress, type: .random), completion: done)
            }
            return try connected.get()
        }
        let first = try connect()
        let bearer = first.bearer
        bearer.preferredMTU = 100
        XCTAssertEqual(try lab.wait { done in first.client.exchangeMTU(completion: done) }.get(), 100)
        XCTAssertTrue(bearer.sendUnchecked([0x02, 0x17, 0x00]))                         // again, Client Rx MTU 23
        lab.run(for: .milliseconds(200))
        let long = try lab.wait { done in
            bearer.send(request: .readByTypeRequest(ATTReadByTypeRequest(range: .all, attributeType: HostileTarget.longUUID)), completion: done)
        }
        guard case let .readByTypeResponse(response) = try long.get() else { return XCTFail("\(long)") }
        XCTAssertEqual(response.entries.first?.value, Array(HostileTarget.longValue.prefix(96)), "ATT_MTU 100 kept: 100 - 4 octets")

        var slowAnswer: Result<ATTPDU, ATTError>?
        let start = lab.loop.now
        bearer.send(request: .readByTypeRequest(ATTReadByTypeRequest(range: .all, attributeType: HostileTarget.slowReadUUID))) { slowAnswer = $0 }
        XCTAssertTrue(lab.run(within: .seconds(2)) { slowAnswer != nil })
        guard case let .readByTypeResponse(slow)? = try slowAnswer?.get() else { return XCTFail("\(String(describing: slowAnswer))") }
        XCTAssertEqual(slow.entries.first?.value, Array("slow".utf8))
        XCTAssertGreaterThanOrEqual(lab.loop.now - start, HostileTarget.slowReadDelay, "answered by the application a second later")

        XCTAssertTrue(bearer.sendUnchecked([0x08, 0x01, 0x00, 0xFF, 0xFF] + HostileTarget.slowReadUUID.littleEndianBytes))
        lab.run(for: .milliseconds(300))
        XCTAssertTrue(bearer.sendUnchecked([0x0A, 0x01, 0x00]))                         // before the answer: pipelined
        XCTAssertTrue(lab.run(within: .seconds(2)) { !first.isConnected })
        XCTAssertEqual(first.disconnectReason, .remoteUserTerminatedConnection)
        XCTAssertEqual(events.violations, ["1 att/repeated-mtu-exchange -> none", "1 att/pipelined-request -> disconnect 0x13"])
        XCTAssertTrue(lab.run(within: .seconds(2)) { events.named("advertising").count == 2 }, "advertising again for the next round")
        let second = try connect()
        XCTAssertTrue(second.isConnected)
        XCTAssertTrue(lab.run(within: .seconds(1)) { hostile.connectionCount == 2 }, "a new connection for the next round")
    }
}

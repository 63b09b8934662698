import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import HCI
import XCTest

/// connect / cancelPeripheralConnection and the disconnection errors.
final class ConnectionTests: LabTestCase {
    func testConnectReportsDidConnectWithTheMTUAlreadyExchanged() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try discover("HMSoft", with: central, recorder)
        XCTAssertEqual(peripheral.state, .disconnected)
        central.connect(peripheral, options: nil)
        XCTAssertEqual(peripheral.state, .connecting)
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .connected })
        XCTAssertEqual(recorder.events.last, "connect HMSoft")
        XCTAssertEqual(peripheral.maximumWriteValueLength(for: .withoutResponse), 244, "ATT_MTU 247 − 3")
        XCTAssertEqual(peripheral.maximumWriteValueLength(for: .withResponse), 512)
    }

    /// Easy to get wrong: an app-initiated disconnection is reported with a nil error.
    func testCancelPeripheralConnectionGivesDidDisconnectWithNilError() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("HMSoft", with: central, recorder)
        central.cancelPeripheralConnection(peripheral)
        XCTAssertEqual(peripheral.state, .disconnecting)
        XCTAssertTrue(lab.run(within: .seconds(2)) { peripheral.state == .disconnected })
        XCTAssertEqual(recorder.events.last, "disconnect HMSoft")
        XCTAssertNil(recorder.errors["disconnect HMSoft"])
    }

    /// Easy to get wrong: a peripheral that goes away (powered off) is reported with an error,
    /// after the supervision timeout.
    func testAPeripheralGoingAwayGivesDidDisconnectWithAnError() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("HMSoft", with: central, recorder)
        let wentAway = lab.now
        lab.powerOff(hm10)
        XCTAssertTrue(lab.run(within: .seconds(10)) { peripheral.state == .disconnected })
        XCTAssertGreaterThanOrEqual(lab.now - wentAway, .seconds(4), "noticed only after the supervision timeout")
        let error = try XCTUnwrap(recorder.errors["disconnect HMSoft"])
        XCTAssertEqual((error as? CBError)?.code, .connectionTimeout)
        XCTAssertEqual((error as NSError).domain, CBErrorDomain)
        XCTAssertEqual((error as NSError).localizedDescription, "The connection has timed out unexpectedly.")
    }

    func testAPeripheralThatDisconnectsGivesPeripheralDisconnected() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("HMSoft", with: central, recorder)
        hm10.perform([.disconnect(nil)])
        XCTAssertTrue(lab.run(within: .seconds(2)) { peripheral.state == .disconnected })
        guard case CBError.peripheralDisconnected? = recorder.errors["disconnect HMSoft"] else {
            return XCTFail("expected CBError.peripheralDisconnected, got \(String(describing: recorder.errors["disconnect HMSoft"]))")
        }
    }

    func testCancellingAPendingConnectionGivesDidDisconnectWithNilError() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try discover("HMSoft", with: central, recorder)
        lab.setInRange(false, hm10)
        central.connect(peripheral)
        lab.run(for: .seconds(3))
        XCTAssertEqual(peripheral.state, .connecting, "connection attempts never time out")
        central.cancelPeripheralConnection(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(1)) { peripheral.state == .disconnected })
        lab.run(for: .milliseconds(100))
        XCTAssertEqual(recorder.events.last, "disconnect HMSoft")
        XCTAssertNil(recorder.errors["disconnect HMSoft"])
    }

    func testRetrievePeripheralsByIdentifierConnectsWithoutScanning() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let first = CentralRecorder()
        let firstCentral = poweredCentral(first)
        let identifier = try discover("HMSoft", with: firstCentral, first).identifier

        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let retrieved = central.retrievePeripherals(withIdentifiers: [identifier])
        XCTAssertEqual(retrieved.map(\.identifier), [identifier])
        central.connect(retrieved[0])
        XCTAssertTrue(lab.run(within: .seconds(5)) { retrieved[0].state == .connected })
        XCTAssertEqual(central.retrieveConnectedPeripherals(withServices: [CBUUID(string: "FFE0")]).count, 0,
                       "services neither advertised to this central nor discovered yet")
        retrieved[0].delegate = recorder
        retrieved[0].discoverServices(nil)
        XCTAssertTrue(lab.run(within: .seconds(5)) { retrieved[0].services != nil })
        XCTAssertEqual(central.retrieveConnectedPeripherals(withServices: [CBUUID(string: "FFE0")]).map(\.identifier), [identifier])
    }

    func testConnectionsToTwoPeripheralsAreMadeOneAfterTheOther() throws {
        try lab.addPeripheral(Peripherals.hm10())
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        central.scanForPeripherals(withServices: nil)
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.discovered.count == 2 })
        for p in recorder.discovered { central.connect(p) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.discovered.allSatisfy { $0.state == .connected } })
        XCTAssertEqual(recorder.count("connect"), 2)
    }

    /// The auto-reconnect pattern: a connect to a device that is away stays pending and does
    /// not hold up a connect to another. Both wait together in the controller's Filter Accept
    /// List (LE Create Connection with Initiator_Filter_Policy 0x01, Vol 6 Part B 4.3.5), and
    /// the absent one connects when it comes back.
    func testAPendingConnectToAnAbsentDeviceDoesNotBlockOthers() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let probe = try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        central.scanForPeripherals(withServices: nil)
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.discovered.count == 2 })
        central.stopScan()
        let away = try XCTUnwrap(recorder.discovered.first { $0.name == "HMSoft" })
        let present = try XCTUnwrap(recorder.discovered.first { $0.name != "HMSoft" })
        lab.setInRange(false, hm10)
        let log = try XCTUnwrap(lab.device(of: central)).log
        let before = log.packets.count
        central.connect(away)
        lab.run(for: .seconds(2))
        central.connect(present)
        XCTAssertTrue(lab.run(within: .seconds(5)) { present.state == .connected }, "the second connect was held up")
        XCTAssertEqual(away.state, .connecting, "still pending")
        // On the central's HCI: the list holds both addresses, then LE Create Connection uses it.
        let commands = log.packets.dropFirst(before).filter { $0.direction == .hostToController && $0.frame.first == 0x01 }.map(\.frame)
        let adds = commands.filter { $0.count > 3 && $0[1] == 0x11 && $0[2] == 0x20 }   // LE Add Device To Filter Accept List
        XCTAssertEqual(Set(adds.map { Array($0[5...10]) }), Set([hm10.device.address.address.littleEndianBytes, probe.device.address.address.littleEndianBytes]))
        let creates = commands.filter { $0.count > 8 && $0[1] == 0x0D && $0[2] == 0x20 }      // LE Create Connection
        XCTAssertEqual(creates.first?[8], 0x00, "one pending: a direct connection")
        XCTAssertEqual(creates.dropFirst().first?[8], 0x01, "two pending: the Filter Accept List")
        lab.setInRange(true, hm10)
        XCTAssertTrue(lab.run(within: .seconds(5)) { away.state == .connected })
        XCTAssertEqual(recorder.count("connect"), 2)
        XCTAssertEqual(recorder.count("fail"), 0)
    }

    /// Cancelling one of several pending connects leaves the others pending.
    func testCancellingOnePendingConnectKeepsTheOthers() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let probe = try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        central.scanForPeripherals(withServices: nil)
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.discovered.count == 2 })
        central.stopScan()
        lab.setInRange(false, hm10)
        lab.setInRange(false, probe)
        let a = try XCTUnwrap(recorder.discovered.first { $0.name == "HMSoft" })
        let b = try XCTUnwrap(recorder.discovered.first { $0.name != "HMSoft" })
        central.connect(a)
        central.connect(b)
        lab.run(for: .seconds(1))
        central.cancelPeripheralConnection(a)
        XCTAssertTrue(lab.run(within: .seconds(1)) { a.state == .disconnected })
        XCTAssertEqual(b.state, .connecting)
        lab.setInRange(true, hm10)
        lab.setInRange(true, probe)
        XCTAssertTrue(lab.run(within: .seconds(5)) { b.state == .connected })
        lab.run(for: .seconds(2))
        XCTAssertEqual(a.state, .disconnected, "the cancelled one does not connect")
        XCTAssertNil(recorder.errors["disconnect HMSoft"])
    }

    /// Places the peripherals of a scenario file (written to a temporary file) holding one
    /// module: `advertise`, then the peripheral keys in `more` (one per line), and FFE0/FFE1.
    private func addModule(to lab: CBLab, advertise: String, more: String = "") throws {
        let path = NSTemporaryDirectory() + "/cblab-module-\(getpid())-\(UUID().uuidString).yaml"
        let extra = more.split(separator: "\n").map { "    \($0)\n" }.joined()
        try """
        scenario: a module
        peripherals:
          module:
            advertise: \(advertise)
        \(extra)    gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [read], value: "hex:2a" }
        central:
          - wait: 1s
        """.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try lab.addPeripherals(fromScenario: path)
    }

    /// A scenario file's `mtu:` and `link:` come with its peripherals: `mtu: 23` is the ATT_MTU
    /// the app gets, and the link's latency delays every PDU each way.
    func testPeripheralsFromAScenarioKeepTheirMTUAndLink() throws {
        try addModule(to: lab, advertise: "{ name: OldModule, services: [FFE0] }", more: "mtu: 23\nlink: { latency: 200ms }")
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("OldModule", with: central, recorder)
        XCTAssertEqual(peripheral.maximumWriteValueLength(for: .withoutResponse), 20, "ATT_MTU 23 − 3, not 247 − 3")
        let characteristic = try XCTUnwrap(peripheral.services?.first?.characteristics?.first)
        let asked = lab.now
        var answered: Instant?
        recorder.onValue = { _ in answered = self.lab.now }
        peripheral.readValue(for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(5)) { answered != nil })
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(answered) - asked, .milliseconds(400), "the request and the response each 200 ms late")
    }

    /// The auto-reconnect pattern: connect again from didDisconnectPeripheral. A scenario
    /// peripheral advertises again when the link ends (as most firmware does), so the second
    /// connect completes with no `on-disconnect:` in the file; with `resume-after-disconnect:
    /// false` it stays pending, as against a device that went silent.
    func testScenarioPeripheralsCanBeConnectedAgainAfterADisconnection() throws {
        for resumes in [true, false] {
            let lab = CBLab(seed: 11)
            try addModule(to: lab, advertise: "{ name: Module, services: [FFE0]\(resumes ? "" : ", resume-after-disconnect: false") }")
            let recorder = CentralRecorder()
            let central = lab.attach { CBCentralManager(delegate: recorder, queue: nil) }
            XCTAssertTrue(lab.run(within: .seconds(5)) { central.state == .poweredOn })
            central.scanForPeripherals(withServices: nil)
            XCTAssertTrue(lab.run(within: .seconds(5)) { !recorder.discovered.isEmpty })
            central.stopScan()
            let peripheral = try XCTUnwrap(recorder.discovered.first)
            central.connect(peripheral)
            XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .connected })
            central.cancelPeripheralConnection(peripheral)
            XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .disconnected })
            central.connect(peripheral)
            let connected = lab.run(within: .seconds(5)) { peripheral.state == .connected }
            XCTAssertEqual(connected, resumes, "resume-after-disconnect: \(resumes)")
            XCTAssertEqual(recorder.count("connect"), resumes ? 2 : 1)
        }
    }

    func testPoweringTheCentralOffDropsConnectionsWithoutDisconnectCallbacks() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("HMSoft", with: central, recorder)
        lab.powerOff(central)
        XCTAssertEqual(peripheral.state, .disconnected)
        XCTAssertEqual(recorder.events.last, "state poweredOff")
        XCTAssertEqual(recorder.count("disconnect"), 0)
        lab.run(for: .seconds(10))
        XCTAssertEqual(recorder.count("disconnect"), 0)
    }

    func testAfterAResetPeripheralsAreDiscoveredAnew() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let before = try discover("HMSoft", with: central, recorder)
        lab.powerOff(central)
        lab.powerOn(central)
        XCTAssertTrue(lab.run(within: .seconds(5)) { central.state == .poweredOn })
        XCTAssertTrue(central.retrievePeripherals(withIdentifiers: [before.identifier]).first === before, "kept over a power-off")
        lab.reset(central)
        XCTAssertTrue(lab.run(within: .seconds(5)) { central.state == .poweredOn })
        let after = try XCTUnwrap(central.retrievePeripherals(withIdentifiers: [before.identifier]).first)
        XCTAssertFalse(after === before, "invalid below powered off: a new object")
        XCTAssertEqual(after.identifier, before.identifier)
    }
}

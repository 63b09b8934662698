import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import XCTest

/// State restoration: a new central manager with the restore identifier of an earlier one (the
/// app relaunched) takes over its device, links, pending connects and scan.
final class StateRestorationTests: LabTestCase {
    private let restoreKey = [CBCentralManagerOptionRestoreIdentifierKey: "com.example.serial"]

    /// LE Create Connection commands in the device's HCI log since `start`.
    private func createConnections(_ device: LabDevice, since start: Instant) -> Int {
        device.log.packets.filter { $0.time >= start && $0.direction == .hostToController && $0.frame.starts(with: [0x01, 0x0D, 0x20]) }.count
    }

    func testARelaunchedAppGetsItsConnectedPeripheralOnTheSameLinkAndItsScan() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        try lab.addPeripheral(Peripherals.probe())
        let first = CentralRecorder()
        var central: CBCentralManager? = lab.attach { CBCentralManager(delegate: first, queue: nil, options: restoreKey) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { central?.state == .poweredOn })
        let before = try connectAndDiscover("HMSoft", with: try XCTUnwrap(central), first)
        let identifier = before.identifier
        let device = try XCTUnwrap(lab.device(of: try XCTUnwrap(central)))
        let handle = try XCTUnwrap(device.host.connections.keys.first)
        central?.scanForPeripherals(withServices: [CBUUID(string: "FFF0")])
        lab.run(for: .milliseconds(300))

        // The app is terminated: its manager goes away; the system keeps the link and the scan.
        weak let released = central
        central = nil
        XCTAssertNil(released, "the earlier manager is gone: restored from what it left")
        lab.run(for: .seconds(2))
        XCTAssertEqual(hm10.host.connections.count, 1, "the link outlived the app")
        let relaunch = lab.now

        let second = CentralRecorder()
        let restored = lab.attach { CBCentralManager(delegate: second, queue: nil, options: restoreKey) }
        XCTAssertTrue(lab.device(of: restored) === device, "the same phone")
        XCTAssertTrue(lab.run(within: .seconds(2)) { restored.state == .poweredOn })
        XCTAssertEqual(Array(second.events.prefix(2)), ["restore HMSoft connected scan FFF0", "state poweredOn"],
                       "willRestoreState first, then the state")
        let peripheral = try XCTUnwrap((second.restoredState?[CBCentralManagerRestoredStatePeripheralsKey] as? [CBPeripheral])?.first)
        XCTAssertEqual(peripheral.identifier, identifier)
        XCTAssertEqual(peripheral.state, .connected)
        XCTAssertNil(peripheral.services, "the app discovers again")
        XCTAssertTrue(restored.isScanning, "the scan goes on")
        XCTAssertNotNil(second.restoredState?[CBCentralManagerRestoredStateScanOptionsKey] as? [String: Any])

        // The restored peripheral works over the same link: no new connection was made.
        peripheral.delegate = second
        second.onServices = { p in for s in p.services ?? [] { p.discoverCharacteristics(nil, for: s) } }
        peripheral.discoverServices(nil)
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.services?.first?.characteristics != nil })
        peripheral.readValue(for: try characteristic("FFE1", of: peripheral))
        XCTAssertTrue(lab.run(within: .seconds(2)) { second.count("value FFE1") == 1 })
        XCTAssertEqual(second.events.last, "value FFE1 \(Array("ready".utf8).map { String(format: "%02x", $0) }.joined())")
        XCTAssertEqual(createConnections(device, since: relaunch), 0)
        XCTAssertEqual(Array(device.host.connections.keys), [handle])
        XCTAssertTrue(lab.run(within: .seconds(2)) { second.count("discover Probe") > 0 }, "the restored scan reports to the new manager")
        XCTAssertEqual(first.count("value"), 0)
    }

    func testAPendingConnectIsRestoredAndCompletesForTheNewManager() throws {
        let probeSpec = Peripherals.probe()
        let first = CentralRecorder()
        var central: CBCentralManager? = lab.attach { CBCentralManager(delegate: first, queue: nil, options: restoreKey) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { central?.state == .poweredOn })
        let probe = try lab.addPeripheral(probeSpec)
        let waiting = try discover("Probe", with: try XCTUnwrap(central), first)
        lab.powerOff(probe)
        central?.connect(waiting)
        lab.run(for: .seconds(1))
        XCTAssertEqual(waiting.state, .connecting)
        central = nil

        let second = CentralRecorder()
        let restored = lab.attach { CBCentralManager(delegate: second, queue: nil, options: restoreKey) }
        XCTAssertTrue(lab.run(within: .seconds(2)) { restored.state == .poweredOn })
        XCTAssertEqual(second.events.first, "restore Probe connecting scan none")
        let peripheral = try XCTUnwrap((second.restoredState?[CBCentralManagerRestoredStatePeripheralsKey] as? [CBPeripheral])?.first)
        lab.powerOn(probe)
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .connected })
        XCTAssertEqual(second.events.last, "connect Probe")
        XCTAssertEqual(first.count("connect"), 0)
    }

    func testTheEarlierManagerStillAliveHearsNothingMore() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let first = CentralRecorder()
        let earlier = lab.attach { CBCentralManager(delegate: first, queue: nil, options: restoreKey) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { earlier.state == .poweredOn })
        let old = try connectAndDiscover("HMSoft", with: earlier, first)
        let second = CentralRecorder()
        let restored = lab.attach { CBCentralManager(delegate: second, queue: nil, options: restoreKey) }
        XCTAssertTrue(lab.run(within: .seconds(2)) { restored.state == .poweredOn })
        XCTAssertEqual(old.state, .disconnected, "the earlier object no longer has the link")
        let eventsBefore = first.events
        hm10.perform([.disconnect(nil)])
        XCTAssertTrue(lab.run(within: .seconds(2)) { second.count("disconnect") == 1 })
        XCTAssertEqual(second.events.last, "disconnect HMSoft error CBErrorDomain 7")
        XCTAssertEqual(first.events, eventsBefore)
    }

    func testWithoutTheSameIdentifierANewManagerIsANewPhone() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let first = CentralRecorder()
        let earlier = lab.attach { CBCentralManager(delegate: first, queue: nil, options: restoreKey) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { earlier.state == .poweredOn })
        _ = try connectAndDiscover("HMSoft", with: earlier, first)
        let second = CentralRecorder()
        let other = lab.attach {
            CBCentralManager(delegate: second, queue: nil, options: [CBCentralManagerOptionRestoreIdentifierKey: "another.app"])
        }
        XCTAssertTrue(lab.run(within: .seconds(5)) { other.state == .poweredOn })
        XCTAssertEqual(second.events, ["state poweredOn"], "no willRestoreState")
        XCTAssertFalse(lab.device(of: other) === lab.device(of: earlier))
    }
}

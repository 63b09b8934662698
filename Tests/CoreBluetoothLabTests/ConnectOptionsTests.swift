import BLELab
import BLERuntime
import CoreBluetoothLab
import Foundation
import XCTest

/// A delegate written before iOS 17: only `centralManager(_:didDisconnectPeripheral:error:)`.
private final class OldStyleDelegate: NSObject, CBCentralManagerDelegate {
    var disconnections: [(CBPeripheral, Error?)] = []
    func centralManagerDidUpdateState(_ central: CBCentralManager) {}
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        disconnections.append((peripheral, error))
    }
}

/// connect options (start delay, iOS 17 auto-reconnect) and connection events.
final class ConnectOptionsTests: LabTestCase {
    /// LE Create Connection (OGF 0x08, OCF 0x00D) commands in `central`'s HCI log.
    private func createConnections(_ central: CBCentralManager) throws -> [Instant] {
        try XCTUnwrap(lab.device(of: central)).log.packets
            .filter { $0.direction == .hostToController && $0.frame.starts(with: [0x01, 0x0D, 0x20]) }.map(\.time)
    }

    // MARK: Start delay

    func testStartDelayHoldsTheConnectForThatMuchVirtualTime() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try discover("HMSoft", with: central, recorder)
        let asked = lab.now
        central.connect(peripheral, options: [CBConnectPeripheralOptionStartDelayKey: NSNumber(value: 2)])
        XCTAssertEqual(peripheral.state, .connecting)
        lab.run(for: .milliseconds(1_900))
        XCTAssertEqual(try createConnections(central), [], "nothing sent during the delay")
        XCTAssertEqual(recorder.count("connect"), 0)
        XCTAssertTrue(lab.run(within: .seconds(3)) { peripheral.state == .connected })
        let sent = try XCTUnwrap(try createConnections(central).first)
        XCTAssertGreaterThanOrEqual(sent - asked, .seconds(2))
        XCTAssertLessThan(sent - asked, .milliseconds(2_100))
        XCTAssertEqual(recorder.events.last, "connect HMSoft")
    }

    func testCancellingADelayedConnectSendsNothing() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try discover("HMSoft", with: central, recorder)
        central.connect(peripheral, options: [CBConnectPeripheralOptionStartDelayKey: 1.5])
        lab.run(for: .milliseconds(500))
        central.cancelPeripheralConnection(peripheral)
        XCTAssertEqual(peripheral.state, .disconnected)
        lab.run(for: .seconds(3))
        XCTAssertEqual(try createConnections(central), [])
        XCTAssertEqual(recorder.events.last, "disconnect HMSoft")
        XCTAssertNil(recorder.errors["disconnect HMSoft"])
        XCTAssertEqual(recorder.count("connect"), 0)
    }

    // MARK: Auto-reconnect

    func testAutoReconnectReportsIsReconnectingAndConnectsAgainWhenThePeripheralIsBack() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try discover("HMSoft", with: central, recorder)
        central.connect(peripheral, options: [CBConnectPeripheralOptionEnableAutoReconnect: true])
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .connected })
        lab.powerOff(hm10)
        XCTAssertTrue(lab.run(within: .seconds(10)) { recorder.count("disconnect") == 1 })
        let lost = lab.now
        XCTAssertEqual(recorder.events.last, "disconnect HMSoft reconnecting error CBErrorDomain 6")
        XCTAssertEqual(recorder.disconnectionTimestamps.last ?? -1, lost.seconds, accuracy: 0.000_001, "the lab's virtual time")
        XCTAssertEqual(peripheral.state, .connecting, "the system reconnects by itself")
        lab.run(for: .seconds(5))
        XCTAssertEqual(recorder.count("connect HMSoft"), 1, "not back yet")
        lab.powerOn(hm10)
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.count("connect HMSoft") == 2 })
        XCTAssertEqual(peripheral.state, .connected)
        XCTAssertEqual(hm10.host.connections.count, 1, "a new link")

        // The app ending the link ends the reconnecting too.
        central.cancelPeripheralConnection(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(2)) { peripheral.state == .disconnected })
        XCTAssertEqual(recorder.events.last, "disconnect HMSoft")
        lab.run(for: .seconds(3))
        XCTAssertEqual(peripheral.state, .disconnected)
        XCTAssertEqual(recorder.count("connect HMSoft"), 2)
    }

    func testWithoutAutoReconnectALostLinkStaysDown() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try discover("HMSoft", with: central, recorder)
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .connected })
        lab.powerOff(hm10)
        XCTAssertTrue(lab.run(within: .seconds(10)) { recorder.count("disconnect") == 1 })
        XCTAssertEqual(recorder.events.last, "disconnect HMSoft error CBErrorDomain 6")
        lab.powerOn(hm10)
        lab.run(for: .seconds(5))
        XCTAssertEqual(peripheral.state, .disconnected)
        XCTAssertEqual(recorder.count("connect HMSoft"), 1)
    }

    /// A delegate that implements only the pre-iOS 17 method still hears every disconnection.
    func testADelegateWithoutTheTimestampVariantGetsTheOlderCallback() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("HMSoft", with: central, recorder)
        let old = OldStyleDelegate()
        central.delegate = old
        central.cancelPeripheralConnection(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(2)) { old.disconnections.count == 1 })
        XCTAssertTrue(old.disconnections.first?.0 === peripheral)
        XCTAssertNil(old.disconnections.first?.1)
    }

    // MARK: Connection events

    func testConnectionEventsMatchTheRegisteredServices() throws {
        try lab.addPeripheral(Peripherals.hm10())
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        central.registerForConnectionEvents(options: [.serviceUUIDs: [CBUUID(string: "FFF0")]])
        let probe = try discover("Probe", with: central, recorder)
        let hm10 = try discover("HMSoft", with: central, recorder)
        central.connect(probe)
        central.connect(hm10)
        XCTAssertTrue(lab.run(within: .seconds(5)) { probe.state == .connected && hm10.state == .connected })
        central.cancelPeripheralConnection(probe)
        central.cancelPeripheralConnection(hm10)
        XCTAssertTrue(lab.run(within: .seconds(5)) { probe.state == .disconnected && hm10.state == .disconnected })
        XCTAssertEqual(recorder.events.filter { $0.hasPrefix("event") }, ["event peerConnected Probe", "event peerDisconnected Probe"])
        // The event comes before the connection is reported to the app, and before the disconnection.
        let i = try XCTUnwrap(recorder.events.firstIndex(of: "event peerConnected Probe"))
        XCTAssertLessThan(i, try XCTUnwrap(recorder.events.firstIndex(of: "connect Probe")))
        let j = try XCTUnwrap(recorder.events.firstIndex(of: "event peerDisconnected Probe"))
        XCTAssertLessThan(j, try XCTUnwrap(recorder.events.firstIndex(of: "disconnect Probe")))
    }

    func testConnectionEventsMatchPeripheralIdentifiersAndNoneWithoutRegistering() throws {
        try lab.addPeripheral(Peripherals.hm10())
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let probe = try discover("Probe", with: central, recorder)
        let hm10 = try discover("HMSoft", with: central, recorder)
        central.connect(probe)
        XCTAssertTrue(lab.run(within: .seconds(5)) { probe.state == .connected })
        XCTAssertEqual(recorder.count("event"), 0, "not registered: no events")

        central.registerForConnectionEvents(options: [.peripheralUUIDs: [hm10.identifier]])
        central.connect(hm10)
        XCTAssertTrue(lab.run(within: .seconds(5)) { hm10.state == .connected })
        central.cancelPeripheralConnection(probe)
        XCTAssertTrue(lab.run(within: .seconds(5)) { probe.state == .disconnected })
        XCTAssertEqual(recorder.events.filter { $0.hasPrefix("event") }, ["event peerConnected HMSoft"])

        central.registerForConnectionEvents(options: nil)
        central.cancelPeripheralConnection(hm10)
        XCTAssertTrue(lab.run(within: .seconds(5)) { hm10.state == .disconnected })
        XCTAssertEqual(recorder.events.filter { $0.hasPrefix("event") }.last, "event peerDisconnected HMSoft", "nil options match every peripheral")
    }

    // MARK: Constants

    func testErrorCodesAndUUIDConstantsAreApples() {
        XCTAssertEqual(CBError.Code(rawValue: 17), .leGattExceededBackgroundNotificationLimit)
        XCTAssertEqual(CBError.Code(rawValue: 18), .leGattNearBackgroundNotificationLimit)
        XCTAssertEqual(CBError(.leGattNearBackgroundNotificationLimit).errorCode, 18)
        XCTAssertEqual((0...18).compactMap { CBError.Code(rawValue: $0) }.count, 19, "every code 0-18")
        XCTAssertEqual(CBUUID(string: CBUUIDCharacteristicValidRangeString), CBUUID(string: "2906"))
        XCTAssertEqual(CBUUID(string: CBUUIDCharacteristicObservationScheduleString).data, Data([0x29, 0x10]))
        XCTAssertEqual(CBUUID(string: CBUUIDL2CAPPSMCharacteristicString).uuidString, "ABDD3056-28FA-441D-A470-55A75A52553A")
        XCTAssertEqual(CBConnectionEvent.peerConnected.rawValue, 1)
        XCTAssertEqual(CBConnectionEvent.peerDisconnected.rawValue, 0)
    }
}

import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import XCTest

/// The GAP roles of `BLEHost` against the simulated controller.
final class GAPTests: XCTestCase {
    private func pair(seed: UInt64 = 3) throws -> (Lab, LabDevice, LabDevice) {
        let lab = Lab(seed: seed)
        let peripheral = try lab.addDevice("peripheral")
        let central = try lab.addDevice("central")
        try lab.powerOn()
        try lab.wait { done in
            peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P", services: [0x180D])), completion: done)
        }.get()
        return (lab, peripheral, central)
    }

    func testPowerOnReadsAddressAndBuffersAndEnablesLEEvents() throws {
        let lab = Lab(seed: 1)
        let device = try lab.addDevice("d", address: BDAddr(string: "C0:FF:EE:00:00:01"))
        try lab.powerOn()
        XCTAssertEqual(device.host.state, .ready)
        XCTAssertEqual(device.address, LEAddress(BDAddr(string: "C0:FF:EE:00:00:01")!, type: .public))
        XCTAssertEqual(device.host.driver.aclPacketLength, 27)
        XCTAssertEqual(device.host.driver.aclBufferCount, 8)
        let commands = device.log.packets.filter { $0.direction == .hostToController }.map { $0.frame.prefix(3) }
        // Reset first (Vol 4 Part E 7.3.2), then the informational reads and the two event masks.
        XCTAssertEqual(commands.first.map(Array.init), [0x01, 0x03, 0x0C])
        let masks = device.log.packets.compactMap { p -> HCICommand? in
            guard case let .command(c)? = try? HCIPacket(h4: p.frame) else { return nil }
            if case .setEventMask = c { return c }
            if case .leSetEventMask = c { return c }
            return nil
        }
        // LE Remote Connection Parameter Request (bit 5) and LE Long Term Key Request (bit 4) too:
        // the host answers a peer's request, and its controller's request for a key; Encryption
        // Key Refresh Complete (bit 47) is outside the default mask.
        XCTAssertEqual(masks, [.setEventMask(EventMask.defaultMask | EventMask.leMeta | EventMask.encryptionKeyRefreshComplete),
                               .leSetEventMask(EventMask.leConnectionComplete | EventMask.leAdvertisingReport | EventMask.leConnectionUpdateComplete
                                   | EventMask.leLongTermKeyRequest | EventMask.leRemoteConnectionParameterRequest)])
    }

    func testOperationsBeforePowerOnFailWithNotReady() throws {
        let lab = Lab()
        let device = try lab.addDevice("d")
        let result = try lab.wait { done in device.host.startScanning(onReport: { _ in }, completion: done) }
        XCTAssertEqual(result.failureValue, .notReady)
    }

    func testAdvertisingDataOver31OctetsIsRefusedBeforeAnythingIsSent() throws {
        let (lab, peripheral, _) = try pair()
        let sentBefore = peripheral.log.packets.count
        let long = AdvertisingData.make(name: String(repeating: "x", count: 40))
        let result = try lab.wait { done in peripheral.host.startAdvertising(AdvertisingConfiguration(data: long), completion: done) }
        guard case .invalidState? = result.failureValue else { return XCTFail("expected a refusal, got \(result)") }
        XCTAssertEqual(peripheral.log.packets.count, sentBefore)
    }

    /// A stop asked for while a start's four commands are still on their way runs after them,
    /// not between them: the last LE Set Advertising Enable on the wire is the stop's, and the
    /// controller is silent (interleaved, the start's enable would come last, Vol 4 Part E 7.8.9).
    func testAStopDuringAStartRunsAfterItAndLeavesAdvertisingOff() throws {
        let lab = Lab(seed: 3)
        let peripheral = try lab.addDevice("peripheral")
        try lab.powerOn()
        let mark = peripheral.log.packets.count
        var results: [String] = []
        peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P"))) { results.append("start \($0)") }
        XCTAssertTrue(peripheral.host.isChangingAdvertising)
        peripheral.host.stopAdvertising { results.append("stop \($0)") }
        lab.run(for: .milliseconds(100))
        XCTAssertEqual(results, ["start success()", "stop success()"])
        XCTAssertFalse(peripheral.host.isAdvertising)
        XCTAssertFalse(peripheral.host.isChangingAdvertising)
        let enables = peripheral.log.packets[mark...].compactMap { p -> Bool? in
            guard p.direction == .hostToController, case let .command(.leSetAdvertisingEnable(on))? = try? HCIPacket(h4: p.frame) else { return nil }
            return on
        }
        XCTAssertEqual(enables, [true, false])
        // Nothing on the air: a scanner hears no report.
        let central = try lab.addDevice("central")
        try lab.powerOn()
        var heard = 0
        try lab.wait { done in central.host.startScanning(onReport: { _ in heard += 1 }, completion: done) }.get()
        lab.run(for: .seconds(1))
        XCTAssertEqual(heard, 0)
    }

    func testAControllerResetBehindTheHostsBackEndsConnectionsAndRolesUntilPoweredOnAgain() throws {
        let (lab, peripheral, central) = try pair()
        let connection = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        var reasons: [HCIStatus] = []
        connection.whenDisconnected { reasons.append($0) }
        try lab.wait { done in central.host.startScanning(onReport: { _ in }, completion: done) }.get()

        try XCTUnwrap(lab.air).powerOff(try XCTUnwrap(central.controller))
        central.host.controllerDidReset()
        XCTAssertEqual(reasons, [.hardwareFailure])
        XCTAssertTrue(central.host.connections.isEmpty)
        XCTAssertFalse(central.host.isScanning)
        XCTAssertEqual(central.host.state, .off)
        let refused = try lab.wait { done in central.host.startScanning(onReport: { _ in }, completion: done) }
        XCTAssertEqual(refused.failureValue, .notReady)

        // The peripheral hears nothing more and drops the link after its supervision timeout.
        XCTAssertTrue(lab.run(within: .seconds(10)) { peripheral.host.connections.isEmpty })
        try lab.wait { done in
            peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P", services: [0x180D])), completion: done)
        }.get()
        try XCTUnwrap(lab.air).powerOn(try XCTUnwrap(central.controller))
        try lab.wait(within: .seconds(10)) { done in central.host.powerOn(completion: done) }.get()
        var seen = 0
        try lab.wait { done in central.host.startScanning(onReport: { _ in seen += 1 }, completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(2)) { seen > 0 }, "the host scans again after power-on")
    }

    func testDuplicatesAreReportedWhenAllowed() throws {
        let (lab, peripheral, central) = try pair()
        var reports: [ScanReport] = []
        try lab.wait { done in
            central.host.startScanning(ScanConfiguration(allowDuplicates: true), onReport: { reports.append($0) }, completion: done)
        }.get()
        lab.run(for: .seconds(1))
        // 100 ms interval + 0–10 ms delay: 9 or 10 advertising events in a second.
        XCTAssertGreaterThanOrEqual(reports.count, 9)
        XCTAssertLessThanOrEqual(reports.count, 10)
        XCTAssertTrue(reports.allSatisfy { $0.address == peripheral.address })
    }

    func testRandomStaticAddressIsUsedOnTheAir() throws {
        let lab = Lab(seed: 5)
        let random = BDAddr(string: "C1:22:33:44:55:66")!
        XCTAssertTrue(random.isValidRandomStatic)
        let peripheral = try lab.addDevice("peripheral", configuration: HostConfiguration(randomAddress: random))
        let central = try lab.addDevice("central")
        try lab.powerOn()
        XCTAssertEqual(peripheral.address, LEAddress(random, type: .random))
        try lab.wait { done in peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "R")), completion: done) }.get()
        var seen: [ScanReport] = []
        try lab.wait { done in central.host.startScanning(onReport: { seen.append($0) }, completion: done) }.get()
        lab.run(for: .milliseconds(300))
        XCTAssertEqual(seen.map(\.address), [LEAddress(random, type: .random)])
        let connection = try lab.wait { done in central.host.connect(to: LEAddress(random, type: .random), completion: done) }.get()
        XCTAssertEqual(connection.peer, LEAddress(random, type: .random))
    }

    func testConnectTimesOutWithLECreateConnectionCancel() throws {
        let (lab, _, central) = try pair()
        let nobody = LEAddress(BDAddr(string: "00:11:22:33:44:55")!, type: .public)
        let start = lab.loop.now
        let result = try lab.wait { done in central.host.connect(to: nobody, timeout: .seconds(2), completion: done) }
        XCTAssertEqual(result.failureValue, .timeout("connection to \(nobody)"))
        XCTAssertEqual(lab.loop.now - start, .seconds(2))
        XCTAssertFalse(central.host.isConnecting)
        // On the link: the cancel (Vol 4 Part E 7.8.13), then LE Connection Complete with 0x02.
        let packets = central.log.packets.compactMap { try? HCIPacket(h4: $0.frame) }
        XCTAssertTrue(packets.contains(.command(.leCreateConnectionCancel)))
        XCTAssertTrue(packets.contains { p in
            if case let .event(.leMeta(.connectionComplete(e))) = p { return e.status == .unknownConnectionIdentifier }
            return false
        })
    }

    func testCancelConnect() throws {
        let (lab, _, central) = try pair()
        let nobody = LEAddress(BDAddr(string: "00:11:22:33:44:55")!, type: .public)
        var result: Result<Connection, HostError>?
        central.host.connect(to: nobody) { result = $0 }
        lab.run(for: .milliseconds(100))
        central.host.cancelConnect()
        XCTAssertTrue(lab.run(within: .seconds(1)) { result != nil })
        XCTAssertEqual(result?.failureValue, .cancelled("connection to \(nobody)"))
    }

    func testSecondConnectWhileConnectingIsRefused() throws {
        let (lab, peripheral, central) = try pair()
        central.host.connect(to: LEAddress(BDAddr(string: "00:11:22:33:44:55")!, type: .public)) { _ in }
        let second = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }
        guard case .invalidState? = second.failureValue else { return XCTFail("expected a refusal, got \(second)") }
    }

    func testPeripheralRequestsNewParametersAndBothSidesApplyThem() throws {
        let (lab, peripheral, central) = try pair()
        var incoming: Connection?
        peripheral.host.onConnection = { incoming = $0 }
        let c = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(1)) { incoming != nil })
        let p = try XCTUnwrap(incoming)
        var updatedOnCentral = false
        c.whenParametersUpdated { _ in updatedOnCentral = true }
        // 15 ms interval, 2 s timeout, asked over L2CAP (Vol 3 Part A 4.20).
        try lab.wait { done in
            p.updateParameters(ConnectionParameters(intervalMin: 12, intervalMax: 12, latency: 0, supervisionTimeout: 200), completion: done)
        }.get()
        XCTAssertTrue(lab.run(within: .seconds(2)) { updatedOnCentral && p.interval == 12 })
        XCTAssertEqual(c.interval, 12)
        XCTAssertEqual(c.supervisionTimeout, 200)
        XCTAssertEqual(p.supervisionTimeout, 200)
    }

    func testCentralRejectsInvalidParametersFromThePeripheral() throws {
        let (lab, peripheral, central) = try pair()
        var incoming: Connection?
        peripheral.host.onConnection = { incoming = $0 }
        _ = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(1)) { incoming != nil })
        // Timeout 100 ms is shorter than (1 + 0) × 100 ms × 2: invalid (Vol 4 Part E 7.8.18).
        let result = try lab.wait { done in
            incoming!.updateParameters(ConnectionParameters(intervalMin: 80, intervalMax: 80, latency: 0, supervisionTimeout: 10), completion: done)
        }
        guard case .invalidState? = result.failureValue else { return XCTFail("expected a rejection, got \(result)") }
    }

    func testReadRSSIGivesWhatTheAirSays() throws {
        let (lab, peripheral, central) = try pair()
        peripheral.rssi = -61
        let c = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        let rssi = try lab.wait { done in c.readRSSI(completion: done) }.get()
        XCTAssertEqual(rssi, -61)
    }

    func testMTUExchangeThenLongWriteAndLongReadEndToEnd() throws {
        let (lab, peripheral, central) = try pair()
        let handles = try peripheral.host.gattServer.addService(GATTService(uuid: 0xAAAA, characteristics: [
            GATTCharacteristic(uuid: 0xAAAB, properties: [.read, .write], value: []),
        ]))
        let valueHandle = try XCTUnwrap(handles.characteristics.first?.valueHandle)
        let c = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        let long = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        // With the default ATT_MTU of 23 this takes Prepare Write × 17 and Execute Write.
        try lab.wait { done in c.client.write(long, handle: valueHandle, completion: done) }.get()
        XCTAssertEqual(peripheral.host.gattServer.value(at: valueHandle), long)
        XCTAssertEqual(central.traffic.records(.prepareWriteRequest).count, 17)
        XCTAssertEqual(central.traffic.records(.executeWriteRequest).count, 1)
        // After an MTU exchange (both offer 247) the long read takes 2 PDUs (244 + 56).
        let mtu = try lab.wait { done in c.client.exchangeMTU(completion: done) }.get()
        XCTAssertEqual(mtu, 247)
        let read = try lab.wait { done in c.client.read(handle: valueHandle, completion: done) }.get()
        XCTAssertEqual(read, long)
        XCTAssertEqual(central.traffic.records(.readRequest, .readBlobRequest).count, 2)
    }
}

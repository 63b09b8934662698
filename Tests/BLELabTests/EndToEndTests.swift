import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import XCTest

/// A central and three peripherals, each a full host stack on its own simulated controller,
/// meeting over one simulated air. Every assertion about writes and notifications is checked on
/// the ATT PDUs that crossed each host's HCI transport, not on what an API intended.
final class EndToEndTests: XCTestCase {
    typealias Fixture = ThreePeripheralLab

    // MARK: Scanning

    func testScanFilteredOnFFE0ReportsOnlyTheFFE0Peripheral() throws {
        let f = try Fixture()
        let all = try f.scan(ScanConfiguration(), for: .seconds(1))
        // Without a filter every advertiser is seen, once each (duplicates merged).
        XCTAssertEqual(Set(all.map(\.address)), [f.serial.address, f.curtain.address, f.beacon.address])
        XCTAssertEqual(all.count, 3)

        let filtered = try f.scan(ScanConfiguration(services: [BluetoothUUID(string: "0000FFE0-0000-1000-8000-00805F9B34FB")!]),
                                  for: .seconds(1))
        XCTAssertEqual(filtered.map(\.address), [f.serial.address])
        let report = try XCTUnwrap(filtered.first)
        XCTAssertEqual(report.localName, "HMSoft")
        XCTAssertEqual(report.serviceUUIDs, [0xFFE0])
        XCTAssertEqual(report.rssi, -48, "the report carries the advertiser's RSSI")
        XCTAssertTrue(report.isConnectable)
    }

    func testScanFilterMatchesAServiceListedOnlyInTheScanResponse() throws {
        let f = try Fixture()
        // The beacon moves its service list to the scan response; an active scan still finds it,
        // as CoreBluetooth does.
        try f.lab.wait { done in f.beacon.host.stopAdvertising(completion: done) }.get()
        try f.lab.wait { done in
            f.beacon.host.startAdvertising(AdvertisingConfiguration(data: AdvertisingData.make(name: "Beacon"),
                                                                    scanResponse: AdvertisingData.make(flags: nil, services: [0x180F])),
                                           completion: done)
        }.get()
        let found = try f.scan(ScanConfiguration(services: [0x180F]), for: .seconds(1))
        XCTAssertEqual(found.map(\.address), [f.beacon.address])
        XCTAssertEqual(found.first?.scanResponse?.serviceUUIDs, [0x180F])
        let passive = try f.scan(ScanConfiguration(services: [0x180F], active: false), for: .seconds(1))
        XCTAssertEqual(passive, [], "a passive scan never sees the scan response")
    }

    // MARK: Connection and discovery

    func testConnectAndDiscover() throws {
        let f = try Fixture()
        let (central, peripheral) = try f.connect(to: f.serial)
        XCTAssertEqual(central.role, .central)
        XCTAssertEqual(peripheral.role, .peripheral)
        XCTAssertEqual(central.peer, f.serial.address)
        XCTAssertEqual(peripheral.peer, f.central.address)
        XCTAssertFalse(f.serial.host.isAdvertising, "a connectable advertiser stops once connected")

        let services = try f.discoverAll(central)
        XCTAssertEqual(services.map(\.uuid), [0x1800, 0x1801, 0xFFE0])
        let ffe0 = try XCTUnwrap(services.last)
        XCTAssertEqual(ffe0.characteristics.map(\.uuid), [Fixture.ffe1, Fixture.ffe2, Fixture.ffe3, Fixture.ffe4])
        XCTAssertEqual(ffe0.characteristics.map(\.properties),
                       [[.read, .writeWithoutResponse, .notify], [.write], [.read, .indicate], [.read, .write, .writeWithoutResponse]])
        // Notifiable and indicatable characteristics carry a CCCD, the others none.
        XCTAssertEqual(ffe0.characteristics.map { $0.descriptors.map(\.uuid) },
                       [[.clientCharacteristicConfiguration], [], [.clientCharacteristicConfiguration], []])
        // The handles the client found are the server's own.
        let db = f.serial.host.gattServer.database
        XCTAssertEqual(ffe0.characteristics.map(\.valueHandle),
                       [Fixture.ffe1, Fixture.ffe2, Fixture.ffe3, Fixture.ffe4].map { db.characteristic($0)?.valueHandle })
    }

    // MARK: Writes, checked on the link

    func testWriteWithResponseIsAWriteRequestAnsweredByAWriteResponse() throws {
        let f = try Fixture()
        let (central, _) = try f.connect(to: f.serial)
        _ = try f.discoverAll(central)
        let ffe2 = try f.characteristic(Fixture.ffe2, on: central)
        var serverSaw: [GATTWriteEvent] = []
        f.serial.host.gattServer.onWrite = { serverSaw.append($0) }
        let start = f.mark()

        try f.lab.wait { done in central.client.write([0x01, 0x02], handle: ffe2.valueHandle, completion: done) }.get()

        // Central: sent exactly a Write Request 0x12 with handle and value, got a Write Response 0x13.
        let sent = f.central.traffic.records(since: start).filter(\.wasSent)
        XCTAssertEqual(sent.map(\.bytes), [[0x12, UInt8(ffe2.valueHandle & 0xFF), UInt8(ffe2.valueHandle >> 8), 0x01, 0x02]])
        XCTAssertEqual(f.central.traffic.opcodes(sent: false, since: start), [0x13])
        // Peripheral: received the request, answered the response.
        XCTAssertEqual(f.serial.traffic.opcodes(sent: false, since: start), [0x12])
        XCTAssertEqual(f.serial.traffic.opcodes(sent: true, since: start), [0x13])
        XCTAssertEqual(serverSaw.map(\.method), [.request])
        XCTAssertEqual(serverSaw.map(\.value), [[0x01, 0x02]])
        XCTAssertEqual(f.serial.host.gattServer.value(at: ffe2.valueHandle), [0x01, 0x02])
    }

    func testWriteWithoutResponseIsAWriteCommandAndNothingComesBack() throws {
        let f = try Fixture()
        let (central, _) = try f.connect(to: f.serial)
        _ = try f.discoverAll(central)
        let ffe1 = try f.characteristic(Fixture.ffe1, on: central)
        var serverSaw: [GATTWriteEvent] = []
        f.serial.host.gattServer.onWrite = { serverSaw.append($0) }
        let start = f.mark()

        XCTAssertTrue(central.client.writeWithoutResponse(Array("hello".utf8), handle: ffe1.valueHandle))
        f.lab.run(for: .seconds(2))

        XCTAssertEqual(f.central.traffic.opcodes(sent: true, since: start), [0x52])
        XCTAssertEqual(f.serial.traffic.opcodes(sent: false, since: start), [0x52])
        XCTAssertEqual(f.serial.traffic.opcodes(sent: true, since: start), [], "the server never answers a command")
        XCTAssertEqual(serverSaw.map(\.method), [.command])
        XCTAssertEqual(f.serial.host.gattServer.value(at: ffe1.valueHandle), Array("hello".utf8))
    }

    func testWriteRequestToACharacteristicWithoutWriteGetsWriteNotPermitted() throws {
        let f = try Fixture()
        let (central, _) = try f.connect(to: f.serial)
        _ = try f.discoverAll(central)
        let ffe1 = try f.characteristic(Fixture.ffe1, on: central)   // write-without-response only
        let start = f.mark()

        let result = try f.lab.wait { done in central.client.write([0xAA], handle: ffe1.valueHandle, completion: done) }
        XCTAssertEqual(result.failureValue, .att(.writeNotPermitted, handle: ffe1.valueHandle))
        // On the link: Error Response | request opcode 0x12 | handle | error 0x03 (Vol 3 Part F 3.4.1.1).
        let answer = f.serial.traffic.records(since: start).filter(\.wasSent).map(\.bytes)
        XCTAssertEqual(answer, [[0x01, 0x12, UInt8(ffe1.valueHandle & 0xFF), UInt8(ffe1.valueHandle >> 8), 0x03]])
        XCTAssertEqual(f.serial.host.gattServer.value(at: ffe1.valueHandle), Array("ready".utf8), "value unchanged")
    }

    func testWriteCommandToACharacteristicWithoutWriteWithoutResponseIsDroppedSilently() throws {
        let f = try Fixture()
        let (central, _) = try f.connect(to: f.serial)
        _ = try f.discoverAll(central)
        let ffe2 = try f.characteristic(Fixture.ffe2, on: central)   // write only
        var serverSaw: [GATTWriteEvent] = []
        f.serial.host.gattServer.onWrite = { serverSaw.append($0) }
        let start = f.mark()

        XCTAssertTrue(central.client.writeWithoutResponse([0x55], handle: ffe2.valueHandle))
        f.lab.run(for: .seconds(2))

        XCTAssertEqual(f.serial.traffic.opcodes(sent: false, since: start), [0x52], "the command did cross the link")
        XCTAssertEqual(f.serial.traffic.opcodes(sent: true, since: start), [], "and nothing of any kind was answered")
        XCTAssertEqual(f.central.traffic.opcodes(sent: false, since: start), [])
        XCTAssertEqual(serverSaw.count, 0)
        XCTAssertEqual(f.serial.host.gattServer.value(at: ffe2.valueHandle), [0x00], "value unchanged")
    }

    // MARK: Notifications and indications

    func testHundredNotificationsArriveExactlyAndInOrder() throws {
        let f = try Fixture()
        let (central, peripheral) = try f.connect(to: f.serial)
        _ = try f.discoverAll(central)
        let ffe1 = try f.characteristic(Fixture.ffe1, on: central)
        var received: [GATTNotification] = []
        central.client.onNotification = { received.append($0) }
        try f.lab.wait { done in central.client.subscribe(to: ffe1, completion: done) }.get()

        let values = (0..<100).map { i in [UInt8(i), UInt8(255 - i), 0x42] }
        for value in values {
            XCTAssertTrue(f.serial.host.gattServer.notify(value, handle: ffe1.valueHandle, to: peripheral.serverConnection))
        }
        XCTAssertTrue(f.lab.run(within: .seconds(10)) { received.count == 100 })

        XCTAssertEqual(received.map(\.value), values)
        XCTAssertEqual(Set(received.map(\.handle)), [ffe1.valueHandle])
        XCTAssertFalse(received.contains { $0.isIndication })
        // The same 100 Handle Value Notifications crossed the central's HCI, in order.
        let onTheLink = f.central.traffic.records(.handleValueNotification).map { Array($0.bytes.dropFirst(3)) }
        XCTAssertEqual(onTheLink, values)
    }

    func testIndicationIsConfirmed() throws {
        let f = try Fixture()
        let (central, peripheral) = try f.connect(to: f.serial)
        _ = try f.discoverAll(central)
        let ffe3 = try f.characteristic(Fixture.ffe3, on: central)
        var received: [GATTNotification] = []
        central.client.onNotification = { received.append($0) }
        try f.lab.wait { done in central.client.subscribe(to: ffe3, completion: done) }.get()
        let start = f.mark()

        let confirmed = try f.lab.wait { done in
            XCTAssertTrue(f.serial.host.gattServer.indicate([0x6E, 0x01], handle: ffe3.valueHandle, to: peripheral.serverConnection,
                                                            completion: done))
        }
        XCTAssertNoThrow(try confirmed.get())
        XCTAssertEqual(received, [GATTNotification(handle: ffe3.valueHandle, value: [0x6E, 0x01], isIndication: true)])
        XCTAssertEqual(f.serial.traffic.opcodes(sent: true, since: start), [0x1D])
        XCTAssertEqual(f.central.traffic.opcodes(sent: true, since: start), [0x1E], "the central confirmed on the link")
    }

    func testNotificationBeforeSubscribeIsNotDelivered() throws {
        let f = try Fixture()
        let (central, peripheral) = try f.connect(to: f.serial)
        _ = try f.discoverAll(central)
        let ffe1 = try f.characteristic(Fixture.ffe1, on: central)
        var received: [GATTNotification] = []
        central.client.onNotification = { received.append($0) }
        let start = f.mark()

        XCTAssertFalse(f.serial.host.gattServer.notify([0x01], handle: ffe1.valueHandle, to: peripheral.serverConnection))
        f.lab.run(for: .seconds(1))
        XCTAssertEqual(received, [])
        XCTAssertEqual(f.serial.traffic.opcodes(sent: true, since: start), [], "nothing was sent")

        // After subscribing the same call is delivered, so the first result was the CCCD's doing.
        try f.lab.wait { done in central.client.subscribe(to: ffe1, completion: done) }.get()
        XCTAssertTrue(f.serial.host.gattServer.notify([0x02], handle: ffe1.valueHandle, to: peripheral.serverConnection))
        XCTAssertTrue(f.lab.run(within: .seconds(1)) { received.count == 1 })
        XCTAssertEqual(received.map(\.value), [[0x02]])
    }

    // MARK: Disconnection

    func testDisconnectFromTheCentralTellsBothSidesWithTheReason() throws {
        let f = try Fixture()
        let (central, peripheral) = try f.connect(to: f.serial)
        var reasons: [String: HCIStatus] = [:]
        central.whenDisconnected { reasons["central"] = $0 }
        peripheral.whenDisconnected { reasons["peripheral"] = $0 }

        try f.lab.wait { done in central.disconnect(reason: .remoteUserTerminatedConnection, completion: done) }.get()
        XCTAssertTrue(f.lab.run(within: .seconds(1)) { reasons.count == 2 })
        // Vol 4 Part E 7.1.6: the peer gets the reason given; the local side 0x16.
        XCTAssertEqual(reasons["peripheral"], .remoteUserTerminatedConnection)
        XCTAssertEqual(reasons["central"], .connectionTerminatedByLocalHost)
        XCTAssertTrue(f.central.host.connections.isEmpty)
        XCTAssertTrue(f.serial.host.connections.isEmpty)
    }

    func testDisconnectFromThePeripheralTellsBothSidesWithTheReason() throws {
        let f = try Fixture()
        let (central, peripheral) = try f.connect(to: f.serial)
        var reasons: [String: HCIStatus] = [:]
        central.whenDisconnected { reasons["central"] = $0 }
        peripheral.whenDisconnected { reasons["peripheral"] = $0 }

        try f.lab.wait { done in peripheral.disconnect(reason: .remoteDeviceTerminatedPowerOff, completion: done) }.get()
        XCTAssertTrue(f.lab.run(within: .seconds(1)) { reasons.count == 2 })
        XCTAssertEqual(reasons["central"], .remoteDeviceTerminatedPowerOff)
        XCTAssertEqual(reasons["peripheral"], .connectionTerminatedByLocalHost)
    }

    func testPeripheralThatVanishesTimesOutWithReason0x08() throws {
        let f = try Fixture()
        let (central, _) = try f.connect(to: f.serial)
        var reason: HCIStatus?
        var failed: GATTError?
        central.whenDisconnected { reason = $0 }
        _ = try f.discoverAll(central)
        let ffe4 = try f.characteristic(Fixture.ffe4, on: central)
        let gone = f.lab.loop.now
        try XCTUnwrap(f.lab.air).powerOff(try XCTUnwrap(f.serial.controller))
        // A request in flight fails with the link, not with the 30 s ATT timeout.
        central.client.read(handle: ffe4.valueHandle) { if case let .failure(e) = $0 { failed = e } }

        XCTAssertTrue(f.lab.run(within: .seconds(10)) { reason != nil })
        XCTAssertEqual(reason, .connectionTimeout)
        let elapsed = f.lab.loop.now - gone
        XCTAssertLessThanOrEqual(elapsed, central.supervisionTimeoutTime, "dropped within the supervision timeout")
        XCTAssertGreaterThan(elapsed, central.supervisionTimeoutTime - central.intervalTime * 2)
        XCTAssertEqual(failed, .linkLost(reason: HCIStatus.connectionTimeout.rawValue))
    }
}

extension Result {
    var failureValue: Failure? {
        if case let .failure(e) = self { return e }
        return nil
    }
}

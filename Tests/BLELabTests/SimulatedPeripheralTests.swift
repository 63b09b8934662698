import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import ScenarioFormat
import XCTest

/// Simulated peripherals built from specs: triggers, actions, generators, on the sim air.
final class SimulatedPeripheralTests: XCTestCase {
    private struct Rig {
        let lab: Lab
        let peripheral: SimulatedPeripheral
        let central: LabDevice
        let connection: Connection
        var notifications: [GATTNotification] { box.list }
        let box: NotificationBox

        func characteristic(_ uuid: BluetoothUUID) throws -> GATTRemoteCharacteristic {
            try XCTUnwrap(connection.client.services.lazy.compactMap { $0.characteristic(uuid) }.first)
        }
    }

    private final class NotificationBox { var list: [GATTNotification] = [] }

    private func rig(_ spec: PeripheralSpec, seed: UInt64 = 11) throws -> Rig {
        let lab = Lab(seed: seed)
        let peripheral = try lab.addPeripheral(spec)
        let central = try lab.addDevice("central")
        try lab.powerOn()
        try lab.wait { done in peripheral.start(completion: done) }.get()
        let connection = try lab.wait { done in central.host.connect(to: peripheral.device.address, completion: done) }.get()
        _ = try lab.wait { done in connection.client.discoverAll(completion: done) }.get()
        let box = NotificationBox()
        connection.client.onNotification = { box.list.append($0) }
        return Rig(lab: lab, peripheral: peripheral, central: central, connection: connection, box: box)
    }

    private let hm10 = PeripheralSpec(id: "hm10", rssi: -48, advertising: AdvertisingSpec(name: "HMSoft", services: [0xFFE0]), services: [
        ServiceSpec(uuid: 0xFFE0, characteristics: [
            CharacteristicSpec(uuid: 0xFFE1, properties: [.read, .writeWithoutResponse, .notify], value: Array("ready".utf8),
                               onWrite: [.notify(CharacteristicRef(0xFFE1), .written)]),
        ]),
    ])

    func testHM10EchoesAWriteCommandByNotification() throws {
        let r = try rig(hm10)
        let ffe1 = try r.characteristic(0xFFE1)
        try r.lab.wait { done in r.connection.client.subscribe(to: ffe1, completion: done) }.get()
        XCTAssertTrue(r.connection.client.writeWithoutResponse(Array("hello".utf8), handle: ffe1.valueHandle))
        XCTAssertTrue(r.lab.run(within: .seconds(1)) { r.notifications.count == 1 })
        XCTAssertEqual(r.notifications.map(\.value), [Array("hello".utf8)])
        XCTAssertEqual(r.peripheral.value(of: CharacteristicRef(0xFFE1)), Array("hello".utf8))
        // On the peripheral's link: Write Command in, notification out, nothing else.
        let peripheralATT = r.peripheral.device.traffic.records.suffix(2).map { ($0.wasSent, $0.opcode?.rawValue) }
        XCTAssertEqual(peripheralATT.map(\.0), [false, true])
        XCTAssertEqual(peripheralATT.map(\.1), [0x52, 0x1B])
    }

    func testRespondErrorAnswersTheReadAndDelayMakesTheAnswerLate() throws {
        let spec = PeripheralSpec(id: "flaky", advertising: AdvertisingSpec(name: "F"), services: [
            ServiceSpec(uuid: 0xAAA0, characteristics: [
                CharacteristicSpec(uuid: 0xAAA1, properties: [.read], value: [1], onRead: [.respondError(.insufficientAuthentication)]),
                CharacteristicSpec(uuid: 0xAAA2, properties: [.read, .write], value: [2], onWrite: [.delay(.milliseconds(300))]),
            ]),
        ])
        let r = try rig(spec)
        let a1 = try r.characteristic(0xAAA1), a2 = try r.characteristic(0xAAA2)
        let read = try r.lab.wait { done in r.connection.client.read(handle: a1.valueHandle, completion: done) }
        XCTAssertEqual(read.failureValue, .att(.insufficientAuthentication, handle: a1.valueHandle))

        let start = r.lab.loop.now
        try r.lab.wait { done in r.connection.client.write([9], handle: a2.valueHandle, completion: done) }.get()
        let requestTime = try XCTUnwrap(r.peripheral.device.traffic.records(.writeRequest).last?.time)
        let responseTime = try XCTUnwrap(r.peripheral.device.traffic.records(.writeResponse).last?.time)
        XCTAssertEqual(responseTime - requestTime, .milliseconds(300), "the answer left 300 ms after the request arrived")
        XCTAssertGreaterThanOrEqual(r.lab.loop.now - start, .milliseconds(300))
        XCTAssertEqual(r.peripheral.value(of: CharacteristicRef(0xAAA2)), [9])
    }

    func testRespondErrorOnWriteLeavesTheValue() throws {
        let spec = PeripheralSpec(id: "locked", advertising: AdvertisingSpec(name: "L"), services: [
            ServiceSpec(uuid: 0xAAA0, characteristics: [
                CharacteristicSpec(uuid: 0xAAA1, properties: [.read, .write], value: [1], onWrite: [.respondError(ATTErrorCode(rawValue: 0x80))]),
            ]),
        ])
        let r = try rig(spec)
        let a1 = try r.characteristic(0xAAA1)
        let result = try r.lab.wait { done in r.connection.client.write([7], handle: a1.valueHandle, completion: done) }
        XCTAssertEqual(result.failureValue?.attErrorCode, ATTErrorCode(rawValue: 0x80), "application errors pass through")
        XCTAssertEqual(r.peripheral.value(of: CharacteristicRef(0xAAA1)), [1])
    }

    func testHeartRateSensorNotifiesEverySecondAndStopsAdvertisingOnSubscribe() throws {
        let hr = PeripheralSpec(id: "hr", advertising: AdvertisingSpec(name: "HRM", services: [0x180D]), services: [
            ServiceSpec(uuid: 0x180D, characteristics: [
                CharacteristicSpec(uuid: 0x2A37, properties: [.notify], onSubscribe: [
                    .stopAdvertising,
                    .notifyEvery(CharacteristicRef(0x2A37), interval: .seconds(1),
                                 value: .concatenation([.bytes([0x00]), .randomU8(59...61)]), count: nil),
                ]),
            ]),
        ])
        func session(seed: UInt64) throws -> [[UInt8]] {
            let r = try rig(hr, seed: seed)
            XCTAssertTrue(r.peripheral.host.isAdvertising == false, "connected: the legacy advertiser stopped")
            try r.lab.wait { done in r.connection.client.subscribe(to: try! r.characteristic(0x2A37), completion: done) }.get()
            r.lab.run(for: .seconds(60))
            XCTAssertEqual(r.notifications.count, 60, "one a second for 60 s of virtual time")
            XCTAssertFalse(r.peripheral.host.isAdvertising)
            XCTAssertTrue(r.peripheral.activity.contains { if case .action(.stopAdvertising) = $0.kind { return true }; return false })
            return r.notifications.map(\.value)
        }
        let values = try session(seed: 4)
        XCTAssertTrue(values.allSatisfy { $0.count == 2 && $0[0] == 0x00 && (59...61).contains($0[1]) })
        XCTAssertEqual(Set(values.map { $0[1] }), [59, 60, 61], "the jitter covers the whole range")
        XCTAssertEqual(try session(seed: 4), values, "same seed, same heart rates")
        XCTAssertNotEqual(try session(seed: 5), values)
    }

    func testCounterAndSequenceGeneratorsAdvancePerUse() throws {
        let spec = PeripheralSpec(id: "gen", advertising: AdvertisingSpec(name: "G"), services: [
            ServiceSpec(uuid: 0xBBB0, characteristics: [
                CharacteristicSpec(uuid: 0xBBB1, properties: [.notify, .write], onWrite: [
                    .notify(CharacteristicRef(0xBBB1), .concatenation([.counterU8(start: 250), .sequence([[0xA], [0xB]])])),
                ]),
            ]),
        ])
        let r = try rig(spec)
        let c = try r.characteristic(0xBBB1)
        try r.lab.wait { done in r.connection.client.subscribe(to: c, completion: done) }.get()
        for _ in 0..<7 { try r.lab.wait { done in r.connection.client.write([0], handle: c.valueHandle, completion: done) }.get() }
        XCTAssertTrue(r.lab.run(within: .seconds(1)) { r.notifications.count == 7 })
        XCTAssertEqual(r.notifications.map(\.value), [[250, 0xA], [251, 0xB], [252, 0xA], [253, 0xB], [254, 0xA], [255, 0xB], [0, 0xA]])
    }

    func testConnectAndDisconnectTriggersAndTheDisconnectAction() throws {
        let spec = PeripheralSpec(id: "hang-up", advertising: AdvertisingSpec(name: "H"), services: [
            ServiceSpec(uuid: 0xCCC0, characteristics: [
                CharacteristicSpec(uuid: 0xCCC1, properties: [.read, .write], value: [0],
                                   onWrite: [.delay(.milliseconds(50)), .disconnect(.remoteDeviceTerminatedLowResources)]),
            ]),
        ], onConnect: [.setValue(CharacteristicRef(0xCCC1), .bytes([0x42]))], onDisconnect: [.startAdvertising])
        let r = try rig(spec)
        var reason: HCIStatus?
        r.connection.whenDisconnected { reason = $0 }
        let c = try r.characteristic(0xCCC1)
        let value = try r.lab.wait { done in r.connection.client.read(handle: c.valueHandle, completion: done) }.get()
        XCTAssertEqual(value, [0x42], "on-connect set the value")
        // The Write Response is handed to the controller just before the Disconnect command; the
        // link layer queues LL_TERMINATE_IND behind it (Core Vol 6 Part B 5.1.3), so the central
        // gets the answer, then the link ends.
        let write = try r.lab.wait { done in r.connection.client.write([1], handle: c.valueHandle, completion: done) }
        XCTAssertNil(write.failureValue)
        XCTAssertNil(reason, "the answer came before the link ended")
        XCTAssertTrue(r.lab.run(within: .seconds(2)) { reason != nil })
        XCTAssertEqual(reason, .remoteDeviceTerminatedLowResources)
        XCTAssertTrue(r.lab.run(within: .seconds(1)) { r.peripheral.host.isAdvertising }, "on-disconnect restarted advertising")
    }

    func testRandomAddressAndRSSIFromTheSpec() throws {
        let address = LEAddress(string: "C0:11:22:33:44:55/random")!
        let spec = PeripheralSpec(id: "addr", address: address, rssi: -77, advertising: AdvertisingSpec(name: "A", services: [0x1234]))
        let lab = Lab(seed: 1)
        let p = try lab.addPeripheral(spec)
        let central = try lab.addDevice("central")
        try lab.powerOn()
        try lab.wait { done in p.start(completion: done) }.get()
        var reports: [ScanReport] = []
        try lab.wait { done in central.host.startScanning(onReport: { reports.append($0) }, completion: done) }.get()
        lab.run(for: .milliseconds(300))
        XCTAssertEqual(reports.map(\.address), [address])
        XCTAssertEqual(reports.first?.rssi, -77)
        XCTAssertEqual(reports.first?.localName, "A")
    }
}

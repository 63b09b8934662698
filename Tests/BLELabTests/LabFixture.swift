import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import XCTest

/// Three peripherals and a central on one simulated air, as the issue describes:
/// - `serial` advertises FFE0 (an HM-10-like serial bridge with characteristics for every
///   write/notify combination the tests need),
/// - `curtain` advertises FFF0,
/// - `beacon` advertises no service at all.
final class ThreePeripheralLab {
    let lab: Lab
    let serial: LabDevice
    let curtain: LabDevice
    let beacon: LabDevice
    let central: LabDevice

    /// FFE1: read, write-without-response, notify (no `write`): the HM-10's characteristic.
    static let ffe1 = BluetoothUUID(uuid16: 0xFFE1)
    /// FFE2: write only (no `write-without-response`).
    static let ffe2 = BluetoothUUID(uuid16: 0xFFE2)
    /// FFE3: read, indicate.
    static let ffe3 = BluetoothUUID(uuid16: 0xFFE3)
    /// FFE4: read, write, write-without-response.
    static let ffe4 = BluetoothUUID(uuid16: 0xFFE4)

    init(seed: UInt64 = 42, recordsTraffic: Bool = true) throws {
        lab = Lab(seed: seed)
        serial = try lab.addDevice("serial", configuration: HostConfiguration(deviceName: "HMSoft"), recordsTraffic: recordsTraffic)
        curtain = try lab.addDevice("curtain", configuration: HostConfiguration(deviceName: "Smart_Curtain"), recordsTraffic: recordsTraffic)
        beacon = try lab.addDevice("beacon", recordsTraffic: recordsTraffic)
        central = try lab.addDevice("central", recordsTraffic: recordsTraffic)
        serial.rssi = -48
        curtain.rssi = -70
        beacon.rssi = -85

        _ = try serial.host.gattServer.addService(GATTService(uuid: 0xFFE0, characteristics: [
            GATTCharacteristic(uuid: Self.ffe1, properties: [.read, .writeWithoutResponse, .notify], value: Array("ready".utf8)),
            GATTCharacteristic(uuid: Self.ffe2, properties: [.write], value: [0x00]),
            GATTCharacteristic(uuid: Self.ffe3, properties: [.read, .indicate], value: [0x01]),
            GATTCharacteristic(uuid: Self.ffe4, properties: [.read, .write, .writeWithoutResponse], value: []),
        ]))
        _ = try curtain.host.gattServer.addService(GATTService(uuid: 0xFFF0, characteristics: [
            GATTCharacteristic(uuid: 0xFFF1, properties: [.writeWithoutResponse]),
            GATTCharacteristic(uuid: 0xFFF2, properties: [.read, .notify], value: [0x00]),
        ]))

        try lab.powerOn()
        try advertise(serial, AdvertisingData.make(name: "HMSoft", services: [0xFFE0]))
        try advertise(curtain, AdvertisingData.make(name: "Smart_Curtain", services: [0xFFF0]))
        try advertise(beacon, AdvertisingData.make(name: "Beacon"))
    }

    func advertise(_ device: LabDevice, _ data: AdvertisingData) throws {
        try lab.wait("advertising on \(device.name)") { done in
            device.host.startAdvertising(AdvertisingConfiguration(data: data, interval: .milliseconds(100)), completion: done)
        }.get()
    }

    /// Scans for `span` of virtual time and returns the reports in order.
    func scan(_ configuration: ScanConfiguration, for span: TimeSpan) throws -> [ScanReport] {
        var reports: [ScanReport] = []
        try lab.wait("scan start") { done in
            central.host.startScanning(configuration, onReport: { reports.append($0) }, completion: done)
        }.get()
        lab.run(for: span)
        try lab.wait("scan stop") { done in central.host.stopScanning(completion: done) }.get()
        return reports
    }

    /// Connects the central to `peripheral` and returns both ends of the connection.
    func connect(to peripheral: LabDevice) throws -> (central: Connection, peripheral: Connection) {
        var incoming: Connection?
        peripheral.host.onConnection = { incoming = $0 }
        let connection = try lab.wait("connect to \(peripheral.name)") { done in
            central.host.connect(to: peripheral.address, completion: done)
        }.get()
        XCTAssertTrue(lab.run(within: .seconds(1)) { incoming != nil }, "the peripheral saw the connection")
        guard let other = incoming else { throw LabError.timedOut(what: "peripheral side of the connection", after: .seconds(1), at: lab.loop.now) }
        return (connection, other)
    }

    func discoverAll(_ connection: Connection) throws -> [GATTRemoteService] {
        try lab.wait("discovery") { done in connection.client.discoverAll(completion: done) }.get()
    }

    /// The discovered characteristic `uuid` (after `discoverAll`).
    func characteristic(_ uuid: BluetoothUUID, on connection: Connection) throws -> GATTRemoteCharacteristic {
        for service in connection.client.services {
            if let c = service.characteristic(uuid) { return c }
        }
        throw LabError.timedOut(what: "characteristic \(uuid) not discovered", after: .zero, at: lab.loop.now)
    }
}

/// A place in every device's ATT traffic: what came before it is ignored by `since:` queries.
struct TrafficMark {
    let counts: [ObjectIdentifier: Int]
}

extension ThreePeripheralLab {
    func mark() -> TrafficMark {
        TrafficMark(counts: Dictionary(uniqueKeysWithValues: lab.devices.map { (ObjectIdentifier($0.traffic), $0.traffic.records.count) }))
    }
}

extension ATTTraffic {
    /// Records after `mark`.
    func records(since mark: TrafficMark) -> [Record] {
        Array(records.dropFirst(mark.counts[ObjectIdentifier(self)] ?? 0))
    }

    /// Opcodes of the PDUs this host sent (or received) after `mark`, in order.
    func opcodes(sent: Bool, since mark: TrafficMark) -> [UInt8] {
        records(since: mark).filter { $0.wasSent == sent }.compactMap { $0.opcode?.rawValue }
    }
}

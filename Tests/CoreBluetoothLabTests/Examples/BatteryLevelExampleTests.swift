import ATT
import BatteryLevel
import BLELab
import BLERuntime
import CoreBluetoothLab
import Foundation
import GATT
import ScenarioFormat
import XCTest

/// Seed 003: the battery-level central — manufacturer name read once, level 0–100 % read then
/// followed by notifications.
final class BatteryLevelExampleTests: XCTestCase {
    private static let ble112 = PeripheralSpec(
        id: "ble112", advertising: AdvertisingSpec(name: "BLE112", services: [0x180F]),
        services: [
            ServiceSpec(uuid: 0x180A, characteristics: [CharacteristicSpec(uuid: 0x2A29, properties: [.read], value: Array("Bluegiga".utf8))]),
            ServiceSpec(uuid: 0x180F, characteristics: [CharacteristicSpec(uuid: 0x2A19, properties: [.read, .notify], value: [57])]),
        ])

    func testReadsNameAndLevelThenFollowsTheLevel() throws {
        let lab = CBLab(seed: 400)
        try lab.addPeripheral(Peripherals.hm10())
        let ble112 = try lab.addPeripheral(Self.ble112)
        let monitor = lab.attach { BatteryMonitor() }

        XCTAssertTrue(lab.run(within: .seconds(5)) { monitor.manufacturerName != nil && monitor.batteryLevel != nil })
        XCTAssertEqual(monitor.manufacturerName, "Bluegiga")
        XCTAssertEqual(monitor.batteryLevel, 57)
        XCTAssertEqual(monitor.peripheral?.name, "BLE112", "the HM-10 does not advertise 180A or 180F")
        XCTAssertFalse(monitor.centralManager.isScanning)
        let battery = try XCTUnwrap(monitor.peripheral?.services?.first { $0.uuid == CBUUID(string: "180F") }?.characteristics?.first)
        XCTAssertTrue(lab.run(within: .seconds(2)) { battery.isNotifying })
        XCTAssertEqual(battery.uuid.description, "Battery Level")

        // The potentiometer turns: one notification every 10 s, the last one out of range.
        ble112.perform([.notifyEvery(CharacteristicRef(0x2A19), interval: .seconds(10), value: .sequence([[56], [40], [0], [150]]), count: 4)])
        lab.run(for: .seconds(41))
        XCTAssertEqual(monitor.levelHistory, [57, 56, 40, 0])
        XCTAssertEqual(monitor.batteryLevel, 0)
        XCTAssertEqual(monitor.rejectedLevels, [Data([150])], "not a percentage: ignored")
        // The name was read once and never again; the level arrived by notification, not polling.
        let central = try XCTUnwrap(monitor.centralManager)
        XCTAssertEqual(lab.attTraffic(of: central).filter { $0.wasSent && $0.opcode == .readRequest }.count, 2)
        XCTAssertEqual(lab.attTraffic(of: central).filter { !$0.wasSent && $0.opcode == .handleValueNotification }.count, 4)
    }
}

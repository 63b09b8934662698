import ATT
import BLELab
import BLERuntime
import CoreBluetoothLab
import Foundation
import GATT
import ScenarioFormat
import SmartCurtain
import XCTest

/// Seed 002: the smart curtain — connect by name, Write Command "IOS_TEST\n", read and notify.
final class SmartCurtainExampleTests: XCTestCase {
    private func curtain(id: String, name: String, rssi: Int8) -> PeripheralSpec {
        PeripheralSpec(id: id, rssi: rssi, advertising: AdvertisingSpec(name: name, services: [0xFFF0]),
                       services: [ServiceSpec(uuid: 0xFFF0, characteristics: [
                           // A command moves the curtain: its state changes and is notified.
                           CharacteristicSpec(uuid: 0xFFF1, properties: [.writeWithoutResponse],
                                              onWrite: [.setValue(CharacteristicRef(0xFFF2), .bytes(Array("OPEN".utf8))),
                                                        .notify(CharacteristicRef(0xFFF2), nil)]),
                           CharacteristicSpec(uuid: 0xFFF2, properties: [.read, .notify], value: Array("CLOSED".utf8)),
                       ])])
    }

    func testConnectsByNameAndSendsAWriteCommandTheCurtainReceives() throws {
        let lab = CBLab(seed: 300)
        // A look-alike that is louder, so it is likely reported first: the name decides.
        let decoy = try lab.addPeripheral(curtain(id: "decoy", name: "Smart_Light", rssi: -35))
        let device = try lab.addPeripheral(curtain(id: "curtain", name: "Smart_Curtain", rssi: -70))
        let handler = lab.attach { BleHandler() }
        var events: [BleHandler.Event] = []
        handler.onEvent = { events.append($0) }

        XCTAssertTrue(lab.run(within: .seconds(5)) { events.contains(.connected) })
        XCTAssertEqual(handler.myPeripheral?.name, "Smart_Curtain")
        XCTAssertEqual(handler.centralManager?.isScanning, false, "scanning stopped once the curtain was found")
        XCTAssertEqual(device.host.connections.count, 1)
        XCTAssertEqual(decoy.host.connections.count, 0)

        handler.readService()
        XCTAssertTrue(lab.run(within: .seconds(2)) { events.contains(.value(Data("CLOSED".utf8))) })

        handler.writeService(data: Data("IOS_TEST\n".utf8))
        XCTAssertTrue(lab.run(within: .seconds(2)) { events.contains(.value(Data("OPEN".utf8))) }, "the curtain moved and said so")
        let writes = lab.attWrites(to: CBUUID(string: "FFF1"))
        XCTAssertEqual(writes.map(\.opcode), [.writeCommand], "always without response")
        XCTAssertEqual(writes.map(\.receiver), ["curtain"])
        XCTAssertEqual(writes.first.map { String(decoding: $0.value, as: UTF8.self) }, "IOS_TEST\n")
        XCTAssertEqual(device.value(of: CharacteristicRef(0xFFF1)), Array("IOS_TEST\n".utf8), "observed at the peripheral")
        XCTAssertEqual(events, [.connected, .value(Data("CLOSED".utf8)), .value(Data("OPEN".utf8))])
    }

    func testACurtainThatVanishesIsReportedDisconnected() throws {
        let lab = CBLab(seed: 301)
        let device = try lab.addPeripheral(curtain(id: "curtain", name: "Smart_Curtain", rssi: -60))
        let handler = lab.attach { BleHandler() }
        var events: [BleHandler.Event] = []
        handler.onEvent = { events.append($0) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { events.contains(.connected) })
        lab.setInRange(false, device)
        XCTAssertTrue(lab.run(within: .seconds(10)) { events.contains(.disconnected) })
    }
}

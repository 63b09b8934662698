import ATT
import BLELab
import BLERuntime
import BLEScanner
import BLEWire
import CoreBluetoothLab
import Foundation
import GATT
import HCI
import ScenarioFormat
import XCTest

/// Seed 001: the general scanner — named devices only, each once; connect, read, subscribe.
final class BLEScannerExampleTests: XCTestCase {
    private static let uartService = BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    private static let uartRX = BluetoothUUID(string: "6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
    private static let uartTX = BluetoothUUID(string: "6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!

    private func populatedLab() throws -> CBLab {
        let lab = CBLab(seed: 200)
        try lab.addPeripheral(PeripheralSpec(id: "hr", advertising: AdvertisingSpec(name: "HR Sensor", services: [0x180D]),
                                             services: [ServiceSpec(uuid: 0x180D, characteristics: [
                                                 CharacteristicSpec(uuid: 0x2A37, properties: [.notify]),
                                                 CharacteristicSpec(uuid: 0x2A38, properties: [.read], value: [0x01]),
                                             ])]))
        try lab.addPeripheral(PeripheralSpec(id: "uart", advertising: AdvertisingSpec(name: "UART", scanResponse: AdvertisingContent(services: [Self.uartService])),
                                             services: [ServiceSpec(uuid: Self.uartService, characteristics: [
                                                 CharacteristicSpec(uuid: Self.uartRX, properties: [.write, .writeWithoutResponse]),
                                                 CharacteristicSpec(uuid: Self.uartTX, properties: [.notify]),
                                             ])]))
        try lab.addPeripheral(PeripheralSpec(id: "beacon", advertising: AdvertisingSpec(services: [0xFEAA], connectable: false)))
        return lab
    }

    private func poweredScanner(in lab: CBLab) -> BLEManager {
        let scanner = lab.attach { BLEManager() }
        XCTAssertTrue(lab.run(within: .seconds(2)) { scanner.isPoweredOn })
        return scanner
    }

    func testNamedDevicesAreListedOnceEachEvenWhenReportedAgainAndAgain() throws {
        let lab = try populatedLab()
        let scanner = poweredScanner(in: lab)
        scanner.scanOptions = [CBCentralManagerScanOptionAllowDuplicatesKey: true]
        scanner.startScan()
        XCTAssertTrue(scanner.isScanning)
        lab.run(for: .seconds(3))
        XCTAssertEqual(scanner.devices.map(\.name).sorted(), ["HR Sensor", "UART"], "the nameless beacon is left out")
        // The stack did report every advertising event: the list's dedupe is the app's own.
        let reports = lab.lab.device(named: "central-1")?.log.packets.filter { p in
            guard case let .event(.leMeta(.advertisingReport(r)))? = try? HCIPacket(h4: p.frame) else { return false }
            return !r.isEmpty
        }.count ?? 0
        XCTAssertGreaterThan(reports, 50)
    }

    func testWithoutOptionsTheStackReportsEachDeviceOnce() throws {
        let lab = try populatedLab()
        let scanner = poweredScanner(in: lab)
        scanner.startScan()
        lab.run(for: .seconds(3))
        XCTAssertEqual(Set(scanner.devices.map(\.name)), ["HR Sensor", "UART"])
        XCTAssertEqual(scanner.devices.count, 2)
    }

    func testConnectingReadsTheReadableAndSubscribesToTheNotifiable() throws {
        let lab = try populatedLab()
        let scanner = poweredScanner(in: lab)
        scanner.startScan()
        XCTAssertTrue(lab.run(within: .seconds(3)) { scanner.devices.count == 2 })
        let hr = try XCTUnwrap(scanner.devices.first { $0.name == "HR Sensor" })
        scanner.connect(hr)
        XCTAssertFalse(scanner.isScanning)
        let measurement = { hr.peripheral.services?.first?.characteristics?.first { $0.uuid == CBUUID(string: "2A37") } }
        XCTAssertTrue(lab.run(within: .seconds(5)) { !scanner.received.isEmpty && measurement()?.isNotifying == true })
        XCTAssertEqual(scanner.received.map(\.characteristic), [CBUUID(string: "2A38")], "the readable one was read")
        XCTAssertEqual(scanner.devices.first { $0.name == "HR Sensor" }?.isConnected, true)
        lab.peripheral("hr")?.perform([.notify(CharacteristicRef(0x2A37), .bytes([0x00, 0x48]))])
        lab.run(for: .seconds(1))
        XCTAssertEqual(scanner.received.last?.value, Data([0x00, 0x48]))
        scanner.disconnect()
        XCTAssertTrue(lab.run(within: .seconds(2)) { scanner.connectedDevice == nil })
    }

    func testTextFromTheUARTAndTheWritePolicy() throws {
        let lab = try populatedLab()
        let scanner = poweredScanner(in: lab)
        scanner.startScan()
        XCTAssertTrue(lab.run(within: .seconds(3)) { scanner.devices.count == 2 })
        scanner.connect(try XCTUnwrap(scanner.devices.first { $0.name == "UART" }))
        let peripheral = try XCTUnwrap(scanner.devices.first { $0.name == "UART" }?.peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) {
            peripheral.services?.first?.characteristics?.contains { $0.uuid.uuidString == Self.uartTX.uuidString && $0.isNotifying } ?? false
        })
        lab.peripheral("uart")?.perform([.notify(CharacteristicRef(Self.uartTX), .bytes(Array("hello".utf8)))])
        lab.run(for: .seconds(1))
        XCTAssertEqual(scanner.receivedData, "hello")

        let rx = try XCTUnwrap(peripheral.services?.first?.characteristics?.first { $0.uuid.uuidString == Self.uartRX.uuidString })
        scanner.write(Data("hi".utf8), to: rx, of: peripheral)
        lab.run(for: .seconds(1))
        XCTAssertEqual(lab.attWrites(to: rx.uuid).map(\.opcode), [.writeCommand], "without response when the characteristic allows it")
    }
}

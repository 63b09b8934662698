import ATT
import BLELab
import BLERuntime
import CoreBluetoothLab
import Foundation
import GATT
import HM10Serial
import ScenarioFormat
import XCTest

/// Seed 000: the HM-10 serial app, against an HM-10 with each write policy the app supports.
final class HM10SerialExampleTests: XCTestCase {
    private let ffe1 = CBUUID(string: "FFE1")

    /// Scans, picks the only module, waits until FFE1 is ready and subscribed.
    private func connectedSerial(to spec: PeripheralSpec, in lab: CBLab) throws -> (BluetoothSerial, ScanList) {
        let (serial, list) = lab.attach { () -> (BluetoothSerial, ScanList) in
            let serial = BluetoothSerial()
            return (serial, ScanList(serial: serial))
        }
        XCTAssertTrue(lab.run(within: .seconds(2)) { serial.centralManager.state == .poweredOn })
        list.start()
        XCTAssertTrue(lab.run(within: .seconds(5)) { !list.peripherals.isEmpty })
        list.select(0)
        XCTAssertTrue(lab.run(within: .seconds(5)) { serial.isReady && serial.writeCharacteristic?.isNotifying == true })
        XCTAssertFalse(serial.centralManager.isScanning)
        XCTAssertEqual(list.connected?.name, "HMSoft")
        return (serial, list)
    }

    /// A real HM-10: FFE1 is read, write-without-response, notify → Write Commands, no acknowledgements.
    func testAModuleWithoutWriteGetsWriteCommands() throws {
        let lab = CBLab(seed: 100)
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let (serial, list) = try connectedSerial(to: hm10.spec, in: lab)
        XCTAssertEqual(serial.writeType, .withoutResponse)

        XCTAssertTrue(serial.send("AT+HELLO"))
        lab.run(for: .seconds(1))
        let writes = lab.attWrites(to: ffe1)
        XCTAssertEqual(writes.map(\.opcode), [.writeCommand], "Write Command 0x52 on the link")
        XCTAssertEqual(writes.map(\.value), [Data("AT+HELLO".utf8)])
        XCTAssertEqual(hm10.value(of: CharacteristicRef(0xFFE1)), Array("AT+HELLO".utf8))
        XCTAssertEqual(serial.acknowledgedWrites, 0, "didWriteValueFor never comes for Write Commands")

        hm10.perform([.notify(CharacteristicRef(0xFFE1), .bytes(Array("OK+HELLO".utf8)))])
        lab.run(for: .seconds(1))
        XCTAssertEqual(list.messages, ["OK+HELLO"])
    }

    /// A module whose FFE1 takes Write Requests: the app prefers them, and each is acknowledged.
    func testAModuleWithWriteGetsWriteRequests() throws {
        for properties: CharacteristicProperties in [[.read, .write, .notify], [.read, .write, .writeWithoutResponse, .notify]] {
            let lab = CBLab(seed: 101)
            let hm10 = try lab.addPeripheral(Peripherals.hm10(ffe1: properties))
            let (serial, _) = try connectedSerial(to: hm10.spec, in: lab)
            XCTAssertEqual(serial.writeType, .withResponse, "\(properties)")
            serial.send("AT")
            serial.send("AT+VERS?")
            XCTAssertTrue(lab.run(within: .seconds(2)) { serial.acknowledgedWrites == 2 }, "\(properties)")
            XCTAssertEqual(lab.attWrites(to: ffe1).map(\.opcode), [.writeRequest, .writeRequest], "Write Request 0x12 on the link")
            XCTAssertEqual(hm10.value(of: CharacteristicRef(0xFFE1)), Array("AT+VERS?".utf8))
        }
    }

    /// The same app against the peripherals of the shipped scenario files: the HM-10 of
    /// scenarios/seeds/hm10-serial.yaml (no `write` → Write Commands, echoed by notification)
    /// and the clone of scenarios/seeds/hm10-with-write.yaml (`write` → Write Requests).
    func testAgainstThePeripheralsOfTheSeedScenarioFiles() throws {
        let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../scenarios/seeds").standardized.path
        for (file, expected) in [("hm10-serial.yaml", ATTOpcode.writeCommand), ("hm10-with-write.yaml", .writeRequest)] {
            let lab = CBLab(seed: 103)
            let placed = try lab.addPeripherals(fromScenario: seeds + "/" + file)
            XCTAssertFalse(placed.isEmpty, file)
            let (serial, list) = lab.attach { () -> (BluetoothSerial, ScanList) in
                let serial = BluetoothSerial()
                return (serial, ScanList(serial: serial))
            }
            XCTAssertTrue(lab.run(within: .seconds(2)) { serial.centralManager.state == .poweredOn })
            list.start()
            lab.run(for: .seconds(2))
            XCTAssertEqual(list.peripherals.count, 1, "\(file): only the FFE0 module is listed")
            list.select(0)
            XCTAssertTrue(lab.run(within: .seconds(5)) { serial.isReady && serial.writeCharacteristic?.isNotifying == true }, file)
            XCTAssertTrue(serial.send("ping"))
            XCTAssertTrue(lab.run(within: .seconds(2)) { list.messages == ["ping"] }, "\(file): the module echoes by notification")
            XCTAssertEqual(lab.attWrites(to: ffe1).map(\.opcode), [expected], file)
        }
    }

    func testTheScanListHoldsEachModuleOnceStrongestFirst() throws {
        let lab = CBLab(seed: 102)
        var far = Peripherals.hm10(id: "far")
        far.rssi = -80
        var near = Peripherals.hm10(id: "near")
        near.rssi = -40
        try lab.addPeripheral(far)
        try lab.addPeripheral(near)
        try lab.addPeripheral(Peripherals.probe())
        let (serial, list) = lab.attach { () -> (BluetoothSerial, ScanList) in
            let serial = BluetoothSerial()
            return (serial, ScanList(serial: serial))
        }
        XCTAssertTrue(lab.run(within: .seconds(2)) { serial.centralManager.state == .poweredOn })
        list.start()
        lab.run(for: .seconds(3))
        XCTAssertEqual(list.peripherals.count, 2, "only FFE0 modules")
        XCTAssertEqual(list.peripherals.map { abs($0.rssi - (-40)) <= 3 }, [true, false], "strongest first: \(list.peripherals.map(\.rssi))")
        XCTAssertEqual(list.peripherals.map { abs($0.rssi - (-80)) <= 3 }, [false, true])
        XCTAssertEqual(Set(list.peripherals.map(\.peripheral.identifier)).count, 2)
    }
}

final class ScenarioFilePeripheralTests: XCTestCase {
    func testABrokenScenarioFilePlacesNothingAndSaysWhere() throws {
        let path = NSTemporaryDirectory() + "/cblab-broken-\(getpid()).yaml"
        try "scenario: x\nperipherals:\n  p:\n    advertize: { name: P }\ncentral:\n  - wait: 1s\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let lab = CBLab(seed: 1)
        XCTAssertThrowsError(try lab.addPeripherals(fromScenario: path)) { error in
            XCTAssertTrue("\(error)".contains("\(path):4:5: error: found unknown key 'advertize'"), "\(error)")
            XCTAssertTrue("\(error)".contains("did you mean 'advertise'"), "\(error)")
        }
        XCTAssertNil(lab.peripheral("p"))
    }
}

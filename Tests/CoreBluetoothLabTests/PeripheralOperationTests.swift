import ATT
import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import GATT
import ScenarioFormat
import XCTest

/// CBPeripheral's GATT operations beyond the easy-to-get-wrong ones: discovery results, reads,
/// descriptors, long writes, backpressure, RSSI and Service Changed.
final class PeripheralOperationTests: LabTestCase {
    func testDiscoveryHidesGAPAndGATTServicesAndHonoursFilters() throws {
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try discover("Probe", with: central, recorder)
        recorder.onConnect = { $0.discoverServices(nil) }
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.services != nil })
        XCTAssertEqual(peripheral.services?.map(\.uuid.uuidString), ["FFF0"], "1800 and 1801 stay with the stack")
        let service = try XCTUnwrap(peripheral.services?.first)
        XCTAssertTrue(service.isPrimary)
        XCTAssertTrue(service.peripheral === peripheral)
        peripheral.discoverCharacteristics([CBUUID(string: "FFF4"), CBUUID(string: "FFF6")], for: service)
        XCTAssertTrue(lab.run(within: .seconds(5)) { service.characteristics != nil })
        XCTAssertEqual(service.characteristics?.map(\.uuid.uuidString), ["FFF4", "FFF6"])
        XCTAssertEqual(service.characteristics?.first?.properties, [.read, .notify])
        XCTAssertTrue(service.characteristics?.first?.service === service)
        peripheral.discoverCharacteristics(nil, for: service)
        XCTAssertTrue(lab.run(within: .seconds(5)) { service.characteristics?.count == 6 })
        XCTAssertTrue(service.characteristics?.contains { $0.uuid == CBUUID(string: "FFF4") } ?? false)
    }

    func testReadsAndDescriptors() throws {
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("Probe", with: central, recorder)
        let fff3 = try characteristic("FFF3", of: peripheral)
        peripheral.readValue(for: fff3)
        XCTAssertTrue(lab.run(within: .seconds(2)) { fff3.value == Data([0x03]) })
        XCTAssertEqual(recorder.events.last, "value FFF3 03")

        let fff6 = try characteristic("FFF6", of: peripheral)
        peripheral.readValue(for: fff6)
        XCTAssertTrue(lab.run(within: .seconds(2)) { recorder.errors["value FFF6 nil"] != nil })
        XCTAssertEqual((recorder.errors["value FFF6 nil"] as? CBATTError)?.code, .readNotPermitted)

        peripheral.discoverDescriptors(for: fff6)
        XCTAssertTrue(lab.run(within: .seconds(2)) { fff6.descriptors != nil })
        let description = try XCTUnwrap(fff6.descriptors?.first { $0.uuid.uuidString == "2901" })
        XCTAssertEqual(description.uuid.description, "Characteristic User Description")
        peripheral.readValue(for: description)
        XCTAssertTrue(lab.run(within: .seconds(2)) { description.value != nil })
        XCTAssertEqual(description.value as? String, "Setpoint")

        let fff4 = try characteristic("FFF4", of: peripheral)
        peripheral.setNotifyValue(true, for: fff4)
        peripheral.discoverDescriptors(for: fff4)
        XCTAssertTrue(lab.run(within: .seconds(2)) { fff4.descriptors != nil && fff4.isNotifying })
        let cccd = try XCTUnwrap(fff4.descriptors?.first)
        peripheral.readValue(for: cccd)
        XCTAssertTrue(lab.run(within: .seconds(2)) { cccd.value != nil })
        XCTAssertEqual((cccd.value as? NSNumber)?.intValue, 1, "notifications enabled")
        peripheral.writeValue(Data([0, 0]), for: cccd)
        lab.run(for: .seconds(1))
        XCTAssertTrue(lab.warnings.last?.contains("setNotifyValue") ?? false, "the CCCD is written with setNotifyValue only")
    }

    func testLongWritesUsePrepareAndExecuteWrite() throws {
        let probe = try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("Probe", with: central, recorder)
        let fff2 = try characteristic("FFF2", of: peripheral)
        let long = Data((0..<300).map { UInt8(truncatingIfNeeded: $0) })
        peripheral.writeValue(long, for: fff2, type: .withResponse)
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.count("wrote FFF2") == 1 })
        XCTAssertNil(recorder.errors["wrote FFF2"])
        XCTAssertEqual(Set(lab.attWrites(to: CBUUID(string: "FFF2")).map(\.opcode)), [.prepareWriteRequest])
        XCTAssertEqual(probe.value(of: CharacteristicRef(0xFFF2)).map { Data($0) }, long)
    }

    func testWriteWithoutResponseBackpressure() throws {
        let probe = try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("Probe", with: central, recorder)
        let fff1 = try characteristic("FFF1", of: peripheral)
        XCTAssertTrue(peripheral.canSendWriteWithoutResponse)

        // The app writes while it may; the host queue fills once the controller's 8 buffers are taken.
        var sent = 0
        while peripheral.canSendWriteWithoutResponse, sent < 100 {
            peripheral.writeValue(Data([UInt8(sent)]), for: fff1, type: .withoutResponse)
            sent += 1
        }
        XCTAssertFalse(peripheral.canSendWriteWithoutResponse)
        let link = try XCTUnwrap(lab.device(of: central)?.host.connections.values.first?.link)
        XCTAssertEqual(link.queuedFragments, lab.transmitQueueLimit, "the controller's buffers are taken and the host queue is at the limit")
        XCTAssertGreaterThan(sent, lab.transmitQueueLimit)

        // Each time the link has room again, the app is told and writes the rest.
        var total = sent
        recorder.onReady = { p in
            while p.canSendWriteWithoutResponse, total < 40 {
                p.writeValue(Data([UInt8(total)]), for: fff1, type: .withoutResponse)
                total += 1
            }
        }
        // The peripheral's server takes each command in the loop turn after it arrived.
        XCTAssertTrue(lab.run(within: .seconds(5)) {
            total == 40 && lab.attWrites(to: CBUUID(string: "FFF1")).count == 40 && probe.value(of: CharacteristicRef(0xFFF1)) == [39]
        })
        XCTAssertGreaterThanOrEqual(recorder.count("ready"), 1)
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF1")).map { $0.value[0] }, (0..<40).map(UInt8.init), "all of them, in order")
        XCTAssertEqual(probe.value(of: CharacteristicRef(0xFFF1)), [39])
    }

    func testReadRSSIReportsWhatTheAirSays() throws {
        lab = CBLab(seed: 11, rssiNoise: 0)  // exact readings (RSSINoiseTests covers the noise)
        let probe = try lab.addPeripheral(Peripherals.probe(rssi: -67))
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("Probe", with: central, recorder)
        peripheral.readRSSI()
        XCTAssertTrue(lab.run(within: .seconds(1)) { recorder.count("rssi") == 1 })
        XCTAssertEqual(recorder.events.last, "rssi -67")
        lab.setRSSI(-80, of: probe)
        peripheral.readRSSI()
        XCTAssertTrue(lab.run(within: .seconds(1)) { recorder.count("rssi") == 2 })
        XCTAssertEqual(recorder.events.last, "rssi -80")
    }

    func testServiceChangedIndicationInvalidatesServices() throws {
        let probe = try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("Probe", with: central, recorder)
        let service = try XCTUnwrap(peripheral.services?.first)
        lab.run(for: .seconds(1))
        let removed = try XCTUnwrap(probe.server.database.service(0xFFF0))
        probe.server.removeService(at: removed.range.start)
        XCTAssertEqual(probe.server.indicateServiceChanged(removed.range), 1, "the central subscribed to Service Changed")
        XCTAssertTrue(lab.run(within: .seconds(2)) { recorder.count("modified") == 1 })
        XCTAssertEqual(recorder.events.last, "modified FFF0")
        XCTAssertFalse(peripheral.services?.contains { $0 === service } ?? true)
    }

    func testOperationsOnADisconnectedPeripheralAreIgnoredWithAWarning() throws {
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try discover("Probe", with: central, recorder)
        peripheral.discoverServices(nil)
        lab.run(for: .seconds(1))
        XCTAssertEqual(recorder.count("services"), 0)
        XCTAssertTrue(lab.warnings.last?.contains("connected state") ?? false)
    }
}

import ATT
import BLELab
import BLERuntime
import BLEScanner
import CoreBluetoothLab
import Foundation
import HCI
import HeartRatePeripheral
import XCTest

extension CBLabTimer: HeartbeatTimer {}

/// Seed 004 against seed 001: the heart-rate peripheral manager on one controller, the scanner
/// app on another, both through CoreBluetoothLab.
final class HeartRatePeripheralExampleTests: XCTestCase {
    func testSixtyMeasurementsInSixtySecondsAndAdvertisingStopsOnSubscribe() throws {
        let lab = CBLab(seed: 500)
        let (sensor, scanner) = lab.attach {
            (HeartRatePeripheral(timer: CBLabTimer(lab: lab), random: SeededRandom(seed: 500, stream: "heart rate")), BLEManager())
        }
        XCTAssertTrue(lab.run(within: .seconds(2)) { scanner.isPoweredOn && sensor.peripheralManager.isAdvertising })
        let sensorDevice = try XCTUnwrap(lab.device(of: sensor.peripheralManager))
        XCTAssertNotEqual(sensorDevice.controller?.address, lab.lab.device(named: "central-2")?.controller?.address, "two controllers")

        scanner.startScan()
        XCTAssertTrue(lab.run(within: .seconds(3)) { scanner.devices.contains { $0.name == "HR Sim" } })
        let device = try XCTUnwrap(scanner.devices.first { $0.name == "HR Sim" })
        scanner.connect(device)

        // The scanner subscribes to 2A37 (it notifies); the sensor stops advertising and beats.
        XCTAssertTrue(lab.run(within: .seconds(5)) { sensor.peripheralManager.isAdvertising == false && !sensor.isAdvertising })
        let subscribedAt = lab.now
        XCTAssertTrue(lab.run(within: .milliseconds(50)) { !sensorDevice.host.isAdvertising }, "the controller stopped advertising")
        let enables = sensorDevice.log.packets.compactMap { p -> (Instant, Bool)? in
            guard case let .command(.leSetAdvertisingEnable(on))? = try? HCIPacket(h4: p.frame) else { return nil }
            return (p.time, on)
        }
        XCTAssertEqual(enables.map(\.1), [true, true, false], "advertising resumed after the connection, stopped on subscribe")
        XCTAssertEqual(enables.last?.0, subscribedAt)

        lab.run(for: .seconds(60))
        XCTAssertEqual(sensor.sentRates.count, 60, "one measurement per second")
        XCTAssertTrue(sensor.sentRates.allSatisfy { (71...73).contains($0) }, "\(sensor.sentRates)")
        lab.run(for: .milliseconds(200))
        let measurements = scanner.received.filter { $0.characteristic == CBUUID(string: "2A37") }.map(\.value)
        XCTAssertEqual(measurements, sensor.sentRates.map { Data([0x00, $0]) }, "every one arrived, in order, flags 0x00 then bpm")
        XCTAssertEqual(lab.attTraffic(of: sensor.peripheralManager).filter { $0.wasSent && $0.opcode == .handleValueNotification }.count, 60)
        XCTAssertNil(sensor.pending)
    }

    func testUnsubscribingStopsTheBeatAndAdvertisesAgain() throws {
        let lab = CBLab(seed: 501)
        let (sensor, scanner) = lab.attach {
            (HeartRatePeripheral(timer: CBLabTimer(lab: lab), random: SeededRandom(seed: 501)), BLEManager())
        }
        XCTAssertTrue(lab.run(within: .seconds(2)) { scanner.isPoweredOn })
        scanner.startScan()
        XCTAssertTrue(lab.run(within: .seconds(3)) { !scanner.devices.isEmpty })
        scanner.connect(scanner.devices[0])
        XCTAssertTrue(lab.run(within: .seconds(5)) { !sensor.isAdvertising })
        lab.run(for: .seconds(5))
        XCTAssertEqual(sensor.sentRates.count, 5)
        scanner.disconnect()
        XCTAssertTrue(lab.run(within: .seconds(2)) { sensor.isAdvertising })
        lab.run(for: .seconds(5))
        XCTAssertEqual(sensor.sentRates.count, 5, "no subscriber, no beat")
    }
}

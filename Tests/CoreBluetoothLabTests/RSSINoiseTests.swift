import CoreBluetoothLab
import Foundation
import XCTest

/// RSSI as a phone reports it: a few dB around the air's value, seeded, unless switched off.
final class RSSINoiseTests: XCTestCase {
    /// The RSSI of every advertising report in `span` of a duplicate-reporting scan, and of
    /// `reads` Read RSSIs on a connection, with the probe placed at -55 dBm.
    private func readings(_ lab: CBLab, reads: Int = 12) throws -> (discovered: [Int], read: [Int]) {
        try lab.addPeripheral(Peripherals.probe(rssi: -55))
        let recorder = CentralRecorder()
        var discovered: [Int] = []
        recorder.onDiscover = { _, _, rssi in discovered.append(rssi.intValue) }
        let central = lab.attach { CBCentralManager(delegate: recorder, queue: nil) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { central.state == .poweredOn })
        central.scanForPeripherals(withServices: nil, options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
        lab.run(for: .seconds(3))
        central.stopScan()
        let peripheral = try XCTUnwrap(recorder.discovered.first)
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .connected })
        var read: [Int] = []
        for _ in 0..<reads {
            peripheral.readRSSI()
            XCTAssertTrue(lab.run(within: .seconds(1)) { recorder.count("rssi") == read.count + 1 })
            read.append(Int(recorder.events.last?.split(separator: " ").last ?? "") ?? 0)
            lab.run(for: .milliseconds(200))
        }
        return (discovered, read)
    }

    func testDiscoveryAndReadRSSIFluctuateAFewDBAroundTheAirsValue() throws {
        let lab = CBLab(seed: 11)
        XCTAssertEqual(lab.rssiNoise, CBLab.phoneRSSINoise)
        let (discovered, read) = try readings(lab)
        XCTAssertGreaterThan(discovered.count, 20)
        XCTAssertTrue(discovered.allSatisfy { (-58)...(-52) ~= $0 }, "\(discovered)")
        XCTAssertGreaterThanOrEqual(Set(discovered).count, 4, "the readings vary: \(discovered)")
        XCTAssertTrue(read.allSatisfy { (-58)...(-52) ~= $0 }, "\(read)")
        XCTAssertGreaterThanOrEqual(Set(read).count, 3, "readRSSI varies: \(read)")
        let mean = Double(discovered.reduce(0, +)) / Double(discovered.count)
        XCTAssertEqual(mean, -55, accuracy: 1.5, "centred on the air's value")
    }

    func testTheSameSeedGivesTheSameReadings() throws {
        let first = try readings(CBLab(seed: 5))
        let second = try readings(CBLab(seed: 5))
        let other = try readings(CBLab(seed: 6))
        XCTAssertEqual(first.discovered, second.discovered)
        XCTAssertEqual(first.read, second.read)
        XCTAssertNotEqual(first.discovered + first.read, other.discovered + other.read, "another seed, other draws")
    }

    func testNoiseSwitchedOffGivesTheAirsValueExactly() throws {
        let lab = CBLab(seed: 11, rssiNoise: 0)
        let (discovered, read) = try readings(lab, reads: 4)
        XCTAssertFalse(discovered.isEmpty)
        XCTAssertEqual(Set(discovered), [-55])
        XCTAssertEqual(read, [-55, -55, -55, -55])
    }
}

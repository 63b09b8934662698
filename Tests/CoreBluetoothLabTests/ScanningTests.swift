import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import XCTest

/// scanForPeripherals(withServices:options:): the service filter, duplicate filtering, and the
/// advertisement dictionary with Apple's keys and value types.
final class ScanningTests: LabTestCase {
    func testServiceFilterReportsOnlyPeripheralsAdvertisingTheService() throws {
        try lab.addPeripheral(Peripherals.hm10())
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        central.scanForPeripherals(withServices: [CBUUID(string: "FFE0")], options: nil)
        XCTAssertTrue(central.isScanning)
        lab.run(for: .seconds(2))
        XCTAssertEqual(recorder.discovered.map(\.name), ["HMSoft"])
        XCTAssertEqual(recorder.count("discover"), 1, "reported once per scan without AllowDuplicates")
        central.stopScan()
        XCTAssertFalse(central.isScanning)
    }

    func testAllowDuplicatesReportsEveryAdvertisingEventWithTheSamePeripheralObject() throws {
        try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        central.scanForPeripherals(withServices: nil, options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
        lab.run(for: .seconds(2))
        XCTAssertGreaterThan(recorder.count("discover"), 10, "advertising every 100 ms")
        XCTAssertEqual(recorder.discovered.count, 1, "one CBPeripheral per device")
    }

    func testMovingAPeripheralChangesTheReportedRSSI() throws {
        let probe = try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        var rssis: [Int] = []
        recorder.onDiscover = { _, _, rssi in rssis.append(rssi.intValue) }
        let central = poweredCentral(recorder)
        central.scanForPeripherals(withServices: nil, options: [CBCentralManagerScanOptionAllowDuplicatesKey: NSNumber(value: true)])
        lab.run(for: .seconds(1))
        lab.setRSSI(-90, of: probe)
        rssis.removeAll()
        lab.run(for: .seconds(1))
        XCTAssertFalse(rssis.isEmpty)
        XCTAssertTrue(rssis.allSatisfy { (-93)...(-87) ~= $0 }, "-90 dBm ± the phone's noise: \(rssis)")
    }

    func testAdvertisementDataUsesApplesKeysAndTypes() throws {
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        _ = try discover("Probe", with: central, recorder)
        let ad = try XCTUnwrap(recorder.advertisements.first)
        XCTAssertEqual(ad["kCBAdvDataLocalName"] as? String, "Probe")
        XCTAssertEqual(ad[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID], [CBUUID(string: "FFF0")])
        XCTAssertEqual((ad[CBAdvertisementDataTxPowerLevelKey] as? NSNumber)?.intValue, 4)
        XCTAssertEqual(ad[CBAdvertisementDataManufacturerDataKey] as? Data, Data([0x4C, 0x00, 0x01, 0x02]))
        XCTAssertEqual(ad[CBAdvertisementDataServiceDataKey] as? [CBUUID: Data], [CBUUID(string: "FFF0"): Data([0xAB])])
        XCTAssertEqual((ad[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue, true)
        XCTAssertEqual(CBAdvertisementDataIsConnectable, "kCBAdvDataIsConnectable")
        XCTAssertEqual(CBCentralManagerScanOptionAllowDuplicatesKey, "kCBScanOptionAllowDuplicates")
    }

    func testPeripheralIdentifiersAreStableAcrossRunsWithTheSameSeed() throws {
        func identifier() throws -> UUID {
            let lab = CBLab(seed: 3)
            try lab.addPeripheral(Peripherals.hm10())
            let recorder = CentralRecorder()
            let central = lab.attach { CBCentralManager(delegate: recorder, queue: nil) }
            lab.run(for: .seconds(1))
            central.scanForPeripherals(withServices: nil)
            lab.run(for: .seconds(1))
            return try XCTUnwrap(recorder.discovered.first?.identifier)
        }
        XCTAssertEqual(try identifier(), try identifier())
    }
}

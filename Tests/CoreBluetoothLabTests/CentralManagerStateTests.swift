import BLELab
import BLERuntime
import CoreBluetoothLab
import Dispatch
import Foundation
import XCTest

/// CBManagerState: `.unknown` until the controller's HCI power-on after init, then `.poweredOn`;
/// lab controls turn it to `.poweredOff` and `.resetting`.
final class CentralManagerStateTests: LabTestCase {
    func testStateIsUnknownUntilTheLabRunsThenPoweredOnWithOneCallback() {
        let recorder = CentralRecorder()
        let central = lab.attach { CBCentralManager(delegate: recorder, queue: nil) }
        XCTAssertEqual(central.state, .unknown)
        XCTAssertEqual(recorder.events, [], "no callback from inside init")
        lab.run(for: .seconds(1))
        XCTAssertEqual(central.state, .poweredOn)
        XCTAssertEqual(recorder.events, ["state poweredOn"])
    }

    func testAManagerMadeWithNoLabIsUnsupported() {
        let recorder = CentralRecorder()
        let central = CBCentralManager(delegate: recorder, queue: nil)
        XCTAssertEqual(central.state, .unsupported)
        XCTAssertNil(CBLab.current)
    }

    func testPowerOffThenOnAndReset() {
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        lab.powerOff(central)
        XCTAssertEqual(central.state, .poweredOff)
        lab.powerOn(central)
        XCTAssertTrue(lab.run(within: .seconds(5)) { central.state == .poweredOn })
        lab.reset(central)
        XCTAssertEqual(central.state, .resetting)
        XCTAssertTrue(lab.run(within: .seconds(5)) { central.state == .poweredOn })
        XCTAssertEqual(recorder.events, ["state poweredOn", "state poweredOff", "state poweredOn", "state resetting", "state poweredOn"])
    }

    func testCallbacksRunOnTheQueueGivenAtInit() {
        let queue = DispatchQueue(label: "app.ble")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "app.ble")
        let recorder = CentralRecorder()
        var seenOn: [String?] = []
        recorder.onStateUpdate = { _ in seenOn.append(DispatchQueue.getSpecific(key: key)) }
        let central = poweredCentral(recorder, queue: queue)
        XCTAssertEqual(central.state, .poweredOn)
        XCTAssertEqual(seenOn, ["app.ble"])
    }

    func testTheMainQueueGivenExplicitlyIsTheMainQueue() {
        let recorder = CentralRecorder()
        var onMain: [Bool] = []
        recorder.onStateUpdate = { _ in onMain.append(Thread.isMainThread) }
        let central = poweredCentral(recorder, queue: .main)
        XCTAssertEqual(central.state, .poweredOn)
        XCTAssertEqual(onMain, [true])
    }

    func testScanningBeforePoweredOnIsIgnoredWithAnAPIMisuseWarning() {
        let recorder = CentralRecorder()
        let central = lab.attach { CBCentralManager(delegate: recorder, queue: nil) }
        central.scanForPeripherals(withServices: nil)
        XCTAssertFalse(central.isScanning)
        XCTAssertEqual(lab.warnings.count, 1)
        XCTAssertTrue(lab.warnings[0].contains("API MISUSE"), lab.warnings[0])
    }
}

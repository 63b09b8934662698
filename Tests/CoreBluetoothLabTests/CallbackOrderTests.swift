import BLELab
import BLERuntime
import CoreBluetoothLab
import Dispatch
import Foundation
import XCTest

/// Delegate callbacks: Apple's order, the queue given at init, never from inside an API call,
/// and the same sequence at the same virtual instants on every run.
final class CallbackOrderTests: LabTestCase {
    /// A whole session of the usual app flow, recorded with virtual times.
    private func session(seed: UInt64) throws -> [String] {
        let lab = CBLab(seed: seed)
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        var timeline: [String] = []
        let central = lab.attach { CBCentralManager(delegate: recorder, queue: nil) }
        recorder.onStateUpdate = { $0.scanForPeripherals(withServices: [CBUUID(string: "FFF0")]) }
        recorder.onDiscover = { p, _, _ in
            central.stopScan()
            central.connect(p)
        }
        recorder.onConnect = { $0.discoverServices([CBUUID(string: "FFF0")]) }
        recorder.onServices = { p in p.discoverCharacteristics(nil, for: p.services![0]) }
        recorder.onCharacteristics = { p, s in
            let fff4 = s.characteristics!.first { $0.uuid == CBUUID(string: "FFF4") }!
            p.setNotifyValue(true, for: fff4)
            p.readValue(for: fff4)
            p.writeValue(Data([1]), for: s.characteristics!.first { $0.uuid == CBUUID(string: "FFF2") }!, type: .withResponse)
        }
        var mark = 0
        func stamp() {
            while mark < recorder.events.count {
                timeline.append("\(lab.now) \(recorder.events[mark])")
                mark += 1
            }
        }
        for _ in 0..<300 {
            lab.run(for: .milliseconds(10))
            stamp()
        }
        return timeline
    }

    func testTheUsualFlowCallsBackInApplesOrder() throws {
        let events = try session(seed: 5).map { $0.split(separator: " ", maxSplits: 1)[1] }
        XCTAssertEqual(events, [
            "state poweredOn", "discover Probe", "connect Probe", "services FFF0",
            "characteristics FFF0: FFF1,FFF2,FFF3,FFF4,FFF5,FFF6",
            "notifying FFF4 true", "value FFF4 04", "wrote FFF2",
        ])
    }

    func testTheSameSeedGivesTheSameCallbacksAtTheSameInstants() throws {
        XCTAssertEqual(try session(seed: 9), try session(seed: 9))
    }

    func testNoCallbackComesFromInsideAnAPICall() throws {
        try lab.addPeripheral(Peripherals.probe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("Probe", with: central, recorder)
        let fff3 = try characteristic("FFF3", of: peripheral)
        let before = recorder.events.count
        peripheral.setNotifyValue(true, for: fff3)     // fails, but not synchronously
        peripheral.readValue(for: fff3)
        central.cancelPeripheralConnection(peripheral)
        XCTAssertEqual(recorder.events.count, before)
        lab.run(for: .seconds(1))
        XCTAssertGreaterThan(recorder.events.count, before)
    }

    func testAManagerCreatedWhileTheLabRunsJoinsIt() {
        let recorder = CentralRecorder()
        var late: CBCentralManager?
        let first = lab.attach { CBCentralManager(delegate: CentralRecorder(), queue: nil) }
        let timer = CBLabTimer(lab: lab)
        timer.start(every: 0.5) {
            if late == nil { late = CBCentralManager(delegate: recorder, queue: nil) }
        }
        lab.run(for: .seconds(2))
        timer.invalidate()
        XCTAssertEqual(first.state, .poweredOn)
        XCTAssertEqual(late?.state, .poweredOn, "made during run(for:), when the lab is current")
        XCTAssertNil(CBLab.current, "current only while attached or running")
    }

    func testCallbacksOnACustomQueueRunThereInOrder() throws {
        try lab.addPeripheral(Peripherals.probe())
        let queue = DispatchQueue(label: "ble.callbacks")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let recorder = CentralRecorder()
        var offQueue = 0
        recorder.onDiscover = { _, _, _ in if DispatchQueue.getSpecific(key: key) != true { offQueue += 1 } }
        recorder.onConnect = { _ in if DispatchQueue.getSpecific(key: key) != true { offQueue += 1 } }
        let central = poweredCentral(recorder, queue: queue)
        let peripheral = try discover("Probe", with: central, recorder)
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .connected })
        XCTAssertEqual(offQueue, 0)
        XCTAssertEqual(recorder.events.prefix(3).map { $0 }, ["state poweredOn", "discover Probe", "connect Probe"])
    }
}

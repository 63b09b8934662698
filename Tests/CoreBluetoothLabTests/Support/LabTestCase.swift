import BLELab
import BLERuntime
import CoreBluetoothLab
import XCTest

/// Shared steps: a lab, a central app recorder on it, and getting to "connected and discovered".
class LabTestCase: XCTestCase {
    /// A fresh lab for each test (XCTest makes one instance per test method).
    var lab: CBLab! = CBLab(seed: 11)

    override func tearDown() {
        lab = nil
        super.tearDown()
    }

    /// A central manager with `recorder` as delegate, powered on.
    func poweredCentral(_ recorder: CentralRecorder, queue: DispatchQueue? = nil,
                        file: StaticString = #filePath, line: UInt = #line) -> CBCentralManager {
        let central = lab.attach { CBCentralManager(delegate: recorder, queue: queue) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { central.state == .poweredOn }, "power-on", file: file, line: line)
        return central
    }

    /// Scans until `name` is discovered and returns it.
    func discover(_ name: String, with central: CBCentralManager, _ recorder: CentralRecorder,
                  file: StaticString = #filePath, line: UInt = #line) throws -> CBPeripheral {
        central.scanForPeripherals(withServices: nil)
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.discovered.contains { $0.name == name } }, "discover \(name)", file: file, line: line)
        central.stopScan()
        return try XCTUnwrap(recorder.discovered.first { $0.name == name }, file: file, line: line)
    }

    /// Discovers, connects and discovers every service and characteristic of `name`.
    func connectAndDiscover(_ name: String, with central: CBCentralManager, _ recorder: CentralRecorder,
                            file: StaticString = #filePath, line: UInt = #line) throws -> CBPeripheral {
        let peripheral = try discover(name, with: central, recorder, file: file, line: line)
        recorder.onConnect = { $0.discoverServices(nil) }
        recorder.onServices = { p in for s in p.services ?? [] { p.discoverCharacteristics(nil, for: s) } }
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(10)) {
            guard let services = peripheral.services, !services.isEmpty else { return false }
            return services.allSatisfy { $0.characteristics != nil }
        }, "connect and discover \(name)", file: file, line: line)
        recorder.onConnect = nil
        recorder.onServices = nil
        return peripheral
    }

    func characteristic(_ uuid: String, of peripheral: CBPeripheral, file: StaticString = #filePath, line: UInt = #line) throws -> CBCharacteristic {
        let all = (peripheral.services ?? []).flatMap { $0.characteristics ?? [] }
        return try XCTUnwrap(all.first { $0.uuid == CBUUID(string: uuid) }, "characteristic \(uuid)", file: file, line: line)
    }
}

/// Tests that start connected to the probe peripheral (`Peripherals.probe()`), every service and
/// characteristic discovered, with a recording central app.
class ConnectedProbeTestCase: LabTestCase {
    var central: CBCentralManager!
    var recorder: CentralRecorder!
    var peripheral: CBPeripheral!
    var probe: SimulatedPeripheral!

    override func setUpWithError() throws {
        try super.setUpWithError()
        probe = try lab.addPeripheral(Peripherals.probe())
        recorder = CentralRecorder()
        central = poweredCentral(recorder)
        peripheral = try connectAndDiscover("Probe", with: central, recorder)
    }

    override func tearDown() {
        central = nil
        recorder = nil
        peripheral = nil
        probe = nil
        super.tearDown()
    }
}

import ATT
import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import ScenarioFormat
import XCTest

/// Attributes used where they do not belong: a characteristic kept from before a reconnection
/// (stale) or one of another peripheral (foreign). iOS ignores the call with an "API MISUSE"
/// log line; so does the lab: nothing crosses the link, no callback, a warning.
final class StaleAndForeignAttributeTests: LabTestCase {
    /// The probe, advertising again after each disconnection so that the central can reconnect.
    private func reconnectableProbe() -> PeripheralSpec {
        var spec = Peripherals.probe()
        spec.onDisconnect = [.startAdvertising]
        return spec
    }

    /// The ATT PDUs the central's host sent, after the link went quiet.
    private func sentPDUs(_ central: CBCentralManager) -> Int {
        lab.attTraffic(of: central).filter(\.wasSent).count
    }

    func testACharacteristicFromBeforeAReconnectionIsIgnoredWithAMisuseWarning() throws {
        let probe = try lab.addPeripheral(reconnectableProbe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("Probe", with: central, recorder)
        let old = try ["FFF1", "FFF2", "FFF3", "FFF4"].map { try characteristic($0, of: peripheral) }

        central.cancelPeripheralConnection(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(2)) { peripheral.state == .disconnected })
        recorder.onConnect = { $0.discoverServices(nil) }
        recorder.onServices = { p in for s in p.services ?? [] { p.discoverCharacteristics(nil, for: s) } }
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .connected && peripheral.services?.first?.characteristics != nil })
        let fresh = try characteristic("FFF4", of: peripheral)
        XCTAssertFalse(fresh === old[3], "discovery on the new connection hands out new objects")
        lab.run(for: .seconds(1))

        var console: [String] = []
        lab.onWarning = { console.append($0) }
        let sentBefore = sentPDUs(central)
        let eventsBefore = recorder.events.count
        peripheral.writeValue(Data([0xA1]), for: old[0], type: .withoutResponse)
        peripheral.writeValue(Data([0xA2]), for: old[1], type: .withResponse)
        peripheral.readValue(for: old[2])
        peripheral.setNotifyValue(true, for: old[3])
        lab.run(for: .seconds(2))

        XCTAssertEqual(sentPDUs(central), sentBefore, "nothing crossed the link")
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF1")).count, 0)
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF2")).count, 0)
        XCTAssertEqual(Array(recorder.events.dropFirst(eventsBefore)), [], "no callback, no success reported")
        XCTAssertFalse(old[3].isNotifying)
        XCTAssertEqual(console.count, 4, "\(console)")
        XCTAssertEqual(Array(lab.warnings.suffix(4)), console, "the console hook sees what `warnings` keeps")
        for (line, call) in zip(console, ["writeValue(_:for:type:)", "writeValue(_:for:type:)", "readValue(for:)", "setNotifyValue(_:for:)"]) {
            XCTAssertTrue(line.contains("API MISUSE: <CBCharacteristic"), line)
            XCTAssertTrue(line.contains("is not a valid attribute of <CBPeripheral"), line)
            XCTAssertTrue(line.hasSuffix("ignoring \(call)"), line)
        }

        // The peripheral notifies; without a subscription nothing is sent, and nothing arrives.
        probe.perform([.notify(CharacteristicRef(0xFFF4), .bytes([0x44]))])
        lab.run(for: .seconds(1))
        XCTAssertEqual(recorder.count("value FFF4"), 0)

        // The characteristic discovered on this connection works.
        peripheral.setNotifyValue(true, for: fresh)
        XCTAssertTrue(lab.run(within: .seconds(2)) { fresh.isNotifying })
        probe.perform([.notify(CharacteristicRef(0xFFF4), .bytes([0x45]))])
        XCTAssertTrue(lab.run(within: .seconds(2)) { recorder.count("value FFF4") == 1 })
        XCTAssertEqual(recorder.events.last, "value FFF4 45")
        XCTAssertEqual(console.count, 4, "no warning for the current characteristic")
    }

    /// Before rediscovery too: the reconnected peripheral has no services yet, and the old ones
    /// are not brought back.
    func testACharacteristicFromBeforeAReconnectionIsIgnoredBeforeRediscovery() throws {
        try lab.addPeripheral(reconnectableProbe())
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("Probe", with: central, recorder)
        let fff3 = try characteristic("FFF3", of: peripheral)
        let service = try XCTUnwrap(peripheral.services?.first)
        central.cancelPeripheralConnection(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(2)) { peripheral.state == .disconnected })
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheral.state == .connected })
        lab.run(for: .seconds(1))
        XCTAssertNil(peripheral.services)

        let sentBefore = sentPDUs(central)
        let eventsBefore = recorder.events.count
        peripheral.readValue(for: fff3)
        peripheral.discoverCharacteristics(nil, for: service)
        peripheral.discoverDescriptors(for: fff3)
        lab.run(for: .seconds(2))
        XCTAssertEqual(sentPDUs(central), sentBefore, "nothing crossed the link")
        XCTAssertEqual(Array(recorder.events.dropFirst(eventsBefore)), [])
        let misuse = lab.warnings.suffix(3)
        XCTAssertTrue(misuse.allSatisfy { $0.contains("API MISUSE") && $0.contains("is not a valid attribute") }, "\(misuse)")
        XCTAssertTrue(misuse.first?.contains("<CBCharacteristic") ?? false)
        XCTAssertTrue(misuse.dropFirst().first?.contains("<CBService") ?? false)
    }

    /// The lab used to send the request to whichever peripheral it was called on, by the handle.
    func testACharacteristicOfAnotherPeripheralIsIgnoredWithAMisuseWarning() throws {
        let probeA = try lab.addPeripheral(Peripherals.probe())
        let probeB = try lab.addPeripheral(Peripherals.probe(id: "probe-b", name: "Probe B"))
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let a = try connectAndDiscover("Probe", with: central, recorder)
        let b = try connectAndDiscover("Probe B", with: central, recorder)
        let aFFF2 = try characteristic("FFF2", of: a)
        let aFFF3 = try characteristic("FFF3", of: a)
        let aFFF4 = try characteristic("FFF4", of: a)
        let descriptor = try XCTUnwrap(a.services?.first?.characteristics?.first { $0.uuid == CBUUID(string: "FFF6") })
        a.discoverDescriptors(for: descriptor)
        XCTAssertTrue(lab.run(within: .seconds(2)) { descriptor.descriptors?.isEmpty == false })
        let userDescription = try XCTUnwrap(descriptor.descriptors?.first { $0.uuid == CBUUID(string: "2901") })
        lab.run(for: .seconds(1))

        let sentBefore = sentPDUs(central)
        let eventsBefore = recorder.events.count
        b.writeValue(Data([0x0B]), for: aFFF2, type: .withResponse)
        b.readValue(for: aFFF3)
        b.setNotifyValue(true, for: aFFF4)
        b.readValue(for: userDescription)
        lab.run(for: .seconds(2))

        XCTAssertEqual(sentPDUs(central), sentBefore, "nothing crossed either link")
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF2")).count, 0)
        XCTAssertEqual(probeB.value(of: CharacteristicRef(0xFFF2)), [0x02], "B's value untouched")
        XCTAssertEqual(probeA.value(of: CharacteristicRef(0xFFF2)), [0x02], "A's value untouched")
        XCTAssertEqual(Array(recorder.events.dropFirst(eventsBefore)), [], "no callback")
        let misuse = Array(lab.warnings.suffix(4))
        for line in misuse {
            XCTAssertTrue(line.contains("API MISUSE"), line)
            XCTAssertTrue(line.contains("belongs to \(a), not to \(b)"), line)
        }
        XCTAssertTrue(misuse.last?.contains("<CBDescriptor") ?? false, "\(misuse)")

        // On its own peripheral it works.
        a.readValue(for: aFFF3)
        XCTAssertTrue(lab.run(within: .seconds(2)) { recorder.count("value FFF3") == 1 })
        XCTAssertEqual(recorder.events.last, "value FFF3 03")
    }
}

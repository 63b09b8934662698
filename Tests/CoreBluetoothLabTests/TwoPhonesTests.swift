import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import ScenarioFormat
import XCTest

/// Two `CBCentralManager`s in one lab are two phones: each has its own controller, host,
/// connections and peripheral objects.
final class TwoPhonesTests: LabTestCase {
    /// A peripheral that advertises again once connected, so that it takes a second link.
    private func twoLinkProbe() -> PeripheralSpec {
        var spec = Peripherals.probe()
        spec.onConnect = [.startAdvertising]
        return spec
    }

    func testEachCentralManagerIsItsOwnPhone() throws {
        try lab.addPeripheral(Peripherals.probe())
        let a = CentralRecorder(), b = CentralRecorder()
        let phoneA = poweredCentral(a), phoneB = poweredCentral(b)
        let deviceA = try XCTUnwrap(lab.device(of: phoneA)), deviceB = try XCTUnwrap(lab.device(of: phoneB))
        XCTAssertFalse(deviceA === deviceB)
        XCTAssertNotEqual(deviceA.host.address, deviceB.host.address, "two controllers, two public addresses")
        _ = try connectAndDiscover("Probe", with: phoneA, a)
        XCTAssertEqual(deviceA.host.connections.count, 1)
        XCTAssertEqual(deviceB.host.connections.count, 0, "phone B's controller has no link")
    }

    func testTheSecondPhoneNeitherSeesNorUsesTheFirstPhonesConnection() throws {
        try lab.addPeripheral(Peripherals.probe())
        let a = CentralRecorder(), b = CentralRecorder()
        let phoneA = poweredCentral(a), phoneB = poweredCentral(b)
        let onA = try connectAndDiscover("Probe", with: phoneA, a)
        let bEventsBefore = b.events

        // Phone B does not see A's connection…
        XCTAssertEqual(phoneB.retrieveConnectedPeripherals(withServices: [CBUUID(string: "FFF0")]), [])
        XCTAssertEqual(phoneA.retrieveConnectedPeripherals(withServices: [CBUUID(string: "FFF0")]).map(\.identifier), [onA.identifier])
        // …retrieving the device gives B its own object, disconnected, without A's services.
        let onB = try XCTUnwrap(phoneB.retrievePeripherals(withIdentifiers: [onA.identifier]).first)
        XCTAssertFalse(onA === onB)
        XCTAssertEqual(onB.state, .disconnected)
        XCTAssertNil(onB.services)

        // …and cannot use A's peripheral object: connect and cancel are refused with a warning.
        let warnings = lab.warnings.count
        phoneB.connect(onA)
        phoneB.cancelPeripheralConnection(onA)
        lab.run(for: .seconds(2))
        XCTAssertEqual(onA.state, .connected, "B's cancel did not end A's link")
        XCTAssertEqual(lab.warnings.count, warnings + 2, "\(lab.warnings)")
        XCTAssertTrue(lab.warnings.dropFirst(warnings).allSatisfy { $0.contains("API MISUSE") && $0.contains("another central manager") },
                      "\(lab.warnings)")
        XCTAssertEqual(lab.device(of: phoneB)?.host.connections.count, 0)
        XCTAssertEqual(b.events, bEventsBefore, "no callback to B about A's link")
    }

    func testBothPhonesConnectToAPeripheralThatTakesTwoLinks() throws {
        let probe = try lab.addPeripheral(twoLinkProbe())
        let a = CentralRecorder(), b = CentralRecorder()
        let phoneA = poweredCentral(a), phoneB = poweredCentral(b)
        let onA = try connectAndDiscover("Probe", with: phoneA, a)
        let onB = try connectAndDiscover("Probe", with: phoneB, b)
        XCTAssertFalse(onA === onB)
        XCTAssertEqual(onA.state, .connected)
        XCTAssertEqual(onB.state, .connected)
        XCTAssertEqual(probe.host.connections.count, 2, "the peripheral holds two links")

        // B reads over its own link: the Read Request is in B's ATT traffic, not in A's.
        let aTraffic = lab.attTraffic(of: phoneA).count
        let fff3 = try characteristic("FFF3", of: onB)
        onB.readValue(for: fff3)
        XCTAssertTrue(lab.run(within: .seconds(2)) { b.count("value FFF3") == 1 })
        XCTAssertEqual(b.events.last, "value FFF3 03")
        XCTAssertTrue(lab.attTraffic(of: phoneB).contains { $0.pdu.map { if case .readRequest = $0 { return true } else { return false } } ?? false })
        XCTAssertEqual(lab.attTraffic(of: phoneA).count, aTraffic, "nothing crossed A's link")
        XCTAssertEqual(a.count("value"), 0)

        // A characteristic of A's object is foreign to B's.
        let aFFF3 = try characteristic("FFF3", of: onA)
        onB.readValue(for: aFFF3)
        lab.run(for: .seconds(1))
        XCTAssertEqual(b.count("value FFF3"), 1)
        XCTAssertTrue(lab.warnings.last?.contains("belongs to") ?? false, "\(lab.warnings)")

        // A hanging up leaves B's link up.
        phoneA.cancelPeripheralConnection(onA)
        XCTAssertTrue(lab.run(within: .seconds(2)) { onA.state == .disconnected })
        lab.run(for: .seconds(6))
        XCTAssertEqual(onB.state, .connected)
        XCTAssertEqual(b.count("disconnect"), 0)
    }

    func testTheSecondPhoneFindsAOneLinkPeripheralNotAdvertising() throws {
        try lab.addPeripheral(Peripherals.probe())
        let a = CentralRecorder(), b = CentralRecorder()
        let phoneA = poweredCentral(a), phoneB = poweredCentral(b)
        let onA = try connectAndDiscover("Probe", with: phoneA, a)
        phoneB.scanForPeripherals(withServices: nil)
        lab.run(for: .seconds(5))
        XCTAssertEqual(b.count("discover"), 0, "a connected legacy advertiser is silent")
        let onB = try XCTUnwrap(phoneB.retrievePeripherals(withIdentifiers: [onA.identifier]).first)
        phoneB.connect(onB)
        lab.run(for: .seconds(5))
        XCTAssertEqual(onB.state, .connecting, "the connect stays pending, as on iOS")
        XCTAssertEqual(b.count("connect"), 0)
        // Once A lets go, the peripheral is not advertising again by itself (its spec does not
        // restart it), so B still waits; restart it and B connects.
        phoneA.cancelPeripheralConnection(onA)
        XCTAssertTrue(lab.run(within: .seconds(2)) { onA.state == .disconnected })
        lab.peripheral("probe")?.perform([.startAdvertising])
        XCTAssertTrue(lab.run(within: .seconds(5)) { onB.state == .connected })
        XCTAssertEqual(b.events.last, "connect Probe", "B's scan, still on, heard it advertise again")
        XCTAssertGreaterThan(b.count("discover"), 0)
    }
}

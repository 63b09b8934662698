import BLELab
import BLERuntime
import BLEWire
import GAP
import HCI
import XCTest

/// The host's side of the radio features: answering LE Remote Connection Parameter Request
/// (Core 5.4 Vol 4 Part E 7.7.65.6, 7.8.31, 7.8.32), the scan's RSSI floor, the scan and
/// initiator duty cycles on the wire (7.8.10, 7.8.12), and Read RSSI (7.5.4).
final class HostRadioTests: XCTestCase {
    private func connectedPair(seed: UInt64 = 5) throws -> (Lab, LabDevice, LabDevice, central: Connection, peripheral: Connection) {
        let lab = Lab(seed: seed)
        let peripheral = try lab.addDevice("peripheral")
        let central = try lab.addDevice("central")
        try lab.powerOn()
        try lab.wait { done in
            peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P", services: [0x180D])), completion: done)
        }.get()
        var incoming: Connection?
        peripheral.host.onConnection = { incoming = $0 }
        let c = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(1)) { incoming != nil })
        return (lab, peripheral, central, c, try XCTUnwrap(incoming))
    }

    private func commands(_ device: LabDevice) -> [HCICommand] {
        device.log.packets.compactMap { p in
            guard p.direction == .hostToController, case let .command(c)? = try? HCIPacket(h4: p.frame) else { return nil }
            return c
        }
    }

    /// A peripheral asks over the link layer; the central's host answers the controller's event
    /// with a Reply carrying what was asked, and both ends apply it.
    func testTheCentralHostAnswersALinkLayerRequestWithAReply() throws {
        let (lab, _, central, c, p) = try connectedPair()
        var requests: [ConnectionParameterRequest] = []
        central.host.onConnectionParameterRequest = { requests.append($0) }
        let asked = ConnectionParameters(intervalMin: 40, intervalMax: 48, latency: 1, supervisionTimeout: 300)
        try lab.wait(within: .seconds(3)) { done in p.updateParameters(asked, via: .linkLayer, completion: done) }.get()
        XCTAssertEqual(commands(central).last, .leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters(
            handle: c.handle, intervalMin: 40, intervalMax: 48, maxLatency: 1, supervisionTimeout: 300)))
        XCTAssertEqual(requests.map(\.accepted), [true])
        XCTAssertEqual(requests.first?.procedure, .linkLayer)
        XCTAssertTrue(lab.run(within: .seconds(1)) { c.interval == 40 })
        XCTAssertEqual([p.interval, p.latency, p.supervisionTimeout], [40, 1, 300])
        XCTAssertEqual([c.latency, c.supervisionTimeout], [1, 300])
    }

    /// The host's policy decides: a rejection goes back as a Negative Reply with Unacceptable
    /// Connection Parameters (0x3B), which the peripheral's host sees as its update failing.
    /// The same policy answers the L2CAP request.
    func testTheCentralHostsPolicyRejectsOverTheLinkLayerAndOverL2CAP() throws {
        let (lab, peripheral, central, c, p) = try connectedPair()
        var asked: [ConnectionParameters] = []
        central.host.acceptsConnectionParameters = { connection, params in
            XCTAssertTrue(connection === c)
            asked.append(params)
            return false
        }
        let wanted = ConnectionParameters(intervalMin: 80, intervalMax: 80, latency: 0, supervisionTimeout: 400)
        let result = try lab.wait(within: .seconds(3)) { done in p.updateParameters(wanted, via: .linkLayer, completion: done) }
        XCTAssertEqual(result.failureValue, .command(.leConnectionUpdate, .unacceptableConnectionParameters))
        XCTAssertEqual(commands(central).last, .leRemoteConnectionParameterRequestNegativeReply(handle: c.handle,
                                                                                               reason: .unacceptableConnectionParameters))
        let overL2CAP = try lab.wait(within: .seconds(3)) { done in p.updateParameters(wanted, via: .l2cap, completion: done) }
        guard case .invalidState? = overL2CAP.failureValue else { return XCTFail("expected a rejection, got \(overL2CAP)") }
        XCTAssertEqual(asked, [wanted, wanted])
        lab.run(for: .seconds(1))
        XCTAssertEqual(c.interval, 24)
        XCTAssertEqual(p.interval, 24)
        // The peripheral's controller saw the rejection as LE Connection Update Complete 0x3B.
        let failures = peripheral.log.packets.compactMap { packet -> HCIStatus? in
            guard case let .event(.leMeta(.connectionUpdateComplete(e)))? = try? HCIPacket(h4: packet.frame) else { return nil }
            return e.status
        }
        XCTAssertEqual(failures, [.unacceptableConnectionParameters])
    }

    /// Parameters outside LE Connection Update's ranges never reach the central: the peripheral's
    /// own controller refuses them (7.8.18).
    func testInvalidParametersAreRefusedByThePeripheralsOwnController() throws {
        let (lab, _, central, c, p) = try connectedPair()
        // Supervision timeout 100 ms is not more than (1 + 0) × 100 ms × 2.
        let invalid = ConnectionParameters(intervalMin: 80, intervalMax: 80, latency: 0, supervisionTimeout: 10)
        let result = try lab.wait(within: .seconds(3)) { done in p.updateParameters(invalid, via: .linkLayer, completion: done) }
        XCTAssertEqual(result.failureValue, .command(.leConnectionUpdate, .invalidCommandParameters),
                       "the peripheral's own controller refuses invalid parameters before asking")
        XCTAssertFalse(commands(central).contains { if case .leRemoteConnectionParameterRequestNegativeReply = $0 { return true }; return false })
        XCTAssertEqual(c.interval, 24)
    }

    /// `minimumRSSI` drops weaker reports; a device reported weak may be reported again stronger.
    func testScanMinimumRSSIDropsWeakerReports() throws {
        let lab = Lab(seed: 8)
        let strong = try lab.addDevice("strong")
        let weak = try lab.addDevice("weak")
        let central = try lab.addDevice("central")
        strong.rssi = -55
        weak.rssi = -80
        try lab.powerOn()
        for device in [strong, weak] {
            try lab.wait { done in device.host.startAdvertising(AdvertisingConfiguration(data: .make(name: device.name)), completion: done) }.get()
        }
        var found: [LEAddress: Int8] = [:]
        try lab.wait { done in
            central.host.startScanning(ScanConfiguration(minimumRSSI: -70), onReport: { found[$0.address] = $0.rssi }, completion: done)
        }.get()
        lab.run(for: .milliseconds(500))
        XCTAssertEqual(found, [strong.address: -55])
        weak.rssi = -65
        lab.run(for: .milliseconds(500))
        XCTAssertEqual(found, [strong.address: -55, weak.address: -65])
    }

    /// The scan's and the initiator's duty cycles go to the controller as given, in 0.625 ms units.
    func testScanAndInitiatorTimingGoOnTheWire() throws {
        let lab = Lab(seed: 9)
        let peripheral = try lab.addDevice("peripheral")
        let central = try lab.addDevice("central")
        try lab.powerOn()
        try lab.wait { done in peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P")), completion: done) }.get()
        try lab.wait { done in
            central.host.startScanning(ScanConfiguration(interval: .milliseconds(100), window: .milliseconds(30)), onReport: { _ in }, completion: done)
        }.get()
        XCTAssertTrue(commands(central).contains(.leSetScanParameters(LEScanParameters(active: true, interval: 160, window: 48))))
        try lab.wait { done in central.host.stopScanning(completion: done) }.get()
        _ = try lab.wait(within: .seconds(5)) { done in
            central.host.connect(to: peripheral.address, scanInterval: .milliseconds(250), scanWindow: .milliseconds(25), completion: done)
        }.get()
        guard case let .leCreateConnection(p)? = commands(central).last(where: { $0.opcode == .leCreateConnection }) else {
            return XCTFail("no LE Create Connection")
        }
        XCTAssertEqual([p.scanInterval, p.scanWindow], [400, 40])
    }
}

import BLELab
import BLERuntime
import BLEWire
import Controller
import GAP
import Transport
import XCTest

/// A controller may report a scan response well after the advertisement it answers: HCI puts no
/// bound on it, and a controller may queue reports and send other devices' first (Core 5.4
/// Vol 4 Part E 7.7.65.2). RootCanal 1.10.0 reports one a tick (5 ms) or more after the
/// advertising report, 16.5 ms at most in 1128 seen on a loaded machine (docs/tiers.md). The
/// host must still merge it with that device's advertisement instead of dropping it.
final class LateScanResponseTests: XCTestCase {
    /// Simulated controllers behind in-process transports, as in ConnectedControllerLabTests,
    /// except that the central's controller hands its scan response reports (LE Advertising
    /// Report, event type 0x04 SCAN_RSP) to the host `scanResponseDelay` late.
    final class LateScanResponseConnector: ControllerConnector {
        let air: SimAir
        let scanResponseDelay: TimeSpan
        let central: String
        private(set) var delayedScanResponses = 0
        init(air: SimAir, central: String, scanResponseDelay: TimeSpan) {
            self.air = air
            self.central = central
            self.scanResponseDelay = scanResponseDelay
        }
        var description: String { "simulated controllers, scan responses \(scanResponseDelay) late to \(central)" }

        func openController(for name: String, index: Int, on loop: DrivableEventLoop) throws -> HCITransport {
            let controller = SimController(air: air, address: BDAddr(rawValue: 0xB0_0000_0000 + UInt64(index) + 1), name: name)
            let transport = InProcessTransport(loop: loop, endpoint: "sim \(index)",
                                               deliverToController: { [unowned controller] in controller.receive(fromHost: $0) })
            let delay = name == central ? scanResponseDelay : .zero
            controller.toHost = { [unowned transport, unowned self] frame in
                // 04 3E len 02 (LE Advertising Report) num_reports event_type …
                if delay > .zero, frame.count > 5, frame[0] == 0x04, frame[1] == 0x3E, frame[3] == 0x02, frame[5] == 0x04 {
                    self.delayedScanResponses += 1
                    loop.schedule(after: delay) { transport.deliverToHost(frame) }
                } else {
                    transport.deliverToHost(frame)
                }
            }
            return transport
        }

        func closeAll() {}
    }

    /// A peripheral that lists 181A only in its scan response, another that lists nothing.
    private func lab(scanResponseDelay: TimeSpan) throws -> (Lab, LateScanResponseConnector, LabDevice, LabDevice, LabDevice) {
        let loop = VirtualEventLoop()
        let connector = LateScanResponseConnector(air: SimAir(loop: loop, seed: 3), central: "central", scanResponseDelay: scanResponseDelay)
        let lab = Lab(seed: 3, loop: loop, connector: connector)
        let inResponse = try lab.addDevice("in-response")
        let plain = try lab.addDevice("plain")
        let central = try lab.addDevice("central")
        try lab.powerOn()
        try lab.wait { done in
            inResponse.host.startAdvertising(AdvertisingConfiguration(data: AdvertisingData.make(name: "Sensor-B"),
                                                                      scanResponse: AdvertisingData.make(flags: nil, services: [0x181A])),
                                             completion: done)
        }.get()
        try lab.wait { done in
            plain.host.startAdvertising(AdvertisingConfiguration(data: AdvertisingData.make(name: "Sensor-C")), completion: done)
        }.get()
        return (lab, connector, inResponse, plain, central)
    }

    private func scan(_ lab: Lab, _ central: LabDevice, _ configuration: ScanConfiguration, for span: TimeSpan) throws -> [ScanReport] {
        var reports: [ScanReport] = []
        try lab.wait { done in central.host.startScanning(configuration, onReport: { reports.append($0) }, completion: done) }.get()
        lab.run(for: span)
        try lab.wait { done in central.host.stopScanning(completion: done) }.get()
        return reports
    }

    func testAServiceOnlyInALateScanResponseStillPassesTheFilter() throws {
        let (lab, connector, inResponse, plain, central) = try lab(scanResponseDelay: .milliseconds(15))
        let reports = try scan(lab, central, ScanConfiguration(services: [0x181A]), for: .seconds(1))
        XCTAssertGreaterThan(connector.delayedScanResponses, 0, "the controller reported scan responses, late")
        XCTAssertEqual(reports.map(\.address), [inResponse.address], "the device is found once, and only it")
        XCTAssertEqual(reports.first?.scanResponse?.serviceUUIDs, [BluetoothUUID(uuid16: 0x181A)])
        XCTAssertEqual(reports.first?.localName, "Sensor-B", "merged with its advertisement")
        XCTAssertFalse(reports.contains { $0.address == plain.address })
    }

    /// Without a filter a device is reported at once from its advertisement; a scan response
    /// with data that comes after completes it in a second report (a name that is only there,
    /// say). An empty one adds nothing and makes no report.
    func testALateScanResponseCompletesADeviceAlreadyReported() throws {
        let (lab, _, inResponse, plain, central) = try lab(scanResponseDelay: .milliseconds(15))
        let reports = try scan(lab, central, ScanConfiguration(), for: .seconds(1))
        let ofInResponse = reports.filter { $0.address == inResponse.address }
        XCTAssertEqual(ofInResponse.map { $0.scanResponse?.serviceUUIDs }, [nil, [BluetoothUUID(uuid16: 0x181A)]],
                       "first the advertisement alone, then once more with its scan response; never again")
        XCTAssertEqual(ofInResponse.last?.localName, "Sensor-B")
        XCTAssertEqual(reports.filter { $0.address == plain.address }.count, 1, "its late scan response is empty")
    }

    /// A scan response from a device this scan never heard advertise (an earlier scan's, late)
    /// makes no report.
    func testAScanResponseToAnAdvertisementOfAnEarlierScanIsDropped() throws {
        let (lab, _, inResponse, _, central) = try lab(scanResponseDelay: .milliseconds(15))
        var reports: [ScanReport] = []
        try lab.wait { done in central.host.startScanning(ScanConfiguration(services: [0x181A]), onReport: { reports.append($0) }, completion: done) }.get()
        // Until the central has heard in-response's first advertisement (LE Advertising Report,
        // ADV_IND, from its address), and not yet its scan response.
        let advertisement: [UInt8] = [0x02, 0x01, 0x00, 0x00] + inResponse.address.address.littleEndianBytes
        let heard = lab.run(within: .milliseconds(200)) {
            central.log.packets.contains { $0.frame.count > 12 && Array($0.frame[3...12]) == advertisement }
        }
        XCTAssertTrue(heard)
        try lab.wait { done in central.host.stopScanning(completion: done) }.get()
        try lab.wait { done in
            central.host.startScanning(ScanConfiguration(services: [0x181A]), onReport: { reports.append($0) }, completion: done)
        }.get()
        // The first scan's scan response arrives in the second scan, before any advertisement.
        lab.run(for: .milliseconds(20))
        XCTAssertEqual(reports.count, 0)
        try lab.wait { done in central.host.stopScanning(completion: done) }.get()
    }
}

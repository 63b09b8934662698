import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// One sensitivity threshold (`AirModel.receiverSensitivity`, -100 dBm) for everything on the air:
/// advertising reception, scan responses, connection establishment and established links, with
/// the RSSI noise included.
final class RadioModelTests: XCTestCase {
    /// A device at -120 dBm, far below the sensitivity, is neither reported nor connected.
    func testADeviceBelowTheSensitivityIsNeitherFoundNorConnected() {
        let lab = TestLab()
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let initiator = lab.device("initiator", "C0:00:00:00:00:02")
        let far = lab.device("far", "C0:00:00:00:00:03")
        let near = lab.device("near", "C0:00:00:00:00:04")
        for host in [scanner, initiator, far, near] { host.bringUp() }
        lab.air.setRSSI(-120, for: far.controller)
        lab.air.setRSSI(-100, for: near.controller)   // exactly at the sensitivity: heard
        scanner.scan(active: true)
        far.advertise(scanResponse: [0x02, 0x0A, 0x00])
        near.advertise(scanResponse: [0x02, 0x0A, 0x00])
        initiator.connect(to: far.publicAddress)
        lab.run(for: .milliseconds(2_000))
        XCTAssertFalse(scanner.reports.contains { $0.report.sender == far.publicAddress })
        XCTAssertTrue(initiator.connectionCompletes.isEmpty)
        XCTAssertTrue(far.controller.isAdvertising)
        let nearReports = scanner.reports.filter { $0.report.sender == near.publicAddress }
        XCTAssertGreaterThan(nearReports.count, 20)
        XCTAssertTrue(nearReports.contains { $0.report.eventType == .scanRsp })
        XCTAssertTrue(nearReports.allSatisfy { $0.report.rssi == -100 })

        // The same initiator connects to the device once it comes closer.
        lab.air.setRSSI(-70, for: far.controller)
        lab.run(for: .milliseconds(1_000))
        XCTAssertEqual(initiator.connectionCompletes.map(\.event.status), [.success])
    }

    /// A scanner too weak for the advertiser to hear its SCAN_REQ gets advertising reports but no
    /// scan responses.
    func testAScanRequestBelowTheSensitivityGetsNoScanResponse() {
        let lab = TestLab()
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let adv = lab.device("adv", "C0:00:00:00:00:02")
        scanner.bringUp()
        adv.bringUp()
        lab.air.setRSSI(-110, for: scanner.controller)
        scanner.scan(active: true)
        adv.advertise(scanResponse: [0x02, 0x0A, 0x00])
        lab.run(for: .milliseconds(1_000))
        XCTAssertGreaterThan(scanner.reports.count, 5)
        XCTAssertFalse(scanner.reports.contains { $0.report.eventType == .scanRsp })
    }

    /// With ±2 dB of noise, a device at -101 dBm is heard only in the events whose reading reaches
    /// -100: no report ever shows less, and some events are missed. At -103 none is heard.
    func testNoisyReadingsBelowTheSensitivityAreNotReceived() {
        var model = AirModel()
        model.rssiNoise = 2
        let lab = TestLab(seed: 4, model: model)
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let edge = lab.device("edge", "C0:00:00:00:00:02")
        let beyond = lab.device("beyond", "C0:00:00:00:00:03")
        for host in [scanner, edge, beyond] { host.bringUp() }
        lab.air.setRSSI(-101, for: edge.controller)
        lab.air.setRSSI(-103, for: beyond.controller)
        scanner.scan()
        edge.advertise(type: .nonConnectableUndirected, intervalUnits: 0x0020)   // 20 ms
        beyond.advertise(type: .nonConnectableUndirected, intervalUnits: 0x0020)
        lab.run(for: .milliseconds(4_000))
        let heard = scanner.reports.filter { $0.report.sender == edge.publicAddress }.map(\.report.rssi)
        XCTAssertEqual(Set(heard), [-100, -99])
        XCTAssertGreaterThan(heard.count, 30)
        XCTAssertLessThan(heard.count, 100, "about 2 events in 5 reach the sensitivity")
        XCTAssertFalse(scanner.reports.contains { $0.report.sender == beyond.publicAddress })
    }

    /// A connected device whose RSSI drops below the sensitivity is no longer heard: both ends
    /// time out (0x08) at (last event heard) + supervision timeout. Back above it within the
    /// timeout, the connection carries on.
    func testALinkWhoseRSSIFallsBelowTheSensitivityTimesOut() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)   // 30 ms, 1 s
        lab.run(until: pair.anchor(2) + .milliseconds(5))
        lab.air.setRSSI(-104, for: pair.peripheral.controller)
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        lab.run(for: .milliseconds(500))
        XCTAssertTrue(pair.peripheral.acl.isEmpty)
        let back = lab.loop.now
        lab.air.setRSSI(-80, for: pair.peripheral.controller)
        lab.run(for: .milliseconds(200))
        XCTAssertEqual(pair.peripheral.acl.map(\.time), [pair.nextAnchor(atOrAfter: back)])
        XCTAssertTrue(pair.central.disconnections.isEmpty)

        lab.run(until: pair.anchor(40) + .milliseconds(3))
        lab.air.setRSSI(-120, for: pair.central.controller)
        lab.run(for: .milliseconds(2_000))
        for host in [pair.central, pair.peripheral] {
            XCTAssertEqual(host.disconnections.map(\.event.reason), [.connectionTimeout])
            XCTAssertEqual(host.disconnections.map(\.time), [pair.anchor(40) + .milliseconds(1_000)])
        }
    }

    /// Read RSSI reports what the controller received: with noise, never below the sensitivity.
    func testReadRSSIOnAMarginalLinkNeverReportsBelowTheSensitivity() {
        var model = AirModel()
        model.rssiNoise = 3
        let lab = TestLab(seed: 2, model: model)
        let pair = lab.connectedPair()
        lab.air.setRSSI(-101, for: pair.peripheral.controller)
        var readings: [Int8] = []
        pair.central.onFrame = { _, frame in
            if let r = try? ReadRSSIReturn(decoding: Array(frame.dropFirst(6))) { readings.append(r.rssi) }
        }
        for _ in 0..<50 {
            pair.central.send(.readRSSI(handle: pair.centralHandle))
            lab.settle()
        }
        XCTAssertEqual(readings.count, 50)
        XCTAssertTrue(readings.allSatisfy { (-100)...(-98) ~= $0 })
        XCTAssertTrue(readings.contains(-100))
        XCTAssertTrue(readings.contains(-98))
    }

    /// A marginal peripheral loses some of its data PDUs, which the link layer resends: everything
    /// still arrives, in order, later.
    func testAMarginalSignalDelaysButNeverLosesData() {
        var model = AirModel()
        model.rssiNoise = 2
        let lab = TestLab(seed: 6, model: model)
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x00C8)
        lab.air.setRSSI(-100, for: pair.peripheral.controller)   // readings -102…-98: 3 in 5 heard
        for i in 0..<20 {
            pair.peripheral.sendACL(handle: pair.peripheralHandle, [UInt8(i)])
            lab.run(for: .milliseconds(30))
        }
        lab.run(for: .milliseconds(3_000))
        XCTAssertEqual(pair.central.acl.map(\.data.data), (0..<20).map { [UInt8($0)] })
        XCTAssertGreaterThan(lab.air.faultRecord.lostTransmissions, 0)
        XCTAssertTrue(pair.central.disconnections.isEmpty)
    }
}

import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

final class DeterminismTests: XCTestCase {
    /// A whole session — three devices advertising, scanning with noisy RSSI, connecting,
    /// exchanging data, updating and disconnecting — as (device, time, bytes) for every frame
    /// every host received.
    private func session(seed: UInt64) -> [String] {
        var model = AirModel()
        model.rssiNoise = 4
        let lab = TestLab(seed: seed, model: model)
        let central = lab.device("central", "C0:00:00:00:00:0C")
        let hrm = lab.device("hrm", "C0:00:00:00:00:01")
        let tag = lab.device("tag", "C0:00:00:00:00:02")
        var log: [String] = []
        for host in [central, hrm, tag] {
            let name = host.controller.name
            host.onFrame = { t, frame in log.append("\(name) \(t.nanoseconds) \(frame.spacedHex)") }
            host.bringUp()
        }
        hrm.advertise(intervalUnits: 0x0050, data: [0x02, 0x01, 0x06], scanResponse: [0x03, 0x03, 0x0D, 0x18])
        tag.advertise(type: .nonConnectableUndirected, intervalUnits: 0x00A0)
        central.scan(active: true)
        lab.run(for: .milliseconds(1_000))
        central.send(.leSetScanEnable(enable: false, filterDuplicates: false))
        central.connect(to: hrm.publicAddress)
        lab.run(for: .milliseconds(500))
        for i in 0..<12 {
            hrm.sendACL(handle: 1, [0x05, 0x00, 0x04, 0x00, 0x1B, 0x25, 0x00, UInt8(60 + i)])
            if i % 3 == 0 { central.sendACL(handle: 1, [0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00]) }
            lab.run(for: .milliseconds(45))
        }
        hrm.send(.leConnectionUpdate(LEConnectionUpdateParameters(handle: 1, intervalMin: 0x0010, intervalMax: 0x0020,
                                                                    maxLatency: 0, supervisionTimeout: 0x0064)))
        lab.run(for: .milliseconds(500))
        central.send(.readRSSI(handle: 1))
        central.send(.disconnect(handle: 1, reason: .remoteUserTerminatedConnection))
        lab.run(for: .milliseconds(500))
        return log
    }

    func testSameSeedGivesIdenticalBytes() {
        let first = session(seed: 42)
        let second = session(seed: 42)
        XCTAssertGreaterThan(first.count, 100)
        XCTAssertEqual(first, second)
        // The session really did all of it.
        XCTAssertTrue(first.contains { $0.hasPrefix("central") && $0.hasSuffix("04 05 04 00 01 00 16") })
        XCTAssertTrue(first.contains { $0.hasPrefix("hrm") && $0.hasSuffix("04 05 04 00 01 00 13") })
        XCTAssertTrue(first.contains { $0.hasPrefix("central") && $0.contains(" 02 01 20 08 00 05 00 04 00 1b 25 00") })
    }

    func testDifferentSeedsGiveDifferentAdvertisingTiming() {
        func reportTimes(seed: UInt64) -> [Instant] {
            let lab = TestLab(seed: seed)
            let scanner = lab.device("scanner", "C0:00:00:00:00:01")
            let adv = lab.device("adv", "C0:00:00:00:00:02")
            scanner.bringUp()
            adv.bringUp()
            scanner.scan()
            adv.advertise()
            lab.run(for: .milliseconds(2_000))
            return scanner.reports.map(\.time)
        }
        XCTAssertEqual(reportTimes(seed: 1), reportTimes(seed: 1))
        XCTAssertNotEqual(reportTimes(seed: 1), reportTimes(seed: 2))
    }

    /// Adding a device does not change another device's advertising timing: each draws from its own stream.
    func testDevicesDrawFromTheirOwnStreams() {
        func reportTimes(withBystander: Bool) -> [Instant] {
            let lab = TestLab(seed: 77)
            let scanner = lab.device("scanner", "C0:00:00:00:00:01")
            let adv = lab.device("adv", "C0:00:00:00:00:02")
            scanner.bringUp()
            adv.bringUp()
            if withBystander {
                let other = lab.device("other", "C0:00:00:00:00:03")
                other.bringUp()
                other.advertise(intervalUnits: 0x0020)
            }
            scanner.scan()
            adv.advertise()
            lab.run(for: .milliseconds(2_000))
            return scanner.reports.filter { $0.report.sender == adv.publicAddress }.map(\.time)
        }
        XCTAssertEqual(reportTimes(withBystander: false), reportTimes(withBystander: true))
    }
}

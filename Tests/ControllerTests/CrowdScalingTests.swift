import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// A crowded air costs work linear in its devices: an advertising event visits the devices that
/// scan or initiate, never every device on the air. Counted, not timed.
final class CrowdScalingTests: XCTestCase {
    let advData: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0F, 0x18]   // flags, 16-bit UUIDs: 180F

    private func hex2(_ v: Int) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return s.count < 2 ? "0" + s : s
    }

    /// One scanner among `advertisers` advertisers for 1 s: (receivers examined, advertising events, reports).
    private func crowd(_ advertisers: Int) -> (examined: Int, events: Int, reports: Int) {
        let lab = TestLab(seed: 5)
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        scanner.bringUp()
        var crowd: [TestHost] = []
        for k in 0..<advertisers {
            let device = lab.device("adv\(k)", "C1:00:00:00:\(hex2(k / 256)):\(hex2(k % 256))")
            device.bringUp()
            device.advertise(intervalUnits: 0x00A0, data: advData)
            crowd.append(device)
        }
        scanner.scan()
        let before = (lab.air.receiversExamined, lab.air.advertisingEvents)
        lab.run(for: .seconds(1))
        return (lab.air.receiversExamined - before.0, lab.air.advertisingEvents - before.1, scanner.reports.count)
    }

    func testAnAdvertisingEventVisitsOnlyTheScanner() {
        for n in [5, 60] {
            let (examined, events, reports) = crowd(n)
            // About ten events per advertiser in a second at 100 ms + advDelay.
            XCTAssertGreaterThanOrEqual(events, 9 * n, "\(n) advertisers")
            // Connectable events also look at the initiators: there are none.
            XCTAssertEqual(examined, events, "\(n) advertisers: one receiver examined per event, whatever the crowd")
            XCTAssertGreaterThan(reports, 0)
        }
    }

    func testScannersJoinAndLeaveTheAirsList() {
        let lab = TestLab(seed: 5)
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let advertiser = lab.device("adv", "C1:00:00:00:00:01")
        scanner.bringUp()
        advertiser.bringUp()
        advertiser.advertise(intervalUnits: 0x00A0, data: advData)
        lab.run(for: .milliseconds(500))
        XCTAssertEqual(lab.air.receiversExamined, 0, "nobody scans: events visit nobody")
        scanner.scan()
        lab.run(for: .milliseconds(500))
        let scanning = lab.air.receiversExamined
        XCTAssertGreaterThan(scanning, 0)
        scanner.send(.leSetScanEnable(enable: false, filterDuplicates: false))
        lab.run(for: .milliseconds(500))
        XCTAssertEqual(lab.air.receiversExamined, scanning, "scanning stopped: events visit nobody again")
    }
}

import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

final class AdvertisingScanningTests: XCTestCase {
    let advData: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0x09, 0x48, 0x52, 0x4D, 0x31]   // flags, name "HRM1"
    let scanRsp: [UInt8] = [0x03, 0x03, 0x0D, 0x18]                                 // 16-bit UUIDs: 180D

    func testReportsArriveEveryIntervalPlusAdvDelay() {
        let lab = TestLab(seed: 7)
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let advertiser = lab.device("advertiser", "C0:00:00:00:00:02")
        scanner.bringUp()
        advertiser.bringUp()
        scanner.scan()
        advertiser.advertise(intervalUnits: 0x00A0, data: advData)   // 100 ms
        lab.run(for: .milliseconds(3_000))

        let reports = scanner.reports
        XCTAssertGreaterThanOrEqual(reports.count, 24)
        XCTAssertLessThanOrEqual(reports.count, 30)
        XCTAssertLessThanOrEqual(reports[0].time, .ms(10), "first event within advDelay of the enable")
        for (_, r) in reports {
            XCTAssertEqual(r.eventType, .advInd)
            XCTAssertEqual(r.sender, advertiser.publicAddress)
            XCTAssertEqual(r.data, advData)
            XCTAssertEqual(r.rssi, -60)
        }
        var gaps: Set<Int64> = []
        var missed = 0
        for i in 1..<reports.count {
            let gap = reports[i].time - reports[i - 1].time
            XCTAssertEqual(gap.nanoseconds % 1_000, 0, "advDelay in whole microseconds")
            // An event that starts in the last 2 ms of a window on channel 39 is not heard: its
            // PDUs on 37 and 38 went while the scanner listened to 39, the one on 39 after it
            // moved to 37 (the channel timing of SimController+Scanning.swift).
            if gap > .milliseconds(110) {
                missed += 1
                XCTAssertGreaterThanOrEqual(gap, .milliseconds(200))
                XCTAssertLessThanOrEqual(gap, .milliseconds(220))
                continue
            }
            XCTAssertGreaterThanOrEqual(gap, .milliseconds(100))
            gaps.insert(gap.nanoseconds)
        }
        XCTAssertLessThanOrEqual(missed, 3)
        XCTAssertGreaterThan(gaps.count, 10, "advDelay is drawn per event")
        // One report per LE Advertising Report event.
        for (_, e) in scanner.events {
            if case let .leMeta(.advertisingReport(list)) = e { XCTAssertEqual(list.count, 1) }
        }
    }

    func testActiveScanningAddsScanResponses() {
        let lab = TestLab(seed: 3)
        let passive = lab.device("passive", "C0:00:00:00:00:01")
        let active = lab.device("active", "C0:00:00:00:00:02")
        let adv = lab.device("adv", "C0:00:00:00:00:03")
        let scannableOnly = lab.device("scan-ind", "C0:00:00:00:00:04")
        let nonconn = lab.device("nonconn", "C0:00:00:00:00:05")
        for host in [passive, active, adv, scannableOnly, nonconn] { host.bringUp() }
        passive.scan(active: false)
        active.scan(active: true)
        adv.advertise(type: .connectableUndirected, data: advData, scanResponse: scanRsp)
        scannableOnly.advertise(type: .scannableUndirected, data: advData, scanResponse: scanRsp)
        nonconn.advertise(type: .nonConnectableUndirected, data: advData, scanResponse: scanRsp)
        lab.run(for: .milliseconds(1_000))

        XCTAssertFalse(passive.reports.contains { $0.report.eventType == .scanRsp })
        func types(_ host: TestHost, from sender: TestHost) -> [AdvertisingReportType] {
            host.reports.filter { $0.report.sender == sender.publicAddress }.map(\.report.eventType)
        }
        XCTAssertEqual(Set(types(passive, from: adv)), [.advInd])
        XCTAssertEqual(Set(types(passive, from: scannableOnly)), [.advScanInd])
        XCTAssertEqual(Set(types(passive, from: nonconn)), [.advNonconnInd])

        // The active scanner gets each scannable PDU followed at once by its SCAN_RSP.
        for sender in [adv, scannableOnly] {
            let mine = active.reports.filter { $0.report.sender == sender.publicAddress }
            XCTAssertEqual(mine.count, 2 * types(passive, from: sender).count)
            for i in stride(from: 0, to: mine.count, by: 2) {
                XCTAssertNotEqual(mine[i].report.eventType, .scanRsp)
                XCTAssertEqual(mine[i].report.data, advData)
                XCTAssertEqual(mine[i + 1].report.eventType, .scanRsp)
                XCTAssertEqual(mine[i + 1].report.data, scanRsp)
                XCTAssertEqual(mine[i + 1].time, mine[i].time)
            }
        }
        XCTAssertEqual(Set(types(active, from: nonconn)), [.advNonconnInd], "non-scannable: no scan response")
    }

    /// A scanner hears an event only when one of the event's PDUs goes out inside an open window
    /// on that window's channel: window k, from scan start + k × interval for `window`, listens to
    /// channel 37 + (k mod 3). Here the advertiser uses channels 37 and 39 (map 0x05), at +0 and
    /// +1 ms; with no advDelay the event times are exact, so the expected reports follow from the
    /// model's rule alone.
    func testScanWindowAndChannelDecideWhichEventsAreHeard() {
        var model = AirModel()
        model.advertisingDelayMax = .zero
        let lab = TestLab(seed: 11, model: model)
        let windowed = lab.device("windowed", "C0:00:00:00:00:02")
        let adv = lab.device("adv", "C0:00:00:00:00:03")
        for host in [windowed, adv] { host.bringUp() }
        lab.run(until: .ms(3))
        windowed.scan(intervalUnits: 0x00A0, windowUnits: 0x0020)   // 100 ms, window 20 ms
        let scanStart = lab.loop.now
        lab.run(until: .ms(7))
        adv.send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x0028, intervalMax: 0x0028,   // 25 ms
                                                                     advertisingType: .nonConnectableUndirected, channelMap: 0x05)))
        adv.send(.leSetAdvertisingEnable(true))   // first event now
        let advStart = lab.loop.now
        lab.run(for: .milliseconds(5_000))

        var expected: [Instant] = []
        var inWindow = 0
        var t = advStart
        while t <= lab.loop.now {
            if (t - scanStart).nanoseconds % 100_000_000 < 20_000_000 { inWindow += 1 }
            for (slot, channel) in [(Int64(0), Int64(0)), (1, 2)] {
                let elapsed = (t - scanStart).nanoseconds + slot * 1_000_000
                if elapsed % 100_000_000 < 20_000_000, (elapsed / 100_000_000) % 3 == channel {
                    expected.append(t)
                    break
                }
            }
            t = t + .milliseconds(25)
        }
        XCTAssertEqual(windowed.reports.map(\.time), expected)
        XCTAssertGreaterThan(expected.count, 20)
        // One event in each 100 ms window; those in the windows on channel 38 are not heard.
        XCTAssertEqual(inWindow, 51)
        XCTAssertEqual(expected.count, 34)
    }

    /// An advertiser on channel 38 alone (Advertising_Channel_Map 0x02) is heard only in the
    /// windows that listen to 38: every third one.
    func testAScannerHearsAChannelOnlyInTheWindowsThatListenToIt() {
        let lab = TestLab(seed: 12)
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let adv = lab.device("adv", "C0:00:00:00:00:02")
        scanner.bringUp()
        adv.bringUp()
        scanner.scan()   // 10 ms interval and window: always listening, a new channel every 10 ms
        let scanStart = lab.loop.now
        adv.send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x0020, intervalMax: 0x0020,
                                                                     advertisingType: .nonConnectableUndirected, channelMap: 0x02)))
        adv.send(.leSetAdvertisingEnable(true))
        lab.run(for: .milliseconds(3_000))
        let windows = scanner.reports.map { ($0.time - scanStart).nanoseconds / 10_000_000 }
        XCTAssertGreaterThan(windows.count, 20)
        XCTAssertLessThan(windows.count, 60, "about a third of some 100 events")
        XCTAssertTrue(windows.allSatisfy { $0 % 3 == 1 }, "\(windows)")
    }

    /// LE Create Connection's scan interval and window (7.8.12) are the initiator's: an
    /// advertiser whose events never meet its windows is never connected; a wider window catches
    /// the next event.
    func testTheInitiatorHonoursItsScanWindow() {
        var model = AirModel()
        model.advertisingDelayMax = .zero
        let lab = TestLab(model: model)
        let central = lab.device("central", "C0:00:00:00:00:0C")
        let peripheral = lab.device("peripheral", "C0:00:00:00:00:0E")
        central.bringUp()
        peripheral.bringUp()
        func create(window: UInt16) {
            central.send(.leCreateConnection(LECreateConnectionParameters(
                peer: peripheral.publicAddress, scanInterval: 0x00A0, scanWindow: window)))   // every 100 ms
            lab.settle()
            central.expectAllSucceeded()
        }
        create(window: 0x0010)   // windows at 0–10, 100–110 … ms
        lab.run(until: .ms(50))
        peripheral.advertise(intervalUnits: 0x00A0)   // events at 50, 150, … ms (+1, +2 ms on 38, 39)
        lab.run(until: .ms(2_010))
        XCTAssertTrue(central.connectionCompletes.isEmpty)
        XCTAssertTrue(peripheral.controller.isAdvertising)

        central.send(.leCreateConnectionCancel)
        lab.settle()
        central.clear()
        create(window: 0x0060)   // 60 ms windows from 2010 ms: the event at 2050 ms falls in one, on 37
        lab.run(for: .milliseconds(500))
        XCTAssertEqual(central.connectionCompletes.map(\.event.status), [.success])
        XCTAssertEqual(central.connectionCompletes.map(\.time), [.ms(2_050)])
    }

    /// With no advDelay the timing is exact: events at 50 + 100k ms never meet a 10 ms window at the
    /// start of each 100 ms scan interval.
    func testClosedScanWindowHearsNothing() {
        var model = AirModel()
        model.advertisingDelayMax = .zero
        let lab = TestLab(model: model)
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let adv = lab.device("adv", "C0:00:00:00:00:02")
        scanner.bringUp()
        adv.bringUp()
        scanner.scan(intervalUnits: 0x00A0, windowUnits: 0x0010)
        lab.run(until: .ms(50))
        adv.advertise(type: .nonConnectableUndirected, intervalUnits: 0x00A0)
        lab.run(for: .milliseconds(2_000))
        XCTAssertEqual(scanner.reports.count, 0)
    }

    func testFilterDuplicatesReportsEachAddressAndTypeOncePerEnable() {
        let lab = TestLab(seed: 5)
        let filtering = lab.device("filtering", "C0:00:00:00:00:01")
        let all = lab.device("all", "C0:00:00:00:00:02")
        let adv = lab.device("adv", "C0:00:00:00:00:03")
        let other = lab.device("other", "C0:00:00:00:00:04")
        for host in [filtering, all, adv, other] { host.bringUp() }
        filtering.scan(active: true, filterDuplicates: true)
        all.scan(active: true)
        adv.advertise(data: advData, scanResponse: scanRsp)
        other.advertise(type: .nonConnectableUndirected, data: advData)
        lab.run(for: .milliseconds(2_000))

        let seen = filtering.reports.map { "\($0.report.sender) \($0.report.eventType)" }
        XCTAssertEqual(seen.sorted(), [
            "\(adv.publicAddress) ADV_IND", "\(adv.publicAddress) SCAN_RSP", "\(other.publicAddress) ADV_NONCONN_IND",
        ].sorted())
        XCTAssertGreaterThan(all.reports.count, 40)

        // A new enable starts a new duplicate filter.
        filtering.clear()
        filtering.send(.leSetScanEnable(enable: false, filterDuplicates: false))
        filtering.send(.leSetScanEnable(enable: true, filterDuplicates: true))
        lab.run(for: .milliseconds(1_000))
        XCTAssertEqual(filtering.reports.count, 3)
    }

    func testReportsCarryEachDevicesRSSI() {
        let lab = TestLab()
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let near = lab.device("near", "C0:00:00:00:00:02")
        let far = lab.device("far", "C0:00:00:00:00:03")
        for host in [scanner, near, far] { host.bringUp() }
        lab.air.setRSSI(-41, for: near.controller)
        lab.air.setRSSI(-87, for: far.controller)
        scanner.scan()
        near.advertise()
        far.advertise()
        lab.run(for: .milliseconds(1_000))
        let bySender = Dictionary(grouping: scanner.reports.map(\.report), by: \.sender)
        XCTAssertEqual(Set(bySender[near.publicAddress]?.map(\.rssi) ?? []), [-41])
        XCTAssertEqual(Set(bySender[far.publicAddress]?.map(\.rssi) ?? []), [-87])
    }

    func testRSSINoiseIsSeededAndBounded() {
        var model = AirModel()
        model.rssiNoise = 6
        func readings(seed: UInt64) -> [Int8] {
            let lab = TestLab(seed: seed, model: model)
            let scanner = lab.device("scanner", "C0:00:00:00:00:01")
            let adv = lab.device("adv", "C0:00:00:00:00:02")
            scanner.bringUp()
            adv.bringUp()
            scanner.scan()
            adv.advertise(intervalUnits: 0x0020)
            lab.run(for: .milliseconds(2_000))
            return scanner.reports.map(\.report.rssi)
        }
        let a = readings(seed: 9)
        XCTAssertTrue(a.allSatisfy { (-66)...(-54) ~= $0 })
        XCTAssertGreaterThan(Set(a).count, 8)
        XCTAssertEqual(a, readings(seed: 9))
        XCTAssertNotEqual(a, readings(seed: 10))
    }

    func testOutOfRangeAndPoweredOffAdvertisersAreNotHeard() {
        let lab = TestLab()
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let adv = lab.device("adv", "C0:00:00:00:00:02")
        scanner.bringUp()
        adv.bringUp()
        scanner.scan()
        adv.advertise()
        lab.run(until: .ms(1000))
        lab.air.setInRange(false, for: adv.controller)
        lab.run(until: .ms(2000))
        lab.air.setInRange(true, for: adv.controller)
        lab.run(until: .ms(3000))
        let times = scanner.reports.map(\.time)
        XCTAssertFalse(times.contains { $0 > .ms(1000) && $0 < .ms(2000) })
        XCTAssertTrue(times.contains { $0 > .ms(2000) })

        // A scanner out of range hears nothing either.
        scanner.clear()
        lab.air.setInRange(false, for: scanner.controller)
        lab.run(for: .milliseconds(1_000))
        XCTAssertTrue(scanner.reports.isEmpty)
        lab.air.setInRange(true, for: scanner.controller)

        // Power-off ends advertising for good: the controller comes back in its reset state.
        lab.air.powerOff(adv.controller)
        lab.air.powerOn(adv.controller)
        XCTAssertFalse(adv.controller.isAdvertising)
        lab.run(for: .milliseconds(1_000))
        XCTAssertTrue(scanner.reports.isEmpty)
    }

    func testRandomOwnAddressIsAdvertised() {
        let lab = TestLab()
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let adv = lab.device("adv", "C0:00:00:00:00:02")
        scanner.bringUp()
        adv.bringUp()
        let random = BDAddr(string: "F1:22:33:44:55:66")!
        adv.send(.leSetRandomAddress(random))
        scanner.scan()
        adv.advertise(ownAddressType: .random)
        lab.run(for: .milliseconds(500))
        XCTAssertFalse(scanner.reports.isEmpty)
        XCTAssertTrue(scanner.reports.allSatisfy { $0.report.sender == LEAddress(random, type: .random) })
    }

    /// ADV_DIRECT_IND is reported only by the device it addresses; high duty cycle directed
    /// advertising runs every 3.75 ms and times out after 1.28 s with LE Connection Complete 0x3C.
    func testHighDutyDirectedAdvertising() {
        let lab = TestLab()
        let target = lab.device("target", "C0:00:00:00:00:01")
        let bystander = lab.device("bystander", "C0:00:00:00:00:02")
        let adv = lab.device("adv", "C0:00:00:00:00:03")
        for host in [target, bystander, adv] { host.bringUp() }
        target.scan()
        bystander.scan()
        lab.run(until: .ms(10))
        adv.advertise(type: .connectableDirectedHighDuty, peer: target.publicAddress)
        lab.run(until: .ms(2000))

        XCTAssertTrue(bystander.reports.isEmpty)
        let reports = target.reports
        // Events 0, 3.75, … 1278.75 ms after the enable (342), less those that start in the last
        // 2 ms of the scanner's 10 ms window on channel 39 (t mod 30 ms in [28, 30)): with events
        // 3.75 ms apart that is every eighth one, at 28.75 ms into each 30 ms cycle.
        let heard = (0..<342).map { 10 + 3.75 * Double($0) }.filter { $0.truncatingRemainder(dividingBy: 30) < 28 }
        XCTAssertEqual(heard.count, 299)
        XCTAssertEqual(reports.map(\.time), heard.map { Instant.ms($0) })
        XCTAssertTrue(reports.allSatisfy { $0.report.eventType == .advDirectInd && $0.report.data.isEmpty })
        XCTAssertEqual(adv.connectionCompletes.count, 1)
        XCTAssertEqual(adv.connectionCompletes.first?.time, .ms(1290))
        XCTAssertEqual(adv.connectionCompletes.first?.event.status, .advertisingTimeout)
        XCTAssertEqual(adv.connectionCompletes.first?.event.role, .peripheral)
        XCTAssertFalse(adv.controller.isAdvertising)
    }
}

import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// Faults on the sim air (LinkFaults.swift): what crosses, when, and which HCI events each host gets.
final class LinkFaultTests: XCTestCase {
    /// An ATT PDU in a basic L2CAP frame on CID 0x0004 (Vol 3 Part A 3.1).
    private func att(_ payload: [UInt8]) -> [UInt8] {
        [UInt8(payload.count), 0x00, 0x04, 0x00] + payload
    }

    // MARK: Loss

    /// Vol 6 Part B 4.5.9: a lost data PDU is not acknowledged and is sent again, so under loss
    /// every packet still arrives, once and in order, only later; each attempt takes a slot.
    func testLossDelaysButNeverLosesOrReorders() {
        func run(loss: Double) -> (arrivals: [(Instant, [UInt8])], lost: Int, completed: Int, pair: ConnectedPair) {
            let lab = TestLab(seed: 7)
            let pair = lab.connectedPair(intervalUnits: 0x0018)   // 30 ms
            lab.air.setLinkFaults(LinkFaults(lossRate: loss), for: pair.peripheral.controller)
            for i in 0..<8 { pair.central.sendACL(handle: pair.centralHandle, att([0x52, UInt8(i), 0x00, 0xAA])) }
            lab.run(for: .milliseconds(3_000))
            let completed = pair.central.completedPackets.flatMap(\.entries).reduce(0) { $0 + Int($1.count) }
            return (pair.peripheral.acl.map { ($0.time, $0.data.data) }, lab.air.faultRecord.lostTransmissions, completed, pair)
        }
        let clean = run(loss: 0)
        let lossy = run(loss: 0.4)
        XCTAssertEqual(clean.lost, 0)
        XCTAssertGreaterThan(lossy.lost, 0)
        XCTAssertEqual(lossy.arrivals.map(\.1), (0..<8).map { att([0x52, UInt8($0), 0x00, 0xAA]) }, "all, once, in order")
        XCTAssertEqual(lossy.arrivals.map(\.1), clean.arrivals.map(\.1))
        XCTAssertEqual(lossy.completed, 8, "Number Of Completed Packets for every packet")
        XCTAssertGreaterThan(lossy.arrivals.last!.0, clean.arrivals.last!.0, "retransmissions take later events")
        for (time, _) in lossy.arrivals {
            XCTAssertEqual(lossy.pair.nextAnchor(atOrAfter: time), time, "deliveries happen at anchor points")
        }
        XCTAssertTrue(lossy.pair.central.disconnections.isEmpty)
        // Same seed, same losses.
        let again = run(loss: 0.4)
        XCTAssertEqual(again.arrivals.map(\.0), lossy.arrivals.map(\.0))
        XCTAssertEqual(again.lost, lossy.lost)
    }

    /// A device without faults draws nothing from any stream: the pair's timing is as before.
    func testNoFaultsLeavesTimingUntouched() {
        func arrivals(_ set: Bool) -> [Instant] {
            let lab = TestLab(seed: 3)
            let pair = lab.connectedPair()
            if set { lab.air.setLinkFaults(.none, for: pair.peripheral.controller) }
            for i in 0..<12 { pair.central.sendACL(handle: pair.centralHandle, [UInt8(i)]) }
            lab.run(for: .milliseconds(500))
            return pair.peripheral.acl.map(\.time)
        }
        XCTAssertEqual(arrivals(true), arrivals(false))
    }

    /// Nothing gets through at a loss rate of 100 %: both supervision timers run out at (last
    /// event heard) + connSupervisionTimeout and both hosts get Connection Timeout (0x08).
    func testTotalLossTimesOutBothSides() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)   // 30 ms, 1 s
        lab.run(until: pair.anchor(4) + .milliseconds(3))
        lab.air.setLinkFaults(LinkFaults(lossRate: 1), for: pair.peripheral.controller)
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        lab.run(for: .milliseconds(2_000))
        XCTAssertTrue(pair.peripheral.acl.isEmpty)
        for host in [pair.central, pair.peripheral] {
            XCTAssertEqual(host.disconnections.map(\.event.reason), [.connectionTimeout])
            XCTAssertEqual(host.disconnections.map(\.time), [pair.anchor(4) + .milliseconds(1_000)])
        }
        XCTAssertEqual(pair.central.received.last?.frame, hex("04 05 04 00 01 00 08"))
    }

    // MARK: Dropped ATT PDUs

    /// The 2nd ATT PDU from the central vanishes (with its continuation fragment); the others
    /// arrive; the central's host gets Number Of Completed Packets for all, and non-ATT traffic
    /// (L2CAP signalling, CID 0x0005) is not counted.
    func testDropTheNthATTPDUFromASide() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        lab.air.setLinkFaults(LinkFaults(drops: [ATTDrop(from: .central, index: 2)]), for: pair.peripheral.controller)
        let h = pair.centralHandle
        pair.central.sendACL(handle: h, [0x06, 0x00, 0x05, 0x00, 0x12, 0x01, 0x02, 0x00, 0x00, 0x00])   // signalling
        pair.central.sendACL(handle: h, att([0x0A, 0x03, 0x00]))                                          // ATT #1
        pair.central.sendACL(handle: h, [0x20, 0x00, 0x04, 0x00, 0x12, 0x03, 0x00] + [UInt8](repeating: 0x41, count: 20))  // ATT #2, start
        pair.central.sendACL(handle: h, boundary: .continuing, [UInt8](repeating: 0x42, count: 9))       // ATT #2, continuation
        pair.central.sendACL(handle: h, att([0x0A, 0x05, 0x00]))                                          // ATT #3
        pair.peripheral.sendACL(handle: pair.peripheralHandle, att([0x0B, 0x01]))                        // the peripheral's ATT #1
        lab.run(for: .milliseconds(500))
        XCTAssertEqual(pair.peripheral.acl.map(\.data.data), [
            [0x06, 0x00, 0x05, 0x00, 0x12, 0x01, 0x02, 0x00, 0x00, 0x00], att([0x0A, 0x03, 0x00]), att([0x0A, 0x05, 0x00]),
        ])
        XCTAssertEqual(pair.central.acl.map(\.data.data), [att([0x0B, 0x01])])
        XCTAssertEqual(pair.central.completedPackets.flatMap(\.entries).reduce(0) { $0 + Int($1.count) }, 5)
        XCTAssertEqual(lab.air.faultRecord.droppedATTPDUs.map(\.drop), [ATTDrop(from: .central, index: 2)])
        XCTAssertEqual(lab.air.faultRecord.droppedATTPDUs.map(\.senderHandle), [pair.centralHandle])
    }

    // MARK: Latency and jitter

    /// Added latency holds a packet back: it goes at the first anchor at or after (handed over +
    /// latency), and its Number Of Completed Packets with it.
    func testLatencyMovesPacketsToALaterEvent() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0008)   // 10 ms
        lab.air.setLinkFaults(LinkFaults(latency: .milliseconds(45)), for: pair.peripheral.controller)
        lab.run(until: pair.anchor(3) + .milliseconds(1))
        let sentAt = lab.loop.now
        pair.peripheral.sendACL(handle: pair.peripheralHandle, att([0x1B, 0x03, 0x00, 0x01]))
        lab.run(for: .milliseconds(200))
        let expected = pair.nextAnchor(atOrAfter: sentAt + .milliseconds(45))
        XCTAssertEqual(pair.central.acl.map(\.time), [expected])
        XCTAssertEqual(pair.peripheral.completedPackets.map(\.time), [expected])
        XCTAssertEqual(expected, pair.anchor(8))
    }

    /// Jitter spreads packets over events without ever reordering them; the spread is seeded.
    func testJitterKeepsOrderAndIsSeeded() {
        func run(seed: UInt64) -> [Instant] {
            let lab = TestLab(seed: seed)
            let pair = lab.connectedPair(intervalUnits: 0x0006)   // 7.5 ms
            lab.air.setLinkFaults(LinkFaults(latency: .milliseconds(5), jitter: .milliseconds(40)), for: pair.central.controller)
            for i in 0..<6 {
                pair.central.sendACL(handle: pair.centralHandle, [UInt8(i)])
                lab.run(for: .milliseconds(3))
            }
            lab.run(for: .milliseconds(300))
            XCTAssertEqual(pair.peripheral.acl.map(\.data.data), (0..<6).map { [UInt8($0)] })
            return pair.peripheral.acl.map(\.time)
        }
        let a = run(seed: 11)
        XCTAssertEqual(a, a.sorted())
        XCTAssertEqual(run(seed: 11), a)
        XCTAssertGreaterThan(Set(a).count, 1)
    }

    // MARK: Link loss

    /// Both ends stop hearing each other; each supervision timer fires at (anchor of the last
    /// event heard) + timeout (Vol 6 Part B 4.5.2), and both hosts get 0x08. Neither device is
    /// otherwise affected: the peripheral still advertises to scanners afterwards.
    func testLoseLinkTimesOutBothSides() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0028, timeout: 0x00C8)   // 50 ms, 2 s
        lab.run(until: pair.anchor(9) + .milliseconds(20))
        XCTAssertTrue(lab.air.loseLink(between: pair.central.controller, and: pair.peripheral.controller))
        pair.peripheral.sendACL(handle: pair.peripheralHandle, [0x01])
        lab.run(for: .milliseconds(4_000))
        for host in [pair.central, pair.peripheral] {
            XCTAssertEqual(host.received.filter { $0.frame[1] == 0x05 }.map(\.frame), [hex("04 05 04 00 01 00 08")])
            XCTAssertEqual(host.disconnections.map(\.time), [pair.anchor(9) + .milliseconds(2_000)])
        }
        XCTAssertTrue(pair.central.acl.isEmpty)
        XCTAssertFalse(lab.air.loseLink(between: pair.central.controller, and: pair.peripheral.controller))
    }

    // MARK: Walking out of range

    /// The RSSI falls at the given rate; scanners see it fall until it passes the receiver
    /// sensitivity, then see nothing; a connection to the device times out from its last event.
    func testLeavingRangeRampsRSSIThenStopsReportsAndDropsTheLink() {
        var model = AirModel()
        model.receiverSensitivity = -90
        let lab = TestLab(seed: 5, model: model)
        let scanner = lab.device("scanner", "C0:00:00:00:00:0A")
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)
        scanner.bringUp()
        scanner.scan()
        pair.peripheral.advertise(intervalUnits: 0x00A0)   // 100 ms, still connectable while connected
        lab.air.setRSSI(-60, for: pair.peripheral.controller)
        lab.run(for: .milliseconds(500))
        let start = lab.loop.now
        lab.air.startLeavingRange(pair.peripheral.controller, dBPerSecond: 10)   // -90 after 3 s
        lab.run(for: .milliseconds(5_000))
        let during = scanner.reports.filter { $0.time >= start }
        XCTAssertFalse(during.isEmpty)
        for (time, report) in during {
            let expected = -60 - 10 * Double((time - start).nanoseconds) / 1e9
            XCTAssertEqual(Double(report.rssi), expected.rounded(.down), accuracy: 0.01)
        }
        XCTAssertEqual(during.map(\.report.rssi), during.map(\.report.rssi).sorted(by: >))
        XCTAssertLessThanOrEqual(during.last!.time, start + .milliseconds(3_000))
        XCTAssertGreaterThan(during.last!.time, start + .milliseconds(2_800))
        XCTAssertFalse(lab.air.isInRange(pair.peripheral.controller))
        XCTAssertEqual(lab.air.rssi(of: pair.peripheral.controller), -91)
        // The connection: last heard at the last anchor before leaving, + 1 s.
        let left = start + .milliseconds(3_000) + .microseconds(1)
        let lastAnchor = pair.nextAnchor(atOrAfter: left) - pair.interval
        for host in [pair.central, pair.peripheral] {
            XCTAssertEqual(host.disconnections.map(\.event.reason), [.connectionTimeout])
            XCTAssertEqual(host.disconnections.map(\.time), [lastAnchor + .milliseconds(1_000)])
        }
        // Back in range: where it walked from (-60), never the faded -91, which no receiver could
        // decode (below the -90 dBm sensitivity).
        lab.air.setInRange(true, for: pair.peripheral.controller)
        XCTAssertEqual(lab.air.rssi(of: pair.peripheral.controller), -60)
        let back = lab.loop.now
        lab.run(for: .milliseconds(300))
        XCTAssertEqual(Set(scanner.reports.filter { $0.time > back }.map(\.report.rssi)), [-60])
    }
}

/// Many seeded combinations of faults and traffic: whatever the faults, each side's host receives
/// exactly what the other sent, in order, minus the ATT PDUs `drops` names; every packet is
/// completed; nothing is refused for flow control; and the same seed replays the same times.
final class LinkFaultPropertyTests: XCTestCase {
    private struct Outcome: Equatable {
        var toPeripheral: [[UInt8]]
        var toCentral: [[UInt8]]
        var times: [Instant]
    }

    private func run(seed: UInt64) -> (Outcome, expected: (toPeripheral: [[UInt8]], toCentral: [[UInt8]])) {
        var random = SeededRandom(seed: seed, stream: "property")
        let lab = TestLab(seed: seed)
        let pair = lab.connectedPair(intervalUnits: UInt16(random.int(in: 6...40)), timeout: 0x0C80)   // 32 s: never times out here
        var faults = LinkFaults(lossRate: Double(random.int(in: 0...90)) / 100,
                                latency: .milliseconds(random.int(in: 0...60)), jitter: .milliseconds(random.int(in: 0...60)))
        let dropCentral = Int(random.int(in: 1...6)), dropPeripheral = Int(random.int(in: 1...6))
        faults.drops = [ATTDrop(from: .central, index: dropCentral), ATTDrop(from: .peripheral, index: dropPeripheral)]
        lab.air.setLinkFaults(faults, for: random.int(in: 0...1) == 0 ? pair.central.controller : pair.peripheral.controller)

        var expected: (toPeripheral: [[UInt8]], toCentral: [[UInt8]]) = ([], [])
        var attSent = (central: 0, peripheral: 0)
        var sent = (central: 0, peripheral: 0)
        for step in 0..<60 {
            let fromCentral = random.int(in: 0...1) == 0
            let isATT = random.int(in: 0...3) != 0
            let body: [UInt8] = [UInt8(step), fromCentral ? 0xCE : 0x9E]
            let frame: [UInt8] = [UInt8(body.count), 0x00, isATT ? 0x04 : 0x05, 0x00] + body
            let host = fromCentral ? pair.central : pair.peripheral
            // The host keeps to the controller's 8 buffers (Vol 4 Part E 4.1.1), as a real host does.
            let completed = host.completedPackets.flatMap(\.entries).reduce(0) { $0 + Int($1.count) }
            let inFlight = (fromCentral ? sent.central : sent.peripheral) - completed
            if inFlight >= 8 { lab.run(for: .milliseconds(Int64(random.int(in: 1...80)))); continue }
            host.sendACL(handle: fromCentral ? pair.centralHandle : pair.peripheralHandle, frame)
            if fromCentral { sent.central += 1 } else { sent.peripheral += 1 }
            var dropped = false
            if isATT {
                if fromCentral { attSent.central += 1; dropped = attSent.central == dropCentral } else { attSent.peripheral += 1; dropped = attSent.peripheral == dropPeripheral }
            }
            if !dropped {
                if fromCentral { expected.toPeripheral.append(frame) } else { expected.toCentral.append(frame) }
            }
            lab.run(for: .milliseconds(Int64(random.int(in: 0...25))))
        }
        lab.run(for: .seconds(20))
        XCTAssertTrue(pair.central.disconnections.isEmpty, "seed \(seed)")
        XCTAssertEqual(pair.central.controller.counters.aclDroppedBufferOverflow + pair.peripheral.controller.counters.aclDroppedBufferOverflow, 0)
        let outcome = Outcome(toPeripheral: pair.peripheral.acl.map(\.data.data), toCentral: pair.central.acl.map(\.data.data),
                              times: (pair.peripheral.acl + pair.central.acl).map(\.time))
        XCTAssertEqual(pair.central.completedPackets.flatMap(\.entries).reduce(0) { $0 + Int($1.count) }, sent.central, "seed \(seed)")
        XCTAssertEqual(pair.peripheral.completedPackets.flatMap(\.entries).reduce(0) { $0 + Int($1.count) }, sent.peripheral, "seed \(seed)")
        return (outcome, expected)
    }

    func testWhateverTheFaultsDeliveryIsExactInOrderAndReplayable() {
        for seed in UInt64(1)...40 {
            let (outcome, expected) = run(seed: seed)
            XCTAssertEqual(outcome.toPeripheral, expected.toPeripheral, "seed \(seed)")
            XCTAssertEqual(outcome.toCentral, expected.toCentral, "seed \(seed)")
            XCTAssertEqual(run(seed: seed).0, outcome, "seed \(seed) replays")
        }
    }
}

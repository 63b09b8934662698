import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// The instant of a Connection Update (Core 5.4, Vol 6, Part B, 5.1.1): 6 events the peripheral
/// listens to, whatever its latency; a resent LL_CONNECTION_UPDATE_IND; and the ending a missed
/// instant gets: Instant Passed (0x28) when the peripheral hears the PDU late, or timeouts.
final class ConnectionUpdateInstantTests: XCTestCase {
    // MARK: The instant (5.1.1)

    /// With peripheral latency 4 the peripheral listens every 5th event: the instant is 6 of
    /// those ahead, 30 events after the LL_CONNECTION_UPDATE_IND, not 6.
    func testInstantAllowsSixEventsThePeripheralListensToWhateverItsLatency() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, latency: 4, timeout: 0x0064)   // 30 ms, listens on 0, 5, 10…
        lab.run(until: pair.anchor(3) + .milliseconds(2))
        pair.central.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.centralHandle, intervalMin: 0x0018, intervalMax: 0x0018, maxLatency: 0, supervisionTimeout: 0x00C8)))
        lab.run(until: pair.anchor(60))
        // LL_CONNECTION_UPDATE_IND at event 5 (the first the peripheral listens to), instant 5 + 6 × 5.
        let instant = pair.anchor(35)
        XCTAssertEqual(pair.central.updates.map(\.time), [instant])
        XCTAssertEqual(pair.peripheral.updates.map(\.time), [instant])
        XCTAssertEqual(pair.peripheral.updates.first?.event,
                       LEConnectionUpdateComplete(handle: 1, connectionInterval: 0x18, peripheralLatency: 0, supervisionTimeout: 0xC8))
        XCTAssertTrue(pair.central.disconnections.isEmpty)
    }

    /// A first LL_CONNECTION_UPDATE_IND the peripheral missed (out of range) is resent at the
    /// next event it listens to; received before the instant, the update is as usual.
    func testAMissedIndicationIsResentBeforeTheInstant() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)
        lab.run(until: pair.anchor(3) + .milliseconds(2))
        lab.air.setInRange(false, for: pair.peripheral.controller)
        pair.central.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.centralHandle, intervalMin: 0x0018, intervalMax: 0x0018, maxLatency: 0, supervisionTimeout: 0x00C8)))
        lab.run(until: pair.anchor(6) + .milliseconds(1))
        lab.air.setInRange(true, for: pair.peripheral.controller)
        lab.run(until: pair.anchor(30))
        // Sent (and lost) at event 4, so the instant is 10; resent and received at event 7.
        XCTAssertEqual(pair.central.updates.map(\.time), [pair.anchor(10)])
        XCTAssertEqual(pair.peripheral.updates.map(\.time), [pair.anchor(10)])
        XCTAssertTrue(pair.central.disconnections.isEmpty)
        XCTAssertTrue(pair.peripheral.disconnections.isEmpty)
    }

    /// The peripheral is out of range for the whole run-up to the instant: the central moves to
    /// the new parameters at the instant (its host hears LE Connection Update Complete), the
    /// peripheral stays on the old ones. Back in range, it receives the resent
    /// LL_CONNECTION_UPDATE_IND at the next anchor both timings share, finds the instant passed
    /// and leaves with Instant Passed (0x28); the central, hearing nothing more, times out (0x08)
    /// after its new supervision timeout.
    func testAnIndicationReceivedAfterItsInstantEndsTheLinkWithInstantPassed() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)   // 30 ms, 1 s
        lab.run(until: pair.anchor(3) + .milliseconds(2))
        lab.air.setInRange(false, for: pair.peripheral.controller)
        // Same interval, a 2 s timeout: the two timings keep sharing every anchor.
        pair.central.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.centralHandle, intervalMin: 0x0018, intervalMax: 0x0018, maxLatency: 0, supervisionTimeout: 0x00C8)))
        lab.run(until: pair.anchor(12) + .milliseconds(5))
        lab.air.setInRange(true, for: pair.peripheral.controller)
        lab.run(for: .milliseconds(3_000))

        XCTAssertEqual(pair.central.received.map(\.frame), [
            hex("04 0f 04 00 01 13 20"),
            hex("04 3e 0a 03 00 01 00 18 00 00 00 c8 00"),   // the central's update, at the instant (event 10)
            hex("04 05 04 00 01 00 08"),
        ])
        XCTAssertEqual(pair.central.received.map(\.time),
                       [pair.anchor(3) + .milliseconds(2), pair.anchor(10), pair.anchor(3) + .milliseconds(2_000)])
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [hex("04 05 04 00 01 00 28")])
        XCTAssertEqual(pair.peripheral.received.map(\.time), [pair.anchor(13)])
        XCTAssertTrue(pair.central.controller.connectionHandles.isEmpty)
        XCTAssertTrue(pair.peripheral.controller.connectionHandles.isEmpty)
    }

    /// When the new interval shares no anchor with the old one before the peripheral's (old)
    /// supervision timeout, each side times out on its own timer.
    func testAMissedInstantWithoutASharedAnchorTimesBothSidesOut() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)   // 30 ms, 1 s
        lab.run(until: pair.anchor(3) + .milliseconds(2))
        lab.air.setInRange(false, for: pair.peripheral.controller)
        pair.central.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.centralHandle, intervalMin: 0x0320, intervalMax: 0x0320, maxLatency: 0, supervisionTimeout: 0x012C)))   // 1 s, 3 s
        lab.run(until: pair.anchor(11))
        lab.air.setInRange(true, for: pair.peripheral.controller)
        lab.run(for: .milliseconds(4_000))
        XCTAssertEqual(pair.central.updates.map(\.time), [pair.anchor(10)])
        XCTAssertTrue(pair.peripheral.updates.isEmpty)
        XCTAssertEqual(pair.peripheral.disconnections.map(\.event.reason), [.connectionTimeout])
        XCTAssertEqual(pair.peripheral.disconnections.map(\.time), [pair.anchor(3) + .milliseconds(1_000)])
        XCTAssertEqual(pair.central.disconnections.map(\.event.reason), [.connectionTimeout])
        XCTAssertEqual(pair.central.disconnections.map(\.time), [pair.anchor(3) + .milliseconds(3_000)])
    }
}

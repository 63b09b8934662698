import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// The central's link layer does not accept a peripheral's LL_CONNECTION_PARAM_REQ by itself: it
/// asks its host (Vol 6, Part B, 5.1.7; Vol 4, Part E, 7.7.65.6) and waits. Written on the raw
/// bytes of the event, so that it reads the same on a controller without the procedure's codecs.
final class ParameterRequestGateTests: XCTestCase {
    func testThePeripheralsRequestWaitsForTheCentralsHost() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018)
        pair.central.send(.leSetEventMask(0x1F | 1 << 5))   // the default LE mask and LE Remote Connection Parameter Request
        lab.settle()
        pair.central.clear()
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.peripheral.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x0010, intervalMax: 0x0020, maxLatency: 1, supervisionTimeout: 0x0064)))
        lab.run(for: .seconds(2))
        // LE Meta, LE Remote Connection Parameter Request: handle 1, 20–40 ms, latency 1, 1 s.
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 3e 0b 06 01 00 10 00 20 00 01 00 64 00")])
        XCTAssertEqual(pair.central.received.map(\.time), [pair.anchor(2)])
        XCTAssertTrue(pair.central.updates.isEmpty, "nothing changes before the central's host answers")
        XCTAssertTrue(pair.peripheral.updates.isEmpty)
    }
}

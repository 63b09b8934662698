import BLERuntime
import HCI
import Transport
import XCTest

/// A tap records each frame with the loop's time (never the wall clock), in both directions.
final class TappedTransportTests: XCTestCase {
    func testRecordsBothDirectionsWithTheLoopsTime() {
        let loop = VirtualEventLoop()
        var atController: [[UInt8]] = []
        let inner = InProcessTransport(loop: loop, endpoint: "sim controller 'c1'") { atController.append($0) }
        let log = PacketLog()
        let tap = TappedTransport(inner, log: log, loop: loop)
        var atHost: [[UInt8]] = []
        tap.onFrame = { atHost.append($0) }

        loop.advance(by: .microseconds(1_250))
        tap.send([0x01, 0x03, 0x0c, 0x00])                              // Reset
        loop.advance(by: .microseconds(625))
        inner.deliverToHost([0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00])   // recorded when it reaches the host
        loop.advance(by: .milliseconds(1))

        XCTAssertEqual(log.packets, [
            LoggedPacket(time: Instant(nanoseconds: 1_250_000), direction: .hostToController, frame: [0x01, 0x03, 0x0c, 0x00]),
            LoggedPacket(time: Instant(nanoseconds: 1_875_000), direction: .controllerToHost,
                         frame: [0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00]),
        ])
        XCTAssertEqual(atController, [[0x01, 0x03, 0x0c, 0x00]], "the tap passes frames on unchanged")
        XCTAssertEqual(atHost, [[0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00]])
        XCTAssertEqual(tap.endpointDescription, "sim controller 'c1'")
    }

    func testCloseReachesTheTapsOwner() {
        let loop = VirtualEventLoop()
        let inner = InProcessTransport(loop: loop, endpoint: "sim controller 'c1'") { _ in }
        let tap = TappedTransport(inner, log: PacketLog(), loop: loop)
        var reasons: [TransportError] = []
        tap.onClose = { reasons.append($0) }
        inner.close()
        loop.runUntilIdle()
        XCTAssertEqual(reasons, [.closed(endpoint: "sim controller 'c1'")])
    }

    func testObserversSeeEveryPacketEvenWhenPacketsAreNotKept() {
        let loop = VirtualEventLoop()
        let inner = InProcessTransport(loop: loop, endpoint: "bench") { _ in }
        let log = PacketLog(keepsPackets: false)
        var seen: [HCIDirection] = []
        log.observe { seen.append($0.direction) }
        let tap = TappedTransport(inner, log: log, loop: loop)
        tap.send([0x01, 0x03, 0x0c, 0x00])
        inner.deliverToHost([0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00])
        loop.runUntilIdle()
        XCTAssertEqual(seen, [.hostToController, .controllerToHost])
        XCTAssertEqual(log.packets, [])
    }
}

extension TappedTransportTests {
    /// The controller side may still hold the inner transport after the host side (and its tap)
    /// is gone; a frame still on its way must then be dropped, not crash the lab.
    func testFrameArrivingAfterTheTapIsGoneIsDropped() {
        let loop = VirtualEventLoop()
        let inner = InProcessTransport(loop: loop, endpoint: "sim controller 'c1'") { _ in }
        var tap: TappedTransport? = TappedTransport(inner, log: PacketLog(), loop: loop)
        weak let released = tap
        inner.deliverToHost([0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00])
        tap = nil
        XCTAssertNil(released)
        loop.runUntilIdle()
    }

    /// A tap that goes takes its hook on the inner transport back (it holds the tap unowned, not
    /// weakly): frames the inner transport delivers after reach neither the tap nor its log.
    func testATapThatGoesTakesItsHookBack() {
        let loop = VirtualEventLoop()
        let inner = InProcessTransport(loop: loop, endpoint: "sim controller 'c1'") { _ in }
        let log = PacketLog()
        var tap: TappedTransport? = TappedTransport(inner, log: log, loop: loop)
        weak let released = tap
        XCTAssertNotNil(inner.onFrame)
        tap = nil
        XCTAssertNil(released)
        XCTAssertNil(inner.onFrame)
        inner.deliverToHost([0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00])
        loop.runUntilIdle()
        XCTAssertEqual(log.packets, [])
    }
}

import BLERuntime
import HCI
import Transport
import XCTest

/// `InProcessTransport` hands every frame over with `loop.execute`, like a socket read that
/// completes later, so neither side re-enters the other.
final class InProcessTransportTests: XCTestCase {
    /// What each side saw, in the order it happened.
    private final class Sides {
        var log: [String] = []
    }

    private func makeTransport(_ loop: VirtualEventLoop, _ sides: Sides) -> InProcessTransport {
        let transport = InProcessTransport(loop: loop, endpoint: "sim controller 'c1'") { frame in
            sides.log.append("controller got \(frame.spacedHex)")
        }
        transport.onFrame = { sides.log.append("host got \($0.spacedHex)") }
        transport.onClose = { sides.log.append("host closed: \($0)") }
        return transport
    }

    func testFramesToTheHostArriveThroughTheLoopInOrder() {
        let loop = VirtualEventLoop()
        let sides = Sides()
        let transport = makeTransport(loop, sides)
        transport.deliverToHost([0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00])   // Command Complete (Reset)
        transport.deliverToHost([0x04, 0x13, 0x05, 0x01, 0x01, 0x00, 0x01, 0x00])   // Number Of Completed Packets
        XCTAssertEqual(sides.log, [], "delivery must wait for the loop")

        loop.runUntilIdle()
        XCTAssertEqual(sides.log, ["host got 04 0e 04 01 03 0c 00", "host got 04 13 05 01 01 00 01 00"])
        XCTAssertEqual(loop.now, .zero, "handing over a frame takes no virtual time")
    }

    func testFramesToTheControllerArriveThroughTheLoopInOrder() {
        let loop = VirtualEventLoop()
        let sides = Sides()
        let transport = makeTransport(loop, sides)
        transport.send([0x01, 0x03, 0x0c, 0x00])                 // Reset
        transport.send([0x01, 0x02, 0x10, 0x00])                 // Read Local Supported Commands
        XCTAssertEqual(sides.log, [])

        loop.runUntilIdle()
        XCTAssertEqual(sides.log, ["controller got 01 03 0c 00", "controller got 01 02 10 00"])
    }

    func testBothDirectionsFollowTheLoopsSchedulingOrder() {
        let loop = VirtualEventLoop()
        let sides = Sides()
        let transport = makeTransport(loop, sides)
        transport.send([0x01, 0x03, 0x0c, 0x00])
        transport.deliverToHost([0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00])
        transport.send([0x01, 0x01, 0x10, 0x00])
        loop.runUntilIdle()
        XCTAssertEqual(sides.log, ["controller got 01 03 0c 00", "host got 04 0e 04 01 03 0c 00", "controller got 01 01 10 00"])
    }

    func testCloseNotifiesTheHostOnceWithTheFirstReason() {
        let loop = VirtualEventLoop()
        let sides = Sides()
        let transport = makeTransport(loop, sides)
        transport.close(.malformed(endpoint: "sim controller 'c1'", detail: "H4 indicator 0x07"))
        transport.close()
        XCTAssertTrue(transport.isClosed)
        XCTAssertEqual(sides.log, [], "the close is reported through the loop too")

        loop.runUntilIdle()
        XCTAssertEqual(sides.log, ["host closed: sim controller 'c1': malformed HCI stream: H4 indicator 0x07"])
    }

    func testCloseWithoutAReasonReportsClosedEndpoint() {
        let loop = VirtualEventLoop()
        let transport = InProcessTransport(loop: loop, endpoint: "sim controller 'c1'") { _ in }
        var reasons: [TransportError] = []
        transport.onClose = { reasons.append($0) }
        transport.close()
        loop.runUntilIdle()
        XCTAssertEqual(reasons, [.closed(endpoint: "sim controller 'c1'")])
    }

    func testNothingReachesTheHostOnceTheLinkIsClosed() {
        let loop = VirtualEventLoop()
        let sides = Sides()
        let transport = makeTransport(loop, sides)
        transport.deliverToHost([0x04, 0x05, 0x04, 0x00, 0x01, 0x00, 0x13])   // queued, not yet delivered
        transport.close()
        transport.deliverToHost([0x04, 0x10, 0x01, 0x00])                     // after the close
        transport.send([0x01, 0x03, 0x0c, 0x00])                             // after the close
        loop.runUntilIdle()
        // A frame still in flight is lost with the link, as with a reset socket; nothing follows the close.
        XCTAssertEqual(sides.log, ["host closed: sim controller 'c1': connection closed"])
    }

    /// Frames handed over for the host, then the transport goes before the loop runs: none is
    /// delivered (the host's input went with the transport); frames to the controller still are.
    func testFramesForTheHostDieWithTheTransport() {
        let loop = VirtualEventLoop()
        let sides = Sides()
        var transport: InProcessTransport? = makeTransport(loop, sides)
        weak let released = transport
        transport!.deliverToHost([0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00])
        transport!.send([0x01, 0x03, 0x0c, 0x00])
        transport = nil
        XCTAssertNil(released)
        loop.runUntilIdle()
        XCTAssertEqual(sides.log, ["controller got 01 03 0c 00"])
    }
}

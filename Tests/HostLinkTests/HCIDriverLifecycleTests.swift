import BLERuntime
import HCI
import HostLink
import Transport
import XCTest

/// A host torn down while its controller still has frames on the way (a lab dropping one
/// device) must not crash when those frames arrive.
final class HCIDriverLifecycleTests: XCTestCase {
    func testFrameArrivingAfterTheDriverIsGoneIsDropped() {
        let loop = VirtualEventLoop()
        let transport = InProcessTransport(loop: loop, endpoint: "sim controller 'c1'") { _ in }
        var driver: HCIDriver? = HCIDriver(loop: loop, transport: transport)
        weak let released = driver
        transport.deliverToHost(hex("04 0e 04 01 03 0c 00"))
        transport.close()
        driver = nil
        XCTAssertNil(released)
        loop.runUntilIdle()
    }

    /// A driver that goes takes its transport's hooks back (they hold it unowned, not weakly)
    /// and cancels its command timer: what the transport does after cannot reach it.
    func testADriverThatGoesTakesItsHooksAndTimerBack() {
        let loop = VirtualEventLoop()
        var sent: [[UInt8]] = []
        let transport = InProcessTransport(loop: loop, endpoint: "sim controller 'c1'") { sent.append($0) }
        var driver: HCIDriver? = HCIDriver(loop: loop, transport: transport)
        weak let released = driver
        driver!.send(.reset) { XCTFail("no completion once the driver is gone: \($0)") }
        loop.advance(by: .milliseconds(1))
        XCTAssertEqual(sent, [[0x01, 0x03, 0x0C, 0x00]], "the Reset is in flight, its timer pending")
        XCTAssertNotNil(transport.onFrame)
        XCTAssertNotNil(transport.onClose)
        driver = nil
        XCTAssertNil(released)
        XCTAssertNil(transport.onFrame)
        XCTAssertNil(transport.onClose)
        loop.advance(by: .seconds(60))   // past the command timeout
        transport.deliverToHost(hex("04 0e 04 01 03 0c 00"))
        transport.close()
        loop.runUntilIdle()
    }
}

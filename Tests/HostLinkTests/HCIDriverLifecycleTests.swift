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
}

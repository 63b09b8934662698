import BLELab
import BLERuntime
import GAP
import Transport
import XCTest

/// A lab's objects may be torn down while work for them is still queued on a loop that lives on
/// (a test or a tier sharing one loop between labs; a socket transport whose close is reported
/// through the loop). What outlives its owner must then do nothing, not crash: a Connection kept
/// by someone keeps its L2CAP link and the HCI driver alive, and through the driver's transport
/// the packet log; the host and the ATT view are gone.
final class LabTeardownTests: XCTestCase {
    func testADriverThatOutlivesItsHostIgnoresALateCloseAndLateFrames() throws {
        var rig: ThreePeripheralLab? = try ThreePeripheralLab()
        let loop = rig!.lab.loop
        let (central, _) = try rig!.connect(to: rig!.serial)
        let transport = try XCTUnwrap(rig!.central.transport as? InProcessTransport)
        weak let host = rig!.central.host
        weak let traffic = rig!.central.traffic
        weak let log = rig!.central.log
        rig = nil
        XCTAssertNil(host, "the lab was the host's only owner")
        XCTAssertNil(traffic)
        XCTAssertTrue(central.isConnected, "the Connection object outlives the host")

        // Frames still reach the driver (and through the tap, the packet log), then the close.
        var notified: [UInt8]?
        let before = log?.packets.count ?? 0
        central.client.onNotification = { notified = $0.value }
        transport.deliverToHost([0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])   // a stray Command Complete
        transport.deliverToHost([0x02, UInt8(central.handle & 0xFF), UInt8(central.handle >> 8), 0x07, 0x00,
                                 0x03, 0x00, 0x04, 0x00, 0x1B, 0x03, 0x00])       // a notification
        loop.advance(by: .milliseconds(10))
        transport.close(.malformed(endpoint: transport.endpointDescription, detail: "late"))
        loop.advance(by: .seconds(1))
        XCTAssertNil(notified, "no host, no connection to hand it to")
        XCTAssertNotNil(log, "the driver keeps its transport tap, and the tap its log")
        XCTAssertEqual((log?.packets.count ?? 0) - before, 2, "both late frames were logged (and shown to the log's observers)")
    }
}

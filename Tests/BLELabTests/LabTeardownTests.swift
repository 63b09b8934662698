import BLELab
import Controller
import HCI
import HostLink
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

    /// The per-frame hooks hold their owners neither strongly nor weakly (a weak reference costs a
    /// load per frame, and puts every retain of its object on the slow path): each owner takes
    /// its hook back when it goes, so what outlives it can never call into it. Seen from what
    /// outlives: the link no longer calls its Connection, the driver its host; and frames queued
    /// towards them go nowhere, without a crash.
    func testWhatOutlivesItsOwnerHasNoHookBackToIt() throws {
        var rig: ThreePeripheralLab? = try ThreePeripheralLab()
        let loop = rig!.lab.loop
        let (central, _) = try rig!.connect(to: rig!.serial)
        let link = central.link
        let driver = rig!.central.host.driver
        let transport = try XCTUnwrap(rig!.central.transport as? InProcessTransport)
        XCTAssertNotNil(link.onATT)
        XCTAssertNotNil(driver.onL2CAPFrame)
        weak let connection = central
        weak let host = rig!.central.host
        _ = consume central
        rig = nil
        XCTAssertNil(host)
        XCTAssertNil(connection, "the host was the Connection's only owner")
        XCTAssertNil(link.onATT, "the Connection took its hook back")
        XCTAssertNil(driver.onL2CAPFrame, "the host took its hook back")
        // A notification for the dead connection still reaches the driver and the link.
        transport.deliverToHost([0x02, UInt8(link.handle & 0xFF), UInt8(link.handle >> 8), 0x07, 0x00,
                                 0x03, 0x00, 0x04, 0x00, 0x1B, 0x03, 0x00])
        loop.advance(by: .seconds(1))
        link.receive(frame: L2CAPBasicFrame(channel: L2CAPChannelID.att, payload: [0x1B, 0x03, 0x00]))
    }

    /// A controller that goes (with its lab) while frames for its host wait on the loop for
    /// their flush: the flush does nothing (its task holds the controller through a gate the
    /// controller empties when it goes, not weakly).
    func testAControllerThatGoesFlushesNothing() throws {
        var lab: Lab? = Lab(seed: 3)
        let loop = lab!.loop
        let device = try lab!.addDevice("a", recordsTraffic: false)
        let transport = try XCTUnwrap(device.transport as? InProcessTransport)
        weak let controller = device.controller
        controller?.receive(fromHost: [0x01, 0x03, 0x0C, 0x00])   // Reset: a Command Complete is queued
        _ = consume device
        lab = nil
        XCTAssertNil(controller, "the lab's air was the controller's only owner")
        var delivered: [[UInt8]] = []
        transport.onFrame = { delivered.append($0) }
        loop.advance(by: .seconds(1))
        XCTAssertEqual(delivered, [])
    }
}

import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// The ACL termination procedure (Core 5.4 Vol 6 Part B 5.1.3): the LL_TERMINATE_IND is queued
/// behind the data the host handed over before HCI Disconnect, goes out once that data has, and
/// ends the link when acknowledged; data handed over after it is discarded; and when it cannot be
/// acknowledged within T_Terminate (the supervision timeout), the initiator leaves anyway.
final class TerminationTests: XCTestCase {
    /// A peripheral answers a request and hangs up: its answer reaches the central before the
    /// link ends, in the same connection event, as a link layer that sends its queue in order does.
    func testDataHandedOverBeforeTheDisconnectGoesFirst() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        lab.run(until: pair.anchor(4) + .milliseconds(7))
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        pair.peripheral.sendACL(handle: pair.peripheralHandle, [0x02])
        pair.peripheral.send(.disconnect(handle: pair.peripheralHandle, reason: .remoteUserTerminatedConnection))
        lab.run(until: pair.anchor(10))

        XCTAssertEqual(pair.central.received.map(\.frame), [
            hex("04 13 05 01 01 00 01 00"),      // the central's own packet went (it speaks first in the event)
            hex("02 01 20 01 00 02"),            // the peripheral's data
            hex("04 05 04 00 01 00 13"),         // then the link ends, with the peripheral's reason
        ])
        XCTAssertEqual(pair.central.received.map(\.time), [pair.anchor(5), pair.anchor(5), pair.anchor(5)])
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [
            hex("04 0f 04 00 01 06 04"),
            hex("02 01 20 01 00 01"),
            hex("04 13 05 01 01 00 01 00"),
            hex("04 05 04 00 01 00 16"),
        ])
        XCTAssertEqual(pair.central.controller.counters.aclDiscardedOnDisconnect, 0)
        XCTAssertEqual(pair.peripheral.controller.counters.aclDiscardedOnDisconnect, 0)
    }

    /// What the host hands over after its Disconnect sits behind the LL_TERMINATE_IND and is
    /// discarded with the link (the host counts it as flushed, Vol 4 Part E 4.3).
    func testDataHandedOverAfterTheDisconnectIsDiscarded() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        lab.run(until: pair.anchor(4) + .milliseconds(7))
        pair.central.send(.disconnect(handle: pair.centralHandle, reason: .remoteUserTerminatedConnection))
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        lab.run(until: pair.anchor(10))
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 0f 04 00 01 06 04"), hex("04 05 04 00 01 00 16")])
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [hex("04 05 04 00 01 00 13")])
        XCTAssertEqual(pair.peripheral.received.map(\.time), [pair.anchor(5)])
        XCTAssertEqual(pair.central.controller.counters.aclDiscardedOnDisconnect, 1)
    }

    /// Data ahead of the LL_TERMINATE_IND that needs several events: the link ends in the event
    /// where the last of it goes.
    func testALongQueueTakesTheEventsItNeeds() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        lab.run(until: pair.anchor(4) + .milliseconds(7))
        for i in 0..<6 { pair.peripheral.sendACL(handle: pair.peripheralHandle, [UInt8(i)]) }
        pair.peripheral.send(.disconnect(handle: pair.peripheralHandle, reason: .remoteUserTerminatedConnection))
        lab.run(until: pair.anchor(12))
        // Four PDUs per event (AirModel.maxPDUsPerEvent): four at anchor 5, two and the LL_TERMINATE_IND at anchor 6.
        XCTAssertEqual(pair.central.acl.map(\.data.data), (0..<6).map { [UInt8($0)] })
        XCTAssertEqual(pair.central.acl.map(\.time), [pair.anchor(5), pair.anchor(5), pair.anchor(5), pair.anchor(5), pair.anchor(6), pair.anchor(6)])
        XCTAssertEqual(pair.central.disconnections.map(\.time), [pair.anchor(6)])
        XCTAssertEqual(pair.peripheral.disconnections.map(\.event.reason), [.connectionTerminatedByLocalHost])
    }

    /// T_Terminate (= connSupervisionTimeout, 1 s here) runs out while the data ahead of the
    /// LL_TERMINATE_IND is still held back (5 s of added latency): the peripheral leaves the
    /// connection and tells its host; the central, hearing nothing more, times out.
    func testTTerminateEndsTheInitiatorWhenItsQueueCannotDrain() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        lab.air.setLinkFaults(LinkFaults(latency: .seconds(5)), for: pair.peripheral.controller)
        lab.run(until: pair.anchor(4) + .milliseconds(7))
        let asked = lab.loop.now
        pair.peripheral.sendACL(handle: pair.peripheralHandle, [0x02])
        pair.peripheral.send(.disconnect(handle: pair.peripheralHandle, reason: .remoteUserTerminatedConnection))
        lab.run(until: asked + .seconds(8))
        XCTAssertEqual(pair.peripheral.disconnections.map(\.event.reason), [.connectionTerminatedByLocalHost])
        XCTAssertEqual(pair.peripheral.disconnections.map(\.time), [asked + .seconds(1)])
        XCTAssertEqual(pair.central.disconnections.map(\.event.reason), [.connectionTimeout])
        // The last event the central heard is the last anchor before the peripheral left.
        XCTAssertEqual(pair.central.disconnections.map(\.time), [pair.anchor(37) + .seconds(1)])
        XCTAssertTrue(pair.central.acl.isEmpty, "the held-back data never went")
        XCTAssertTrue(pair.central.controller.connectionHandles.isEmpty)
        XCTAssertTrue(pair.peripheral.controller.connectionHandles.isEmpty)
    }
}

/// A connection whose ends cannot hear each other from its first event never gets established.
final class EstablishmentTests: XCTestCase {
    /// 100% loss declared before the connection exists: no packet ever crosses, so both ends give
    /// up six connection intervals after the CONNECT_IND with Connection Failed to be Established
    /// (Core Vol 6 Part B 4.5.2), as they do when the loss starts right after it.
    func testAConnectionOverADeadLinkFailsToBeEstablished() {
        let lab = TestLab()
        let central = lab.device("central", "C0:00:00:00:00:0C")
        let peripheral = lab.device("peripheral", "C0:00:00:00:00:0E")
        central.bringUp()
        peripheral.bringUp()
        lab.air.setLinkFaults(LinkFaults(lossRate: 1), for: peripheral.controller)
        peripheral.advertise()
        central.connect(to: peripheral.publicAddress)
        lab.run(for: .seconds(3))
        guard let created = central.connectionCompletes.first?.time else { return XCTFail("no LE Connection Complete") }
        XCTAssertEqual(central.disconnections.map(\.event.reason), [.connectionFailedToBeEstablished])
        XCTAssertEqual(peripheral.disconnections.map(\.event.reason), [.connectionFailedToBeEstablished])
        XCTAssertEqual(central.disconnections.map(\.time), [created + .milliseconds(180)])
    }
}

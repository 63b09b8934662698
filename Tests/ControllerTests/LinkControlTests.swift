import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// Disconnect, Connection Update and supervision timeouts.
final class LinkControlTests: XCTestCase {
    func testDisconnectFromTheCentral() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        lab.run(until: pair.anchor(4) + .milliseconds(7))
        // Data queued behind the LL_TERMINATE_IND (after the Disconnect, on the central's side) or
        // not yet sent by the peer when it goes is discarded (TerminationTests has the data ahead of it).
        pair.central.send(.disconnect(handle: pair.centralHandle, reason: .remoteUserTerminatedConnection))
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        pair.peripheral.sendACL(handle: pair.peripheralHandle, [0x02])
        lab.run(until: pair.anchor(10))

        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 0f 04 00 01 06 04"), hex("04 05 04 00 01 00 16")])
        XCTAssertEqual(pair.central.received.map(\.time), [pair.anchor(4) + .milliseconds(7), pair.anchor(5)])
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [hex("04 05 04 00 01 00 13")])
        XCTAssertEqual(pair.peripheral.received.map(\.time), [pair.anchor(5)])
        XCTAssertTrue(pair.central.controller.connectionHandles.isEmpty)
        XCTAssertTrue(pair.peripheral.controller.connectionHandles.isEmpty)
        XCTAssertEqual(pair.central.controller.counters.aclDiscardedOnDisconnect, 1)
        XCTAssertEqual(pair.peripheral.controller.counters.aclDiscardedOnDisconnect, 1)

        // The handle is gone: data for it is dropped, Disconnect is refused, and buffers are free again.
        pair.central.sendACL(handle: pair.centralHandle, [0x03])
        pair.central.send(.disconnect(handle: pair.centralHandle, reason: .remoteUserTerminatedConnection))
        lab.settle()
        XCTAssertEqual(pair.central.received.last?.frame, hex("04 0f 04 02 01 06 04"))
        XCTAssertEqual(pair.central.controller.counters.aclDroppedUnknownHandle, 1)
    }

    func testDisconnectFromThePeripheral() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        lab.run(until: pair.anchor(2))   // exactly at an (idle) anchor: LL_TERMINATE_IND goes in that event
        pair.peripheral.send(.disconnect(handle: pair.peripheralHandle, reason: .remoteDeviceTerminatedPowerOff))
        lab.run(until: pair.anchor(10))
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [hex("04 0f 04 00 01 06 04"), hex("04 05 04 00 01 00 16")])
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 05 04 00 01 00 15")])
        XCTAssertEqual(pair.central.received.map(\.time), [pair.anchor(2)])
    }

    func testDisconnectRefusals() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        pair.central.send(.disconnect(handle: pair.centralHandle, reason: .connectionTerminatedByLocalHost))   // not allowed
        pair.central.send(.disconnect(handle: pair.centralHandle, reason: .remoteUserTerminatedConnection))
        pair.central.send(.disconnect(handle: pair.centralHandle, reason: .remoteUserTerminatedConnection))   // already going
        lab.settle()
        XCTAssertEqual(pair.central.received.map(\.frame), [
            hex("04 0f 04 12 01 06 04"), hex("04 0f 04 00 01 06 04"), hex("04 0f 04 0c 01 06 04"),
        ])
    }

    /// The central's LL_CONNECTION_UPDATE_IND goes at the next event k0; the new parameters apply
    /// at instant k0 + 6, when both hosts get LE Connection Update Complete.
    func testConnectionUpdateFromTheCentral() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018)   // 30 ms
        lab.run(until: pair.anchor(3) + .milliseconds(2))
        pair.central.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.centralHandle, intervalMin: 0x0030, intervalMax: 0x0040, maxLatency: 0, supervisionTimeout: 0x00C8)))
        lab.run(until: pair.anchor(20))
        let instant = pair.anchor(10)   // k0 = 4
        XCTAssertEqual(pair.central.received.map(\.frame), [
            hex("04 0f 04 00 01 13 20"),
            hex("04 3e 0a 03 00 01 00 30 00 00 00 c8 00"),
        ])
        XCTAssertEqual(pair.central.received.map(\.time), [pair.anchor(3) + .milliseconds(2), instant])
        XCTAssertEqual(pair.peripheral.updates.map(\.time), [instant])
        XCTAssertEqual(pair.peripheral.updates.first?.event,
                       LEConnectionUpdateComplete(handle: 1, connectionInterval: 0x30, peripheralLatency: 0, supervisionTimeout: 0xC8))

        // From the instant on, events are 60 ms apart.
        pair.peripheral.clear()
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        let t = lab.loop.now
        let k = ((t - instant).nanoseconds + 59_999_999) / 60_000_000
        lab.run(for: .milliseconds(200))
        XCTAssertEqual(pair.peripheral.acl.map(\.time), [instant + .milliseconds(60) * k])
    }

    /// The peripheral's request (LL_CONNECTION_PARAM_REQ) goes at k0, the central's host accepts
    /// it at once, its LL_CONNECTION_UPDATE_IND goes at k0 + 1, the instant is k0 + 7.
    func testConnectionUpdateFromThePeripheral() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018)
        pair.central.send(.leSetEventMask(EventMask.leDefaultMask | EventMask.leRemoteConnectionParameterRequest))
        lab.settle()
        pair.central.clear()
        pair.central.onFrame = { _, frame in
            guard case let .event(.leMeta(.remoteConnectionParameterRequest(e)))? = try? HCIPacket(h4: frame) else { return }
            pair.central.send(.leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters(
                handle: e.handle, intervalMin: e.intervalMin, intervalMax: e.intervalMax, maxLatency: e.maxLatency,
                supervisionTimeout: e.timeout)))
        }
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.peripheral.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x0010, intervalMax: 0x0010, maxLatency: 2, supervisionTimeout: 0x0050)))
        lab.run(until: pair.anchor(20))
        XCTAssertEqual(pair.peripheral.commandResults, [.commandStatus(CommandStatus(status: .success, opcode: .leConnectionUpdate))])
        let expected = LEConnectionUpdateComplete(handle: 1, connectionInterval: 0x10, peripheralLatency: 2, supervisionTimeout: 0x50)
        XCTAssertEqual(pair.central.updates.map(\.event), [expected])
        XCTAssertEqual(pair.peripheral.updates.map(\.event), [expected])
        XCTAssertEqual(pair.central.updates.first?.time, pair.anchor(9))
        XCTAssertEqual(pair.peripheral.updates.first?.time, pair.anchor(9))
    }

    func testConnectionUpdateRefusals() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        let h = pair.centralHandle
        // Timeout 100 ms is not more than (1 + 0) × 60 ms × 2.
        pair.central.send(.leConnectionUpdate(LEConnectionUpdateParameters(handle: h, intervalMin: 0x30, intervalMax: 0x30, maxLatency: 0, supervisionTimeout: 0x0A)))
        pair.central.send(.leConnectionUpdate(LEConnectionUpdateParameters(handle: h, intervalMin: 0x05, intervalMax: 0x30, maxLatency: 0, supervisionTimeout: 0x64)))
        pair.central.send(.leConnectionUpdate(LEConnectionUpdateParameters(handle: h, intervalMin: 0x30, intervalMax: 0x30, maxLatency: 0, supervisionTimeout: 0x64)))
        pair.central.send(.leConnectionUpdate(LEConnectionUpdateParameters(handle: h, intervalMin: 0x30, intervalMax: 0x30, maxLatency: 0, supervisionTimeout: 0x64)))
        lab.settle()
        XCTAssertEqual(pair.central.received.map(\.frame), [
            hex("04 0f 04 12 01 13 20"), hex("04 0f 04 12 01 13 20"), hex("04 0f 04 00 01 13 20"), hex("04 0f 04 0c 01 13 20"),
        ])
    }

    /// A peer that powers off stops being heard: the other side gets Connection Timeout exactly at
    /// (anchor of the last event before the power-off) + supervision timeout. The powered-off
    /// host hears nothing more.
    func testPoweredOffPeerTimesOut() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)   // 30 ms, 1 s
        lab.run(until: pair.anchor(5) + .milliseconds(7))
        lab.air.powerOff(pair.peripheral.controller)
        pair.central.sendACL(handle: pair.centralHandle, [0x01])   // never acknowledged
        pair.peripheral.sendACL(handle: pair.peripheralHandle, [0x02])
        pair.peripheral.send(.reset)
        lab.run(for: .milliseconds(3_000))
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 05 04 00 01 00 08")])
        XCTAssertEqual(pair.central.received.map(\.time), [pair.anchor(5) + .milliseconds(1_000)])
        XCTAssertTrue(pair.peripheral.received.isEmpty)
        XCTAssertEqual(pair.peripheral.controller.counters.framesDroppedPoweredOff, 2)
        XCTAssertTrue(pair.central.controller.connectionHandles.isEmpty)

        // Powered on again, it is a controller fresh out of reset.
        lab.air.powerOn(pair.peripheral.controller)
        pair.peripheral.send(.reset)
        lab.settle()
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [hex("04 0e 04 01 03 0c 00")])
        XCTAssertTrue(pair.peripheral.controller.connectionHandles.isEmpty)
    }

    /// Reset drops connections without telling the local host; the peer times out.
    func testResetDropsConnectionsSilently() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0028, timeout: 0x00C8)   // 50 ms, 2 s
        lab.run(until: pair.anchor(7))   // at an anchor that has no task: the idle event counts as heard
        pair.peripheral.send(.reset)
        lab.run(for: .milliseconds(3_000))
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [hex("04 0e 04 01 03 0c 00")])
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 05 04 00 01 00 08")])
        XCTAssertEqual(pair.central.received.map(\.time), [pair.anchor(6) + .milliseconds(2_000)])
    }

    /// An event that was due at the very instant the peer vanished but had not run is not heard.
    func testPeerLostAtAScheduledAnchorTimesOutFromThePreviousEvent() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)
        lab.run(until: pair.anchor(3) + .milliseconds(1))
        // Scheduled before the event task below, so it runs first at the same instant.
        lab.loop.schedule(at: pair.anchor(4)) { lab.air.powerOff(pair.peripheral.controller) }
        pair.central.sendACL(handle: pair.centralHandle, [0x01])   // for event 4
        lab.run(for: .milliseconds(2_000))
        XCTAssertTrue(pair.peripheral.received.isEmpty)
        XCTAssertEqual(pair.central.received.map(\.time), [pair.anchor(3) + .milliseconds(1_000)])
        XCTAssertEqual(pair.central.disconnections.map(\.event.reason), [.connectionTimeout])
    }

    func testOutOfRangeWithinTheTimeoutResumes() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)
        lab.run(until: pair.anchor(2) + .milliseconds(5))
        lab.air.setInRange(false, for: pair.peripheral.controller)
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        lab.run(for: .milliseconds(700))
        XCTAssertTrue(pair.peripheral.received.isEmpty)
        let back = lab.loop.now
        lab.air.setInRange(true, for: pair.peripheral.controller)
        lab.run(for: .milliseconds(2_000))
        XCTAssertEqual(pair.peripheral.acl.map(\.time), [pair.nextAnchor(atOrAfter: back)])
        XCTAssertEqual(pair.central.completedPackets.map(\.time), [pair.nextAnchor(atOrAfter: back)])
        XCTAssertTrue(pair.central.disconnections.isEmpty)
        XCTAssertTrue(pair.peripheral.disconnections.isEmpty)
    }

    func testOutOfRangeTooLongTimesOutBothSides() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)
        lab.run(until: pair.anchor(2) + .milliseconds(5))
        lab.air.setInRange(false, for: pair.central.controller)
        lab.run(for: .milliseconds(2_000))
        lab.air.setInRange(true, for: pair.central.controller)
        lab.run(for: .milliseconds(500))
        for host in [pair.central, pair.peripheral] {
            XCTAssertEqual(host.received.map(\.frame), [hex("04 05 04 00 01 00 08")])
            XCTAssertEqual(host.received.map(\.time), [pair.anchor(2) + .milliseconds(1_000)])
        }
    }

    /// A peer that vanishes before the first connection event: Connection Failed to be
    /// Established (0x3E) 6 intervals after the CONNECT_IND (Vol 6, Part B, 4.5.2).
    func testPeerLostBeforeTheFirstEvent() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018)
        lab.air.powerOff(pair.peripheral.controller)
        lab.run(for: .milliseconds(2_000))
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 05 04 00 01 00 3e")])
        XCTAssertEqual(pair.central.received.map(\.time), [pair.connectedAt + .milliseconds(180)])
    }

    /// A host callback that powers its device off stops the rest of the batch reaching it.
    func testPowerOffFromInsideToHostStopsDelivery() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        for i in 0..<3 { pair.peripheral.sendACL(handle: pair.peripheralHandle, [UInt8(i)]) }
        pair.central.onFrame = { _, _ in lab.air.powerOff(pair.central.controller) }
        lab.run(for: .milliseconds(2_000))
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("02 01 20 01 00 00")])
        XCTAssertEqual(pair.peripheral.disconnections.map(\.event.reason), [.connectionTimeout])
        XCTAssertEqual(pair.peripheral.disconnections.first?.time, pair.anchor(0) + .milliseconds(1_000))
    }

    func testDisconnectionCompleteIsMaskable() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        pair.peripheral.send(.setEventMask(EventMask.defaultMask & ~EventMask.disconnectionComplete | EventMask.leMeta))
        pair.central.send(.disconnect(handle: pair.centralHandle, reason: .remoteUserTerminatedConnection))
        lab.run(for: .milliseconds(200))
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [hex("04 0e 04 01 01 0c 00")])
        XCTAssertTrue(pair.peripheral.controller.connectionHandles.isEmpty)
        XCTAssertEqual(pair.central.disconnections.count, 1)
    }
}

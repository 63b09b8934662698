import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// The Connection Parameters Request procedure with the central's host deciding, and the ending
/// an unanswered request gets (Core 5.4, Vol 6, Part B, 5.1.7, 5.2; Vol 4, Part E, 7.7.65.6,
/// 7.8.31, 7.8.32).
final class ConnectionParameterRequestTests: XCTestCase {
    /// The central's host also takes LE Remote Connection Parameter Request (LE event mask bit 5).
    private func unmaskParameterRequests(_ host: TestHost) {
        host.send(.leSetEventMask(EventMask.leDefaultMask | EventMask.leRemoteConnectionParameterRequest))
        host.loop.run(until: host.loop.now)
        host.clear()
    }

    private var remoteRequests: (TestHost) -> [(time: Instant, event: LERemoteConnectionParameterRequest)] {
        { host in
            host.events.compactMap {
                if case let .leMeta(.remoteConnectionParameterRequest(e)) = $0.event { return ($0.time, e) }
                return nil
            }
        }
    }

    // MARK: Connection Parameters Request (5.1.7)

    /// The peripheral's LL_CONNECTION_PARAM_REQ goes at event 2; the central's host gets LE Remote
    /// Connection Parameter Request and accepts; LL_CONNECTION_UPDATE_IND goes at event 3, and
    /// the instant is event 9.
    func testTheCentralsHostDecidesOnThePeripheralsRequest() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018)
        unmaskParameterRequests(pair.central)
        pair.central.onFrame = { _, frame in
            guard frame.starts(with: [0x04, 0x3E, 0x0B, 0x06]) else { return }
            pair.central.send(.leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters(
                handle: pair.centralHandle, intervalMin: 0x0010, intervalMax: 0x0010, maxLatency: 2, supervisionTimeout: 0x0050)))
        }
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.peripheral.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x0010, intervalMax: 0x0010, maxLatency: 2, supervisionTimeout: 0x0050)))
        lab.run(until: pair.anchor(20))

        XCTAssertEqual(pair.peripheral.commandResults, [.commandStatus(CommandStatus(status: .success, opcode: .leConnectionUpdate))])
        XCTAssertEqual(Array(pair.central.received.map(\.frame).prefix(2)), [
            hex("04 3e 0b 06 01 00 10 00 10 00 02 00 50 00"),   // handle 1, 20–20 ms, latency 2, 800 ms
            hex("04 0e 06 01 20 20 00 01 00"),                  // Reply: Command Complete, success, handle 1
        ])
        XCTAssertEqual(remoteRequests(pair.central).map(\.time), [pair.anchor(2)])
        let expected = LEConnectionUpdateComplete(handle: 1, connectionInterval: 0x10, peripheralLatency: 2, supervisionTimeout: 0x50)
        XCTAssertEqual(pair.central.updates.map(\.event), [expected])
        XCTAssertEqual(pair.peripheral.updates.map(\.event), [expected])
        XCTAssertEqual(pair.central.updates.first?.time, pair.anchor(9))
        XCTAssertEqual(pair.peripheral.updates.first?.time, pair.anchor(9))
    }

    /// A Negative Reply: LL_REJECT_EXT_IND tells the peripheral, whose host gets LE Connection
    /// Update Complete with the reason as its status; the parameters stay.
    func testTheCentralsHostRejects() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018)
        unmaskParameterRequests(pair.central)
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.peripheral.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x0006, intervalMax: 0x0006, maxLatency: 0, supervisionTimeout: 0x000A)))
        lab.run(until: pair.anchor(2) + .milliseconds(1))
        XCTAssertEqual(remoteRequests(pair.central).map(\.event),
                       [LERemoteConnectionParameterRequest(handle: 1, intervalMin: 6, intervalMax: 6, maxLatency: 0, timeout: 0x0A)])
        pair.central.send(.leRemoteConnectionParameterRequestNegativeReply(handle: pair.centralHandle, reason: .unacceptableConnectionParameters))
        lab.run(until: pair.anchor(20))
        XCTAssertEqual(pair.central.received.last?.frame, hex("04 0e 06 01 21 20 00 01 00"))
        XCTAssertTrue(pair.central.updates.isEmpty)
        XCTAssertEqual(pair.peripheral.updates.map(\.time), [pair.anchor(3)])
        XCTAssertEqual(pair.peripheral.received.last?.frame, hex("04 3e 0a 03 3b 01 00 18 00 00 00 64 00"))
        // The link goes on with its parameters.
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        lab.run(for: .milliseconds(100))
        XCTAssertEqual(pair.peripheral.acl.count, 1)
    }

    /// A host that left LE Remote Connection Parameter Request masked (the default LE mask) has
    /// its link layer reject by itself with Unsupported Remote Feature (0x1A): the event gates
    /// the procedure.
    func testAMaskedEventMakesTheCentralRejectWithUnsupportedRemoteFeature() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018)
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.peripheral.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x0010, intervalMax: 0x0010, maxLatency: 0, supervisionTimeout: 0x0064)))
        lab.run(until: pair.anchor(20))
        XCTAssertTrue(pair.central.received.isEmpty, "nothing reaches a host that masked the event")
        XCTAssertEqual(pair.central.controller.counters.eventsMasked, 0, "not even counted as masked: never raised")
        XCTAssertEqual(pair.peripheral.updates.map(\.event.status), [.unsupportedRemoteFeature])
        XCTAssertEqual(pair.peripheral.updates.map(\.time), [pair.anchor(3)])
    }

    /// LE Meta masked in the event mask gates it the same way.
    func testLEMetaMaskedAlsoRejects() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018)
        pair.central.send(.leSetEventMask(EventMask.leDefaultMask | EventMask.leRemoteConnectionParameterRequest))
        pair.central.send(.setEventMask(EventMask.defaultMask))
        lab.settle()
        pair.central.clear()
        pair.peripheral.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x0010, intervalMax: 0x0010, maxLatency: 0, supervisionTimeout: 0x0064)))
        lab.run(until: pair.anchor(20))
        XCTAssertTrue(pair.central.received.isEmpty)
        XCTAssertEqual(pair.peripheral.updates.map(\.event.status), [.unsupportedRemoteFeature])
    }

    /// A central host that never answers: the peripheral's procedure response timer (40 s) runs
    /// out and it leaves with LL Response Timeout (0x22); the central then times out (0x08).
    func testAnUnansweredRequestEndsWithLLResponseTimeout() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, timeout: 0x0064)
        unmaskParameterRequests(pair.central)
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        let asked = lab.loop.now
        pair.peripheral.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x0010, intervalMax: 0x0010, maxLatency: 0, supervisionTimeout: 0x0064)))
        lab.run(for: .seconds(45))
        XCTAssertEqual(remoteRequests(pair.central).count, 1)
        XCTAssertEqual(pair.peripheral.disconnections.map(\.event.reason), [.llResponseTimeout])
        XCTAssertEqual(pair.peripheral.disconnections.map(\.time), [asked + .seconds(40)])
        let lastHeard = pair.nextAnchor(atOrAfter: asked + .seconds(40)) - pair.interval
        XCTAssertEqual(pair.central.disconnections.map(\.event.reason), [.connectionTimeout])
        XCTAssertEqual(pair.central.disconnections.map(\.time), [lastHeard + .milliseconds(1_000)])
        // Too late to answer now.
        pair.central.send(.leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters(
            handle: pair.centralHandle, intervalMin: 0x0010, intervalMax: 0x0010, maxLatency: 0, supervisionTimeout: 0x0064)))
        lab.settle()
        XCTAssertEqual(pair.central.received.last?.frame, hex("04 0e 06 01 20 20 02 01 00"))
    }

    func testReplyRefusals() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018)
        unmaskParameterRequests(pair.central)
        let valid = LEConnectionUpdateParameters(handle: pair.centralHandle, intervalMin: 0x10, intervalMax: 0x10, maxLatency: 0, supervisionTimeout: 0x64)
        // Nothing asked yet: Command Disallowed; a handle that is not connected: Unknown Connection Identifier.
        pair.central.send(.leRemoteConnectionParameterRequestReply(valid))
        pair.central.send(.leRemoteConnectionParameterRequestNegativeReply(handle: 0x0077, reason: .unacceptableConnectionParameters))
        lab.settle()
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 0e 06 01 20 20 0c 01 00"), hex("04 0e 06 01 21 20 02 77 00")])
        pair.central.clear()
        pair.peripheral.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x0010, intervalMax: 0x0010, maxLatency: 0, supervisionTimeout: 0x0064)))
        lab.run(until: pair.anchor(3))
        XCTAssertEqual(remoteRequests(pair.central).count, 1)
        pair.central.clear()
        var invalid = valid
        invalid.supervisionTimeout = 0x0005
        pair.central.send(.leRemoteConnectionParameterRequestReply(invalid))
        pair.central.send(.leRemoteConnectionParameterRequestNegativeReply(handle: pair.centralHandle, reason: .success))
        // The peripheral cannot answer for the central.
        pair.peripheral.send(.leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x10, intervalMax: 0x10, maxLatency: 0, supervisionTimeout: 0x64)))
        lab.settle()
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 0e 06 01 20 20 12 01 00"), hex("04 0e 06 01 21 20 12 01 00")])
        XCTAssertEqual(pair.peripheral.received.last?.frame, hex("04 0e 06 01 20 20 0c 01 00"))
        // A second LE Connection Update while the first waits for the central's host.
        pair.peripheral.send(.leConnectionUpdate(LEConnectionUpdateParameters(
            handle: pair.peripheralHandle, intervalMin: 0x0010, intervalMax: 0x0010, maxLatency: 0, supervisionTimeout: 0x0064)))
        lab.settle()
        XCTAssertEqual(pair.peripheral.received.last?.frame, hex("04 0f 04 0c 01 13 20"))
    }
}

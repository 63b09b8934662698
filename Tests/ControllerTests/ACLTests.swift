import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

final class ACLTests: XCTestCase {
    /// Data crosses at connection events: anchor(k) = CONNECT_IND + 1.25 ms + k × interval, the
    /// first one at or after the time the packet was queued; PB flags become 0b10 / 0b01.
    func testDataBothWaysAtAnchorPoints() {
        let lab = TestLab(seed: 2)
        let pair = lab.connectedPair(intervalUnits: 0x0018)   // 30 ms
        let (central, peripheral) = (pair.central, pair.peripheral)

        // Queued right at the CONNECT_IND: goes in event 0.
        central.sendACL(handle: pair.centralHandle, [0x05, 0x00, 0x04, 0x00, 0x0A, 0x10, 0x00])
        lab.run(until: pair.anchor(0) + .milliseconds(10))
        XCTAssertEqual(peripheral.received.map(\.time), [pair.anchor(0)])
        XCTAssertEqual(peripheral.received.first?.frame, hex("02 01 20 07 00 05 00 04 00 0a 10 00"))
        XCTAssertEqual(central.received.map(\.time), [pair.anchor(0)])
        XCTAssertEqual(central.received.first?.frame, hex("04 13 05 01 01 00 01 00"))

        // The peripheral answers 10 ms after event 0: a start fragment and a continuation go in event 1.
        peripheral.clear()
        central.clear()
        peripheral.sendACL(handle: pair.peripheralHandle, boundary: .firstNonFlushable, [0x06, 0x00, 0x04, 0x00, 0x0B, 0x69])
        peripheral.sendACL(handle: pair.peripheralHandle, boundary: .continuing, [0x6E, 0x69, 0x74, 0x21])
        lab.run(until: pair.anchor(3))
        XCTAssertEqual(central.acl.map(\.time), [pair.anchor(1), pair.anchor(1)])
        XCTAssertEqual(central.acl.map(\.data.boundary), [.firstFlushable, .continuing])
        XCTAssertEqual(central.acl.map(\.data.handle), [pair.centralHandle, pair.centralHandle])
        XCTAssertEqual(central.acl.flatMap(\.data.data), [0x06, 0x00, 0x04, 0x00, 0x0B, 0x69, 0x6E, 0x69, 0x74, 0x21])
        XCTAssertEqual(peripheral.received.map(\.time), [pair.anchor(1)])
        XCTAssertEqual(peripheral.received.first?.frame, hex("04 13 05 01 01 00 02 00"))

        // Queued exactly at an idle anchor (event 3, not yet happened): goes in event 3 itself.
        central.clear()
        peripheral.clear()
        central.sendACL(handle: pair.centralHandle, [0x01])
        lab.run(until: pair.anchor(5))
        XCTAssertEqual(peripheral.acl.map(\.time), [pair.anchor(3)])
        XCTAssertEqual(central.completedPackets.map(\.time), [pair.anchor(3)])
        XCTAssertEqual(central.controller.counters.aclToHost, 2)
        XCTAssertEqual(peripheral.controller.counters.aclToHost, 2)
    }

    /// At most maxPDUsPerEvent per direction per event: 20 packets take 5 events, each with one
    /// Number Of Completed Packets of 4.
    func testBurstTakesConnectionEvents() {
        var model = AirModel()
        model.aclBufferCount = 32
        let lab = TestLab(model: model)
        let pair = lab.connectedPair(intervalUnits: 0x0010)   // 20 ms
        lab.run(until: pair.anchor(2) + .milliseconds(5))
        for i in 0..<20 { pair.central.sendACL(handle: pair.centralHandle, [UInt8(i)]) }
        lab.run(until: pair.anchor(20))

        let received = pair.peripheral.acl
        XCTAssertEqual(received.map(\.data.data), (0..<20).map { [UInt8($0)] })
        for (index, item) in received.enumerated() {
            XCTAssertEqual(item.time, pair.anchor(3 + Int64(index / 4)))
        }
        XCTAssertEqual(pair.central.completedPackets.map(\.time), (3...7).map { pair.anchor(Int64($0)) })
        XCTAssertTrue(pair.central.completedPackets.allSatisfy { $0.entries == [CompletedPackets(handle: pair.centralHandle, count: 4)] })
    }

    /// In one event the central's packets reach the peripheral first, then the peripheral's reach the central.
    func testBothDirectionsInOneEvent() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        for i in 0..<2 { pair.central.sendACL(handle: pair.centralHandle, [0xC0, UInt8(i)]) }
        for i in 0..<3 { pair.peripheral.sendACL(handle: pair.peripheralHandle, [0xE0, UInt8(i)]) }
        var order: [String] = []
        pair.central.onFrame = { _, f in order.append("central \(f[0] == 2 ? "acl" : "nocp")") }
        pair.peripheral.onFrame = { _, f in order.append("peripheral \(f[0] == 2 ? "acl" : "nocp")") }
        lab.run(until: pair.anchor(1))
        XCTAssertEqual(pair.peripheral.acl.map(\.data.data), [[0xC0, 0], [0xC0, 1]])
        XCTAssertEqual(pair.central.acl.map(\.data.data), [[0xE0, 0], [0xE0, 1], [0xE0, 2]])
        XCTAssertTrue((pair.central.received + pair.peripheral.received).allSatisfy { $0.time == pair.anchor(0) })
        XCTAssertEqual(pair.central.completedPackets.map(\.entries), [[CompletedPackets(handle: 1, count: 2)]])
        XCTAssertEqual(pair.peripheral.completedPackets.map(\.entries), [[CompletedPackets(handle: 1, count: 3)]])
        XCTAssertEqual(order, ["peripheral acl", "peripheral acl", "peripheral nocp",
                               "central nocp", "central acl", "central acl", "central acl"])
    }

    /// A host may answer from inside `toHost`: the answer goes in the next connection event.
    func testAnswerFromInsideToHostGoesInTheNextEvent() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        pair.peripheral.onFrame = { _, frame in
            if frame[0] == 2 { pair.peripheral.sendACL(handle: pair.peripheralHandle, Array(frame[5...]).reversed()) }
        }
        pair.central.sendACL(handle: pair.centralHandle, [1, 2, 3])
        lab.run(until: pair.anchor(3))
        XCTAssertEqual(pair.central.acl.map(\.time), [pair.anchor(1)])
        XCTAssertEqual(pair.central.acl.first?.data.data, [3, 2, 1])
    }

    /// The host may have at most Total_Num_LE_ACL_Data_Packets (8) unacknowledged; more is dropped.
    func testFlowControlViolationIsDropped() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        for i in 0..<9 { pair.central.sendACL(handle: pair.centralHandle, [UInt8(i)]) }
        lab.settle()
        // Data Buffer Overflow (7.7.26), Link_Type ACL.
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 1a 01 01")])
        XCTAssertEqual(pair.central.controller.counters.aclDroppedBufferOverflow, 1)
        lab.run(until: pair.anchor(2))
        XCTAssertEqual(pair.peripheral.acl.map(\.data.data), (0..<8).map { [UInt8($0)] })
        XCTAssertEqual(pair.peripheral.acl.map(\.time), Array(repeating: pair.anchor(0), count: 4) + Array(repeating: pair.anchor(1), count: 4))
        // Credits came back: the host may send again.
        pair.central.sendACL(handle: pair.centralHandle, [0x99])
        lab.run(until: pair.anchor(3))
        XCTAssertEqual(pair.peripheral.acl.last?.data.data, [0x99])
        XCTAssertEqual(pair.central.controller.counters.aclDroppedBufferOverflow, 1)
    }

    func testPacketsTheHostMayNotSendAreDropped() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        let h = pair.centralHandle
        pair.central.sendACL(handle: h, [UInt8](repeating: 0xAB, count: 28))                 // > 27 octets
        pair.central.sendACL(handle: h, boundary: .firstFlushable, [0x01])                   // PB 0b10
        pair.central.sendACL(handle: h, boundary: .complete, [0x01])                         // PB 0b11
        pair.central.controller.receive(fromHost: hex("02 01 40 01 00 aa"))                  // BC 0b01
        pair.central.controller.receive(fromHost: hex("02 01 00 05 00 aa"))                  // length says 5, carries 1
        pair.central.sendACL(handle: 0x0042, [0x01])                                         // unknown handle
        pair.central.sendACL(handle: h, [UInt8](repeating: 0xCD, count: 27))                 // fine
        lab.run(until: pair.anchor(2))
        let counters = pair.central.controller.counters
        XCTAssertEqual(counters.aclDroppedTooLong, 1)
        XCTAssertEqual(counters.aclDroppedBadFlags, 3)
        XCTAssertEqual(counters.aclDroppedMalformed, 1)
        XCTAssertEqual(counters.aclDroppedUnknownHandle, 1)
        XCTAssertEqual(counters.aclFromHost, 1)
        XCTAssertEqual(pair.peripheral.acl.map(\.data.data), [[UInt8](repeating: 0xCD, count: 27)])
    }

    /// With peripheral latency 3 the peripheral listens on every 4th event, so the central's
    /// data waits for one; the peripheral's own data goes at the next event.
    func testPeripheralLatencyDelaysCentralTraffic() {
        let lab = TestLab()
        let pair = lab.connectedPair(intervalUnits: 0x0018, latency: 3, timeout: 0x00C8)
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        pair.peripheral.sendACL(handle: pair.peripheralHandle, [0x02])
        lab.run(until: pair.anchor(2) + .milliseconds(1))
        XCTAssertEqual(pair.central.acl.map(\.time), [pair.anchor(2)])
        XCTAssertEqual(pair.peripheral.acl.map(\.time), [pair.anchor(2)], "the peripheral woke to send, so it also received")
        pair.central.sendACL(handle: pair.centralHandle, [0x03])
        lab.run(until: pair.anchor(9))
        XCTAssertEqual(pair.peripheral.acl.map(\.time), [pair.anchor(2), pair.anchor(4)])
    }
}

import BLERuntime
import HCI
import Transport
import XCTest

/// `PacketLog.serialized` is what determinism checks compare: equal runs give equal bytes, and
/// any difference in time, direction or a single octet shows.
final class PacketLogTests: XCTestCase {
    private func log(_ packets: [LoggedPacket]) -> PacketLog {
        let log = PacketLog()
        for p in packets { log.record(p) }
        return log
    }

    private let reset = LoggedPacket(time: Instant(nanoseconds: 1_500_000), direction: .hostToController,
                                     frame: [0x01, 0x03, 0x0c, 0x00])
    private let resetComplete = LoggedPacket(time: Instant(nanoseconds: 1_500_000), direction: .controllerToHost,
                                             frame: [0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00])

    func testSerializedLayout() {
        XCTAssertEqual(log([resetComplete]).serialized, [
            0x60, 0xe3, 0x16, 0x00, 0x00, 0x00, 0x00, 0x00,   // time 1 500 000 ns, little-endian
            0x01,                                             // controller → host
            0x07, 0x00, 0x00, 0x00,                           // frame length
            0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00,         // the H4 frame
        ])
    }

    func testEqualLogsSerializeEqually() {
        XCTAssertEqual(log([reset, resetComplete]).serialized, log([reset, resetComplete]).serialized)
        XCTAssertEqual(log([]).serialized, [])
    }

    func testOneDifferentOctetChangesTheSerialization() {
        var changed = resetComplete
        changed.frame[6] = 0x0c   // Status: Command Disallowed instead of success
        XCTAssertNotEqual(log([reset, resetComplete]).serialized, log([reset, changed]).serialized)
    }

    func testTimeDirectionAndOrderChangeTheSerialization() {
        let base = log([reset, resetComplete]).serialized
        var later = resetComplete
        later.time = later.time + .nanoseconds(1)
        XCTAssertNotEqual(base, log([reset, later]).serialized)

        var turned = resetComplete
        turned.direction = .hostToController
        XCTAssertNotEqual(base, log([reset, turned]).serialized)

        XCTAssertNotEqual(base, log([resetComplete, reset]).serialized)
    }

    func testFrameBoundariesAreKept() {
        // The same octets split differently between two frames must not serialize alike.
        let a = LoggedPacket(time: .zero, direction: .controllerToHost, frame: [0x02, 0x01])
        let b = LoggedPacket(time: .zero, direction: .controllerToHost, frame: [0x20])
        let c = LoggedPacket(time: .zero, direction: .controllerToHost, frame: [0x02])
        let d = LoggedPacket(time: .zero, direction: .controllerToHost, frame: [0x01, 0x20])
        XCTAssertNotEqual(log([a, b]).serialized, log([c, d]).serialized)
    }

    func testRemoveAllEmptiesTheLog() {
        let l = log([reset])
        l.removeAll()
        XCTAssertEqual(l.packets, [])
        XCTAssertEqual(l.serialized, [])
    }

    /// With a window the log keeps the latest packets only (between `window` and twice that), the
    /// same packets in the same order as the tail of a full log; observers see every packet.
    func testAWindowKeepsTheLatestPackets() {
        let full = PacketLog(), windowed = PacketLog()
        windowed.window = 8
        var observed = 0
        windowed.observe { _ in observed += 1 }
        for k in 0..<100 {
            let p = LoggedPacket(time: Instant(nanoseconds: Int64(k)), direction: .controllerToHost, frame: [0x04, UInt8(k)])
            full.record(p)
            windowed.record(p)
            XCTAssertGreaterThanOrEqual(windowed.packets.count, min(k + 1, 8))
            XCTAssertLessThan(windowed.packets.count, 16)
            XCTAssertEqual(windowed.packets, Array(full.packets.suffix(windowed.packets.count)))
        }
        XCTAssertEqual(observed, 100)
        XCTAssertEqual(full.packets.count, 100)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
@testable import Transport
import XCTest

/// The socket options RootCanal needs from a client (docs/tiers.md, "Latency: RootCanal and
/// Nagle"): TCP_NODELAY on the socket, and TCP_QUICKACK armed before every recv(2), since the
/// kernel does not keep it.
final class SocketH4TransportOptionTests: XCTestCase {
    private func intOption(_ fd: Int32, _ name: Int32) -> Int32 {
        var value: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        XCTAssertEqual(getsockopt(fd, Int32(IPPROTO_TCP), name, &value, &length), 0, String(cString: strerror(errno)))
        return value
    }

    /// Sends `count` Resets and runs the loop until every Command Complete is back.
    private func exchange(_ client: SocketH4Transport, _ loop: SystemEventLoop, count: Int) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        client.onFrame = { frames.append($0) }
        for _ in 0..<count { client.send(FakeH4Controller.reset) }
        XCTAssertTrue(loop.run(until: loop.now + .seconds(2)) { frames.count == count }, "answers: \(frames.count) of \(count)")
        return frames
    }

    func testTCPSetsNoDelayAndArmsQuickAckBeforeEveryRead() throws {
        let loop = SystemEventLoop()
        let fake = try FakeH4Controller(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0))
        let client = try SocketH4Transport.connect(to: fake.endpoint, on: loop)
        defer { client.close() }
        XCTAssertEqual(intOption(client.descriptor, TCP_NODELAY), 1, "TCP_NODELAY")

        let frames = exchange(client, loop, count: 5)
        XCTAssertEqual(frames, Array(repeating: FakeH4Controller.resetComplete, count: 5))
        XCTAssertGreaterThan(client.readCount, 0)
        // Every recv(2) is preceded by an arm: the ones that returned data and the last one of
        // each turn, which found nothing (EAGAIN).
        XCTAssertGreaterThan(client.quickAckArmCount, client.readCount, "recv calls with TCP_QUICKACK armed")

        // The option is really set when armed (the kernel reads it back as 1).
        XCTAssertTrue(client.armQuickAck())
        XCTAssertEqual(intOption(client.descriptor, TCP_QUICKACK), 1, "TCP_QUICKACK right after arming")
    }

    func testUnixSocketsNeedNoTCPOptions() throws {
        let loop = SystemEventLoop()
        let fake = try FakeH4Controller(loop: loop, endpoint: .unix(path: temporarySocketPath(self, "opts")))
        let client = try SocketH4Transport.connect(to: fake.endpoint, on: loop)
        defer { client.close() }
        _ = exchange(client, loop, count: 3)
        XCTAssertGreaterThan(client.readCount, 0)
        XCTAssertEqual(client.quickAckArmCount, 0)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import Transport
import XCTest

/// Writes never block the loop: what the socket does not take waits in the transport's buffer,
/// drained when the socket is writable; a peer that stops reading for good ends the transport at
/// its limit. And nothing a peer sends crashes or hangs the client.
final class SocketH4BackPressureTests: XCTestCase {
    private var loop: SystemEventLoop!

    override func setUp() {
        loop = SystemEventLoop()
    }

    private func wait(_ what: String, seconds: Int64 = 5, file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        XCTAssertTrue(loop.run(until: loop.now + .seconds(seconds), orUntil: condition), "timed out waiting for \(what)", file: file, line: line)
    }

    /// A server whose connections record what they receive, and the one client connected to it.
    private func pair(_ endpoint: SocketEndpoint, writeBufferLimit: Int = SocketH4Transport.defaultWriteBufferLimit)
        throws -> (server: H4SocketServer, client: SocketH4Transport, record: ClientRecord, received: () -> [[UInt8]]) {
        let server = try H4SocketServer(listeningOn: endpoint, loop: loop)
        var received: [[UInt8]] = []
        server.onConnection = { connection in connection.onFrame = { received.append($0) } }
        let client = SocketH4Transport(connectingTo: server.endpoint, loop: loop, timeout: .seconds(2), writeBufferLimit: writeBufferLimit)
        let record = ClientRecord(client)
        wait("the connection") { record.connected == 1 && !server.connections.isEmpty }
        return (server, client, record, { received })
    }

    /// An ACL packet of 1021 octets of payload whose first four octets number it.
    private func aclPacket(_ n: Int) -> [UInt8] {
        var frame: [UInt8] = [0x02, 0x40, 0x00, 0xFD, 0x03]   // handle 0x040, 1021 octets
        frame += withUnsafeBytes(of: UInt32(n).littleEndian) { Array($0) }
        frame += [UInt8](repeating: UInt8(n & 0xFF), count: 1021 - 4)
        return frame
    }

    private func checkBufferingWhileThePeerIsSlow(_ endpoint: SocketEndpoint) throws {
        let (server, client, record, received) = try pair(endpoint)
        let serverSide = server.connections[0]
        serverSide.readsPaused = true
        // 6 MiB: more than the kernel's socket buffers on either side, less than our limit.
        let count = 6 * 1024
        let limit = SocketH4Transport.defaultWriteBufferLimit
        var sent = 0
        var peakBuffered = 0
        let start = loop.now
        while sent < count {
            // Send while the buffer is under half its limit, then let the peer read a little.
            while sent < count, client.pendingWriteCount < limit / 2 {
                client.send(aclPacket(sent))
                sent += 1
            }
            peakBuffered = max(peakBuffered, client.pendingWriteCount)
            serverSide.readsPaused = false
            wait("the buffer to drain below a quarter") { client.pendingWriteCount < limit / 4 }
            serverSide.readsPaused = true
        }
        XCTAssertGreaterThan(peakBuffered, 0, "the socket should have pushed back")
        XCTAssertLessThan(loop.now - start, .seconds(10))
        serverSide.readsPaused = false
        wait("every frame") { received().count == count }
        XCTAssertEqual(client.pendingWriteCount, 0)
        XCTAssertEqual(client.bytesSent, count * aclPacket(0).count)
        let numbers = received().map { Int(UInt32($0[5]) | UInt32($0[6]) << 8 | UInt32($0[7]) << 16 | UInt32($0[8]) << 24) }
        XCTAssertEqual(numbers, Array(0 ..< count), "in order, none lost or repeated")
        XCTAssertEqual(received().last, aclPacket(count - 1))
        XCTAssertEqual(record.closes, [])
        XCTAssertEqual(loop.watchCount, 3, "listener and both sides' reads; no write watch once drained")
    }

    func testWritesWaitInTheBufferWhileAUnixPeerIsSlow() throws {
        try checkBufferingWhileThePeerIsSlow(.unix(path: temporarySocketPath(self, "slow")))
    }

    func testWritesWaitInTheBufferWhileATCPPeerIsSlow() throws {
        try checkBufferingWhileThePeerIsSlow(.tcp(host: "127.0.0.1", port: 0))
    }

    func testAPeerThatNeverReadsEndsTheTransportAtTheLimit() throws {
        let limit = 64 * 1024
        let (server, client, record, _) = try pair(.unix(path: temporarySocketPath(self, "stuck")), writeBufferLimit: limit)
        server.connections[0].readsPaused = true
        var sent = 0
        let start = loop.now
        while client.state == .open, sent < 100_000 {   // never blocks: each send returns at once
            client.send(aclPacket(sent))
            sent += 1
        }
        XCTAssertEqual(client.state, .closed)
        XCTAssertLessThan(loop.now - start, .seconds(5))
        wait("onClose") { !record.closes.isEmpty }
        let endpoint = server.endpoint.description
        guard case let .system(name, operation, code, message)? = record.closes.first else { return XCTFail("\(record.closes)") }
        XCTAssertEqual(name, endpoint)
        XCTAssertEqual(operation, "send")
        XCTAssertEqual(code, ENOBUFS)
        XCTAssertTrue(message.hasPrefix("the peer is not reading: "), message)
        XCTAssertTrue(message.hasSuffix(" octets wait to be sent, over the limit of 65536"), message)
        XCTAssertTrue(record.closes[0].description.hasPrefix("\(endpoint): send failed: the peer is not reading: "))
        XCTAssertEqual(record.closes.count, 1)
        client.send(aclPacket(0))
        XCTAssertEqual(client.pendingWriteCount, 0, "a closed transport keeps nothing")
    }

    func testAPausedReaderPushesBackOnThePeer() throws {
        let (server, client, record, received) = try pair(.unix(path: temporarySocketPath(self, "pause")))
        client.readsPaused = true
        server.connections[0].send(FakeH4Controller.resetComplete)
        loop.run(until: loop.now + .milliseconds(20))
        XCTAssertEqual(record.frames, [], "nothing is read while paused")
        client.readsPaused = false
        wait("the frame") { !record.frames.isEmpty }
        XCTAssertEqual(record.frames, [FakeH4Controller.resetComplete])
        XCTAssertEqual(received(), [])
    }

    // MARK: Whatever the peer sends

    func testRandomStreamsNeverCrashOrHang() throws {
        let server = try H4SocketServer(listeningOn: .unix(path: temporarySocketPath(self, "fuzz")), loop: loop)
        var random = SeededRandom(seed: 0x5EED, stream: "h4-fuzz")
        var outcomes: [String: Int] = [:]
        for round in 0 ..< 60 {
            let client = SocketH4Transport(connectingTo: server.endpoint, loop: loop, timeout: .seconds(2))
            let record = ClientRecord(client)
            wait("connection \(round)") { record.connected == 1 && server.connections.count == 1 }
            let peer = server.connections[0]
            // Valid frames with random lengths, then (mostly) random octets, cut at random.
            var bytes: [UInt8] = []
            for _ in 0 ..< random.int(in: 0 ... 3) {
                let length = Int(random.int(in: 0 ... 255))
                bytes += [0x04, 0x3E, UInt8(length)] + (0 ..< length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            bytes += (0 ..< random.int(in: 0 ... 600)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            var offset = 0
            while offset < bytes.count {
                let piece = min(bytes.count - offset, Int(random.int(in: 1 ... 64)))
                peer.sendRaw(Array(bytes[offset ..< offset + piece]))
                offset += piece
                loop.run(until: loop.now, orUntil: { false })   // one turn: the client may read now
            }
            peer.close()
            wait("round \(round) to end") { !record.closes.isEmpty }
            withExtendedLifetime(client) {}
            XCTAssertEqual(record.closes.count, 1)
            XCTAssertEqual(record.frames.flatMap { $0 }, Array(bytes.prefix(record.frames.reduce(0) { $0 + $1.count })),
                           "frames are a prefix of the stream")
            switch record.closes[0] {
            case .closed: outcomes["closed", default: 0] += 1
            case .malformed: outcomes["malformed", default: 0] += 1
            case .system: outcomes["system", default: 0] += 1
            }
            wait("the server to drop connection \(round)") { server.connections.isEmpty }
        }
        XCTAssertGreaterThan(outcomes["malformed", default: 0], 0, "\(outcomes)")
        XCTAssertEqual(loop.watchCount, 1, "only the listener is left")
    }
}

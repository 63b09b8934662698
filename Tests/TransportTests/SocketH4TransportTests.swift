#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import Transport
import XCTest

/// `SocketH4Transport` against a fake controller behind `H4SocketServer`, on unix sockets and on
/// TCP 127.0.0.1, all on one `SystemEventLoop` with short deadlines. Nothing sleeps: each test
/// runs the loop until what it waits for has happened.
final class SocketH4TransportTests: XCTestCase {
    private var loop: SystemEventLoop!
    /// Clients stay alive until the test ends (dropping the last reference closes the socket).
    private var clients: [SocketH4Transport] = []

    override func setUp() {
        loop = SystemEventLoop()
        clients = []
    }

    /// Runs the loop until `condition` holds, failing after two seconds.
    private func wait(_ what: String, file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        XCTAssertTrue(loop.run(until: loop.now + .seconds(2), orUntil: condition), "timed out waiting for \(what)", file: file, line: line)
    }

    private func unixController(_ name: String = "h4") throws -> FakeH4Controller {
        try FakeH4Controller(loop: loop, endpoint: .unix(path: temporarySocketPath(self, name)))
    }

    private func tcpController() throws -> FakeH4Controller {
        try FakeH4Controller(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0))
    }

    /// Connects a client to `fake` and waits until the server side has its connection.
    private func connect(to fake: FakeH4Controller, writeBufferLimit: Int = SocketH4Transport.defaultWriteBufferLimit)
        -> (SocketH4Transport, ClientRecord) {
        let client = SocketH4Transport(connectingTo: fake.endpoint, loop: loop, timeout: .seconds(2), writeBufferLimit: writeBufferLimit)
        let record = ClientRecord(client)
        clients.append(client)
        wait("the connection") { record.connected == 1 && fake.connection != nil }
        return (client, record)
    }

    // MARK: A host talking to a controller

    private func checkResetIsAnswered(_ fake: FakeH4Controller, file: StaticString = #filePath, line: UInt = #line) {
        let client = SocketH4Transport(connectingTo: fake.endpoint, loop: loop, timeout: .seconds(2))
        let record = ClientRecord(client)
        client.send(FakeH4Controller.reset)   // before the connection is up: it waits in the buffer
        wait("Command Complete", file: file, line: line) { !record.frames.isEmpty }
        XCTAssertEqual(record.frames, [FakeH4Controller.resetComplete], file: file, line: line)
        XCTAssertEqual(fake.received, [FakeH4Controller.reset], file: file, line: line)
        XCTAssertEqual(record.connected, 1, file: file, line: line)
        XCTAssertEqual(client.state, .open, file: file, line: line)
        XCTAssertEqual(client.endpointDescription, fake.endpoint.description, file: file, line: line)
        client.close()
    }

    func testResetIsAnsweredOverAUnixSocket() throws {
        let fake = try unixController()
        checkResetIsAnswered(fake)
        XCTAssertTrue(fake.endpoint.description.hasPrefix("unix /tmp/blelab-"))
    }

    func testResetIsAnsweredOverTCPOnAnEphemeralPort() throws {
        let fake = try tcpController()
        guard case let .tcp(host, port) = fake.endpoint else { return XCTFail("\(fake.endpoint)") }
        XCTAssertEqual(host, "127.0.0.1")
        XCTAssertNotEqual(port, 0, "the server reports the port it got")
        checkResetIsAnswered(fake)
    }

    func testAHostNameTriesEachAddress() throws {
        // The server listens on 127.0.0.1 only; "localhost" may resolve to ::1 first.
        let fake = try tcpController()
        guard case let .tcp(_, port) = fake.endpoint else { return XCTFail() }
        let client = try SocketH4Transport.connect(to: .tcp(host: "localhost", port: port), on: loop, timeout: .seconds(2))
        let record = ClientRecord(client)
        client.send(FakeH4Controller.reset)
        wait("Command Complete") { !record.frames.isEmpty }
        XCTAssertEqual(record.frames, [FakeH4Controller.resetComplete])
    }

    func testTheConnectHelperReturnsAnOpenTransport() throws {
        let fake = try unixController()
        let client = try SocketH4Transport.connect(to: fake.endpoint, on: loop, timeout: .seconds(2))
        XCTAssertEqual(client.state, .open)
        let record = ClientRecord(client)
        client.send(FakeH4Controller.reset)
        wait("Command Complete") { !record.frames.isEmpty }
        XCTAssertEqual(record.frames, [FakeH4Controller.resetComplete])
    }

    func testManyCommandsAreAnsweredInOrder() throws {
        let fake = try tcpController()
        let (client, record) = connect(to: fake)
        let opcodes: [[UInt8]] = (0..<200).map { [UInt8($0 & 0xFF), 0x0C] }
        for opcode in opcodes { client.send([0x01] + opcode + [0x00]) }
        wait("200 answers") { record.frames.count == 200 }
        XCTAssertEqual(record.frames.map { Array($0[4...5]) }, opcodes)
        XCTAssertEqual(record.frames.filter { $0[6] == 0 }.count, 1, "only Reset (0x0C03) is known")
    }

    // MARK: Frames arrive whole however the stream is cut

    /// An event, a 30-octet ACL packet and another event.
    private let stream: [[UInt8]] = [
        FakeH4Controller.resetComplete,
        [0x02, 0x40, 0x20, 0x1A, 0x00] + Array(0 ..< 26),
        [0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00],
    ]

    private func checkByteByByte(_ fake: FakeH4Controller, everyByteIsARead: Bool) {
        let (client, record) = connect(to: fake)
        let bytes = stream.flatMap { $0 }
        fake.dribble(bytes, on: fake.connection!)
        wait("three frames") { record.frames.count == 3 }
        XCTAssertEqual(record.frames, stream)
        XCTAssertEqual(client.bytesReceived, bytes.count)
        if everyByteIsARead { XCTAssertEqual(client.readCount, bytes.count, "each byte should have been its own read") }
        XCTAssertEqual(record.closes, [])
    }

    func testFramesSentByteByByteArriveWholeOverAUnixSocket() throws {
        checkByteByByte(try unixController(), everyByteIsARead: true)
    }

    func testFramesSentByteByByteArriveWholeOverTCP() throws {
        checkByteByByte(try tcpController(), everyByteIsARead: false)
    }

    func testFramesJoinedInOneWriteArriveSeparately() throws {
        let fake = try unixController()
        let (client, record) = connect(to: fake)
        fake.connection!.sendRaw(stream.flatMap { $0 })
        wait("three frames") { record.frames.count == 3 }
        XCTAssertEqual(record.frames, stream)
        XCTAssertEqual(client.readCount, 1)
    }

    func testAnswersByteByByteAndJoined() throws {
        let fake = try unixController()
        fake.followUps = [[0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00]]
        let (client, record) = connect(to: fake)
        for delivery in [FakeH4Controller.Delivery.byteByByte, .joined, .whole] {
            fake.delivery = delivery
            record.frames = []
            client.send(FakeH4Controller.reset)
            wait("answers \(delivery)") { record.frames.count == 2 }
            XCTAssertEqual(record.frames, [FakeH4Controller.resetComplete] + fake.followUps, "\(delivery)")
        }
    }

    func testAStreamSplitAtEveryOffsetGivesTheSameFrames() throws {
        let fake = try tcpController()
        let (_, record) = connect(to: fake)
        let bytes = stream.flatMap { $0 }
        for split in 1 ..< bytes.count {
            record.frames = []
            fake.connection!.sendRaw(Array(bytes[..<split]))
            loop.run(until: loop.now + .milliseconds(1))   // let the first part be read on its own
            fake.connection!.sendRaw(Array(bytes[split...]))
            wait("frames split at \(split)") { record.frames.count == 3 }
            XCTAssertEqual(record.frames, stream, "split at \(split)")
        }
    }

    // MARK: Endings

    func testEndOfStreamBetweenFramesIsClosedExactlyOnce() throws {
        let fake = try unixController()
        let (client, record) = connect(to: fake)
        fake.connection!.send(FakeH4Controller.resetComplete)
        fake.connection!.close()
        wait("the close") { !record.closes.isEmpty }
        loop.run(until: loop.now + .milliseconds(10))
        XCTAssertEqual(record.frames, [FakeH4Controller.resetComplete], "what came before the end is delivered")
        XCTAssertEqual(record.closes, [.closed(endpoint: fake.endpoint.description)])
        XCTAssertEqual(record.closes.first?.description, "\(fake.endpoint.description): connection closed")
        XCTAssertEqual(client.state, .closed)
        client.close()
        client.send(FakeH4Controller.reset)
        loop.run(until: loop.now + .milliseconds(10))
        XCTAssertEqual(record.closes.count, 1, "onClose is called once")
        XCTAssertEqual(loop.watchCount, 1, "only the server's listener is still watched")
    }

    func testAPeerClosingInTheMiddleOfAPacketIsMalformedWithThePendingBytes() throws {
        let fake = try tcpController()
        let (_, record) = connect(to: fake)
        fake.connection!.sendRaw(FakeH4Controller.resetComplete + [0x02, 0x40, 0x20, 0x1A, 0x00, 0xAA])
        loop.run(until: loop.now + .milliseconds(5))
        fake.connection!.close()
        wait("the close") { !record.closes.isEmpty }
        let endpoint = fake.endpoint.description
        XCTAssertEqual(record.frames, [FakeH4Controller.resetComplete])
        XCTAssertEqual(record.closes, [.malformed(endpoint: endpoint, detail:
            "connection closed in the middle of a packet: 6 octet(s) of an unfinished ACL at stream offset 7: 02 40 20 1a 00 aa")])
    }

    func testAGarbageIndicatorIsMalformedNamingTheEndpointOffsetAndBytes() throws {
        let fake = try unixController()
        let (client, record) = connect(to: fake)
        let garbage: [UInt8] = [0xFF] + Array(0xE0 ... 0xF4)   // 22 octets
        fake.connection!.sendRaw(FakeH4Controller.resetComplete + garbage)
        fake.connection!.send(FakeH4Controller.resetComplete)
        wait("the failure") { !record.closes.isEmpty }
        let endpoint = fake.endpoint.description
        XCTAssertEqual(record.frames, [FakeH4Controller.resetComplete], "frames before the garbage are delivered, none after")
        XCTAssertEqual(record.closes, [.malformed(endpoint: endpoint, detail:
            "unknown H4 packet indicator 0xff at stream offset 7: ff e0 e1 e2 e3 e4 e5 e6 e7 e8 e9 ea eb ec ed ee … "
                + "(an H4 packet starts with 01 command, 02 ACL, 03 SCO, 04 event or 05 ISO)")])
        XCTAssertEqual(record.closes.first?.description,
                       "\(endpoint): malformed HCI stream: unknown H4 packet indicator 0xff at stream offset 7: "
                        + "ff e0 e1 e2 e3 e4 e5 e6 e7 e8 e9 ea eb ec ed ee … (an H4 packet starts with 01 command, 02 ACL, 03 SCO, 04 event or 05 ISO)")
        XCTAssertEqual(client.state, .closed)
        wait("the server side to see the client go") { fake.server.connections.isEmpty }
    }

    func testAGarbageIndicatorSentByteByByteIsFoundAtItsOffset() throws {
        let fake = try unixController()
        let (_, record) = connect(to: fake)
        fake.dribble(stream[0] + stream[1] + [0x00, 0x04], on: fake.connection!)
        wait("the failure") { !record.closes.isEmpty }
        XCTAssertEqual(record.frames, [stream[0], stream[1]])
        XCTAssertEqual(record.closes, [.malformed(endpoint: fake.endpoint.description, detail:
            "unknown H4 packet indicator 0x00 at stream offset 38: 00 (an H4 packet starts with 01 command, 02 ACL, 03 SCO, 04 event or 05 ISO)")])
    }

    func testAResetConnectionIsASystemErrorWithItsErrnoText() throws {
        // A TCP peer that closes with unread data answers with RST: the client's read fails.
        let fake = try tcpController()
        let (client, record) = connect(to: fake)
        fake.connection!.readsPaused = true
        client.send(FakeH4Controller.reset)
        loop.run(until: loop.now + .milliseconds(5))
        fake.connection!.close()
        wait("the failure") { !record.closes.isEmpty }
        let endpoint = fake.endpoint.description
        XCTAssertEqual(record.closes, [.system(endpoint: endpoint, operation: "read", errno: ECONNRESET, message: "Connection reset by peer")])
        XCTAssertEqual(record.closes.first?.description, "\(endpoint): read failed: Connection reset by peer (errno \(ECONNRESET))")
    }

    func testClosingTellsTheOwnerOnceAndTheServerSeesTheEnd() throws {
        let fake = try unixController()
        let (client, record) = connect(to: fake)
        var serverSaw: [TransportError] = []
        fake.connection!.onClose = { serverSaw.append($0) }
        client.close()
        client.close()
        wait("the server side to close") { !serverSaw.isEmpty }
        XCTAssertEqual(record.closes, [.closed(endpoint: fake.endpoint.description)])
        XCTAssertEqual(serverSaw.count, 1)
        XCTAssertTrue(fake.server.connections.isEmpty)
    }

    // MARK: Connecting

    func testConnectionRefusedOverTCPSaysSo() throws {
        let port = closedTCPPort()
        let endpoint = SocketEndpoint.tcp(host: "127.0.0.1", port: port)
        let client = SocketH4Transport(connectingTo: endpoint, loop: loop, timeout: .seconds(1))
        let record = ClientRecord(client)
        wait("the failure") { !record.closes.isEmpty }
        XCTAssertEqual(record.closes, [.system(endpoint: "tcp 127.0.0.1:\(port)", operation: "connect", errno: ECONNREFUSED,
                                               message: "Connection refused (is a controller listening there?)")])
        XCTAssertEqual(record.closes.first?.description,
                       "tcp 127.0.0.1:\(port): connect failed: Connection refused (is a controller listening there?) (errno \(ECONNREFUSED))")
        XCTAssertEqual(record.connected, 0)
        XCTAssertEqual(loop.watchCount, 0)
    }

    func testTheConnectHelperThrowsTheRefusal() {
        let port = closedTCPPort()
        XCTAssertThrowsError(try SocketH4Transport.connect(to: .tcp(host: "127.0.0.1", port: port), on: loop, timeout: .seconds(1))) { error in
            guard case let .system(_, operation, code, _)? = error as? TransportError else { return XCTFail("\(error)") }
            XCTAssertEqual(operation, "connect")
            XCTAssertEqual(code, ECONNREFUSED)
        }
    }

    func testAMissingUnixSocketSaysSo() {
        let path = "/tmp/blelab-no-such-socket-\(getpid())"
        let client = SocketH4Transport(connectingTo: .unix(path: path), loop: loop)
        let record = ClientRecord(client)
        wait("the failure") { !record.closes.isEmpty }
        XCTAssertEqual(record.closes.first?.description,
                       "unix \(path): connect failed: No such file or directory (no socket at that path: is the controller running?) (errno \(ENOENT))")
    }

    func testAUnixSocketNobodyListensOnIsRefused() {
        // A socket file left by a controller that died: bound, not listening.
        let path = temporarySocketPath(self, "dead")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        let client = SocketH4Transport(connectingTo: .unix(path: path), loop: loop)
        let record = ClientRecord(client)
        wait("the failure") { !record.closes.isEmpty }
        XCTAssertEqual(record.closes, [.system(endpoint: "unix \(path)", operation: "connect", errno: ECONNREFUSED,
                                               message: "Connection refused (is a controller listening there?)")])
    }

    func testAControllerThatNeverAnswersTimesOut() {
        let listener = makeUnacceptingListener(self)
        let endpoint = SocketEndpoint.tcp(host: "127.0.0.1", port: listener.port)
        // The first connection fills the backlog of 0; the second one's SYNs are dropped.
        let filler = SocketH4Transport(connectingTo: endpoint, loop: loop, timeout: .seconds(2))
        wait("the backlog to fill") { filler.state == .open }
        let start = loop.now
        let client = SocketH4Transport(connectingTo: endpoint, loop: loop, timeout: .milliseconds(150))
        let record = ClientRecord(client)
        client.send(FakeH4Controller.reset)
        wait("the timeout") { !record.closes.isEmpty }
        let waited = loop.now - start
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(150))
        XCTAssertLessThan(waited, .milliseconds(400))
        XCTAssertEqual(record.closes, [.system(endpoint: "tcp 127.0.0.1:\(listener.port)", operation: "connect", errno: ETIMEDOUT,
                                               message: "no answer within 150ms (is the controller up and accepting?)")])
        XCTAssertEqual(client.pendingWriteCount, 0, "what waited is dropped")
        filler.close()
    }

    func testATooLongUnixPathIsRefusedBeforeAnyCall() {
        let path = "/tmp/" + String(repeating: "x", count: 120)
        let client = SocketH4Transport(connectingTo: .unix(path: path), loop: loop)
        let record = ClientRecord(client)
        wait("the failure") { !record.closes.isEmpty }
        XCTAssertEqual(record.closes, [.system(endpoint: "unix \(path)", operation: "address", errno: ENAMETOOLONG,
                                               message: "unix socket path is 125 octets; the limit is 107")])
    }
}

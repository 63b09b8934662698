#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import Transport
import XCTest

/// `H4SocketServer` exposes controller-style sinks (frame in, frames out) to hosts that connect.
final class H4SocketServerTests: XCTestCase {
    private var loop: SystemEventLoop!

    override func setUp() {
        loop = SystemEventLoop()
    }

    private func wait(_ what: String, file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        XCTAssertTrue(loop.run(until: loop.now + .seconds(2), orUntil: condition), "timed out waiting for \(what)", file: file, line: line)
    }

    /// A controller double with the shape of `SimController`: `receive(fromHost:)` in, `toHost` out.
    private final class SinkController {
        let name: String
        var toHost: (([UInt8]) -> Void)?
        var received: [[UInt8]] = []
        var hostGone: TransportError?

        init(name: String) { self.name = name }

        func receive(fromHost frame: [UInt8]) {
            received.append(frame)
            // Answer every command with Command Complete carrying the controller's number as status.
            if frame.first == 0x01, frame.count >= 4 {
                toHost?([0x04, 0x0E, 0x04, 0x01, frame[1], frame[2], UInt8(name.utf8.last! - 0x30)])
            }
        }
    }

    func testEachConnectionGetsItsOwnController() throws {
        let server = try H4SocketServer(listeningOn: .tcp(host: "127.0.0.1", port: 0), loop: loop)
        var controllers: [SinkController] = []
        server.serveControllers { connection, toHost in
            let controller = SinkController(name: "c\(controllers.count + 1)")
            controller.toHost = toHost
            connection.onClose = { [unowned controller] in controller.hostGone = $0 }
            controllers.append(controller)
            return controller.receive(fromHost:)
        }
        let first = SocketH4Transport(connectingTo: server.endpoint, loop: loop)
        let second = SocketH4Transport(connectingTo: server.endpoint, loop: loop)
        let firstRecord = ClientRecord(first), secondRecord = ClientRecord(second)
        first.send(FakeH4Controller.reset)
        second.send(FakeH4Controller.reset)
        second.send([0x01, 0x01, 0x10, 0x00])   // Read Local Version Information
        wait("the answers") { firstRecord.frames.count == 1 && secondRecord.frames.count == 2 }
        XCTAssertEqual(controllers.count, 2)
        XCTAssertEqual(server.acceptedCount, 2)
        // Which controller answered which host shows in the status octet.
        XCTAssertEqual(Set(firstRecord.frames.map { $0[6] }).count, 1)
        XCTAssertEqual(Set(secondRecord.frames.map { $0[6] }).count, 1)
        XCTAssertNotEqual(firstRecord.frames[0][6], secondRecord.frames[0][6])
        XCTAssertEqual(controllers.map(\.received.count).sorted(), [1, 2])

        first.close()
        wait("the first controller to learn its host left") { controllers.contains { $0.hostGone != nil } }
        XCTAssertEqual(server.connections.count, 1)
        let gone = controllers.first { $0.hostGone != nil }!
        guard case let .closed(endpoint)? = gone.hostGone else { return XCTFail("\(String(describing: gone.hostGone))") }
        XCTAssertTrue(endpoint.hasPrefix("\(server.endpoint.description), connection "), endpoint)
        XCTAssertTrue(endpoint.contains(" from 127.0.0.1:"), endpoint)
    }

    func testAControllerEmittingAfterItsHostLeftIsHarmless() throws {
        let server = try H4SocketServer(listeningOn: .unix(path: temporarySocketPath(self, "late")), loop: loop)
        var emit: (([UInt8]) -> Void)?
        server.serveControllers { _, toHost in
            emit = toHost
            return { _ in }
        }
        let client = SocketH4Transport(connectingTo: server.endpoint, loop: loop)
        wait("the connection") { emit != nil }
        client.close()
        wait("the server to drop it") { server.connections.isEmpty }
        emit?(FakeH4Controller.resetComplete)   // no crash, nothing sent
        loop.run(until: loop.now + .milliseconds(5))
    }

    func testClosingTheServerClosesItsConnectionsAndRemovesTheSocketFile() throws {
        let path = temporarySocketPath(self, "close")
        let server = try H4SocketServer(listeningOn: .unix(path: path), loop: loop)
        XCTAssertEqual(access(path, F_OK), 0)
        let client = SocketH4Transport(connectingTo: server.endpoint, loop: loop)
        let record = ClientRecord(client)
        wait("the connection") { server.connections.count == 1 }
        server.close()
        XCTAssertFalse(server.isListening)
        XCTAssertNotEqual(access(path, F_OK), 0, "the socket file is gone")
        wait("the client to see the end") { !record.closes.isEmpty }
        XCTAssertEqual(record.closes, [.closed(endpoint: "unix \(path)")])
        XCTAssertEqual(client.state, .closed)
        XCTAssertEqual(loop.watchCount, 0)
    }

    func testAnOccupiedPathIsAClearError() throws {
        let path = temporarySocketPath(self, "busy")
        let first = try H4SocketServer(listeningOn: .unix(path: path), loop: loop)
        XCTAssertThrowsError(try H4SocketServer(listeningOn: .unix(path: path), loop: loop)) { error in
            XCTAssertEqual(error as? TransportError, .system(endpoint: "unix \(path)", operation: "bind", errno: EADDRINUSE,
                                                             message: "Address already in use (a file is already at that path: a stale socket? remove it)"))
        }
        XCTAssertTrue(first.isListening)
    }

    func testAnOccupiedPortIsAClearError() throws {
        let first = try H4SocketServer(listeningOn: .tcp(host: "127.0.0.1", port: 0), loop: loop)
        XCTAssertThrowsError(try H4SocketServer(listeningOn: first.endpoint, loop: loop)) { error in
            guard case let .system(endpoint, operation, code, _)? = error as? TransportError else { return XCTFail("\(error)") }
            XCTAssertEqual(endpoint, first.endpoint.description)
            XCTAssertEqual(operation, "bind")
            XCTAssertEqual(code, EADDRINUSE)
        }
    }

    func testTheServerSideReceivesWholeFramesSentByteByByte() throws {
        let server = try H4SocketServer(listeningOn: .unix(path: temporarySocketPath(self, "cmd")), loop: loop)
        var frames: [[UInt8]] = []
        server.onConnection = { $0.onFrame = { frames.append($0) } }
        let client = SocketH4Transport(connectingTo: server.endpoint, loop: loop)
        wait("the connection") { server.connections.count == 1 }
        let commands: [[UInt8]] = [FakeH4Controller.reset, [0x01, 0x01, 0x20, 0x08, 1, 2, 3, 4, 5, 6, 7, 8],
                                   [0x02, 0x40, 0x00, 0x03, 0x00, 9, 8, 7]]
        var bytes = commands.flatMap { $0 }
        func step() {
            guard !bytes.isEmpty else { return }
            client.sendRaw([bytes.removeFirst()])
            loop.execute(step)
        }
        step()
        wait("three frames") { frames.count == 3 }
        XCTAssertEqual(frames, commands)
    }
}

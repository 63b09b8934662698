#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import Transport
import XCTest

/// A fake controller behind `H4SocketServer`, for testing the socket transport end to end. It
/// answers every HCI command with Command Complete (status 0 for Reset, Unknown HCI Command for
/// anything it does not know), and can cut its output the ways a real byte stream may be cut.
final class FakeH4Controller {
    /// How the fake writes what it sends.
    enum Delivery {
        /// One write per frame.
        case whole
        /// One byte per write, one write per loop turn, so the client reads them one by one.
        case byteByByte
        /// Everything one answer produces in a single write.
        case joined
    }

    let loop: SystemEventLoop
    let server: H4SocketServer
    var delivery: Delivery = .whole
    /// Frames received from hosts, in arrival order, on any connection.
    private(set) var received: [[UInt8]] = []
    /// Extra frames sent after each Command Complete (e.g. a Number Of Completed Packets).
    var followUps: [[UInt8]] = []

    init(loop: SystemEventLoop, endpoint: SocketEndpoint) throws {
        self.loop = loop
        server = try H4SocketServer(listeningOn: endpoint, loop: loop)
        server.serveControllers { [unowned self] connection, toHost in
            return { frame in
                self.received.append(frame)
                self.answer(frame, on: connection)
            }
        }
    }

    var endpoint: SocketEndpoint { server.endpoint }
    /// The server side of the newest connection.
    var connection: SocketH4Transport? { server.connections.last }

    static let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    /// Command Complete for Reset: Num_HCI_Command_Packets 1, opcode 0x0C03, status 0.
    static let resetComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]

    private func answer(_ frame: [UInt8], on connection: SocketH4Transport) {
        guard frame.count >= 4, frame[0] == 0x01 else { return }   // ACL data is swallowed
        let known: Set<[UInt8]> = [[0x03, 0x0C]]
        let status: UInt8 = known.contains([frame[1], frame[2]]) ? 0x00 : 0x01
        emit([[0x04, 0x0E, 0x04, 0x01, frame[1], frame[2], status]] + followUps, on: connection)
    }

    /// Sends `frames` to the host the way `delivery` says.
    func emit(_ frames: [[UInt8]], on connection: SocketH4Transport) {
        switch delivery {
        case .whole: frames.forEach(connection.send)
        case .joined: connection.sendRaw(frames.flatMap { $0 })
        case .byteByByte: dribble(frames.flatMap { $0 }, on: connection)
        }
    }

    /// Writes `bytes` one per loop turn, then runs `then`.
    func dribble(_ bytes: [UInt8], on connection: SocketH4Transport, then: (() -> Void)? = nil) {
        var index = 0
        func step() {
            guard index < bytes.count, connection.state == .open else {
                then?()
                return
            }
            connection.sendRaw([bytes[index]])
            index += 1
            loop.execute(step)
        }
        step()
    }
}

/// A unique unix-socket path under /tmp (sun_path allows 107 octets), removed after the test.
func temporarySocketPath(_ test: XCTestCase, _ name: String = "h4") -> String {
    let path = "/tmp/blelab-\(getpid())-\(name)-\(UInt32.random(in: 0 ... .max)).sock"
    test.addTeardownBlock { unlink(path) }
    return path
}

/// A TCP listener on 127.0.0.1 that never accepts, with a backlog of 0: once one connection
/// fills its queue, further SYNs are dropped and connects hang (what a wedged controller does).
func makeUnacceptingListener(_ test: XCTestCase) -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    listen(fd, 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    test.addTeardownBlock { close(fd) }
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// A TCP port on 127.0.0.1 that nothing listens on (bound, then released).
func closedTCPPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return UInt16(bigEndian: address.sin_port)
}

/// What a client transport saw, in order.
final class ClientRecord {
    var frames: [[UInt8]] = []
    var closes: [TransportError] = []
    var connected = 0

    init(_ transport: SocketH4Transport) {
        transport.onFrame = { [unowned self] in self.frames.append($0) }
        transport.onClose = { [unowned self] in self.closes.append($0) }
        transport.onConnect = { [unowned self] in self.connected += 1 }
    }
}

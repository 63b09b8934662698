import BLELab
import BLERuntime
import LabTiers
import Transport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The socket connector against a real RootCanal.
final class ConnectorTests: TierTestCase {
    /// RootCanal listens with a backlog of 1 and accepts on its own schedule; a connection made
    /// while its accept queue is full has its SYN dropped and retried after 1 s. The connector
    /// waits for the queue to empty first, so six devices in a row connect in well under that.
    func testManyDevicesConnectToRootCanalWithoutSYNRetries() throws {
        let backend = try Tiers.backend("rootcanal")
        try backend.prepare(deviceCount: 6)
        defer { backend.shutDown() }
        for round in 0..<10 {
            let lab = try backend.makeLab(seed: UInt64(round))
            defer { lab.shutDown() }
            var times: [Double] = []
            for i in 0..<6 {
                let start = WallClock.seconds()
                try lab.addDevice("device\(i)")
                times.append(WallClock.seconds() - start)
            }
            XCTAssertLessThan(times.max() ?? 0, 0.5, "round \(round): connect times \(times.map { Int($0 * 1000) }) ms")
            try lab.powerOn()
            // Each connection is its own controller, with its own address.
            XCTAssertEqual(Set(lab.devices.map(\.address)).count, 6)
        }
    }

    /// A host closes its connection to a Bumble endpoint and the next one connects at once (as
    /// successive labs do): the endpoint, which takes one host at a time, must take the new host
    /// rather than refuse it as a second one. Whether asyncio sees the old connection's end
    /// before the new connection depends on timing (on a busy machine it often does not); here
    /// the controllers are stopped (SIGSTOP) while the old host sends a last command and closes
    /// and the new one connects and sends its first, so all of it waits for the same turn of
    /// its loop. Before the fix in bumble_controllers.py, 28 of these 30 new hosts were refused.
    func testABumbleEndpointTakesANewHostRightAfterTheOldOneClosed() throws {
        let bumble = try BumbleControllersProcess(count: 1, environment: Tiers.environment)
        defer { XCTAssertTrue(bumble.stop().hasSuffix("nothing left behind")) }
        guard case let .tcp(_, port) = bumble.endpoints[0] else { return XCTFail("\(bumble.endpoints)") }
        let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
        var answered = 0
        for _ in 0..<30 {
            let fd = try BlockingTCP.connect(port: port)
            BlockingTCP.send(fd, reset)
            answered += BlockingTCP.receive(fd).starts(with: [0x04, 0x0E]) ? 1 : 0
            bumble.process.signalGroup(SIGSTOP)
            BlockingTCP.send(fd, reset)   // its answer is never read
            close(fd)
            let next = try BlockingTCP.connect(port: port)   // completed by the kernel, not yet seen by asyncio
            BlockingTCP.send(next, reset)
            bumble.process.signalGroup(SIGCONT)
            answered += BlockingTCP.receive(next).starts(with: [0x04, 0x0E]) ? 1 : 0
            close(next)
        }
        XCTAssertEqual(answered, 60, "Resets answered on 60 successive connections")
        XCTAssertFalse(bumble.process.stderrText().contains("refusing a second host connection"), bumble.process.stderrText())
    }

    func testTooFewEndpointsSayWhichDeviceHasNone() throws {
        let connector = SocketControllerConnector(plan: .perDevice([.tcp(host: "127.0.0.1", port: 1)]), description: "H4 socket tcp 127.0.0.1:1")
        let lab = Lab(seed: 1, loop: SystemEventLoop(), connector: connector)
        XCTAssertThrowsError(try lab.addDevice("first")) { error in
            XCTAssertTrue("\(error)".hasPrefix("no controller for first from H4 socket tcp 127.0.0.1:1: tcp 127.0.0.1:1: connect failed: Connection refused"), "\(error)")
        }
        XCTAssertThrowsError(try connector.openController(for: "second", index: 1, on: lab.loop)) { error in
            XCTAssertEqual("\(error)", "no controller for second from H4 socket tcp 127.0.0.1:1: it is device 2, but only 1 endpoint(s) were given (one per device, in order)")
        }
    }
}

/// Plain blocking TCP on 127.0.0.1, with a 2 s receive timeout.
enum BlockingTCP {
    static func connect(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else {
            close(fd)
            throw HelperError("connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        return fd
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// What one recv(2) returns (empty at end of stream, on error or after the timeout).
    static func receive(_ fd: Int32) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buffer[0..<n]) : []
    }
}

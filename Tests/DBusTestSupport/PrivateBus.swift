#if canImport(Glibc)
import Glibc
#endif
import BLERuntime
import DBus
import Foundation
import XCTest

/// A private dbus-daemon for one test (DBusTests, BlueZLabTests): its own config and socket in a fresh temporary folder,
/// started with --nofork --print-address (the address is printed once it listens), killed and
/// its folder removed by `stop()`.
public final class PrivateBus {
    public let address: String
    public let folder: URL
    private let process: Process

    public init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("blelab-dbus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let socket = folder.appendingPathComponent("bus").path
        let config = folder.appendingPathComponent("bus.conf")
        // A session-type bus that lets everyone own names and talk to everyone, like the session bus.
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(to: config, atomically: true, encoding: .utf8)

        guard let daemon = PrivateBus.findDaemon() else {
            // Not a skip: these tests must run wherever `make test` does (make deps installs it).
            throw DBusError.noBusAddress("dbus-daemon is not installed (Debian package dbus-daemon; `make deps` installs it)")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: daemon)
        process.arguments = ["--config-file=\(config.path)", "--print-address", "--nofork"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line is the address, written once the daemon listens (EOF if it died).
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data([0x0A]) { break }
            line.append(byte)
        }
        guard let printed = String(data: line, encoding: .utf8), !printed.isEmpty else {
            process.terminate()
            throw DBusError.busUnavailable(address: "unix:path=\(socket)", name: "", message: "dbus-daemon exited without printing its address")
        }
        address = printed
    }

    public static func findDaemon() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") + ["/usr/bin", "/bin"] {
            let candidate = "\(dir)/dbus-daemon"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    public var isRunning: Bool { process.isRunning }

    /// Kills the daemon at once (SIGKILL): every connection just closes, with no NameOwnerChanged
    /// sent on the way out. `stop()` still removes the folder.
    public func kill() {
        if process.isRunning {
            _ = Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }
}

/// Tests against a private bus: a loop, a daemon, and connections made on them.
open class BusTestCase: XCTestCase {
    public var loop: SystemEventLoop!
    public var bus: PrivateBus!
    private var connections: [DBusConnection] = []

    override open func setUpWithError() throws {
        loop = SystemEventLoop()
        bus = try PrivateBus()
    }

    override open func tearDown() {
        for c in connections { c.close() }
        connections.removeAll()
        bus?.stop()
        bus = nil
        loop = nil
    }

    public func connect() throws -> DBusConnection {
        let c = try DBusConnection(bus: .address(bus.address), loop: loop)
        connections.append(c)
        return c
    }

    /// Runs the loop until `start`'s callback delivers a value; fails the test (nil) when
    /// nothing came within `limit` of real time.
    public func wait<T>(limit: TimeSpan = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                 _ start: (@escaping (T) -> Void) -> Void) -> T? {
        var result: T?
        start { value in if result == nil { result = value } }
        let done = loop.run(until: loop.now + limit, orUntil: { result != nil })
        if !done { XCTFail("nothing arrived within \(limit)", file: file, line: line) }
        return result
    }

    /// A method call and its result (the reply's arguments, or the error).
    public func callResult(_ connection: DBusConnection, destination: String, path: DBusObjectPath, interface: String, member: String,
                    arguments: [DBusValue] = [], replySignature: String? = nil, timeout: TimeSpan = .seconds(5),
                    file: StaticString = #filePath, line: UInt = #line) -> Result<[DBusValue], DBusError>? {
        wait(file: file, line: line) { done in
            connection.call(destination: destination, path: path, interface: interface, member: member,
                            arguments: arguments, replySignature: replySignature, timeout: timeout, completion: done)
        }
    }

    public func success(_ result: Result<[DBusValue], DBusError>?, file: StaticString = #filePath, line: UInt = #line) -> [DBusValue]? {
        switch result {
        case .success(let values)?: return values
        case .failure(let error)?:
            XCTFail("call failed: \(error)", file: file, line: line)
            return nil
        case nil: return nil
        }
    }

    public func failure(_ result: Result<[DBusValue], DBusError>?, file: StaticString = #filePath, line: UInt = #line) -> DBusError? {
        switch result {
        case .failure(let error)?: return error
        case .success(let values)?:
            XCTFail("call succeeded with \(values)", file: file, line: line)
            return nil
        case nil: return nil
        }
    }
}

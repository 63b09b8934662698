#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import Transport

/// RootCanal 1.10.0 from the venv, started on free ports (docs/tiers.md, "RootCanal 1.10.0").
///
/// Every port is 0, so the kernel picks free ones and parallel runs never collide; the log says
/// which HCI port it got ("Opening an HCI with port 0", then "Listening on: PORT"). A port it
/// cannot bind does not stop it ("Error binding …": it keeps running without that server), so
/// that line fails the start at once. Ready when the port is in /proc/net/tcp in state LISTEN —
/// never probed by connecting, since each connection creates a controller. It runs under
/// tools/die_with_parent.py, which execs it with PR_SET_PDEATHSIG so it dies with blelab even
/// when blelab is SIGKILLed.
public final class RootCanalProcess {
    public static let version = "1.10.0"
    /// RootCanal runs its link-layer model on a timer of this period: advertising events,
    /// deliveries on the phy (docs/tiers.md).
    public static let tick = TimeSpan.milliseconds(5)

    public let process: HelperProcess
    /// Its HCI port: each connection there is a new controller on the one LE phy.
    public let endpoint: SocketEndpoint
    /// Seconds from start to listening.
    public let readyAfter: Double

    /// RootCanal logs about twenty harmless "command validation failed" lines at start-up.
    static func isNoise(_ line: Substring) -> Bool { line.contains("validation failed") }

    public init(environment: TierEnvironment, timeout: Double = 15) throws {
        let binary = try environment.rootCanalBinary()
        let python = try environment.requireVenv()
        let wrapper = try environment.requireTool("die_with_parent.py")
        let process = try HelperProcess(
            name: "RootCanal", 
            argv: [python, wrapper, "\(getpid())", binary, "--hci_port=0", "--test_port=0", "--link_port=0", "--link_ble_port=0"],
            logDirectory: environment.logDirectory, logName: TierEnvironment.logName("rootcanal"))
        do {
            let port: UInt16 = try process.waitUntil("HCI port listening", timeout: timeout, noise: Self.isNoise) {
                let log = process.stdoutText() + process.stderrText()
                if log.contains("Error binding") {
                    throw HelperError("RootCanal could not bind a port (it keeps running without that server)\n"
                        + process.tail(skipping: Self.isNoise))
                }
                guard let port = Self.hciPort(inLog: log) else { return nil }
                return Listening.tcp(port: port) ? port : nil
            }
            endpoint = .tcp(host: "127.0.0.1", port: port)
        } catch {
            process.stop()
            throw error
        }
        self.process = process
        readyAfter = WallClock.seconds() - process.startedAt
    }

    /// The port of the listener opened right after "Opening an HCI with port".
    static func hciPort(inLog log: String) -> UInt16? {
        guard let opening = log.firstRange(of: "Opening an HCI with port") else { return nil }
        guard let listening = log[opening.upperBound...].firstRange(of: "Listening on: ") else { return nil }
        let digits = log[listening.upperBound...].prefix { $0.isASCII && $0.isNumber }
        return UInt16(digits)
    }

    public var isRunning: Bool { process.isRunning }

    @discardableResult
    public func stop() -> String { process.stop() }
}

/// N Bumble controllers on one LocalLink, each behind its own H4 server: tools/
/// bumble_controllers.py in its lab mode (Bumble's Controller with the fixes BLELab needs;
/// docs/tiers.md, "The lab controller"). Each endpoint takes one host at a time, and every new
/// connection gets a fresh controller. Ready once it has printed its `ready` line and every
/// endpoint listens.
public final class BumbleControllersProcess {
    public let process: HelperProcess
    public let endpoints: [SocketEndpoint]
    /// Their public addresses, in endpoint order.
    public let addresses: [String]
    public let readyAfter: Double
    /// The folder of the unix sockets, when served on unix sockets (removed by `stop`).
    public let unixDirectory: String?

    public init(count: Int, environment: TierEnvironment, unixSockets: Bool = false, timeout: Double = 20) throws {
        let python = try environment.requireVenv()
        let script = try environment.requireTool("bumble_controllers.py")
        var argv = [python, script, "\(count)", "--die-with-parent"]
        var directory: String?
        if unixSockets {
            // A unix socket path holds at most 107 octets: a short folder under /tmp.
            var template = Array("/tmp/blelab-h4-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else {
                throw HelperError("cannot make a folder for unix sockets under /tmp: \(String(cString: strerror(errno)))")
            }
            directory = String(cString: made)
            argv += ["--unix-dir", directory!]
        }
        unixDirectory = directory
        let process = try HelperProcess(name: "bumble_controllers.py", argv: argv, logDirectory: environment.logDirectory,
                                        logName: TierEnvironment.logName("bumble-controllers"))
        do {
            let found: [(SocketEndpoint, String)] = try process.waitUntil("'ready' line and \(count) listening endpoint(s)", timeout: timeout) {
                let lines = process.stdoutText().split(separator: "\n")
                guard lines.contains(where: { JSONLine.string("event", in: $0) == "ready" }) else { return nil }
                var found: [(SocketEndpoint, String)] = []
                for line in lines where JSONLine.string("event", in: line) == "listening" {
                    guard let text = JSONLine.string("endpoint", in: line) else { continue }
                    let endpoint: SocketEndpoint
                    do { endpoint = try SocketEndpoint(parsing: text) } catch {
                        throw HelperError("bumble_controllers.py printed an endpoint BLELab cannot read: \(error)")
                    }
                    found.append((endpoint, JSONLine.string("address", in: line) ?? "?"))
                }
                guard found.count == count, found.allSatisfy({ Listening.endpoint($0.0) }) else { return nil }
                return found
            }
            endpoints = found.map(\.0)
            addresses = found.map(\.1)
        } catch {
            process.stop()
            if let directory { Self.removeDirectory(directory) }
            throw error
        }
        self.process = process
        readyAfter = WallClock.seconds() - process.startedAt
    }

    public var isRunning: Bool { process.isRunning }

    @discardableResult
    public func stop() -> String {
        let report = process.stop()
        if let unixDirectory { Self.removeDirectory(unixDirectory) }
        return report
    }

    static func removeDirectory(_ path: String) {
        for entry in FileSystemPaths.entries(path) { unlink(path + "/" + entry) }
        rmdir(path)
    }
}

/// Reads a string field of a one-line JSON object as printed by the tools (json.dumps): enough
/// for `"event": "ready"` and `"endpoint": "tcp:127.0.0.1:41373"`, without a JSON parser.
enum JSONLine {
    static func string(_ key: String, in line: Substring) -> String? {
        guard let keyRange = line.firstRange(of: "\"\(key)\":") else { return nil }
        var rest = line[keyRange.upperBound...].drop { $0 == " " }
        guard rest.first == "\"" else { return nil }
        rest = rest.dropFirst()
        var value = ""
        var escaped = false
        for c in rest {
            if escaped {
                value.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "\"" {
                return value
            } else {
                value.append(c)
            }
        }
        return nil
    }
}

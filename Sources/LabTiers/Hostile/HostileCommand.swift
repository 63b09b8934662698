#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLELab
import BLERuntime
import BLEWire
import GAP
import HostLink
import ScenarioFormat

/// `blelab hostile`: BLELab's host in one role on an external controller, for a hostile peer on
/// the same controllers (tools/hostile_peer.py with Bumble on RootCanal; docs/tiers.md). Prints
/// one JSON object per line on stdout (`HostileTarget`'s events, then `done`); runs until its
/// standard input says `quit` or ends, `--duration` passes, or its controller goes away.
///
///     blelab hostile --role peripheral|central --transport rootcanal[:HOST:PORT]|h4:EP|…
///                    [--peer ADDRESS] [--address ADDRESS] [--name NAME] [--json FILE] [--duration SECONDS]
///
/// Exit status: 0 when it ran and stopped as asked; 1 when its controller went away or the role
/// could not go on; 2 for bad usage or a transport that could not be used.
public enum HostileCommand {
    public static let usage = """
        usage: blelab hostile --role peripheral|central --transport VALUE [options]

        BLELab's host in one role on external controllers, facing a peer that breaks the protocol
        on purpose (tools/hostile_peer.py; make hostile). One JSON object per line on stdout: ready
        (address, controller, att_mtu: the Rx MTU its ATT offers), advertising, connected,
        violation (layer, kind, answer, detail, octets), gatt, script-done, disconnected,
        connect-failed, failure, done. Stops on 'quit' or the end of standard input.

          --role peripheral   serve a GATT service and advertise (again after each disconnection)
          --role central      connect to --peer again and again, running GATT procedures each time
          --transport VALUE   rootcanal[:HOST:PORT], bumble, h4:EP, hci-user:N (not sim)
          --peer ADDRESS      the central's peer, e.g. F0:B1:E1:00:00:99/random
          --address ADDRESS   this host's random static address (default C0:B1:E1:00:00:01)
          --name NAME         the peripheral's advertised name (default BLELabHostile)
          --json FILE         also write every event as one JSON document when done
          --duration SECONDS  stop after this long (default: run until told)
        """

    struct Options {
        var role: HostileTarget.Role?
        var transport: String?
        var peer: LEAddress?
        var address = BDAddr(string: "C0:B1:E1:00:00:01")!
        var name = "BLELabHostile"
        var json: String?
        var duration: TimeSpan?
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var o = Options()
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let v = rest.popFirst() else { throw HostileUsageError("\(flag) needs a value") }
            return v
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--role":
                let v = try value(flag)
                guard let role = HostileTarget.Role(rawValue: v) else { throw HostileUsageError("--role \(v): use peripheral or central") }
                o.role = role
            case "--transport": o.transport = try value(flag)
            case "--peer":
                let v = try value(flag)
                guard let peer = LEAddress(string: v) else { throw HostileUsageError("--peer \(v): use AA:BB:CC:DD:EE:FF[/random|/public]") }
                o.peer = peer
            case "--address":
                let v = try value(flag)
                guard let address = BDAddr(string: v), address.rawValue >> 46 == 0b11 else {
                    throw HostileUsageError("--address \(v): a random static address (its top two bits set, e.g. C0:…)")
                }
                o.address = address
            case "--name": o.name = try value(flag)
            case "--json": o.json = try value(flag)
            case "--duration":
                let v = try value(flag)
                guard let seconds = Double(v), seconds > 0 else { throw HostileUsageError("--duration \(v): a number of seconds") }
                o.duration = .nanoseconds(Int64(seconds * 1e9))
            default:
                throw HostileUsageError("unknown option \(flag)")
            }
        }
        guard o.role != nil else { throw HostileUsageError("--role is required") }
        guard let transport = o.transport else { throw HostileUsageError("--transport is required") }
        guard transport != "sim" else {
            throw HostileUsageError("--transport sim: the hostile peer runs on external controllers (rootcanal, bumble, h4:…)")
        }
        if o.role == .central, o.peer == nil { throw HostileUsageError("--role central needs --peer") }
        return o
    }

    /// Runs the command (`arguments` without `blelab hostile`); `out` gets stdout's lines, `err`
    /// stderr's.
    public static func main(_ arguments: [String], out: @escaping (String) -> Void, err: @escaping (String) -> Void) -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            out(usage + "\n")
            return 0
        }
        let options: Options
        do { options = try parse(arguments) } catch {
            err("blelab hostile: \(error)\n\(usage)\n")
            return 2
        }
        let found: ScenarioBackend?
        do { found = try TransportCatalog.backend(for: options.transport!) } catch {
            err("blelab hostile: transport \(options.transport!): \(error)\n")
            return 2
        }
        guard let backend = found else {
            err("blelab hostile: transport \(options.transport!) is not available (\(TransportCatalog.offered))\n")
            return 2
        }
        (backend as? RealControllerBackend)?.log = { err("blelab: \($0)\n") }
        defer { backend.shutDown() }
        do { try backend.prepare(deviceCount: 1) } catch {
            err("blelab hostile: \(backend.description) could not start: \(error)\n")
            return 2
        }

        var events: [JSONValue] = []
        let emit: (JSONValue) -> Void = { event in
            out(event.render() + "\n")
            if options.json != nil { events.append(event) }
        }
        let lab: Lab
        let device: LabDevice
        do {
            lab = try backend.makeLab(seed: 1)
            device = try lab.addDevice("hostile-target", configuration: HostConfiguration(randomAddress: options.address,
                                                                                            deviceName: options.name))
            try lab.powerOn()
        } catch {
            err("blelab hostile: the lab on \(backend.description) did not start: \(error)\n")
            return 1
        }
        defer { lab.shutDown() }
        let target = HostileTarget(device: device, role: options.role!, peer: options.peer, name: options.name, emit: emit)
        var started: Result<Void, HostError>?
        target.start { started = $0 }
        _ = lab.run(within: .seconds(10)) { started != nil }
        guard case .success? = started else {
            err("blelab hostile: the \(options.role!.rawValue) did not start: \(started.map { "\($0)" } ?? "no answer in 10 s")\n")
            return 1
        }
        emit(.object([(key: "t", value: .double(Double(lab.loop.now.nanoseconds) / 1e9)), (key: "event", value: "ready"),
                      (key: "role", value: .string(options.role!.rawValue)),
                      (key: "address", value: .string("\(device.host.address)")),
                      (key: "controller", value: .string(backend.description)),
                      (key: "att_mtu", value: .int(Int64(device.host.configuration.attMTU)))]))

        let input = StandardInput(loop: lab.loop)
        let deadline = options.duration.map { lab.loop.now + $0 }
        var why = "told to stop"
        while true {
            if input.ended { break }
            if let failure = target.failure { why = failure; break }
            if let closed = device.host.driver.closed { why = "the controller went away: \(closed)"; break }
            if let deadline, lab.loop.now >= deadline { why = "--duration passed"; break }
            _ = lab.run(within: .milliseconds(250)) { input.ended || target.failure != nil || device.host.driver.closed != nil }
        }
        input.close()
        var stopped = false
        target.stop { stopped = true }
        _ = lab.run(within: .seconds(3)) { stopped || device.host.driver.closed != nil }
        let ok = target.failure == nil && device.host.driver.closed == nil
        emit(.object([(key: "t", value: .double(Double(lab.loop.now.nanoseconds) / 1e9)), (key: "event", value: "done"),
                      (key: "ok", value: .bool(ok)), (key: "why", value: .string(why)),
                      (key: "connections", value: .int(Int64(target.connectionCount))),
                      (key: "violations", value: .int(Int64(target.violationCount)))]))
        if let path = options.json {
            let document: JSONValue = .object([(key: "role", value: .string(options.role!.rawValue)), (key: "events", value: .array(events))])
            do { try FileText.write(Array((document.render(pretty: true) + "\n").utf8), to: path) } catch {
                err("blelab hostile: \(error)\n")
                return 1
            }
        }
        return ok ? 0 : 1
    }
}

/// Standard input watched on the loop: ends at end of file or a line `quit`.
final class StandardInput {
    private(set) var ended = false
    private var watch: FDWatch?
    private var buffer: [UInt8] = []

    init(loop: DrivableEventLoop) {
        guard let loop = loop as? SystemEventLoop else { return }
        watch = loop.watchReadable(fd: STDIN_FILENO) { [weak self] in self?.readable() }
    }

    private func readable() {
        var chunk = [UInt8](repeating: 0, count: 512)
        let n = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
        if n < 0, errno == EINTR || errno == EAGAIN { return }
        guard n > 0 else { return end() }
        buffer += chunk[..<n]
        while let newline = buffer.firstIndex(of: 0x0A) {
            let line = String(decoding: buffer[..<newline], as: UTF8.self).trimmingCharacters(in: " \r\t")
            buffer.removeSubrange(...newline)
            if line == "quit" { return end() }
        }
    }

    private func end() {
        ended = true
        close()
    }

    func close() {
        watch?.cancel()
        watch = nil
    }
}

private extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let c = s.first, set.contains(c) { s = s.dropFirst() }
        while let c = s.last, set.contains(c) { s = s.dropLast() }
        return String(s)
    }
}

/// A bad `blelab hostile` command line: printed with the usage, exit status 2.
struct HostileUsageError: Error, CustomStringConvertible {
    var description: String
    init(_ message: String) { description = message }
}

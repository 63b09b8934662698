#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime

/// Why a helper process (RootCanal, Bumble's controllers, a Bumble peer) could not be started or
/// did not become ready. The text says what happened and ends with the tail of its logs.
public struct HelperError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// How a helper process ended.
public enum HelperExit: Equatable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)

    public var description: String {
        switch self {
        case let .exited(code): return "exited with status \(code)"
        case let .signalled(signal): return "was killed by signal \(signal) (\(signalName(signal)))"
        }
    }
}

func signalName(_ signal: Int32) -> String {
    switch signal {
    case SIGTERM: return "SIGTERM"
    case SIGKILL: return "SIGKILL"
    case SIGINT: return "SIGINT"
    case SIGHUP: return "SIGHUP"
    case SIGSEGV: return "SIGSEGV"
    case SIGABRT: return "SIGABRT"
    case SIGPIPE: return "SIGPIPE"
    default: return "signal \(signal)"
    }
}

/// A helper process in its own session and process group (the group id is its pid), with stdin
/// from /dev/null and stdout and stderr in log files — never a pipe nobody drains: RootCanal logs
/// every HCI command and would block on a full pipe. docs/tiers.md, "Readiness and cleanup".
///
/// - Started with posix_spawn and POSIX_SPAWN_SETSID, so a terminal's Ctrl-C reaches only
///   blelab, which then stops its helpers in order.
/// - `stop()` sends SIGTERM to the whole group, SIGKILL after a grace period, reaps the leader
///   and checks that no member of the group is left (in /proc).
/// - While it runs, its group is recorded in `HelperRegistry`, whose signal handlers stop it if
///   blelab gets SIGINT, SIGTERM or SIGHUP. Against SIGKILL of blelab the helpers protect
///   themselves (PR_SET_PDEATHSIG: `bumble_controllers.py --die-with-parent`, RootCanal through
///   `tools/die_with_parent.py`).
///
/// Process management, not protocol code: it reads the monotonic clock (`WallClock`) and waits in
/// poll(2) between readiness probes.
public final class HelperProcess {
    public let name: String
    public let argv: [String]
    /// The leader's pid, which is also the process group id.
    public let pid: pid_t
    public let stdoutPath: String
    public let stderrPath: String
    /// When it was started, on `WallClock`.
    public let startedAt: Double
    /// How it ended, once reaped.
    public private(set) var exit: HelperExit?

    /// Starts `argv` (argv[0] is a path; it is not looked up on PATH). Its output goes to
    /// LOGDIRECTORY/LOGNAME.out and .err (LOGNAME: `name` unless given). `environment` adds to
    /// or replaces variables of blelab's own environment.
    public init(name: String, argv: [String], logDirectory: String, logName: String? = nil,
                environment: [String: String] = [:]) throws {
        precondition(!argv.isEmpty)
        self.name = name
        self.argv = argv
        try FileSystemPaths.makeDirectories(logDirectory)
        stdoutPath = logDirectory + "/" + (logName ?? name) + ".out"
        stderrPath = logDirectory + "/" + (logName ?? name) + ".err"
        HelperRegistry.installSignalHandlers()

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc 2.26; not imported into Swift): a new session and group.
        // POSIX_SPAWN_SETSIGDEF / SETSIGMASK: the child starts with default dispositions and an
        // empty mask, whatever blelab's handlers are.
        let setsid: Int32 = 0x80
        posix_spawnattr_setflags(&attributes, Int16(setsid | Int32(POSIX_SPAWN_SETSIGDEF) | Int32(POSIX_SPAWN_SETSIGMASK)))
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var merged: [String: String] = [:]
        var order: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let eq = text.firstIndex(of: "=") {
                let key = String(text[..<eq])
                if merged[key] == nil { order.append(key) }
                merged[key] = String(text[text.index(after: eq)...])
            }
            entry += 1
        }
        for (key, value) in environment.sorted(by: { $0.key < $1.key }) {
            if merged[key] == nil { order.append(key) }
            merged[key] = value
        }
        let environmentLines = order.map { "\($0)=\(merged[$0]!)" }

        var child: pid_t = 0
        let status = withCStrings(argv) { cArgv in
            withCStrings(environmentLines) { cEnvironment in
                posix_spawn(&child, argv[0], &actions, &attributes, cArgv, cEnvironment)
            }
        }
        guard status == 0 else {
            throw HelperError("\(name): cannot start \(argv[0]): \(String(cString: strerror(status))) (errno \(status))")
        }
        pid = child
        startedAt = WallClock.seconds()
        HelperRegistry.record(child)
    }

    deinit {
        if exit == nil { _ = stop(grace: 1) }
    }

    /// The command line, for messages.
    public var commandLine: String { argv.joined(separator: " ") }

    /// True while the leader has not exited (reaping it when it has).
    public var isRunning: Bool {
        guard exit == nil else { return false }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid {
            exit = Self.decode(status)
            return false
        }
        if r < 0, errno == ECHILD {   // reaped elsewhere: call it gone
            exit = .exited(-1)
            return false
        }
        return true
    }

    /// What it wrote to stdout so far.
    public func stdoutText() -> String { FileSystemPaths.read(stdoutPath) ?? "" }
    public func stderrText() -> String { FileSystemPaths.read(stderrPath) ?? "" }

    /// The last lines of stderr and stdout, for error messages. `skipping` drops noise lines.
    public func tail(lines: Int = 25, skipping noise: (Substring) -> Bool = { _ in false }) -> String {
        var chunks: [String] = []
        for path in [stderrPath, stdoutPath] {
            guard let text = FileSystemPaths.read(path) else { continue }
            let kept = text.split(separator: "\n", omittingEmptySubsequences: true).filter { !noise($0) }
            guard !kept.isEmpty else { continue }
            chunks.append("--- \(path) (last \(min(lines, kept.count)) lines)\n" + kept.suffix(lines).joined(separator: "\n"))
        }
        return chunks.isEmpty ? "(no output in \(stdoutPath) or \(stderrPath))" : chunks.joined(separator: "\n")
    }

    /// Polls `probe` every 10 ms until it returns a value (returned), the process exits or
    /// `timeout` seconds pass (both a `HelperError` with the tail of its logs). `probe` may throw
    /// to give up at once (e.g. RootCanal's "Error binding").
    public func waitUntil<T>(_ what: String, timeout: Double, noise: (Substring) -> Bool = { _ in false },
                             _ probe: () throws -> T?) throws -> T {
        let deadline = WallClock.seconds() + timeout
        while true {
            if let value = try probe() { return value }
            if !isRunning {
                throw HelperError("\(name) (\(commandLine)) \(exit!) before \(what)\n\(tail(skipping: noise))")
            }
            if WallClock.seconds() > deadline {
                throw HelperError("\(name) (pid \(pid)): no \(what) within \(timeout) s\n\(tail(skipping: noise))")
            }
            WallClock.pause(milliseconds: 10)
        }
    }

    /// Sends `signal` to the whole group.
    public func signalGroup(_ signal: Int32) {
        _ = kill(-pid, signal)
    }

    /// SIGTERM to the group, SIGKILL to whatever is left after `grace` seconds, reap; returns
    /// what happened ("SIGTERM, gone in 0.012 s; nothing left behind").
    @discardableResult
    public func stop(grace: Double = 3) -> String {
        defer { HelperRegistry.forget(pid) }
        let start = WallClock.seconds()
        var how = "SIGTERM"
        if isRunning || ProcessGroup.hasLiveMembers(pid) {
            signalGroup(SIGTERM)
            let deadline = start + grace
            while (isRunning || ProcessGroup.hasLiveMembers(pid)) && WallClock.seconds() < deadline {
                WallClock.pause(milliseconds: 5)
            }
            if isRunning || ProcessGroup.hasLiveMembers(pid) {
                how = "SIGKILL after \(grace) s"
                signalGroup(SIGKILL)
                let killDeadline = WallClock.seconds() + 5
                while (isRunning || ProcessGroup.hasLiveMembers(pid)) && WallClock.seconds() < killDeadline {
                    WallClock.pause(milliseconds: 5)
                }
            }
        } else {
            how = "already gone"
        }
        let left = ProcessGroup.hasLiveMembers(pid)
        let elapsed = WallClock.seconds() - start
        return "\(name) (pid \(pid)): \(how), gone in \(formatSeconds(elapsed)) s, \(exit.map { "\($0)" } ?? "not reaped")"
            + (left ? "; PROCESSES LEFT IN GROUP \(pid)" : "; nothing left behind")
    }

    static func decode(_ status: Int32) -> HelperExit {
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift does not import.
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
    }
}

/// Process groups as /proc shows them.
public enum ProcessGroup {
    /// True while a process other than a zombie belongs to group `pgid` (kill(-pgid, 0) alone
    /// also counts zombies that nobody reaped yet).
    public static func hasLiveMembers(_ pgid: pid_t) -> Bool {
        if kill(-pgid, 0) != 0, errno == ESRCH { return false }
        return !members(pgid).isEmpty
    }

    /// The pids of the live (non-zombie) processes in group `pgid`.
    public static func members(_ pgid: pid_t) -> [pid_t] {
        liveProcesses().filter { $0.group == pgid }.map(\.pid)
    }

    /// The live processes whose parent is `parent`.
    public static func children(of parent: pid_t) -> [pid_t] {
        liveProcesses().filter { $0.parent == parent }.map(\.pid)
    }

    /// Every live (non-zombie) process, with its parent and process group, from /proc/PID/stat.
    private static func liveProcesses() -> [(pid: pid_t, parent: pid_t, group: pid_t)] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var found: [(pid: pid_t, parent: pid_t, group: pid_t)] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let pid = pid_t(name), let stat = FileSystemPaths.read("/proc/\(name)/stat"),
                  let close = stat.lastIndex(of: ")") else { continue }
            // After "pid (comm) ": state, ppid, pgrp, …
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, fields[0] != "Z", let ppid = pid_t(fields[1]), let group = pid_t(fields[2]) else { continue }
            found.append((pid, ppid, group))
        }
        return found
    }
}

/// Calls `body` with a NULL-terminated C array of copies of `strings`.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

func formatSeconds(_ s: Double, decimals: Int = 3) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (s * scale).rounded() / scale
    var text = "\(rounded)"
    if let dot = text.firstIndex(of: ".") {
        let fraction = text[text.index(after: dot)...].count
        if fraction < decimals { text += String(repeating: "0", count: decimals - fraction) }
    }
    return text
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ScenarioFormat

/// The monotonic clock in seconds, for process management only: start-up deadlines, stop grace
/// periods, readiness polling. Labs and protocol code keep to their loop's clock.
public enum WallClock {
    public static func seconds() -> Double {
        var t = timespec()
        _ = clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Waits `milliseconds` in poll(2) with no descriptors.
    static func pause(milliseconds: Int32) {
        _ = poll(nil, 0, milliseconds)
    }
}

/// Small file helpers over `FileText` that never throw where a missing file is an answer.
enum FileSystemPaths {
    static func read(_ path: String) -> String? { try? FileText.read(path) }

    static func makeDirectories(_ path: String) throws { try FileText.makeDirectories(path) }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func isExecutable(_ path: String) -> Bool { access(path, X_OK) == 0 && !FileText.isDirectory(path) }

    static func entries(_ path: String) -> [String] { (try? FileText.entries(path)) ?? [] }

    /// `path` made absolute against the current directory.
    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(cString: buffer)
        return path == "." ? cwd : cwd + "/" + path
    }
}

/// The process groups of running helpers, and the signal handlers that stop them when blelab
/// itself is interrupted (SIGINT from a terminal's Ctrl-C, SIGTERM from CI, SIGHUP).
///
/// The handler may only make async-signal-safe calls (signal-safety(7)): it reads a fixed array
/// of group ids allocated before it is installed, sends SIGTERM to each group, waits up to two
/// seconds in nanosleep(2) reaping with waitpid(2), SIGKILLs what is left, writes one line to
/// stderr with write(2), then restores the default action and re-raises the signal, so blelab
/// ends as an interrupted process would (status 128 + signal).
public enum HelperRegistry {
    static let capacity = 64
    /// Group ids of running helpers; 0 = a free slot. Allocated once, never freed.
    nonisolated(unsafe) static let slots: UnsafeMutablePointer<pid_t> = {
        let p = UnsafeMutablePointer<pid_t>.allocate(capacity: capacity)
        p.initialize(repeating: 0, count: capacity)
        return p
    }()
    nonisolated(unsafe) static var installed = false

    /// Installs the handlers for SIGINT, SIGTERM and SIGHUP (once).
    public static func installSignalHandlers() {
        guard (HelperLock.locked { () -> Bool in
            defer { installed = true }
            return !installed
        }) else { return }
        _ = slots   // allocate before any handler can run
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            var action = sigaction()
#if canImport(Glibc)
            action.__sigaction_handler.sa_handler = stopHelpersOnSignal
#else
            action.__sigaction_u.__sa_handler = stopHelpersOnSignal
#endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(signal, &action, nil)
        }
    }

    static func record(_ pgid: pid_t) {
        HelperLock.locked {
            for i in 0..<capacity where slots[i] == 0 {
                slots[i] = pgid
                return
            }
        }
    }

    static func forget(_ pgid: pid_t) {
        HelperLock.locked {
            for i in 0..<capacity where slots[i] == pgid { slots[i] = 0 }
        }
    }

    /// The groups recorded now (for tests).
    public static var recorded: [pid_t] { (0..<capacity).map { slots[$0] }.filter { $0 > 0 } }
}

/// One mutex for the little state helpers share across a process (the registry above, log
/// names): `blelab run --jobs` starts helpers from several threads at once. The signal handler
/// takes no lock (it may not): it reads the slots as they are.
enum HelperLock {
    nonisolated(unsafe) private static let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    static func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// The signal handler (a C function pointer: no captures, async-signal-safe calls only).
private func stopHelpersOnSignal(_ signal: Int32) {
    let slots = HelperRegistry.slots
    let capacity = HelperRegistry.capacity
    var stopped = 0
    for i in 0..<capacity where slots[i] > 0 {
        _ = kill(-slots[i], SIGTERM)
        stopped += 1
    }
    var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
    for _ in 0..<200 {
        var alive = false
        for i in 0..<capacity where slots[i] > 0 {
            _ = waitpid(slots[i], nil, WNOHANG)
            if kill(-slots[i], 0) == 0 { alive = true }
        }
        if !alive { break }
        nanosleep(&pause, nil)
    }
    for i in 0..<capacity where slots[i] > 0 {
        _ = kill(-slots[i], SIGKILL)
        _ = waitpid(slots[i], nil, WNOHANG)
    }
    if stopped > 0 {
        let message: StaticString = "blelab: interrupted: stopped the controller processes it started\n"
        _ = write(2, message.utf8Start, message.utf8CodeUnitCount)
    }
    _ = Glibc.signal(signal, SIG_DFL)
    _ = raise(signal)
}

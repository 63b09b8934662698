#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the socket tier's helpers live: the checkout (its tools/), the build folder, the venv
/// that tools/setup-venv.sh made there (`make venv`), and the folder for the helpers' logs.
///
/// From the environment: BLELAB_ROOT (default: the current directory if it holds
/// tools/bumble_controllers.py, else the first folder above the blelab executable that does),
/// BUILD_DIR (default ROOT/build; relative to ROOT), VENV (default BUILD_DIR/venv).
public struct TierEnvironment: Equatable {
    public var root: String
    public var buildDirectory: String
    public var venv: String

    public init(root: String, buildDirectory: String? = nil, venv: String? = nil) {
        self.root = root
        let build = buildDirectory.map { $0.hasPrefix("/") ? $0 : root + "/" + $0 } ?? root + "/build"
        self.buildDirectory = build
        self.venv = venv.map { $0.hasPrefix("/") ? $0 : root + "/" + $0 } ?? build + "/venv"
    }

    /// From the process's environment variables.
    public static func current() -> TierEnvironment {
        func variable(_ name: String) -> String? {
            guard let value = getenv(name) else { return nil }
            let text = String(cString: value)
            return text.isEmpty ? nil : text
        }
        let root = variable("BLELAB_ROOT").map(FileSystemPaths.absolute) ?? locateRoot()
        return TierEnvironment(root: root, buildDirectory: variable("BUILD_DIR"), venv: variable("VENV"))
    }

    static let marker = "tools/bumble_controllers.py"

    /// The current directory if it is a checkout, else the first folder above the running
    /// executable that is (.build/debug/blelab sits inside one), else the current directory.
    static func locateRoot() -> String {
        let cwd = FileSystemPaths.absolute(".")
        if FileSystemPaths.exists(cwd + "/" + marker) { return cwd }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 {
            var folder = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            while let slash = folder.lastIndex(of: "/"), slash != folder.startIndex {
                folder = String(folder[..<slash])
                if FileSystemPaths.exists(folder + "/" + marker) { return folder }
            }
        }
        return cwd
    }

    public var python: String { venv + "/bin/python" }
    public var logDirectory: String { buildDirectory + "/tiers/logs" }
    public func tool(_ name: String) -> String { root + "/tools/" + name }

    /// The venv's Python, or an error saying how to make the venv.
    public func requireVenv() throws -> String {
        guard FileSystemPaths.isExecutable(python) else {
            throw HelperError("no Python venv at \(venv) (RootCanal 1.10.0 and Bumble 0.0.236 are installed there): "
                + "run 'make venv' (tools/setup-venv.sh) in \(root) first")
        }
        return python
    }

    /// A tool of tools/, or an error naming the checkout it was looked for in.
    public func requireTool(_ name: String) throws -> String {
        let path = tool(name)
        guard FileSystemPaths.exists(path) else {
            throw HelperError("\(path) not found: run blelab from the BLELab checkout, or set BLELAB_ROOT to it")
        }
        return path
    }

    /// RootCanal's executable inside the venv's rootcanal package (lib/pythonX.Y/site-packages/
    /// rootcanal/bin/linux-x86_64/rootcanal). Run it directly: `python -m rootcanal` only runs it
    /// as a child, and signalling that wrapper alone leaves the binary running.
    public func rootCanalBinary() throws -> String {
        _ = try requireVenv()
        let lib = venv + "/lib"
        for entry in FileSystemPaths.entries(lib).sorted() where entry.hasPrefix("python") {
            let candidate = "\(lib)/\(entry)/site-packages/rootcanal/bin/linux-x86_64/rootcanal"
            if FileSystemPaths.isExecutable(candidate) { return candidate }
        }
        throw HelperError("RootCanal's binary is not in the venv \(venv) (looked for lib/python*/site-packages/rootcanal/bin/"
            + "linux-x86_64/rootcanal): run 'make venv' again (tools/setup-venv.sh rebuilds an incomplete venv)")
    }

    nonisolated(unsafe) private static var logCounter = 0

    /// A log name unique to this process: "rootcanal-12345", then "rootcanal-12345-2", …
    static func logName(_ base: String) -> String {
        let n = HelperLock.locked { () -> Int in
            logCounter += 1
            return logCounter
        }
        return n == 1 ? "\(base)-\(getpid())" : "\(base)-\(getpid())-\(n)"
    }
}

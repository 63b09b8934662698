#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed file operation, with the system's reason.
public struct FileError: Error, Hashable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    static func current(_ path: String, _ operation: String) -> FileError {
        let message = strerror(errno).map { String(cString: $0) } ?? "errno \(errno)"
        return FileError(path: path, reason: "cannot \(operation) (\(message))")
    }

    public var description: String { "\(path): \(reason)" }
}

/// The few file operations the scenario layer needs, over the C library (no Foundation).
public enum FileText {
    /// The file's contents as UTF-8 text (invalid sequences repaired).
    public static func read(_ path: String) throws -> String {
        String(decoding: try readBytes(path), as: UTF8.self)
    }

    public static func readBytes(_ path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw FileError.current(path, "read") }
        defer { fclose(file) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n > 0 { out.append(contentsOf: buffer[0..<n]) }
            if n < buffer.count {
                if ferror(file) != 0 { throw FileError.current(path, "read") }
                break
            }
        }
        return out
    }

    /// Writes `bytes` to `path`, replacing it; creates missing parent directories.
    public static func write(_ bytes: [UInt8], to path: String) throws {
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try makeDirectories(String(path[..<slash]))
        }
        guard let file = fopen(path, "wb") else { throw FileError.current(path, "create") }
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        let closed = fclose(file)
        guard written == bytes.count, closed == 0 else { throw FileError.current(path, "write") }
    }

    public static func write(_ text: String, to path: String) throws {
        try write(Array(text.utf8), to: path)
    }

    /// `mkdir -p`.
    public static func makeDirectories(_ path: String) throws {
        if isDirectory(path) { return }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try makeDirectories(String(path[..<slash]))
        }
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw FileError.current(path, "create directory") }
    }

    public enum Kind { case file, directory, missing }

    public static func kind(_ path: String) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        return (info.st_mode & S_IFMT) == S_IFDIR ? .directory : .file
    }

    public static func isDirectory(_ path: String) -> Bool { kind(path) == .directory }

    /// The entries of a directory (not `.` and `..`), unsorted.
    public static func entries(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw FileError.current(path, "list") }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

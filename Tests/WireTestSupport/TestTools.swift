import Foundation

/// Tools outside Swift that tests run when the machine has them (tshark, btmon, python3, git):
/// one copy for every test target, from byte-level capture checks to the tiers.
public enum TestTools {
    public static func executableOnPath(_ tool: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(dir)/\(tool)") {
            return "\(dir)/\(tool)"
        }
        return nil
    }

    /// Runs `executable`, returning its exit status, whether a signal ended it, and its standard
    /// output (standard error is dropped: tshark warns about running as root there).
    public static func runTool(_ executable: String, _ arguments: [String]) throws -> (status: Int32, crashed: Bool, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, process.terminationReason == .uncaughtSignal, String(decoding: data, as: UTF8.self))
    }
}

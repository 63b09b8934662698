#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import ScenarioFormat
import Transport

/// `blelab run --json FILE` written as the runs go: each run's scenario object is appended when
/// the run is done, its events read back from the run's spool (`RunOptions.timelineDirectory`),
/// so neither the runs' timelines nor the document are ever whole in memory. The file holds
/// exactly `RunReports.timeline(runs, tier:).render(pretty: true) + "\n"` of the same runs.
final class TimelineJSONFile {
    let path: String
    private var file: UnsafeMutablePointer<FILE>?
    private var runs = 0
    /// The first error, in words; nothing more is written after it.
    private(set) var failure: String?

    /// Creates (or truncates) `path`, making missing folders, and writes the document's head.
    init(path: String, tier: TransportTier) {
        self.path = path
        do {
            if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                try FileText.makeDirectories(String(path[..<slash]))
            }
            guard let file = fopen(path, "wb") else { throw Self.fileError(path, "create") }
            self.file = file
        } catch {
            failure = "\(error)"
            return
        }
        write(RunReports.timelineHead(tier: tier))
    }

    deinit {
        if let file { fclose(file) }
    }

    /// Appends `run`'s scenario object.
    func append(_ run: ScenarioRun) {
        write(runs == 0 ? "[" : ",")
        runs += 1
        RunReports.writeTimelineScenario(run) { self.write($0) }
    }

    /// Writes the document's end and closes the file: the first error, or nil.
    func close() -> String? {
        write(RunReports.timelineTail(runs: runs))
        if let file, fclose(file) != 0, failure == nil { failure = Self.fileError(path, "write").description }
        file = nil
        return failure
    }

    private static func fileError(_ path: String, _ operation: String) -> FileError {
        FileError(path: path, reason: "cannot \(operation) (\(String(cString: strerror(errno))))")
    }

    private func write(_ text: String) {
        guard failure == nil, let file else { return }
        var text = text
        let count = text.utf8.count
        let written = text.withUTF8 { fwrite($0.baseAddress, 1, $0.count, file) }
        if written != count { failure = Self.fileError(path, "write").description }
    }
}

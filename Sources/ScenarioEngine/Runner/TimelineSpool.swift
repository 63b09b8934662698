#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime

/// A run's timeline kept in a temporary file instead of in memory (`RunOptions.timelineDirectory`),
/// so that a long run's `--json` does not grow with its length. Events go in as they are recorded;
/// reading gives them back in the order `ScenarioResult.timeline` has: by time, and those of equal
/// time in the order they were recorded (a stable sort).
///
/// Events are recorded almost always in time order. They are held in a block of at most
/// `blockSize`, sorted when the block is full and appended to the file. A block that starts
/// before the previous one ended begins a new sorted *run* in the file; reading merges the runs
/// (by time, then run), which is the stable sort of the whole, with one block in memory while
/// recording and one read buffer per run while reading.
///
/// The file has no name in its folder (made unnamed, or unlinked as soon as it is made, and kept
/// open): nothing is left behind however the process ends, killed or crashed included. It is
/// read back through the same descriptor, closed when the spool goes.
public final class TimelineSpool {
    /// Events held before a sorted block is written.
    public static let blockSize = 4096

    /// Where the file is, for messages (it has no name there).
    public let path: String
    fileprivate let fd: Int32
    private var pending: [TimelineEvent] = []
    private var buffer: [UInt8] = []
    /// Octets written so far (the file's length once `buffer` is written).
    private var written = 0
    /// Where each sorted run starts in the file.
    private var runStarts: [Int] = []
    private var lastTime: Instant?
    private var finished = false
    /// How many events it holds.
    public private(set) var count = 0
    /// How many events came after `finish()` and were not kept.
    public private(set) var late = 0
    /// The first error writing or reading the file, in words; events after it are lost, and the
    /// caller reports it.
    public private(set) var failure: String?

    /// A new, empty spool in a file of its own in `directory`: made without a name
    /// (`O_TMPFILE`, open(2)) where the file system allows, else made by mkstemp(3) and unlinked
    /// at once.
    public init(directory: String) throws {
        let folder = directory.hasSuffix("/") ? directory : directory + "/"
#if os(Linux)
        let unnamed = open(directory, Self.openTemporaryFile | O_RDWR | O_CLOEXEC, 0o600)
        if unnamed >= 0 {
            fd = unnamed
            path = folder + "(unnamed timeline file)"
            return
        }
        // EOPNOTSUPP, EISDIR, EINVAL: this file system (or kernel) makes no unnamed files.
        guard errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL else {
            throw Self.cannotMake(in: directory)
        }
#endif
        var template = Array(folder.utf8CString.dropLast()) + Array("blelab-timeline-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw Self.cannotMake(in: directory) }
        self.fd = fd
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        unlink(path)
    }

    /// Why the file could not be made, from `errno`.
    private static func cannotMake(in directory: String) -> TimelineSpoolError {
        TimelineSpoolError(message: "cannot make a timeline file in \(directory): \(String(cString: strerror(errno)))")
    }

#if os(Linux)
    /// O_TMPFILE, which Glibc's module does not export: __O_TMPFILE (0o20000000 on x86_64 and
    /// the generic ABI arm64 uses) with O_DIRECTORY.
    static let openTemporaryFile = Int32(0o20000000) | O_DIRECTORY
#endif

    deinit {
        close(fd)
    }

    /// Adds `event`. After `finish()` the timeline is closed: an event is not kept, and `late`
    /// counts it (the owner stops recording first; this keeps a slip from costing the run).
    public func append(_ event: TimelineEvent) {
        guard !finished else {
            late += 1
            return
        }
        pending.append(event)
        count += 1
        if pending.count >= Self.blockSize { writeBlock() }
    }

    /// Writes what is held; no more is written, and reading may start.
    public func finish() {
        guard !finished else { return }
        writeBlock()
        flushBuffer()
        finished = true
    }

    private func writeBlock() {
        guard !pending.isEmpty else { return }
        let block = pending.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        pending.removeAll(keepingCapacity: true)
        if runStarts.isEmpty || block[0].time < lastTime! { runStarts.append(written + buffer.count) }
        lastTime = block[block.count - 1].time
        for event in block {
            SpoolRecord.encode(event, into: &buffer)
            if buffer.count >= 1 << 16 { flushBuffer() }
        }
    }

    private func flushBuffer() {
        guard !buffer.isEmpty else { return }
        defer { written += buffer.count; buffer.removeAll(keepingCapacity: true) }
        guard failure == nil else { return }
        var done = 0
        while done < buffer.count {
            let n = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                failure = "cannot write the timeline file \(path): \(String(cString: strerror(errno)))"
                return
            }
            done += n
        }
    }

    /// The events in time order (stable). Finishes the spool first.
    public var events: TimelineSpoolEvents {
        finish()
        return TimelineSpoolEvents(spool: self)
    }

    /// The file's runs as (start, end) octet ranges.
    fileprivate var runs: [(start: Int, end: Int)] {
        runStarts.enumerated().map { k, start in (start, k + 1 < runStarts.count ? runStarts[k + 1] : written) }
    }

    fileprivate func readFailed(_ message: String) {
        if failure == nil { failure = message }
    }
}

public struct TimelineSpoolError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// A spool's events, read back from its file each time they are walked.
public struct TimelineSpoolEvents: Sequence {
    let spool: TimelineSpool

    public func makeIterator() -> Iterator { Iterator(spool: spool) }

    public struct Iterator: IteratorProtocol {
        private let spool: TimelineSpool
        private var cursors: [SpoolCursor] = []
        private var heads: [TimelineEvent?] = []

        init(spool: TimelineSpool) {
            self.spool = spool
            guard spool.failure == nil, spool.count > 0 else { return }
            // pread(2) on the spool's own descriptor: the iterator holds the spool, so it stays
            // open; walks do not disturb one another (no shared file offset).
            cursors = spool.runs.map { SpoolCursor(fd: spool.fd, start: $0.start, end: $0.end) }
            heads = Array(repeating: nil, count: cursors.count)
            for k in cursors.indices { heads[k] = next(of: k) }
        }

        private mutating func next(of k: Int) -> TimelineEvent? {
            do { return try cursors[k].next() } catch {
                spool.readFailed("cannot read the timeline file \(spool.path): \(error)")
                return nil
            }
        }

        public mutating func next() -> TimelineEvent? {
            // The earliest head; of equal times, the earlier run's (recorded first).
            var best: Int?
            for k in heads.indices {
                guard let head = heads[k] else { continue }
                if let b = best, heads[b]!.time <= head.time { continue }
                best = k
            }
            guard let b = best else { return nil }
            let event = heads[b]
            heads[b] = next(of: b)
            return event
        }
    }
}

/// Reads one sorted run of records.
private struct SpoolCursor {
    let fd: Int32
    var start: Int
    var end: Int
    private var chunk: [UInt8] = []
    private var at = 0

    init(fd: Int32, start: Int, end: Int) {
        self.fd = fd
        self.start = start
        self.end = end
    }

    mutating func next() throws -> TimelineEvent? {
        guard let slice = try take(4) else { return nil }
        let header = Array(slice)
        let length = Int(header[0]) | Int(header[1]) << 8 | Int(header[2]) << 16 | Int(header[3]) << 24
        guard let body = try take(length) else { throw TimelineSpoolError(message: "truncated record") }
        return try SpoolRecord.decode(body)
    }

    /// The next `n` octets of the run, or nil at its end.
    private mutating func take(_ n: Int) throws -> ArraySlice<UInt8>? {
        if chunk.count - at < n {
            guard start < end else {
                if at == chunk.count { return nil }
                throw TimelineSpoolError(message: "truncated record")
            }
            var more = [UInt8](repeating: 0, count: min(end - start, max(1 << 16, n)))
            let got = more.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, off_t(start)) }
            guard got > 0 else { throw TimelineSpoolError(message: got < 0 ? String(cString: strerror(errno)) : "unexpected end of file") }
            start += got
            chunk = Array(chunk[at...]) + more[..<got]
            at = 0
            return try take(n)
        }
        defer { at += n }
        return chunk[at..<(at + n)]
    }
}

/// One event in the spool: a 4-octet little-endian length, then time (8 octets LE), device,
/// kind, text, a presence byte (bit 0 direction, 1 bytes, 2 step, 3 layer, 4 violation, 5 answer)
/// and the fields present; strings and octets as a 4-octet length then their octets.
enum SpoolRecord {
    static func encode(_ e: TimelineEvent, into out: inout [UInt8]) {
        let lengthAt = out.count
        out += [0, 0, 0, 0]
        int(UInt64(bitPattern: e.time.nanoseconds), 8, &out)
        string(e.device, &out)
        string(e.kind.rawValue, &out)
        string(e.text, &out)
        var present: UInt8 = 0
        if e.direction != nil { present |= 1 }
        if e.bytes != nil { present |= 2 }
        if e.step != nil { present |= 4 }
        if e.layer != nil { present |= 8 }
        if e.violation != nil { present |= 16 }
        if e.answer != nil { present |= 32 }
        out.append(present)
        if let d = e.direction { string(d, &out) }
        if let b = e.bytes { octets(b, &out) }
        if let s = e.step { int(UInt64(bitPattern: Int64(s)), 8, &out) }
        if let l = e.layer { string(l, &out) }
        if let v = e.violation { string(v, &out) }
        if let a = e.answer { string(a, &out) }
        let length = UInt32(out.count - lengthAt - 4)
        for k in 0..<4 { out[lengthAt + k] = UInt8(truncatingIfNeeded: length >> (8 * k)) }
    }

    static func decode(_ body: ArraySlice<UInt8>) throws -> TimelineEvent {
        var at = body.startIndex
        func bytes(_ n: Int) throws -> ArraySlice<UInt8> {
            guard n >= 0, body.endIndex - at >= n else { throw TimelineSpoolError(message: "malformed record") }
            defer { at += n }
            return body[at..<(at + n)]
        }
        func int(_ n: Int) throws -> UInt64 { try bytes(n).reversed().reduce(0) { $0 << 8 | UInt64($1) } }
        func octets() throws -> [UInt8] { Array(try bytes(Int(try int(4)))) }
        func string() throws -> String { String(decoding: try octets(), as: UTF8.self) }
        let time = Instant(nanoseconds: Int64(bitPattern: try int(8)))
        let device = try string()
        guard let kind = TimelineEvent.Kind(rawValue: try string()) else { throw TimelineSpoolError(message: "malformed record") }
        var event = TimelineEvent(time: time, device: device, kind: kind, text: try string())
        let present = try bytes(1).first!
        if present & 1 != 0 { event.direction = try string() }
        if present & 2 != 0 { event.bytes = try octets() }
        if present & 4 != 0 { event.step = Int(Int64(bitPattern: try int(8))) }
        if present & 8 != 0 { event.layer = try string() }
        if present & 16 != 0 { event.violation = try string() }
        if present & 32 != 0 { event.answer = try string() }
        return event
    }

    private static func int(_ value: UInt64, _ n: Int, _ out: inout [UInt8]) {
        for k in 0..<n { out.append(UInt8(truncatingIfNeeded: value >> (8 * k))) }
    }

    private static func octets(_ b: [UInt8], _ out: inout [UInt8]) {
        int(UInt64(b.count), 4, &out)
        out += b
    }

    private static func string(_ s: String, _ out: inout [UInt8]) { octets(Array(s.utf8), &out) }
}

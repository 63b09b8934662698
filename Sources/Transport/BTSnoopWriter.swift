#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import HCI

/// Writes packet logs as btsnoop version 1 files of datalink 1002 (HCI UART, H4), the format
/// Wireshark/tshark and btmon open directly (layout in BTSnoopFormat.swift).
///
/// Captures are deterministic: a lab instant becomes `BTSnoopTime.labEpoch` (2000-01-01T00:00:00Z)
/// plus its virtual time in whole microseconds, drops are always 0, original and included lengths
/// are the frame's length. The same log always gives the same bytes.
public enum BTSnoopWriter {
    /// The 16-octet file header: magic, version 1, datalink.
    public static func header(datalink: BTSnoopDatalink = .hciUART) -> [UInt8] {
        var out = BTSnoopReader.magic
        BTSnoopBytes.append(UInt32(1), to: &out)
        BTSnoopBytes.append(datalink.rawValue, to: &out)
        return out
    }

    /// One datalink 1002 record for `packet`: flags from its direction and H4 indicator.
    public static func record(_ packet: LoggedPacket, timeBase: Int64 = BTSnoopTime.labEpoch) -> [UInt8] {
        var out: [UInt8] = []
        appendRecord(packet, timeBase: timeBase, to: &out)
        return out
    }

    /// A whole capture: header, then one record per packet in log order.
    public static func encode(_ packets: [LoggedPacket], timeBase: Int64 = BTSnoopTime.labEpoch) -> [UInt8] {
        var out = header()
        out.reserveCapacity(out.count + packets.reduce(0) { $0 + BTSnoopReader.recordHeaderLength + $1.frame.count })
        for packet in packets { appendRecord(packet, timeBase: timeBase, to: &out) }
        return out
    }

    /// Re-encodes a decoded file as it was: same datalink, flags, drops, lengths and timestamps.
    /// Decoding a file and encoding the result gives back the original bytes.
    public static func encode(_ file: BTSnoopFile) -> [UInt8] {
        var out = header(datalink: file.datalink)
        for record in file.records {
            appendRecordHeader(originalLength: record.originalLength, includedLength: UInt32(record.data.count),
                               flags: record.flags, drops: record.drops, timestamp: record.timestamp, to: &out)
            out.append(contentsOf: record.data)
        }
        return out
    }

    /// Writes `encode(packets)` to `path`, replacing any file there.
    public static func write(_ packets: [LoggedPacket], to path: String, timeBase: Int64 = BTSnoopTime.labEpoch) throws {
        let stream = try BTSnoopStreamWriter(path: path, timeBase: timeBase)
        try stream.append(contentsOf: packets)
        try stream.close()
    }

    static func appendRecord(_ packet: LoggedPacket, timeBase: Int64, to out: inout [UInt8]) {
        let length = UInt32(truncatingIfNeeded: packet.frame.count)
        appendRecordHeader(originalLength: length, includedLength: length,
                           flags: BTSnoopFlags.forH4(packet.frame, direction: packet.direction), drops: 0,
                           timestamp: BTSnoopTime.timestamp(of: packet.time, base: timeBase), to: &out)
        out.append(contentsOf: packet.frame)
    }

    static func appendRecordHeader(originalLength: UInt32, includedLength: UInt32, flags: UInt32, drops: UInt32,
                                   timestamp: Int64, to out: inout [UInt8]) {
        BTSnoopBytes.append(originalLength, to: &out)
        BTSnoopBytes.append(includedLength, to: &out)
        BTSnoopBytes.append(flags, to: &out)
        BTSnoopBytes.append(drops, to: &out)
        BTSnoopBytes.append(timestamp, to: &out)
    }
}

/// Appends packets to a btsnoop (1002) file as they come, for runs too long to keep in memory.
/// Records are buffered and written in blocks; `flush()` or `close()` puts everything on disk. The
/// bytes on disk after `close()` equal `BTSnoopWriter.encode` of the same packets.
///
///     let capture = try BTSnoopStreamWriter(path: "run.btsnoop")
///     capture.capture(tap.log)          // every packet the tap records from now on
///     … run …
///     try capture.close()
public final class BTSnoopStreamWriter {
    public let path: String
    public let timeBase: Int64
    /// Packets appended so far.
    public private(set) var packetCount = 0
    /// The first write failure met by `capture(_:)`'s observer, which cannot throw.
    public private(set) var failure: BTSnoopFileError?

    private var fd: Int32
    private var buffer: [UInt8] = []
    private let bufferLimit: Int

    /// Creates (or truncates) the file at `path` and writes the header.
    public init(path: String, timeBase: Int64 = BTSnoopTime.labEpoch, bufferLimit: Int = 64 * 1024) throws {
        self.path = path
        self.timeBase = timeBase
        self.bufferLimit = bufferLimit
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BTSnoopFileError.current(path: path, operation: "create") }
        buffer = BTSnoopWriter.header()
    }

    deinit {
        if fd >= 0 {
            _ = try? flush()
            systemClose(fd)
        }
    }

    public var isClosed: Bool { fd < 0 }

    public func append(_ packet: LoggedPacket) throws {
        guard fd >= 0 else { throw BTSnoopFileError(path: path, operation: "append", errno: EBADF, message: "capture already closed") }
        BTSnoopWriter.appendRecord(packet, timeBase: timeBase, to: &buffer)
        packetCount += 1
        if buffer.count >= bufferLimit { try flush() }
    }

    public func append(contentsOf packets: [LoggedPacket]) throws {
        for packet in packets { try append(packet) }
    }

    /// Records every packet `log` records from now on. Write failures cannot surface through the
    /// log's observer; the first is kept in `failure` (and `close()` throws it).
    public func capture(_ log: PacketLog) {
        log.observe { [weak self] packet in
            guard let self, !self.isClosed else { return }
            do { try self.append(packet) } catch let error as BTSnoopFileError {
                if self.failure == nil { self.failure = error }
            } catch {}
        }
    }

    /// Writes buffered records to the file.
    public func flush() throws {
        guard fd >= 0 else { return }
        var written = 0
        while written < buffer.count {
            let n = buffer.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return systemWrite(fd, base + written, raw.count - written)
            }
            if n < 0 {
                if systemErrno() == EINTR { continue }
                let error = BTSnoopFileError.current(path: path, operation: "write")
                buffer.removeFirst(written)
                throw error
            }
            written += n
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes and closes the file. Throws the first failure seen, including one met while capturing.
    public func close() throws {
        guard fd >= 0 else { return }
        defer { fd = -1 }
        do { try flush() } catch {
            systemClose(fd)
            throw error
        }
        if systemClose(fd) != 0 { throw BTSnoopFileError.current(path: path, operation: "close") }
        if let failure { throw failure }
    }
}


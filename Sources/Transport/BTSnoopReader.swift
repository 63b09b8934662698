#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import HCI

/// A decoded btsnoop file: its datalink and its records in file order.
public struct BTSnoopFile: Hashable, Sendable {
    public var datalink: BTSnoopDatalink
    public var records: [BTSnoopRecord]

    public init(datalink: BTSnoopDatalink, records: [BTSnoopRecord]) {
        self.datalink = datalink
        self.records = records
    }

    /// Every HCI packet in the file as a `LoggedPacket` (H4 frame, direction, time counted from
    /// `origin`), skipping monitor records that carry no HCI packet (index and note records).
    /// With the default origin a file BLELab wrote reads back with the instants it was written
    /// with; for a foreign capture pass `records.first?.timestamp` to start at zero.
    public func loggedPackets(relativeTo origin: Int64 = BTSnoopTime.labEpoch) -> [LoggedPacket] {
        records.compactMap { $0.loggedPacket(relativeTo: origin) }
    }
}

/// One btsnoop record with its flags decoded for the file's datalink.
public struct BTSnoopRecord: Hashable, Sendable {
    /// Microseconds on btsnoop's scale (nominally since 0000-01-01; `BTSnoopTime` converts).
    public let timestamp: Int64
    /// The record's packet flags as stored (meaning depends on the datalink).
    public let flags: UInt32
    /// Cumulative drops: packets the capturing tool lost before this one.
    public let drops: UInt32
    /// Length of the packet as it was; `data` may hold fewer octets if the capture truncated it.
    public let originalLength: UInt32
    /// The record's data as stored: an H4 frame for 1002, a bare HCI packet for 1001 and 2001.
    public let data: [UInt8]

    /// Host → controller (sent) or controller → host (received). For monitor records that are not
    /// HCI packets (index, note, management records) this reads `.controllerToHost`: they come from
    /// the kernel, not from the host stack.
    public let direction: HCIDirection
    /// A command or an event, rather than data (the flags' bit 1, or the monitor opcode).
    public let isCommandOrEvent: Bool
    /// The HCI packet type: the H4 indicator for 1002 (nil if the record is empty), from the flags
    /// for 1001, from the opcode for 2001 (nil for records that are not HCI packets).
    public let packetType: H4PacketType?
    /// For datalink 2001: the monitor opcode and controller index (the flags' two halves).
    public let monitorOpcode: BTSnoopMonitorOpcode?
    public let adapterIndex: UInt16?

    /// Decodes the flags of a record of `datalink`.
    public init(datalink: BTSnoopDatalink, timestamp: Int64, flags: UInt32, drops: UInt32 = 0,
                originalLength: UInt32, data: [UInt8]) {
        self.timestamp = timestamp
        self.flags = flags
        self.drops = drops
        self.originalLength = originalLength
        self.data = data
        switch datalink {
        case .linuxMonitor:
            let opcode = BTSnoopMonitorOpcode(rawValue: UInt16(truncatingIfNeeded: flags))
            monitorOpcode = opcode
            adapterIndex = UInt16(truncatingIfNeeded: flags >> 16)
            let carried = opcode.hciPacket
            packetType = carried?.type
            direction = carried?.direction ?? .controllerToHost
            isCommandOrEvent = opcode == .commandPacket || opcode == .eventPacket
        case .hciUnencapsulated:
            monitorOpcode = nil
            adapterIndex = nil
            direction = flags & BTSnoopFlags.received != 0 ? .controllerToHost : .hostToController
            isCommandOrEvent = flags & BTSnoopFlags.commandOrEvent != 0
            // Wireshark's reader: command/event by direction, otherwise ACL.
            packetType = isCommandOrEvent ? (direction == .hostToController ? .command : .event) : .acl
        default:   // 1002 (H4): the data says what it is
            monitorOpcode = nil
            adapterIndex = nil
            direction = flags & BTSnoopFlags.received != 0 ? .controllerToHost : .hostToController
            isCommandOrEvent = flags & BTSnoopFlags.commandOrEvent != 0
            packetType = data.first.map { H4PacketType(rawValue: $0) }
        }
        self.datalink = datalink
    }

    /// The datalink the record was decoded for.
    public let datalink: BTSnoopDatalink

    /// The packet as an H4 frame (indicator first): the data itself for 1002, the data behind the
    /// indicator of its packet type for 1001 and 2001. Nil when the record is no HCI packet.
    public var h4Frame: [UInt8]? {
        guard let packetType else { return nil }
        if datalink == .hciUART { return data }
        return [packetType.rawValue] + data
    }

    /// The record as a lab packet, its time counted from `origin` (see `BTSnoopTime.instant`).
    public func loggedPacket(relativeTo origin: Int64 = BTSnoopTime.labEpoch) -> LoggedPacket? {
        guard let frame = h4Frame else { return nil }
        return LoggedPacket(time: BTSnoopTime.instant(of: timestamp, base: origin), direction: direction, frame: frame)
    }
}

/// Reads btsnoop version 1 files of datalinks 1001, 1002 and 2001. Never traps on what a file
/// holds: every defect is a `BTSnoopError` naming the offset.
public enum BTSnoopReader {
    /// The longest record accepted: the largest H4 frame (indicator, 4-octet ACL header and a
    /// 65 535-octet payload). Anything longer is a corrupt length, not a packet. (btmon itself stops
    /// at 1490 octets, BTSNOOP_MAX_PACKET_SIZE; Wireshark at 262 144.)
    public static let maximumRecordLength = 1 + 4 + 65_535

    static let magic: [UInt8] = Array("btsnoop".utf8) + [0]
    static let headerLength = 16
    static let recordHeaderLength = 24

    public static func decode(_ bytes: [UInt8]) throws -> BTSnoopFile {
        let (file, stop) = try decodeReadable(bytes)
        if let stop { throw stop }
        return file
    }

    /// Reads what can be read: a defect of the file header throws (the file is no btsnoop file
    /// this reader knows); a defect in a record (a header or data cut short, a length no record
    /// can have) ends the reading there, and is returned with the records before it.
    public static func decodeReadable(_ bytes: [UInt8]) throws -> (file: BTSnoopFile, stop: BTSnoopError?) {
        guard bytes.count >= headerLength else {
            if !bytes.isEmpty, !magic.starts(with: bytes.prefix(magic.count)) {
                throw BTSnoopError.wrongMagic(found: Array(bytes.prefix(magic.count)), at: 0)
            }
            throw BTSnoopError.truncatedHeader(available: bytes.count, at: 0)
        }
        guard Array(bytes[0..<8]) == magic else { throw BTSnoopError.wrongMagic(found: Array(bytes[0..<8]), at: 0) }
        let version = BTSnoopBytes.uint32(bytes, at: 8)
        guard version == 1 else { throw BTSnoopError.unsupportedVersion(version, at: 8) }
        let datalink = BTSnoopDatalink(rawValue: BTSnoopBytes.uint32(bytes, at: 12))
        guard datalink.isSupported else { throw BTSnoopError.unsupportedDatalink(datalink, at: 12) }

        var records: [BTSnoopRecord] = []
        var offset = headerLength
        do {
            try readRecords(bytes, datalink: datalink, from: &offset, into: &records)
        } catch let error as BTSnoopError {
            return (BTSnoopFile(datalink: datalink, records: records), error)
        }
        return (BTSnoopFile(datalink: datalink, records: records), nil)
    }

    static func readRecords(_ bytes: [UInt8], datalink: BTSnoopDatalink, from offset: inout Int, into records: inout [BTSnoopRecord]) throws {
        while offset < bytes.count {
            let remaining = bytes.count - offset
            guard remaining >= recordHeaderLength else {
                throw BTSnoopError.truncatedRecordHeader(available: remaining, at: offset)
            }
            let original = BTSnoopBytes.uint32(bytes, at: offset)
            let included = BTSnoopBytes.uint32(bytes, at: offset + 4)
            let flags = BTSnoopBytes.uint32(bytes, at: offset + 8)
            let drops = BTSnoopBytes.uint32(bytes, at: offset + 12)
            let timestamp = BTSnoopBytes.int64(bytes, at: offset + 16)
            guard original <= maximumRecordLength else {
                throw BTSnoopError.recordTooLong(length: original, limit: maximumRecordLength, at: offset)
            }
            guard included <= original else {
                throw BTSnoopError.includedLengthExceedsOriginal(included: included, original: original, at: offset)
            }
            let dataStart = offset + recordHeaderLength
            let available = bytes.count - dataStart
            guard Int(included) <= available else {
                throw BTSnoopError.truncatedRecordData(needed: Int(included), available: available, at: dataStart)
            }
            let data = Array(bytes[dataStart..<dataStart + Int(included)])
            records.append(BTSnoopRecord(datalink: datalink, timestamp: timestamp, flags: flags, drops: drops,
                                         originalLength: original, data: data))
            offset = dataStart + Int(included)
        }
    }

    /// Reads and decodes the file at `path`. I/O failures throw `BTSnoopFileError` (with the path),
    /// format defects `BTSnoopError`.
    public static func read(path: String) throws -> BTSnoopFile {
        try decode(readBytes(path: path))
    }

    static func readBytes(path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BTSnoopFileError.current(path: path, operation: "open for reading") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if n == 0 { return bytes }
            if n < 0 {
                if errno == EINTR { continue }
                throw BTSnoopFileError.current(path: path, operation: "read")
            }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }
}

extension BTSnoopFileError {
    /// The error `errno` holds now, for `operation` on `path`.
    static func current(path: String, operation: String) -> BTSnoopFileError {
        let code = systemErrno()
        return BTSnoopFileError(path: path, operation: operation, errno: code, message: String(cString: strerror(code)))
    }
}

// File-scope wrappers over the C library: inside the types above, `read`, `write`, `close` and
// `errno` would name their own members.
func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(fd, bytes, count) }
@discardableResult func systemClose(_ fd: Int32) -> Int32 { close(fd) }
func systemErrno() -> Int32 { errno }

import HCI
import Transport

// Apple's PacketLogger format (.pklg), as macOS's PacketLogger and iOS's Bluetooth logging profile
// write it, and as Wireshark (wiretap/packetlogger.c) and BTstack read and write it. There is no
// file header: the file is a sequence of records,
//
//     offset  size  field
//     0       4     length: octets after this field (timestamp 8 + type 1 + packet n), so >= 9
//     4       4     timestamp, seconds (since the Unix epoch)
//     8       4     timestamp, microseconds (0 ... 999 999)
//     12      1     record type (below)
//     13      n     the packet: a bare HCI packet (no H4 indicator) for types 0x00-0x03
//
// The three integers are big-endian in the files PacketLogger writes on macOS; some tools write
// them little-endian. The reader decides once, from the first record (the length that makes sense),
// and then holds every record to that order, as Wireshark does.
//
// Record types: 0x00 HCI command (host → controller), 0x01 HCI event (controller → host), 0x02
// ACL data sent, 0x03 ACL data received, 0x08/0x09 SCO sent/received, 0x0A/0x0B LMP, and records
// that are not HCI packets: 0xF7 syslog, 0xF8 kernel, 0xF9 kernel debug, 0xFA error, 0xFB power,
// 0xFC note, 0xFD config, 0xFE new controller. The importer keeps 0x00-0x03 and skips the rest.

/// A PacketLogger record type.
public struct PacketLoggerRecordType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let hciCommand = PacketLoggerRecordType(rawValue: 0x00)
    public static let hciEvent = PacketLoggerRecordType(rawValue: 0x01)
    public static let aclSent = PacketLoggerRecordType(rawValue: 0x02)
    public static let aclReceived = PacketLoggerRecordType(rawValue: 0x03)
    public static let scoSent = PacketLoggerRecordType(rawValue: 0x08)
    public static let scoReceived = PacketLoggerRecordType(rawValue: 0x09)
    public static let note = PacketLoggerRecordType(rawValue: 0xFC)

    /// The HCI packet type and direction of records that carry one (commands, events, ACL, SCO).
    public var hciPacket: (type: H4PacketType, direction: HCIDirection)? {
        switch rawValue {
        case 0x00: return (.command, .hostToController)
        case 0x01: return (.event, .controllerToHost)
        case 0x02: return (.acl, .hostToController)
        case 0x03: return (.acl, .controllerToHost)
        case 0x08: return (.sco, .hostToController)
        case 0x09: return (.sco, .controllerToHost)
        default: return nil
        }
    }

    /// One of the types PacketLogger writes (the list above, as Wireshark's wiretap/packetlogger.c
    /// knows them): 0x00-0x03, 0x08-0x0B, 0xF7-0xFE. Another type is a damaged record.
    public var isKnown: Bool {
        (0x00...0x03).contains(rawValue) || (0x08...0x0B).contains(rawValue) || (0xF7...0xFE).contains(rawValue)
    }

    /// The record type that carries an HCI packet of `type` in `direction`, if PacketLogger has one.
    public static func carrying(_ type: H4PacketType, direction: HCIDirection) -> PacketLoggerRecordType? {
        let sent = direction == .hostToController
        switch type {
        case .command: return sent ? .hciCommand : nil
        case .event: return sent ? nil : .hciEvent
        case .acl: return sent ? .aclSent : .aclReceived
        case .sco: return sent ? .scoSent : .scoReceived
        default: return nil
        }
    }

    public var description: String {
        switch rawValue {
        case 0x00: return "HCI command"
        case 0x01: return "HCI event"
        case 0x02: return "ACL sent"
        case 0x03: return "ACL received"
        case 0x08: return "SCO sent"
        case 0x09: return "SCO received"
        case 0x0A: return "LMP sent"
        case 0x0B: return "LMP received"
        case 0xF7: return "syslog"
        case 0xF8: return "kernel"
        case 0xF9: return "kernel debug"
        case 0xFA: return "error"
        case 0xFB: return "power"
        case 0xFC: return "note"
        case 0xFD: return "config"
        case 0xFE: return "new controller"
        default: return "type 0x" + String(rawValue, radix: 16)
        }
    }
}

/// One PacketLogger record.
public struct PacketLoggerRecord: Hashable, Sendable {
    /// Where the record starts in the file.
    public var offset: Int
    public var seconds: UInt32
    public var microseconds: UInt32
    public var type: PacketLoggerRecordType
    /// The packet (or note text…) after the type octet.
    public var data: [UInt8]

    /// Microseconds since the Unix epoch.
    public var unixMicroseconds: Int64 { Int64(seconds) * 1_000_000 + Int64(microseconds) }

    /// The packet as an H4 frame (indicator first), or nil when the record carries no HCI packet.
    public var h4Frame: [UInt8]? {
        guard let (packetType, _) = type.hciPacket else { return nil }
        return [packetType.rawValue] + data
    }
}

/// A decoded PacketLogger file.
public struct PacketLoggerFile: Hashable, Sendable {
    public var bigEndian: Bool
    public var records: [PacketLoggerRecord]
}

/// A PacketLogger file the reader could not accept; `offset` is where the wrong structure starts.
public enum PacketLoggerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file is empty.
    case empty
    /// The first record's length makes sense in neither byte order: not a PacketLogger file.
    case notPacketLogger(bigEndianLength: UInt32, littleEndianLength: UInt32)
    /// Fewer than the 13 octets of a record header are left.
    case truncatedRecordHeader(available: Int, at: Int)
    /// A record length below 9 (timestamp and type) or above `PacketLoggerReader.maximumRecordLength`.
    case badRecordLength(UInt32, at: Int)
    /// The record's packet is cut short by the end of the file.
    case truncatedRecordData(needed: Int, available: Int, at: Int)
    /// A microseconds field of a million or more: the record is corrupt.
    case badTimestamp(microseconds: UInt32, at: Int)

    public var offset: Int {
        switch self {
        case .empty, .notPacketLogger: return 0
        case let .truncatedRecordHeader(_, at), let .badRecordLength(_, at), let .truncatedRecordData(_, _, at),
             let .badTimestamp(_, at):
            return at
        }
    }

    public var description: String {
        switch self {
        case .empty:
            return "PacketLogger: the file is empty"
        case let .notPacketLogger(be, le):
            return "not a btsnoop, PacketLogger, pcap or pcapng file: at offset 0 neither the btsnoop magic, a pcap or pcapng magic, "
                + "nor a PacketLogger record length "
                + "(\(be) read big-endian, \(le) little-endian; a record is 9 to \(PacketLoggerReader.maximumRecordLength) octets)"
        case let .truncatedRecordHeader(available, at):
            return "PacketLogger: record header truncated at offset \(at): \(available) of 13 octets"
        case let .badRecordLength(length, at):
            return "PacketLogger: record at offset \(at) has length \(length), expected 9 to \(PacketLoggerReader.maximumRecordLength)"
        case let .truncatedRecordData(needed, available, at):
            return "PacketLogger: record data truncated at offset \(at): needed \(needed) octets, \(available) left"
        case let .badTimestamp(microseconds, at):
            return "PacketLogger: record at offset \(at) has \(microseconds) microseconds in its timestamp, expected below 1000000"
        }
    }
}

/// Reads PacketLogger files. Never traps on what a file holds: every defect is a
/// `PacketLoggerError` naming the offset.
public enum PacketLoggerReader {
    /// Timestamp (8), type (1) and the largest HCI packet (ACL: 4-octet header, 65 535 octets).
    public static let maximumRecordLength = 8 + 1 + 4 + 65_535

    static func uint32(_ b: [UInt8], at i: Int, bigEndian: Bool) -> UInt32 {
        bigEndian
            ? UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
            : UInt32(b[i + 3]) << 24 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 1]) << 8 | UInt32(b[i])
    }

    static func plausible(_ length: UInt32) -> Bool { length >= 9 && length <= UInt32(maximumRecordLength) }

    /// Whether `bytes` start like a PacketLogger file (a plausible first record length in either order).
    public static func looksLikePacketLogger(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return false }
        return plausible(uint32(bytes, at: 0, bigEndian: true)) || plausible(uint32(bytes, at: 0, bigEndian: false))
    }

    public static func decode(_ bytes: [UInt8]) throws -> PacketLoggerFile {
        let (file, stop) = try decodeReadable(bytes)
        if let stop { throw stop }
        return file
    }

    /// Reads what can be read: a file that is no PacketLogger file (empty, or a first record
    /// length that makes sense in neither byte order) throws; a defect in a record ends the
    /// reading there, and is returned with the records before it.
    public static func decodeReadable(_ bytes: [UInt8]) throws -> (file: PacketLoggerFile, stop: PacketLoggerError?) {
        guard !bytes.isEmpty else { throw PacketLoggerError.empty }
        guard bytes.count >= 4 else { throw PacketLoggerError.truncatedRecordHeader(available: bytes.count, at: 0) }
        let be = uint32(bytes, at: 0, bigEndian: true)
        let le = uint32(bytes, at: 0, bigEndian: false)
        let bigEndian: Bool
        if plausible(be) {
            bigEndian = true
        } else if plausible(le) {
            bigEndian = false
        } else {
            throw PacketLoggerError.notPacketLogger(bigEndianLength: be, littleEndianLength: le)
        }
        var records: [PacketLoggerRecord] = []
        var offset = 0
        do {
            try readRecords(bytes, bigEndian: bigEndian, from: &offset, into: &records)
        } catch let error as PacketLoggerError {
            return (PacketLoggerFile(bigEndian: bigEndian, records: records), error)
        }
        return (PacketLoggerFile(bigEndian: bigEndian, records: records), nil)
    }

    static func readRecords(_ bytes: [UInt8], bigEndian: Bool, from offset: inout Int, into records: inout [PacketLoggerRecord]) throws {
        while offset < bytes.count {
            let remaining = bytes.count - offset
            guard remaining >= 13 else { throw PacketLoggerError.truncatedRecordHeader(available: remaining, at: offset) }
            let length = uint32(bytes, at: offset, bigEndian: bigEndian)
            guard plausible(length) else { throw PacketLoggerError.badRecordLength(length, at: offset) }
            let seconds = uint32(bytes, at: offset + 4, bigEndian: bigEndian)
            let micros = uint32(bytes, at: offset + 8, bigEndian: bigEndian)
            guard micros < 1_000_000 else { throw PacketLoggerError.badTimestamp(microseconds: micros, at: offset) }
            let type = PacketLoggerRecordType(rawValue: bytes[offset + 12])
            let dataStart = offset + 13
            let dataLength = Int(length) - 9
            guard dataLength <= bytes.count - dataStart else {
                throw PacketLoggerError.truncatedRecordData(needed: dataLength, available: bytes.count - dataStart, at: dataStart)
            }
            records.append(PacketLoggerRecord(offset: offset, seconds: seconds, microseconds: micros, type: type,
                                              data: Array(bytes[dataStart..<dataStart + dataLength])))
            offset = dataStart + dataLength
        }
    }
}

/// Writes PacketLogger files (big-endian, as macOS's PacketLogger does): used by the tests to
/// turn the lab's own captures into .pklg files, and by anyone who wants to open a lab capture in
/// Apple's tools.
public enum PacketLoggerWriter {
    /// One record per H4 frame that PacketLogger can carry (commands, events, ACL, SCO); others are
    /// skipped. `unixMicroseconds` gives each frame's time.
    public static func encode(_ frames: [(unixMicroseconds: Int64, direction: HCIDirection, frame: [UInt8])],
                              bigEndian: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        for (time, direction, frame) in frames {
            guard let indicator = frame.first,
                  let type = PacketLoggerRecordType.carrying(H4PacketType(rawValue: indicator), direction: direction) else { continue }
            let packet = frame.dropFirst()
            append(UInt32(9 + packet.count), to: &out, bigEndian: bigEndian)
            let t = max(0, time)
            append(UInt32(truncatingIfNeeded: t / 1_000_000), to: &out, bigEndian: bigEndian)
            append(UInt32(truncatingIfNeeded: t % 1_000_000), to: &out, bigEndian: bigEndian)
            out.append(type.rawValue)
            out.append(contentsOf: packet)
        }
        return out
    }

    /// A note record (type 0xFC) with `text`, as PacketLogger writes for its annotations.
    public static func note(_ text: String, unixMicroseconds: Int64, bigEndian: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        let bytes = Array(text.utf8)
        append(UInt32(9 + bytes.count), to: &out, bigEndian: bigEndian)
        append(UInt32(truncatingIfNeeded: unixMicroseconds / 1_000_000), to: &out, bigEndian: bigEndian)
        append(UInt32(truncatingIfNeeded: unixMicroseconds % 1_000_000), to: &out, bigEndian: bigEndian)
        out.append(PacketLoggerRecordType.note.rawValue)
        out.append(contentsOf: bytes)
        return out
    }

    static func append(_ v: UInt32, to out: inout [UInt8], bigEndian: Bool) {
        let octets = [UInt8(truncatingIfNeeded: v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8),
                      UInt8(truncatingIfNeeded: v)]
        out.append(contentsOf: bigEndian ? octets : octets.reversed())
    }
}

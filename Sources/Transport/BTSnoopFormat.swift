import BLERuntime
import HCI

// The btsnoop capture format: Symbian's variant of Sun's snoop (RFC 1761), as read and written by
// Wireshark (wiretap/btsnoop.c), BlueZ (src/shared/btsnoop.c, btmon) and Android's snoop logger.
//
// File header, 16 octets, all integers big-endian:
//
//     offset  size  field
//     0       8     identification pattern "btsnoop\0"
//     8       4     version number = 1
//     12      4     datalink type (1001 HCI un-encapsulated, 1002 HCI UART (H4), 2001 Linux monitor…)
//
// Then records, each a 24-octet header followed by the packet data:
//
//     offset  size  field
//     0       4     original length (octets of the packet as it was)
//     4       4     included length (octets stored in this record; at most the original length)
//     8       4     packet flags (below)
//     12      4     cumulative drops (packets lost since the capture began)
//     16      8     timestamp, signed, microseconds since "midnight 0000-01-01 AD"; what every
//                   tool actually uses is the constant 0x00dcddb30f2f8000 for 1970-01-01T00:00:00Z
//     24      n     packet data (included length octets)
//
// Packet flags for datalinks 1001 and 1002 (Wireshark's KHciLogger* constants):
//     bit 0   direction: 0 = sent (host → controller), 1 = received (controller → host)
//     bit 1   0 = data (ACL/SCO/ISO), 1 = command or event
// For datalink 2001 (Linux monitor) the flags are `adapter index << 16 | monitor opcode` and the
// data is the bare HCI packet, without an H4 indicator (BlueZ btsnoop_write_hci).

/// The datalink type in a btsnoop file header: how each record's data is framed.
public struct BTSnoopDatalink: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// HCI un-encapsulated ("H1"): no indicator octet; the packet type is in the record flags.
    public static let hciUnencapsulated = BTSnoopDatalink(rawValue: 1001)
    /// HCI UART ("H4"): each record's data begins with the H4 packet indicator. What BLELab writes.
    public static let hciUART = BTSnoopDatalink(rawValue: 1002)
    /// BlueCore Serial Protocol (not supported).
    public static let bcsp = BTSnoopDatalink(rawValue: 1003)
    /// HCI Three-Wire UART, H5 (not supported).
    public static let threeWire = BTSnoopDatalink(rawValue: 1004)
    /// Linux monitor: btmon's own format, flags carry adapter index and monitor opcode.
    public static let linuxMonitor = BTSnoopDatalink(rawValue: 2001)
    /// BlueZ simulator PHY traffic (not supported).
    public static let simulator = BTSnoopDatalink(rawValue: 2002)

    /// The datalinks `BTSnoopReader` decodes.
    public var isSupported: Bool { self == .hciUnencapsulated || self == .hciUART || self == .linuxMonitor }

    public var description: String {
        switch self {
        case .hciUnencapsulated: return "1001 (HCI un-encapsulated)"
        case .hciUART: return "1002 (HCI UART, H4)"
        case .bcsp: return "1003 (BCSP)"
        case .threeWire: return "1004 (HCI Three-Wire UART)"
        case .linuxMonitor: return "2001 (Linux monitor)"
        case .simulator: return "2002 (BlueZ simulator)"
        default: return "\(rawValue) (unknown)"
        }
    }
}

/// Record flag bits for datalinks 1001 and 1002.
public enum BTSnoopFlags {
    /// Set when the packet was received by the host (controller → host); clear when sent.
    public static let received: UInt32 = 0x0000_0001
    /// Set for commands and events; clear for data (ACL, SCO, ISO).
    public static let commandOrEvent: UInt32 = 0x0000_0002

    /// The flags Wireshark's and BlueZ's writers give an H4 frame: direction, plus the command/event
    /// bit when the indicator is 0x01 (command) or 0x04 (event).
    public static func forH4(_ frame: [UInt8], direction: HCIDirection) -> UInt32 {
        var flags: UInt32 = direction == .controllerToHost ? received : 0
        if let indicator = frame.first,
           indicator == H4PacketType.command.rawValue || indicator == H4PacketType.event.rawValue {
            flags |= commandOrEvent
        }
        return flags
    }
}

/// A Linux monitor opcode (the low 16 bits of a datalink 2001 record's flags). BlueZ
/// src/shared/btsnoop.h, BTSNOOP_OPCODE_*; btsnoop(7).
public struct BTSnoopMonitorOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let newIndex = BTSnoopMonitorOpcode(rawValue: 0)
    public static let deleteIndex = BTSnoopMonitorOpcode(rawValue: 1)
    public static let commandPacket = BTSnoopMonitorOpcode(rawValue: 2)
    public static let eventPacket = BTSnoopMonitorOpcode(rawValue: 3)
    public static let aclTransmit = BTSnoopMonitorOpcode(rawValue: 4)
    public static let aclReceive = BTSnoopMonitorOpcode(rawValue: 5)
    public static let scoTransmit = BTSnoopMonitorOpcode(rawValue: 6)
    public static let scoReceive = BTSnoopMonitorOpcode(rawValue: 7)
    public static let openIndex = BTSnoopMonitorOpcode(rawValue: 8)
    public static let closeIndex = BTSnoopMonitorOpcode(rawValue: 9)
    public static let indexInfo = BTSnoopMonitorOpcode(rawValue: 10)
    public static let vendorDiagnostic = BTSnoopMonitorOpcode(rawValue: 11)
    public static let systemNote = BTSnoopMonitorOpcode(rawValue: 12)
    public static let userLogging = BTSnoopMonitorOpcode(rawValue: 13)
    public static let controlOpen = BTSnoopMonitorOpcode(rawValue: 14)
    public static let controlClose = BTSnoopMonitorOpcode(rawValue: 15)
    public static let controlCommand = BTSnoopMonitorOpcode(rawValue: 16)
    public static let controlEvent = BTSnoopMonitorOpcode(rawValue: 17)
    public static let isoTransmit = BTSnoopMonitorOpcode(rawValue: 18)
    public static let isoReceive = BTSnoopMonitorOpcode(rawValue: 19)

    /// The HCI packet this opcode carries, with its direction; nil for index, note and
    /// management records.
    public var hciPacket: (type: H4PacketType, direction: HCIDirection)? {
        switch self {
        case .commandPacket: return (.command, .hostToController)
        case .eventPacket: return (.event, .controllerToHost)
        case .aclTransmit: return (.acl, .hostToController)
        case .aclReceive: return (.acl, .controllerToHost)
        case .scoTransmit: return (.sco, .hostToController)
        case .scoReceive: return (.sco, .controllerToHost)
        case .isoTransmit: return (.iso, .hostToController)
        case .isoReceive: return (.iso, .controllerToHost)
        default: return nil
        }
    }

    /// The opcode that carries an HCI packet of `type` in `direction`, if the monitor has one.
    public static func carrying(_ type: H4PacketType, direction: HCIDirection) -> BTSnoopMonitorOpcode? {
        let toController = direction == .hostToController
        switch type {
        case .command: return toController ? .commandPacket : nil
        case .event: return toController ? nil : .eventPacket
        case .acl: return toController ? .aclTransmit : .aclReceive
        case .sco: return toController ? .scoTransmit : .scoReceive
        case .iso: return toController ? .isoTransmit : .isoReceive
        default: return nil
        }
    }

    public var description: String {
        let names = ["New Index", "Delete Index", "Command", "Event", "ACL TX", "ACL RX", "SCO TX", "SCO RX",
                     "Open Index", "Close Index", "Index Info", "Vendor Diagnostic", "System Note",
                     "User Logging", "Control Open", "Control Close", "Control Command", "Control Event",
                     "ISO TX", "ISO RX"]
        return Int(rawValue) < names.count ? names[Int(rawValue)] : "opcode \(rawValue)"
    }
}

/// Where captures put lab time on the wall clock. A lab's `Instant` is virtual (nanoseconds since
/// the lab started), so BLELab maps instant zero to a fixed date, 2000-01-01T00:00:00Z, and keeps
/// microseconds: the same packet log always gives the same file, and tools show the run starting at
/// midnight on 1 January 2000.
public enum BTSnoopTime {
    /// 1970-01-01T00:00:00Z in btsnoop microseconds: Wireshark's KUnixTimeBase, Android's
    /// BTSNOOP_EPOCH_DELTA. It is 719 540 days, not the 719 528 of the proleptic Gregorian calendar
    /// from 0000-01-01: the shared constant, not the calendar, is what makes files agree.
    public static let unixEpoch: Int64 = 0x00dc_ddb3_0f2f_8000
    /// 946 684 800 s after the Unix epoch.
    public static let unixSecondsAtLabEpoch: Int64 = 946_684_800
    /// 2000-01-01T00:00:00Z in btsnoop microseconds: where lab time zero goes. It equals BlueZ's
    /// constant 0x00E03AB44A676000 (the base btmon subtracts in src/shared/btsnoop.c).
    public static let labEpoch: Int64 = unixEpoch + unixSecondsAtLabEpoch * 1_000_000

    /// The btsnoop timestamp of `instant`: `base` plus the instant in whole microseconds, rounded
    /// toward the past (so a packet never appears later than it happened). Saturates at Int64's ends.
    public static func timestamp(of instant: Instant, base: Int64 = labEpoch) -> Int64 {
        let ns = instant.nanoseconds
        var us = ns / 1_000
        if ns % 1_000 < 0 { us -= 1 }   // floor, not truncation, for instants before the start
        let (sum, overflow) = base.addingReportingOverflow(us)
        return overflow ? (us > 0 ? .max : .min) : sum
    }

    /// The lab instant of a btsnoop timestamp, counted from `base`; saturates rather than trapping
    /// on timestamps too far from `base` to fit in nanoseconds.
    public static func instant(of timestamp: Int64, base: Int64 = labEpoch) -> Instant {
        let (delta, overflowA) = timestamp.subtractingReportingOverflow(base)
        let (ns, overflowB) = delta.multipliedReportingOverflow(by: 1_000)
        if overflowA || overflowB {
            return Instant(nanoseconds: (timestamp >= base) ? .max : .min)
        }
        return Instant(nanoseconds: ns)
    }

    /// Microseconds since the Unix epoch (what tshark's `frame.time_epoch` shows, in seconds).
    public static func unixMicroseconds(of timestamp: Int64) -> Int64 {
        let (result, overflow) = timestamp.subtractingReportingOverflow(unixEpoch)
        return overflow ? .min : result
    }
}

/// A btsnoop file the reader could not accept. Every case carries `at`, the byte offset in the file
/// of the structure that is wrong or missing, so a report can say where to look.
public enum BTSnoopError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Fewer than 16 octets: no complete file header.
    case truncatedHeader(available: Int, at: Int)
    /// The first 8 octets are not "btsnoop\0".
    case wrongMagic(found: [UInt8], at: Int)
    /// A version other than 1.
    case unsupportedVersion(UInt32, at: Int)
    /// A datalink this reader does not decode (anything but 1001, 1002, 2001).
    case unsupportedDatalink(BTSnoopDatalink, at: Int)
    /// A record header cut short: `available` of its 24 octets are there.
    case truncatedRecordHeader(available: Int, at: Int)
    /// Record data cut short: `at` is where the data starts.
    case truncatedRecordData(needed: Int, available: Int, at: Int)
    /// A record's included length exceeds its original length; `at` is the record's start.
    case includedLengthExceedsOriginal(included: UInt32, original: UInt32, at: Int)
    /// A record longer than any HCI packet can be (see `BTSnoopReader.maximumRecordLength`);
    /// `at` is the record's start.
    case recordTooLong(length: UInt32, limit: Int, at: Int)

    /// The byte offset the error refers to.
    public var offset: Int {
        switch self {
        case let .truncatedHeader(_, at), let .wrongMagic(_, at), let .unsupportedVersion(_, at),
             let .unsupportedDatalink(_, at), let .truncatedRecordHeader(_, at),
             let .truncatedRecordData(_, _, at), let .includedLengthExceedsOriginal(_, _, at),
             let .recordTooLong(_, _, at):
            return at
        }
    }

    public var description: String {
        switch self {
        case let .truncatedHeader(available, at):
            return "btsnoop: file header truncated at offset \(at): \(available) of 16 octets"
        case let .wrongMagic(found, at):
            let hex = found.map { String($0, radix: 16).leftPadded(to: 2) }.joined(separator: " ")
            return "btsnoop: not a btsnoop file (magic at offset \(at) is \(hex), expected \"btsnoop\\0\")"
        case let .unsupportedVersion(version, at):
            return "btsnoop: version \(version) at offset \(at) is not supported (only 1)"
        case let .unsupportedDatalink(datalink, at):
            return "btsnoop: datalink \(datalink) at offset \(at) is not supported (1001, 1002, 2001 are)"
        case let .truncatedRecordHeader(available, at):
            return "btsnoop: record header truncated at offset \(at): \(available) of 24 octets"
        case let .truncatedRecordData(needed, available, at):
            return "btsnoop: record data truncated at offset \(at): needed \(needed) octets, \(available) left"
        case let .includedLengthExceedsOriginal(included, original, at):
            return "btsnoop: record at offset \(at) includes \(included) octets of an original \(original)"
        case let .recordTooLong(length, limit, at):
            return "btsnoop: record at offset \(at) claims \(length) octets, more than the \(limit) an HCI packet can have"
        }
    }
}

/// A file operation on a capture that failed, with the path and the system's reason.
public struct BTSnoopFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var operation: String
    public var errno: Int32
    public var message: String

    public init(path: String, operation: String, errno: Int32, message: String) {
        self.path = path
        self.operation = operation
        self.errno = errno
        self.message = message
    }

    public var description: String { "\(path): \(operation) failed: \(message) (errno \(errno))" }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// Big-endian integer appends and reads shared by the btsnoop writer and reader.
enum BTSnoopBytes {
    static func append(_ value: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: value >> 24))
        out.append(UInt8(truncatingIfNeeded: value >> 16))
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }

    static func append(_ value: Int64, to out: inout [UInt8]) {
        let bits = UInt64(bitPattern: value)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }

    /// Caller guarantees four octets at `offset`.
    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// Caller guarantees eight octets at `offset`.
    static func int64(_ bytes: [UInt8], at offset: Int) -> Int64 {
        var bits: UInt64 = 0
        for i in 0..<8 { bits = bits << 8 | UInt64(bytes[offset + i]) }
        return Int64(bitPattern: bits)
    }
}

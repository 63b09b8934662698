// pcap and pcapng, the formats Wireshark and tcpdump save, with the Bluetooth link types.
//
// pcap (libpcap's savefile, draft-ietf-opsawg-pcap): a 24-octet file header, then records.
//
//     offset  size  field (file header)
//     0       4     magic: a1b2c3d4 (microsecond timestamps) or a1b23c4d (nanosecond); read in
//                   the writer's byte order, so d4c3b2a1 / 4d3cb2a1 on disk means little-endian
//     4       2+2   version 2.4
//     8       4+4   (reserved: thiszone, sigfigs; 0)
//     16      4     snaplen: the most octets kept of any packet
//     20      4     link type (LINKTYPE_*)
//
//     offset  size  field (record header, 16 octets)
//     0       4     timestamp, seconds
//     4       4     timestamp, micro- or nanoseconds (by the magic)
//     8       4     captured length (octets stored)
//     12      4     original length (octets the packet had)
//
// pcapng (draft-ietf-opsawg-pcapng): a sequence of blocks, each
//
//     0       4     block type
//     4       4     block total length (the whole block, a multiple of 4, at least 12)
//     8       n     block body, padded to 4 octets
//     8+n     4     block total length again
//
// A Section Header Block (type 0a0d0d0a, a palindrome so that it reads the same in both orders)
// starts each section; its byte-order magic 1a2b3c4d says the order of every block in the section.
// Interface Description Blocks (type 1) are numbered 0, 1, ... per section: link type (2), reserved
// (2), snaplen (4), options (if_tsresol, code 9: the timestamp unit, 10^-n or, with the top bit
// set, 2^-n seconds, default 10^-6; if_tsoffset, code 14: seconds added to every timestamp).
// Enhanced Packet Blocks (type 6): interface (4), timestamp high and low (4+4, in the interface's
// unit), captured length (4), original length (4), data padded to 4, options. Simple Packet Blocks
// (type 3): original length (4), then the data: min(original length, the interface 0 snaplen)
// octets, no timestamp (the packet is taken at the previous packet's time). The obsolete Packet
// Block (type 2) is EPB with a 2-octet interface and a 2-octet drops count. Every other block
// (name resolution, interface statistics, decryption secrets, custom…) is skipped by its length.
//
// The Bluetooth link types (tcpdump.org/linktypes.html):
//   187 BLUETOOTH_HCI_H4           an H4 frame, no direction
//   201 BLUETOOTH_HCI_H4_WITH_PHDR a 4-octet big-endian direction (bit 0: 0 sent by the host,
//                                  1 received by it; libpcap pcap/bluetooth.h), then an H4 frame
//   254 BLUETOOTH_LINUX_MONITOR    a 4-octet header, adapter index (2) then monitor opcode (2), both
//                                  big-endian (libpcap pcap_bluetooth_linux_monitor_header), then
//                                  the bare HCI packet, as btsnoop datalink 2001
//   251 BLUETOOTH_LE_LL, 256 BLUETOOTH_LE_LL_WITH_PHDR, 272 NORDIC_BLE: link-layer packets from an
//                                  air sniffer, no HCI: read by `AirCaptureHCI` (AirCapture.swift);
//                                  among HCI packets they are refused (`PcapError.airCapture`).

/// A pcap link type (LINKTYPE_* number).
public struct PcapLinkType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let bluetoothHCIH4 = PcapLinkType(rawValue: 187)
    public static let bluetoothHCIH4WithPHDR = PcapLinkType(rawValue: 201)
    public static let bluetoothLELL = PcapLinkType(rawValue: 251)
    public static let bluetoothLinuxMonitor = PcapLinkType(rawValue: 254)
    public static let bluetoothLELLWithPHDR = PcapLinkType(rawValue: 256)
    public static let nordicBLE = PcapLinkType(rawValue: 272)

    /// The link types the importer reads (HCI captures).
    public var isHCI: Bool { self == .bluetoothHCIH4 || self == .bluetoothHCIH4WithPHDR || self == .bluetoothLinuxMonitor }
    /// Link-layer captures from an air sniffer.
    public var isAir: Bool { self == .bluetoothLELL || self == .bluetoothLELLWithPHDR || self == .nordicBLE }

    public var description: String {
        switch self {
        case .bluetoothHCIH4: return "187 (BLUETOOTH_HCI_H4)"
        case .bluetoothHCIH4WithPHDR: return "201 (BLUETOOTH_HCI_H4_WITH_PHDR)"
        case .bluetoothLELL: return "251 (BLUETOOTH_LE_LL)"
        case .bluetoothLinuxMonitor: return "254 (BLUETOOTH_LINUX_MONITOR)"
        case .bluetoothLELLWithPHDR: return "256 (BLUETOOTH_LE_LL_WITH_PHDR)"
        case .nordicBLE: return "272 (NORDIC_BLE)"
        default: return "\(rawValue)"
        }
    }
}

/// One packet of a pcap or pcapng file, as stored (link-type header included).
public struct PcapPacket: Hashable, Sendable {
    /// 1-based packet number, as Wireshark numbers frames (pcapng: packet blocks only).
    public var number: Int
    /// pcapng: the 1-based number of the block holding it; pcap: the same as `number`.
    public var block: Int
    /// Where the record or block starts in the file.
    public var offset: Int
    /// The link type of the packet's interface.
    public var linkType: PcapLinkType
    /// pcapng: the interface's number in its section (0 for pcap).
    public var interface: Int
    /// Microseconds since the Unix epoch (nil for a Simple Packet Block, which has no timestamp).
    public var unixMicroseconds: Int64?
    public var originalLength: Int
    /// The captured octets (at most `originalLength`).
    public var data: [UInt8]
}

/// A decoded pcap or pcapng file.
public struct PcapFile: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        case pcap(bigEndian: Bool, nanoseconds: Bool)
        case pcapng
    }
    public var kind: Kind
    /// Every link type of the file (pcap: one; pcapng: one per interface, first seen first).
    public var linkTypes: [PcapLinkType]
    /// Every block (pcapng) or record (pcap) of the file.
    public var blockCount: Int
    public var packets: [PcapPacket]
}

/// A pcap or pcapng file the reader could not accept. Every case names the record or block (1-based)
/// and the byte offset where the wrong structure starts.
public enum PcapError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Neither a pcap magic nor a pcapng Section Header Block at offset 0.
    case notPcap(magic: UInt32)
    /// Shorter than a pcap file header (24) or a pcapng Section Header Block (28).
    case truncatedHeader(format: String, available: Int, needed: Int)
    /// A pcap version other than 2.x.
    case unsupportedVersion(major: UInt16, minor: UInt16, at: Int)
    /// Fewer than the 16 octets of a pcap record header are left.
    case truncatedRecordHeader(record: Int, available: Int, at: Int)
    /// A captured length beyond `PcapReader.maximumPacketLength` or beyond the original length.
    case badRecordLength(record: Int, captured: UInt32, original: UInt32, at: Int)
    /// The record's (or block's) packet is cut short by the end of the file.
    case truncatedRecordData(record: Int, needed: Int, available: Int, at: Int)
    /// pcapng: fewer than 12 octets left for a block, or a block longer than what is left.
    case truncatedBlock(block: Int, needed: Int, available: Int, at: Int)
    /// pcapng: a block total length that is below 12, not a multiple of 4, beyond
    /// `PcapReader.maximumBlockLength` or too short for the block's own fields.
    case badBlockLength(block: Int, type: UInt32, length: UInt32, at: Int)
    /// pcapng: the total length at the end of the block differs from the one at its start.
    case blockLengthMismatch(block: Int, first: UInt32, last: UInt32, at: Int)
    /// pcapng: a Section Header Block whose byte-order magic is neither 1a2b3c4d nor 4d3c2b1a.
    case badByteOrderMagic(block: Int, found: UInt32, at: Int)
    /// pcapng: a section major version other than 1.
    case unsupportedSectionVersion(block: Int, major: UInt16, minor: UInt16, at: Int)
    /// pcapng: a packet block before any Section Header Block (the file does not start with one).
    case noSectionHeader(at: Int)
    /// pcapng: a packet block naming an interface its section has not described.
    case unknownInterface(block: Int, interface: Int, interfaces: Int, at: Int)
    /// pcapng: an option whose length runs past the block's end.
    case badOption(block: Int, code: UInt16, length: UInt16, at: Int)
    /// pcapng: an if_tsresol the reader cannot use (a unit finer than 10^-19 s or 2^-63 s).
    case badTimestampResolution(block: Int, value: UInt8, at: Int)
    /// A link type the importer does not read (not a Bluetooth HCI capture).
    case unsupportedLinkType(PcapLinkType, record: Int, at: Int)
    /// An air packet (LE link-layer, from a sniffer) among HCI packets: a file is read as one or the other.
    case airCapture(PcapLinkType, record: Int, at: Int)
    /// A packet too short for its link type's header (the direction or monitor header, an H4 indicator).
    case truncatedLinkHeader(PcapLinkType, record: Int, length: Int, needed: Int, at: Int)

    public var offset: Int {
        switch self {
        case .notPcap, .truncatedHeader: return 0
        case let .unsupportedVersion(_, _, at), let .truncatedRecordHeader(_, _, at), let .badRecordLength(_, _, _, at),
             let .truncatedRecordData(_, _, _, at), let .truncatedBlock(_, _, _, at), let .badBlockLength(_, _, _, at),
             let .blockLengthMismatch(_, _, _, at), let .badByteOrderMagic(_, _, at),
             let .unsupportedSectionVersion(_, _, _, at), let .noSectionHeader(at), let .unknownInterface(_, _, _, at),
             let .badOption(_, _, _, at), let .badTimestampResolution(_, _, at), let .unsupportedLinkType(_, _, at),
             let .airCapture(_, _, at), let .truncatedLinkHeader(_, _, _, _, at):
            return at
        }
    }

    public var description: String {
        switch self {
        case let .notPcap(magic):
            return "pcap: magic 0x\(String(magic, radix: 16)) at offset 0 is neither a pcap magic (a1b2c3d4, a1b23c4d in "
                + "either byte order) nor a pcapng Section Header Block (0a0d0d0a)"
        case let .truncatedHeader(format, available, needed):
            return "\(format): file header truncated: \(available) of \(needed) octets"
        case let .unsupportedVersion(major, minor, at):
            return "pcap: version \(major).\(minor) at offset \(at), expected 2.x"
        case let .truncatedRecordHeader(record, available, at):
            return "pcap: record \(record) at offset \(at): record header truncated: \(available) of 16 octets"
        case let .badRecordLength(record, captured, original, at):
            return "pcap: record \(record) at offset \(at) has captured length \(captured) and original length \(original): "
                + "expected a captured length of at most \(PcapReader.maximumPacketLength) and at most the original length"
        case let .truncatedRecordData(record, needed, available, at):
            return "pcap: record \(record) at offset \(at): packet truncated: needed \(needed) octets, \(available) left"
        case let .truncatedBlock(block, needed, available, at):
            return "pcapng: block \(block) at offset \(at) truncated: needed \(needed) octets, \(available) left"
        case let .badBlockLength(block, type, length, at):
            return "pcapng: block \(block) (type 0x\(String(type, radix: 16))) at offset \(at) has total length \(length): "
                + "expected a multiple of 4, at least 12 and enough for its fields, at most \(PcapReader.maximumBlockLength)"
        case let .blockLengthMismatch(block, first, last, at):
            return "pcapng: block \(block) at offset \(at) has total length \(first) at its start and \(last) at its end"
        case let .badByteOrderMagic(block, found, at):
            return "pcapng: block \(block) at offset \(at): Section Header Block byte-order magic 0x\(String(found, radix: 16)), "
                + "expected 0x1a2b3c4d"
        case let .unsupportedSectionVersion(block, major, minor, at):
            return "pcapng: block \(block) at offset \(at): section version \(major).\(minor), expected 1.x"
        case let .noSectionHeader(at):
            return "pcapng: no Section Header Block before the block at offset \(at)"
        case let .unknownInterface(block, interface, interfaces, at):
            return "pcapng: block \(block) at offset \(at) names interface \(interface), but its section describes \(interfaces)"
        case let .badOption(block, code, length, at):
            return "pcapng: block \(block): option \(code) at offset \(at) of length \(length) runs past the block's end"
        case let .badTimestampResolution(block, value, at):
            return "pcapng: block \(block) at offset \(at): if_tsresol 0x\(String(value, radix: 16)) is finer than the reader handles"
        case let .unsupportedLinkType(linkType, record, at):
            return "record \(record) at offset \(at): link type \(linkType) is not a Bluetooth HCI capture "
                + "(the importer reads link types 187, 201 and 254)"
        case let .airCapture(linkType, record, at):
            return "record \(record) at offset \(at): link type \(linkType) is an air capture's (link-layer packets from a sniffer) "
                + "in a capture read as HCI: a file is imported either as HCI or as an air capture, not both"
        case let .truncatedLinkHeader(linkType, record, length, needed, at):
            return "record \(record) at offset \(at): \(length) octets, too short for link type \(linkType) (needs \(needed))"
        }
    }
}

/// Reads pcap and pcapng files. Never traps on what a file holds: every defect is a `PcapError`
/// naming the record or block and the offset; lengths are bounded, so a loop always advances.
public enum PcapReader {
    /// The most octets of one packet accepted (Wireshark's limit, well beyond any HCI packet).
    public static let maximumPacketLength = 262_144
    /// The longest pcapng block accepted.
    public static let maximumBlockLength = 16 * 1_048_576

    static let sectionHeaderType: UInt32 = 0x0A0D_0D0A

    /// Whether `bytes` start like a pcap or pcapng file (their magic).
    public static func looksLikePcap(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return false }
        let be = uint32(bytes, 0, bigEndian: true)
        return be == sectionHeaderType || pcapMagic(be) != nil
    }

    /// The byte order and resolution a pcap magic read big-endian says.
    static func pcapMagic(_ be: UInt32) -> (bigEndian: Bool, nanoseconds: Bool)? {
        switch be {
        case 0xA1B2_C3D4: return (true, false)
        case 0xD4C3_B2A1: return (false, false)
        case 0xA1B2_3C4D: return (true, true)
        case 0x4D3C_B2A1: return (false, true)
        default: return nil
        }
    }

    public static func decode(_ bytes: [UInt8]) throws -> PcapFile {
        let readable = try decodeReadable(bytes)
        if let first = readable.skipped.first ?? readable.stop { throw first }
        return readable.file
    }

    /// What `decodeReadable` could read, and what it could not.
    public struct Readable: Sendable {
        public var file: PcapFile
        /// pcapng packet blocks whose own fields are wrong while the block's length holds (an
        /// interface the section has not described, a captured length beyond the block): each was
        /// skipped, by its length, and the reading went on. In file order, all before `stop`.
        public var skipped: [PcapError]
        /// The defect that ended the reading (a record or block length past the end of the file, a
        /// block whose length is not repeated at its end…): nothing after it was read.
        public var stop: PcapError?
    }

    /// Reads what can be read: a defect of the file header (or the first Section Header Block)
    /// throws; see `Readable` for the rest. `decode` throws the first defect of either kind.
    public static func decodeReadable(_ bytes: [UInt8]) throws -> Readable {
        if bytes.count >= 4, uint32(bytes, 0, bigEndian: true) == sectionHeaderType { return try decodePcapng(bytes) }
        return try decodePcap(bytes)
    }

    static func uint32(_ b: [UInt8], _ i: Int, bigEndian: Bool) -> UInt32 {
        bigEndian
            ? UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
            : UInt32(b[i + 3]) << 24 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 1]) << 8 | UInt32(b[i])
    }

    static func uint16(_ b: [UInt8], _ i: Int, bigEndian: Bool) -> UInt16 {
        bigEndian ? UInt16(b[i]) << 8 | UInt16(b[i + 1]) : UInt16(b[i + 1]) << 8 | UInt16(b[i])
    }

    // MARK: pcap

    static func decodePcap(_ bytes: [UInt8]) throws -> Readable {
        guard bytes.count >= 24 else { throw PcapError.truncatedHeader(format: "pcap", available: bytes.count, needed: 24) }
        let magic = uint32(bytes, 0, bigEndian: true)
        guard let (bigEndian, nanoseconds) = pcapMagic(magic) else { throw PcapError.notPcap(magic: magic) }
        let major = uint16(bytes, 4, bigEndian: bigEndian)
        let minor = uint16(bytes, 6, bigEndian: bigEndian)
        guard major == 2 else { throw PcapError.unsupportedVersion(major: major, minor: minor, at: 4) }
        let linkType = PcapLinkType(rawValue: uint32(bytes, 20, bigEndian: bigEndian) & 0x0FFF_FFFF)   // high bits: FCS info
        var packets: [PcapPacket] = []
        var offset = 24
        var record = 0
        var stop: PcapError?
        while offset < bytes.count {
            record += 1
            let remaining = bytes.count - offset
            guard remaining >= 16 else {
                stop = PcapError.truncatedRecordHeader(record: record, available: remaining, at: offset)
                break
            }
            let seconds = uint32(bytes, offset, bigEndian: bigEndian)
            let fraction = uint32(bytes, offset + 4, bigEndian: bigEndian)
            let captured = uint32(bytes, offset + 8, bigEndian: bigEndian)
            let original = uint32(bytes, offset + 12, bigEndian: bigEndian)
            guard captured <= UInt32(maximumPacketLength), captured <= original else {
                stop = PcapError.badRecordLength(record: record, captured: captured, original: original, at: offset)
                break
            }
            let start = offset + 16
            guard Int(captured) <= bytes.count - start else {
                stop = PcapError.truncatedRecordData(record: record, needed: Int(captured), available: bytes.count - start, at: offset)
                break
            }
            let micros = Int64(seconds) * 1_000_000 + Int64(nanoseconds ? fraction / 1000 : fraction)
            packets.append(PcapPacket(number: record, block: record, offset: offset, linkType: linkType, interface: 0,
                                      unixMicroseconds: micros, originalLength: Int(original),
                                      data: Array(bytes[start..<start + Int(captured)])))
            offset = start + Int(captured)
        }
        return Readable(file: PcapFile(kind: .pcap(bigEndian: bigEndian, nanoseconds: nanoseconds), linkTypes: [linkType],
                                       blockCount: record, packets: packets),
                        skipped: [], stop: stop)
    }

    // MARK: pcapng

    struct Interface {
        var linkType: PcapLinkType
        var snaplen: UInt32
        /// Timestamp unit: 10^-n (or 2^-n when `binary`) seconds.
        var resolution: UInt8 = 6
        var binary = false
        var offsetSeconds: Int64 = 0

        /// The timestamp `ts` (in this interface's unit) as microseconds since the epoch, saturating.
        func microseconds(_ ts: UInt64) -> Int64 {
            let micros: UInt64
            if binary {
                // ts · 10^6 / 2^n, on the full 128-bit product.
                let (high, low) = ts.multipliedFullWidth(by: 1_000_000)
                let n = UInt64(resolution)
                if n == 0 {
                    micros = high == 0 ? low : UInt64.max
                } else {
                    micros = high >> n != 0 ? UInt64.max : (high << (64 - n)) | (low >> n)
                }
            } else if resolution >= 6 {
                var divisor: UInt64 = 1
                for _ in 0..<(resolution - 6) { divisor *= 10 }
                micros = ts / divisor
            } else {
                var factor: UInt64 = 1
                for _ in 0..<(6 - resolution) { factor *= 10 }
                let (product, overflow) = ts.multipliedReportingOverflow(by: factor)
                micros = overflow ? UInt64.max : product
            }
            let base = Int64(clamping: micros)
            let (sum, overflow) = base.addingReportingOverflow(offsetSeconds.multipliedReportingOverflow(by: 1_000_000).partialValue)
            return overflow ? base : sum
        }
    }

    static func decodePcapng(_ bytes: [UInt8]) throws -> Readable {
        var packets: [PcapPacket] = []
        var linkTypes: [PcapLinkType] = []
        var interfaces: [Interface] = []
        var bigEndian = true
        var inSection = false
        var offset = 0
        var block = 0
        var skipped: [PcapError] = []
        var stop: PcapError?
        // Set once the block's length (and its copy at the end) holds: a defect after that is the
        // block's own, and a packet block can be skipped by its length.
        var end: Int?
        var isPacketBlock = false
        while offset < bytes.count {
            block += 1
            end = nil
            isPacketBlock = false
            do {
                let remaining = bytes.count - offset
                guard remaining >= 12 else { throw PcapError.truncatedBlock(block: block, needed: 12, available: remaining, at: offset) }
                let type = uint32(bytes, offset, bigEndian: true)
                if type == sectionHeaderType {
                    // The byte-order magic decides how this block's own length reads.
                    let magic = uint32(bytes, offset + 8, bigEndian: true)
                    if magic == 0x1A2B_3C4D {
                        bigEndian = true
                    } else if magic == 0x4D3C_2B1A {
                        bigEndian = false
                    } else {
                        throw PcapError.badByteOrderMagic(block: block, found: magic, at: offset)
                    }
                } else if !inSection {
                    throw PcapError.noSectionHeader(at: offset)
                }
                let blockType = uint32(bytes, offset, bigEndian: bigEndian)
                let length = uint32(bytes, offset + 4, bigEndian: bigEndian)
                guard length >= 12, length % 4 == 0, length <= UInt32(maximumBlockLength) else {
                    throw PcapError.badBlockLength(block: block, type: blockType, length: length, at: offset)
                }
                guard Int(length) <= remaining else {
                    throw PcapError.truncatedBlock(block: block, needed: Int(length), available: remaining, at: offset)
                }
                let blockEnd = offset + Int(length)
                let trailer = uint32(bytes, blockEnd - 4, bigEndian: bigEndian)
                guard trailer == length else { throw PcapError.blockLengthMismatch(block: block, first: length, last: trailer, at: offset) }
                end = blockEnd
                isPacketBlock = blockType == 6 || blockType == 2 || blockType == 3
                let body = offset + 8
                let bodyEnd = blockEnd - 4
                let bodyLength = bodyEnd - body
                func need(_ n: Int) throws {
                    guard bodyLength >= n else { throw PcapError.badBlockLength(block: block, type: blockType, length: length, at: offset) }
                }

                switch blockType {
                case sectionHeaderType:
                    try need(16)
                    let major = uint16(bytes, body + 4, bigEndian: bigEndian)
                    let minor = uint16(bytes, body + 6, bigEndian: bigEndian)
                    guard major == 1 else {
                        throw PcapError.unsupportedSectionVersion(block: block, major: major, minor: minor, at: offset)
                    }
                    inSection = true
                    interfaces = []   // interface numbers restart with each section
                case 1:   // Interface Description Block
                    try need(8)
                    var interface = Interface(linkType: PcapLinkType(rawValue: UInt32(uint16(bytes, body, bigEndian: bigEndian))),
                                              snaplen: uint32(bytes, body + 4, bigEndian: bigEndian))
                    try forEachOption(bytes, from: body + 8, to: bodyEnd, bigEndian: bigEndian, block: block) { code, value in
                        switch code {
                        case 9 where value.count >= 1:   // if_tsresol
                            let raw = bytes[value.lowerBound]
                            let binary = raw & 0x80 != 0
                            let n = raw & 0x7F
                            guard binary ? n <= 63 : n <= 19 else {
                                throw PcapError.badTimestampResolution(block: block, value: raw, at: value.lowerBound)
                            }
                            interface.binary = binary
                            interface.resolution = n
                        case 14 where value.count >= 8:   // if_tsoffset, signed seconds
                            let first = UInt64(uint32(bytes, value.lowerBound, bigEndian: bigEndian))
                            let second = UInt64(uint32(bytes, value.lowerBound + 4, bigEndian: bigEndian))
                            interface.offsetSeconds = Int64(bitPattern: bigEndian ? first << 32 | second : second << 32 | first)
                        default: break
                        }
                    }
                    interfaces.append(interface)
                    if !linkTypes.contains(interface.linkType) { linkTypes.append(interface.linkType) }
                case 6, 2:   // Enhanced Packet Block, obsolete Packet Block
                    try need(20)
                    let id = blockType == 6 ? Int(uint32(bytes, body, bigEndian: bigEndian)) : Int(uint16(bytes, body, bigEndian: bigEndian))
                    guard id < interfaces.count else {
                        throw PcapError.unknownInterface(block: block, interface: id, interfaces: interfaces.count, at: offset)
                    }
                    let ts = UInt64(uint32(bytes, body + 4, bigEndian: bigEndian)) << 32 | UInt64(uint32(bytes, body + 8, bigEndian: bigEndian))
                    let captured = uint32(bytes, body + 12, bigEndian: bigEndian)
                    let original = uint32(bytes, body + 16, bigEndian: bigEndian)
                    let number = packets.count + 1
                    guard captured <= UInt32(maximumPacketLength), captured <= original else {
                        throw PcapError.badRecordLength(record: number, captured: captured, original: original, at: offset)
                    }
                    let start = body + 20
                    guard Int(captured) <= bodyEnd - start else {
                        throw PcapError.truncatedRecordData(record: number, needed: Int(captured), available: bodyEnd - start, at: offset)
                    }
                    let interface = interfaces[id]
                    packets.append(PcapPacket(number: number, block: block, offset: offset, linkType: interface.linkType,
                                              interface: id, unixMicroseconds: interface.microseconds(ts),
                                              originalLength: Int(original), data: Array(bytes[start..<start + Int(captured)])))
                case 3:   // Simple Packet Block: interface 0, captured = min(original, snaplen) (pcapng §4.4)
                    try need(4)
                    guard !interfaces.isEmpty else {
                        throw PcapError.unknownInterface(block: block, interface: 0, interfaces: 0, at: offset)
                    }
                    let original = uint32(bytes, body, bigEndian: bigEndian)
                    let snaplen = interfaces[0].snaplen == 0 ? UInt32.max : interfaces[0].snaplen
                    let number = packets.count + 1
                    let captured = min(original, snaplen)
                    guard captured <= UInt32(maximumPacketLength) else {
                        throw PcapError.badRecordLength(record: number, captured: captured, original: original, at: offset)
                    }
                    let start = body + 4
                    guard Int(captured) <= bodyEnd - start else {
                        throw PcapError.truncatedRecordData(record: number, needed: Int(captured), available: bodyEnd - start, at: offset)
                    }
                    packets.append(PcapPacket(number: number, block: block, offset: offset, linkType: interfaces[0].linkType,
                                              interface: 0, unixMicroseconds: nil, originalLength: Int(original),
                                              data: Array(bytes[start..<start + Int(captured)])))
                default:
                    break   // name resolution, statistics, secrets, custom and unknown blocks: skipped by their length
                }
                offset = blockEnd
            } catch let error as PcapError {
                // The first Section Header Block is the file's header: without it nothing is pcapng.
                guard block > 1 else { throw error }
                if let end, isPacketBlock {
                    skipped.append(error)
                    offset = end
                    continue
                }
                stop = error
                break
            }
        }
        guard block > 0 else { throw PcapError.truncatedHeader(format: "pcapng", available: 0, needed: 28) }
        return Readable(file: PcapFile(kind: .pcapng, linkTypes: linkTypes, blockCount: block, packets: packets), skipped: skipped, stop: stop)
    }

    /// Calls `body` with each option's code and value range until opt_endofopt or the end.
    static func forEachOption(_ bytes: [UInt8], from start: Int, to end: Int, bigEndian: Bool, block: Int,
                              _ body: (UInt16, Range<Int>) throws -> Void) throws {
        var i = start
        while end - i >= 4 {
            let code = uint16(bytes, i, bigEndian: bigEndian)
            let length = uint16(bytes, i + 2, bigEndian: bigEndian)
            if code == 0 { return }
            let padded = (Int(length) + 3) & ~3
            guard padded <= end - i - 4 else { throw PcapError.badOption(block: block, code: code, length: length, at: i) }
            try body(code, i + 4..<i + 4 + Int(length))
            i += 4 + padded
        }
    }
}

import HCI
import Transport

/// What a capture file holds, whatever its format: the HCI packets in file order, each with its
/// record number (1-based, as Wireshark numbers frames), its byte offset in the file, its time and
/// its direction.
public struct CaptureFile: Sendable {
    public enum Format: Hashable, Sendable, CustomStringConvertible {
        case btsnoop(BTSnoopDatalink)
        case packetLogger(bigEndian: Bool)
        case pcap(linkType: PcapLinkType, nanoseconds: Bool)
        case pcapng(linkTypes: [PcapLinkType])

        public var description: String {
            switch self {
            case let .pcap(linkType, nanoseconds):
                return "pcap\(nanoseconds ? " (nanosecond)" : ""), link type \(linkType)"
            case let .pcapng(linkTypes):
                return "pcapng, link type\(linkTypes.count == 1 ? "" : "s") " + linkTypes.map(\.description).joined(separator: ", ")
            case let .btsnoop(datalink): return "btsnoop, datalink \(datalink)"
            case let .packetLogger(bigEndian): return "PacketLogger (\(bigEndian ? "big" : "little")-endian)"
            }
        }
    }

    public struct Packet: Hashable, Sendable {
        /// 1-based, counting every record of the file (notes and index records too).
        public var record: Int
        /// Where the record starts in the file.
        public var offset: Int
        /// Microseconds since the first record of the file.
        public var time: Int64
        public var direction: HCIDirection
        /// The packet as an H4 frame (indicator first).
        public var frame: [UInt8]
        /// Octets the capturing tool left out of this packet (a truncating snoop log).
        public var missingOctets: Int
        /// The controller index (hciN) of a Linux monitor capture (btsnoop 2001, pcap 254); nil
        /// for formats of one controller.
        public var controller: UInt16? = nil
    }

    /// Keeps one controller's packets of a Linux monitor capture (`blelab import --controller N`):
    /// `controller` nil, the capture must hold one controller's HCI traffic (else the error lists
    /// them); given, it must be one of those the capture holds.
    public mutating func select(controller: UInt16?) throws {
        var counts: [UInt16: Int] = [:]
        for p in packets { if let c = p.controller { counts[c, default: 0] += 1 } }
        guard let controller else {
            if counts.count > 1 { throw CaptureError.severalControllers(indexes: counts) }
            return
        }
        guard counts[controller] != nil else { throw CaptureError.noSuchController(controller, present: counts) }
        packets.removeAll { $0.controller != nil && $0.controller != controller }
        selectedController = controller
    }

    /// The controller `select(controller:)` kept, when the capture held several.
    public var selectedController: UInt16?

    public var format: Format
    public var recordCount: Int
    public var packets: [Packet]
    /// Records whose timestamp went backwards or jumped more than a day ahead of the record before:
    /// each was taken to be at the previous record's time (a damaged or reset clock).
    public var clockAdjustments: [Int] = []
    /// Link type 187 (H4 without direction): the records of ACL packets whose direction could not
    /// be inferred (see `PcapHCI`); they are left out of `packets`.
    public var undirectedRecords: [Int] = []
    /// Link type 187: connection handles whose ATT traffic was placed assuming the capturing host
    /// is the GATT client (the capture shows no LE Connection Complete giving its role).
    public var assumedClientHandles: [UInt16] = []
    /// What a tolerant reading (`decode(_:strict: false)`) could not read and left out, or read in
    /// part, in file order: see `SkippedRecord`. Always listed in the import's "Not reproduced".
    public var skipped: [SkippedRecord] = []
    /// An air capture (link types 251, 256, 272, read by `AirCaptureHCI`): what its link-layer
    /// packets held that the HCI view made of them leaves out (bad CRCs, retransmissions, other
    /// centrals' connections, encryption), for "Not reproduced".
    public var airNotes: [String] = []

    /// Keeps time from running backwards or leaping: see `clockAdjustments`.
    mutating func smoothClock() {
        var last: Int64 = 0
        for i in packets.indices {
            let t = packets[i].time
            if t < last || t - last > 86_400_000_000 {
                clockAdjustments.append(packets[i].record)
                packets[i].time = last
            }
            last = packets[i].time
        }
    }

    /// Reads a btsnoop (datalinks 1001, 1002, 2001), PacketLogger, pcap or pcapng file (link types
    /// 187, 201, 254, and the air captures' 251, 256, 272: `AirCaptureHCI`). A defect is a
    /// `CaptureError` naming the byte offset; nothing here traps on what a file holds.
    ///
    /// `strict: false` reads what can be read instead (TolerantReading.swift): a record whose
    /// packet does not decode is skipped, a broken framing ends the reading with the records before
    /// it, and each is listed in `skipped`. Only a file that is none of the formats (or whose first
    /// record cannot be read) still throws.
    ///
    /// A Linux monitor capture (btsnoop 2001, pcap 254) may hold several controllers' traffic:
    /// `controller` picks one (`select(controller:)`); without it such a capture is an error
    /// naming them.
    public static func decode(_ bytes: [UInt8], strict: Bool = true, controller: UInt16? = nil) throws -> CaptureFile {
        var file = try decodeFile(bytes, strict: strict)
        try file.select(controller: controller)
        return file
    }

    private static func decodeFile(_ bytes: [UInt8], strict: Bool) throws -> CaptureFile {
        if !strict { return try decodeTolerantly(bytes) }
        if PcapReader.looksLikePcap(bytes) {
            do {
                let file = try PcapReader.decode(bytes)
                if file.packets.first?.linkType.isAir ?? file.linkTypes.contains(where: \.isAir) { return try AirCaptureHCI.captureFile(file) }
                return try PcapHCI.captureFile(file)
            } catch let error as PcapError { throw CaptureError.pcap(error) }
        }
        let magic = BTSnoopMagic.bytes
        if bytes.count >= magic.count ? Array(bytes[0..<magic.count]) == magic : (!bytes.isEmpty && magic.starts(with: bytes)) {
            return try decodeBTSnoop(bytes)
        }
        if PacketLoggerReader.looksLikePacketLogger(bytes) {
            do {
                let file = try PacketLoggerReader.decode(bytes)
                return fromPacketLogger(file)
            } catch let error as PacketLoggerError {
                throw CaptureError.packetLogger(error)
            }
        }
        // Neither: a btsnoop file with a damaged magic says so; anything else is no capture at all.
        if bytes.count >= magic.count, zip(bytes[0..<magic.count], magic).filter({ $0 == $1 }).count >= 4 {
            throw CaptureError.btsnoop(.wrongMagic(found: Array(bytes[0..<magic.count]), at: 0))
        }
        do { _ = try PacketLoggerReader.decode(bytes) } catch let error as PacketLoggerError { throw CaptureError.packetLogger(error) }
        throw CaptureError.packetLogger(.empty)
    }

    static func decodeBTSnoop(_ bytes: [UInt8]) throws -> CaptureFile {
        let file: BTSnoopFile
        do { file = try BTSnoopReader.decode(bytes) } catch let error as BTSnoopError { throw CaptureError.btsnoop(error) }
        return fromBTSnoop(file)
    }

    static func fromBTSnoop(_ file: BTSnoopFile) -> CaptureFile {
        var packets: [Packet] = []
        var offset = 16
        // Time counts from the first packet: index and note records may be much older (an earlier
        // logging session), and would put every packet more than a day "late".
        let origin = (file.records.first { $0.h4Frame?.isEmpty == false } ?? file.records.first)?.timestamp ?? 0
        var empty: [SkippedRecord] = []
        for (index, record) in file.records.enumerated() {
            defer { offset += 24 + record.data.count }
            guard let frame = record.h4Frame, !frame.isEmpty else {
                // An H4 record (1002) always starts with its packet indicator; other datalinks'
                // records without a packet (monitor index and note records) are not packets.
                if file.datalink == .hciUART && record.data.isEmpty {
                    empty.append(SkippedRecord(record: index + 1, offset: offset, outcome: .skipped, reason: "the record is empty (no H4 packet indicator)"))
                }
                continue
            }
            let (time, overflow) = record.timestamp.subtractingReportingOverflow(origin)
            packets.append(Packet(record: index + 1, offset: offset, time: overflow ? 0 : time, direction: record.direction,
                                  frame: frame, missingOctets: Int(record.originalLength) - record.data.count,
                                  controller: file.datalink == .linuxMonitor ? record.adapterIndex : nil))
        }
        var capture = CaptureFile(format: .btsnoop(file.datalink), recordCount: file.records.count, packets: packets)
        capture.skipped = empty
        capture.smoothClock()
        return capture
    }

    static func fromPacketLogger(_ file: PacketLoggerFile) -> CaptureFile {
        // Time counts from the first packet: PacketLogger's note and config records may be days
        // older (iOS writes them when logging is set up), and would put every packet "late".
        let origin = (file.records.first { $0.type.hciPacket != nil } ?? file.records.first)?.unixMicroseconds ?? 0
        var packets: [Packet] = []
        var unknown: [SkippedRecord] = []
        for (index, record) in file.records.enumerated() {
            guard let frame = record.h4Frame, let (_, direction) = record.type.hciPacket else {
                if !record.type.isKnown {
                    unknown.append(SkippedRecord(record: index + 1, offset: record.offset, outcome: .skipped,
                                                 reason: "its record type, \(record.type), is none PacketLogger is known to write"))
                }
                continue
            }
            packets.append(Packet(record: index + 1, offset: record.offset, time: record.unixMicroseconds - origin,
                                  direction: direction, frame: frame, missingOctets: 0))
        }
        var capture = CaptureFile(format: .packetLogger(bigEndian: file.bigEndian), recordCount: file.records.count, packets: packets)
        capture.skipped = unknown
        capture.smoothClock()
        return capture
    }
}

enum BTSnoopMagic {
    static let bytes: [UInt8] = Array("btsnoop".utf8) + [0]
}

/// Why a capture could not be imported. Every case names where in the file the problem is.
public enum CaptureError: Error, Hashable, Sendable, CustomStringConvertible {
    case btsnoop(BTSnoopError)
    case packetLogger(PacketLoggerError)
    case pcap(PcapError)
    /// A record whose HCI packet does not decode (its lengths or fields are wrong).
    case malformedPacket(record: Int, offset: Int, detail: String)
    /// A record the capturing tool cut short (Android's filtered snoop log, a snap length): the
    /// values cannot be read from it.
    case truncatedPacket(record: Int, offset: Int, kept: Int, original: Int)
    /// The capture holds no HCI packets at all.
    case noPackets(records: Int)
    /// A Linux monitor capture (btsnoop 2001, pcap 254) of several controllers, without
    /// `--controller`: their indexes and packet counts.
    case severalControllers(indexes: [UInt16: Int])
    /// `--controller N` names a controller the capture holds no HCI traffic of.
    case noSuchController(UInt16, present: [UInt16: Int])
    /// The capture shows nothing to import: no scan, no connection, no advertising of its own.
    case nothingToImport(packets: Int)
    /// The capture shows scanning, but no device: no advertising report, no connection.
    case nothingHeard(packets: Int, scans: Int)

    /// The byte offset in the file the error refers to.
    /// "hci0 (120 packets), hci1 (8 packets)".
    static func list(_ indexes: [UInt16: Int]) -> String {
        indexes.keys.sorted().map { "hci\($0) (\(indexes[$0, default: 0]) packets)" }.joined(separator: ", ")
    }

    public var offset: Int {
        switch self {
        case let .btsnoop(e): return e.offset
        case let .packetLogger(e): return e.offset
        case let .pcap(e): return e.offset
        case let .malformedPacket(_, offset, _), let .truncatedPacket(_, offset, _, _): return offset
        case .noPackets, .nothingToImport, .nothingHeard, .severalControllers, .noSuchController: return 0
        }
    }

    public var description: String {
        switch self {
        case let .btsnoop(e): return e.description
        case let .packetLogger(e): return e.description
        case let .pcap(e): return e.description
        case let .malformedPacket(record, offset, detail):
            return "record \(record) at offset \(offset): the HCI packet does not decode: \(detail)"
        case let .truncatedPacket(record, offset, kept, original):
            return "record \(record) at offset \(offset) keeps \(kept) of the packet's \(original) octets: the capture was truncated "
                + "(on Android, set the Bluetooth HCI snoop log to \"Enabled\", not \"Filtered\"), so its values cannot be imported"
        case let .noPackets(records):
            return "the capture holds no HCI packets (\(records) record\(records == 1 ? "" : "s"))"
        case let .severalControllers(indexes):
            return "the Linux monitor capture holds the HCI traffic of several controllers: \(Self.list(indexes)); "
                + "the importer reads one: choose it with --controller N (or capture one with btmon -i hciN)"
        case let .noSuchController(index, present):
            return "--controller \(index): the capture holds no HCI traffic of hci\(index); it holds \(present.isEmpty ? "no controller's" : Self.list(present))"
        case let .nothingToImport(packets):
            return "the capture's \(packets) HCI packets hold no scan, no connection and no advertising: nothing to import"
        case let .nothingHeard(packets, scans):
            return "the capture's \(packets) HCI packets show \(scans) scan\(scans == 1 ? "" : "s") but no advertising report and no connection: "
                + "no peripheral to declare, nothing to import (blelab import --summary shows what is there)"
        }
    }
}

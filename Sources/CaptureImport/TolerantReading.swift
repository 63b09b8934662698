import BLEWire
import HCI
import Transport

// Tolerant reading: what `blelab import` does with a capture that is readable but damaged in
// places (docs/import.md, "Damaged captures"). `CaptureFile.decode(_:strict: false)`:
//
// - a record whose HCI packet does not decode (its lengths disagree, a field the specification
//   does not allow, an unknown H4 packet indicator), a record the capturing tool cut short, a
//   PacketLogger record of a type PacketLogger does not write, a pcap packet too short for its
//   link type's header, a pcapng packet block whose own fields are wrong: skipped, and the reading
//   goes on with the next record;
// - a complete, valid HCI packet followed by octets it does not account for (more octets in the
//   record than its length field says, or a length field that counts octets after the packet's
//   last field): the packet is kept without them, and the extra octets are reported. The packet
//   checks on its own (its header, its length and every field), so it is what the controller
//   sent; dropping it would lose, say, a Disconnection Complete and with it the end of a link;
// - a break in the file's own framing (a record length past the end of the file, a record header
//   cut short, a length no record can have, a pcapng block whose length is not repeated at its
//   end): the records before it are kept, and the rest of the file is reported as not read, from
//   that offset;
// - a file that is none of the formats, or whose file header or first record cannot be read,
//   still fails: there is nothing to tolerate.
//
// `strict: true` (`blelab import --strict`) keeps the first defect an error, as before.

/// Something in a capture that a tolerant reading could not read, and what it did instead.
public struct SkippedRecord: Hashable, Sendable, CustomStringConvertible {
    public enum Outcome: Hashable, Sendable {
        /// The record was left out; the reading went on with the next one.
        case skipped
        /// The record's HCI packet was kept; this many octets after it were ignored.
        case keptWithoutTrailingOctets(Int)
        /// The file's framing broke here: this record and the rest of the file (this many octets)
        /// were not read.
        case restOfFileNotRead(octets: Int)
    }

    /// 1-based, as Wireshark numbers frames (nil where the file's framing broke between pcapng
    /// blocks: the reason names the block).
    public var record: Int?
    /// Where the record (or the unread rest) starts in the file.
    public var offset: Int
    public var outcome: Outcome
    /// Why, in the words of the error a strict import gives.
    public var reason: String

    public init(record: Int?, offset: Int, outcome: Outcome, reason: String) {
        self.record = record
        self.offset = offset
        self.outcome = outcome
        self.reason = reason
    }

    /// Whether the record's packet is in the import after all (trailing octets ignored).
    public var isKept: Bool {
        if case .keptWithoutTrailingOctets = outcome { return true }
        return false
    }

    /// `3 records skipped, 1 kept without its trailing octets, the rest of the file from offset
    /// 5120 not read`.
    public static func counts(_ list: [SkippedRecord]) -> String {
        let kept = list.filter(\.isKept).count
        let unread = list.first { if case .restOfFileNotRead = $0.outcome { return true } else { return false } }
        let dropped = list.count - kept - (unread == nil ? 0 : 1)
        var parts: [String] = []
        if dropped > 0 { parts.append("\(dropped) record\(dropped == 1 ? "" : "s") skipped") }
        if kept > 0 { parts.append("\(kept) kept without \(kept == 1 ? "its" : "their") trailing octets") }
        if let unread { parts.append("the rest of the file from offset \(unread.offset) not read") }
        return parts.joined(separator: ", ")
    }

    public var description: String {
        let place = record.map { "record \($0) at offset \(offset)" } ?? "offset \(offset)"
        switch outcome {
        case .skipped:
            return "\(place) skipped: \(reason)"
        case let .keptWithoutTrailingOctets(n):
            return "\(place): \(n) octet\(n == 1 ? "" : "s") after a complete HCI packet ignored, the packet kept: \(reason)"
        case let .restOfFileNotRead(octets):
            return "\(place) and the rest of the file (\(octets) octet\(octets == 1 ? "" : "s")) not read: \(reason)"
        }
    }
}

extension CaptureFile {
    /// `decode(_:strict: false)`: see the top of this file.
    static func decodeTolerantly(_ bytes: [UInt8]) throws -> CaptureFile {
        var capture: CaptureFile
        var framing: [SkippedRecord] = []
        if PcapReader.looksLikePcap(bytes) {
            do {
                let readable = try PcapReader.decodeReadable(bytes)
                if readable.file.packets.isEmpty, let first = readable.skipped.first ?? readable.stop { throw first }
                let file = readable.file
                // An air capture's link-layer packets: `AirCaptureHCI` skips and lists what it cannot use itself.
                capture = try file.packets.first?.linkType.isAir ?? file.linkTypes.contains(where: \.isAir)
                    ? AirCaptureHCI.captureFile(file) : PcapHCI.captureFile(file, strict: false)
                framing = readable.skipped.map { SkippedRecord(record: nil, offset: $0.offset, outcome: .skipped, reason: $0.description) }
                if let stop = readable.stop {
                    framing.append(SkippedRecord(record: nil, offset: stop.offset, outcome: .restOfFileNotRead(octets: bytes.count - stop.offset),
                                                 reason: stop.description))
                }
            } catch let error as PcapError {
                throw CaptureError.pcap(error)
            }
        } else if bytes.count >= BTSnoopMagic.bytes.count && Array(bytes[0..<BTSnoopMagic.bytes.count]) == BTSnoopMagic.bytes {
            do {
                let (file, stop) = try BTSnoopReader.decodeReadable(bytes)
                if file.records.isEmpty, let stop { throw stop }
                capture = fromBTSnoop(file)
                if let stop {
                    let at = recordStart(of: stop)
                    framing.append(SkippedRecord(record: file.records.count + 1, offset: at, outcome: .restOfFileNotRead(octets: bytes.count - at),
                                                 reason: stop.description))
                }
            } catch let error as BTSnoopError {
                throw CaptureError.btsnoop(error)
            }
        } else if PacketLoggerReader.looksLikePacketLogger(bytes) {
            do {
                let (file, stop) = try PacketLoggerReader.decodeReadable(bytes)
                if file.records.isEmpty, let stop { throw stop }
                capture = fromPacketLogger(file)
                if let stop {
                    let at = file.records.last.map { $0.offset + 13 + $0.data.count } ?? 0
                    framing.append(SkippedRecord(record: file.records.count + 1, offset: at, outcome: .restOfFileNotRead(octets: bytes.count - at),
                                                 reason: stop.description))
                }
            } catch let error as PacketLoggerError {
                throw CaptureError.packetLogger(error)
            }
        } else {
            // Not recognised: the strict reading's error says what the file is not.
            return try decode(bytes, strict: true)
        }
        capture.screenPackets()
        capture.skipped = (capture.skipped + framing).enumerated()
            .sorted { ($0.element.offset, $0.offset) < ($1.element.offset, $1.offset) }.map(\.element)
        return capture
    }

    /// Where the btsnoop record that `error` is about starts (its data's errors name the data).
    static func recordStart(of error: BTSnoopError) -> Int {
        if case let .truncatedRecordData(_, _, at) = error { return at - 24 }
        return error.offset
    }

    /// Skips the packets whose HCI packet cannot be read, and keeps those with octets after a
    /// complete packet without them; each is listed in `skipped`.
    mutating func screenPackets() {
        var kept: [Packet] = []
        kept.reserveCapacity(packets.count)
        for var p in packets {
            switch PacketScreen.verdict(p) {
            case .keep:
                kept.append(p)
            case let .trim(frame, trailing, packet):
                p.frame = frame
                kept.append(p)
                skipped.append(SkippedRecord(record: p.record, offset: p.offset, outcome: .keptWithoutTrailingOctets(trailing), reason: packet))
            case let .skip(reason):
                skipped.append(SkippedRecord(record: p.record, offset: p.offset, outcome: .skipped, reason: reason))
            }
        }
        packets = kept
    }

    /// The lines `blelab import` puts under "Not reproduced" for `skipped`.
    public var skippedNotes: [String] {
        skipped.map(\.description)
    }
}

/// What a tolerant reading does with one packet.
enum PacketScreen {
    enum Verdict: Equatable {
        case keep
        /// Keep `frame` (the packet without `trailing` octets); `packet` describes it.
        case trim(frame: [UInt8], trailing: Int, packet: String)
        case skip(reason: String)
    }

    static func verdict(_ p: CaptureFile.Packet) -> Verdict {
        if p.missingOctets > 0 {
            return .skip(reason: "the capture kept \(p.frame.count - 1) of the packet's \(p.frame.count - 1 + p.missingOctets) octets, "
                         + "so its values cannot be imported (a truncating snoop log: on Android set the HCI snoop log to \"Enabled\", not \"Filtered\")")
        }
        let failure: Error
        do {
            _ = try HCIPacket(h4: p.frame)
            return .keep
        } catch {
            failure = error
        }
        let frame = p.frame
        // More octets than the packet's own length field declares (Core 5.4, Vol 4, Part E, 5.4:
        // the header's length counts the parameters or data that follow it).
        if let declared = declaredSize(frame), declared < frame.count, let packet = try? HCIPacket(h4: Array(frame[0..<declared])) {
            return .trim(frame: Array(frame[0..<declared]), trailing: frame.count - declared,
                         packet: "the record holds \(frame.count - declared) more than the packet's length field declares; the packet: \(brief(packet))")
        }
        // A length field that counts octets after the last field of a fixed layout: the packet
        // decodes once they are gone from it and from the length (a Disconnection Complete whose
        // Parameter_Total_Length says 5, Vol 4, Part E, 7.7.5).
        if case let .trailingBytes(count, at)? = failure as? DecodeError, count > 0, at + count == frame.count,
           let trimmed = shortened(Array(frame[0..<at]), by: count), let packet = try? HCIPacket(h4: trimmed) {
            return .trim(frame: trimmed, trailing: count,
                         packet: "\(failure); the packet's length field counts them; the packet without them: \(brief(packet))")
        }
        return .skip(reason: "the HCI packet does not decode: \(failure)")
    }

    /// The size of the H4 frame its header declares (indicator, header, length), if it has a
    /// whole header: command 1 + 3 + Parameter_Total_Length, ACL 1 + 4 + Data_Total_Length,
    /// event 1 + 2 + Parameter_Total_Length (Vol 4, Part E, 5.4.1, 5.4.2, 5.4.4).
    static func declaredSize(_ frame: [UInt8]) -> Int? {
        guard let indicator = frame.first else { return nil }
        switch H4PacketType(rawValue: indicator) {
        case .command: return frame.count >= 4 ? 4 + Int(frame[3]) : nil
        case .acl: return frame.count >= 5 ? 5 + (Int(frame[3]) | Int(frame[4]) << 8) : nil
        case .event: return frame.count >= 3 ? 3 + Int(frame[2]) : nil
        default: return nil
        }
    }

    /// `frame` with its length field lowered by `count` (the octets already cut from its end).
    static func shortened(_ frame: [UInt8], by count: Int) -> [UInt8]? {
        guard let indicator = frame.first else { return nil }
        var out = frame
        switch H4PacketType(rawValue: indicator) {
        case .command:
            guard out.count >= 4, Int(out[3]) >= count else { return nil }
            out[3] -= UInt8(count)
        case .event:
            guard out.count >= 3, Int(out[2]) >= count else { return nil }
            out[2] -= UInt8(count)
        default:
            return nil
        }
        return out
    }

    static func brief(_ packet: HCIPacket) -> String {
        let text = packet.description
        return text.count <= 100 ? text : String(text.prefix(99)) + "…"
    }
}

import BLEWire

// L2CAP's basic frame and its reassembly from ACL fragments: what HCI ACL data carries on LE.
// One place for every reader of ACL data — the host's driver and L2CAP link, the sim's link
// faults, the lab's ATT traffic record, failure reports and the capture importer — below all of
// them (as Bumble keeps its ACL assembler in `hci`). The LE signaling channel's commands are
// a wire codec here too (LESignalingPDU.swift: the host's L2CAP link and the importer read them);
// what the channels mean (signaling, SMP, ATT) is the host's business.

/// LE fixed channel identifiers (Core 5.4, Vol 3, Part A, 2.1).
public enum L2CAPChannelID {
    /// Attribute Protocol.
    public static let att: UInt16 = 0x0004
    /// LE signaling channel.
    public static let leSignaling: UInt16 = 0x0005
    /// Security Manager Protocol.
    public static let smp: UInt16 = 0x0006
    /// Dynamically allocated CIDs on LE-U, the ends of credit based channels (2.1, Table 2.3).
    public static let leDynamicRange: ClosedRange<UInt16> = 0x0040...0x007F
}

/// LE Protocol/Service Multiplexer values (Core 5.4, Vol 3, Part A, 4.22, Table 4.18): SPSM in
/// an LE Credit Based Connection Request names the protocol a channel carries.
public enum LEPSM {
    /// Fixed, assigned by the Bluetooth SIG (e.g. 0x0023 EATT, 0x0025 OTS).
    public static let fixedRange: ClosedRange<UInt16> = 0x0001...0x007F
    /// Dynamic: what a server allocates for itself (iOS publishes its channels here).
    public static let dynamicRange: ClosedRange<UInt16> = 0x0080...0x00FF
    /// Whether `value` is a usable SPSM on LE (every other value is reserved).
    public static func isValid(_ value: UInt16) -> Bool { fixedRange.contains(value) || dynamicRange.contains(value) }
}

/// An L2CAP basic frame (B-frame, Core 5.4, Vol 3, Part A, 3.1):
///
///     | Length (2) | Channel ID (2) | Information payload (Length) |
public struct L2CAPBasicFrame: Hashable, Sendable {
    public static let headerSize = 4

    public var channel: UInt16
    public var payload: [UInt8]

    public init(channel: UInt16, payload: [UInt8]) {
        self.channel = channel
        self.payload = payload
    }

    /// The frame: header, then payload.
    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: Self.headerSize + payload.count)
        encode(into: &w)
        return w.bytes
    }

    public func encode(into w: inout ByteWriter) {
        w.writeUInt16LE(UInt16(truncatingIfNeeded: payload.count))
        w.writeUInt16LE(channel)
        w.write(bytes: payload)
    }

    /// Decodes a whole frame: its Length must match the octets after the header exactly.
    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        let length = Int(try r.readUInt16LE())
        channel = try r.readUInt16LE()
        guard length == r.remaining else {
            throw DecodeError.lengthMismatch(field: "L2CAP Length", declared: length, actual: r.remaining)
        }
        payload = r.readRemaining()
    }

    /// The header of a frame that begins at `offset` of `bytes` (a start fragment may hold only
    /// part of the payload): Length and Channel ID, or nil when the four octets are not all there.
    public static func header(of bytes: [UInt8], at offset: Int = 0) -> (length: Int, channel: UInt16)? {
        guard offset >= 0, bytes.count - offset >= headerSize else { return nil }
        return (Int(bytes[offset]) | Int(bytes[offset + 1]) << 8, UInt16(bytes[offset + 2]) | UInt16(bytes[offset + 3]) << 8)
    }

    /// The whole frame's size by its Length field (header included), once the two Length octets are there.
    public static func expectedSize(_ bytes: [UInt8]) -> Int? {
        bytes.count >= 2 ? headerSize + (Int(bytes[0]) | Int(bytes[1]) << 8) : nil
    }
}

/// Rebuilds L2CAP basic frames from the ACL fragments of several streams (one stream: one
/// direction of one connection, named by `Stream`), using the basic header's Length (Vol 3,
/// Part A, 7.2; PB_Flag, Vol 4, Part E, 5.4.2). Each reader decides what a broken sequence
/// means to it; `feed` says what happened and never drops silently.
public struct L2CAPReassembler<Stream: Hashable> {
    /// A fragment that could not be used, or octets beyond a frame's Length.
    public enum Problem: Hashable, Sendable {
        /// A continuing fragment with no frame begun: dropped.
        case continuationWithoutStart(octets: [UInt8])
        /// PB_Flag 0b11 (a complete L2CAP PDU, BR/EDR only): dropped.
        case invalidBoundary(PacketBoundary, octets: [UInt8])
        /// The fragments hold more octets than the frame's Length: `octets` is everything
        /// received, `expected` header + Length; the outcome's frame is what the Length describes.
        case longerThanLength(octets: [UInt8], expected: Int)
    }

    /// What one fragment produced: a whole frame, octets of an unfinished frame that a new start
    /// replaced, a problem, several of these, or nothing yet (a frame still in progress).
    public struct Outcome {
        @inlinable init() {}
        public var frame: L2CAPBasicFrame?
        /// A start fragment arrived while a frame of the stream was unfinished: that frame's
        /// octets, dropped (possibly none, when its start fragment was empty).
        public var droppedUnfinished: [UInt8]?
        public var problem: Problem?
    }

    /// Inlinable (with `feed`) so that each reader gets it specialised for its `Stream` type:
    /// it runs on every ACL packet a host receives.
    @usableFromInline var pending: [Stream: [UInt8]] = [:]

    @inlinable public init() {}

    /// Whether any stream has a frame in progress.
    @inlinable public var isEmpty: Bool { pending.isEmpty }

    /// The octets of the unfinished frame of `stream`, if one was begun.
    public func unfinished(_ stream: Stream) -> [UInt8]? { pending[stream] }

    /// Forgets `stream` (its link ended); returns the octets of a frame it left unfinished.
    @inlinable @discardableResult
    public mutating func discard(_ stream: Stream) -> [UInt8]? { pending.removeValue(forKey: stream) }

    /// Forgets every stream `isIncluded` selects.
    public mutating func discardAll(where isIncluded: (Stream) -> Bool) {
        for key in pending.keys where isIncluded(key) { pending[key] = nil }
    }

    /// Feeds one ACL fragment's data of `stream`.
    @inlinable
    public mutating func feed(_ data: [UInt8], boundary: PacketBoundary, stream: Stream) -> Outcome {
        var outcome = Outcome()
        let buffer: [UInt8]
        if boundary.isStart {
            if !pending.isEmpty { outcome.droppedUnfinished = pending[stream] }
            buffer = data
        } else if boundary == .continuing {
            guard let started = pending.removeValue(forKey: stream) else {
                outcome.problem = .continuationWithoutStart(octets: data)
                return outcome
            }
            buffer = started + data
        } else {
            outcome.problem = .invalidBoundary(boundary, octets: data)
            return outcome
        }
        guard let expected = L2CAPBasicFrame.expectedSize(buffer), buffer.count >= expected else {
            pending[stream] = buffer
            return outcome
        }
        // The common case, a whole frame in one fragment, leaves the table untouched.
        if !pending.isEmpty { pending[stream] = nil }
        outcome.frame = L2CAPBasicFrame(channel: UInt16(buffer[2]) | UInt16(buffer[3]) << 8,
                                        payload: Array(buffer[L2CAPBasicFrame.headerSize..<expected]))
        if buffer.count > expected { outcome.problem = .longerThanLength(octets: buffer, expected: expected) }
        return outcome
    }
}

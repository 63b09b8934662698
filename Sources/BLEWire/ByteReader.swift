/// A cursor over little-endian wire bytes. A read that fails throws `DecodeError.truncated`
/// and leaves the cursor where it was, so a caller can report the exact offset.
public struct ByteReader {
    public let bytes: [UInt8]
    /// Offset of the next octet to read.
    public private(set) var offset: Int
    /// End of the readable region (exclusive); lets a reader be limited to one structure.
    public let end: Int

    public init(_ bytes: [UInt8], from start: Int = 0) {
        self.init(bytes, range: start..<max(start, bytes.count))
    }

    /// Limits reading to `range`, cut to the input: a range built from a length field a peer sent
    /// may run past the real end, and reading there must throw `truncated`, not trap.
    public init(_ bytes: [UInt8], range: Range<Int>) {
        self.bytes = bytes
        self.offset = min(max(range.lowerBound, 0), bytes.count)
        self.end = min(max(range.upperBound, offset), bytes.count)
    }

    @inlinable public var remaining: Int { end - offset }
    @inlinable public var isAtEnd: Bool { offset >= end }

    @inline(__always)
    private func require(_ count: Int) throws {
        if count > end - offset {
            throw DecodeError.truncated(needed: count, available: end - offset, at: offset)
        }
    }

    public mutating func readUInt8() throws -> UInt8 {
        try require(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func readInt8() throws -> Int8 {
        Int8(bitPattern: try readUInt8())
    }

    public mutating func readUInt16LE() throws -> UInt16 {
        try require(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    public mutating func readUInt24LE() throws -> UInt32 {
        try require(3)
        defer { offset += 3 }
        return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
    }

    public mutating func readUInt32LE() throws -> UInt32 {
        try require(4)
        var value: UInt32 = 0
        for i in 0..<4 { value |= UInt32(bytes[offset + i]) << (8 * UInt32(i)) }
        offset += 4
        return value
    }

    public mutating func readUInt64LE() throws -> UInt64 {
        try require(8)
        var value: UInt64 = 0
        for i in 0..<8 { value |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += 8
        return value
    }

    public mutating func readBytes(count: Int) throws -> [UInt8] {
        guard count >= 0 else {
            throw DecodeError.invalidValue(field: "length", value: UInt64(bitPattern: Int64(count)), at: offset)
        }
        try require(count)
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Everything up to the end of the readable region.
    public mutating func readRemaining() -> [UInt8] {
        defer { offset = end }
        return offset < end ? Array(bytes[offset..<end]) : []
    }

    /// A 48-bit device address, least significant octet first as on the wire.
    public mutating func readAddress() throws -> BDAddr {
        try require(6)
        var raw: UInt64 = 0
        for i in 0..<6 { raw |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += 6
        return BDAddr(rawValue: raw)
    }

    /// A UUID stored in `width` octets (2, 4 or 16), little-endian.
    public mutating func readUUID(width: Int) throws -> BluetoothUUID {
        switch width {
        case 2: return BluetoothUUID(uuid16: try readUInt16LE())
        case 4: return BluetoothUUID(uuid32: try readUInt32LE())
        case 16:
            // Check the whole width first: a failure between the two halves would move the cursor.
            try require(16)
            let lo = try readUInt64LE()
            let hi = try readUInt64LE()
            return BluetoothUUID(high: hi, low: lo)
        default:
            throw DecodeError.invalidValue(field: "UUID width", value: UInt64(width), at: offset)
        }
    }

    public mutating func skip(_ count: Int) throws {
        guard count >= 0 else {
            throw DecodeError.invalidValue(field: "length", value: UInt64(bitPattern: Int64(count)), at: offset)
        }
        try require(count)
        offset += count
    }

    /// Throws unless every octet has been consumed (for fixed-size structures).
    public func expectEnd() throws {
        if offset < end { throw DecodeError.trailingBytes(count: end - offset, at: offset) }
    }
}

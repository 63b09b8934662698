/// Appends little-endian wire bytes.
public struct ByteWriter {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 32) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    /// Overwrites the octet at `index` (written before): a length known only once what follows is written.
    @inline(__always) public mutating func set(_ value: UInt8, at index: Int) { bytes[index] = value }

    @inline(__always) public mutating func write(_ value: UInt8) { bytes.append(value) }
    @inline(__always) public mutating func write(_ value: Int8) { bytes.append(UInt8(bitPattern: value)) }

    @inline(__always) public mutating func writeUInt16LE(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    public mutating func writeUInt24LE(_ value: UInt32) {
        for i in 0..<3 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
    }

    public mutating func writeUInt32LE(_ value: UInt32) {
        for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
    }

    public mutating func writeUInt64LE(_ value: UInt64) {
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }

    @inline(__always) public mutating func write<C: Collection>(bytes more: C) where C.Element == UInt8 {
        bytes.append(contentsOf: more)
    }

    public mutating func write(address: BDAddr) {
        for i in 0..<6 { bytes.append(UInt8(truncatingIfNeeded: address.rawValue >> (8 * UInt64(i)))) }
    }

    /// Writes `uuid` in its shortest form (2, 4 or 16 octets), little-endian.
    public mutating func write(uuid: BluetoothUUID) {
        write(uuid: uuid, width: uuid.width)
    }

    /// Writes `uuid` in exactly `width` octets; the caller checks it fits (`uuid.fits(width:)`).
    public mutating func write(uuid: BluetoothUUID, width: Int) {
        switch width {
        case 2: writeUInt16LE(UInt16(truncatingIfNeeded: uuid.high >> 32))
        case 4: writeUInt32LE(UInt32(truncatingIfNeeded: uuid.high >> 32))
        default:
            writeUInt64LE(uuid.low)
            writeUInt64LE(uuid.high)
        }
    }

    /// Overwrites a little-endian UInt16 already written at `offset` (length fields known late).
    public mutating func patchUInt16LE(_ value: UInt16, at offset: Int) {
        bytes[offset] = UInt8(truncatingIfNeeded: value)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
    }

    public mutating func patchUInt8(_ value: UInt8, at offset: Int) {
        bytes[offset] = value
    }
}

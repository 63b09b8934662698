/// Why bytes from a peer (or a file) could not be decoded. Every decoder in BLELab throws this,
/// so a caller can always say *where* the input went wrong instead of receiving `nil`.
public enum DecodeError: Error, Equatable, CustomStringConvertible {
    /// The input ended early: `needed` more octets at `offset`, only `available` left.
    case truncated(needed: Int, available: Int, at: Int)
    /// A length field disagrees with what is actually there.
    case lengthMismatch(field: String, declared: Int, actual: Int)
    /// A field holds a value the specification does not allow.
    case invalidValue(field: String, value: UInt64, at: Int)
    /// Octets left over after a complete structure whose size is fixed.
    case trailingBytes(count: Int, at: Int)
    /// A framing or type octet that is not known at all (the stream cannot continue).
    case unknownType(field: String, value: UInt64, at: Int)

    public var description: String {
        switch self {
        case let .truncated(needed, available, at):
            return "truncated: needed \(needed) octet(s) at offset \(at), only \(available) available"
        case let .lengthMismatch(field, declared, actual):
            return "length mismatch in \(field): declared \(declared), actual \(actual)"
        case let .invalidValue(field, value, at):
            return "invalid \(field) 0x\(String(value, radix: 16)) at offset \(at)"
        case let .trailingBytes(count, at):
            return "\(count) unexpected trailing octet(s) at offset \(at)"
        case let .unknownType(field, value, at):
            return "unknown \(field) 0x\(String(value, radix: 16)) at offset \(at)"
        }
    }
}

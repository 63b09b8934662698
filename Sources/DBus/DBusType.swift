/// A D-Bus type, as a signature spells it (D-Bus Specification, "Type System"): the basic types
/// `y b n q i u x t d s o g h`, and the containers `a` (array), `a{..}` (dict entries inside an
/// array), `(..)` (struct) and `v` (variant).
public indirect enum DBusType: Hashable, Sendable, CustomStringConvertible {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case variant
    case array(DBusType)
    /// `a{KV}`: an array of dict entries. Keys are basic types (checked when parsed).
    case dictionary(key: DBusType, value: DBusType)
    case structure([DBusType])

    /// The type's signature, e.g. `a{sv}`.
    public var signature: String {
        switch self {
        case .byte: return "y"
        case .boolean: return "b"
        case .int16: return "n"
        case .uint16: return "q"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .unixFD: return "h"
        case .variant: return "v"
        case .array(let element): return "a" + element.signature
        case .dictionary(let key, let value): return "a{" + key.signature + value.signature + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        }
    }

    public var description: String { signature }

    /// Basic types: the ones a dict entry's key may have.
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: return false
        default: return true
        }
    }

    /// The type whose signature is one basic type code, or nil.
    public init?(basicCode code: UInt8) {
        switch code {
        case UInt8(ascii: "y"): self = .byte
        case UInt8(ascii: "b"): self = .boolean
        case UInt8(ascii: "n"): self = .int16
        case UInt8(ascii: "q"): self = .uint16
        case UInt8(ascii: "i"): self = .int32
        case UInt8(ascii: "u"): self = .uint32
        case UInt8(ascii: "x"): self = .int64
        case UInt8(ascii: "t"): self = .uint64
        case UInt8(ascii: "d"): self = .double
        case UInt8(ascii: "s"): self = .string
        case UInt8(ascii: "o"): self = .objectPath
        case UInt8(ascii: "g"): self = .signature
        case UInt8(ascii: "h"): self = .unixFD
        default: return nil
        }
    }

    /// The types of a signature: zero or more complete types (`"sa{sv}"` → string, a{sv}).
    /// Throws `DBusError.invalidSignature` saying where and why it is not a signature: unknown
    /// code, unbalanced brackets, a dict entry outside an array or with a container key, an empty
    /// struct, nesting past the specification's limits (32 arrays, 32 structs) or over 255 bytes.
    public static func parse(_ signature: String) throws -> [DBusType] {
        let bytes = Array(signature.utf8)
        guard bytes.count <= 255 else {
            throw DBusError.invalidSignature(signature, reason: "longer than 255 bytes")
        }
        var parser = SignatureParser(bytes: bytes, text: signature)
        var types: [DBusType] = []
        while parser.index < bytes.count {
            types.append(try parser.parseOne(arrayDepth: 0, structDepth: 0))
        }
        return types
    }

    /// The one complete type `signature` spells; throws when it spells none or several.
    public static func parseSingle(_ signature: String) throws -> DBusType {
        let types = try parse(signature)
        guard types.count == 1 else {
            throw DBusError.invalidSignature(signature, reason: "expected exactly one complete type, found \(types.count)")
        }
        return types[0]
    }
}

private struct SignatureParser {
    let bytes: [UInt8]
    let text: String
    var index = 0

    init(bytes: [UInt8], text: String) {
        self.bytes = bytes
        self.text = text
    }

    func fail(_ reason: String) -> DBusError {
        .invalidSignature(text, reason: "\(reason) at offset \(index)")
    }

    mutating func parseOne(arrayDepth: Int, structDepth: Int) throws -> DBusType {
        guard index < bytes.count else { throw fail("a complete type is missing") }
        let code = bytes[index]
        if let basic = DBusType(basicCode: code) {
            index += 1
            return basic
        }
        switch code {
        case UInt8(ascii: "v"):
            index += 1
            return .variant
        case UInt8(ascii: "a"):
            guard arrayDepth < 32 else { throw fail("arrays nested deeper than 32") }
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                index += 1
                let key = try parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                guard key.isBasic else { throw fail("a dict entry's key must be a basic type, not \(key.signature)") }
                let value = try parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
                    throw fail("a dict entry has exactly two types and ends with '}'")
                }
                index += 1
                return .dictionary(key: key, value: value)
            }
            return .array(try parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth))
        case UInt8(ascii: "("):
            guard structDepth < 32 else { throw fail("structs nested deeper than 32") }
            index += 1
            var fields: [DBusType] = []
            while index < bytes.count, bytes[index] != UInt8(ascii: ")") {
                fields.append(try parseOne(arrayDepth: arrayDepth, structDepth: structDepth + 1))
            }
            guard index < bytes.count else { throw fail("'(' is not closed") }
            guard !fields.isEmpty else { throw fail("a struct has at least one field") }
            index += 1
            return .structure(fields)
        case UInt8(ascii: "{"):
            throw fail("a dict entry '{' appears only right after 'a'")
        default:
            throw fail("'\(Character(Unicode.Scalar(code)))' is not a type code")
        }
    }
}

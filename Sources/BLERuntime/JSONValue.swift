/// A JSON value with object members in the order they were given, rendered deterministically
/// (RFC 8259): the same value always gives the same text, so JSON reports and timelines of equal
/// runs are equal files.
///
/// - Objects keep their members' order (duplicate keys are written as given; avoid them).
/// - Strings escape `"` and `\`, write U+0008, U+0009, U+000A, U+000C, U+000D as `\b \t \n \f \r`
///   and every other control character below U+0020 as `\u00XX` (lowercase hex); everything else,
///   non-ASCII included, passes through as UTF-8 (RFC 8259, 7).
/// - Integers print in decimal. Doubles print in Swift's shortest round-trip form ("0.1", "1e-07",
///   "2.5e+20"), which is JSON's number grammar and the same on every platform; an integral double
///   keeps ".0". Infinities and NaN, which JSON cannot express, render as `null`.
///
///     let event: JSONValue = ["time_ns": 1_250_000, "kind": "notification", "bytes": [0x48, 0x49]]
///     event.render()              // {"time_ns":1250000,"kind":"notification","bytes":[72,73]}
public enum JSONValue: Hashable, Sendable {
    case object([(key: String, value: JSONValue)])
    case array([JSONValue])
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case null

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case let (.array(x), .array(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.int(x), .int(y)): return x == y
        case let (.double(x), .double(y)): return x == y || (x.isNaN && y.isNaN)
        case let (.bool(x), .bool(y)): return x == y
        case (.null, .null): return true
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case let .object(members):
            hasher.combine(0)
            for member in members { hasher.combine(member.key); hasher.combine(member.value) }
        case let .array(items): hasher.combine(1); hasher.combine(items)
        case let .string(s): hasher.combine(2); hasher.combine(s)
        case let .int(n): hasher.combine(3); hasher.combine(n)
        case let .double(d): hasher.combine(4); hasher.combine(d.isNaN ? .nan : d)
        case let .bool(b): hasher.combine(5); hasher.combine(b)
        case .null: hasher.combine(6)
        }
    }

    /// The member named `key` of an object (the first, if repeated).
    public subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// Compact (no white space) or pretty (two-space indents, one member or element per line,
    /// `"key": value`). No trailing newline either way.
    public func render(pretty: Bool = false) -> String {
        var out = ""
        write(into: &out, pretty: pretty, indent: 0)
        return out
    }

    private func write(into out: inout String, pretty: Bool, indent: Int) {
        switch self {
        case let .object(members):
            guard !members.isEmpty else { out += "{}"; return }
            out += "{"
            for (n, member) in members.enumerated() {
                if n > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                JSONValue.writeString(member.key, into: &out)
                out += pretty ? ": " : ":"
                member.value.write(into: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "}"
        case let .array(items):
            guard !items.isEmpty else { out += "[]"; return }
            out += "["
            for (n, item) in items.enumerated() {
                if n > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                item.write(into: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "]"
        case let .string(s): JSONValue.writeString(s, into: &out)
        case let .int(n): out += String(n)
        case let .double(d): out += d.isFinite ? d.description : "null"
        case let .bool(b): out += b ? "true" : "false"
        case .null: out += "null"
        }
    }

    private static let hexDigits = Array("0123456789abcdef".unicodeScalars)

    /// A JSON string literal for `s` (RFC 8259, 7).
    public static func quoted(_ s: String) -> String {
        var out = ""
        writeString(s, into: &out)
        return out
    }

    private static func writeString(_ s: String, into out: inout String) {
        var scalars = String.UnicodeScalarView()
        scalars.append("\"")
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": scalars.append(contentsOf: "\\\"".unicodeScalars)
            case "\\": scalars.append(contentsOf: "\\\\".unicodeScalars)
            case "\u{08}": scalars.append(contentsOf: "\\b".unicodeScalars)
            case "\u{0C}": scalars.append(contentsOf: "\\f".unicodeScalars)
            case "\n": scalars.append(contentsOf: "\\n".unicodeScalars)
            case "\r": scalars.append(contentsOf: "\\r".unicodeScalars)
            case "\t": scalars.append(contentsOf: "\\t".unicodeScalars)
            case _ where scalar.value < 0x20:
                scalars.append(contentsOf: "\\u00".unicodeScalars)
                scalars.append(hexDigits[Int(scalar.value >> 4)])
                scalars.append(hexDigits[Int(scalar.value & 0xF)])
            default:
                scalars.append(scalar)
            }
        }
        scalars.append("\"")
        out += String(scalars)
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Members keep the order they are written in.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements.map { (key: $0.0, value: $0.1) }) }
    public init(nilLiteral: ()) { self = .null }
}

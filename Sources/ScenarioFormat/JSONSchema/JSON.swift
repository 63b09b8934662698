/// A JSON value with its object members in the order written, printed the same way every time
/// (two-space indentation, a newline at the end): what `blelab schema` prints and
/// schema/blelab-scenario.schema.json holds.
public indirect enum JSON: Equatable {
    case string(String)
    case number(Int64)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    public static func == (a: JSON, b: JSON) -> Bool { a.text == b.text }

    /// The member `key` of an object (nil for other values, or when absent).
    public subscript(_ key: String) -> JSON? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// The text, pretty-printed, with a final newline.
    public var text: String {
        var out = ""
        write(to: &out, indent: "")
        return out + "\n"
    }

    private func write(to out: inout String, indent: String) {
        switch self {
        case let .string(s): out += Self.quoted(s)
        case let .number(n): out += String(n)
        case let .bool(b): out += b ? "true" : "false"
        case .null: out += "null"
        case let .array(items):
            // Short arrays of scalars on one line: enums and type lists stay readable.
            if items.allSatisfy(\.isScalar), items.count <= 12 {
                out += "[" + items.map { item -> String in var s = ""; item.write(to: &s, indent: ""); return s }.joined(separator: ", ") + "]"
                return
            }
            guard !items.isEmpty else { out += "[]"; return }
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += indent + "  "
                item.write(to: &out, indent: indent + "  ")
                out += i == items.count - 1 ? "\n" : ",\n"
            }
            out += indent + "]"
        case let .object(members):
            guard !members.isEmpty else { out += "{}"; return }
            out += "{\n"
            for (i, (key, value)) in members.enumerated() {
                out += indent + "  " + Self.quoted(key) + ": "
                value.write(to: &out, indent: indent + "  ")
                out += i == members.count - 1 ? "\n" : ",\n"
            }
            out += indent + "}"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .array, .object: return false
        default: return true
        }
    }

    /// RFC 8259 section 7: the quote, the backslash and control characters escaped.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
}

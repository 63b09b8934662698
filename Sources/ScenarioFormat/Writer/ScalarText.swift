import BLERuntime
import BLEWire

/// How the writer spells scalars (docs/scenarios.md section 4): always in a form the schema reads
/// back to the same value, and the same form for the same value.
public enum ScalarText {
    /// A name or other free text: plain when the YAML subset reads it back unchanged in block and
    /// flow context alike, else double-quoted.
    public static func text(_ text: String) -> String {
        isPlain(text) ? text : quoted(text)
    }

    /// Always double-quoted, with the escapes the subset reads.
    public static func quoted(_ text: String) -> String { "\"" + escaped(text) + "\"" }

    /// Letters, digits and `_ - . / ( ) +`, with single spaces between words; not starting with
    /// a character YAML gives a meaning (`-`, `.`, `(`…).
    static func isPlain(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, let last = text.unicodeScalars.last,
              first.isASCII, first.properties.isAlphabetic || ("0"..."9").contains(first) || first == "_",
              last != " " else { return false }
        var previous: Unicode.Scalar = first
        for s in text.unicodeScalars {
            guard s.isASCII else { return false }
            let ok = s.properties.isAlphabetic || ("0"..."9").contains(s) || "_-./()+ ".unicodeScalars.contains(s)
            if !ok || (s == " " && previous == " ") { return false }
            previous = s
        }
        return true
    }

    /// Escapes for a YAML double-quoted scalar.
    static func escaped(_ text: String) -> String {
        var out = ""
        for s in text.unicodeScalars {
            switch s {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where s.value < 0x20 || (0x7F...0x9F).contains(s.value):
                out += "\\x" + hex8(UInt8(s.value))
            default: out.unicodeScalars.append(s)
            }
        }
        return out
    }

    // MARK: Values

    /// An attribute value: `"text:hello"` when the octets are text a person would read (UTF-8,
    /// printable, at least two characters, mostly letters and digits), else `hex:01 02`.
    /// Double quotes keep any character safe in block and flow context.
    public static func value(_ bytes: [UInt8]) -> String {
        if let text = readableText(bytes) { return "\"text:" + escaped(text) + "\"" }
        return hex(bytes)
    }

    /// `hex:01 02 03`; `"hex:"`, quoted, for no octets (a plain `hex:` would read as a mapping key).
    public static func hex(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "\"hex:\"" : "hex:" + bytes.map(hex8).joined(separator: " ")
    }

    static func readableText(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 2, let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var letters = 0
        for s in text.unicodeScalars {
            switch s.value {
            case 0x0A, 0x0D, 0x09: continue
            case 0..<0x20, 0x7F..<0xA0, 0xFFFD: return nil
            default: if s.properties.isAlphabetic || s.properties.numericType != nil { letters += 1 }
            }
        }
        // Mostly letters and digits: "ready", "IOS_TEST\n", "안녕 hello"; not "\u{1}\u{2}".
        guard letters * 2 >= text.unicodeScalars.count else { return nil }
        return text
    }

    // MARK: Numbers

    /// A duration in the largest unit that gives it exactly: `2s`, `250ms`, `48.75ms`, `7us`,
    /// `1.5us`.
    public static func duration(_ span: TimeSpan) -> String {
        let ns = span.nanoseconds
        if ns % 1_000_000_000 == 0 { return "\(ns / 1_000_000_000)s" }
        if ns % 1_000_000 == 0 { return "\(ns / 1_000_000)ms" }
        if ns % 10_000 == 0 { return decimal(ns / 1000, places: 3) + "ms" }
        if ns % 1000 == 0 { return "\(ns / 1000)us" }
        return decimal(ns, places: 3) + "us"
    }

    /// `value / 10^places` with the trailing zeros of its fraction dropped.
    static func decimal(_ value: Int64, places: Int) -> String {
        var scale: Int64 = 1
        for _ in 0..<places { scale *= 10 }
        var fraction = String(value % scale)
        fraction = String(repeating: "0", count: places - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return fraction.isEmpty ? "\(value / scale)" : "\(value / scale).\(fraction)"
    }

    /// A handle: `0x000c`.
    public static func handle(_ h: UInt16) -> String {
        let s = String(h, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 4 - s.count)) + s
    }

    /// One octet: `0x06`.
    static func octet(_ b: UInt8) -> String { "0x" + hex8(b) }

    /// A number with a decimal point where it has one, such that `Double(text) == value`:
    /// `10`, `2.5`, `0.00001` (never an exponent, which the format does not read).
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        let text = "\(value)"
        guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }), let exponent = Int(text[text.index(after: e)...]) else { return text }
        // The shortest digits Swift found, with the point moved by the exponent.
        let mantissa = text[..<e]
        let negative = mantissa.hasPrefix("-")
        let unsigned = negative ? mantissa.dropFirst() : mantissa[...]
        let point = unsigned.firstIndex(of: ".").map { unsigned.distance(from: unsigned.startIndex, to: $0) } ?? unsigned.count
        let digits = Array(unsigned.filter { $0 != "." })
        let position = point + exponent
        var out: String
        if position <= 0 {
            out = "0." + String(repeating: "0", count: -position) + String(digits)
        } else if position >= digits.count {
            out = String(digits) + String(repeating: "0", count: position - digits.count)
        } else {
            out = String(digits[..<position]) + "." + String(digits[position...])
        }
        if out.contains(".") {
            while out.hasSuffix("0") { out.removeLast() }
            if out.hasSuffix(".") { out.removeLast() }
        }
        return (negative ? "-" : "") + out
    }

    /// A probability as the percentage `loss:` takes (`12.5%`), which reads back to exactly
    /// `rate` (`loss` is the percentage over 100): one of the numbers next to `rate × 100`.
    static func percentage(_ rate: Double) -> String {
        var below = rate * 100, above = below
        for _ in 0..<16 {
            for candidate in [below, above] {
                let text = number(candidate)
                if let back = Double(text), back / 100 == rate { return text + "%" }
            }
            below = below.nextDown
            above = above.nextUp
        }
        return number(rate * 100) + "%"
    }
}

/// Two lowercase hexadecimal digits.
func hex8(_ b: UInt8) -> String { (b < 16 ? "0" : "") + String(b, radix: 16) }

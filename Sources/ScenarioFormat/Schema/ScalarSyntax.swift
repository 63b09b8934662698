import ATT
import BLERuntime
import BLEWire
import GATT
import HCI
import YAMLSubset

/// The scalar forms of the format (docs/scenarios.md section 4), as pure parsers over text. Nil means "not that form"; the schema reports it.
public enum ScalarSyntax {
    /// `250ms`, `1s`, `1.5s`, `2m` (also `us`, `µs` and `h`); never negative.
    public static func duration(_ text: String) -> TimeSpan? {
        for (suffix, length) in durationUnits where text.hasSuffix(suffix) {
            let nanoseconds = Double(length)
            let number = String(text.dropLast(suffix.count))
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                  number.first != ".", number.last != ".", number.filter({ $0 == "." }).count <= 1,
                  let value = Double(number), value.isFinite else { return nil }
            let total = value * nanoseconds
            guard total < 9_223_372_036_854_775_808.0 else { return nil }   // 2^63 ns: beyond the clock
            return TimeSpan(nanoseconds: Int64(total.rounded()))
        }
        return nil
    }

    /// The units of a duration and their length in nanoseconds, longest suffix first.
    static let durationUnits: [(String, Int64)] = [("ms", 1_000_000), ("us", 1_000), ("µs", 1_000), ("s", 1_000_000_000),
                                                   ("m", 60_000_000_000), ("h", 3_600_000_000_000)]

    /// How to fix a duration that does not parse, when the mistake is a common one.
    static func durationHint(_ text: String) -> String? {
        // A well-formed number and unit that does not parse is too large for the clock (signed
        // 64-bit nanoseconds): say so, with the limit in the unit written — the unit is right.
        for (suffix, nanoseconds) in durationUnits where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                  number.first != ".", number.last != ".", number.filter({ $0 == "." }).count <= 1 else { break }
            return "\(number) is too large: a duration is at most \(Int64.max / nanoseconds)\(suffix) (about 292 years)"
        }
        if unsigned(text) != nil { return "add a unit: \(text)ms or \(text)s" }
        if text.hasPrefix("-") { return "a duration cannot be negative" }
        if text.contains(","), duration(text.replacingAll(",", with: ".")) != nil {
            return "write a decimal with a point: \(text.replacingAll(",", with: "."))"
        }
        if text.contains(" "), duration(text.replacingAll(" ", with: "")) != nil {
            return "write the unit right after the number: \(text.replacingAll(" ", with: ""))"
        }
        let number = String(text.prefix { $0.isASCII && ($0.isNumber || $0 == ".") })
        let unit = text.dropFirst(number.count).lowercased()
        guard !number.isEmpty, !unit.isEmpty, unit.allSatisfy(\.isLetter) else { return nil }
        let aliases: [(String, [String])] = [
            ("ms", ["msec", "msecs", "millis", "millisecond", "milliseconds"]),
            ("s", ["sec", "secs", "second", "seconds"]),
            ("m", ["min", "mins", "minute", "minutes"]),
            ("h", ["hr", "hrs", "hour", "hours"]),
        ]
        if let (short, _) = aliases.first(where: { $0.1.contains(unit) }) { return "write '\(short)' for \(unit): \(number)\(short)" }
        return "the units are us, ms, s, m and h, such as \(number)s"
    }

    /// A non-negative integer: decimal, or hexadecimal with `0x`.
    public static func unsigned(_ text: String) -> UInt64? {
        let lower = text.lowercased()
        if lower.hasPrefix("0x") {
            let digits = lower.dropFirst(2)
            guard !digits.isEmpty, digits.allSatisfy(\.isHexDigit) else { return nil }
            return UInt64(digits, radix: 16)
        }
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(text)
    }

    /// Decimal digits, or `0x` and hexadecimal digits, however many: a numeral, whether or not
    /// its number fits 64 bits.
    static func isNumeral(_ text: String) -> Bool {
        let lower = text.lowercased()
        if lower.hasPrefix("0x") { return lower.count > 2 && lower.dropFirst(2).allSatisfy { $0.isHexDigit && $0.isASCII } }
        return !text.isEmpty && text.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// A decimal integer, optionally negative (`-48`).
    public static func signed(_ text: String) -> Int64? {
        if text.hasPrefix("-") { return unsigned(String(text.dropFirst())).flatMap { $0 <= UInt64(Int64.max) ? -Int64($0) : nil } }
        return unsigned(text).flatMap { $0 <= UInt64(Int64.max) ? Int64($0) : nil }
    }

    /// YAML 1.2's core booleans only: `true` / `false` (not `yes`, `no`, `on`).
    public static func boolean(_ text: String) -> Bool? {
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default: return nil
        }
    }

    /// The value prefixes, for messages and did-you-mean.
    static let valuePrefixes = ["text:", "hex:", "u8:", "u16:", "u32:"]

    /// One value scalar: `text:…`, `hex:…` (spaces allowed), `u8:`/`u16:`/`u32:` (little-endian).
    /// Fails with what is wrong.
    public static func bytes(_ text: String) -> Result<[UInt8], ValueSyntaxError> {
        if text.hasPrefix("text:") { return .success(Array(text.dropFirst(5).utf8)) }
        if text.hasPrefix("hex:") {
            let digits = text.dropFirst(4).filter { $0 != " " }
            guard digits.allSatisfy({ $0.isHexDigit && $0.isASCII }) else { return .failure(.badHex) }
            guard digits.count % 2 == 0 else { return .failure(.oddHex) }
            var out: [UInt8] = []
            var i = digits.startIndex
            while i < digits.endIndex {
                let j = digits.index(i, offsetBy: 2)
                guard let b = UInt8(digits[i..<j], radix: 16) else { return .failure(.badHex) }
                out.append(b)
                i = j
            }
            return .success(out)
        }
        for (prefix, width) in [("u8:", 1), ("u16:", 2), ("u32:", 4)] where text.hasPrefix(prefix) {
            let digits = String(text.dropFirst(prefix.count))
            guard let n = unsigned(digits) else {
                // All digits, yet no 64-bit number: too large, not "not a number".
                if isNumeral(digits) { return .failure(.outOfRange(prefix, max: (1 << (8 * UInt64(width))) - 1)) }
                return .failure(.badNumber(prefix))
            }
            guard n < (1 << (8 * UInt64(width))) else { return .failure(.outOfRange(prefix, max: (1 << (8 * UInt64(width))) - 1)) }
            return .success((0..<width).map { UInt8(truncatingIfNeeded: n >> (8 * UInt64($0))) })
        }
        return .failure(.noPrefix)
    }

    public enum ValueSyntaxError: Error, Equatable {
        case noPrefix
        case badHex
        case oddHex
        case badNumber(String)
        case outOfRange(String, max: UInt64)
    }

    /// `2A19` or `180F/2A19`.
    public static func characteristicRef(_ text: String) -> CharacteristicRef? { CharacteristicRef(string: text) }
}

// MARK: Reading scalar nodes

extension SchemaReader {
    func duration(_ node: YAMLNode, _ what: String = "a duration") -> TimeSpan? {
        guard let s = scalar(node, "\(what) such as 250ms, 1s, 1.5s or 2m") else { return nil }
        if let t = ScalarSyntax.duration(s.text) { return t }
        error(node, expected: "\(what) such as 250ms, 1s, 1.5s or 2m", hint: ScalarSyntax.durationHint(s.text))
        return nil
    }

    func boolean(_ node: YAMLNode) -> Bool? {
        guard let s = scalar(node, "true or false") else { return nil }
        if let b = ScalarSyntax.boolean(s.text) { return b }
        var hint: String?
        switch s.text.lowercased() {
        case "yes", "y", "on": hint = "write true (YAML 1.2 reads only true and false as booleans)"
        case "no", "n", "off": hint = "write false (YAML 1.2 reads only true and false as booleans)"
        default: break
        }
        error(node, expected: "true or false", hint: hint)
        return nil
    }

    func integer(_ node: YAMLNode, in range: ClosedRange<Int64>, _ what: String) -> Int64? {
        guard let s = scalar(node, what) else { return nil }
        guard let n = ScalarSyntax.signed(s.text), range.contains(n) else {
            error(node, expected: what)
            return nil
        }
        return n
    }

    func uuid(_ node: YAMLNode, _ what: String = "a UUID") -> BluetoothUUID? {
        let expected = "\(what) (16-bit like 180D, 32-bit, or 128-bit like 6E400001-B5A3-F393-E0A9-E50E24DCCA9E)"
        guard let s = scalar(node, expected) else { return nil }
        if let u = BluetoothUUID(string: s.text) { return u }
        error(node, expected: expected, hint: Self.uuidHint(s.text))
        return nil
    }

    /// What is wrong with a UUID that does not parse: a character that is no hexadecimal digit,
    /// or the number of digits.
    static func uuidHint(_ text: String) -> String? {
        if let bad = text.first(where: { !($0.isHexDigit && $0.isASCII) && $0 != "-" }) {
            return "'\(bad)' is not a hexadecimal digit" + (bad == "O" || bad == "o" ? " (0 is)" : "")
        }
        let digits = text.filter { $0 != "-" }.count
        if ![4, 8, 32].contains(digits) {
            return "a UUID has 4, 8 or 32 hexadecimal digits, not \(digits)"
        }
        return "write a 128-bit UUID as 8-4-4-4-12 digits, or as 32 digits without dashes"
    }

    func uuids(_ node: YAMLNode, _ what: String) -> [BluetoothUUID]? {
        guard let items = items(node, "a list of \(what) UUIDs such as [FFE0, 180D]") else { return nil }
        let parsed = items.map { uuid($0, "a \(what) UUID") }
        return parsed.contains { $0 == nil } ? nil : parsed.compactMap { $0 }
    }

    func properties(_ node: YAMLNode) -> CharacteristicProperties? {
        let names = CharacteristicProperties.named.map(\.1)
        guard let items = items(node, "a list of properties such as [read, notify]") else { return nil }
        var result: CharacteristicProperties = []
        var ok = true
        for item in items {
            guard let s = scalar(item, "a property (\(names.joined(separator: ", ")))") else { ok = false; continue }
            guard let p = CharacteristicProperties(name: s.text) else {
                let squeezed = s.text.lowercased().filter { $0.isLetter }
                let hint = squeezed == "writewithresponse" || squeezed == "withresponse"
                    ? "a characteristic that takes Write Requests (write with response) has 'write'"
                    : Spelling.suggestion(for: s.text, in: names)
                error(at: s.mark, found: "property \(Self.quote(s.text))", expected: "one of \(names.joined(separator: ", "))",
                      hint: hint)
                ok = false
                continue
            }
            result.insert(p)
        }
        return ok ? result : nil
    }

    func attError(_ node: YAMLNode) -> ATTErrorCode? {
        let expected = "an ATT error name such as write-not-permitted or insufficient-authentication, or 0xNN"
        guard let s = scalar(node, expected) else { return nil }
        if let code = ATTErrorCode(name: s.text) { return code }
        let names = (1...0x13).map { ATTErrorCode(UInt8($0)).name } + (0xFC...0xFF).map { ATTErrorCode(UInt8($0)).name }
        error(at: s.mark, found: "ATT error \(Self.quote(s.text))", expected: expected, hint: Spelling.suggestion(for: s.text, in: names))
        return nil
    }

    func reason(_ node: YAMLNode) -> HCIStatus? {
        let expected = "a disconnect reason such as remote-user-terminated or connection-timeout, or 0xNN"
        guard let s = scalar(node, expected) else { return nil }
        if let status = HCIStatus(name: s.text) { return status }
        error(at: s.mark, found: "reason \(Self.quote(s.text))", expected: expected,
              hint: Spelling.suggestion(for: s.text, in: HCIStatus.allNames))
        return nil
    }

    // MARK: Values

    /// Bytes for a value written as a scalar or a list of scalars (no generators, no `written`).
    func bytes(_ node: YAMLNode) -> [UInt8]? {
        guard let source = value(node, context: .plain) else { return nil }
        return source.flattenedBytes
    }

    /// The longest attribute value (Core Vol 3 Part F 3.2.9).
    static let maximumValueLength = 512

    /// Whether `octets` fit an attribute value; reports it at `node` when they do not. A longer
    /// value can never be stored, read, written or notified whole, so a step with one could only
    /// fail, or pass having done something else.
    func checkValueLength(_ octets: Int, at node: YAMLNode) -> Bool {
        guard octets > Self.maximumValueLength else { return true }
        error(at: node.mark, found: "\(Self.found(node)), a value of \(octets) octets",
              expected: "a value of at most \(Self.maximumValueLength) octets, the longest an attribute holds (Core Vol 3 Part F 3.2.9)")
        return false
    }

    /// `bytes(node)`, refused when longer than an attribute value.
    func attributeBytes(_ node: YAMLNode) -> [UInt8]? {
        guard let b = bytes(node), checkValueLength(b.count, at: node) else { return nil }
        return b
    }

    /// `value(node, context:)`, refused when its fixed part alone is longer than an attribute value.
    func attributeValue(_ node: YAMLNode, context: ValueContext) -> ValueSource? {
        guard let v = value(node, context: context), checkValueLength(v.minimumLength, at: node) else { return nil }
        return v
    }

    enum ValueContext: Equatable {
        /// A characteristic's initial value or an expectation: bytes only.
        case plain
        /// A peripheral action: generators allowed; `written` when `writtenAllowed`.
        case action(writtenAllowed: Bool)
    }

    /// A value: a prefixed scalar, `written`, a generator, or a list of these (concatenated).
    func value(_ node: YAMLNode, context: ValueContext) -> ValueSource? {
        let expected = "a value such as text:hello, hex:4c000215, u8:7, u16:500, u32:1 or a list of them"
        switch node {
        case let .scalar(s) where !s.isEmpty:
            if s.text == "written" {
                if context == .action(writtenAllowed: true) { return .written }
                error(node, expected: expected, hint: context == .plain
                      ? "'written' stands for the bytes just written, in peripheral actions only"
                      : "'written' stands for the bytes just written, in on-write only")
                return nil
            }
            switch ScalarSyntax.bytes(s.text) {
            case let .success(b): return .bytes(b)
            case let .failure(why):
                let hint: String?
                switch why {
                case .noPrefix:
                    let names = ScalarSyntax.valuePrefixes.map { String($0.dropLast()) }
                    let word = s.text.prefix { $0 != " " && $0 != "=" }
                    if let name = names.first(where: { $0 == word.lowercased() }) {
                        let rest = s.text.dropFirst(word.count).drop { $0 == " " || $0 == "=" }
                        hint = "a value's prefix ends with a colon: \(name):\(rest.isEmpty ? "…" : String(rest))"
                    } else if let colon = s.text.firstIndex(of: ":") {
                        let prefix = String(s.text[...colon])
                        hint = Spelling.suggestion(for: prefix, in: ScalarSyntax.valuePrefixes)
                            ?? "a value starts with text:, hex:, u8:, u16: or u32:"
                    } else {
                        hint = "write text:\(s.text) for text, hex:… for bytes"
                    }
                case .badHex:
                    let bad = s.text.dropFirst(4).first { $0 != " " && !($0.isHexDigit && $0.isASCII) }
                    hint = "hex: takes hexadecimal digits (spaces allowed)" + (bad.map { ", and '\($0)' is not one" } ?? "")
                case .oddHex:
                    let digits = s.text.dropFirst(4).filter { $0 != " " }.count
                    hint = "hex: needs two digits per byte, and \(digits) digits is an odd number"
                case let .badNumber(prefix):
                    if s.text.dropFirst(prefix.count).hasPrefix("-") {
                        let bits = UInt64(prefix.dropFirst().dropLast()) ?? 8
                        hint = "\(prefix) is unsigned: it takes 0 to \((1 << bits) - 1)"
                    } else {
                        hint = "\(prefix) takes a number, decimal or 0x…"
                    }
                case let .outOfRange(prefix, max): hint = "\(prefix) takes 0 to \(max)"
                }
                error(node, expected: expected, hint: hint)
                return nil
            }
        case let .sequence(seq):
            let parts = seq.items.map { value($0, context: context) }
            guard !parts.contains(where: { $0 == nil }) else { return nil }
            return ValueSource.concatenating(parts.compactMap { $0 })
        case let .mapping(m) where context != .plain:
            return generator(m, node: node)
        default:
            error(node, expected: context == .plain ? expected : expected + ", or a generator ({ random-u8: [59, 61] }, { counter-u8: 0 }, { sequence: [...] })")
            return nil
        }
    }

    private func generator(_ m: YAMLMapping, node: YAMLNode) -> ValueSource? {
        let kinds = ["random-u8", "counter-u8", "sequence"]
        guard m.count == 1, let (key, v) = m.entries.first else {
            error(node, expected: "a generator with one key (random-u8, counter-u8 or sequence)")
            return nil
        }
        switch key.text {
        case "random-u8":
            guard let items = sequence(v, "a range [low, high] such as [59, 61]")?.items else { return nil }
            guard items.count == 2 else {
                error(v, expected: "a range of two numbers [low, high] such as [59, 61]")
                return nil
            }
            guard let lo = integer(items[0], in: 0...255, "a number from 0 to 255"),
                  let hi = integer(items[1], in: 0...255, "a number from 0 to 255") else { return nil }
            guard lo <= hi else {
                error(v, expected: "a range [low, high] with low <= high")
                return nil
            }
            return .randomU8(UInt8(lo)...UInt8(hi))
        case "counter-u8":
            guard let start = integer(v, in: 0...255, "a start value from 0 to 255") else { return nil }
            return .counterU8(start: UInt8(start))
        case "sequence":
            guard let items = sequence(v, "a list of values such as [text:a, text:b]")?.items else { return nil }
            guard !items.isEmpty else {
                error(v, expected: "at least one value")
                return nil
            }
            let values = items.map { bytes($0) }
            guard !values.contains(where: { $0 == nil }) else { return nil }
            return .sequence(values.compactMap { $0 })
        default:
            error(at: key.mark, found: "generator \(Self.quote(key.text))", expected: "random-u8, counter-u8 or sequence",
                  hint: Spelling.suggestion(for: key.text, in: kinds))
            return nil
        }
    }
}

extension ValueSource {
    /// Parts concatenated, with runs of plain bytes merged (a list of plain bytes is plain bytes).
    public static func concatenating(_ parts: [ValueSource]) -> ValueSource {
        var merged: [ValueSource] = []
        for part in parts {
            let pieces: [ValueSource]
            if case let .concatenation(inner) = part { pieces = inner } else { pieces = [part] }
            for piece in pieces {
                if case let .bytes(b) = piece, case let .bytes(a)? = merged.last {
                    merged[merged.count - 1] = .bytes(a + b)
                } else {
                    merged.append(piece)
                }
            }
        }
        if merged.isEmpty { return .bytes([]) }
        return merged.count == 1 ? merged[0] : .concatenation(merged)
    }

    /// The fewest octets it can give (`written` counts as none; a sequence as its shortest).
    var minimumLength: Int {
        switch self {
        case let .bytes(b): return b.count
        case .written: return 0
        case .randomU8, .counterU8: return 1
        case let .sequence(list): return list.map(\.count).min() ?? 0
        case let .concatenation(parts): return parts.reduce(0) { $0 + $1.minimumLength }
        }
    }

    /// The bytes, when the value is plain bytes.
    var flattenedBytes: [UInt8]? {
        if case let .bytes(b) = self { return b }
        return nil
    }
}

import BLEWire

/// How the imported scenario writes values, UUIDs, durations and names: always in forms the
/// scenario loader reads back to the same bytes (docs/scenarios.md, section 4).
enum YAMLValues {
    /// `"text:hello"` when the octets are text a person would read (UTF-8, printable, at least two
    /// characters), else `hex:01 02`. Double quotes keep any character safe in block and flow context.
    static func value(_ bytes: [UInt8]) -> String {
        if let text = readableText(bytes) { return "\"text:" + escaped(text) + "\"" }
        return hex(bytes)
    }

    /// `hex:01 02 03`; `"hex:"`, quoted, for no octets (a plain `hex:` would read as a mapping key).
    static func hex(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "\"hex:\"" : "hex:" + bytes.map(hex8).joined(separator: " ")
    }

    static func readableText(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 2 else { return nil }
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var scalars = String.UnicodeScalarView()
        loop: while true {
            switch decoder.decode(&iterator) {
            case let .scalarValue(s): scalars.append(s)
            case .emptyInput: break loop
            case .error: return nil
            }
        }
        var letters = 0
        for s in scalars {
            switch s.value {
            case 0x0A, 0x0D, 0x09: continue
            case 0..<0x20, 0x7F..<0xA0, 0xFFFD: return nil
            default: if s.properties.isAlphabetic || s.properties.numericType != nil { letters += 1 }
            }
        }
        // Mostly letters and digits: "ready", "IOS_TEST\n", "안녕 hello"; not "\u{1}\u{2}".
        guard letters * 2 >= scalars.count else { return nil }
        return String(scalars)
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

    /// A scalar for a name or other free text: double-quoted.
    static func quoted(_ text: String) -> String { "\"" + escaped(text) + "\"" }

    /// `FFE0`, `6E400001-B5A3-F393-E0A9-E50E24DCCA9E`.
    static func uuid(_ uuid: BluetoothUUID) -> String { uuid.description }

    /// Whole milliseconds (`250ms`), or seconds when exact (`2s`); never below 1ms.
    static func duration(microseconds us: Int64) -> String {
        let ms = max(1, (us + 999) / 1000)
        return ms % 1000 == 0 ? "\(ms / 1000)s" : "\(ms)ms"
    }

    /// A scan interval or window (units of 0.625 ms) as a duration the scenario reads back to the
    /// same units: `10ms`, `11.25ms`, `1.28s`, `10.24s`.
    static func scanDuration(units: UInt16) -> String {
        let us = Int64(units) * 625
        if us >= 1_000_000, us % 10_000 == 0 {
            var fraction = String(us % 1_000_000 / 10_000)
            if fraction.count == 1 { fraction = "0" + fraction }
            while fraction.hasSuffix("0") { fraction.removeLast() }
            return fraction.isEmpty ? "\(us / 1_000_000)s" : "\(us / 1_000_000).\(fraction)s"
        }
        if us % 1000 == 0 { return "\(us / 1000)ms" }
        if us % 10 == 0 {
            var fraction = String(us % 1000)
            fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
            while fraction.hasSuffix("0") { fraction.removeLast() }
            return "\(us / 1000).\(fraction)ms"
        }
        return "\(us)us"
    }

    /// The scenario's names for the characteristic properties octet (Core 5.4, Vol 3, Part G, 3.3.1.1).
    static func properties(_ octet: UInt8) -> [String] {
        let names = ["broadcast", "read", "write-without-response", "write", "notify", "indicate",
                     "authenticated-signed-writes", "extended-properties"]
        return (0..<8).filter { octet & (1 << $0) != 0 }.map { names[$0] }
    }

    /// A peripheral id from an advertised name: lower case letters, digits and dashes.
    static func identifier(from name: String?) -> String {
        var out = ""
        for ch in (name ?? "").lowercased().unicodeScalars {
            if ("a"..."z").contains(ch) || ("0"..."9").contains(ch) || ch == "_" || ch == "." {
                out.unicodeScalars.append(ch)
            } else if !out.isEmpty && !out.hasSuffix("-") {
                out += "-"
            }
        }
        while out.hasSuffix("-") || out.hasSuffix(".") || out.hasSuffix("_") { out.removeLast() }
        if out.isEmpty || out == "central" { return "peripheral" }
        return String(out.prefix(32))
    }
}

/// Parses the bytes of `file` as the scenario YAML subset. A YAML stream is Unicode text (YAML 1.2
/// §5.2); scenario files are UTF-8. Bytes that are not well-formed UTF-8 (Unicode 15 §3.9, table
/// 3-7: a stray continuation byte, a truncated sequence, an overlong form, a surrogate, a code
/// point above U+10FFFF) throw a `YAMLError` at the line and column of the first such byte —
/// never a silent U+FFFD that would change a name or a value behind the user's back.
public func parseYAML(bytes: [UInt8], file: String) throws -> YAMLNode {
    try parseYAML(UTF8Check.text(of: bytes, file: file), file: file)
}

/// Strict UTF-8 decoding that says where it fails.
public enum UTF8Check {
    /// The text of `bytes`, or a `YAMLError` at the first byte that is not well-formed UTF-8.
    public static func text(of bytes: [UInt8], file: String) throws -> String {
        guard let bad = firstInvalidByte(bytes) else { return String(decoding: bytes, as: UTF8.self) }
        // The line: after the last line break before `bad` (\n, \r\n or a lone \r, as `Source`).
        var lineNumber = 1
        var lineStart = 0
        var i = 0
        while i < bad {
            if bytes[i] == 0x0A || (bytes[i] == 0x0D && (i + 1 >= bytes.count || bytes[i + 1] != 0x0A)) {
                lineNumber += 1
                lineStart = i + 1
            }
            i += 1
        }
        // Columns count Characters of the well-formed text before it, as `Mark` does; a byte order
        // mark that starts the file is not counted.
        var prefix = Array(bytes[lineStart..<bad])
        if lineStart == 0, prefix.starts(with: [0xEF, 0xBB, 0xBF]) { prefix.removeFirst(3) }
        let column = String(decoding: prefix, as: UTF8.self).count + 1
        let shown = bytes[bad..<min(bytes.count, bad + 4)].prefix { $0 >= 0x80 }.map { "0x" + Parser.hex(UInt32($0), digits: 2) }
        let what = shown.count > 1 ? "bytes " + shown.joined(separator: " ") : "byte " + (shown.first ?? "0x??")
        throw YAMLError(file: file, mark: Mark(line: lineNumber, column: column),
                        found: "\(what), which is not UTF-8", expected: "text encoded in UTF-8",
                        hint: "scenario files are UTF-8; save the file as UTF-8 (your editor's encoding setting, or iconv -f latin1 -t utf-8 for a Latin-1 file)")
    }

    /// The offset of the first byte that does not belong to a well-formed UTF-8 sequence, or nil.
    public static func firstInvalidByte(_ bytes: [UInt8]) -> Int? {
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            if b < 0x80 {
                i += 1
                continue
            }
            // The length of the sequence and the range its second byte must lie in (table 3-7).
            let length: Int
            var second: ClosedRange<UInt8> = 0x80...0xBF
            switch b {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; second = 0xA0...0xBF
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; second = 0x80...0x9F
            case 0xF0: length = 4; second = 0x90...0xBF
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; second = 0x80...0x8F
            default: return i   // a continuation byte alone, C0, C1, F5–FF
            }
            guard i + 1 < n, second.contains(bytes[i + 1]) else { return i }
            for k in 2..<length {
                guard i + k < n, (0x80...0xBF).contains(bytes[i + k]) else { return i }
            }
            i += length
        }
        return nil
    }
}

/// Nodes that fit on one line — scalars, and the dispatch to flow collections — and the
/// indicators the subset refuses where a value starts.
extension Parser {
    /// A flow collection, a quoted scalar or a plain scalar starting at `position`, and the
    /// position just after it. In a flow collection (`inFlow`) plain scalars also stop at `,[]{}`.
    mutating func parseInlineNode(at position: Int, inFlow: Bool) throws -> (node: YAMLNode, end: Int) {
        switch text[position] {
        case "[", "{":
            return try parseFlowCollection(at: position)
        case "\"":
            return try parseDoubleQuoted(at: position)
        case "'":
            return try parseSingleQuoted(at: position)
        default:
            try checkPlainStart(at: position, inFlow: inFlow)
            return try parsePlain(at: position, inFlow: inFlow)
        }
    }

    /// Refuses what cannot start a plain scalar (YAML 1.2's indicators), naming the construct the
    /// subset leaves out when it is one.
    private func checkPlainStart(at position: Int, inFlow: Bool) throws {
        let first = text[position]
        switch first {
        case "&", "*", "!", "|", ">", "%", "@", "`", ",", "[", "]", "{", "}", "#", "\t", "-", "?", ":":
            break
        default:
            return
        }
        let next: Unicode.Scalar? = position + 1 < lineEnd ? text[position + 1] : nil
        let endsToken = next.map { $0.isBlank || (inFlow && $0.isFlowIndicator) } ?? true
        let found = snippet(at: position)
        switch first {
        case "&":
            throw error(at: position, found: "anchor \(found)", expected: "a value",
                        hint: "anchors and aliases are not part of the YAML subset; write the value out in full")
        case "*":
            throw error(at: position, found: "alias \(found)", expected: "a value",
                        hint: "anchors and aliases are not part of the YAML subset; write the value out in full")
        case "!":
            throw error(at: position, found: "tag \(found)", expected: "a value",
                        hint: "tags are not part of the YAML subset; every scalar is already text, so leave the tag out")
        case "|", ">":
            throw error(at: position, found: "block scalar indicator '\(first)'", expected: "a value on this line",
                        hint: "block scalars are not part of the YAML subset; write the value on one line, in double quotes with \\n for line breaks if needed")
        case "%", "@", "`", ",", "[", "]", "{", "}":
            throw error(at: position, found: found, expected: "a value",
                        hint: "quote a value that starts with '\(first)'")
        case "#":
            throw error(at: position, found: found, expected: "a value",
                        hint: "a comment needs a space before '#'; quote a value that starts with '#'")
        case "\t":
            throw tabError(at: position)
        case "-" where endsToken:
            throw error(at: position, found: "'-'", expected: "a value",
                        hint: "a '-' item cannot start here; a block sequence starts on its own line")
        case "?" where inFlow:
            throw error(at: position, found: found, expected: "a value",
                        hint: "quote a value that starts with '?' inside [ ] or { } (YAML parsers disagree on it)")
        case "?" where endsToken:
            throw error(at: position, found: "complex key indicator '?'", expected: "a key on one line (key: value)",
                        hint: "complex keys ('? ') are not part of the YAML subset")
        case ":" where inFlow || endsToken:
            throw error(at: position, found: inFlow ? found : "':'", expected: inFlow ? "a value" : "a key before ':'",
                        hint: inFlow ? "quote a value that starts with ':' inside [ ] or { } (YAML parsers disagree on it)" : nil)
        default:
            return
        }
    }

    /// A plain scalar: up to `: `, ` #`, the end of the line, or in flow a flow indicator or `:`
    /// before one. Trailing spaces are not part of it. A tab inside is refused (PyYAML refuses it),
    /// and so is a `?` inside a flow collection, where PyYAML ends the scalar and YAML 1.2 does not.
    private func parsePlain(at start: Int, inFlow: Bool) throws -> (node: YAMLNode, end: Int) {
        var position = start
        var end = start
        while position < lineEnd {
            let scalar = text[position]
            if scalar == " " {
                if position + 1 < lineEnd, text[position + 1] == "#" { break }
                position += 1
                continue
            }
            if scalar == "\t" { throw tabError(at: position) }
            if scalar == ":" {
                if position + 1 == lineEnd { break }
                let next = text[position + 1]
                if next.isBlank || (inFlow && next.isFlowIndicator) { break }
            }
            if inFlow, scalar.isFlowIndicator { break }
            if inFlow, scalar == "?" {
                throw error(at: position, found: "'?' in \(Parser.quoted(source.string(start..<position + 1)))",
                            expected: "a value without '?' inside [ ] or { }",
                            hint: "quote the value; YAML 1.1 parsers (PyYAML) end a value at '?' inside [ ] and { }")
            }
            position += 1
            end = position
        }
        let scalar = YAMLScalar(text: source.string(start..<end), style: .plain, mark: mark(start))
        return (.scalar(scalar), end)
    }

    /// `'…'` with `''` for a quote, on one line.
    private func parseSingleQuoted(at start: Int) throws -> (node: YAMLNode, end: Int) {
        if let close = closingQuote(from: start + 1, quote: "'", escape: "'") {
            let node = YAMLScalar(text: source.string(start + 1..<close), style: .singleQuoted, mark: mark(start))
            return (.scalar(node), close + 1)
        }
        var content = String.UnicodeScalarView()
        var position = start + 1
        while position < lineEnd {
            let scalar = text[position]
            if scalar == "'" {
                if position + 1 < lineEnd, text[position + 1] == "'" {
                    content.append("'")
                    position += 2
                    continue
                }
                let node = YAMLScalar(text: String(content), style: .singleQuoted, mark: mark(start))
                return (.scalar(node), position + 1)
            }
            content.append(scalar)
            position += 1
        }
        throw unclosedQuoteError(at: start)
    }

    /// `"…"` with YAML 1.2's escapes, on one line.
    private func parseDoubleQuoted(at start: Int) throws -> (node: YAMLNode, end: Int) {
        if let close = closingQuote(from: start + 1, quote: "\"", escape: "\\") {
            let node = YAMLScalar(text: source.string(start + 1..<close), style: .doubleQuoted, mark: mark(start))
            return (.scalar(node), close + 1)
        }
        var content = String.UnicodeScalarView()
        var position = start + 1
        while position < lineEnd {
            let scalar = text[position]
            if scalar == "\"" {
                let node = YAMLScalar(text: String(content), style: .doubleQuoted, mark: mark(start))
                return (.scalar(node), position + 1)
            }
            if scalar == "\\" {
                let (escaped, length) = try parseEscape(at: position)
                content.append(escaped)
                position += length
                continue
            }
            content.append(scalar)
            position += 1
        }
        throw unclosedQuoteError(at: start)
    }

    /// The closing quote of a quoted scalar with no escapes in it (the common case, copied as is),
    /// or nil when there is an escape or no closing quote on the line.
    private func closingQuote(from position: Int, quote: Unicode.Scalar, escape: Unicode.Scalar) -> Int? {
        var position = position
        while position < lineEnd {
            let scalar = text[position]
            if scalar == escape, position + 1 < lineEnd, quote == escape ? text[position + 1] == quote : true {
                return nil
            }
            if scalar == quote { return position }
            position += 1
        }
        return nil
    }

    /// The escape at `position` (a backslash) and how many scalars it spans. YAML 1.2, 5.7.
    private func parseEscape(at position: Int) throws -> (Unicode.Scalar, Int) {
        guard position + 1 < lineEnd else {
            throw error(at: position, found: "'\\' at the end of the line", expected: "an escape sequence",
                        hint: "multi-line scalars are not part of the YAML subset; keep the value on one line")
        }
        let simple: Unicode.Scalar?
        switch text[position + 1] {
        case "0": simple = "\u{0}"
        case "a": simple = "\u{7}"
        case "b": simple = "\u{8}"
        case "t", "\t": simple = "\t"
        case "n": simple = "\n"
        case "v": simple = "\u{B}"
        case "f": simple = "\u{C}"
        case "r": simple = "\r"
        case "e": simple = "\u{1B}"
        case " ": simple = " "
        case "\"": simple = "\""
        case "/": simple = "/"
        case "\\": simple = "\\"
        case "N": simple = "\u{85}"
        case "_": simple = "\u{A0}"
        case "L": simple = "\u{2028}"
        case "P": simple = "\u{2029}"
        default: simple = nil
        }
        if let simple { return (simple, 2) }

        let digits: Int
        switch text[position + 1] {
        case "x": digits = 2
        case "u": digits = 4
        case "U": digits = 8
        default:
            throw error(at: position, found: Parser.quoted("\\" + String(text[position + 1])), expected: "an escape",
                        hint: "YAML escapes are \\\\ \\\" \\/ \\0 \\a \\b \\t \\n \\v \\f \\r \\e \\N \\_ \\L \\P \\xNN \\uNNNN \\UNNNNNNNN and backslash-space")
        }
        var value: UInt32 = 0
        var index = position + 2
        while index < position + 2 + digits {
            guard index < lineEnd, let digit = Parser.hexDigit(text[index]) else {
                let end = min(index + 1, lineEnd)
                throw error(at: position, found: Parser.quoted(source.string(position..<end)),
                            expected: "'\\\(text[position + 1])' followed by \(digits) hexadecimal digits")
            }
            value = value << 4 | digit
            index += 1
        }
        guard let scalar = Unicode.Scalar(value) else {
            throw error(at: position, found: Parser.quoted(source.string(position..<index)),
                        expected: "the code of a Unicode scalar (not a surrogate, at most 10FFFF)",
                        hint: "write a character outside the Basic Multilingual Plane as \\UNNNNNNNN, not as two \\u escapes")
        }
        return (scalar, 2 + digits)
    }

    private static func hexDigit(_ scalar: Unicode.Scalar) -> UInt32? {
        switch scalar.value {
        case 0x30...0x39: return scalar.value - 0x30
        case 0x41...0x46: return scalar.value - 0x41 + 10
        case 0x61...0x66: return scalar.value - 0x61 + 10
        default: return nil
        }
    }

    private func unclosedQuoteError(at start: Int) -> YAMLError {
        let (name, quote) = text[start] == "'" ? ("single", "'") : ("double", "\"")
        return error(at: start, found: "an unclosed \(name) quote", expected: "a closing \(quote) on the same line",
                     hint: "multi-line scalars are not part of the YAML subset; keep the value on one line")
    }
}

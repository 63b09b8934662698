/// Flow collections: `[a, b]` and `{ k: v }`, nested, each opened and closed on one line.
///
/// YAML 1.2 allows one trailing comma (`[a, b, ]`, `{ k: v, }`), and so does PyYAML; so does the
/// subset. An empty entry (`[a, , b]`, `[,]`) is refused, as YAML refuses it. Left out, because
/// parsers disagree on them or they are rarely meant: a `key: value` pair directly inside `[ ]`
/// (write `[{ key: value }]`), a key with no `:` in `{ }`, and collections as keys. A value may be
/// left empty in a flow mapping (`{ k: }`), which gives an empty value, as in block mappings.
extension Parser {
    mutating func parseFlowCollection(at start: Int) throws -> (node: YAMLNode, end: Int) {
        try enter(at: start)
        defer { depth -= 1 }
        if text[start] == "[" {
            let (sequence, end) = try parseFlowSequence(at: start)
            return (.sequence(sequence), end)
        }
        let (mapping, end) = try parseFlowMapping(at: start)
        return (.mapping(mapping), end)
    }

    private mutating func parseFlowSequence(at start: Int) throws -> (YAMLSequence, Int) {
        var items: [YAMLNode] = []
        var position = start + 1
        scanning: while true {
            position = try skipInFlow(from: position, opener: start)
            if text[position] == "]" { break }
            if text[position] == "," {
                throw error(at: position, found: "','", expected: "a value or ']'")
            }
            let (item, end) = try parseInlineNode(at: position, inFlow: true)
            items.append(item)
            position = try skipInFlow(from: end, opener: start)
            switch text[position] {
            case ",":
                position += 1
            case "]":
                break scanning
            case ":":
                throw error(at: position, found: "':'", expected: "',' or ']'",
                            hint: "a key: value pair inside [ ] is written as a mapping: [{ key: value }]")
            default:
                throw error(at: position, found: snippet(at: position), expected: "',' or ']'",
                            hint: text[position] == "}" ? "the '[' at \(mark(start)) is not closed before this '}'" : nil)
            }
        }
        return (YAMLSequence(items: items, style: .flow, mark: mark(start)), position + 1)
    }

    private mutating func parseFlowMapping(at start: Int) throws -> (YAMLMapping, Int) {
        var entries: [(key: YAMLScalar, value: YAMLNode)] = []
        var keys = KeyIndex()
        var position = start + 1
        scanning: while true {
            position = try skipInFlow(from: position, opener: start)
            if text[position] == "}" { break }
            if text[position] == "," {
                throw error(at: position, found: "','", expected: "a key or '}'")
            }
            if text[position] == "[" || text[position] == "{" {
                throw error(at: position, found: text[position] == "[" ? "a sequence as a key" : "a mapping as a key",
                            expected: "a scalar key", hint: "complex keys are not part of the YAML subset")
            }
            let keyStart = position
            let (keyNode, keyEnd) = try parseInlineNode(at: position, inFlow: true)
            guard let key = keyNode.scalar else {
                throw error(at: keyStart, found: "\(keyNode.kindName) as a key", expected: "a scalar key")
            }
            if keyEnd - keyStart > Parser.maxKeyLength {
                throw error(at: keyStart, found: "a key of \(keyEnd - keyStart) characters", expected: "at most \(Parser.maxKeyLength)",
                            hint: "YAML limits a key written on one line to \(Parser.maxKeyLength) characters")
            }
            position = try skipInFlow(from: keyEnd, opener: start)
            // After a quoted key YAML 1.2 (and PyYAML) take ':' even with no space after it: {"a":1}.
            let isValueIndicator = text[position] == ":"
                && (key.isQuoted || position + 1 == lineEnd || text[position + 1].isBlank || text[position + 1].isFlowIndicator)
            guard isValueIndicator else {
                if let previous = entries.last, text[position] == "," || text[position] == "}", !key.text.contains(":") {
                    // `{ for: 1,5s }`: the comma ended the value, and what follows is no key.
                    let decimal = previous.value.scalar.map { $0.style == .plain && $0.text.last?.isNumber == true } == true
                        && key.text.first?.isNumber == true
                    throw error(at: keyStart, found: Parser.quoted(key.text), expected: "a key followed by ':'",
                                hint: decimal ? "',' separates the entries of { }; write a decimal with a point (1.5s), or quote a value that contains a comma"
                                    : "',' separates the entries of { }; quote a value that contains a comma")
                }
                let hint = key.style == .plain && key.text.contains(":") ? "put a space after ':' (key: value)" : nil
                throw error(at: position, found: snippet(at: position), expected: "':' after the key \(Parser.quoted(key.text))", hint: hint)
            }
            if let first = keys.insert(key) { throw duplicateKeyError(key, first: first) }

            let afterColon = position + 1
            position = try skipInFlow(from: afterColon, opener: start)
            let value: YAMLNode
            if text[position] == "," || text[position] == "}" {
                value = .scalar(YAMLScalar(text: "", style: .plain, mark: mark(afterColon)))
            } else {
                let (node, end) = try parseInlineNode(at: position, inFlow: true)
                value = node
                position = try skipInFlow(from: end, opener: start)
            }
            entries.append((key, value))
            switch text[position] {
            case ",":
                position += 1
            case "}":
                break scanning
            default:
                throw error(at: position, found: snippet(at: position), expected: "',' or '}'",
                            hint: text[position] == "]" ? "the '{' at \(mark(start)) is not closed before this ']'" : nil)
            }
        }
        return (YAMLMapping(entries: entries, style: .flow, mark: mark(start)), position + 1)
    }

    /// Skips spaces inside a flow collection and returns the next significant position. The end
    /// of the line, or a comment (which runs to it), means the collection opened at `opener`
    /// is not closed on its line.
    private func skipInFlow(from position: Int, opener: Int) throws -> Int {
        let next = try skipSpaces(from: position)
        if next == lineEnd || isComment(at: next) {
            let close = text[opener] == "[" ? "]" : "}"
            throw error(at: opener, found: "unclosed '\(text[opener])'", expected: "'\(close)' on the same line",
                        hint: "a flow collection must open and close on one line in the YAML subset")
        }
        return next
    }
}

/// Block structure: mappings and sequences by indentation.
///
/// A block collection's indentation `n` is the column (0-based) of its first key or `-`. While it
/// is open, each following content line either continues it (a key, or a `-`, at column `n`),
/// closes it (less indented, matching an enclosing block), or is an error. A key's value is on
/// its line, or indented below it, or — for a sequence only — at the key's own indentation
/// (`key:` then `- item`, which YAML allows). Compact forms come for free: after `- `, the rest of
/// the line is parsed as a block node whose indentation is its own column, so `- uuid: FFE1`
/// opens a mapping at the column of `uuid` and `properties:` aligned under it continues it.
extension Parser {
    /// Parses the block node that starts at `position` on the current line. `parentIndent` is the
    /// indentation of the enclosing block collection (-1 at the top).
    mutating func parseBlockNode(at position: Int, parentIndent: Int) throws -> YAMLNode {
        let indent = position - lineStart
        if isBlockEntry(position) {
            return .sequence(try parseBlockSequence(at: position, indent: indent, parentIndent: parentIndent))
        }
        let (node, end) = try parseInlineNode(at: position, inFlow: false)
        let after = try skipSpaces(from: end)
        if after < lineEnd, text[after] == ":" {
            if after + 1 == lineEnd || text[after + 1].isBlank {
                let key = try mappingKey(node, from: position, to: end)
                return .mapping(try parseBlockMapping(firstKey: key, colon: after, indent: indent, parentIndent: parentIndent))
            }
            if node.scalar?.isQuoted == true {
                throw error(at: after + 1, found: snippet(at: after + 1), expected: "a space after ':'")
            }
        }
        try finishLine(from: after)
        if let scalar = node.scalar, scalar.style == .plain { lonePlainScalar = scalar.mark }
        return node
    }

    // MARK: Mappings

    private mutating func parseBlockMapping(firstKey: YAMLScalar, colon: Int, indent: Int, parentIndent: Int) throws -> YAMLMapping {
        try enter(at: lineStart + indent)
        defer { depth -= 1 }
        openIndents.append(indent)
        defer { openIndents.removeLast() }
        var entries: [(key: YAMLScalar, value: YAMLNode)] = []
        var keys = KeyIndex()
        var key = firstKey
        var colon = colon
        while true {
            if let first = keys.insert(key) { throw duplicateKeyError(key, first: first) }
            let value = try parseMappingValue(afterColon: colon + 1, key: key, keyIndent: indent)
            entries.append((key, value))

            guard let next = try peekContentLine() else { break }
            if next.indent < indent {
                try checkDedent(next)
                break
            }
            if next.indent > indent {
                if let e = keyWithoutSpace(value, above: next) { throw e }
                throw error(at: next.start, found: snippet(at: next.start), expected: "a key at column \(indent + 1)",
                            hint: hintForLineBelow(value: value, line: next))
            }
            if isBlockEntry(next.start) {
                throw error(at: next.start, found: "'-'", expected: "a key at column \(indent + 1)",
                            hint: "a sequence that is a key's value starts on the line after the key, with nothing after its ':'")
            }
            (key, colon) = try parseKey(at: next.start)
        }
        return YAMLMapping(entries: entries, style: .block, mark: firstKey.mark)
    }

    /// A key at the start of a line of a block mapping, and the position of its `:`.
    private mutating func parseKey(at position: Int) throws -> (YAMLScalar, Int) {
        let (node, end) = try parseInlineNode(at: position, inFlow: false)
        let colon = try skipSpaces(from: end)
        guard colon < lineEnd, text[colon] == ":", colon + 1 == lineEnd || text[colon + 1].isBlank else {
            if colon < lineEnd, text[colon] == ":", node.scalar?.isQuoted == true {
                throw error(at: colon + 1, found: snippet(at: colon + 1), expected: "a space after ':'")
            }
            var hint: String?
            if let scalar = node.scalar, scalar.style == .plain, scalar.text.contains(":") {
                hint = "put a space after ':' (key: value)"
            }
            throw error(at: position, found: Parser.quoted(source.string(position..<end)),
                        expected: "a key followed by ':'", hint: hint)
        }
        return (try mappingKey(node, from: position, to: end), colon)
    }

    /// The value after a block mapping key's `:`: on the same line, indented below, a sequence
    /// at the key's own indentation, or empty.
    private mutating func parseMappingValue(afterColon position: Int, key: YAMLScalar, keyIndent: Int) throws -> YAMLNode {
        let start = try skipSpaces(from: position)
        if start == lineEnd || isComment(at: start) {
            let emptyMark = mark(position)
            try finishLine(from: start)
            if let next = try peekContentLine() {
                if next.indent > keyIndent {
                    return try parseBlockNode(at: next.start, parentIndent: keyIndent)
                }
                if next.indent == keyIndent, isBlockEntry(next.start) {
                    return .sequence(try parseBlockSequence(at: next.start, indent: keyIndent, parentIndent: keyIndent))
                }
            }
            return .scalar(YAMLScalar(text: "", style: .plain, mark: emptyMark))
        }
        if isBlockEntry(start) {
            throw error(at: start, found: "'-'", expected: "a value after ':'",
                        hint: "a sequence starts on the line after \(Parser.quoted(key.text + ":")), each '-' indented or at the key's column")
        }
        let (node, end) = try parseInlineNode(at: start, inFlow: false)
        let after = try skipSpaces(from: end)
        if after < lineEnd, text[after] == ":", after + 1 == lineEnd || text[after + 1].isBlank {
            throw error(at: after, found: "':'", expected: "end of line",
                        hint: "a mapping inside a value starts on the next line, indented under \(Parser.quoted(key.text)), or is written { k: v }")
        }
        try finishLine(from: after)
        return node
    }

    private func mappingKey(_ node: YAMLNode, from start: Int, to end: Int) throws -> YAMLScalar {
        guard let key = node.scalar else {
            throw error(at: start, found: "\(node.kindName) as a key", expected: "a scalar key",
                        hint: "complex keys are not part of the YAML subset")
        }
        if end - start > Parser.maxKeyLength {
            throw error(at: start, found: "a key of \(end - start) characters", expected: "at most \(Parser.maxKeyLength)",
                        hint: "YAML limits a key written on one line to \(Parser.maxKeyLength) characters")
        }
        return key
    }

    func duplicateKeyError(_ key: YAMLScalar, first: Mark) -> YAMLError {
        YAMLError(file: source.file, mark: key.mark, found: "duplicate key \(Parser.quoted(key.text))",
                  expected: "a key not already in this mapping",
                  hint: "\(Parser.quoted(key.text)) is first defined at \(first)")
    }

    // MARK: Sequences

    /// A block sequence whose first `-` is at `position`, at indentation `indent`. When
    /// `parentIndent == indent` it is a key's value written at the key's own indentation, and a
    /// line at that indentation that is not a `-` goes back to the mapping.
    private mutating func parseBlockSequence(at position: Int, indent: Int, parentIndent: Int) throws -> YAMLSequence {
        try enter(at: position)
        defer { depth -= 1 }
        openIndents.append(indent)
        defer { openIndents.removeLast() }
        let sequenceMark = mark(position)
        var items: [YAMLNode] = []
        var dash = position
        while true {
            let item = try parseSequenceItem(afterDash: dash + 1, indent: indent)
            items.append(item)

            guard let next = try peekContentLine() else { break }
            if next.indent == indent, isBlockEntry(next.start) {
                dash = next.start
                continue
            }
            if next.indent < indent || (next.indent == indent && parentIndent == indent) {
                try checkDedent(next)
                break
            }
            if next.indent == indent {
                throw error(at: next.start, found: snippet(at: next.start),
                            expected: "'-' (another item of the sequence at column \(indent + 1)) or less indentation",
                            hint: item.mapping?.style == .block
                                ? "the keys of an item's mapping line up with its first key, at column \(item.mark.column)" : nil)
            }
            if let e = keyWithoutSpace(item, above: next) { throw e }
            throw error(at: next.start, found: snippet(at: next.start),
                        expected: "'-' at column \(indent + 1) or less indentation",
                        hint: hintForLineBelow(value: item, line: next))
        }
        return YAMLSequence(items: items, style: .block, mark: sequenceMark)
    }

    private mutating func parseSequenceItem(afterDash position: Int, indent: Int) throws -> YAMLNode {
        let start = try skipSpaces(from: position)
        if start == lineEnd || isComment(at: start) {
            let emptyMark = mark(position)
            try finishLine(from: start)
            if let next = try peekContentLine(), next.indent > indent {
                return try parseBlockNode(at: next.start, parentIndent: indent)
            }
            return .scalar(YAMLScalar(text: "", style: .plain, mark: emptyMark))
        }
        return try parseBlockNode(at: start, parentIndent: indent)
    }

    // MARK: Indentation errors

    /// A line less indented than the block that just ended must line up with an enclosing block.
    private func checkDedent(_ line: ContentLine) throws {
        if openIndents.contains(line.indent) { return }
        var columns: [Int] = []
        for indent in openIndents where columns.last != indent + 1 { columns.append(indent + 1) }
        let list: String
        switch columns.count {
        case 1: list = "column \(columns[0])"
        default: list = "column " + columns.dropLast().map(String.init).joined(separator: ", ") + " or \(columns[columns.count - 1])"
        }
        throw error(at: line.start, found: snippet(at: line.start),
                    expected: "indentation matching an enclosing block (\(list))")
    }

    /// Why `line` cannot sit below `value`, which was written on one line.
    func hintForLineBelow(value: YAMLNode, line: ContentLine) -> String? {
        if looksLikeKey(line) {
            return "only a key with nothing after its ':' can have an indented block below it"
        }
        switch value {
        case .scalar(let scalar) where !scalar.isEmpty:
            return "multi-line scalars are not part of the YAML subset; keep the value on one line"
        case .sequence(let sequence) where sequence.style == .flow:
            return "nothing can be nested under a flow sequence, and it must close on its own line"
        case .mapping(let mapping) where mapping.style == .flow:
            return "nothing can be nested under a flow mapping, and it must close on its own line"
        default:
            return nil
        }
    }

    /// When `value` is a plain scalar such as `name:HMSoft`, written alone on its line, and the
    /// line below it cannot follow: the user meant a key and its value but left out the space
    /// after the colon, so the error belongs on the scalar, not on the innocent line below.
    func keyWithoutSpace(_ value: YAMLNode, above line: ContentLine) -> YAMLError? {
        guard let scalar = value.scalar, scalar.style == .plain, scalar.mark == lonePlainScalar,
              let colon = scalar.text.firstIndex(of: ":") else { return nil }
        let key = scalar.text[..<colon], rest = scalar.text[scalar.text.index(after: colon)...]
        guard !key.isEmpty, !rest.isEmpty, !key.contains(" "), !rest.hasPrefix(" ") else { return nil }
        let below = source.string(line.start..<source.lines[line.index].end)
        guard looksLikeKey(line) || below.split(separator: " ").first?.contains(":") == true else { return nil }
        return YAMLError(file: source.file, mark: scalar.mark, found: Parser.quoted(scalar.text), expected: "a key followed by ': '",
                         hint: "put a space after ':' (\(key): \(rest)); without it the line is one plain scalar, not a key and its value")
    }

    /// A rough check, for hints only: the line has a ':' followed by a space or the end of line.
    private func looksLikeKey(_ line: ContentLine) -> Bool {
        let end = source.lines[line.index].end
        var position = line.start
        while position < end {
            if text[position] == ":", position + 1 == end || text[position + 1].isBlank { return true }
            if text[position] == "#", position > line.start, text[position - 1] == " " { return false }
            position += 1
        }
        return false
    }
}

/// Parses `text`, the contents of `file`, as the scenario YAML subset (docs/scenarios.md
/// section 10, "The YAML subset"). `file` is used only in error messages.
///
/// One document of block and flow collections and plain, single- and double-quoted scalars, each
/// scalar and each flow collection on one line. Scalars keep their text: nothing is typed. An
/// empty document (only comments, or nothing) is an empty value at 1:1 (see `YAMLScalar.isEmpty`).
/// Everything outside the subset throws a `YAMLError` naming the offending position: anchors,
/// aliases, tags, block scalars, directives, a second document, complex keys, multi-line scalars
/// and flow collections, tabs outside quoted scalars and comments, duplicate keys.
public func parseYAML(_ text: String, file: String) throws -> YAMLNode {
    var parser = Parser(source: Source(file: file, string: text))
    return try parser.parseDocument()
}

/// A line that holds content (not blank, not only a comment, not a document marker).
struct ContentLine {
    let index: Int
    /// Leading spaces.
    let indent: Int
    /// Position of the first character after the indentation.
    let start: Int
}

/// The parser's state: where it is, and the indentation of every block collection still open.
/// Block structure is in Parser+Block.swift, flow collections in Parser+Flow.swift, scalars in
/// Parser+Scalars.swift.
struct Parser {
    static let maxDepth = 100
    /// YAML 1.2 limits an implicit key to 1024 characters.
    static let maxKeyLength = 1024

    let source: Source
    let text: [Unicode.Scalar]
    /// The line being parsed, or the next one to look at.
    var lineIndex = 0
    var peeked: ContentLine?
    /// Indentation of the open block collections, outermost first.
    var openIndents: [Int] = []
    var depth = 0
    var sawDocumentStart = false
    var sawContent = false
    /// Where `...` ended the document, once it has.
    var documentEnd: Mark?
    /// The latest plain scalar that took a whole block node (a value alone on its line, an item
    /// after `- `, or the document), to tell `name:HMSoft` — a key missing the space after its
    /// colon — from a real error on the line below it.
    var lonePlainScalar: Mark?

    init(source: Source) {
        self.source = source
        self.text = source.text
    }

    // MARK: Document

    mutating func parseDocument() throws -> YAMLNode {
        guard let first = try peekContentLine() else {
            try checkNothingAfterDocumentEnd()
            return .scalar(YAMLScalar(text: "", style: .plain, mark: Mark(line: 1, column: 1)))
        }
        let root = try parseBlockNode(at: first.start, parentIndent: -1)
        if let extra = try peekContentLine() {
            // Only a scalar or a flow collection returns here with a line left over; block
            // collections report the lines they cannot take themselves.
            if let e = keyWithoutSpace(root, above: extra) { throw e }
            throw error(at: extra.start, line: extra.index, found: snippet(at: extra.start, line: extra.index),
                        expected: "end of file", hint: hintForLineBelow(value: root, line: extra))
        }
        try checkNothingAfterDocumentEnd()
        return root
    }

    private enum LineKind {
        case blank
        case documentStart
        case documentEnd
        case content(ContentLine)
    }

    /// The next line with content, skipping blank and comment lines and taking care of `---`
    /// and `...`; nil at the end of the document. Leaves `lineIndex` on the returned line.
    mutating func peekContentLine() throws -> ContentLine? {
        if let peeked { return peeked }
        if documentEnd != nil { return nil }
        while lineIndex < source.lines.count {
            switch try classifyLine(lineIndex) {
            case .blank:
                lineIndex += 1
            case .documentStart:
                let start = source.lines[lineIndex].start
                if sawDocumentStart || sawContent {
                    throw error(at: start, found: "'---' (a second document)", expected: "end of file",
                                hint: "a scenario file holds one document")
                }
                sawDocumentStart = true
                try finishMarkerLine(after: start + 3, marker: "---")
            case .documentEnd:
                let start = source.lines[lineIndex].start
                if !sawDocumentStart, !sawContent {
                    // YAML 1.2 reads this as no document at all; PyYAML refuses it.
                    throw error(at: start, found: "'...'", expected: "a document before the document end marker")
                }
                documentEnd = mark(start)
                try finishMarkerLine(after: start + 3, marker: "...")
                return nil
            case .content(let line):
                if !sawContent, !sawDocumentStart, line.indent == 0, text[line.start] == "%" {
                    throw error(at: line.start, found: "directive \(snippet(at: line.start))", expected: "a document",
                                hint: "directives are not part of the YAML subset; remove the line")
                }
                sawContent = true
                peeked = line
                return line
            }
        }
        return nil
    }

    private func classifyLine(_ index: Int) throws -> LineKind {
        let line = source.lines[index]
        if let refused = line.firstRefused { throw refusedCharacterError(at: refused, line: index) }
        var position = line.start
        while position < line.end, text[position] == " " { position += 1 }
        if position < line.end, text[position] == "\t" {
            throw error(at: position, line: index, found: "a tab in the indentation", expected: "spaces",
                        hint: "indent with spaces only")
        }
        if position == line.end || text[position] == "#" { return .blank }
        if position == line.start, line.end - line.start >= 3 {
            let isMarker = line.end - line.start == 3 || text[line.start + 3].isBlank
            if isMarker, text[line.start] == "-", text[line.start + 1] == "-", text[line.start + 2] == "-" {
                return .documentStart
            }
            if isMarker, text[line.start] == ".", text[line.start + 1] == ".", text[line.start + 2] == "." {
                return .documentEnd
            }
        }
        return .content(ContentLine(index: index, indent: position - line.start, start: position))
    }

    private mutating func finishMarkerLine(after position: Int, marker: String) throws {
        let rest = try skipSpaces(from: position)
        if rest < lineEnd, text[rest] != "#" {
            throw error(at: rest, found: snippet(at: rest), expected: "end of line after '\(marker)'",
                        hint: marker == "---" ? "start the document on the next line" : nil)
        }
        lineIndex += 1
    }

    /// After `...`, only blank lines and comments may follow.
    private mutating func checkNothingAfterDocumentEnd() throws {
        guard let end = documentEnd else { return }
        while lineIndex < source.lines.count {
            switch try classifyLine(lineIndex) {
            case .blank:
                lineIndex += 1
            case .documentStart:
                throw error(at: lineStart, found: "'---' (a second document)", expected: "end of file",
                            hint: "a scenario file holds one document")
            case .documentEnd:
                throw error(at: lineStart, found: "'...'", expected: "end of file",
                            hint: "the document already ended at \(end)")
            case .content(let line):
                throw error(at: line.start, found: snippet(at: line.start), expected: "end of file",
                            hint: "nothing may follow the document end marker '...' at \(end); a scenario file holds one document")
            }
        }
    }

    // MARK: Lines and positions

    var lineStart: Int { source.lines[lineIndex].start }
    var lineEnd: Int { source.lines[lineIndex].end }

    func mark(_ position: Int) -> Mark { source.mark(position, line: lineIndex) }

    /// Skips spaces on the current line; a tab there is refused, as PyYAML refuses it.
    func skipSpaces(from position: Int) throws -> Int {
        var position = position
        while position < lineEnd {
            if text[position] == " " {
                position += 1
            } else if text[position] == "\t" {
                throw tabError(at: position)
            } else {
                break
            }
        }
        return position
    }

    /// True when `position` starts a comment: a `#` after a space.
    func isComment(at position: Int) -> Bool {
        position < lineEnd && text[position] == "#" && position > lineStart && text[position - 1] == " "
    }

    /// Checks that only spaces and a comment follow `position`, and moves to the next line.
    mutating func finishLine(from position: Int) throws {
        let rest = try skipSpaces(from: position)
        if rest < lineEnd, !isComment(at: rest) {
            let hint = text[rest] == "#" ? "a comment needs a space before '#'" : nil
            throw error(at: rest, found: snippet(at: rest), expected: "end of line or a comment", hint: hint)
        }
        lineIndex += 1
        peeked = nil
    }

    /// A `-` followed by a space, a tab or the end of the line: a block sequence entry.
    func isBlockEntry(_ position: Int) -> Bool {
        text[position] == "-" && (position + 1 == lineEnd || text[position + 1].isBlank)
    }

    /// Counts a collection opening at `position`; the parser recurses once per level, so nesting
    /// is bounded to keep hostile input from exhausting the stack.
    mutating func enter(at position: Int) throws {
        if depth >= Parser.maxDepth {
            throw error(at: position, found: "more than \(Parser.maxDepth) nested collections",
                        expected: "at most \(Parser.maxDepth) levels of nesting")
        }
        depth += 1
    }

    // MARK: Errors

    func error(at position: Int, line: Int? = nil, found: String, expected: String, hint: String? = nil) -> YAMLError {
        YAMLError(file: source.file, mark: source.mark(position, line: line ?? lineIndex),
                  found: found, expected: expected, hint: hint)
    }

    func tabError(at position: Int) -> YAMLError {
        error(at: position, found: "a tab", expected: "a space",
              hint: "the YAML subset allows tabs only inside quoted scalars and comments")
    }

    /// What is at `position`, for a message: the run of characters up to a space or a flow
    /// indicator (at least one character), quoted and shortened; "end of line" past the end.
    func snippet(at position: Int, line: Int? = nil) -> String {
        let end = source.lines[line ?? lineIndex].end
        guard position < end else { return "end of line" }
        var stop = position + 1
        if !text[position].isFlowIndicator {
            while stop < end, !text[stop].isBlank, !text[stop].isFlowIndicator { stop += 1 }
        }
        return Parser.quoted(source.string(position..<stop))
    }

    /// `'text'`, shortened to 30 characters.
    static func quoted(_ text: String) -> String {
        let shortened = text.count > 30 ? String(text.prefix(29)) + "…" : text
        return "'" + shortened + "'"
    }

    static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    private func refusedCharacterError(at position: Int, line: Int) -> YAMLError {
        let scalar = text[position]
        let code = "U+" + Parser.hex(scalar.value, digits: 4)
        switch scalar.value {
        case 0x85, 0x2028, 0x2029:
            let (name, escape) = scalar.value == 0x85 ? ("next line", "\\N")
                : scalar.value == 0x2028 ? ("line separator", "\\L") : ("paragraph separator", "\\P")
            return error(at: position, line: line, found: "\(name) \(code)", expected: "printable text",
                         hint: "YAML 1.1 parsers read it as a line break and YAML 1.2 parsers do not; write it as \(escape) in a double-quoted scalar")
        case 0xFEFF:
            return error(at: position, line: line, found: "byte order mark \(code)", expected: "printable text",
                         hint: "a byte order mark may only start the file; write \\uFEFF in a double-quoted scalar")
        default:
            let escape = scalar.value <= 0xFF ? "\\x" + Parser.hex(scalar.value, digits: 2)
                : scalar.value <= 0xFFFF ? "\\u" + Parser.hex(scalar.value, digits: 4) : "\\U" + Parser.hex(scalar.value, digits: 8)
            return error(at: position, line: line, found: "control character \(code)", expected: "printable text",
                         hint: "write it as \(escape) in a double-quoted scalar")
        }
    }
}

/// The keys of a mapping being parsed, to find a duplicate: searched in order while there are few,
/// through a dictionary once there are many, so neither small nor huge mappings cost much.
struct KeyIndex {
    private var small: [(text: String, mark: Mark)] = []
    private var large: [String: Mark]?

    /// Records `key`; returns where the same key was first defined, if it was.
    mutating func insert(_ key: YAMLScalar) -> Mark? {
        if large == nil {
            if let first = small.first(where: { $0.text == key.text }) { return first.mark }
            small.append((key.text, key.mark))
            if small.count > 12 {
                large = Dictionary(small.map { ($0.text, $0.mark) }, uniquingKeysWith: { first, _ in first })
                small = []
            }
            return nil
        }
        if let first = large?[key.text] { return first }
        large?[key.text] = key.mark
        return nil
    }
}

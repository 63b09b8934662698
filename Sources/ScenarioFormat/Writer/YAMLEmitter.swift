/// A YAML document as the writer lays it out: scalars already in their written form, collections
/// in block or flow style, comments above and beside lines. Only what the YAML subset reads
/// (docs/scenarios.md section 10) is ever emitted.
struct YAMLOut {
    enum Kind {
        /// The scalar as written: plain, or quoted with its escapes (`ScalarText`).
        case scalar(String)
        case sequence([YAMLOut])
        case mapping([(key: String, value: YAMLOut)])
    }

    /// How a collection is written.
    enum Layout {
        /// Indented lines; so is everything that holds it.
        case block
        /// On one line, however long (a step, an action, a flaw rule), unless a comment inside needs lines.
        case flow
        /// On one line when it fits in `YAMLEmitter.width` with no comment inside, else in lines.
        case auto
    }

    var kind: Kind
    var layout: Layout
    /// Comment lines above the line that starts this node (its key's, or its `- `).
    var above: [String] = []
    /// A comment at the end of that line.
    var inline: String?
    /// Comment lines after a block collection's last child, at its children's indentation.
    var trailing: [String] = []
    /// An empty line before this node (between the top-level sections).
    var blankLineBefore = false

    static func scalar(_ text: String) -> YAMLOut { YAMLOut(kind: .scalar(text), layout: .flow) }
    static func sequence(_ items: [YAMLOut], _ layout: Layout = .auto) -> YAMLOut { YAMLOut(kind: .sequence(items), layout: layout) }
    static func mapping(_ entries: [(key: String, value: YAMLOut)], _ layout: Layout = .auto) -> YAMLOut {
        YAMLOut(kind: .mapping(entries), layout: layout)
    }

    func commented(above lines: [String] = [], inline: String? = nil) -> YAMLOut {
        var copy = self
        copy.above += lines
        if let inline { copy.inline = copy.inline.map { $0 + "; " + inline } ?? inline }
        return copy
    }

    var isEmptyCollection: Bool {
        switch kind {
        case .scalar: return false
        case let .sequence(items): return items.isEmpty
        case let .mapping(entries): return entries.isEmpty
        }
    }
}

/// Renders a `YAMLOut` document as text.
enum YAMLEmitter {
    /// The longest line an `auto` collection is put on.
    static let width = 100

    static func render(_ document: YAMLOut) -> String {
        var lines: [String] = []
        document.above.forEach { lines.append(comment($0, indent: 0)) }
        switch document.kind {
        case .mapping: block(document, indent: 0, into: &lines)
        default: lines.append(flow(document) ?? "")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Flow

    /// The node on one line, or nil when a comment inside it (or a block child) needs lines.
    static func flow(_ node: YAMLOut, top: Bool = true) -> String? {
        if !top && (!node.above.isEmpty || node.inline != nil) { return nil }
        guard node.trailing.isEmpty else { return nil }
        switch node.kind {
        case let .scalar(text): return text
        case let .sequence(items):
            if node.layout == .block && !items.isEmpty { return nil }
            var parts: [String] = []
            for item in items {
                guard let text = flow(item, top: false) else { return nil }
                parts.append(text)
            }
            return "[" + parts.joined(separator: ", ") + "]"
        case let .mapping(entries):
            if node.layout == .block && !entries.isEmpty { return nil }
            if entries.isEmpty { return "{}" }
            var parts: [String] = []
            for entry in entries {
                guard let text = flow(entry.value, top: false) else { return nil }
                parts.append("\(entry.key): \(text)")
            }
            return "{ " + parts.joined(separator: ", ") + " }"
        }
    }

    /// The node's one-line form when its layout allows it there: `prefix` is what stands before it
    /// on the line (indentation, key, `- `).
    static func inlineForm(_ node: YAMLOut, prefix: Int) -> String? {
        if case let .scalar(text) = node.kind { return text }
        if node.isEmptyCollection { return flow(node) }
        switch node.layout {
        case .block: return nil
        case .flow: return flow(node)
        case .auto:
            guard let text = flow(node) else { return nil }
            let comment = node.inline.map { 4 + $0.count } ?? 0
            return prefix + text.count + comment <= width ? text : nil
        }
    }

    // MARK: Block

    static func comment(_ text: String, indent: Int) -> String {
        String(repeating: " ", count: indent) + (text.isEmpty ? "#" : "# " + text)
    }

    static func withInline(_ line: String, _ node: YAMLOut) -> String {
        node.inline.map { line + "  # " + $0 } ?? line
    }

    /// A block collection's children at `indent`.
    static func block(_ node: YAMLOut, indent: Int, into lines: inout [String]) {
        let pad = String(repeating: " ", count: indent)
        switch node.kind {
        case .scalar:
            break
        case let .mapping(entries):
            for (key, value) in entries {
                if value.blankLineBefore { lines.append("") }
                value.above.forEach { lines.append(comment($0, indent: indent)) }
                let head = pad + key + ":"
                if let text = inlineForm(value, prefix: head.count + 1) {
                    lines.append(withInline(head + " " + text, value))
                } else {
                    lines.append(withInline(head, value))
                    child(value, indent: indent + 2, into: &lines)
                }
            }
        case let .sequence(items):
            for item in items {
                item.above.forEach { lines.append(comment($0, indent: indent)) }
                let head = pad + "-"
                if let text = inlineForm(item, prefix: head.count + 1) {
                    lines.append(withInline(head + " " + text, item))
                } else if case let .mapping(entries) = item.kind, let first = entries.first {
                    // `- key: …` on the dash's line, the other keys below it.
                    var rest: [String] = []
                    block(YAMLOut(kind: .mapping(entries), layout: .block, trailing: item.trailing), indent: indent + 2, into: &rest)
                    let firstLines = first.value.above.count
                    rest.removeFirst(firstLines)
                    lines.append(contentsOf: first.value.above.map { comment($0, indent: indent) })
                    var line = rest.removeFirst()
                    line = head + " " + line.dropFirst(indent + 2)
                    lines.append(item.inline.map { line + "  # " + $0 } ?? line)
                    lines += rest
                } else {
                    lines.append(withInline(head, item))
                    child(item, indent: indent + 2, into: &lines)
                }
            }
        }
        node.trailing.forEach { lines.append(comment($0, indent: indent)) }
    }

    /// A collection below its key or dash: a mapping's keys and a sequence's dashes at `indent`.
    private static func child(_ node: YAMLOut, indent: Int, into lines: inout [String]) {
        block(node, indent: indent, into: &lines)
    }
}

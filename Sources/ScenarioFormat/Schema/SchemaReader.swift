import YAMLSubset

/// Reads YAML nodes into typed values, collecting every error instead of stopping at the first:
/// each reader method reports what it cannot read and returns nil, and callers carry on.
public final class SchemaReader {
    let file: String
    private(set) var errors: [ScenarioError] = []
    /// When set, every keyword form read is noted in it (ScenarioJSONSchema.swift reads the
    /// format's keywords this way, so that the JSON Schema follows this code).
    let probe: FormProbe?

    init(file: String, probe: FormProbe? = nil) {
        self.file = file
        self.probe = probe
    }

    // MARK: Reporting

    func error(at mark: Mark, found: String, expected: String, hint: String? = nil) {
        let e = ScenarioError(file: file, line: mark.line, column: mark.column, found: found, expected: expected, hint: hint)
        if !errors.contains(e) { errors.append(e) }
    }

    func error(_ node: YAMLNode, expected: String, hint: String? = nil) {
        error(at: node.mark, found: Self.found(node), expected: expected, hint: hint)
    }

    /// What a node is, for `found …`: a scalar's text quoted and shortened, else its kind.
    static func found(_ node: YAMLNode) -> String {
        if let scalar = node.scalar, !scalar.isEmpty { return quote(scalar.text) }
        return node.kindName
    }

    static func quote(_ text: String) -> String {
        let short = text.count > 40 ? String(text.prefix(37)) + "…" : text
        return "'\(short)'"
    }

    /// `a`, `a or b`, `a, b or c` (or with `and`).
    public static func list(_ words: [String], _ conjunction: String = "or") -> String {
        switch words.count {
        case 0: return ""
        case 1: return words[0]
        default: return words.dropLast().joined(separator: ", ") + " \(conjunction) " + words[words.count - 1]
        }
    }

    // MARK: Node kinds

    func mapping(_ node: YAMLNode, _ expected: String) -> YAMLMapping? {
        if let m = node.mapping { return m }
        error(node, expected: expected)
        return nil
    }

    func sequence(_ node: YAMLNode, _ expected: String) -> YAMLSequence? {
        if let s = node.sequence { return s }
        error(node, expected: expected)
        return nil
    }

    /// A scalar with text (an empty value is refused).
    func scalar(_ node: YAMLNode, _ expected: String) -> YAMLScalar? {
        if let s = node.scalar, !s.isEmpty { return s }
        error(node, expected: expected)
        return nil
    }

    /// The items of a sequence; a single scalar counts as a list of one (`services: FFE0`).
    func items(_ node: YAMLNode, _ expected: String) -> [YAMLNode]? {
        switch node {
        case let .sequence(s): return s.items
        case let .scalar(s) where !s.isEmpty: return [node]
        default:
            error(node, expected: expected)
            return nil
        }
    }

    // MARK: Keys

    /// Reports every key of `mapping` not in `allowed`, with the closest valid one.
    func checkKeys(_ mapping: YAMLMapping, allowed: [String], of what: String) {
        for (key, _) in mapping.entries where !allowed.contains(key.text) {
            error(at: key.mark, found: "unknown key \(Self.quote(key.text))", expected: "\(what) key (\(allowed.joined(separator: ", ")))",
                  hint: Spelling.suggestion(for: key.text, in: allowed))
        }
    }

    /// The value of a required key, reporting its absence at the mapping.
    func required(_ mapping: YAMLMapping, _ key: String, in what: String, expected: String) -> YAMLNode? {
        if let value = mapping[key] { return value }
        error(at: mapping.mark, found: "\(what) without '\(key)'", expected: expected)
        return nil
    }
}

/// The fields of an entry written as a keyword with a primary value and options, in any of the
/// forms the format allows:
///
///     - read: FFE1                                   # primary value alone
///     - read: { characteristic: FFE1, peripheral: a } # a mapping of fields
///     - notify: FFE1                                 # primary value, options beside it
///       value: written
struct KeywordFields {
    let keyword: YAMLScalar
    /// The keyword's own value.
    let node: YAMLNode
    private(set) var fields: [String: YAMLNode] = [:]
    private(set) var keyMarks: [String: Mark] = [:]

    /// - Parameters:
    ///   - primary: the field a scalar value stands for (nil: the keyword takes no scalar).
    ///   - allowed: every field, including `primary`.
    ///   - siblings: the other entries of the item's mapping.
    init(reader r: SchemaReader, keyword: YAMLScalar, node: YAMLNode, primary: String?, allowed: [String],
         siblings: [(key: YAMLScalar, value: YAMLNode)], what: String) {
        self.keyword = keyword
        self.node = node
        r.probe?.note(keyword.text, .fields(primary: primary, allowed: allowed))
        switch node {
        case let .mapping(m):
            r.checkKeys(m, allowed: allowed, of: "a '\(keyword.text)'")
            for (k, v) in m.entries where allowed.contains(k.text) {
                fields[k.text] = v
                keyMarks[k.text] = k.mark
            }
        case let .scalar(s) where s.isEmpty:
            break
        default:
            if let primary {
                fields[primary] = node
                keyMarks[primary] = keyword.mark
            } else {
                r.error(node, expected: "\(what) without a value, or a mapping of its options")
            }
        }
        for (k, v) in siblings {
            guard allowed.contains(k.text), k.text != primary || fields[k.text] == nil else {
                if fields[k.text] != nil {
                    r.error(at: k.mark, found: "'\(k.text)' given twice", expected: "each option of '\(keyword.text)' once")
                } else {
                    r.error(at: k.mark, found: "unknown key \(SchemaReader.quote(k.text))",
                            expected: "a '\(keyword.text)' key (\(allowed.joined(separator: ", ")))",
                            hint: Spelling.suggestion(for: k.text, in: allowed))
                }
                continue
            }
            if fields[k.text] != nil {
                r.error(at: k.mark, found: "'\(k.text)' given twice", expected: "each option of '\(keyword.text)' once")
                continue
            }
            fields[k.text] = v
            keyMarks[k.text] = k.mark
        }
    }

    subscript(_ name: String) -> YAMLNode? { fields[name] }

    /// The field, or an error at the keyword saying it is missing.
    func required(_ name: String, _ r: SchemaReader, example: String) -> YAMLNode? {
        if let v = fields[name] { return v }
        r.error(at: keyword.mark, found: "'\(keyword.text)' without '\(name)'", expected: example)
        return nil
    }
}

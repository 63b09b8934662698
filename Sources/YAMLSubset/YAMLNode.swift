/// How a scalar was written. The subset never types scalars: `no`, `0x10`, `~` and `null` are all
/// text, and the style is kept so the schema layer can tell `"10"` from `10` if it cares.
public enum YAMLScalarStyle: Hashable, Sendable {
    case plain
    case singleQuoted
    case doubleQuoted
}

/// Whether a collection was written by indentation (block) or with brackets (flow).
public enum YAMLCollectionStyle: Hashable, Sendable {
    case block
    case flow
}

/// A scalar as written: its text after quote processing and escapes, never converted to a number,
/// boolean or null.
///
/// An empty value — `key:` with nothing after it and nothing indented below, a lone `-`, or
/// `{ key: }` — is a plain scalar with empty text, which `isEmpty` reports (YAML's core schema would
/// read it as null; that reading belongs to the schema layer). A quoted `""` is not empty in this
/// sense: it is an explicit empty string. The mark of an empty value is the column just after the
/// `:` or `-` that introduced it.
public struct YAMLScalar: Hashable, Sendable, CustomStringConvertible {
    public let text: String
    public let style: YAMLScalarStyle
    /// Where the scalar starts: its first character, or its opening quote.
    public let mark: Mark

    public init(text: String, style: YAMLScalarStyle, mark: Mark) {
        self.text = text
        self.style = style
        self.mark = mark
    }

    /// True for a value that was left out (see the type's documentation).
    public var isEmpty: Bool { style == .plain && text.isEmpty }

    public var isQuoted: Bool { style != .plain }

    public var description: String { text }
}

/// A sequence's items in order.
public struct YAMLSequence: Equatable, Sendable {
    public let items: [YAMLNode]
    public let style: YAMLCollectionStyle
    /// The first `-` of a block sequence, or the `[` of a flow sequence.
    public let mark: Mark

    public init(items: [YAMLNode], style: YAMLCollectionStyle, mark: Mark) {
        self.items = items
        self.style = style
        self.mark = mark
    }

    public var count: Int { items.count }
    public var isEmpty: Bool { items.isEmpty }
}

/// A mapping's entries in the order they were written. Keys are scalars; two keys with the same
/// text are refused by the parser whatever their quoting (`a` and `"a"` are the same key), since
/// the subset does no typing and YAML 1.2 forbids duplicates.
public struct YAMLMapping: Sendable {
    public let entries: [(key: YAMLScalar, value: YAMLNode)]
    public let style: YAMLCollectionStyle
    /// The first key of a block mapping, or the `{` of a flow mapping.
    public let mark: Mark
    /// Positions by key text, for mappings too large to search in order; nil for small ones.
    private let indexByKey: [String: Int]?
    private static let largeCount = 12

    /// Builds a mapping. If two entries share a key's text, lookups find the first one (the parser
    /// never builds such a mapping; it reports the duplicate instead).
    public init(entries: [(key: YAMLScalar, value: YAMLNode)], style: YAMLCollectionStyle, mark: Mark) {
        self.entries = entries
        self.style = style
        self.mark = mark
        if entries.count > YAMLMapping.largeCount {
            var index: [String: Int] = [:]
            for (position, entry) in entries.enumerated() where index[entry.key.text] == nil {
                index[entry.key.text] = position
            }
            self.indexByKey = index
        } else {
            self.indexByKey = nil
        }
    }

    /// The keys' text, in order.
    public var keys: [String] { entries.map { $0.key.text } }
    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    /// The value for a key, compared by the key's text.
    public func value(for key: String) -> YAMLNode? {
        entry(for: key)?.value
    }

    /// The key as written (with its mark) and its value.
    public func entry(for key: String) -> (key: YAMLScalar, value: YAMLNode)? {
        if let indexByKey {
            return indexByKey[key].map { entries[$0] }
        }
        return entries.first { $0.key.text == key }
    }

    public subscript(key: String) -> YAMLNode? { value(for: key) }
}

extension YAMLMapping: Equatable {
    public static func == (lhs: YAMLMapping, rhs: YAMLMapping) -> Bool {
        lhs.style == rhs.style && lhs.mark == rhs.mark && lhs.entries.count == rhs.entries.count
            && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

/// A node of the document: a scalar, a sequence or a mapping. Equality compares text, styles and
/// marks; compare `kindName`s or walk the tree to compare structure alone. (Not `indirect`: the
/// payloads hold their children in arrays already, and a box per node would cost a malloc each.)
public enum YAMLNode: Equatable, Sendable {
    case scalar(YAMLScalar)
    case sequence(YAMLSequence)
    case mapping(YAMLMapping)

    /// Where the node starts.
    public var mark: Mark {
        switch self {
        case .scalar(let scalar): return scalar.mark
        case .sequence(let sequence): return sequence.mark
        case .mapping(let mapping): return mapping.mark
        }
    }

    /// For messages: "a scalar", "a sequence", "a mapping", or "an empty value" for a value that
    /// was left out (`key:` with nothing after it).
    public var kindName: String {
        switch self {
        case .scalar(let scalar): return scalar.isEmpty ? "an empty value" : "a scalar"
        case .sequence: return "a sequence"
        case .mapping: return "a mapping"
        }
    }

    public var scalar: YAMLScalar? {
        if case .scalar(let scalar) = self { return scalar }
        return nil
    }

    public var sequence: YAMLSequence? {
        if case .sequence(let sequence) = self { return sequence }
        return nil
    }

    public var mapping: YAMLMapping? {
        if case .mapping(let mapping) = self { return mapping }
        return nil
    }

    /// True for a value that was left out (see `YAMLScalar.isEmpty`); false for `[]`, `{}` and `""`.
    public var isEmptyValue: Bool { scalar?.isEmpty ?? false }
}

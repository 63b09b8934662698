import YAMLSubset

/// A node written back on one line in flow style, for reports: whatever style a step was written
/// in (block over several lines, flow, with comments), it reads the same, e.g.
/// `write: { characteristic: FFE1, value: text:hello }`.
enum StepText {
    static func render(_ node: YAMLNode, top: Bool = false) -> String {
        switch node {
        case let .scalar(s): return scalar(s)
        case let .sequence(seq): return "[" + seq.items.map { render($0) }.joined(separator: ", ") + "]"
        case let .mapping(m):
            let body = m.entries.map { entry -> String in
                entry.value.isEmptyValue ? scalar(entry.key) : "\(scalar(entry.key)): \(render(entry.value))"
            }.joined(separator: ", ")
            return top ? body : "{ \(body) }"
        }
    }

    static func scalar(_ s: YAMLScalar) -> String {
        switch s.style {
        case .plain: return s.text
        case .singleQuoted: return "'" + s.text.replacingAll("'", with: "''") + "'"
        case .doubleQuoted:
            var out = "\""
            for c in s.text.unicodeScalars {
                switch c {
                case "\\": out += "\\\\"
                case "\"": out += "\\\""
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                default: out.unicodeScalars.append(c)
                }
            }
            return out + "\""
        }
    }
}

extension String {
    /// Every occurrence of `target` replaced (no Foundation here).
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}

/// A position in a YAML file, 1-based.
///
/// `column` counts Characters (extended grapheme clusters, as Swift's `String` counts them) from
/// the start of the line, so `é` written as `e` + U+0301 is one column, and so is an emoji with a
/// skin-tone modifier. A tab counts as one column. A byte order mark that starts the file is not
/// counted. On an ASCII line this is the same column that editors and compilers report.
public struct Mark: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let line: Int
    public let column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `line:column`, the form compilers and editors use.
    public var description: String { "\(line):\(column)" }

    public static func < (lhs: Mark, rhs: Mark) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }
}

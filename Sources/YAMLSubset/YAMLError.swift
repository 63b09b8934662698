/// Why a file is not in the YAML subset, and where.
///
/// `description` is `file:line:column: error: found X, expected Y` with `; hint` appended when
/// there is one — the form compilers print, so editors and CI logs link straight to the spot.
/// The mark is always the position of the offending character (for an unclosed quote or
/// bracket, the opening one), never the end of the file.
public struct YAMLError: Error, Hashable, Sendable, CustomStringConvertible {
    public let file: String
    public let mark: Mark
    /// What was there, quoted and shortened (`'&anchor'`, `a tab`, `end of line`).
    public let found: String
    /// What would have been valid at that position.
    public let expected: String
    /// How to fix it, when that is not obvious from `expected`.
    public let hint: String?

    public init(file: String, mark: Mark, found: String, expected: String, hint: String? = nil) {
        self.file = file
        self.mark = mark
        self.found = found
        self.expected = expected
        self.hint = hint
    }

    public var description: String {
        let message = "\(file):\(mark.line):\(mark.column): error: found \(found), expected \(expected)"
        guard let hint else { return message }
        return message + "; " + hint
    }
}

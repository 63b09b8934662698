import YAMLSubset

/// Why a scenario file cannot run, and where: the same shape as the YAML parser's errors, so a
/// file's problems read alike whichever layer found them.
///
/// `description` is `file:line:column: error: found X, expected Y`, with `; hint` appended when
/// there is one (a did-you-mean, or the fix).
public struct ScenarioError: Error, Hashable, Sendable, CustomStringConvertible {
    public var file: String
    /// 1-based; 0 when the error is about the file as a whole (it cannot be read).
    public var line: Int
    public var column: Int
    public var found: String
    public var expected: String
    public var hint: String?

    public init(file: String, line: Int, column: Int, found: String, expected: String, hint: String? = nil) {
        self.file = file
        self.line = line
        self.column = column
        self.found = found
        self.expected = expected
        self.hint = hint
    }

    public init(_ error: YAMLError) {
        self.init(file: error.file, line: error.mark.line, column: error.mark.column, found: error.found,
                  expected: error.expected, hint: error.hint)
    }

    public var location: SourceLocation { SourceLocation(file: file, line: line, column: column) }

    public var description: String {
        let place = line > 0 ? "\(file):\(line):\(column)" : file
        let message = "\(place): error: found \(found), expected \(expected)"
        guard let hint else { return message }
        return message + "; " + hint
    }
}

/// Every error found in one file, in the order of their positions.
public struct ScenarioErrors: Error, CustomStringConvertible {
    public var errors: [ScenarioError]

    public init(_ errors: [ScenarioError]) { self.errors = errors }

    public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// "Did you mean …?" for misspelt words.
public enum Spelling {
    /// Edit distance counting an insertion, a deletion, a substitution or a swap of two adjacent
    /// characters as one edit (optimal string alignment), case-insensitive: `wiat` is one edit
    /// from `wait`.
    static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a.lowercased().unicodeScalars), y = Array(b.lowercased().unicodeScalars)
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { d[i][0] = i }
        for j in 0...y.count { d[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[x.count][y.count]
    }

    /// The candidate closest to `word`, if it is close enough to be a likely misspelling: at most
    /// a third of the word's length away (and at least 1 edit, at most 3). Ties go to the first.
    /// Failing that, the one candidate that shares the most dash-separated words with `word`, when
    /// that is at least two (`write-not-allowed` → `write-not-permitted`, `user-terminated` →
    /// `remote-user-terminated`).
    static func closest(to word: String, in candidates: [String]) -> String? {
        let limit = max(1, min(3, word.count / 3))
        var best: (String, Int)?
        for candidate in candidates where candidate != word {
            let d = distance(word, candidate)
            if d <= limit, best.map({ d < $0.1 }) ?? true { best = (candidate, d) }
        }
        return best?.0 ?? sharingWords(with: word, in: candidates).first
    }

    /// The candidates that share the most dash-separated words with `word` (at least two), fewest
    /// other words first; several when they tie.
    static func sharingWords(with word: String, in candidates: [String]) -> [String] {
        let words = Set(word.lowercased().split(separator: "-"))
        guard words.count >= 2 else { return [] }
        let scored = candidates.filter { $0 != word }.map { c -> (String, Int, Int) in
            let own = Set(c.lowercased().split(separator: "-"))
            return (c, own.intersection(words).count, own.subtracting(words).count)
        }
        guard let top = scored.map(\.1).max(), top >= 2 else { return [] }
        let shared = scored.filter { $0.1 == top }
        let fewest = shared.map(\.2).min() ?? 0
        return shared.filter { $0.2 == fewest }.map(\.0)
    }

    /// `did you mean 'x'?` (or `'x' or 'y'` when words they share tie) as a hint, or nil.
    public static func suggestion(for word: String, in candidates: [String]) -> String? {
        let limit = max(1, min(3, word.count / 3))
        if let close = closest(to: word, in: candidates), distance(word, close) <= limit { return "did you mean '\(close)'?" }
        let sharing = sharingWords(with: word, in: candidates)
        guard !sharing.isEmpty, sharing.count <= 3 else { return nil }
        return "did you mean " + SchemaReader.list(sharing.map { "'\($0)'" }) + "?"
    }
}

/// The text of a file as Unicode scalars, cut into lines: the scanner level of the parser.
///
/// Positions are indices into `text`. A line never includes its line break; `\n`, `\r\n` and a
/// lone `\r` all end a line, as in YAML 1.2. A byte order mark that starts the file is dropped.
/// Columns are worked out per line, once, so marks cost O(1) and parsing stays linear.
struct Source {
    let file: String
    let text: [Unicode.Scalar]
    let lines: [Line]

    struct Line {
        let start: Int
        /// One past the last scalar of the line, where its line break (if any) starts.
        let end: Int
        /// The column of each scalar from `start` through `end`, for a line that is not all ASCII.
        /// nil for an ASCII line, where the column is the offset plus one.
        let columns: [Int]?
        /// The first character the subset refuses anywhere (see `Source.isRefused`), if any.
        let firstRefused: Int?
    }

    init(file: String, string: String) {
        self.file = file
        var scalars = Array(string.unicodeScalars)
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        self.text = scalars

        var lines: [Line] = []
        var start = 0
        var isASCII = true
        var firstRefused: Int?
        var position = 0
        func endLine(at end: Int) {
            let columns = isASCII ? nil : Source.characterColumns(scalars[start..<end])
            lines.append(Line(start: start, end: end, columns: columns, firstRefused: firstRefused))
        }
        while position < scalars.count {
            let scalar = scalars[position]
            if scalar == "\n" || scalar == "\r" {
                endLine(at: position)
                if scalar == "\r", position + 1 < scalars.count, scalars[position + 1] == "\n" {
                    position += 1
                }
                position += 1
                start = position
                isASCII = true
                firstRefused = nil
                continue
            }
            if scalar.value >= 0x80 { isASCII = false }
            if firstRefused == nil, Source.isRefused(scalar) { firstRefused = position }
            position += 1
        }
        endLine(at: scalars.count)
        self.lines = lines
    }

    /// The mark of `position`, which lies on line `line` (0-based) or just past its last character.
    func mark(_ position: Int, line: Int) -> Mark {
        let info = lines[line]
        let offset = min(max(position, info.start), info.end) - info.start
        let column = info.columns.map { $0[offset] } ?? offset + 1
        return Mark(line: line + 1, column: column)
    }

    /// The text of `range` as a String.
    func string(_ range: Range<Int>) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: text[range])
        return String(view)
    }

    /// Characters YAML 1.2 does not allow in a stream (C0 and C1 controls other than tab and line
    /// breaks, DEL, surrogates, U+FFFE/U+FFFF), plus three it allows but that YAML 1.1 parsers
    /// (PyYAML) read as line breaks — NEL, LS and PS — and a byte order mark inside the text.
    /// Refusing them keeps every accepted file loading the same way in every parser.
    static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D, 0x20...0x7E: return false
        case 0x2028, 0x2029, 0xFEFF: return true
        case 0xA0...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return false
        default: return true
        }
    }

    /// Column of each scalar of `line` (and of the position after it), counting Characters.
    private static func characterColumns(_ line: ArraySlice<Unicode.Scalar>) -> [Int] {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: line)
        var columns: [Int] = []
        columns.reserveCapacity(line.count + 1)
        var column = 1
        for character in String(view) {
            for _ in character.unicodeScalars { columns.append(column) }
            column += 1
        }
        columns.append(column)
        return columns
    }
}

extension Unicode.Scalar {
    var isFlowIndicator: Bool {
        self == "," || self == "[" || self == "]" || self == "{" || self == "}"
    }

    /// A space or a tab: what may separate tokens on a line (tabs are then refused with a message).
    var isBlank: Bool { self == " " || self == "\t" }
}

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

    /// The text of `range` as a String, encoded straight into the String's storage.
    func string(_ range: Range<Int>) -> String {
        String(unsafeUninitializedCapacity: range.count * 4) { buffer in
            var count = 0
            for scalar in text[range] {
                let value = scalar.value
                switch value {
                case ..<0x80:
                    buffer[count] = UInt8(value)
                    count += 1
                case ..<0x800:
                    buffer[count] = UInt8(0xC0 | value >> 6)
                    buffer[count + 1] = UInt8(0x80 | value & 0x3F)
                    count += 2
                case ..<0x10000:
                    buffer[count] = UInt8(0xE0 | value >> 12)
                    buffer[count + 1] = UInt8(0x80 | value >> 6 & 0x3F)
                    buffer[count + 2] = UInt8(0x80 | value & 0x3F)
                    count += 3
                default:
                    buffer[count] = UInt8(0xF0 | value >> 18)
                    buffer[count + 1] = UInt8(0x80 | value >> 12 & 0x3F)
                    buffer[count + 2] = UInt8(0x80 | value >> 6 & 0x3F)
                    buffer[count + 3] = UInt8(0x80 | value & 0x3F)
                    count += 4
                }
            }
            return count
        }
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
    ///
    /// Two ASCII scalars in a row are always two Characters (no grapheme rule joins them), so
    /// only the stretches around non-ASCII scalars — each with one ASCII scalar on either side,
    /// which a combining mark or a prepended mark may join — go through Swift's grapheme
    /// breaking. A stretch starts after an ASCII scalar, so no rule that looks back (emoji ZWJ
    /// sequences, regional-indicator pairs, Indic conjuncts) could reach across its start.
    private static func characterColumns(_ line: ArraySlice<Unicode.Scalar>) -> [Int] {
        var columns: [Int] = []
        columns.reserveCapacity(line.count + 1)
        var column = 1
        var position = line.startIndex
        while position < line.endIndex {
            let next = position + 1
            if line[position].isASCII, next == line.endIndex || line[next].isASCII {
                columns.append(column)
                column += 1
                position = next
                continue
            }
            var end = next
            while end < line.endIndex, !(line[end].isASCII && line[end - 1].isASCII) { end += 1 }
            var stretch = String.UnicodeScalarView()
            stretch.append(contentsOf: line[position..<end])
            for character in String(stretch) {
                for _ in character.unicodeScalars { columns.append(column) }
                column += 1
            }
            position = end
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

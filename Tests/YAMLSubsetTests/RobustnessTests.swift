import XCTest
import YAMLSubset

/// Random damage to valid files must give a tree or a YAMLError pointing inside the file — never
/// a crash, a hang or a mark past the end. The generator is seeded, so a failure reproduces.
final class RobustnessTests: XCTestCase {
    static let bases = [
        ScenarioFormatExampleTests.shapeExample,
        ScenarioFormatExampleTests.everyStepExample,
        "a:\n- b\n- c: d\n  e: [f, {g: h}]\n",
        "- - x\n  - 'y'\n- \"z\\t\"\n",
    ]

    static let insertions: [String] = [
        " ", "  ", "\t", "\n", "\r", "\r\n", ":", ": ", "-", "- ", "#", " #", "'", "\"", "''", "\\",
        "[", "]", "{", "}", ",", "?", "? ", "&a", "*a", "!", "!!str", "|", ">", "%", "@", "`",
        "---\n", "...\n", "\n  ", "\n- ", "k: v", "x", "0", "é", "e\u{301}", "\u{1F44D}\u{1F3FD}",
        "\u{7}", "\u{85}", "\u{2028}", "\u{FEFF}", "\\u00e9", "\\x4", "\\",
    ]

    func testRandomMutationsParseOrFailInsideTheInput() {
        var random = SplitMix64(seed: 0x5CE7_A210)
        var parsed = 0
        var refused = 0
        for iteration in 0..<2_500 {
            var text = Array(Self.bases[random.next(below: Self.bases.count)].unicodeScalars)
            for _ in 0...random.next(below: 4) {
                let position = random.next(below: text.count + 1)
                switch random.next(below: 4) {
                case 0 where !text.isEmpty:
                    let end = min(text.count, position + 1 + random.next(below: 3))
                    text.removeSubrange(min(position, text.count - 1)..<end)
                case 1 where position < text.count:
                    let replacement = Self.insertions[random.next(below: Self.insertions.count)]
                    text.replaceSubrange(position..<position + 1, with: replacement.unicodeScalars)
                default:
                    let insertion = Self.insertions[random.next(below: Self.insertions.count)]
                    text.insert(contentsOf: insertion.unicodeScalars, at: position)
                }
            }
            var view = String.UnicodeScalarView()
            view.append(contentsOf: text)
            let input = String(view)
            let context = "iteration \(iteration): \(input.debugDescription)"
            do {
                let node = try parseYAML(input, file: "fuzz.yaml")
                assertMarksInside(node, input, context)
                parsed += 1
            } catch let error as YAMLError {
                assertInside(error.mark, input, context)
                XCTAssertTrue(error.description.hasPrefix("fuzz.yaml:\(error.mark.line):\(error.mark.column): error: found "), context)
                XCTAssertFalse(error.found.isEmpty, context)
                XCTAssertFalse(error.expected.isEmpty, context)
                refused += 1
            } catch {
                XCTFail("\(context): not a YAMLError: \(error)")
            }
        }
        // Both outcomes are exercised, so the mutations are neither all harmless nor all fatal.
        XCTAssertGreaterThan(parsed, 200)
        XCTAssertGreaterThan(refused, 1_000)
    }

    /// Every prefix of the example: cut-off files end anywhere, inside quotes and brackets too.
    func testEveryPrefixOfTheExample() {
        let scalars = Array(ScenarioFormatExampleTests.shapeExample.unicodeScalars)
        for length in 0...scalars.count {
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars[..<length])
            let input = String(view)
            do {
                assertMarksInside(try parseYAML(input, file: "cut.yaml"), input, "prefix \(length)")
            } catch let error as YAMLError {
                assertInside(error.mark, input, "prefix \(length)")
            } catch {
                XCTFail("prefix \(length): \(error)")
            }
        }
    }

    /// Columns count Characters exactly as Swift does, whatever joins scalars into one: combining
    /// and spacing marks, prepended marks, emoji ZWJ sequences and modifiers, flags, Hangul, Indic
    /// conjuncts. Random items in a flow sequence; each item's mark is checked against a column
    /// table built from the whole line's Characters.
    func testColumnsMatchSwiftCharacters() throws {
        let palette: [Unicode.Scalar] = [
            "a", "b", "1", "\u{301}", "\u{308}", "\u{200D}", "\u{1F44D}", "\u{1F3FD}", "\u{1F468}", "\u{1F469}",
            "\u{1F1EB}", "\u{1F1F7}", "\u{1100}", "\u{1161}", "\u{11A8}", "\u{AC00}", "\u{0600}", "\u{0915}",
            "\u{094D}", "\u{0937}", "\u{093F}", "\u{0E33}", "\u{A9}", "\u{E9}", "\u{4E2D}", "\u{200C}", "\u{FE0F}",
        ]
        var random = SplitMix64(seed: 0xC01)
        for iteration in 0..<400 {
            var line = Array("k: [".unicodeScalars)
            var itemStarts: [Int] = []
            for index in 0..<(1 + random.next(below: 6)) {
                if index > 0 { line += ", ".unicodeScalars }
                itemStarts.append(line.count)
                // An item starts with a letter, so it is a plain scalar; then anything.
                line.append(palette[random.next(below: 3)])
                for _ in 0..<random.next(below: 6) { line.append(palette[random.next(below: palette.count)]) }
            }
            line += "]".unicodeScalars
            var view = String.UnicodeScalarView()
            view.append(contentsOf: line)
            let text = String(view)

            var expectedColumns: [Int] = []
            for (offset, character) in text.enumerated() {
                expectedColumns += Array(repeating: offset + 1, count: character.unicodeScalars.count)
            }
            let items = try XCTUnwrap(parse(text)?.mapping?["k"]?.sequence?.items, "iteration \(iteration)")
            XCTAssertEqual(items.map(\.mark.column), itemStarts.map { expectedColumns[$0] }, "iteration \(iteration): \(text.debugDescription)")
        }
    }

    /// Large and pathological inputs finish (the parser is linear; nothing backtracks).
    func testLargeInputs() throws {
        var file = "central:\n"
        for index in 0..<2_000 { file += "  - write: { characteristic: FFE1, value: \"text:\(index)\" }   # step \(index)\n" }
        let central = try XCTUnwrap(parse(file)?.mapping?["central"]?.sequence)
        XCTAssertEqual(central.count, 2_000)
        XCTAssertEqual(central.items.last?.mark, Mark(line: 2_001, column: 5))

        let wide = "[" + (0..<20_000).map(String.init).joined(separator: ", ") + "]"
        XCTAssertEqual(parse(wide)?.sequence?.count, 20_000)

        let longScalar = "k: " + String(repeating: "a b:c#d ", count: 20_000)
        XCTAssertEqual(parse(longScalar)?.mapping?["k"]?.scalar?.text.count, 8 * 20_000 - 1)

        let manyColons = String(repeating: ":x", count: 50_000)
        XCTAssertEqual(parse(manyColons)?.scalar?.text.count, 100_000)

        assertError(String(repeating: "[", count: 100_000),
                    "test.yaml:1:101: error: found more than 100 nested collections, expected at most 100 levels of nesting")
        assertError("a: \"" + String(repeating: "x", count: 100_000),
                    "test.yaml:1:4: error: found an unclosed double quote, expected a closing \" on the same line; multi-line scalars are not part of the YAML subset; keep the value on one line")
    }

    // MARK: Helpers

    /// Line lengths in Characters, split at \n, \r\n and \r, after a leading BOM.
    private func lineLengths(_ text: String) -> [Int] {
        var lengths = [0]
        for (offset, character) in text.enumerated() {
            if offset == 0, character == "\u{FEFF}" { continue }
            if character == "\n" || character == "\r" || character == "\r\n" {
                lengths.append(0)
            } else {
                lengths[lengths.count - 1] += 1
            }
        }
        return lengths
    }

    private func assertInside(_ mark: Mark, _ text: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        assertInside(mark, lineLengths(text), context, file: file, line: line)
    }

    private func assertInside(_ mark: Mark, _ lengths: [Int], _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        guard mark.line >= 1, mark.line <= lengths.count else {
            return XCTFail("\(context): line \(mark.line) outside 1...\(lengths.count)", file: file, line: line)
        }
        XCTAssertTrue((1...lengths[mark.line - 1] + 1).contains(mark.column),
                      "\(context): column \(mark.column) outside line \(mark.line) of \(lengths[mark.line - 1]) characters",
                      file: file, line: line)
    }

    private func assertMarksInside(_ node: YAMLNode, _ text: String, _ context: String) {
        assertMarksInside(node, lineLengths(text), context)
    }

    private func assertMarksInside(_ node: YAMLNode, _ lengths: [Int], _ context: String) {
        assertInside(node.mark, lengths, context)
        switch node {
        case .scalar:
            break
        case .sequence(let sequence):
            for item in sequence.items { assertMarksInside(item, lengths, context) }
        case .mapping(let mapping):
            for entry in mapping.entries {
                assertInside(entry.key.mark, lengths, context)
                assertMarksInside(entry.value, lengths, context)
            }
        }
    }
}

/// A small seeded generator (SplitMix64), so every run mutates the same way.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }
}

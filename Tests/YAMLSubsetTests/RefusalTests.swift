import XCTest
import YAMLSubset

/// Everything outside the subset is refused with the exact message, at the offending character.
final class RefusalTests: XCTestCase {
    func testAnchorsAndAliases() {
        assertError("base: &b x\n",
                    "test.yaml:1:7: error: found anchor '&b', expected a value; anchors and aliases are not part of the YAML subset; write the value out in full")
        assertError("a: x\nb: *a\n",
                    "test.yaml:2:4: error: found alias '*a', expected a value; anchors and aliases are not part of the YAML subset; write the value out in full")
        assertError("a: [x, *a]\n",
                    "test.yaml:1:8: error: found alias '*a', expected a value; anchors and aliases are not part of the YAML subset; write the value out in full")
        assertError("base:\n  <<: *defaults\n",
                    "test.yaml:2:7: error: found alias '*defaults', expected a value; anchors and aliases are not part of the YAML subset; write the value out in full")
    }

    func testMergeKeyIsAnOrdinaryKey() {
        assertTree("<<: x\n", ["<<": "x"])
    }

    func testTags() {
        assertError("a: !!str 10\n",
                    "test.yaml:1:4: error: found tag '!!str', expected a value; tags are not part of the YAML subset; every scalar is already text, so leave the tag out")
        assertError("a: [!t x]\n",
                    "test.yaml:1:5: error: found tag '!t', expected a value; tags are not part of the YAML subset; every scalar is already text, so leave the tag out")
        assertError("- !local\n",
                    "test.yaml:1:3: error: found tag '!local', expected a value; tags are not part of the YAML subset; every scalar is already text, so leave the tag out")
    }

    func testBlockScalars() {
        assertError("a: |\n  text\n",
                    "test.yaml:1:4: error: found block scalar indicator '|', expected a value on this line; block scalars are not part of the YAML subset; write the value on one line, in double quotes with \\n for line breaks if needed")
        assertError("a: >-\n  text\n",
                    "test.yaml:1:4: error: found block scalar indicator '>', expected a value on this line; block scalars are not part of the YAML subset; write the value on one line, in double quotes with \\n for line breaks if needed")
    }

    func testDocumentsAndDirectives() {
        assertError("a: 1\n---\nb: 2\n",
                    "test.yaml:2:1: error: found '---' (a second document), expected end of file; a scenario file holds one document")
        assertError("---\na: 1\n---\n",
                    "test.yaml:3:1: error: found '---' (a second document), expected end of file; a scenario file holds one document")
        assertError("a: 1\n...\n---\n",
                    "test.yaml:3:1: error: found '---' (a second document), expected end of file; a scenario file holds one document")
        assertError("a: 1\n...\nb: 2\n",
                    "test.yaml:3:1: error: found 'b:', expected end of file; nothing may follow the document end marker '...' at 2:1; a scenario file holds one document")
        assertError("%YAML 1.2\n---\na: 1\n",
                    "test.yaml:1:1: error: found directive '%YAML', expected a document; directives are not part of the YAML subset; remove the line")
        assertError("--- a: 1\n",
                    "test.yaml:1:5: error: found 'a:', expected end of line after '---'; start the document on the next line")
        assertError("...\n",
                    "test.yaml:1:1: error: found '...', expected a document before the document end marker")
    }

    func testTabs() {
        assertError("a:\n\tb: 1\n",
                    "test.yaml:2:1: error: found a tab in the indentation, expected spaces; indent with spaces only")
        assertError("a:\n  \tb: 1\n",
                    "test.yaml:2:3: error: found a tab in the indentation, expected spaces; indent with spaces only")
        assertError("a: 1\n \t\nb: 2\n",
                    "test.yaml:2:2: error: found a tab in the indentation, expected spaces; indent with spaces only")
        assertError("a: 1\n\t# comment\n",
                    "test.yaml:2:1: error: found a tab in the indentation, expected spaces; indent with spaces only")
        // PyYAML refuses tabs between tokens too, so the subset does.
        assertError("a:\tb\n",
                    "test.yaml:1:3: error: found a tab, expected a space; the YAML subset allows tabs only inside quoted scalars and comments")
        assertError("a: b\tc\n",
                    "test.yaml:1:5: error: found a tab, expected a space; the YAML subset allows tabs only inside quoted scalars and comments")
        assertError("a: 1 \t# c\n",
                    "test.yaml:1:6: error: found a tab, expected a space; the YAML subset allows tabs only inside quoted scalars and comments")
        assertError("a: [b,\tc]\n",
                    "test.yaml:1:7: error: found a tab, expected a space; the YAML subset allows tabs only inside quoted scalars and comments")
    }

    func testTabsInsideQuotesAndCommentsAreText() {
        assertTree("a: \"x\ty\"   # tab\there\nb: 'p\tq'\n", ["a": "x\ty", "b": "p\tq"])
    }

    func testIndentation() {
        // Deeper than the keys, after a value written on the key's line.
        assertError("a: 1\n  b: 2\n",
                    "test.yaml:2:3: error: found 'b:', expected a key at column 1; only a key with nothing after its ':' can have an indented block below it")
        assertError("a: [x]\n  b: 1\n",
                    "test.yaml:2:3: error: found 'b:', expected a key at column 1; only a key with nothing after its ':' can have an indented block below it")
        assertError("a: [x]\n  y\n",
                    "test.yaml:2:3: error: found 'y', expected a key at column 1; nothing can be nested under a flow sequence, and it must close on its own line")
        // Back to a column no open block starts at.
        assertError("a:\n    b: 1\n  c: 2\n",
                    "test.yaml:3:3: error: found 'c:', expected indentation matching an enclosing block (column 1 or 5)")
        assertError("- a: 1\n b: 2\n",
                    "test.yaml:2:2: error: found 'b:', expected indentation matching an enclosing block (column 1 or 3)")
        assertError("  a: 1\nb: 2\n",
                    "test.yaml:2:1: error: found 'b:', expected indentation matching an enclosing block (column 3)")
        // A line that is neither the next item nor further left.
        assertError("gatt:\n  - service: FFE0\n  characteristics: []\n",
                    "test.yaml:3:3: error: found 'characteristics:', expected '-' (another item of the sequence at column 3) or less indentation; the keys of an item's mapping line up with its first key, at column 5")
        assertError("- a\n- b\nc: 1\n",
                    "test.yaml:3:1: error: found 'c:', expected '-' (another item of the sequence at column 1) or less indentation")
        assertError("a: 1\n- b\n",
                    "test.yaml:2:1: error: found '-', expected a key at column 1; a sequence that is a key's value starts on the line after the key, with nothing after its ':'")
    }

    func testMultiLineScalars() {
        assertError("scenario: HM-10 serial bridge\n  echoes what the app writes\n",
                    "test.yaml:2:3: error: found 'echoes', expected a key at column 1; multi-line scalars are not part of the YAML subset; keep the value on one line")
        assertError("- a\n  b\n",
                    "test.yaml:2:3: error: found 'b', expected '-' at column 1 or less indentation; multi-line scalars are not part of the YAML subset; keep the value on one line")
        assertError("hello\nworld\n",
                    "test.yaml:2:1: error: found 'world', expected end of file; multi-line scalars are not part of the YAML subset; keep the value on one line")
        assertError("k:\n  v\n  w\n",
                    "test.yaml:3:3: error: found 'w', expected a key at column 1; multi-line scalars are not part of the YAML subset; keep the value on one line")
        assertError("a: \"abc\\\n  def\"\n",
                    "test.yaml:1:8: error: found '\\' at the end of the line, expected an escape sequence; multi-line scalars are not part of the YAML subset; keep the value on one line")
    }

    func testKeysWithoutColonAndSpace() {
        assertError("advertise:\n  name: x\n  services:[FFE0]\n",
                    "test.yaml:3:3: error: found 'services:[FFE0]', expected a key followed by ':'; put a space after ':' (key: value)")
        assertError("a: 1\nb\n",
                    "test.yaml:2:1: error: found 'b', expected a key followed by ':'")
        assertError("\"a\":b\n",
                    "test.yaml:1:5: error: found 'b', expected a space after ':'")
        assertError("a: 1\n\"b\":2\n",
                    "test.yaml:2:5: error: found '2', expected a space after ':'")
        assertError("a: { b:c }\n",
                    "test.yaml:1:10: error: found '}', expected ':' after the key 'b:c'; put a space after ':' (key: value)")
        assertError("a: { b, c: d }\n",
                    "test.yaml:1:7: error: found ',', expected ':' after the key 'b'")
        assertError(": a\n",
                    "test.yaml:1:1: error: found ':', expected a key before ':'")
    }

    func testValuesThatCannotStartThere() {
        assertError("a: - b\n",
                    "test.yaml:1:4: error: found '-', expected a value after ':'; a sequence starts on the line after 'a:', each '-' indented or at the key's column")
        assertError("a: b: c\n",
                    "test.yaml:1:5: error: found ':', expected end of line; a mapping inside a value starts on the next line, indented under 'a', or is written { k: v }")
        assertError("a: %x\n", "test.yaml:1:4: error: found '%x', expected a value; quote a value that starts with '%'")
        assertError("a: @x\n", "test.yaml:1:4: error: found '@x', expected a value; quote a value that starts with '@'")
        assertError("a: `x`\n", "test.yaml:1:4: error: found '`x`', expected a value; quote a value that starts with '`'")
        assertError("a: ]\n", "test.yaml:1:4: error: found ']', expected a value; quote a value that starts with ']'")
        assertError("a: \"b\" c\n", "test.yaml:1:8: error: found 'c', expected end of line or a comment")
        assertError("a: [b]# c\n",
                    "test.yaml:1:7: error: found '#', expected end of line or a comment; a comment needs a space before '#'")
        assertError("a: [b, #c]\n", "test.yaml:1:4: error: found unclosed '[', expected ']' on the same line; a flow collection must open and close on one line in the YAML subset")
        assertError("a: [b,#c]\n",
                    "test.yaml:1:7: error: found '#c', expected a value; a comment needs a space before '#'; quote a value that starts with '#'")
    }

    func testComplexKeys() {
        assertError("? a\n: b\n",
                    "test.yaml:1:1: error: found complex key indicator '?', expected a key on one line (key: value); complex keys ('? ') are not part of the YAML subset")
        assertError("[a, b]: c\n",
                    "test.yaml:1:1: error: found a sequence as a key, expected a scalar key; complex keys are not part of the YAML subset")
        assertError("{a: b}: c\n",
                    "test.yaml:1:1: error: found a mapping as a key, expected a scalar key; complex keys are not part of the YAML subset")
        assertError("a: { [x]: y }\n",
                    "test.yaml:1:6: error: found a sequence as a key, expected a scalar key; complex keys are not part of the YAML subset")
        assertError("k" + String(repeating: "x", count: 1024) + ": v\n",
                    "test.yaml:1:1: error: found a key of 1025 characters, expected at most 1024; YAML limits a key written on one line to 1024 characters")
    }

    func testUnterminatedQuotesAndFlowCollections() {
        assertError("a: \"abc\n",
                    "test.yaml:1:4: error: found an unclosed double quote, expected a closing \" on the same line; multi-line scalars are not part of the YAML subset; keep the value on one line")
        assertError("a: 'it''s\n",
                    "test.yaml:1:4: error: found an unclosed single quote, expected a closing ' on the same line; multi-line scalars are not part of the YAML subset; keep the value on one line")
        assertError("a: [b, c\n",
                    "test.yaml:1:4: error: found unclosed '[', expected ']' on the same line; a flow collection must open and close on one line in the YAML subset")
        assertError("a: { b: c,\n   d: e }\n",
                    "test.yaml:1:4: error: found unclosed '{', expected '}' on the same line; a flow collection must open and close on one line in the YAML subset")
        assertError("a: [b, { c: [d }]\n",
                    "test.yaml:1:16: error: found '}', expected ',' or ']'; the '[' at 1:13 is not closed before this '}'")
        assertError("a: [b]]\n", "test.yaml:1:7: error: found ']', expected end of line or a comment")
    }

    func testFlowEntries() {
        assertError("a: [b, , c]\n", "test.yaml:1:8: error: found ',', expected a value or ']'")
        assertError("a: [, b]\n", "test.yaml:1:5: error: found ',', expected a value or ']'")
        assertError("a: [,]\n", "test.yaml:1:5: error: found ',', expected a value or ']'")
        assertError("a: {, }\n", "test.yaml:1:5: error: found ',', expected a key or '}'")
        assertError("a: [b: c]\n",
                    "test.yaml:1:6: error: found ':', expected ',' or ']'; a key: value pair inside [ ] is written as a mapping: [{ key: value }]")
        assertError("a: [b, - c]\n",
                    "test.yaml:1:8: error: found '-', expected a value; a '-' item cannot start here; a block sequence starts on its own line")
        assertError("a: { b: c d: e }\n", "test.yaml:1:12: error: found ':', expected ',' or '}'")
        // PyYAML ends a plain scalar at '?' inside flow collections, and YAML 1.2 does not.
        assertError("a: [b?c]\n",
                    "test.yaml:1:6: error: found '?' in 'b?', expected a value without '?' inside [ ] or { }; quote the value; YAML 1.1 parsers (PyYAML) end a value at '?' inside [ ] and { }")
        assertError("a: [?b]\n",
                    "test.yaml:1:5: error: found '?b', expected a value; quote a value that starts with '?' inside [ ] or { } (YAML parsers disagree on it)")
        assertError("a: [:b]\n",
                    "test.yaml:1:5: error: found ':b', expected a value; quote a value that starts with ':' inside [ ] or { } (YAML parsers disagree on it)")
    }

    func testDuplicateKeysNameBothPositions() {
        assertError("name: a\nother: b\nname: c\n",
                    "test.yaml:3:1: error: found duplicate key 'name', expected a key not already in this mapping; 'name' is first defined at 1:1")
        assertError("a: { x: 1, y: 2, x: 3 }\n",
                    "test.yaml:1:18: error: found duplicate key 'x', expected a key not already in this mapping; 'x' is first defined at 1:6")
        // No typing: keys compare by text, whatever their quoting.
        assertError("a: 1\n\"a\": 2\n",
                    "test.yaml:2:1: error: found duplicate key 'a', expected a key not already in this mapping; 'a' is first defined at 1:1")
        assertError("- uuid: FFE1\n  value: x\n  uuid: FFE2\n",
                    "test.yaml:3:3: error: found duplicate key 'uuid', expected a key not already in this mapping; 'uuid' is first defined at 1:3")
        // The same key in two different mappings is fine.
        assertTree("a: { x: 1 }\nb: { x: 2 }\n", ["a": ["x": "1"], "b": ["x": "2"]])
    }

    func testDuplicateKeysInLargeMappings() {
        let keys = (0..<40).map { "key\($0)" }
        let block = keys.map { "\($0): v\n" }.joined() + "key7: again\n"
        assertError(block, "test.yaml:41:1: error: found duplicate key 'key7', expected a key not already in this mapping; 'key7' is first defined at 8:1")
        let flow = "{" + keys.map { "\($0): v" }.joined(separator: ", ") + ", key39: w}"
        assertError(flow, "test.yaml:1:\(flow.count - 8): error: found duplicate key 'key39', expected a key not already in this mapping; 'key39' is first defined at 1:\(flow.count - 18)")
    }

    func testEscapes() {
        assertError("a: \"\\q\"\n",
                    "test.yaml:1:5: error: found '\\q', expected an escape; YAML escapes are \\\\ \\\" \\/ \\0 \\a \\b \\t \\n \\v \\f \\r \\e \\N \\_ \\L \\P \\xNN \\uNNNN \\UNNNNNNNN and backslash-space")
        assertError("a: \"\\x4\"\n", "test.yaml:1:5: error: found '\\x4\"', expected '\\x' followed by 2 hexadecimal digits")
        assertError("a: \"\\u12G4\"\n", "test.yaml:1:5: error: found '\\u12G', expected '\\u' followed by 4 hexadecimal digits")
        assertError("a: \"\\ud83d\"\n",
                    "test.yaml:1:5: error: found '\\ud83d', expected the code of a Unicode scalar (not a surrogate, at most 10FFFF); write a character outside the Basic Multilingual Plane as \\UNNNNNNNN, not as two \\u escapes")
        assertError("a: \"\\U00110000\"\n",
                    "test.yaml:1:5: error: found '\\U00110000', expected the code of a Unicode scalar (not a surrogate, at most 10FFFF); write a character outside the Basic Multilingual Plane as \\UNNNNNNNN, not as two \\u escapes")
    }

    func testCharactersRefusedAnywhere() {
        assertError("a: b\u{7}c\n",
                    "test.yaml:1:5: error: found control character U+0007, expected printable text; write it as \\x07 in a double-quoted scalar")
        assertError("# a comment with DEL \u{7F}\n",
                    "test.yaml:1:22: error: found control character U+007F, expected printable text; write it as \\x7F in a double-quoted scalar")
        assertError("a: \"\u{0}\"\n",
                    "test.yaml:1:5: error: found control character U+0000, expected printable text; write it as \\x00 in a double-quoted scalar")
        assertError("a: b\u{85}c\n",
                    "test.yaml:1:5: error: found next line U+0085, expected printable text; YAML 1.1 parsers read it as a line break and YAML 1.2 parsers do not; write it as \\N in a double-quoted scalar")
        assertError("a: b\u{2028}c\n",
                    "test.yaml:1:5: error: found line separator U+2028, expected printable text; YAML 1.1 parsers read it as a line break and YAML 1.2 parsers do not; write it as \\L in a double-quoted scalar")
        assertError("a: 'b\u{2029}'\n",
                    "test.yaml:1:6: error: found paragraph separator U+2029, expected printable text; YAML 1.1 parsers read it as a line break and YAML 1.2 parsers do not; write it as \\P in a double-quoted scalar")
        assertError("a: b\u{FEFF}c\n",
                    "test.yaml:1:5: error: found byte order mark U+FEFF, expected printable text; a byte order mark may only start the file; write \\uFEFF in a double-quoted scalar")
    }

    func testNestingDepthIsBounded() {
        let deep = String(repeating: "[", count: 150) + String(repeating: "]", count: 150)
        assertError(deep, "test.yaml:1:101: error: found more than 100 nested collections, expected at most 100 levels of nesting")
        var block = ""
        for level in 0..<150 { block += String(repeating: " ", count: level) + "k:\n" }
        assertError(block, "test.yaml:101:101: error: found more than 100 nested collections, expected at most 100 levels of nesting")
        assertTree(String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
                   (0..<99).reduce(Tree.sequence([])) { inner, _ in .sequence([inner]) })
    }

    /// Errors report the first problem in the file, on the line where it is.
    func testTheFirstProblemIsReported() {
        assertError("a: &x 1\nb: \u{7}\n",
                    "test.yaml:1:4: error: found anchor '&x', expected a value; anchors and aliases are not part of the YAML subset; write the value out in full")
        assertError("a: 1\nb:\t2\nc: *x\n",
                    "test.yaml:2:3: error: found a tab, expected a space; the YAML subset allows tabs only inside quoted scalars and comments")
    }
}

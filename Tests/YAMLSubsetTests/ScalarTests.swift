import XCTest
import YAMLSubset

/// Scalars keep their text: no implicit typing, YAML 1.2 quoting and escapes.
final class ScalarTests: XCTestCase {
    /// What a YAML 1.1 or 1.2 core-schema loader would turn into a boolean, number, null or date
    /// stays text here; the schema layer decides what it means.
    func testNoImplicitTyping() throws {
        let cases: [(yaml: String, text: String, style: YAMLScalarStyle)] = [
            ("no", "no", .plain), ("NO", "NO", .plain), ("yes", "yes", .plain), ("on", "on", .plain),
            ("off", "off", .plain), ("true", "true", .plain), ("False", "False", .plain),
            ("0x10", "0x10", .plain), ("010", "010", .plain), ("0o17", "0o17", .plain),
            ("1_000", "1_000", .plain), ("1e3", "1e3", .plain), ("-48", "-48", .plain), ("+1", "+1", .plain),
            (".inf", ".inf", .plain), ("-.Inf", "-.Inf", .plain), (".nan", ".nan", .plain),
            ("~", "~", .plain), ("null", "null", .plain), ("Null", "Null", .plain),
            ("2001-12-14", "2001-12-14", .plain), ("12:30:45", "12:30:45", .plain),
            ("\"quoted\"", "quoted", .doubleQuoted), ("'it''s'", "it's", .singleQuoted),
            ("\"10\"", "10", .doubleQuoted), ("'~'", "~", .singleQuoted),
        ]
        for (yaml, text, style) in cases {
            let node = try XCTUnwrap(parse("key: \(yaml)\n")?.mapping?["key"]?.scalar, yaml)
            XCTAssertEqual(node.text, text, yaml)
            XCTAssertEqual(node.style, style, yaml)
            XCTAssertEqual(node.mark, Mark(line: 1, column: 6), yaml)
            // Also as an item of a flow sequence and as a key.
            XCTAssertEqual(parse("[\(yaml)]\n")?.sequence?.items.first?.scalar?.text, text, yaml)
            XCTAssertEqual(parse("\(yaml): v\n")?.mapping?.keys, [text], yaml)
        }
    }

    func testPlainScalarsWithSpacesColonsAndHashes() {
        assertTree("""
        scenario: HM-10 serial bridge echoes what the app writes
        address: C0:11:22:33:44:55/random
        data: hex:4c000215
        value: text:hello
        hash: a#b c#d
        url: http://example.com/a?b=c
        trailing: spaces are trimmed   \("")
        odd: ?x :y -z %not-first @not-first
        brackets: a[b]{c},d
        quotes: it's "fine"
        """, [
            "scenario": "HM-10 serial bridge echoes what the app writes",
            "address": "C0:11:22:33:44:55/random",
            "data": "hex:4c000215",
            "value": "text:hello",
            "hash": "a#b c#d",
            "url": "http://example.com/a?b=c",
            "trailing": "spaces are trimmed",
            "odd": "?x :y -z %not-first @not-first",
            "brackets": "a[b]{c},d",
            "quotes": "it's \"fine\"",
        ])
    }

    func testPlainScalarsInsideFlowCollectionsStopAtIndicators() {
        assertTree("[a b, c:d, -e, 'f' ]", ["a b", "c:d", "-e", "f"])
        assertTree("{ k: text:a b, k2: -1, k3: u8:0 }\n", ["k": "text:a b", "k2": "-1", "k3": "u8:0"])
        assertTree("{ k:}\n", ["k": .empty])
    }

    func testSingleQuoted() {
        assertTree("""
        a: 'it''s'
        b: ''
        c: ''''
        d: ' spaces kept '
        e: 'no \\escapes \\n here'
        f: '# not a comment: [x]'
        """, ["a": "it's", "b": "", "c": "'", "d": " spaces kept ", "e": "no \\escapes \\n here", "f": "# not a comment: [x]"])
    }

    func testDoubleQuotedEscapes() throws {
        let yaml = #"""
        a: "\\ \" \/ \0 \a \b \t \n \v \f \r \e \N \_ \L \P"
        b: "\x41\u00e9\U0001F600"
        c: "tab:\	end"
        d: "\ lead"
        e: "caf\u00E9 # not a comment"
        """#
        let root = try XCTUnwrap(parse(yaml)?.mapping)
        XCTAssertEqual(root["a"]?.scalar?.text, "\\ \" / \u{0} \u{7} \u{8} \t \n \u{B} \u{C} \r \u{1B} \u{85} \u{A0} \u{2028} \u{2029}")
        XCTAssertEqual(root["b"]?.scalar?.text, "A\u{E9}\u{1F600}")
        XCTAssertEqual(root["c"]?.scalar?.text, "tab:\tend", "backslash-tab is a tab")
        XCTAssertEqual(root["d"]?.scalar?.text, " lead")
        XCTAssertEqual(root["e"]?.scalar?.text, "caf\u{E9} # not a comment")
        XCTAssertEqual(root["e"]?.scalar?.style, .doubleQuoted)
    }

    func testScalarMarksPointAtTheOpeningQuote() throws {
        let root = try XCTUnwrap(parse("a:   \"x\"\nb: 'y'\n")?.mapping)
        XCTAssertEqual(root["a"]?.mark, Mark(line: 1, column: 6))
        XCTAssertEqual(root["b"]?.mark, Mark(line: 2, column: 4))
    }
}

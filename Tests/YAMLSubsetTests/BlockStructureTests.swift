import XCTest
import YAMLSubset

/// Block mappings and sequences by indentation, including the compact forms the format uses.
final class BlockStructureTests: XCTestCase {
    func testNestedMappings() {
        assertTree("""
        peripherals:
          hm10:
            advertise:
              name: HMSoft
            rssi: -48
          curtain:
            rssi: -60
        seed: 42
        """, [
            "peripherals": [
                "hm10": ["advertise": ["name": "HMSoft"], "rssi": "-48"],
                "curtain": ["rssi": "-60"],
            ],
            "seed": "42",
        ])
    }

    func testSequenceItemThatIsAMappingWithKeysAlignedUnderTheFirst() {
        assertTree("""
        - uuid: FFE1
          properties: [read, notify]
          value: text:ready
        -   uuid: FFE2
            properties: []
        """, [
            ["uuid": "FFE1", "properties": ["read", "notify"], "value": "text:ready"],
            ["uuid": "FFE2", "properties": []],
        ])
    }

    func testCompactFlowMappingOnTheDashLine() {
        assertTree("- scan: { services: [FFE0], for: 1s }\n- disconnect\n",
                   [["scan": ["services": ["FFE0"], "for": "1s"]], "disconnect"])
    }

    func testSequenceIndentedUnderAKeyOrAtTheKeysColumn() {
        let expected: Tree = ["gatt": [["service": "FFE0"], ["service": "FFF0"]], "next": "x"]
        assertTree("gatt:\n  - service: FFE0\n  - service: FFF0\nnext: x\n", expected)
        assertTree("gatt:\n- service: FFE0\n- service: FFF0\nnext: x\n", expected)
        assertTree("gatt:\n    - service: FFE0\n    - service: FFF0\nnext: x\n", expected)
    }

    func testSequenceAtTheKeysColumnInsideASequenceItem() {
        assertTree("""
        - on-write:
          - notify: FFE1
          - delay: 1s
          name: x
        - b
        """, [
            ["on-write": [["notify": "FFE1"], ["delay": "1s"]], "name": "x"],
            "b",
        ])
    }

    func testNestedCompactSequences() {
        assertTree("- - a\n  - b\n- - - c\n", [["a", "b"], [["c"]]])
    }

    func testValueOnTheLineBelowItsKey() {
        assertTree("a:\n  text\nb:\n  [x, y]\nc:\n  'q'\n", ["a": "text", "b": ["x", "y"], "c": "q"])
        assertTree("-\n  text\n-\n  k: v\n", ["text", ["k": "v"]])
    }

    func testIndentedRootAndSpacesBeforeTheColon() {
        assertTree("  a: 1\n  b : 2\n  'c' : 3\n", ["a": "1", "b": "2", "c": "3"])
    }

    func testQuotedKeys() {
        assertTree("'a b': 1\n\"c: d\": 2\n\"\": 3\n", ["a b": "1", "c: d": "2", "": "3"])
    }

    func testEmptyValues() throws {
        let yaml = "a:\nb:   # nothing\nc:\n- \n-\n- x\nd: {e: , f: }\ng: ''\n"
        assertTree(yaml, ["a": .empty, "b": .empty, "c": [.empty, .empty, "x"], "d": ["e": .empty, "f": .empty], "g": ""])
        let root = try XCTUnwrap(parse(yaml)?.mapping)
        // An empty value is marked just after the ':' or '-' that introduced it.
        XCTAssertEqual(root["a"]?.mark, Mark(line: 1, column: 3))
        XCTAssertEqual(root["b"]?.mark, Mark(line: 2, column: 3))
        XCTAssertEqual(root["c"]?.sequence?.items.map(\.mark), [Mark(line: 4, column: 2), Mark(line: 5, column: 2), Mark(line: 6, column: 3)])
        XCTAssertEqual(root["d"]?.mapping?["e"]?.mark, Mark(line: 7, column: 7))
        XCTAssertEqual(root["a"]?.kindName, "an empty value")
        XCTAssertEqual(root["a"]?.isEmptyValue, true)
        XCTAssertEqual(root["a"]?.scalar, YAMLScalar(text: "", style: .plain, mark: Mark(line: 1, column: 3)))
        // A quoted empty string is a value, not a missing one.
        XCTAssertEqual(root["g"]?.scalar?.isEmpty, false)
        XCTAssertEqual(root["g"]?.kindName, "a scalar")
    }

    func testEmptyDocuments() {
        for yaml in ["", "\n\n", "# only a comment\n", "---\n", "---\n...\n", "\u{FEFF}# bom\n"] {
            XCTAssertEqual(parse(yaml), .scalar(YAMLScalar(text: "", style: .plain, mark: Mark(line: 1, column: 1))), yaml.debugDescription)
        }
    }

    func testCommentsAndBlankLines() {
        assertTree("""
        # leading comment

        a: 1 # after a value
          # indented comment, any column
        b:   # after a key
          - x   # after an item

          - y#not a comment
        # between
        c: [p, q]  # after a flow collection
        d: 'e' # after a quoted scalar
        """, ["a": "1", "b": ["x", "y#not a comment"], "c": ["p", "q"], "d": "e"])
    }

    func testDocumentMarkers() {
        assertTree("---\na: 1\n...\n", ["a": "1"])
        assertTree("# c\n--- # start\na: 1\n... # end\n# trailing comment\n\n", ["a": "1"])
        // Only at column 1 and followed by a space or the end of the line are they markers.
        assertTree("a: ---\nb: ...\nc:\n  ---\n---x: 1\n", ["a": "---", "b": "...", "c": "---", "---x": "1"])
    }

    func testByteOrderMarkAndLineEndings() throws {
        assertTree("\u{FEFF}a: 1\n", ["a": "1"])
        assertTree("a: 1\r\nb:\r\n  - x\r\n", ["a": "1", "b": ["x"]])
        assertTree("a: 1\rb: 2\r", ["a": "1", "b": "2"])
        assertTree("a: 1\nb: 2", ["a": "1", "b": "2"])
        let root = try XCTUnwrap(parse("\u{FEFF}a: 1\r\nb: 2\r\n")?.mapping)
        XCTAssertEqual(root.entry(for: "a")?.key.mark, Mark(line: 1, column: 1), "the BOM takes no column")
        XCTAssertEqual(root.entry(for: "b")?.key.mark, Mark(line: 2, column: 1), "CR LF is one line break")
    }

    func testBlockMarksAndStyles() throws {
        let root = try XCTUnwrap(parse("top:\n  - a: 1\n    b: [x]\n")?.mapping)
        let sequence = try XCTUnwrap(root["top"]?.sequence)
        XCTAssertEqual(sequence.style, .block)
        XCTAssertEqual(sequence.mark, Mark(line: 2, column: 3))
        let item = try XCTUnwrap(sequence.items.first?.mapping)
        XCTAssertEqual(item.style, .block)
        XCTAssertEqual(item.mark, Mark(line: 2, column: 5))
        XCTAssertEqual(item.entry(for: "b")?.key.mark, Mark(line: 3, column: 5))
        XCTAssertEqual(item["b"]?.mark, Mark(line: 3, column: 8))
        XCTAssertEqual(item["b"]?.sequence?.style, .flow)
    }

    func testColumnsCountCharacters() throws {
        // "é" as e + U+0301 is one character; so is a thumbs-up with a skin tone.
        let root = try XCTUnwrap(parse("e\u{301}t\u{E9}: [\u{1F44D}\u{1F3FD}, x]\n")?.mapping)
        XCTAssertEqual(root.keys, ["e\u{301}t\u{E9}"])
        let items = try XCTUnwrap(root["e\u{301}t\u{E9}"]?.sequence?.items)
        XCTAssertEqual(items.map(\.mark), [Mark(line: 1, column: 7), Mark(line: 1, column: 10)])
        assertError("\u{1F44D}\u{1F3FD}: [a, &b]\n",
                    "test.yaml:1:8: error: found anchor '&b', expected a value; anchors and aliases are not part of the YAML subset; write the value out in full")
    }
}

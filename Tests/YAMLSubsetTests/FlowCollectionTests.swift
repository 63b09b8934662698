import XCTest
import YAMLSubset

/// Flow sequences and mappings, nested, on one line.
final class FlowCollectionTests: XCTestCase {
    func testNestedFlowCollections() {
        assertTree("a: { k: v, k2: [x, y], k3: { m: [[], {}] } }\n",
                   ["a": ["k": "v", "k2": ["x", "y"], "k3": ["m": [[], [:]]]]])
        assertTree("[[a, [b]], {c: d}, 'e', \"f\"]\n", [["a", ["b"]], ["c": "d"], "e", "f"])
    }

    func testEmptyCollections() throws {
        assertTree("a: []\nb: {}\nc: [ ]\nd: {  }\n", ["a": [], "b": [:], "c": [], "d": [:]])
        let root = try XCTUnwrap(parse("a: []\nb: {}\n")?.mapping)
        XCTAssertEqual(root["a"]?.sequence?.isEmpty, true)
        XCTAssertEqual(root["b"]?.mapping?.isEmpty, true)
        XCTAssertEqual(root["a"]?.kindName, "a sequence")
        XCTAssertEqual(root["b"]?.kindName, "a mapping")
        XCTAssertEqual(root["a"]?.isEmptyValue, false, "an empty collection is not a missing value")
    }

    /// YAML 1.2 (7.4, ns-s-flow-seq-entries) allows one comma after the last entry; PyYAML agrees.
    func testOneTrailingCommaIsAccepted() {
        assertTree("a: [b, c, ]\nd: {e: f,}\ng: [h,]\n", ["a": ["b", "c"], "d": ["e": "f"], "g": ["h"]])
        assertError("a: [b, c,,]\n", "test.yaml:1:10: error: found ',', expected a value or ']'")
    }

    func testSpacingAndComments() {
        assertTree("a: [  b  ,c,   d ]   # comment\nb: {x:  y,z: w}\n", ["a": ["b", "c", "d"], "b": ["x": "y", "z": "w"]])
    }

    /// After a quoted key YAML 1.2 and PyYAML both take ':' with no space after it (JSON style).
    func testJSONStyle() {
        assertTree(#"{"a":1, "b":[true, null], "c":{"d":"e"}}"#, ["a": "1", "b": ["true", "null"], "c": ["d": "e"]])
    }

    func testFlowMarksAndStyles() throws {
        let root = try XCTUnwrap(parse("k: { a: [x, 'y'], b: }\n")?.mapping)
        let mapping = try XCTUnwrap(root["k"]?.mapping)
        XCTAssertEqual(mapping.style, .flow)
        XCTAssertEqual(mapping.mark, Mark(line: 1, column: 4))
        XCTAssertEqual(mapping.entry(for: "a")?.key.mark, Mark(line: 1, column: 6))
        let sequence = try XCTUnwrap(mapping["a"]?.sequence)
        XCTAssertEqual(sequence.style, .flow)
        XCTAssertEqual(sequence.mark, Mark(line: 1, column: 9))
        XCTAssertEqual(sequence.items.map(\.mark), [Mark(line: 1, column: 10), Mark(line: 1, column: 13)])
        XCTAssertEqual(sequence.items.last?.scalar?.style, .singleQuoted)
        XCTAssertEqual(mapping["b"]?.mark, Mark(line: 1, column: 21), "an empty value is marked after its ':'")
        XCTAssertEqual(mapping["b"]?.isEmptyValue, true)
    }

    func testFlowCollectionAsTheWholeDocument() {
        assertTree("[a, b]\n", ["a", "b"])
        assertTree("# c\n{ a: b }  # c\n\n", ["a": "b"])
    }
}

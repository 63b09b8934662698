import XCTest
import YAMLSubset

/// The helpers the schema layer builds its messages with.
final class APITests: XCTestCase {
    func testErrorDescriptionIsTheCompilerForm() {
        let error = YAMLError(file: "scenarios/hm10.yaml", mark: Mark(line: 3, column: 7),
                              found: "'&a'", expected: "a value")
        XCTAssertEqual(error.description, "scenarios/hm10.yaml:3:7: error: found '&a', expected a value")
        let hinted = YAMLError(file: "f.yaml", mark: Mark(line: 1, column: 1), found: "'nmae'",
                               expected: "a known key", hint: "did you mean 'name'?")
        XCTAssertEqual(hinted.description, "f.yaml:1:1: error: found 'nmae', expected a known key; did you mean 'name'?")
        XCTAssertEqual("\(hinted)", hinted.description)
    }

    func testErrorCarriesItsParts() throws {
        do {
            _ = try parseYAML("a: 1\nb: *x\n", file: "s.yaml")
            XCTFail("expected an error")
        } catch let error as YAMLError {
            XCTAssertEqual(error.file, "s.yaml")
            XCTAssertEqual(error.mark, Mark(line: 2, column: 4))
            XCTAssertEqual(error.found, "alias '*x'")
            XCTAssertEqual(error.expected, "a value")
            XCTAssertEqual(error.hint, "anchors and aliases are not part of the YAML subset; write the value out in full")
        }
    }

    func testMark() {
        XCTAssertEqual(Mark(line: 12, column: 5).description, "12:5")
        XCTAssertLessThan(Mark(line: 1, column: 9), Mark(line: 2, column: 1))
        XCTAssertLessThan(Mark(line: 2, column: 1), Mark(line: 2, column: 3))
    }

    func testMappingLookup() throws {
        let mapping = try XCTUnwrap(parse("name: x\nservices: [FFE0]\n'quoted key': y\n")?.mapping)
        XCTAssertEqual(mapping.keys, ["name", "services", "quoted key"])
        XCTAssertEqual(mapping.count, 3)
        XCTAssertEqual(mapping.value(for: "name")?.scalar?.text, "x")
        XCTAssertEqual(mapping["services"]?.sequence?.items.first?.scalar?.text, "FFE0")
        XCTAssertEqual(mapping.value(for: "quoted key")?.scalar?.text, "y")
        XCTAssertNil(mapping.value(for: "nmae"))
        let entry = try XCTUnwrap(mapping.entry(for: "quoted key"))
        XCTAssertEqual(entry.key.style, .singleQuoted)
        XCTAssertEqual(entry.key.mark, Mark(line: 3, column: 1))
        XCTAssertEqual(mapping.entries.map(\.key.text), mapping.keys)
    }

    func testLookupInLargeMappings() throws {
        let yaml = (0..<40).map { "key\($0): value\($0)\n" }.joined()
        let mapping = try XCTUnwrap(parse(yaml)?.mapping)
        XCTAssertEqual(mapping.count, 40)
        for index in [0, 12, 13, 39] {
            XCTAssertEqual(mapping["key\(index)"]?.scalar?.text, "value\(index)")
            XCTAssertEqual(mapping.entry(for: "key\(index)")?.key.mark, Mark(line: index + 1, column: 1))
        }
        XCTAssertNil(mapping["key40"])
    }

    func testKindNamesAndAccessors() throws {
        let root = try XCTUnwrap(parse("s: x\nq: []\nm: {}\ne:\n"))
        XCTAssertEqual(root.kindName, "a mapping")
        let mapping = try XCTUnwrap(root.mapping)
        XCTAssertEqual(mapping["s"]?.kindName, "a scalar")
        XCTAssertEqual(mapping["q"]?.kindName, "a sequence")
        XCTAssertEqual(mapping["m"]?.kindName, "a mapping")
        XCTAssertEqual(mapping["e"]?.kindName, "an empty value")
        XCTAssertNil(mapping["s"]?.sequence)
        XCTAssertNil(mapping["q"]?.mapping)
        XCTAssertNil(mapping["m"]?.scalar)
        XCTAssertEqual(root.mark, Mark(line: 1, column: 1))
    }

    func testEqualityIncludesStylesAndMarks() throws {
        XCTAssertEqual(try parseYAML("a: [x]\n", file: "1"), try parseYAML("a: [x]\n", file: "2"))
        XCTAssertNotEqual(try parseYAML("a: [x]\n", file: "f"), try parseYAML("a: ['x']\n", file: "f"))
        XCTAssertNotEqual(try parseYAML("a: [x]\n", file: "f"), try parseYAML("a:  [x]\n", file: "f"))
        XCTAssertNotEqual(try parseYAML("a: [x]\n", file: "f"), try parseYAML("a:\n- x\n", file: "f"))
    }

    func testBuildingNodesByHand() {
        let key = YAMLScalar(text: "k", style: .plain, mark: Mark(line: 1, column: 1))
        let value = YAMLNode.scalar(YAMLScalar(text: "v", style: .doubleQuoted, mark: Mark(line: 1, column: 4)))
        let mapping = YAMLMapping(entries: [(key: key, value: value)], style: .block, mark: key.mark)
        XCTAssertEqual(try parseYAML("k: \"v\"", file: "f"), .mapping(mapping))
        XCTAssertEqual(YAMLSequence(items: [value], style: .flow, mark: key.mark).count, 1)
    }
}

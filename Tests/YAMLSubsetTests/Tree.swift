import XCTest
import YAMLSubset

/// The structure of a parsed document without marks or scalar styles, written in tests as Swift
/// literals: `["key": "value", "list": ["a", "b"]]`. Mapping literals keep their order, and so
/// does the comparison. `.empty` is a value that was left out (`key:` with nothing after it).
indirect enum Tree: Equatable, CustomStringConvertible,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    struct Entry: Equatable {
        let key: String
        let value: Tree
    }

    case empty
    case scalar(String)
    case sequence([Tree])
    case mapping([Entry])

    init(stringLiteral value: String) { self = .scalar(value) }
    init(arrayLiteral elements: Tree...) { self = .sequence(elements) }
    init(dictionaryLiteral elements: (String, Tree)...) {
        self = .mapping(elements.map { Entry(key: $0.0, value: $0.1) })
    }

    init(_ node: YAMLNode) {
        switch node {
        case .scalar(let scalar):
            self = scalar.isEmpty ? .empty : .scalar(scalar.text)
        case .sequence(let sequence):
            self = .sequence(sequence.items.map(Tree.init))
        case .mapping(let mapping):
            self = .mapping(mapping.entries.map { Entry(key: $0.key.text, value: Tree($0.value)) })
        }
    }

    /// JSON, with null for an empty value; what the PyYAML comparison prints too.
    var description: String {
        switch self {
        case .empty: return "null"
        case .scalar(let text): return Tree.json(text)
        case .sequence(let items): return "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .mapping(let entries):
            return "{" + entries.map { Tree.json($0.key) + ": " + $0.value.description }.joined(separator: ", ") + "}"
        }
    }

    private static func json(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

/// Parses `yaml` (file name `test.yaml`) and compares its structure with `expected`.
func assertTree(_ yaml: String, _ expected: Tree, file: StaticString = #filePath, line: UInt = #line) {
    do {
        let node = try parseYAML(yaml, file: "test.yaml")
        XCTAssertEqual(Tree(node), expected, file: file, line: line)
    } catch {
        XCTFail("unexpected error: \(error)", file: file, line: line)
    }
}

/// Parses `yaml` (file name `test.yaml`), which must fail with exactly `message`.
func assertError(_ yaml: String, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
    do {
        let node = try parseYAML(yaml, file: "test.yaml")
        XCTFail("expected \(message), parsed \(Tree(node))", file: file, line: line)
    } catch let error as YAMLError {
        XCTAssertEqual(error.description, message, file: file, line: line)
    } catch {
        XCTFail("unexpected error type: \(error)", file: file, line: line)
    }
}

/// Parses `yaml`, failing the test on an error.
func parse(_ yaml: String, file: StaticString = #filePath, line: UInt = #line) -> YAMLNode? {
    do {
        return try parseYAML(yaml, file: "test.yaml")
    } catch {
        XCTFail("unexpected error: \(error)", file: file, line: line)
        return nil
    }
}

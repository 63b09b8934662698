import BLEWire
import XCTest

/// Octets from hex test vectors, the one helper the byte-level test targets share. Each argument
/// is a field (`bytes("06 04", "03")`), may span lines with `// what it is` after each, and may
/// use `|` between fields for readability (`"02 | 01 00"`). A typo in a vector fails the test at
/// the caller's line instead of crashing or decoding garbage.
public func bytes(_ fields: String..., file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
    var out: [UInt8] = []
    for field in fields {
        let hex = field.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line -> Substring in
                guard let comment = line.range(of: "//") else { return line }
                return line[..<comment.lowerBound]
            }
            .joined(separator: " ")
        guard let octets = [UInt8](hex: String(hex.map { $0 == "|" ? " " : $0 })) else {
            XCTFail("bad hex in test vector: \(field)", file: file, line: line)
            return []
        }
        out += octets
    }
    return out
}

/// Asserts that `body` throws exactly `expected`; any other error, or none, fails at the caller's line.
public func XCTAssertThrowsDecodeError<T>(_ expected: DecodeError, _ message: @autoclosure () -> String = "",
                                          file: StaticString = #filePath, line: UInt = #line,
                                          _ body: () throws -> T) {
    do {
        let value = try body()
        XCTFail("expected \(expected), got value \(value). \(message())", file: file, line: line)
    } catch let error as DecodeError {
        XCTAssertEqual(error, expected, message(), file: file, line: line)
    } catch {
        XCTFail("expected \(expected), got non-DecodeError \(error). \(message())", file: file, line: line)
    }
}

/// Asserts that `expression` throws exactly `expected`.
public func XCTAssertThrowsDecodeError<T>(_ expression: @autoclosure () throws -> T, _ expected: DecodeError,
                                          file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertThrowsDecodeError(expected, file: file, line: line) { try expression() }
}

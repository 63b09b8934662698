import Foundation
import XCTest
import BLEWire

/// Asserts that `body` throws exactly `expected`; any other error, or none, fails at the caller's line.
func XCTAssertThrowsDecodeError<T>(_ expected: DecodeError, _ message: @autoclosure () -> String = "",
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

/// Bytes from a hex vector written in a test, one field per line with `// what it is` after it.
/// A typo must fail the test, not crash it.
func bytes(_ vector: String, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
    let hex = vector.split(separator: "\n", omittingEmptySubsequences: false)
        .map { line -> Substring in
            guard let comment = line.range(of: "//") else { return line }
            return line[..<comment.lowerBound]
        }
        .joined(separator: " ")
    guard let result = [UInt8](hex: hex) else {
        XCTFail("bad hex literal in test: \(hex)", file: file, line: line)
        return []
    }
    return result
}

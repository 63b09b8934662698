import XCTest
import YAMLSubset

/// Scenario files are UTF-8. Bytes that are not (a file saved as Latin-1, a truncated copy) are
/// refused at the line and column of the first bad byte, never decoded into U+FFFD that would
/// change a name or a value without a word.
final class UTF8Tests: XCTestCase {
    private func error(_ bytes: [UInt8]) -> String? {
        do {
            _ = try parseYAML(bytes: bytes, file: "test.yaml")
            return nil
        } catch {
            return "\(error)"
        }
    }

    private let fix = "scenario files are UTF-8; save the file as UTF-8 (your editor's encoding setting, or iconv -f latin1 -t utf-8 for a Latin-1 file)"

    func testALatin1FileIsRefusedAtTheByte() {
        // `name: Café` saved as Latin-1 on line 3.
        let bytes = Array("scenario: x\nperipherals:\n  name: Caf".utf8) + [0xE9] + Array("\n".utf8)
        XCTAssertEqual(error(bytes), "test.yaml:3:12: error: found byte 0xE9, which is not UTF-8, expected text encoded in UTF-8; \(fix)")
    }

    /// Columns count the Characters before the byte, as every other mark does, whatever the line's
    /// line breaks and whatever UTF-8 comes before it on its line; a leading byte order mark is
    /// not counted.
    func testTheColumnCountsCharactersAndTheLineEveryBreak() {
        let bytes = [0xEF, 0xBB, 0xBF] + Array("a: 1\r\nb: 2\rc: \"안녕 ".utf8) + [0xFF, 0xFE] + Array("\"\n".utf8)
        XCTAssertEqual(error(bytes), "test.yaml:3:8: error: found bytes 0xFF 0xFE, which is not UTF-8, expected text encoded in UTF-8; \(fix)")
        let first = [0xEF, 0xBB, 0xBF] + Array("é".utf8) + [0x80]
        XCTAssertEqual(error(first), "test.yaml:1:2: error: found byte 0x80, which is not UTF-8, expected text encoded in UTF-8; \(fix)")
    }

    /// Every way a sequence can be ill-formed (Unicode §3.9, table 3-7) is found at its first byte.
    func testEveryIllFormedSequenceIsFound() {
        let cases: [([UInt8], Int)] = [
            ([0x61, 0x80], 1),                     // a continuation byte alone
            ([0xC0, 0xAF], 0),                     // an overlong form of '/'
            ([0xC1, 0xBF], 0),
            ([0xE0, 0x80, 0xAF], 0),               // overlong, three bytes
            ([0xF0, 0x80, 0x80, 0xAF], 0),         // overlong, four bytes
            ([0xED, 0xA0, 0x80], 0),               // a surrogate, U+D800
            ([0xF4, 0x90, 0x80, 0x80], 0),         // above U+10FFFF
            ([0xF5, 0x80, 0x80, 0x80], 0),
            ([0xFF], 0),
            ([0x61, 0x62, 0xE2, 0x82], 2),         // truncated at the end of the file
            ([0xE2, 0x28, 0xA1], 0),               // a second byte that is not a continuation
            ([0xF0, 0x9F, 0x98, 0x41], 0),         // a fourth byte that is not a continuation
        ]
        for (bytes, offset) in cases {
            XCTAssertEqual(UTF8Check.firstInvalidByte(bytes), offset, "\(bytes)")
        }
        let valid: [[UInt8]] = [
            Array("plain ascii".utf8), Array("é 안녕 😀 \u{10FFFF} \u{D7FF} \u{E000}".utf8), [0xEF, 0xBB, 0xBF, 0x61], [],
        ]
        for bytes in valid { XCTAssertNil(UTF8Check.firstInvalidByte(bytes), "\(bytes)") }
    }

    /// Valid UTF-8 parses exactly as the same text does.
    func testValidBytesParseAsTheirText() throws {
        let text = "name: \"Café 안녕\"\nlist: [a, b]\n"
        XCTAssertEqual(try parseYAML(bytes: Array(text.utf8), file: "test.yaml"), try parseYAML(text, file: "test.yaml"))
    }
}

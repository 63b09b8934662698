@testable import ATT
import BLEWire
import WireTestSupport
import XCTest

/// decode(encode(pdu)) == pdu and encode(decode(octets)) == octets, through the enum and the struct.
func assertRoundTrip<P: ATTPDUCodable>(_ pdu: P, _ hex: String, as wrap: (P) -> ATTPDU,
                                       file: StaticString = #filePath, line: UInt = #line) {
    let octets = bytes(hex, file: file, line: line)
    XCTAssertEqual(pdu.encoded, octets, "encode \(pdu)", file: file, line: line)
    XCTAssertEqual(wrap(pdu).encoded, octets, "encode via ATTPDU", file: file, line: line)
    XCTAssertEqual(try P(decoding: octets), pdu, "decode as \(P.self)", file: file, line: line)
    XCTAssertEqual(try ATTPDU(decoding: octets), wrap(pdu), "decode as ATTPDU", file: file, line: line)
    XCTAssertEqual(try ATTPDU(decoding: wrap(pdu).encoded), wrap(pdu), file: file, line: line)
    XCTAssertEqual(wrap(pdu).opcode, P.opcode, file: file, line: line)
    XCTAssertEqual(octets.first, P.opcode.rawValue, file: file, line: line)
}

/// Decoding `hex` throws a DecodeError (and the enum decoder agrees).
func assertMalformed(_ hex: String, file: StaticString = #filePath, line: UInt = #line,
                     _ check: ((DecodeError) -> Void)? = nil) {
    let octets = bytes(hex, file: file, line: line)
    do {
        let pdu = try ATTPDU(decoding: octets)
        XCTFail("decoded malformed \(hex) as \(pdu)", file: file, line: line)
    } catch let error as DecodeError {
        check?(error)
    } catch {
        XCTFail("not a DecodeError: \(error)", file: file, line: line)
    }
}

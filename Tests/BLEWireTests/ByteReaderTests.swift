import BLEWire
import WireTestSupport
import XCTest

final class ByteReaderTests: XCTestCase {

    // MARK: Little-endian reads

    func testEachReadIsLittleEndianAndAdvancesByItsWidth() throws {
        var reader = ByteReader(bytes("""
            fe                          // UInt8
            80                          // Int8
            34 12                       // UInt16 0x1234
            56 34 12                    // UInt24 0x123456
            78 56 34 12                 // UInt32 0x12345678
            f0 de bc 9a 78 56 34 12     // UInt64 0x123456789ABCDEF0
            """))
        XCTAssertEqual(try reader.readUInt8(), 0xFE)
        XCTAssertEqual(reader.offset, 1)
        XCTAssertEqual(try reader.readInt8(), -128)                   // 0x80 as two's complement
        XCTAssertEqual(reader.offset, 2)
        XCTAssertEqual(try reader.readUInt16LE(), 0x1234)
        XCTAssertEqual(reader.offset, 4)
        XCTAssertEqual(try reader.readUInt24LE(), 0x12_3456)
        XCTAssertEqual(reader.offset, 7)
        XCTAssertEqual(try reader.readUInt32LE(), 0x1234_5678)
        XCTAssertEqual(reader.offset, 11)
        XCTAssertEqual(try reader.readUInt64LE(), 0x1234_5678_9ABC_DEF0)
        XCTAssertEqual(reader.offset, 19)
        XCTAssertTrue(reader.isAtEnd)
        XCTAssertEqual(reader.remaining, 0)
        XCTAssertNoThrow(try reader.expectEnd())
    }

    func testHighBitsSurviveEveryWidth() throws {
        // All-ones catches a shift done in a type too narrow for the result.
        var reader = ByteReader([UInt8](repeating: 0xFF, count: 17))
        XCTAssertEqual(try reader.readUInt16LE(), .max)
        XCTAssertEqual(try reader.readUInt24LE(), 0xFF_FFFF)
        XCTAssertEqual(try reader.readUInt32LE(), .max)
        XCTAssertEqual(try reader.readUInt64LE(), .max)
    }

    func testReadBytesAndRemaining() throws {
        var reader = ByteReader(bytes("01 02 03 04 05"))
        XCTAssertEqual(try reader.readBytes(count: 0), [])
        XCTAssertEqual(reader.offset, 0)
        XCTAssertEqual(try reader.readBytes(count: 2), [0x01, 0x02])
        XCTAssertEqual(reader.remaining, 3)
        XCTAssertEqual(reader.readRemaining(), [0x03, 0x04, 0x05])
        XCTAssertTrue(reader.isAtEnd)
        XCTAssertEqual(reader.readRemaining(), [], "reading the rest again gives nothing")
    }

    func testReadAddressTakesLeastSignificantOctetFirst() throws {
        // Core 5.4, Vol 4, Part E, 5.2: multi-octet HCI parameters are little-endian, BD_ADDR included.
        var reader = ByteReader(bytes("55 44 33 22 11 c0"))
        let address = try reader.readAddress()
        XCTAssertEqual(address, BDAddr(string: "C0:11:22:33:44:55"))
        XCTAssertEqual(reader.offset, 6)
    }

    func testSkip() throws {
        var reader = ByteReader(bytes("01 02 03"))
        try reader.skip(2)
        XCTAssertEqual(try reader.readUInt8(), 0x03)
        try reader.skip(0)
        XCTAssertTrue(reader.isAtEnd)
    }

    // MARK: Failing reads

    /// Every read, tried with one octet short of what it needs, must report the shortfall where it
    /// happened and leave the cursor alone (so the caller can still report or resynchronise).
    func testEveryFailingReadThrowsTruncatedAndDoesNotAdvance() {
        // Two octets already consumed, then `width - 1` left: each read is one short.
        let reads: [(name: String, width: Int, read: (inout ByteReader) throws -> Any)] = [
            ("readUInt8", 1, { try $0.readUInt8() }),
            ("readInt8", 1, { try $0.readInt8() }),
            ("readUInt16LE", 2, { try $0.readUInt16LE() }),
            ("readUInt24LE", 3, { try $0.readUInt24LE() }),
            ("readUInt32LE", 4, { try $0.readUInt32LE() }),
            ("readUInt64LE", 8, { try $0.readUInt64LE() }),
            ("readAddress", 6, { try $0.readAddress() }),
            ("readBytes(count: 5)", 5, { try $0.readBytes(count: 5) }),
            ("readUUID(width: 2)", 2, { try $0.readUUID(width: 2) }),
            ("readUUID(width: 4)", 4, { try $0.readUUID(width: 4) }),
            ("readUUID(width: 16)", 16, { try $0.readUUID(width: 16) }),
            ("skip(7)", 7, { try $0.skip(7) }),
        ]
        for (name, width, read) in reads {
            let input = [UInt8](repeating: 0xAB, count: 2 + width - 1)
            var reader = ByteReader(input, from: 2)
            XCTAssertThrowsDecodeError(.truncated(needed: width, available: width - 1, at: 2), name) {
                try read(&reader)
            }
            XCTAssertEqual(reader.offset, 2, "\(name) advanced on failure")
            XCTAssertEqual(reader.remaining, width - 1, name)
        }
    }

    func testReadOnEmptyInput() {
        var reader = ByteReader([])
        XCTAssertTrue(reader.isAtEnd)
        XCTAssertThrowsDecodeError(.truncated(needed: 1, available: 0, at: 0)) { try reader.readUInt8() }
        XCTAssertEqual(reader.readRemaining(), [])
        XCTAssertNoThrow(try reader.expectEnd())
    }

    func testNegativeCountsAreRejectedWithoutMoving() {
        var reader = ByteReader(bytes("01 02 03"), from: 1)
        XCTAssertThrowsDecodeError(.invalidValue(field: "length", value: UInt64(bitPattern: -1), at: 1)) {
            try reader.readBytes(count: -1)
        }
        XCTAssertEqual(reader.offset, 1)
        // A negative skip would walk the cursor backwards over already-decoded octets.
        XCTAssertThrowsDecodeError(.invalidValue(field: "length", value: UInt64(bitPattern: -1), at: 1)) {
            try reader.skip(-1)
        }
        XCTAssertEqual(reader.offset, 1)
    }

    func testUnsupportedUUIDWidthIsInvalidValue() {
        var reader = ByteReader(bytes("01 02 03"))
        XCTAssertThrowsDecodeError(.invalidValue(field: "UUID width", value: 3, at: 0)) { try reader.readUUID(width: 3) }
        XCTAssertEqual(reader.offset, 0)
    }

    // MARK: Range-limited readers

    func testRangeLimitedReaderStopsAtItsEndAndReportsAbsoluteOffsets() throws {
        // An outer structure whose middle 3 octets are one field: the inner reader must not see past it.
        let input = bytes("""
            aa bb       // outer header
            01 02 03    // the field (offsets 2..<5)
            cc dd       // outer trailer
            """)
        var inner = ByteReader(input, range: 2..<5)
        XCTAssertEqual(inner.offset, 2)
        XCTAssertEqual(inner.end, 5)
        XCTAssertEqual(inner.remaining, 3)
        XCTAssertEqual(try inner.readUInt16LE(), 0x0201)
        XCTAssertThrowsDecodeError(.truncated(needed: 2, available: 1, at: 4)) { try inner.readUInt16LE() }
        XCTAssertThrowsDecodeError(.trailingBytes(count: 1, at: 4)) { try inner.expectEnd() }
        XCTAssertEqual(inner.readRemaining(), [0x03], "the octets after the range stay out of reach")
        XCTAssertTrue(inner.isAtEnd)
        XCTAssertNoThrow(try inner.expectEnd())
        XCTAssertThrowsDecodeError(.truncated(needed: 1, available: 0, at: 5)) { try inner.readUInt8() }
    }

    func testARangePastTheEndOfTheInputIsCutToTheInput() throws {
        // Decoders build ranges from length fields a peer sent; a length that lies must give
        // `truncated`, not an out-of-bounds trap.
        let input = bytes("""
            05          // a length field claiming 5 octets follow
            aa bb       // only 2 do
            """)
        var body = ByteReader(input, range: 1..<(1 + Int(input[0])))
        XCTAssertEqual(body.end, 3)
        XCTAssertEqual(body.remaining, 2)
        XCTAssertThrowsDecodeError(.truncated(needed: 5, available: 2, at: 1)) { try body.readBytes(count: 5) }
        XCTAssertThrowsDecodeError(.truncated(needed: 4, available: 2, at: 1)) { try body.readUInt32LE() }
        XCTAssertEqual(body.readRemaining(), [0xAA, 0xBB])

        var beyond = ByteReader(input, range: 7..<9)
        XCTAssertTrue(beyond.isAtEnd)
        XCTAssertEqual(try beyond.readBytes(count: 0), [])
        XCTAssertThrowsDecodeError(.truncated(needed: 1, available: 0, at: 3)) { try beyond.readUInt8() }
        XCTAssertEqual(beyond.readRemaining(), [])

        var late = ByteReader(input, from: 10)
        XCTAssertEqual(late.remaining, 0)
        XCTAssertEqual(try late.readBytes(count: 0), [])
        XCTAssertThrowsDecodeError(.truncated(needed: 2, available: 0, at: 3)) { try late.readUInt16LE() }
    }

    func testEmptyRange() {
        var reader = ByteReader(bytes("01 02"), range: 1..<1)
        XCTAssertTrue(reader.isAtEnd)
        XCTAssertThrowsDecodeError(.truncated(needed: 1, available: 0, at: 1)) { try reader.readUInt8() }
    }

    func testStartingOffset() throws {
        var reader = ByteReader(bytes("01 02 03"), from: 2)
        XCTAssertEqual(reader.remaining, 1)
        XCTAssertEqual(try reader.readUInt8(), 0x03)
    }

    // MARK: expectEnd

    func testExpectEndReportsHowManyOctetsAreLeftAndWhere() throws {
        var reader = ByteReader(bytes("01 02 03 04"))
        _ = try reader.readUInt8()
        XCTAssertThrowsDecodeError(.trailingBytes(count: 3, at: 1)) { try reader.expectEnd() }
        XCTAssertEqual(reader.offset, 1)
        try reader.skip(3)
        XCTAssertNoThrow(try reader.expectEnd())
    }

    // MARK: UUIDs

    func testReadUUIDOfEachWidth() throws {
        var reader = ByteReader(bytes("""
            0d 18                                               // 16-bit 0x180D
            78 56 34 12                                         // 32-bit 0x12345678
            9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 01 00 40 6e     // 128-bit 6E400001-B5A3-F393-E0A9-E50E24DCCA9E
            """))
        // 16-bit: Heart Rate service 0x180D.
        let heartRate = try reader.readUUID(width: 2)
        XCTAssertEqual(heartRate, 0x180D)
        XCTAssertEqual(reader.offset, 2)
        // 32-bit: 0x12345678 inside the Base UUID.
        let thirtyTwo = try reader.readUUID(width: 4)
        XCTAssertEqual(thirtyTwo, BluetoothUUID(uuid32: 0x1234_5678))
        XCTAssertEqual(reader.offset, 6)
        // 128-bit: Nordic UART Service, octets reversed on the wire (Core 5.4, Vol 3, Part B, 2.5.1).
        let nordic = try reader.readUUID(width: 16)
        XCTAssertEqual(nordic, BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        XCTAssertEqual(reader.offset, 22)
        XCTAssertTrue(reader.isAtEnd)
    }

    func testA128BitUUIDWithOnlyHalfItsOctetsDoesNotConsumeTheHalf() {
        // The 128-bit read is two 64-bit halves inside; a short input must not leave the cursor between them.
        var reader = ByteReader([UInt8](repeating: 0x11, count: 10))
        XCTAssertThrowsDecodeError(.truncated(needed: 16, available: 10, at: 0)) { try reader.readUUID(width: 16) }
        XCTAssertEqual(reader.offset, 0)
    }

    // MARK: Errors

    func testDecodeErrorDescriptionsSayWhere() {
        XCTAssertEqual(DecodeError.truncated(needed: 4, available: 1, at: 7).description,
                       "truncated: needed 4 octet(s) at offset 7, only 1 available")
        XCTAssertEqual(DecodeError.lengthMismatch(field: "Parameter_Total_Length", declared: 5, actual: 3).description,
                       "length mismatch in Parameter_Total_Length: declared 5, actual 3")
        XCTAssertEqual(DecodeError.invalidValue(field: "Role", value: 0x7f, at: 3).description,
                       "invalid Role 0x7f at offset 3")
        XCTAssertEqual(DecodeError.trailingBytes(count: 2, at: 9).description,
                       "2 unexpected trailing octet(s) at offset 9")
        XCTAssertEqual(DecodeError.unknownType(field: "H4 packet type", value: 0x09, at: 0).description,
                       "unknown H4 packet type 0x9 at offset 0")
    }
}

import BLEWire
import WireTestSupport
import XCTest

final class ByteWriterTests: XCTestCase {

    func testEachWriteAppendsLittleEndian() {
        var writer = ByteWriter()
        writer.write(UInt8(0xFE))
        writer.write(Int8(-2))
        writer.writeUInt16LE(0x1234)
        writer.writeUInt24LE(0xAB12_3456)           // the top octet does not fit and is dropped
        writer.writeUInt32LE(0x1234_5678)
        writer.writeUInt64LE(0x1234_5678_9ABC_DEF0)
        writer.write(bytes: [0xC0, 0xFF, 0xEE])
        writer.write(bytes: [0x00, 0x01, 0x02, 0x03][1...2])
        XCTAssertEqual(writer.bytes, bytes("""
            fe                          // UInt8 0xFE
            fe                          // Int8 -2
            34 12                       // UInt16 0x1234
            56 34 12                    // UInt24 0x123456
            78 56 34 12                 // UInt32 0x12345678
            f0 de bc 9a 78 56 34 12     // UInt64 0x123456789ABCDEF0
            c0 ff ee                    // bytes
            01 02                       // a slice
            """))
        XCTAssertEqual(writer.count, 24)
    }

    func testSetOverwritesAnOctetAlreadyWrittenAndKeepsTheCount() {
        var writer = ByteWriter()
        writer.write(UInt8(0x04))
        writer.write(UInt8(0x00))                   // a length, known only later
        writer.write(bytes: [0xAA, 0xBB, 0xCC])
        writer.set(UInt8(3), at: 1)
        XCTAssertEqual(writer.bytes, [0x04, 0x03, 0xAA, 0xBB, 0xCC])
        XCTAssertEqual(writer.count, 5)
    }

    func testStartsEmptyWhateverTheCapacity() {
        XCTAssertEqual(ByteWriter().bytes, [])
        XCTAssertEqual(ByteWriter(capacity: 0).count, 0)
        XCTAssertEqual(ByteWriter(capacity: 1024).count, 0)
    }

    func testWriteAddressLeastSignificantOctetFirst() throws {
        var writer = ByteWriter()
        writer.write(address: try XCTUnwrap(BDAddr(string: "C0:11:22:33:44:55")))
        XCTAssertEqual(writer.bytes, bytes("55 44 33 22 11 c0"))
    }

    func testWriteUUIDInItsShortestForm() throws {
        var writer = ByteWriter()
        writer.write(uuid: 0x180D)
        writer.write(uuid: BluetoothUUID(uuid32: 0x1234_5678))
        writer.write(uuid: try XCTUnwrap(BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")))
        XCTAssertEqual(writer.bytes, bytes("""
            0d 18                                               // 0x180D in 2 octets
            78 56 34 12                                         // 0x12345678 in 4 octets
            9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 01 00 40 6e     // Nordic UART in 16 octets
            """))
    }

    func testWriteUUIDInAWiderFormThanNeeded() {
        // A 16-bit UUID in a 128-bit field (e.g. ATT Read By Type with a 16-octet type) is the full
        // Base UUID expansion (Core 5.4, Vol 3, Part B, 2.5.1).
        var writer = ByteWriter()
        writer.write(uuid: 0x180D, width: 4)
        writer.write(uuid: 0x180D, width: 16)
        XCTAssertEqual(writer.bytes, bytes("""
            0d 18 00 00                                         // 0x0000180D
            fb 34 9b 5f 80 00 00 80 00 10 00 00 0d 18 00 00     // 0000180D-0000-1000-8000-00805F9B34FB
            """))
    }

    func testPatchingOverwritesInPlace() {
        // A length known only after the body is written.
        var writer = ByteWriter()
        writer.write(UInt8(0x02))          // packet indicator
        writer.writeUInt16LE(0)            // length placeholder
        writer.write(UInt8(0))             // type placeholder
        writer.write(bytes: [0xAA, 0xBB, 0xCC])
        writer.patchUInt16LE(UInt16(writer.count - 3), at: 1)
        writer.patchUInt8(0x99, at: 3)
        XCTAssertEqual(writer.bytes, bytes("""
            02          // packet indicator
            04 00       // patched length 4
            99          // patched type
            aa bb cc    // body
            """))
        XCTAssertEqual(writer.count, 7, "patching does not append")
    }

    func testWhatTheWriterWritesTheReaderReadsBack() throws {
        var writer = ByteWriter()
        writer.write(UInt8(7))
        writer.writeUInt16LE(0xBEEF)
        writer.writeUInt24LE(0xC0FFEE)
        writer.writeUInt32LE(0xDEAD_BEEF)
        writer.writeUInt64LE(.max - 1)
        writer.write(address: BDAddr(rawValue: 0xF0E1_D2C3_B4A5))
        writer.write(uuid: 0x2902)

        var reader = ByteReader(writer.bytes)
        XCTAssertEqual(try reader.readUInt8(), 7)
        XCTAssertEqual(try reader.readUInt16LE(), 0xBEEF)
        XCTAssertEqual(try reader.readUInt24LE(), 0xC0FFEE)
        XCTAssertEqual(try reader.readUInt32LE(), 0xDEAD_BEEF)
        XCTAssertEqual(try reader.readUInt64LE(), .max - 1)
        XCTAssertEqual(try reader.readAddress(), BDAddr(rawValue: 0xF0E1_D2C3_B4A5))
        XCTAssertEqual(try reader.readUUID(width: 2), .clientCharacteristicConfiguration)
        try reader.expectEnd()
    }
}

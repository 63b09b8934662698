import XCTest
import BLEWire
import ATT
@testable import GATT

/// The server against Core 5.4 Vol 3 Part F 3.4 and Part G, octet for octet: what the audit of
/// issue 11 found (Attribute Not Long, Execute Write order, the mandatory descriptors) and the
/// rest of the request checks (ATT_MTU 23 unless said).
final class GATTServerConformanceTests: XCTestCase {
    /// FFF0: FFF1 read/write/extended-properties (0x0003, 0x2900 at 0x0004), FFF2 read/broadcast
    /// (0x0006, 0x2903 at 0x0007), FFF3 read/write/notify (0x0009, CCCD 0x000A).
    func makeDatabase() throws -> GATTDatabase {
        try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: [
            GATTCharacteristic(uuid: 0xFFF1, properties: [.read, .write, .extendedProperties], value: Array("abc".utf8)),
            GATTCharacteristic(uuid: 0xFFF2, properties: [.read, .broadcast], value: [0x2A]),
            GATTCharacteristic(uuid: 0xFFF3, properties: [.read, .write, .notify], value: [0x01]),
        ])], includeStandardServices: false)
    }

    // MARK: Part G 3.3.1.1: the descriptors a property requires

    /// `extended-properties` says a Characteristic Extended Properties descriptor (0x2900) exists
    /// (Part G 3.3.1.1, 3.3.3.1); `broadcast` needs a Server Characteristic Configuration
    /// descriptor (0x2903, Part G 3.3.3.4). Find Information shows both.
    func testExtendedPropertiesAndBroadcastBringTheirDescriptors() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("04 01 00 ff ff"), [
            "05 01"
            + " 01 00 00 28"  // «Primary Service»
            + " 02 00 03 28"  // «Characteristic» FFF1
            + " 03 00 f1 ff"  // FFF1 value
            + " 04 00 00 29"  // Characteristic Extended Properties
            + " 05 00 03 28",  // «Characteristic» FFF2 (five entries fill ATT_MTU 23)
        ])
        XCTAssertEqual(h.exchange("04 06 00 ff ff"), [
            "05 01 06 00 f2 ff 07 00 03 29 08 00 03 28 09 00 f3 ff 0a 00 02 29",
        ])
        XCTAssertEqual(h.exchange("0a 04 00"), ["0b 00 00"], "no extended property bit set")
        XCTAssertEqual(h.exchange("0a 07 00"), ["0b 00 00"], "broadcast off until a client sets it")
        XCTAssertEqual(h.exchange("12 04 00 01 00"), ["01 12 04 00 03"], "0x2900 is read-only (Part G 3.3.3.1)")
    }

    // MARK: Part F 3.4.4.5: Attribute Not Long

    /// A Read Blob Request for an attribute of a fixed length that fits in ATT_MTU - 1 octets is
    /// answered Attribute Not Long (0x0B): declarations and configuration descriptors are such
    /// attributes. An offset past the end is still Invalid Offset, checked first.
    func testReadBlobOfAShortFixedLengthAttributeIsAttributeNotLong() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("0c 0a 00 00 00"), ["01 0c 0a 00 0b"])  // CCCD, offset 0
        XCTAssertEqual(h.exchange("0c 0a 00 01 00"), ["01 0c 0a 00 0b"])  // CCCD, offset 1
        XCTAssertEqual(h.exchange("0c 0a 00 03 00"), ["01 0c 0a 00 07"])  // past its 2 octets: Invalid Offset
        XCTAssertEqual(h.exchange("0c 02 00 01 00"), ["01 0c 02 00 0b"])  // «Characteristic» declaration
        XCTAssertEqual(h.exchange("0c 01 00 00 00"), ["01 0c 01 00 0b"])  // «Primary Service» declaration
        // A characteristic value has no fixed length: the blob from the offset, as before.
        XCTAssertEqual(h.exchange("0c 03 00 01 00"), ["0d 62 63"])
    }

    // MARK: Part F 3.4.6.3: Execute Write in the order prepared

    /// Parts for two attributes, interleaved: they are written in the order they were prepared
    /// (A's first part, then B, then A's second part), not grouped per handle.
    func testExecuteWriteAppliesPartsInTheOrderTheyWerePrepared() throws {
        // FFF1 at 0x0003 and FFF3 at 0x0005, both read/write.
        let h = ServerHarness(database: try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: [
            GATTCharacteristic(uuid: 0xFFF1, properties: [.read, .write], value: Array("abc".utf8)),
            GATTCharacteristic(uuid: 0xFFF3, properties: [.read, .write], value: [0x01]),
        ])], includeStandardServices: false))
        var writes: [String] = []
        h.server.onWrite = { writes.append("\(hex4($0.handle)) \($0.value.spacedHex)") }
        XCTAssertEqual(h.exchange("16 03 00 00 00 41 42"), ["17 03 00 00 00 41 42"])
        XCTAssertEqual(h.exchange("16 05 00 00 00 07"), ["17 05 00 00 00 07"])
        XCTAssertEqual(h.exchange("16 03 00 02 00 43"), ["17 03 00 02 00 43"])
        XCTAssertEqual(h.exchange("18 01"), ["19"])
        XCTAssertEqual(writes, ["0x0003 41 42", "0x0005 07", "0x0003 41 42 43"])
        XCTAssertEqual(h.server.value(at: 0x0003), Array("ABC".utf8))
    }

    /// Consecutive parts of one attribute (a long write) are still one write of the whole value.
    func testConsecutivePartsOfOneAttributeAreOneWrite() throws {
        let h = ServerHarness(database: try makeDatabase())
        var writes: [String] = []
        h.server.onWrite = { writes.append("\(hex4($0.handle)) \($0.value.spacedHex)") }
        h.exchange("16 03 00 00 00 41 42")
        h.exchange("16 03 00 02 00 43 44")
        XCTAssertEqual(h.exchange("18 01"), ["19"])
        XCTAssertEqual(writes, ["0x0003 41 42 43 44"])
    }

    // MARK: Part F 3.4.1.1: the handle in error

    func testErrorResponsesNameTheHandleOfTheRequest() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("08 01 00 ff ff 03"), ["01 08 01 00 04"])           // malformed Read By Type
        XCTAssertEqual(h.exchange("0a 00 00"), ["01 0a 00 00 01"])                    // handle 0x0000: Invalid Handle
        XCTAssertEqual(h.exchange("0e 03 00 0b 00 09 00"), ["01 0e 0b 00 01"])        // Read Multiple: the invalid one
        XCTAssertEqual(h.exchange("04 00 00 ff ff"), ["01 04 00 00 01"])              // start 0x0000
        XCTAssertEqual(h.exchange("04 09 00 08 00"), ["01 04 09 00 01"])              // start > end
        XCTAssertEqual(h.exchange("06 09 00 08 00 00 28 f0 ff"), ["01 06 09 00 01"])  // Find By Type Value, start > end
        XCTAssertEqual(h.exchange("08 00 00 ff ff 03 28"), ["01 08 00 00 01"])        // Read By Type, start 0x0000
        XCTAssertEqual(h.exchange("10 02 00 ff ff 03 28"), ["01 10 02 00 10"])        // «Characteristic»: Unsupported Group Type
    }

    // MARK: Part F 3.4.5.1: Invalid Attribute Value Length

    /// A value longer than 512 octets (Part F 3.2.9) is refused, and a CCCD takes exactly two.
    func testWritesOfTheWrongLengthAreInvalidAttributeValueLength() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("02 05 02"), ["03 05 02"])  // ATT_MTU 517: a Write Request holds 514 octets
        XCTAssertEqual(h.exchange("12 03 00 " + Array(repeating: UInt8(0x55), count: 513).spacedHex), ["01 12 03 00 0d"])
        XCTAssertEqual(h.server.value(at: 0x0003), Array("abc".utf8))
        XCTAssertEqual(h.exchange("12 0a 00 01"), ["01 12 0a 00 0d"])
        XCTAssertEqual(h.exchange("12 0a 00 01 00 00"), ["01 12 0a 00 0d"])
        XCTAssertEqual(h.exchange("12 07 00 01"), ["01 12 07 00 0d"], "the Server Characteristic Configuration takes two octets")
        XCTAssertEqual(h.exchange("12 07 00 04 00"), ["01 12 07 00 13"], "only the Broadcast bit is defined")
        XCTAssertEqual(h.exchange("12 07 00 01 00"), ["13"])
        XCTAssertEqual(h.exchange("0a 07 00"), ["0b 01 00"])
    }
}

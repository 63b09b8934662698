import BLEWire
import HCI
import WireTestSupport
import XCTest

/// The two devices of the reference session (Fixtures/*.txt), both on random static addresses.
enum ReferenceDevice {
    static let central = BDAddr(string: "C0:FF:EE:00:00:01")!
    static let peripheral = BDAddr(string: "C0:FF:EE:00:00:02")!
    /// What the peripheral advertises: Flags 0x06; 16-bit UUIDs 0xFFE0 0x180D; Complete Local Name "RefPeer".
    static let advertisingData = [UInt8](hex: "02 01 06  05 03 e0 ff 0d 18  08 09 52 65 66 50 65 65 72")!
}

/// SplitMix64: a tiny seeded generator so every random test input follows from its seed.
/// (HCITests depends on HCI only, so BLERuntime's SeededRandom is not imported here.)
struct TestRandom: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}

/// An event vector: exact encoding, decoding, both round trips, and the same through the H4 frame.
func assertEvent(_ event: HCIEvent, _ expected: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(event.encoded.spacedHex, expected.spacedHex, "encoding of \(event)", file: file, line: line)
    XCTAssertEqual(event.code, expected[0], file: file, line: line)
    XCTAssertEqual(Int(expected[1]), expected.count - 2, "vector's own Parameter_Total_Length", file: file, line: line)
    do {
        let decoded = try HCIEvent(decoding: expected)
        XCTAssertEqual(decoded, event, file: file, line: line)
        XCTAssertEqual(decoded.encoded, expected, file: file, line: line)
        XCTAssertEqual(try HCIEvent(decoding: event.encoded), event, file: file, line: line)
        let packet = try HCIPacket(h4: [0x04] + expected)
        XCTAssertEqual(packet, .event(event), file: file, line: line)
        XCTAssertEqual(packet.h4, [0x04] + expected, file: file, line: line)
    } catch {
        XCTFail("\(event): \(error)", file: file, line: line)
    }
}

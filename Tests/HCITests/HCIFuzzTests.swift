import BLEWire
@testable import HCI
import WireTestSupport
import XCTest

/// Seeded fuzzing of `HCIPacket(h4:)`: every input either throws a `DecodeError` or decodes to a
/// packet that re-encodes to the input. Nothing crashes, nothing hangs, no other error escapes.
final class HCIFuzzTests: XCTestCase {

    static let knownEventCodes: [UInt8] = [0x05, 0x0E, 0x0F, 0x10, 0x13, 0x3E]
    static let knownSubevents: [UInt8] = [0x01, 0x02, 0x03]

    /// A random frame, biased towards what the decoders know so that the deep paths are reached:
    /// known opcodes with their right parameter size, known event codes, consistent length fields.
    static func randomFrame(_ r: inout TestRandom) -> [UInt8] {
        func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &r) < percent }
        var frame: [UInt8]
        switch [1, 2, 4].randomElement(using: &r)! {
        case 1:
            let known = HCIMalformedInputTests.fixedSizes.randomElement(using: &r)!
            let opcode = chance(70) ? known.0.rawValue : UInt16.random(in: 0...0xFFFF, using: &r)
            let count = chance(60) ? known.1 : Int.random(in: 0...40, using: &r)
            var parameters = r.bytes(count)
            if chance(50), !parameters.isEmpty { parameters[0] = UInt8.random(in: 0...2, using: &r) }  // booleans, short data
            let length = chance(85) ? UInt8(truncatingIfNeeded: count) : UInt8.random(in: 0...255, using: &r)
            frame = [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), length] + parameters
        case 2:
            let header = UInt16.random(in: 0...0xFFFF, using: &r)
            let data = r.bytes(Int.random(in: 0...80, using: &r))
            let length = chance(85) ? UInt16(data.count) : UInt16.random(in: 0...0x0100, using: &r)
            frame = [0x02, UInt8(header & 0xFF), UInt8(header >> 8), UInt8(length & 0xFF), UInt8(length >> 8)] + data
        default:
            let code = chance(70) ? knownEventCodes.randomElement(using: &r)! : UInt8.random(in: 0...255, using: &r)
            var parameters = r.bytes(Int.random(in: 0...48, using: &r))
            if code == 0x3E, !parameters.isEmpty, chance(80) {
                parameters[0] = knownSubevents.randomElement(using: &r)!
                if parameters[0] == 0x02, parameters.count > 1, chance(70) {
                    parameters[1] = UInt8.random(in: 0...2, using: &r)   // Num_Reports
                    if parameters.count > 10 { parameters[10] = UInt8.random(in: 0...40, using: &r) }  // Data_Length
                }
            }
            if code == 0x13, !parameters.isEmpty, chance(70) { parameters[0] = UInt8((parameters.count - 1) / 4) }
            let length = chance(85) ? UInt8(truncatingIfNeeded: parameters.count) : UInt8.random(in: 0...255, using: &r)
            frame = [0x04, code, length] + parameters
        }
        if chance(10) { frame = Array(frame.prefix(Int.random(in: 0...frame.count, using: &r))) }
        return frame
    }

    /// A reference frame with one to three random mutations: a changed octet, a cut, extra octets.
    static func mutatedReferenceFrame(_ r: inout TestRandom) -> [UInt8] {
        var frame = ReferenceTraffic.all.randomElement(using: &r)!.packet.h4
        for _ in 0...Int.random(in: 0...2, using: &r) {
            switch Int.random(in: 0..<4, using: &r) {
            case 0, 1:
                if !frame.isEmpty { frame[Int.random(in: 0..<frame.count, using: &r)] = UInt8.random(in: 0...255, using: &r) }
            case 2:
                frame = Array(frame.prefix(Int.random(in: 0...frame.count, using: &r)))
            default:
                frame += r.bytes(Int.random(in: 1...4, using: &r))
            }
        }
        return frame
    }

    /// Non-zero octets in the non-significant part of LE Set Advertising / Scan Response Data
    /// (Core 5.4, Vol 3, Part C, 11: "shall contain all-zero octets") are accepted and re-encoded as
    /// zeros: the only place where decoding is not byte-for-byte. Returns the frame as re-encoded.
    static func canonical(_ frame: [UInt8]) -> [UInt8] {
        guard frame.count == 36, frame[0] == 0x01, frame[2] == 0x20, frame[1] == 0x08 || frame[1] == 0x09,
              frame[3] == 32, frame[4] <= 31 else { return frame }
        var out = frame
        for i in (5 + Int(frame[4]))..<36 { out[i] = 0 }
        return out
    }

    struct Tally { var decoded = 0, rejected = 0 }

    func check(_ frame: [UInt8], _ tally: inout Tally, _ label: @autoclosure () -> String) {
        do {
            let packet = try HCIPacket(h4: frame)
            XCTAssertEqual(packet.h4, Self.canonical(frame), "\(label()): \(frame.spacedHex)")
            XCTAssertEqual(try HCIPacket(h4: packet.h4), packet, label())
            XCTAssertFalse(packet.description.isEmpty)
            tally.decoded += 1
        } catch is DecodeError {
            tally.rejected += 1
        } catch {
            XCTFail("\(label()): non-DecodeError \(error) for \(frame.spacedHex)")
        }
    }

    func testRandomFramesDecodeAndRoundTripOrThrowDecodeError() {
        var r = TestRandom(seed: 0x5EED_0001)
        var tally = Tally()
        for i in 0..<20_000 {
            check(Self.randomFrame(&r), &tally, "random frame \(i)")
        }
        // Both outcomes are common, so the property was exercised on both sides.
        XCTAssertGreaterThan(tally.decoded, 5_000)
        XCTAssertGreaterThan(tally.rejected, 5_000)
    }

    func testMutatedReferenceFramesDecodeAndRoundTripOrThrowDecodeError() {
        var r = TestRandom(seed: 0x5EED_0002)
        var tally = Tally()
        for i in 0..<10_000 {
            check(Self.mutatedReferenceFrame(&r), &tally, "mutation \(i)")
        }
        XCTAssertGreaterThan(tally.decoded, 1_000)
        XCTAssertGreaterThan(tally.rejected, 1_000)
    }

    func testUniformlyRandomBytesAfterEachIndicator() {
        // No bias at all: any indicator octet, any length, any content.
        var r = TestRandom(seed: 0x5EED_0003)
        var tally = Tally()
        for i in 0..<10_000 {
            check(r.bytes(Int.random(in: 0...300, using: &r)), &tally, "uniform \(i)")
        }
        XCTAssertEqual(tally.decoded + tally.rejected, 10_000)
    }

    func testNonSignificantAdvertisingDataOctetsAreReencodedAsZeros() throws {
        // Data_Length 3, then non-zero padding: accepted, the padding does not survive.
        let frame = bytes("01 08 20 20", "03", "02 01 06") + [UInt8](repeating: 0xEE, count: 28)
        let packet = try HCIPacket(h4: frame)
        XCTAssertEqual(packet, .command(.leSetAdvertisingData(bytes("02 01 06"))))
        XCTAssertEqual(packet.h4, bytes("01 08 20 20", "03", "02 01 06") + [UInt8](repeating: 0, count: 28))
        XCTAssertEqual(packet.h4, Self.canonical(frame))
    }

    func testFramerAndDecoderOverARandomStreamOfValidPackets() throws {
        // Random valid frames joined into one stream, cut at random, reassembled and decoded in order.
        var r = TestRandom(seed: 0x5EED_0004)
        var frames: [[UInt8]] = []
        while frames.count < 2_000 {
            let frame = Self.randomFrame(&r)
            if let packet = try? HCIPacket(h4: frame), packet.h4 == frame { frames.append(frame) }
        }
        let stream = frames.flatMap { $0 }
        var framer = H4Framer()
        var out: [HCIPacket] = []
        var at = 0
        while at < stream.count {
            let end = min(stream.count, at + Int.random(in: 1...97, using: &r))
            try framer.feed(Array(stream[at..<end])) { out.append(try HCIPacket(h4: $0)) }
            at = end
        }
        XCTAssertEqual(out.map(\.h4), frames)
        XCTAssertEqual(framer.pendingCount, 0)
    }
}

import XCTest
import BLEWire

/// Advertising data arrives from any device in range, so the decoder must survive anything:
/// every input either decodes (and then re-encodes to something that decodes to the same value)
/// or throws a `DecodeError`. Deterministic: a fixed seed, no clock.
final class AdvertisingDataFuzzTests: XCTestCase {

    func testRandomOctetsDecodeOrThrowADecodeError() {
        var random = SplitMix64(seed: 0xAD_F022)
        var outcomes = Outcomes()
        for _ in 0..<10_000 {
            let input = (0..<random.below(41)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            check(input, &outcomes)
        }
        // Pure noise mostly fails on the first Length octet; make sure both paths were exercised.
        XCTAssertGreaterThan(outcomes.decoded, 300)
        XCTAssertGreaterThan(outcomes.rejected, 3_000)
    }

    /// Inputs built from plausible structures, some then damaged, so that the decoder's later checks
    /// (per-type sizes, UUID widths) are reached far more often than with noise alone.
    func testPlausibleStructuresWithDamageDecodeOrThrowADecodeError() {
        let types: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x16, 0x20, 0x21, 0xFF, 0x19, 0x00, 0xE0]
        var random = SplitMix64(seed: 31)
        var outcomes = Outcomes()
        for _ in 0..<10_000 {
            var input: [UInt8] = []
            for _ in 0..<random.below(5) {
                let type = types[random.below(types.count)]
                // Sizes around the interesting boundaries: 0, 1, 2, 4, 16 and one either side.
                let size = [0, 1, 2, 3, 4, 5, 8, 15, 16, 17, 18, 32, random.below(30)][random.below(13)]
                input.append(UInt8(size + 1))
                input.append(type)
                input += (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            switch random.below(4) {
            case 0 where !input.isEmpty:    // cut short
                input.removeLast(1 + random.below(input.count))
            case 1 where !input.isEmpty:    // one octet changed
                input[random.below(input.count)] = UInt8(truncatingIfNeeded: random.next())
            case 2:                         // padding, as a 31-octet legacy PDU would carry
                input += [UInt8](repeating: 0, count: random.below(4))
            default:
                break
            }
            check(input, &outcomes)
        }
        XCTAssertGreaterThan(outcomes.decoded, 3_000)
        XCTAssertGreaterThan(outcomes.rejected, 3_000)
        XCTAssertGreaterThan(outcomes.rejectedByType, 300, "per-type checks reached, not only the length walk")
    }

    // MARK: Checking one input

    private struct Outcomes {
        var decoded = 0, rejected = 0, rejectedByType = 0
    }

    private func check(_ input: [UInt8], _ outcomes: inout Outcomes, file: StaticString = #filePath, line: UInt = #line) {
        let decoded: AdvertisingData
        do {
            decoded = try AdvertisingData(decoding: input)
        } catch let error as DecodeError {
            outcomes.rejected += 1
            switch error {
            case let .truncated(needed, available, at):
                XCTAssertLessThan(available, needed, "\(input.spacedHex): \(error)", file: file, line: line)
                XCTAssertLessThanOrEqual(at, input.count, "\(input.spacedHex): \(error)", file: file, line: line)
                if at >= 2, input[at - 1] != 0 { outcomes.rejectedByType += 1 }
            case let .invalidValue(_, _, at):
                XCTAssertLessThanOrEqual(at, input.count, "\(input.spacedHex): \(error)", file: file, line: line)
                outcomes.rejectedByType += 1
            default:
                XCTFail("\(input.spacedHex): unexpected kind of error \(error)", file: file, line: line)
            }
            return
        } catch {
            XCTFail("\(input.spacedHex): not a DecodeError: \(error)", file: file, line: line)
            return
        }
        outcomes.decoded += 1

        // Structural round trip: what we encode decodes to the same value.
        let reencoded = decoded.encoded
        XCTAssertEqual(try? AdvertisingData(decoding: reencoded), decoded, input.spacedHex, file: file, line: line)

        // Byte round trip of the significant part: nothing that decodes is lost.
        let significantLength = Self.significantLength(input)
        XCTAssertEqual(reencoded, Array(input[..<significantLength]), input.spacedHex, file: file, line: line)
    }

    /// An independent walk of the Length octets (Core 5.4, Vol 3, Part C, 11) over input known to decode.
    private static func significantLength(_ input: [UInt8]) -> Int {
        var i = 0
        while i < input.count, input[i] != 0 { i += 1 + Int(input[i]) }
        return i
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): enough randomness for fuzzing, written here because
/// BLEWire sits below BLERuntime and its tests cannot import SeededRandom.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// In 0..<bound; the modulo bias is irrelevant for fuzzing.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

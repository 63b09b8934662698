import BLEWire
@testable import HCI
import WireTestSupport
import XCTest

/// The H4 framer (Core 5.4, Vol 4, Part A, 2): one indicator octet, then an HCI packet whose header
/// says how long it is. Fed the reference streams whole, byte by byte, in random chunks and joined;
/// the same frames must come out, byte-identical and in order.
final class H4FramerTests: XCTestCase {

    static let centralFrames = ReferenceTraffic.central.map(\.h4)
    static let peripheralFrames = ReferenceTraffic.peripheral.map(\.h4)

    /// Feeds `chunks` in order and returns every emitted frame; fails the test on a thrown error.
    func frames(feeding chunks: [[UInt8]], into framer: inout H4Framer,
                file: StaticString = #filePath, line: UInt = #line) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for chunk in chunks {
            do {
                try framer.feed(chunk) { out.append($0) }
            } catch {
                XCTFail("feed threw \(error)", file: file, line: line)
                break
            }
        }
        return out
    }

    func assertSplitting(_ stream: [UInt8], into chunks: [[UInt8]], yields expected: [[UInt8]],
                         file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(chunks.flatMap { $0 }, stream, "the chunks cover the stream", file: file, line: line)
        var framer = H4Framer()
        let out = frames(feeding: chunks, into: &framer, file: file, line: line)
        XCTAssertEqual(out.count, expected.count, file: file, line: line)
        if let i = zip(out, expected).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            XCTFail("frame \(i) differs: \(out[i].spacedHex) vs \(expected[i].spacedHex)", file: file, line: line)
        }
        XCTAssertEqual(framer.pendingCount, 0, file: file, line: line)
        XCTAssertNil(framer.failure, file: file, line: line)
    }

    func testReferenceFixturesAreWhole() {
        XCTAssertEqual(Self.centralFrames.count, 146)
        XCTAssertEqual(Self.peripheralFrames.count, 145)
        XCTAssertEqual(ReferenceTraffic.stream(ReferenceTraffic.central).count, Self.centralFrames.map(\.count).reduce(0, +))
    }

    func testWholeStreamInOneChunk() {
        for frames in [Self.centralFrames, Self.peripheralFrames] {
            let stream = frames.flatMap { $0 }
            assertSplitting(stream, into: [stream], yields: frames)
        }
    }

    func testOneByteAtATime() {
        for frames in [Self.centralFrames, Self.peripheralFrames] {
            let stream = frames.flatMap { $0 }
            assertSplitting(stream, into: stream.map { [$0] }, yields: frames)
        }
    }

    func testOnePacketPerFeed() {
        // The in-process case: each read is exactly one packet.
        assertSplitting(Self.centralFrames.flatMap { $0 }, into: Self.centralFrames, yields: Self.centralFrames)
    }

    func testRandomChunkSizesFromSeededGenerators() {
        let stream = Self.centralFrames.flatMap { $0 }
        for seed in UInt64(1)...50 {
            var random = TestRandom(seed: seed)
            var chunks: [[UInt8]] = []
            var at = 0
            while at < stream.count {
                // Mostly small reads, sometimes a large one spanning many packets.
                let size = Int.random(in: 0..<10, using: &random) == 0 ? Int.random(in: 1...600, using: &random)
                                                                         : Int.random(in: 1...40, using: &random)
                let end = min(stream.count, at + size)
                chunks.append(Array(stream[at..<end]))
                at = end
            }
            assertSplitting(stream, into: chunks, yields: Self.centralFrames)
        }
    }

    func testPacketsJoinedTwoAndThreeAtATime() {
        for group in [2, 3, 7] {
            let chunks = stride(from: 0, to: Self.peripheralFrames.count, by: group).map {
                Self.peripheralFrames[$0..<min($0 + group, Self.peripheralFrames.count)].flatMap { $0 }
            }
            assertSplitting(chunks.flatMap { $0 }, into: chunks, yields: Self.peripheralFrames)
        }
    }

    func testPacketSplitAtEveryOctet() {
        // LE Create Connection (central #37) split at each position, with the next packet joined to the tail.
        let packet = Self.centralFrames[36], next = Self.centralFrames[37]
        for cut in 1..<packet.count {
            assertSplitting(packet + next, into: [Array(packet[..<cut]), Array(packet[cut...]) + next], yields: [packet, next])
        }
    }

    func testPacketTypeNames() {
        XCTAssertEqual([H4PacketType.command, .acl, .sco, .event, .iso].map(\.description), ["command", "ACL", "SCO", "event", "ISO"])
        XCTAssertEqual([H4PacketType.command, .acl, .sco, .event, .iso].map(\.rawValue), [1, 2, 3, 4, 5])
        XCTAssertEqual(H4PacketType(rawValue: 0x07).description, "type 0x07")
    }

    // MARK: Partial packets

    func testPartialPacketStaysPending() throws {
        let packet = Self.centralFrames[36]  // 01 0d 20 19 … (29 octets)
        var framer = H4Framer()
        var out: [[UInt8]] = []
        try framer.feed([0x01]) { out.append($0) }                     // indicator only
        XCTAssertEqual(framer.pendingCount, 1)
        try framer.feed(Array(packet[1..<4])) { out.append($0) }       // header complete, no parameters
        XCTAssertEqual(framer.pendingCount, 4)
        try framer.feed(Array(packet[4..<28])) { out.append($0) }      // one octet short
        XCTAssertEqual(framer.pendingCount, 28)
        XCTAssertTrue(out.isEmpty)
        try framer.feed([packet[28]]) { out.append($0) }
        XCTAssertEqual(out, [packet])
        XCTAssertEqual(framer.pendingCount, 0)
    }

    func testZeroLengthPacketsAreWholeAtTheirHeader() throws {
        var framer = H4Framer()
        var out: [[UInt8]] = []
        try framer.feed(bytes("01 03 0c 00",  // Reset: complete with no parameters
                              "04 1a 00",     // an event with no parameters
                              "02 01 00 00 00")) { out.append($0) }  // an empty ACL packet
        XCTAssertEqual(out, [bytes("01 03 0c 00"), bytes("04 1a 00"), bytes("02 01 00 00 00")])
    }

    // MARK: SCO and ISO

    func testISODataLoadLengthIsFourteenBits() throws {
        let iso = bytes("05",     // H4 ISO
                        "01 00",  // Connection_Handle 0x001, PB_Flag 00, TS_Flag 0
                        "03 c0",  // ISO_Data_Load_Length 3; the two top bits are RFU and not part of it
                        "aa bb cc")
        let sco = bytes("03",     // H4 SCO
                        "01 00",  // Connection_Handle
                        "02",     // Data_Total_Length (1 octet)
                        "dd ee")
        let reset = Self.centralFrames[0]
        var framer = H4Framer()
        var out: [[UInt8]] = []
        try framer.feed(iso + sco + reset) { out.append($0) }
        XCTAssertEqual(out, [iso, sco, reset])
        out = []
        for byte in iso + sco + reset { try framer.feed([byte]) { out.append($0) } }
        XCTAssertEqual(out, [iso, sco, reset])

        // HCIPacket keeps SCO and ISO verbatim.
        XCTAssertEqual(try HCIPacket(h4: iso), .other(type: .iso, bytes: Array(iso.dropFirst())))
        XCTAssertEqual(try HCIPacket(h4: iso).h4, iso)
        XCTAssertEqual(try HCIPacket(h4: sco).h4, sco)
        XCTAssertEqual(try HCIPacket(h4: sco).type, .sco)
    }

    func testISOLengthOfFullFourteenBits() throws {
        // 0x3FFF octets of load with both RFU bits set: the frame is 1 + 4 + 16383 octets long.
        let load = [UInt8](repeating: 0x5A, count: 0x3FFF)
        let iso = bytes("05 01 00 ff ff") + load
        var framer = H4Framer()
        var out: [[UInt8]] = []
        try framer.feed(Array(iso.dropLast())) { out.append($0) }
        XCTAssertTrue(out.isEmpty)
        XCTAssertEqual(framer.pendingCount, iso.count - 1)
        try framer.feed([0x5A] + Self.centralFrames[0]) { out.append($0) }
        XCTAssertEqual(out, [iso, Self.centralFrames[0]])
    }

    // MARK: Unknown indicators

    func testUnknownIndicatorThrowsWithItsStreamOffsetAndTheFramerStaysFailed() throws {
        let good = Array(Self.centralFrames[0..<10])
        let offset = good.map(\.count).reduce(0, +)
        let stream = good.flatMap { $0 } + [0x07] + Self.centralFrames[10]
        let expected = DecodeError.unknownType(field: "H4 packet indicator", value: 0x07, at: offset)

        for chunking in [[stream], stream.map { [$0] }, good + [[0x07] + Self.centralFrames[10]]] {
            var framer = H4Framer()
            var out: [[UInt8]] = []
            var thrown: Error?
            for chunk in chunking {
                do { try framer.feed(chunk) { out.append($0) } } catch { thrown = error; break }
            }
            XCTAssertEqual(thrown as? DecodeError, expected)
            XCTAssertEqual(out, good, "the packets before the bad octet are delivered")
            XCTAssertEqual(framer.failure, expected)
            // Failed until reset: even a good packet is refused, with the same error.
            XCTAssertThrowsDecodeError(try framer.feed(Self.centralFrames[0]) { out.append($0) }, expected)
            XCTAssertThrowsDecodeError(try framer.feed([]) { out.append($0) }, expected)
            XCTAssertEqual(out, good)

            framer.reset()
            XCTAssertNil(framer.failure)
            XCTAssertEqual(framer.pendingCount, 0)
            out = []
            try framer.feed(Self.centralFrames[0] + Self.centralFrames[1]) { out.append($0) }
            XCTAssertEqual(out, [Self.centralFrames[0], Self.centralFrames[1]])
        }
    }

    func testIndicatorZeroAndSixAreUnknown() {
        for indicator: UInt8 in [0x00, 0x06, 0xFF] {
            var framer = H4Framer()
            XCTAssertThrowsDecodeError(try framer.feed([indicator]) { _ in },
                                       .unknownType(field: "H4 packet indicator", value: UInt64(indicator), at: 0))
        }
    }

    func testOffsetsCountFromTheLastReset() throws {
        var framer = H4Framer()
        try framer.feed(Self.centralFrames[0]) { _ in }   // 4 octets, delivered
        XCTAssertThrowsDecodeError(try framer.feed([0x09]) { _ in },
                                   .unknownType(field: "H4 packet indicator", value: 0x09, at: 4))
        framer.reset()
        try framer.feed(Self.centralFrames[1]) { _ in }   // 7 octets after the reset
        XCTAssertThrowsDecodeError(try framer.feed([0x00]) { _ in },
                                   .unknownType(field: "H4 packet indicator", value: 0x00, at: 7))
    }

    // MARK: A throwing consumer

    struct ConsumerError: Error {}

    func testAFrameIsNeverDeliveredTwiceWhenTheConsumerThrows() throws {
        let three = Array(Self.centralFrames[0..<3])
        var framer = H4Framer()
        var out: [[UInt8]] = []
        XCTAssertThrowsError(try framer.feed(three.flatMap { $0 }) { frame in
            out.append(frame)
            if out.count == 2 { throw ConsumerError() }
        }) { XCTAssertTrue($0 is ConsumerError) }
        XCTAssertEqual(out, [three[0], three[1]])
        XCTAssertNil(framer.failure, "a consumer's error does not poison the stream")
        XCTAssertEqual(framer.pendingCount, three[2].count, "the frame after the throwing one is still pending")

        out = []
        try framer.feed(Self.centralFrames[3]) { out.append($0) }
        XCTAssertEqual(out, [three[2], Self.centralFrames[3]])
        XCTAssertEqual(framer.pendingCount, 0)
    }

    func testRandomBytesNeverCrashOrHang() {
        // Any byte soup: the framer either emits frames, waits, or fails with unknownType.
        for seed in UInt64(1)...200 {
            var random = TestRandom(seed: seed)
            var framer = H4Framer()
            var emitted = 0
            for _ in 0..<20 {
                let chunk = random.bytes(Int.random(in: 0...64, using: &random))
                do {
                    try framer.feed(chunk) { frame in
                        emitted += frame.count
                        XCTAssertTrue([1, 2, 3, 4, 5].contains(frame[0]))
                    }
                } catch let error as DecodeError {
                    guard case .unknownType = error else { return XCTFail("seed \(seed): \(error)") }
                    break
                } catch {
                    return XCTFail("seed \(seed): \(error)")
                }
            }
            XCTAssertGreaterThanOrEqual(emitted, 0)
        }
    }
}

import BLERuntime
import HCI
import Transport
import XCTest

/// What the reader does with broken files: a typed error naming the offset, never a trap.
final class BTSnoopMalformedTests: XCTestCase {
    /// Header (16) + Reset record (24 + 4, at 16) + Command Complete record (24 + 7, at 44) = 75 octets.
    private let small = BTSnoopWriter.encode([
        LoggedPacket(time: .zero, direction: .hostToController, frame: [0x01, 0x03, 0x0c, 0x00]),
        LoggedPacket(time: .zero + .microseconds(204), direction: .controllerToHost,
                     frame: [0x04, 0x0e, 0x04, 0x01, 0x03, 0x0c, 0x00]),
    ])

    private func decodeError(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> BTSnoopError? {
        do {
            _ = try BTSnoopReader.decode(bytes)
            XCTFail("decoded without error", file: file, line: line)
            return nil
        } catch let error as BTSnoopError {
            return error
        } catch {
            XCTFail("untyped error \(error)", file: file, line: line)
            return nil
        }
    }

    private func settingUInt32(_ value: UInt32, at offset: Int, in bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        out[offset] = UInt8(value >> 24)
        out[offset + 1] = UInt8(value >> 16 & 0xff)
        out[offset + 2] = UInt8(value >> 8 & 0xff)
        out[offset + 3] = UInt8(value & 0xff)
        return out
    }

    func testEveryTruncationPointOfASmallFile() throws {
        XCTAssertEqual(small.count, 75)
        for n in 0..<small.count {
            let prefix = Array(small.prefix(n))
            let expected: BTSnoopError?
            switch n {
            case 0..<16: expected = .truncatedHeader(available: n, at: 0)
            case 16, 44: expected = nil   // whole records only: a valid, shorter capture
            case 17..<40: expected = .truncatedRecordHeader(available: n - 16, at: 16)
            case 40..<44: expected = .truncatedRecordData(needed: 4, available: n - 40, at: 40)
            case 45..<68: expected = .truncatedRecordHeader(available: n - 44, at: 44)
            default: expected = .truncatedRecordData(needed: 7, available: n - 68, at: 68)
            }
            if let expected {
                XCTAssertEqual(decodeError(prefix), expected, "prefix of \(n) octets")
                XCTAssertTrue(expected.description.contains("offset \(expected.offset)"), "\(expected)")
            } else {
                XCTAssertEqual(try BTSnoopReader.decode(prefix).records.count, n == 16 ? 0 : 1, "prefix of \(n) octets")
            }
        }
        XCTAssertEqual(try BTSnoopReader.decode(small).records.count, 2)
    }

    func testWrongMagic() {
        XCTAssertEqual(decodeError(Array("btsnooq".utf8) + small.dropFirst(7)),
                       .wrongMagic(found: Array("btsnooq\0".utf8), at: 0))
        XCTAssertEqual(decodeError(Array("BTSNOOP".utf8) + small.dropFirst(7))?.offset, 0)
        // A pcap file (magic a1 b2 c3 d4) is not mistaken for a truncated btsnoop header.
        XCTAssertEqual(decodeError([0xa1, 0xb2, 0xc3, 0xd4, 0x00, 0x02]),
                       .wrongMagic(found: [0xa1, 0xb2, 0xc3, 0xd4, 0x00, 0x02], at: 0))
        // Apple PacketLogger files (which btmon also opens) start with a length, not the magic.
        XCTAssertEqual(decodeError([0x00, 0x00, 0x00, 0x0d] + Array(repeating: 0, count: 20))?.offset, 0)
        let error = decodeError(Array("PK\u{3}\u{4}".utf8) + Array(repeating: 0, count: 20))
        XCTAssertTrue(error?.description.contains("not a btsnoop file") ?? false)
    }

    func testUnsupportedVersionAndDatalinks() {
        XCTAssertEqual(decodeError(settingUInt32(2, at: 8, in: small)), .unsupportedVersion(2, at: 8))
        XCTAssertEqual(decodeError(settingUInt32(0, at: 8, in: small)), .unsupportedVersion(0, at: 8))
        for datalink: UInt32 in [0, 1003, 1004, 2002, 0xffff_ffff] {
            XCTAssertEqual(decodeError(settingUInt32(datalink, at: 12, in: small)),
                           .unsupportedDatalink(BTSnoopDatalink(rawValue: datalink), at: 12))
        }
        XCTAssertTrue(BTSnoopError.unsupportedDatalink(.bcsp, at: 12).description.contains("1003 (BCSP)"))
    }

    func testIncludedLengthGreaterThanOriginal() {
        // Second record (at 44): original 7 → 6 while 7 octets are included.
        XCTAssertEqual(decodeError(settingUInt32(6, at: 44, in: small)),
                       .includedLengthExceedsOriginal(included: 7, original: 6, at: 44))
        // First record (at 16): included 5 of an original 4.
        XCTAssertEqual(decodeError(settingUInt32(5, at: 20, in: small)),
                       .includedLengthExceedsOriginal(included: 5, original: 4, at: 16))
    }

    func testAbsurdLengths() {
        let limit = BTSnoopReader.maximumRecordLength
        XCTAssertEqual(limit, 65_540)
        XCTAssertEqual(decodeError(settingUInt32(0xffff_ffff, at: 16, in: small)),
                       .recordTooLong(length: 0xffff_ffff, limit: limit, at: 16))
        var both = settingUInt32(0x7fff_ffff, at: 44, in: small)
        both = settingUInt32(0x7fff_ffff, at: 48, in: both)
        XCTAssertEqual(decodeError(both), .recordTooLong(length: 0x7fff_ffff, limit: limit, at: 44))
        // One past the limit is refused, the limit itself is read (here: data missing after it).
        var over = settingUInt32(UInt32(limit + 1), at: 44, in: small)
        over = settingUInt32(UInt32(limit + 1), at: 48, in: over)
        XCTAssertEqual(decodeError(over), .recordTooLong(length: UInt32(limit + 1), limit: limit, at: 44))
        var at = settingUInt32(UInt32(limit), at: 44, in: small)
        at = settingUInt32(UInt32(limit), at: 48, in: at)
        XCTAssertEqual(decodeError(at), .truncatedRecordData(needed: limit, available: 7, at: 68))
        // The largest ACL frame there can be is accepted.
        let biggest = [UInt8](repeating: 0x02, count: limit)
        let file = try? BTSnoopReader.decode(BTSnoopWriter.encode([LoggedPacket(time: .zero, direction: .hostToController, frame: biggest)]))
        XCTAssertEqual(file?.records.first?.data.count, limit)
    }

    func testDescriptionsAreSpecific() {
        XCTAssertEqual(BTSnoopError.truncatedRecordData(needed: 7, available: 2, at: 68).description,
                       "btsnoop: record data truncated at offset 68: needed 7 octets, 2 left")
        XCTAssertEqual(BTSnoopError.wrongMagic(found: [0x62, 0x0a], at: 0).description,
                       "btsnoop: not a btsnoop file (magic at offset 0 is 62 0a, expected \"btsnoop\\0\")")
        XCTAssertEqual(BTSnoopError.recordTooLong(length: 70_000, limit: 65_540, at: 16).offset, 16)
    }

    /// 600 seeded mutations of a small capture and a real one. Each decodes or throws a
    /// `BTSnoopError` whose offset lies inside the input; whatever decodes re-encodes to exactly
    /// the mutated bytes (nothing is silently dropped or invented).
    func testSeededMutationsNeverCrash() throws {
        let reference = try BTSnoopFixtures.bytes("central.btsnoop")
        let bases = [small, BTSnoopWriter.encode(HandBuiltSession.packets), Array(reference.prefix(600))]
        var random = SeededRandom(seed: 0x6274_736e_6f6f_70)
        var decoded = 0, refused = 0
        for round in 0..<600 {
            var bytes = bases[round % bases.count]
            let mutations = 1 + Int(random.int(in: 0...3))
            for _ in 0..<mutations { mutate(&bytes, &random) }
            do {
                let file = try BTSnoopReader.decode(bytes)
                decoded += 1
                XCTAssertEqual(BTSnoopWriter.encode(file), bytes, "round \(round)")
                for packet in file.loggedPackets() { _ = try? HCIPacket(h4: packet.frame) }
            } catch let error as BTSnoopError {
                refused += 1
                XCTAssertTrue((0...bytes.count).contains(error.offset), "round \(round): \(error) outside \(bytes.count) octets")
                XCTAssertFalse(error.description.isEmpty)
            } catch {
                XCTFail("round \(round): untyped error \(error)")
            }
        }
        // Both outcomes were exercised.
        XCTAssertGreaterThan(decoded, 30)
        XCTAssertGreaterThan(refused, 30)
    }

    private func mutate(_ bytes: inout [UInt8], _ random: inout SeededRandom) {
        func index() -> Int { bytes.isEmpty ? 0 : Int(random.int(in: 0...Int64(bytes.count - 1))) }
        func octet() -> UInt8 { UInt8(truncatingIfNeeded: random.next()) }
        switch random.int(in: 0...7) {
        case 0 where !bytes.isEmpty: bytes[index()] ^= 1 << UInt8(random.int(in: 0...7))       // flip a bit
        case 1 where !bytes.isEmpty: bytes[index()] = octet()                                   // replace an octet
        case 2: bytes.insert(octet(), at: bytes.isEmpty ? 0 : index())                          // insert
        case 3 where !bytes.isEmpty: bytes.remove(at: index())                                  // delete
        case 4: bytes = Array(bytes.prefix(index()))                                            // truncate
        case 5 where bytes.count > 4:                                                           // a random 32-bit field
            let at = index() & ~3
            let value = random.next()
            for i in 0..<4 where at + i < bytes.count { bytes[at + i] = UInt8(truncatingIfNeeded: value >> UInt64(8 * i)) }
        case 6 where bytes.count > 40:                                                          // a length field of record 1
            let at = 16 + 4 * Int(random.int(in: 0...1))
            let small = UInt32(random.int(in: 0...80))
            bytes[at] = 0; bytes[at + 1] = 0; bytes[at + 2] = UInt8(small >> 8); bytes[at + 3] = UInt8(small & 0xff)
        default:                                                                                // duplicate a slice
            guard bytes.count > 2 else { return }
            let start = index()
            let end = min(bytes.count, start + Int(random.int(in: 1...40)))
            bytes.insert(contentsOf: bytes[start..<end], at: index())
        }
    }
}

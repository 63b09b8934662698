import BLELabTestSupport
import CaptureImport
import HCI
import ScenarioFormat
import Transport
import XCTest

/// Damaged captures read tolerantly (`blelab import` without `--strict`, docs/import.md "Damaged
/// captures"): synthetic files in btsnoop, PacketLogger and pcapng, built here from the frames of
/// the HM-10 seed's central capture with one defect each — a trailing octet after a valid event, a
/// garbled HCI packet in the middle, an unknown packet type, a final record cut short. Each checks
/// what is kept (the scenario the clean capture gives), what is reported (record, offset, why; in
/// the header's "Not reproduced" and on standard error), and that `--strict` still stops with the
/// error it always gave.
final class TolerantReadingTests: XCTestCase {
    enum Format: String, CaseIterable { case btsnoop, packetLogger, pcapng }

    /// One record to write: an H4 frame, or (PacketLogger) a record of a raw type.
    struct Frame {
        var time: Int64
        var direction: HCIDirection
        var bytes: [UInt8]
        /// PacketLogger only: the record type to write instead of the frame's.
        var rawType: UInt8?
    }

    var frames: [Frame] = []

    override func setUpWithError() throws {
        let capture = try centralCapture(runWithCaptures(try loadScenario("scenarios/seeds/hm10-serial.yaml")))
        frames = try BTSnoopReader.decode(capture).records.compactMap { r in
            r.h4Frame.map { Frame(time: BTSnoopTime.unixMicroseconds(of: r.timestamp), direction: r.direction, bytes: $0) }
        }
    }

    /// `frames` as a file of `format`, with where each record starts.
    static func write(_ frames: [Frame], as format: Format) -> (bytes: [UInt8], offsets: [Int]) {
        var out: [UInt8] = []
        var offsets: [Int] = []
        switch format {
        case .btsnoop:
            out = BTSnoopWriter.header()
            for f in frames {
                offsets.append(out.count)
                let type = f.bytes.first ?? 0
                let flags: UInt32 = (f.direction == .controllerToHost ? 1 : 0) | (type == 0x01 || type == 0x04 ? 2 : 0)
                out += BTSnoopWriter.encode(BTSnoopFile(datalink: .hciUART, records: [
                    BTSnoopRecord(datalink: .hciUART, timestamp: f.time + BTSnoopTime.unixEpoch, flags: flags,
                                  originalLength: UInt32(f.bytes.count), data: f.bytes),
                ])).dropFirst(16)
            }
        case .packetLogger:
            // Length, seconds, microseconds (big-endian, as macOS writes them), type, packet.
            for f in frames {
                offsets.append(out.count)
                let type: UInt8
                if let raw = f.rawType {
                    type = raw
                } else {
                    switch (f.bytes.first, f.direction) {
                    case (0x01?, _): type = 0x00
                    case (0x04?, _): type = 0x01
                    case (0x02?, .hostToController): type = 0x02
                    default: type = 0x03
                    }
                }
                let packet = Array(f.bytes.dropFirst())
                out += PcapTests.u32(UInt32(9 + packet.count), true) + PcapTests.u32(UInt32(f.time / 1_000_000), true)
                    + PcapTests.u32(UInt32(f.time % 1_000_000), true) + [type] + packet
            }
        case .pcapng:
            out = PcapTests.shb(false) + PcapTests.idb(linkType: 201, false)
            for f in frames {
                offsets.append(out.count)
                out += PcapTests.epb(interface: 0, timestamp: UInt64(f.time), PcapTests.phdr(f.direction, f.bytes), false)
            }
        }
        return (out, offsets)
    }

    /// The index of the first frame `matching`.
    func index(_ what: String, _ matching: ([UInt8]) -> Bool) throws -> Int {
        try XCTUnwrap(frames.firstIndex { matching($0.bytes) }, "no \(what) in the capture")
    }

    /// The scenario as `Scenario` compares it (the header comment is not part of it).
    func cleanImport(_ frames: [Frame], _ format: Format) throws -> CaptureImporter.Result {
        try CaptureImporter.importCapture(Self.write(frames, as: format).bytes, source: "capture", strict: true)
    }

    /// Checks a tolerant import of `bytes`: the scenario is `expected`'s, `skipped` is what it
    /// lists, and each is in the header's "Not reproduced".
    func checkTolerant(_ bytes: [UInt8], _ format: Format, expected: CaptureImporter.Result, skipped: [SkippedRecord],
                       file: StaticString = #filePath, line: UInt = #line) throws -> CaptureImporter.Result {
        let result = try CaptureImporter.importCapture(bytes, source: "capture")
        XCTAssertEqual(result.file.skipped, skipped, "\(format)", file: file, line: line)
        XCTAssertEqual(result.scenario, expected.scenario, "\(format): the scenario differs from the clean capture's", file: file, line: line)
        let header = result.yaml.split(separator: "\n").prefix { $0.hasPrefix("#") }.joined(separator: "\n")
        XCTAssertTrue(header.contains("# Not reproduced:"), "\(format): \(header)", file: file, line: line)
        for s in skipped {
            XCTAssertTrue(header.contains("#   - \(s)"), "\(format): '\(s)' is not in the header:\n\(header)", file: file, line: line)
        }
        try loadWritten(result, label: "\(format)", file: file, line: line)
        return result
    }

    // MARK: A trailing octet after a valid event

    /// The issue's capture: a Disconnection Complete (Core 5.4, Vol 4, Part E, 7.7.5: Status,
    /// Connection_Handle, Reason) whose Parameter_Total_Length says 5 and which carries one more
    /// octet: `04 05 05 00 hh hh 13 XX`. Strict, the record aborted the import with "1 unexpected
    /// trailing octet(s) at offset 7"; tolerant, the event is kept (the link ends there, as in
    /// the clean capture) and the octet reported.
    func testATrailingOctetAfterAValidEventKeepsTheEvent() throws {
        let k = try index("Disconnection Complete") { $0.count == 7 && $0[0] == 0x04 && $0[1] == 0x05 }
        var damaged = frames
        damaged[k].bytes[2] = 5
        damaged[k].bytes.append(0xEE)
        for format in Format.allCases {
            let (bytes, offsets) = Self.write(damaged, as: format)
            let expected = try cleanImport(frames, format)
            let result = try CaptureImporter.importCapture(bytes, source: "capture")
            let reason = try XCTUnwrap(result.file.skipped.first?.reason)
            XCTAssertTrue(reason.hasPrefix("1 unexpected trailing octet(s) at offset 7; the packet's length field counts them; "
                                           + "the packet without them: Disconnection Complete status success handle 0x"), reason)
            _ = try checkTolerant(bytes, format, expected: expected, skipped: [
                SkippedRecord(record: k + 1, offset: offsets[k], outcome: .keptWithoutTrailingOctets(1), reason: reason),
            ])
            XCTAssertNotNil(result.transcript.connections.first?.disconnected, "\(format)")
            XCTAssertThrowsError(try CaptureImporter.importCapture(bytes, source: "capture", strict: true), "\(format)") { error in
                XCTAssertEqual(error as? CaptureError, .malformedPacket(record: k + 1, offset: offsets[k], detail: "1 unexpected trailing octet(s) at offset 7"))
            }
        }
    }

    /// A record longer than its packet: the event's own length is right and one more octet follows
    /// it in the record (Vol 4, Part E, 5.4.4: the length counts the parameters). Kept without it.
    func testARecordLongerThanItsPacketKeepsThePacket() throws {
        let k = try index("Disconnection Complete") { $0.count == 7 && $0[0] == 0x04 && $0[1] == 0x05 }
        var damaged = frames
        damaged[k].bytes += [0xEE, 0xEF]
        for format in Format.allCases {
            let (bytes, offsets) = Self.write(damaged, as: format)
            let result = try CaptureImporter.importCapture(bytes, source: "capture")
            XCTAssertEqual(result.file.skipped.map(\.outcome), [.keptWithoutTrailingOctets(2)], "\(format)")
            XCTAssertEqual(result.file.skipped.first?.offset, offsets[k])
            XCTAssertEqual(result.scenario, try cleanImport(frames, format).scenario, "\(format)")
            XCTAssertThrowsError(try CaptureImporter.importCapture(bytes, source: "capture", strict: true)) { error in
                guard case .malformedPacket(k + 1, offsets[k], _)? = error as? CaptureError else { return XCTFail("\(format): \(error)") }
            }
        }
    }

    // MARK: A garbled packet in the middle

    /// A Number Of Completed Packets event whose Num_Handles says 2 where one handle follows
    /// (Vol 4, Part E, 7.7.19): it does not decode, so it is skipped; nothing the importer uses was
    /// in it, and the rest of the capture imports as the clean one does.
    func testAGarbledPacketInTheMiddleIsSkipped() throws {
        let k = try index("Number Of Completed Packets") { $0.count == 8 && $0[0] == 0x04 && $0[1] == 0x13 && $0[3] == 1 }
        var damaged = frames
        damaged[k].bytes[3] = 2
        for format in Format.allCases {
            let (bytes, offsets) = Self.write(damaged, as: format)
            let reason = "the HCI packet does not decode: length mismatch in Number Of Completed Packets (Num_Handles 2): declared 8, actual 4"
            _ = try checkTolerant(bytes, format, expected: try cleanImport(frames, format), skipped: [
                SkippedRecord(record: k + 1, offset: offsets[k], outcome: .skipped, reason: reason),
            ])
            XCTAssertThrowsError(try CaptureImporter.importCapture(bytes, source: "capture", strict: true)) { error in
                XCTAssertEqual(error as? CaptureError, .malformedPacket(
                    record: k + 1, offset: offsets[k], detail: "length mismatch in Number Of Completed Packets (Num_Handles 2): declared 8, actual 4"))
            }
        }
    }

    // MARK: An unknown packet type

    /// A record of an unknown type after the first command: an H4 indicator 0x07 (btsnoop 1002,
    /// pcapng 201: Vol 4, Part A, 2 defines 0x01-0x05), a record type 0x42 (PacketLogger, which
    /// writes 0x00-0x03, 0x08-0x0B and 0xF7-0xFE). Skipped and listed; the rest imports.
    /// PacketLogger's unknown record types never stopped an import, so `--strict` skips them too,
    /// and lists them.
    func testAnUnknownPacketTypeIsSkipped() throws {
        var damaged = frames
        damaged.insert(Frame(time: frames[1].time, direction: .controllerToHost, bytes: [0x07, 0xAA, 0xBB], rawType: 0x42), at: 1)
        for format in Format.allCases {
            let (bytes, offsets) = Self.write(damaged, as: format)
            let expected = try cleanImport(frames, format)
            let reason = format == .packetLogger
                ? "its record type, type 0x42, is none PacketLogger is known to write"
                : "the HCI packet does not decode: unknown H4 packet indicator 0x7 at offset 0"
            let result = try CaptureImporter.importCapture(bytes, source: "capture")
            XCTAssertEqual(result.file.skipped, [SkippedRecord(record: 2, offset: offsets[1], outcome: .skipped, reason: reason)], "\(format)")
            // Record numbers after it move by one; the scenario is the same but for them.
            XCTAssertEqual(result.scenario.peripherals, expected.scenario.peripherals, "\(format)")
            XCTAssertEqual(result.scenario.steps.map(\.action), expected.scenario.steps.map(\.action), "\(format)")
            XCTAssertTrue(result.yaml.contains("#   - record 2 at offset \(offsets[1]) skipped: \(reason)"), "\(format)")
            if format == .packetLogger {
                XCTAssertEqual(try CaptureImporter.importCapture(bytes, source: "capture", strict: true).file.skipped, result.file.skipped)
            } else {
                XCTAssertThrowsError(try CaptureImporter.importCapture(bytes, source: "capture", strict: true)) { error in
                    XCTAssertEqual(error as? CaptureError, .malformedPacket(record: 2, offset: offsets[1], detail: "unknown H4 packet indicator 0x7 at offset 0"))
                }
            }
        }
    }

    // MARK: A final record cut short

    /// The file ends inside its last record (a capture copied while still being written): the
    /// framing is broken there, the records before it are kept, and the rest of the file is
    /// reported from the record's offset.
    func testATruncatedFinalRecordKeepsTheRecordsBeforeIt() throws {
        for format in Format.allCases {
            let (whole, offsets) = Self.write(frames, as: format)
            let last = offsets[offsets.count - 1]
            let bytes = Array(whole.dropLast(2))   // the last record but for its last two octets
            let expected = try cleanImport(Array(frames.dropLast()), format)
            let result = try CaptureImporter.importCapture(bytes, source: "capture")
            XCTAssertEqual(result.file.skipped.count, 1, "\(format): \(result.file.skipped)")
            let skipped = try XCTUnwrap(result.file.skipped.first)
            XCTAssertEqual(skipped.offset, last, "\(format)")
            XCTAssertEqual(skipped.outcome, .restOfFileNotRead(octets: bytes.count - last), "\(format)")
            XCTAssertEqual(skipped.record, format == .pcapng ? nil : frames.count, "\(format)")
            XCTAssertEqual(result.file.packets.count, frames.count - 1, "\(format)")
            XCTAssertEqual(result.scenario, expected.scenario, "\(format)")
            XCTAssertTrue(result.yaml.contains("#   - \(skipped)"), "\(format)")
            // The reason is the error --strict gives: the record's header or data cut short.
            XCTAssertThrowsError(try CaptureImporter.importCapture(bytes, source: "capture", strict: true)) { error in
                XCTAssertEqual((error as? CaptureError)?.description, skipped.reason, "\(format)")
                switch error as? CaptureError {
                case .btsnoop(.truncatedRecordData(_, _, last + 24))?, .packetLogger(.truncatedRecordData(_, _, last + 13))?,
                     .pcap(.truncatedBlock(_, _, _, last))?:
                    break
                default: XCTFail("\(format): \(error)")
                }
            }
        }
    }

    // MARK: Records of the file's framing that hold no packet

    /// pcapng: a packet block naming an interface its section never described, and one too short
    /// for link type 201's direction header; btsnoop 1002: a record with no octet at all. The
    /// blocks' and records' lengths hold, so each is skipped by its length and the rest is read.
    func testPacketBlocksAndRecordsWithoutAPacketAreSkippedByTheirLength() throws {
        let (whole, offsets) = Self.write(frames, as: .pcapng)
        let badInterface = PcapTests.epb(interface: 5, timestamp: UInt64(frames[1].time), PcapTests.phdr(.hostToController, [0x01]), false)
        let tooShort = PcapTests.epb(interface: 0, timestamp: UInt64(frames[1].time), [0, 0, 0], false)
        let at = offsets[1]
        let bytes = Array(whole[0..<at]) + badInterface + tooShort + Array(whole[at...])
        let result = try CaptureImporter.importCapture(bytes, source: "capture")
        XCTAssertEqual(result.file.skipped, [
            SkippedRecord(record: nil, offset: at, outcome: .skipped, reason: "pcapng: block 4 at offset \(at) names interface 5, but its section describes 1"),
            SkippedRecord(record: 2, offset: at + badInterface.count, outcome: .skipped, reason: "3 octets, too short for link type 201 (BLUETOOTH_HCI_H4_WITH_PHDR)'s header (needs 5)"),
        ])
        XCTAssertEqual(result.file.packets.count, frames.count)
        XCTAssertEqual(result.scenario.peripherals, try cleanImport(frames, .pcapng).scenario.peripherals)
        XCTAssertThrowsError(try CaptureImporter.importCapture(bytes, source: "capture", strict: true)) { error in
            XCTAssertEqual(error as? CaptureError, .pcap(.unknownInterface(block: 4, interface: 5, interfaces: 1, at: at)))
        }

        var empty = frames
        empty.insert(Frame(time: frames[1].time, direction: .controllerToHost, bytes: []), at: 1)
        let (btsnoop, starts) = Self.write(empty, as: .btsnoop)
        let strict = try CaptureImporter.importCapture(btsnoop, source: "capture", strict: true)
        XCTAssertEqual(strict.file.skipped, [SkippedRecord(record: 2, offset: starts[1], outcome: .skipped, reason: "the record is empty (no H4 packet indicator)")])
        XCTAssertTrue(strict.yaml.contains("#   - record 2 at offset \(starts[1]) skipped: the record is empty (no H4 packet indicator)"))
    }

    // MARK: Time

    /// iOS writes PacketLogger's note and config records when logging is set up, days before the
    /// packets (a real iPhone capture's notes are 5.8 days older): time counts from the first
    /// packet, so the packets keep their spacing instead of each being "more than a day late".
    func testTimeCountsFromTheFirstPacketNotFromOlderNotes() throws {
        let sixDays: Int64 = 6 * 86_400 * 1_000_000
        var withNote = frames
        withNote.insert(Frame(time: frames[0].time - sixDays, direction: .controllerToHost, bytes: [0x00] + Array("note".utf8), rawType: 0xFC), at: 0)
        let file = try CaptureFile.decode(Self.write(withNote, as: .packetLogger).bytes)
        XCTAssertEqual(file.clockAdjustments, [])
        XCTAssertEqual(file.packets.first?.time, 0)
        XCTAssertEqual(file.packets.map(\.time), try CaptureFile.decode(Self.write(frames, as: .packetLogger).bytes).packets.map(\.time))
    }

    // MARK: The command line

    /// `blelab import` lists what it skipped on standard error (counts, the first five, a pointer
    /// to the header for the rest) and writes the scenario; `--strict` exits 2 with the error.
    func testTheCommandLineReportsTheSkippedAndStrictExitsTwo() throws {
        let directory = try temporaryDirectory()
        defer { removeTree(directory) }
        var damaged = frames
        // Seven unknown packets, then a trailing octet after the Disconnection Complete.
        for i in 0..<7 { damaged.insert(Frame(time: frames[1].time, direction: .controllerToHost, bytes: [0x07, UInt8(i)]), at: 1) }
        let k = try XCTUnwrap(damaged.firstIndex { $0.bytes.count == 7 && $0.bytes[0] == 0x04 && $0.bytes[1] == 0x05 })
        damaged[k].bytes[2] = 5
        damaged[k].bytes.append(0xEE)
        let (bytes, offsets) = Self.write(damaged, as: .btsnoop)
        let path = directory + "/damaged.btsnoop"
        try FileText.write(bytes, to: path)
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["import", path]), .passed, cli.err)
        XCTAssertNoThrow(try Scenario.parse(cli.out, file: "out.yaml"))
        let lines = cli.err.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "blelab: \(path): 7 records skipped, 1 kept without its trailing octets (--strict stops at the first instead):")
        XCTAssertEqual(lines.count, 7, cli.err)
        XCTAssertEqual(lines[1], "  record 2 at offset \(offsets[1]) skipped: the HCI packet does not decode: unknown H4 packet indicator 0x7 at offset 0")
        XCTAssertEqual(lines.last, "  … and 3 more: the scenario's header lists them all under \"Not reproduced\"")
        for i in 1...8 { XCTAssertTrue(cli.out.contains("record \(i == 8 ? k + 1 : i + 1) at offset \(offsets[i == 8 ? k : i])"), "\(i)") }

        XCTAssertEqual(cli.run(["import", "--strict", path]), .badInput)
        XCTAssertEqual(cli.out, "")
        XCTAssertEqual(cli.err, "blelab: \(path): record 2 at offset \(offsets[1]): the HCI packet does not decode: unknown H4 packet indicator 0x7 at offset 0\n")
    }

    /// A file that is none of the formats is still refused, tolerant or not.
    func testAnUnrecognisedFileIsStillRefused() {
        for strict in [false, true] {
            XCTAssertThrowsError(try CaptureImporter.importCapture(Array("GIF89a, not a capture".utf8), source: "x", strict: strict)) { error in
                XCTAssertTrue("\(error)".hasPrefix("not a btsnoop, PacketLogger, pcap or pcapng file"), "\(error)")
            }
        }
        // A btsnoop header and a first record cut short: nothing is readable.
        let cut = Array(Self.write(frames, as: .btsnoop).bytes.prefix(16 + 10))
        XCTAssertThrowsError(try CaptureImporter.importCapture(cut, source: "x")) { error in
            XCTAssertEqual(error as? CaptureError, .btsnoop(.truncatedRecordHeader(available: 10, at: 16)))
        }
    }
}

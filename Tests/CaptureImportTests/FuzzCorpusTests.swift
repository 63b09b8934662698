import BLELabTestSupport
import CaptureImport
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// A corpus of damaged captures, made here from real ones with a seeded generator: each file that
/// is damaged by construction (cut inside a record, a length field past the end or beyond any HCI
/// packet, a broken magic, version or datalink) must make `blelab import --strict` exit 2 naming an
/// offset, and `blelab import` (tolerant) either import what comes before the damage, listing it
/// with its offset, or exit 2 naming one; each file with random flipped octets must either import
/// (to a scenario that validates) or exit 2.
/// None may crash or hang: the test finishing is the proof.
final class FuzzCorpusTests: XCTestCase {
    /// SplitMix64: small, seeded, the same on every machine.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(1, n))) }
    }

    enum Kind: String { case malformed, flipped }

    struct Base {
        var name: String
        var bytes: [UInt8]
        var pklg: Bool
        /// Start of every record.
        var records: [Int]
    }

    static func recordStarts(btsnoop bytes: [UInt8]) -> [Int] {
        var out: [Int] = []
        var offset = 16
        while offset + 24 <= bytes.count {
            out.append(offset)
            offset += 24 + (Int(bytes[offset + 4]) << 24 | Int(bytes[offset + 5]) << 16 | Int(bytes[offset + 6]) << 8 | Int(bytes[offset + 7]))
        }
        return out
    }

    static func recordStarts(pklg bytes: [UInt8]) throws -> [Int] {
        try PacketLoggerReader.decode(bytes).records.map(\.offset)
    }

    static func bases() throws -> [Base] {
        func capture(_ file: String) throws -> [UInt8] { try centralCapture(runWithCaptures(try loadScenario(file))) }
        let hm10 = try capture("scenarios/seeds/hm10-serial.yaml")
        let battery = try capture("scenarios/seeds/battery-level.yaml")
        let scanner = try capture("scenarios/seeds/ble-scanner.yaml")
        let curtain = try reencode(try capture("scenarios/seeds/smart-curtain.yaml"), as: .hciUnencapsulated)
        let clone = try reencode(try capture("scenarios/seeds/hm10-with-write.yaml"), as: .linuxMonitor)
        let pklgBE = try packetLogger(hm10, bigEndian: true)
        let pklgLE = try packetLogger(try capture("scenarios/regressions/unsubscribe-stops-notifications.yaml"), bigEndian: false)
        return [
            Base(name: "hm10-1002", bytes: hm10, pklg: false, records: Self.recordStarts(btsnoop: hm10)),
            Base(name: "battery-1002", bytes: battery, pklg: false, records: Self.recordStarts(btsnoop: battery)),
            Base(name: "scanner-1002", bytes: scanner, pklg: false, records: Self.recordStarts(btsnoop: scanner)),
            Base(name: "curtain-1001", bytes: curtain, pklg: false, records: Self.recordStarts(btsnoop: curtain)),
            Base(name: "clone-2001", bytes: clone, pklg: false, records: Self.recordStarts(btsnoop: clone)),
            Base(name: "hm10-pklg-be", bytes: pklgBE, pklg: true, records: try Self.recordStarts(pklg: pklgBE)),
            Base(name: "unsubscribe-pklg-le", bytes: pklgLE, pklg: true, records: try Self.recordStarts(pklg: pklgLE)),
        ]
    }

    func put32(_ value: UInt32, into bytes: inout [UInt8], at offset: Int, bigEndian: Bool = true) {
        let octets = [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        for i in 0..<4 { bytes[offset + i] = bigEndian ? octets[i] : octets[3 - i] }
    }

    /// The corpus: (name, bytes, kind), the same on every run.
    func corpus() throws -> [(String, [UInt8], Kind)] {
        var out: [(String, [UInt8], Kind)] = []
        var g = Generator(state: 0x00B1_E1AB_0006)
        for base in try Self.bases() {
            let b = base.bytes
            let bigEndian = try !base.pklg || PacketLoggerReader.decode(b).bigEndian
            // Truncations strictly inside a record (or inside the btsnoop file header).
            var cuts = 0
            while cuts < 12 {
                let cut = 1 + g.below(b.count - 1)
                if base.records.contains(cut) { continue }
                out.append(("\(base.name)-cut-\(cut)", Array(b.prefix(cut)), .malformed))
                cuts += 1
            }
            // Length fields corrupted.
            for i in 0..<8 {
                let r = base.records[g.below(base.records.count)]
                var bytes = b
                if base.pklg {
                    let choices: [UInt32] = [UInt32(g.below(9)), UInt32(PacketLoggerReader.maximumRecordLength + 1 + g.below(1000)),
                                             UInt32(b.count - r - 4 + 1 + g.below(100))]
                    put32(choices[i % 3], into: &bytes, at: r, bigEndian: bigEndian)
                } else {
                    switch i % 3 {
                    case 0:   // included (and original) past the end of the file
                        let n = UInt32(b.count - r - 24 + 1 + g.below(500))
                        put32(n, into: &bytes, at: r)
                        put32(n, into: &bytes, at: r + 4)
                    case 1:   // included more than original
                        let original = UInt32(g.below(Int(bytes[r + 7]) + 1))
                        put32(original, into: &bytes, at: r)
                        put32(original + 1 + UInt32(g.below(10)), into: &bytes, at: r + 4)
                    default:  // longer than any HCI packet
                        put32(UInt32(BTSnoopReader.maximumRecordLength + 1 + g.below(1 << 20)), into: &bytes, at: r)
                    }
                }
                out.append(("\(base.name)-length-\(i)-at-\(r)", bytes, .malformed))
            }
            // Header corrupted: magic, version, datalink (btsnoop); the first length (PacketLogger).
            for i in 0..<4 {
                var bytes = b
                if base.pklg {
                    put32(UInt32(0x0100_0000) | UInt32(g.below(0xFF_FFFF)), into: &bytes, at: 0, bigEndian: true)
                    bytes[0] = 0x7F
                    bytes[3] = 0x7F
                } else {
                    switch i {
                    case 0, 1:
                        let at = g.below(8)
                        bytes[at] ^= UInt8(1 + g.below(255))
                    case 2: put32(2 + UInt32(g.below(100)), into: &bytes, at: 8)
                    default: put32([1003, 1004, 2002, 0][g.below(4)], into: &bytes, at: 12)
                    }
                }
                out.append(("\(base.name)-header-\(i)", bytes, .malformed))
            }
            // Random octets flipped after the header.
            for i in 0..<12 {
                var bytes = b
                let first = base.pklg ? 0 : 16
                for _ in 0..<(1 + g.below(8)) {
                    let at = first + g.below(b.count - first)
                    bytes[at] ^= UInt8(1 + g.below(255))
                }
                out.append(("\(base.name)-flip-\(i)", bytes, .flipped))
            }
        }
        return out
    }

    func testTheCorpusGivesErrorsWithOffsetsOrScenariosNeverACrash() throws {
        let files = try corpus()
        XCTAssertGreaterThanOrEqual(files.count, 200)
        XCTAssertEqual(Set(files.map(\.0)).count, files.count, "corpus names are unique")
        let directory = try temporaryDirectory()
        defer { removeTree(directory) }
        let cli = CLIHarness()
        var imported = 0
        var refused = 0
        var tolerated = 0
        for (name, bytes, kind) in files {
            let path = "\(directory)/\(name).capture"
            try FileText.write(bytes, to: path)
            if kind == .malformed {
                XCTAssertEqual(cli.run(["import", "--strict", path]), .badInput, "\(name) imported:\n\(cli.out)")
                XCTAssertTrue(cli.err.contains("offset"), "\(name): \(cli.err)")
                XCTAssertEqual(cli.out, "", name)
            }
            let status = cli.run(["import", path])
            XCTAssertFalse(cli.err.contains("does not validate"), "\(name): the importer wrote an invalid scenario:\n\(cli.err)")
            switch kind {
            case .malformed:
                // Tolerant: what comes before the damage, with the damage listed; or exit 2.
                XCTAssertTrue(cli.err.contains("offset"), "\(name): \(cli.err)")
                if status == .passed {
                    tolerated += 1
                    XCTAssertTrue(cli.out.contains("Not reproduced:"), name)
                    XCTAssertNoThrow(try Scenario.parse(cli.out, file: name), name)
                } else {
                    XCTAssertEqual(status, .badInput, name)
                    XCTAssertEqual(cli.out, "", name)
                }
            case .flipped:
                XCTAssertTrue(status == .passed || status == .badInput, "\(name): \(status)")
                if status == .passed {
                    imported += 1
                    XCTAssertTrue(cli.out.hasPrefix("# Imported by `blelab import`"), name)
                    XCTAssertNoThrow(try Scenario.parse(cli.out, file: name), name)
                } else {
                    refused += 1
                    XCTAssertTrue(cli.err.hasPrefix("blelab: \(path): "), "\(name): \(cli.err)")
                }
            }
        }
        print("fuzz corpus: \(files.count) files; of the flipped ones \(imported) imported, \(refused) refused with a typed error; "
              + "\(tolerated) damaged ones imported in part")
    }

    /// Every malformed file's error is the same typed value when decoded directly, and names an
    /// offset inside the file; read tolerantly, it imports what comes before the damage, which is
    /// listed with an offset inside the file, or gives that error.
    func testMalformedFilesThrowCaptureErrorsWithOffsetsInsideTheFile() throws {
        for (name, bytes, kind) in try corpus() where kind == .malformed {
            do {
                _ = try CaptureImporter.importCapture(bytes, source: name, strict: true)
                XCTFail("\(name) imported")
            } catch let error as CaptureError {
                XCTAssertLessThanOrEqual(error.offset, bytes.count, "\(name): \(error)")
                XCTAssertGreaterThanOrEqual(error.offset, 0, name)
            }
            do {
                let result = try CaptureImporter.importCapture(bytes, source: name)
                XCTAssertFalse(result.file.skipped.isEmpty, "\(name): the damage is not listed")
                for s in result.file.skipped {
                    XCTAssertTrue((0..<bytes.count).contains(s.offset), "\(name): \(s)")
                    XCTAssertTrue(result.yaml.contains(s.description), "\(name): \(s) is not in the header")
                }
                XCTAssertNoThrow(try loadWritten(result, label: name))
            } catch let error as CaptureError {
                XCTAssertLessThanOrEqual(error.offset, bytes.count, "\(name): \(error)")
            }
        }
    }
}

extension FuzzCorpusTests {
    /// More flips, in process (without files): whatever imports must give a scenario that loads.
    /// The seed found the cases the importer now handles: private random addresses, a UUID
    /// discovered twice, control characters in names, a characteristic moved into GAP's service.
    func testAThousandFlippedCapturesImportToValidScenariosOrFailTyped() throws {
        var g = Generator(state: 99)
        var imported = 0
        var refused = 0
        for base in try Self.bases() {
            for n in 0..<150 {
                var bytes = base.bytes
                let first = base.pklg ? 0 : 16
                for _ in 0..<(1 + g.below(4)) {
                    let at = first + g.below(bytes.count - first)
                    bytes[at] ^= UInt8(1 + g.below(255))
                }
                do {
                    let result = try CaptureImporter.importCapture(bytes, source: "\(base.name)-\(n)")
                    XCTAssertNoThrow(try loadWritten(result, label: "\(base.name) flip \(n)"))
                    imported += 1
                } catch is CaptureError {
                    refused += 1
                }
            }
        }
        XCTAssertEqual(imported + refused, 1050)
        print("flips: \(imported) imported, \(refused) refused")
    }
}

extension FuzzCorpusTests {
    /// The captures of scenarios/field, central's and peripheral's, with octets flipped in their
    /// HCI packets: what a hostile or broken device puts in a capture reaches the flaw and fault
    /// analysis (late, missing, damaged answers, Service Changed ranges, parameter updates, link
    /// ends). Whatever imports must give a scenario that loads; the rest is a typed error.
    func testFlippedFieldCapturesImportToValidScenariosOrFailTyped() throws {
        var g = Generator(state: 17)
        var imported = 0
        var refused = 0
        var bases: [(String, [UInt8])] = []
        for path in repositoryScenarioFiles() where path.contains("/scenarios/field/") {
            let run = runWithCaptures(try Scenario.load(path: path))
            for c in run.captures { bases.append(("\(path.split(separator: "/").last!)/\(c.device)", BTSnoopWriter.encode(c.packets))) }
        }
        XCTAssertGreaterThanOrEqual(bases.count, 30)
        for (name, base) in bases {
            // Flips after the first connection's events, where the ATT and link traffic is.
            let records = Self.recordStarts(btsnoop: base)
            let from = records[min(records.count - 1, records.count / 3)]
            for n in 0..<40 {
                var bytes = base
                for _ in 0..<(1 + g.below(3)) {
                    let at = from + g.below(bytes.count - from)
                    bytes[at] ^= UInt8(1 + g.below(255))
                }
                do {
                    let result = try CaptureImporter.importCapture(bytes, source: "\(name)-\(n)")
                    XCTAssertNoThrow(try loadWritten(result, label: "\(name) flip \(n)"))
                    imported += 1
                } catch is CaptureError {
                    refused += 1
                }
            }
        }
        XCTAssertEqual(imported + refused, bases.count * 40)
        print("field flips: \(imported) imported, \(refused) refused")
    }
}

/// Values a broken device puts in a capture that the scenario format cannot hold as they are: the
/// import still writes a scenario that loads and replays, with the value sent as it was where
/// octets can carry it, and listed under "Not reproduced" where they cannot.
final class HostileValueImportTests: XCTestCase {
    /// The central's capture of a field scenario with the first `old` octets replaced by `new`.
    private func patched(_ name: String, _ old: [UInt8], _ new: [UInt8]) throws -> [UInt8] {
        var bytes = try centralCapture(runWithCaptures(try Scenario.load(path: repositoryRoot + "/scenarios/field/\(name).yaml")))
        let at = try XCTUnwrap((0...(bytes.count - old.count)).first { Array(bytes[$0..<$0 + old.count]) == old }, "\(old) not in the capture")
        bytes.replaceSubrange(at..<at + old.count, with: new)
        return bytes
    }

    private func importAndReplay(_ bytes: [UInt8], mentions: String, contains: String? = nil, replays: Bool = true) throws {
        let (result, scenario) = try importAndLoad(bytes, source: "hostile.btsnoop")
        XCTAssertTrue(result.yaml.contains(mentions), result.yaml)
        if let contains { XCTAssertTrue(result.yaml.contains(contains), result.yaml) }
        guard replays else { return }
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
    }

    func testANotificationOfHandleZeroIsSentAsItsOctets() throws {
        try importAndReplay(try patched("att-unknown-handle-notification", [0x1B, 0xF0, 0x00, 0xFF, 0xEE], [0x1B, 0x00, 0x00, 0xFF, 0xEE]),
                            mentions: "handle 0x0000, which no attribute has", contains: "{ send-pdu: hex:1b 00 00 ff ee }")
    }

    func testAServiceChangedRangeBackwardsIsIndicatedAsItsOctets() throws {
        try importAndReplay(try patched("att-service-changed", [0x1D, 0x08, 0x00, 0x0D, 0x00, 0x0F, 0x00], [0x1D, 0x08, 0x00, 0x0F, 0x00, 0x00, 0x00]),
                            mentions: "a range no handles have", contains: "{ indicate-handle: { handle: 0x0008, value: hex:0f 00 00 00 } }",
                            // The patched capture's central still re-discovered 0x000D-0x000F, which the
                            // backwards range does not name: no replay can do that, but the import loads.
                            replays: false)
    }

    /// A characteristic of the device's own service with the UUID of GAP's Device Name (2A00, which
    /// every simulated peripheral serves in 1800): the steps that name it must say which service.
    func testAUUIDTheLabAlsoServesIsNamedWithItsService() throws {
        // The Read By Type Response declaring 2A9D (properties 0xA3, value handle 0x000C).
        let (result, _) = try importAndLoad(try patched("gatt-mandatory-descriptors", [0xA3, 0x0C, 0x00, 0x9D, 0x2A], [0xA3, 0x0C, 0x00, 0x00, 0x2A]),
                                            source: "hostile.btsnoop")
        XCTAssertTrue(result.yaml.contains("- read: { characteristic: 181D/2A00, descriptor: 2900 }"), result.yaml)
        XCTAssertFalse(result.yaml.contains("characteristic: 2A00,"), result.yaml)
        let replay = ScenarioRunner().run(try Scenario.parse(result.yaml, file: "hostile.yaml"))
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
    }

    /// Descriptors a characteristic's properties do not announce (2900 without extended-properties,
    /// 2903 without broadcast, a CCCD without notify or indicate), which the lab does not lay out:
    /// no step names them, and a user description the lab keeps read-only is not written.
    func testDescriptorsThePropertiesDoNotAnnounceGetNoSteps() throws {
        // 2A9D's declaration with properties [read] instead of [broadcast, read, indicate, extended-properties].
        let (result, _) = try importAndLoad(try patched("gatt-mandatory-descriptors", [0xA3, 0x0C, 0x00, 0x9D, 0x2A], [0x02, 0x0C, 0x00, 0x9D, 0x2A]),
                                            source: "hostile.btsnoop")
        XCTAssertFalse(result.yaml.contains("descriptor: 2900"), result.yaml)
        XCTAssertFalse(result.yaml.contains("descriptor: 2903"), result.yaml)
        XCTAssertTrue(result.yaml.contains("which the scenario's characteristic does not have"), result.yaml)
        XCTAssertTrue(result.yaml.contains("which the device accepted and the lab's server refuses (write-not-permitted)"), result.yaml)
        let replay = ScenarioRunner().run(try Scenario.parse(result.yaml, file: "hostile.yaml"))
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
    }

    /// Two characteristics claiming one value handle (2A9D's declaration pointing at GAP's Device
    /// Name, 0x0003): the descriptors found after 2A9D are named as 2A9D's, not Device Name's.
    func testDescriptorsBelongToTheirOwnCharacteristicWhenValueHandlesCollide() throws {
        let (result, _) = try importAndLoad(try patched("gatt-mandatory-descriptors", [0xA3, 0x0C, 0x00, 0x9D, 0x2A], [0xA3, 0x03, 0x00, 0x9D, 0x2A]),
                                            source: "hostile.btsnoop")
        XCTAssertTrue(result.yaml.contains("- read: { characteristic: 2A9D, descriptor: 2900 }"), result.yaml)
        XCTAssertFalse(result.yaml.contains("characteristic: 2A00, descriptor"), result.yaml)
    }

    /// A CCCD write of a value no characteristic can take (a reserved bit), which the device
    /// accepted: the lab's server refuses it, so it has no step and is listed.
    func testACCCDValueTheLabRefusesIsListed() throws {
        let (result, _) = try importAndLoad(try patched("gatt-cccd-written-directly", [0x12, 0x0D, 0x00, 0x03, 0x00], [0x12, 0x0D, 0x00, 0x03, 0x01]),
                                            source: "hostile.btsnoop")
        XCTAssertTrue(result.yaml.contains("a write of hex:03 01 to FFF1's descriptor 2902, which the device accepted and the lab's server refuses (value-not-allowed)"),
                      result.yaml)
        XCTAssertFalse(result.yaml.contains("type: both"), result.yaml)
    }

    func testImpossibleConnectionParametersAreListed() throws {
        // LE Connection Update Complete: interval 1.25 ms, latency 500, timeout 10 ms.
        try importAndReplay(try patched("link-connection-update", [0x03, 0x00, 0x01, 0x00, 0x50, 0x00, 0x04, 0x00, 0x58, 0x02],
                                        [0x03, 0x00, 0x01, 0x00, 0x01, 0x00, 0xF4, 0x01, 0x01, 0x00]),
                            mentions: "parameters the specification does not allow")
    }
}

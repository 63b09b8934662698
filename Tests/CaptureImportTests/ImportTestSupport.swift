#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
import CaptureImport
import HCI
import BLELabCLI
import BLELabTestSupport
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// The repository's root, from this file's place in it.
let repositoryRoot: String = {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    parts.removeLast(3)   // Tests/CaptureImportTests/ImportTestSupport.swift
    return parts.joined(separator: "/")
}()

/// Runs `scenario` on the sim with every device's packets kept.
func runWithCaptures(_ scenario: Scenario) -> ScenarioResult {
    ScenarioRunner().run(scenario, options: RunOptions(keepsCaptures: true))
}

/// The central's capture of a run (the last device), as the btsnoop file `--capture` writes.
func centralCapture(_ result: ScenarioResult) throws -> [UInt8] {
    let central = try XCTUnwrap(result.captures.last, "the run kept no captures")
    XCTAssertEqual(central.device, "central")
    return BTSnoopWriter.encode(central.packets)
}

/// Loads a scenario file of the repository (`scenarios/seeds/hm10-serial.yaml`).
func loadScenario(_ relative: String) throws -> Scenario {
    try Scenario.load(path: repositoryRoot + "/" + relative)
}

/// Imports `bytes` and loads the scenario it wrote, as `blelab import` then `blelab run` would.
/// The scenario the text reads back as must be the one the importer built.
func importAndLoad(_ bytes: [UInt8], source: String = "capture.btsnoop", file: StaticString = #filePath,
                   line: UInt = #line) throws -> (CaptureImporter.Result, Scenario) {
    let result = try CaptureImporter.importCapture(bytes, source: source)
    return (result, try loadWritten(result, label: source, file: file, line: line))
}

/// The imported scenario's text read back: it must validate and be the scenario the importer
/// built (`ScenarioWriter` wrote it from that model).
@discardableResult
func loadWritten(_ result: CaptureImporter.Result, label: String, file: StaticString = #filePath, line: UInt = #line) throws -> Scenario {
    let loaded: Scenario
    do {
        loaded = try Scenario.parse(result.yaml, file: "imported-\(label).yaml")
    } catch {
        XCTFail("\(label): the imported scenario does not load: \(error)\n\(result.yaml)", file: file, line: line)
        throw error
    }
    XCTAssertEqual(loaded, result.scenario, "\(label): the text reads back as another scenario than the importer built:\n\(result.yaml)",
                   file: file, line: line)
    if loaded != result.scenario {
        for (a, b) in zip(loaded.steps, result.scenario.steps) where a != b {
            XCTFail("\(label): step \(a.index) '\(a.text)' is \(b.action) in the model", file: file, line: line)
            break
        }
        for (a, b) in zip(loaded.peripherals, result.scenario.peripherals) where a != b {
            XCTFail("\(label): peripheral \(a.id) reads back as \(a), built as \(b)", file: file, line: line)
        }
    }
    return loaded
}

/// The same capture as datalink 1001 (HCI un-encapsulated: the type in the flags) or 2001 (Linux
/// monitor, as btmon -w writes it, with a New Index and a System Note record first).
func reencode(_ btsnoop: [UInt8], as datalink: BTSnoopDatalink) throws -> [UInt8] {
    let file = try BTSnoopReader.decode(btsnoop)
    var records: [BTSnoopRecord] = []
    if datalink == .linuxMonitor, let first = file.records.first {
        let index: [UInt8] = [0x00, 0x00] + [0x11, 0x22, 0x33, 0x44, 0x55, 0x66] + Array("hci0".utf8) + [0, 0, 0, 0]
        records.append(BTSnoopRecord(datalink: datalink, timestamp: first.timestamp, flags: 0, originalLength: UInt32(index.count), data: index))
        let note = Array("Bluetooth daemon 5.66".utf8) + [0]
        records.append(BTSnoopRecord(datalink: datalink, timestamp: first.timestamp, flags: 12, originalLength: UInt32(note.count), data: note))
    }
    for r in file.records {
        guard let type = r.packetType else { continue }
        let data = Array(r.data.dropFirst())
        let flags: UInt32
        if datalink == .linuxMonitor {
            flags = UInt32(try XCTUnwrap(BTSnoopMonitorOpcode.carrying(type, direction: r.direction)).rawValue)
        } else {
            flags = (r.direction == .controllerToHost ? BTSnoopFlags.received : 0)
                | (type == .command || type == .event ? BTSnoopFlags.commandOrEvent : 0)
        }
        records.append(BTSnoopRecord(datalink: datalink, timestamp: r.timestamp, flags: flags, originalLength: UInt32(data.count), data: data))
    }
    return BTSnoopWriter.encode(BTSnoopFile(datalink: datalink, records: records))
}

/// The same capture as a PacketLogger file, with a note record first (PacketLogger writes them).
func packetLogger(_ btsnoop: [UInt8], bigEndian: Bool = true) throws -> [UInt8] {
    let file = try BTSnoopReader.decode(btsnoop)
    let frames = file.records.compactMap { r -> (unixMicroseconds: Int64, direction: HCIDirection, frame: [UInt8])? in
        guard let frame = r.h4Frame else { return nil }
        return (BTSnoopTime.unixMicroseconds(of: r.timestamp), r.direction, frame)
    }
    let start = frames.first?.unixMicroseconds ?? 0
    return PacketLoggerWriter.note("PacketLogger capture", unixMicroseconds: start, bigEndian: bigEndian)
        + PacketLoggerWriter.encode(frames, bigEndian: bigEndian)
}

/// Every scenario file under `scenarios/`, searched at test time (folders added later count too).
func repositoryScenarioFiles() -> [String] {
    ScenarioFiles.collect([repositoryRoot + "/scenarios"]).files
}

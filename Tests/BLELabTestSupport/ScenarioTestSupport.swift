#if canImport(Glibc)
import Glibc
#endif
import BLELab
import BLELabCLI
import BLERuntime
import ScenarioEngine
import ScenarioFormat
import XCTest

/// Scenario text → validated scenario, errors, or a run.
public enum ScenarioText {
    public static func load(_ text: String, file: String = "test.yaml") throws -> Scenario {
        try Scenario.parse(text, file: file)
    }

    /// Every error message of `text` (empty when it is valid).
    public static func errors(_ text: String, file: String = "test.yaml") -> [String] {
        do {
            _ = try Scenario.parse(text, file: file)
            return []
        } catch let e as ScenarioErrors {
            return e.errors.map(\.description)
        } catch {
            return ["\(error)"]
        }
    }

    public static func run(_ text: String, options: RunOptions = RunOptions(), file: String = "test.yaml") throws -> ScenarioResult {
        ScenarioRunner().run(try load(text, file: file), options: options)
    }

    /// A file around `central` steps with one HM-10-like peripheral (FFE0: FFE1 read/write-without-response/notify
    /// echoing writes, FFE2 write only, FFE3 read/indicate, FFE4 read/write/write-without-response).
    public static func hm10(_ central: String, extraPeripheral: String = "", header: String = "") -> String {
        """
        scenario: test
        \(header)
        peripherals:
          hm10:
            rssi: -48
            advertise: { name: HMSoft, services: [FFE0] }
            gatt:
              - service: FFE0
                characteristics:
                  - uuid: FFE1
                    properties: [read, write-without-response, notify]
                    value: text:ready
                    on-write:
                      - notify: FFE1
                        value: written
                  - { uuid: FFE2, properties: [write], value: hex:00 }
                  - { uuid: FFE3, properties: [read, indicate], value: u8:1 }
                  - { uuid: FFE4, properties: [read, write, write-without-response] }
        \(extraPeripheral)
        central:
        \(central)
        """
    }

    /// The usual opening: scan, connect, discover.
    public static let connected = """
          - scan: { for: 1s }
          - connect: hm10
          - discover: all
        """

    /// Tests/ScenarioEngineTests/Fixtures: the scenario files the runner's and the CLI's tests share.
    public static var fixtures: String {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(2)   // BLELabTestSupport/ScenarioTestSupport.swift
        return parts.joined(separator: "/") + "/ScenarioEngineTests/Fixtures"
    }
}

extension ScenarioResult {
    /// The failure's one-line summary, or "passed" / "skipped".
    public var verdict: String {
        switch outcome {
        case .passed: return "passed"
        case .skipped: return "skipped"
        case let .failed(f): return f.summary
        }
    }
}

/// `blelab` with an injected console and a fake wall clock (1 ms per reading); what it writes is
/// kept in `files` unless `writesFiles`.
public final class CLIHarness {
    public var out = ""
    public var err = ""
    private var clock: Int64 = 0
    public var files: [String: [UInt8]] = [:]
    /// The `--transport` values (the CLI's default: the sim only).
    public var transports: TransportOffer

    public init(transports: TransportOffer = .simOnly) {
        self.transports = transports
    }

    /// With `backend` for the `--transport` values (listed as the sim's in messages).
    public convenience init(backend: @escaping (String) throws -> ScenarioBackend?) {
        self.init(transports: TransportOffer(backend: backend))
    }

    public func run(_ arguments: [String], terminal: Bool = false, environment: [String: String] = [:], writesFiles: Bool = false) -> BLELabCLI.Status {
        out = ""
        err = ""
        let console = Console(out: { [unowned self] in self.out += $0 }, err: { [unowned self] in self.err += $0 },
                              isTerminal: terminal, environment: environment)
        var cli = BLELabCLI(console: console, wallClock: { [unowned self] in
            self.clock += 1_000_000
            return Instant(nanoseconds: self.clock)
        }, writeFile: { [unowned self] bytes, path in
            if writesFiles { try FileText.write(bytes, to: path) } else { self.files[path] = bytes }
        }, makeDirectory: { path in if writesFiles { try FileText.makeDirectories(path) } }, transports: transports)
        // Captures reach `files` only through writeFile: streamed only to real files.
        cli.streamsCaptures = writesFiles
        return cli.main(arguments)
    }

    public var outLines: [String] { out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
}

/// A JUnit file of `blelab run` with every `time` attribute (the wall times, the one part that
/// may differ between equal runs) blanked: for comparing everything else byte for byte.
public func junitWithoutWallTimes(_ bytes: [UInt8]) -> String {
    var text = String(decoding: bytes, as: UTF8.self)
    var out = ""
    while let range = text.range(of: " time=\"") {
        out += text[..<range.upperBound]
        text = String(text[range.upperBound...])
        guard let close = text.firstIndex(of: "\"") else { break }
        XCTAssertTrue(text[..<close].allSatisfy { $0.isNumber || $0 == "." }, "a time of seconds: \(text[..<close])")
        out += "W"
        text = String(text[close...])
    }
    return out + text
}

/// A fresh temporary directory.
public func temporaryDirectory() throws -> String {
    var template = Array("/tmp/blelab-tests-XXXXXX".utf8CString)
    let path: String? = template.withUnsafeMutableBufferPointer { buffer in
        guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
        return String(cString: base)
    }
    guard let path else { throw FileError(path: "/tmp", reason: "cannot create a temporary directory") }
    return path
}

/// `rm -r`, for the temporary directories tests make.
public func removeTree(_ path: String) {
    if FileText.kind(path) == .directory {
        for name in (try? FileText.entries(path)) ?? [] { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}

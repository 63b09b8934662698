import CaptureImport
import ScenarioFormat

/// `blelab import CAPTURE [-o FILE] [--strict]`: the capture's central side as a scenario;
/// `blelab import --summary CAPTURE`: what the capture holds, as text (docs/import.md).
public struct ImportArguments: Equatable {
    public var capture: String
    /// Nil: standard output.
    public var output: String?
    /// Stop at the first record that does not decode, as `blelab import` did before it read
    /// damaged captures tolerantly.
    public var strict: Bool
    /// Print what the capture holds instead of writing a scenario.
    public var summary: Bool
    /// `--controller N`: the controller (hciN) whose traffic a Linux monitor capture of several is read for.
    public var controller: UInt16?

    public init(capture: String, output: String? = nil, strict: Bool = false, summary: Bool = false, controller: UInt16? = nil) {
        self.capture = capture
        self.output = output
        self.strict = strict
        self.summary = summary
        self.controller = controller
    }

    static func parse(_ arguments: [String]) throws -> CLICommand {
        var capture: String?
        var output: String?
        var strict = false
        var summary = false
        var controller: UInt16?
        var index = 0
        var onlyPaths = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if !onlyPaths && argument == "--" { onlyPaths = true; continue }
            if !onlyPaths && argument.hasPrefix("-") && argument != "-" {
                let (name, inline) = argument.firstIndex(of: "=").map { (String(argument[..<$0]), String(argument[argument.index(after: $0)...])) }
                    ?? (argument, nil)
                switch name {
                case "-h", "--help": return .help(.importCapture)
                case "-o", "--output":
                    guard let value = inline ?? (index < arguments.count ? arguments[index] : nil), !value.isEmpty else {
                        throw UsageError("option \(name) needs a path")
                    }
                    if inline == nil { index += 1 }
                    output = value
                case "--controller":
                    guard let value = inline ?? (index < arguments.count ? arguments[index] : nil) else {
                        throw UsageError("option --controller needs a controller index, such as 0 or hci1")
                    }
                    if inline == nil { index += 1 }
                    let digits = value.hasPrefix("hci") ? String(value.dropFirst(3)) : value
                    guard let n = UInt16(digits) else {
                        throw UsageError("option --controller takes a controller index, such as 0 or hci1, not '\(value)'")
                    }
                    controller = n
                case "--strict", "--summary":
                    guard inline == nil else { throw UsageError("option \(name) takes no value") }
                    if name == "--strict" { strict = true } else { summary = true }
                default:
                    let hint = Spelling.suggestion(for: name, in: ["--output", "--strict", "--summary", "--controller", "--help"]).map { "; \($0)" } ?? ""
                    throw UsageError("unknown option '\(name)' for import\(hint); see 'blelab import --help'")
                }
                continue
            }
            guard capture == nil else { throw UsageError("import takes one capture, not '\(capture!)' and '\(argument)'") }
            capture = argument
        }
        guard let capture else { throw UsageError("import needs a capture file: blelab import CAPTURE [-o FILE]") }
        return .importCapture(ImportArguments(capture: capture, output: output, strict: strict, summary: summary, controller: controller))
    }
}

extension Help {
    public static let importCapture = """
    usage: blelab import CAPTURE [-o FILE] [--strict] [--controller N]
           blelab import --summary CAPTURE [-o FILE] [--strict] [--controller N]

    Reads a capture (the central's, or a peripheral's) and writes a scenario that replays it: the
    peripherals as they advertised and as discovery found them (services, characteristics,
    properties, values read), what they sent (as triggers or peripheral steps), and the central's
    scans, connections, reads, writes (with their ATT opcode), subscriptions and waits, with
    expectations of what the capture shows and comments naming each step's record and time.

    CAPTURE is btsnoop (Android's btsnoop_hci.log, btmon -w, blelab run --capture: datalinks
    1001, 1002, 2001), Apple PacketLogger (.pklg), or pcapng / pcap as Wireshark saves them (link
    types 187, 201, 254: HCI), recognised by content. An air capture (a sniffer's link-layer
    packets: link types 251, 256 with its pseudo-header, 272 from the nRF Sniffer; blelab run
    --capture-air) is read as its central's HCI would have shown it, both sides of each connection
    from the air; bad CRCs, retransmissions and encrypted links are listed as not reproduced.

    A damaged capture is read as far as it can be: a record whose packet does not decode (cut
    short, wrong lengths, an unknown packet type) is skipped, a complete packet followed by extra
    octets is kept without them, and where the file's framing breaks the records before it are
    kept. Each is listed (record number, byte offset, why) in the scenario's "Not reproduced"
    header, and the first few on standard error.

    options:
      -o, --output FILE  write the scenario (or the summary) to FILE (default: standard output)
      --summary          print what the capture holds instead of a scenario: format, records and
                         time span; devices seen (name, address, RSSI range, connectable, reports);
                         connections (parameters, updates and who asked, disconnect reasons); each
                         GATT database as discovery showed it; operations per characteristic
                         (reads, write requests and commands, notifications, indications);
                         notifications per second; ATT errors; what was skipped or not reproduced.
                         Works on captures with nothing to import
      --strict           stop at the first record that does not decode (exit 2), naming it
      --controller N     read controller hciN of a Linux monitor capture (btmon -w, Wireshark's
                         link type 254) that holds several; without it such a capture is refused,
                         naming the controllers it holds
      -h, --help         this text

    exit status: 0 written, 2 the capture cannot be read (the error names the byte offset) or usage
    """
}

extension BLELabCLI {
    func importCapture(_ arguments: ImportArguments) -> Status {
        let bytes: [UInt8]
        do { bytes = try FileText.readBytes(arguments.capture) } catch {
            console.err("blelab: \(error)\n")
            return .badInput
        }
        let name = arguments.capture.split(separator: "/").last.map(String.init) ?? arguments.capture
        let file: CaptureFile
        do { file = try CaptureFile.decode(bytes, strict: arguments.strict, controller: arguments.controller) } catch {
            console.err("blelab: \(arguments.capture): \(error)\n")
            return .badInput
        }
        if arguments.summary { return summarise(file, name: name, arguments) }
        let result: CaptureImporter.Result
        do { result = try CaptureImporter.importCapture(file, source: name) } catch {
            console.err("blelab: \(arguments.capture): \(error)\n")
            reportSkipped(file.skipped, arguments, rest: "blelab import --summary lists them all")
            return .badInput
        }
        // The scenario must load as any user's file does; if it does not, that is the importer's
        // fault, and the errors say where.
        let label = arguments.output ?? "<imported \(name)>"
        do { _ = try Scenario.parse(result.yaml, file: label) } catch let errors as ScenarioErrors {
            for error in errors.errors { console.err("\(error)\n") }
            console.err("blelab: the scenario imported from \(arguments.capture) does not validate (a bug in blelab import); it was not written\n")
            return .badInput
        } catch {
            console.err("blelab: \(error)\n")
            return .badInput
        }
        reportSkipped(file.skipped, arguments, rest: "the scenario's header lists them all under \"Not reproduced\"")
        if let path = arguments.output {
            do { try writeFile(Array(result.yaml.utf8), path) } catch {
                console.err("blelab: \(error)\n")
                return .badInput
            }
            console.err("blelab: wrote \(path): \(result.peripheralIDs.count) peripheral\(result.peripheralIDs.count == 1 ? "" : "s") "
                        + "(\(result.peripheralIDs.joined(separator: ", "))), \(result.transcript.connections.count) connection\(result.transcript.connections.count == 1 ? "" : "s")\n")
        } else {
            console.out(result.yaml)
        }
        return .passed
    }

    /// `--summary`: the text on standard output or in `-o FILE`.
    private func summarise(_ file: CaptureFile, name: String, _ arguments: ImportArguments) -> Status {
        let text: String
        do { text = try CaptureSummary.make(file, source: name).text } catch {
            console.err("blelab: \(arguments.capture): \(error)\n")
            return .badInput
        }
        if let path = arguments.output {
            do { try writeFile(Array(text.utf8), path) } catch {
                console.err("blelab: \(error)\n")
                return .badInput
            }
            console.err("blelab: wrote \(path): the summary of \(arguments.capture)\n")
        } else {
            console.out(text)
        }
        return .passed
    }

    /// What a tolerant reading skipped, on standard error: the counts, the first few, and where
    /// the rest are.
    private func reportSkipped(_ skipped: [SkippedRecord], _ arguments: ImportArguments, rest: String) {
        guard !skipped.isEmpty else { return }
        let shown = 5
        console.err("blelab: \(arguments.capture): \(SkippedRecord.counts(skipped)) (--strict stops at the first instead):\n")
        for s in skipped.prefix(shown) { console.err("  \(s)\n") }
        if skipped.count > shown { console.err("  … and \(skipped.count - shown) more: \(rest)\n") }
    }
}

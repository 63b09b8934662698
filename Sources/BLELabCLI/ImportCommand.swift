import CaptureImport
import ScenarioFormat

/// `blelab import CAPTURE [-o FILE]`: the capture's central side as a scenario (docs/import.md).
public struct ImportArguments: Equatable {
    public var capture: String
    /// Nil: standard output.
    public var output: String?

    public init(capture: String, output: String? = nil) {
        self.capture = capture
        self.output = output
    }

    static func parse(_ arguments: [String]) throws -> CLICommand {
        var capture: String?
        var output: String?
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
                default:
                    let hint = Spelling.suggestion(for: name, in: ["--output", "--help"]).map { "; \($0)" } ?? ""
                    throw UsageError("unknown option '\(name)' for import\(hint); see 'blelab import --help'")
                }
                continue
            }
            guard capture == nil else { throw UsageError("import takes one capture, not '\(capture!)' and '\(argument)'") }
            capture = argument
        }
        guard let capture else { throw UsageError("import needs a capture file: blelab import CAPTURE [-o FILE]") }
        return .importCapture(ImportArguments(capture: capture, output: output))
    }
}

extension Help {
    public static let importCapture = """
    usage: blelab import CAPTURE [-o FILE]

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

    options:
      -o, --output FILE  write the scenario to FILE (default: standard output)
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
        let result: CaptureImporter.Result
        do { result = try CaptureImporter.importCapture(bytes, source: name) } catch let error as CaptureError {
            console.err("blelab: \(arguments.capture): \(error)\n")
            return .badInput
        } catch {
            console.err("blelab: \(arguments.capture): \(error)\n")
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
}

import ScenarioEngine
import ScenarioFormat

/// `blelab verdicts [LABEL=]JUNIT…`: the verdict of every scenario on every tier, from the JUnit
/// files `blelab run --junit` wrote on each, and the scenarios whose verdicts differ. A scenario
/// the lab runs on several tiers must get the same verdict on each: one that passes on the sim and
/// fails on RootCanal (or the other way round) is either a bug in the lab or a scenario that
/// depends on timing it should not. A skip (a scenario that `requires:` another tier) is no
/// verdict, so it is never a mismatch; it is listed.
public struct VerdictsArguments: Equatable {
    /// Each file with the label it goes by (nil: the tier its report names, else its path).
    public var files: [(label: String?, path: String)]

    public init(files: [(label: String?, path: String)]) { self.files = files }

    public static func == (a: VerdictsArguments, b: VerdictsArguments) -> Bool {
        a.files.map(\.label) == b.files.map(\.label) && a.files.map(\.path) == b.files.map(\.path)
    }

    static func parse(_ arguments: [String]) throws -> CLICommand {
        var files: [(label: String?, path: String)] = []
        var onlyPaths = false
        for argument in arguments {
            if !onlyPaths && argument == "--" { onlyPaths = true; continue }
            if !onlyPaths && CLIArguments.isHelp(argument) { return .help(.verdicts) }
            if !onlyPaths && argument.hasPrefix("-") && argument != "-" {
                throw UsageError("unknown option '\(argument)' for verdicts; see 'blelab verdicts --help'")
            }
            // `sim=build/e2e/junit.xml`: a label before the first '=' when it has no '/'.
            if let eq = argument.firstIndex(of: "="), !argument[..<eq].contains("/") {
                let label = String(argument[..<eq]), path = String(argument[argument.index(after: eq)...])
                guard !label.isEmpty, !path.isEmpty else { throw UsageError("'\(argument)': write LABEL=FILE, such as sim=build/e2e/junit.xml") }
                files.append((label, path))
            } else {
                files.append((nil, argument))
            }
        }
        guard files.count >= 2 else {
            throw UsageError("verdicts compares the JUnit files of at least two tiers, such as: "
                             + "blelab verdicts sim=build/e2e/junit.xml rootcanal=build/e2e-rootcanal/junit.xml")
        }
        return .verdicts(VerdictsArguments(files: files))
    }
}

extension Help {
    public static let verdicts = """
    usage: blelab verdicts [LABEL=]JUNIT [LABEL=]JUNIT…

    Compares the verdicts of the same scenarios on several tiers, from the JUnit XML each run wrote
    (blelab run --junit FILE): sim=build/e2e/junit.xml rootcanal=build/e2e-rootcanal/junit.xml …
    Without a label a file goes by the tier its report names (sim, socket, vhci), else its path.
    Prints one line per scenario whose verdict differs between tiers (MISMATCH), and one per
    scenario skipped on some tier (SKIP: it requires another tier) or missing from some file
    (MISSING), then the counts, ending with verdict_mismatches: N.

    exit status: 0 the same verdict on every tier that ran it, 1 some verdict differs,
    2 a file cannot be read or is not JUnit XML, or usage
    """
}

/// The comparison itself, over reports already read: pure, so tests need no files.
public struct VerdictComparison: Equatable {
    public enum Verdict: Equatable {
        case passed
        /// Failed, or an error (the lab could not be set up); the message says which.
        case failed(String)
        case skipped(String)
        case missing

        var word: String {
            switch self {
            case .passed: return "passed"
            case .failed: return "failed"
            case .skipped: return "skipped"
            case .missing: return "missing"
            }
        }

        /// Passed or failed: a verdict to compare.
        var isVerdict: Bool {
            switch self {
            case .passed, .failed: return true
            case .skipped, .missing: return false
            }
        }
    }

    public struct Row: Equatable {
        /// The scenario: its JUnit class name (its file) and test name (its name).
        public var file: String
        public var name: String
        /// Per label, in the order the files were given.
        public var verdicts: [Verdict]
    }

    public var labels: [String]
    public var rows: [Row]

    /// Scenarios in the order they first appear, each with its verdict in every report.
    public init(_ reports: [(label: String, report: JUnitReport)]) {
        labels = reports.map(\.label)
        var order: [String] = []
        var byKey: [String: Row] = [:]
        for (i, entry) in reports.enumerated() {
            for c in entry.report.suites.flatMap(\.cases) {
                let key = c.className + "\u{0}" + c.name
                if byKey[key] == nil {
                    order.append(key)
                    byKey[key] = Row(file: c.className, name: c.name, verdicts: Array(repeating: .missing, count: reports.count))
                }
                let verdict: Verdict
                switch c.outcome {
                case .passed: verdict = .passed
                case let .failed(message, _, _): verdict = .failed(message)
                case let .error(message, _, _): verdict = .failed("error: " + message)
                case let .skipped(reason): verdict = .skipped(reason)
                }
                // A name run twice in one report (a repeat without its seed in the name): a
                // failure of either is the file's verdict.
                if case .failed = byKey[key]?.verdicts[i] {} else { byKey[key]?.verdicts[i] = verdict }
            }
        }
        rows = order.compactMap { byKey[$0] }
    }

    /// Rows where two tiers that ran the scenario disagree.
    public var mismatches: [Row] {
        rows.filter { row in
            let words = Set(row.verdicts.filter(\.isVerdict).map(\.word))
            return words.count > 1
        }
    }

    /// Rows without a mismatch that some tier skipped or lacks.
    public var incomplete: [Row] {
        let mismatched = mismatches
        return rows.filter { row in !mismatched.contains(row) && row.verdicts.contains { !$0.isVerdict } }
    }

    /// The report: a line per mismatch, per skip or missing entry, then the counts.
    public var lines: [String] {
        var out: [String] = []
        for row in mismatches {
            let parts = zip(labels, row.verdicts).map { label, verdict -> String in
                switch verdict {
                case let .failed(message): return "\(label) failed (\(Self.shortened(message)))"
                default: return "\(label) \(verdict.word)"
                }
            }
            out.append("MISMATCH \(row.file): \(row.name) — " + parts.joined(separator: ", "))
        }
        for row in incomplete {
            let ran = zip(labels, row.verdicts).filter { $0.1.isVerdict }
            let skipped = zip(labels, row.verdicts).filter { if case .skipped = $0.1 { return true } else { return false } }.map(\.0)
            let missing = zip(labels, row.verdicts).filter { $0.1 == .missing }.map(\.0)
            var parts: [String] = []
            if let first = ran.first { parts.append("\(first.1.word) on \(SchemaReader.list(ran.map(\.0), "and"))") }
            if !skipped.isEmpty { parts.append("skipped on \(SchemaReader.list(skipped, "and"))") }
            if !missing.isEmpty { parts.append("not in the report of \(SchemaReader.list(missing, "and"))") }
            out.append("\(missing.isEmpty ? "SKIP" : "MISSING") \(row.file): \(row.name) — " + parts.joined(separator: "; "))
        }
        let same = rows.count - mismatches.count - incomplete.count
        out.append("scenarios: \(rows.count) (\(labels.joined(separator: ", ")))")
        out.append("same_verdict_everywhere: \(same)")
        out.append("skipped_or_missing_somewhere: \(incomplete.count)")
        out.append("verdict_mismatches: \(mismatches.count)")
        return out
    }

    static func shortened(_ message: String) -> String {
        let oneLine = message.split(whereSeparator: \.isNewline).joined(separator: " ")
        return oneLine.count > 160 ? String(oneLine.prefix(157)) + "…" : oneLine
    }
}

extension BLELabCLI {
    func verdicts(_ arguments: VerdictsArguments) -> Status {
        var reports: [(label: String, report: JUnitReport)] = []
        for (label, path) in arguments.files {
            let bytes: [UInt8]
            do { bytes = try FileText.readBytes(path) } catch let error as FileError {
                console.err("blelab: \(path): \(error.reason); run that tier first (make e2e, e2e-socket, e2e-vhci write these files)\n")
                return .badInput
            } catch {
                console.err("blelab: \(path): \(error)\n")
                return .badInput
            }
            let report: JUnitReport
            do { report = try JUnitReport(xml: String(decoding: bytes, as: UTF8.self)) } catch {
                console.err("blelab: \(path): \(error)\n")
                return .badInput
            }
            let tiers = Set(report.suites.map(\.name).filter { $0.hasPrefix("blelab.") }.map { String($0.dropFirst("blelab.".count)) })
            reports.append((label ?? (tiers.count == 1 ? tiers.first! : path), report))
        }
        // Two unlabelled files of one tier (RootCanal and Bumble are both `socket`) go by their paths.
        let labels = reports.map(\.label)
        for i in reports.indices where arguments.files[i].label == nil && labels.filter({ $0 == labels[i] }).count > 1 {
            reports[i].label = arguments.files[i].path
        }
        let comparison = VerdictComparison(reports)
        for line in comparison.lines { console.out(line + "\n") }
        return comparison.mismatches.isEmpty ? .passed : .failed
    }
}

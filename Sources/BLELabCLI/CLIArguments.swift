import ScenarioFormat

/// `blelab`'s command line, parsed: which command, with which options. Parsing never touches the
/// file system; a bad command line is a `UsageError` (exit status 2).
public enum CLICommand: Equatable {
    case run(RunArguments)
    case validate(paths: [String])
    case list(ListArguments)
    /// `import CAPTURE [-o FILE] [--strict] [--summary]` (ImportCommand.swift).
    case importCapture(ImportArguments)
    /// `verdicts [LABEL=]JUNIT…` (VerdictsCommand.swift).
    case verdicts(VerdictsArguments)
    /// Print the help on this topic and exit 0 (`BLELabCLI.help(_:)` renders it).
    case help(HelpTopic)
    /// `--version`: print `BLELabVersion.text` and exit 0.
    case version
    /// `schema`: print the scenario format's JSON Schema (ScenarioJSONSchema) and exit 0.
    case schema
}

/// `--shard I/N`: the I-th of N parts (1-based) of the sorted scenario list.
public struct Shard: Equatable, CustomStringConvertible {
    public var index: Int
    public var count: Int

    public init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Parses `I/N` with 1 <= I <= N.
    public init?(string: String) {
        let parts = string.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, (1...n).contains(i) else { return nil }
        self.init(index: i, count: n)
    }

    /// Whether the item at `position` (0-based, in sorted order) belongs to this shard: items are
    /// dealt round-robin, so every shard gets a fair share and together they cover everything once.
    public func contains(position: Int) -> Bool { count > 0 && position >= 0 && position % count == index - 1 }

    public var description: String { "\(index)/\(count)" }
}

public struct RunArguments: Equatable {
    /// Files or folders; empty means `scenarios/`.
    public var paths: [String] = []
    /// Keep scenarios with any of these tags.
    public var tags: [String] = []
    /// Keep scenarios whose name contains this (case-insensitive).
    public var filter: String?
    public var seed: UInt64?
    public var repeatCount = 1
    public var shard: Shard?
    public var junit: String?
    public var capture: String?
    /// `--capture-air DIR`: a sniffer's pcap of the sim's air per scenario run.
    public var captureAir: String?
    public var json: String?
    /// `--html FILE`: a self-contained HTML report (HTMLReport).
    public var html: String?
    public var transport = "sim"
    /// `--central bluez[:hciN]`: another stack in the central's seat.
    public var central: String?
    /// `--peripheral bluez[:hciN[:ID]]`: another stack serving one of the peripherals.
    public var peripheral: String?
    public var quiet = false
    public var verbose = false
    /// `--jobs N`: scenario runs at the same time, each on a lab (and controllers) of its own;
    /// 1 by default, 0 (`--jobs auto`) for one per online CPU.
    public var jobs = 1

    public init() {}
}

public struct ListArguments: Equatable {
    public var paths: [String] = []
    public var tags: [String] = []
    public var filter: String?
    /// `--controllers`: print only how many controllers the vhci tier needs for the selected scenarios.
    public var controllers = false

    public init() {}
}

public struct UsageError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum CLIArguments {
    public static let defaultPath = "scenarios"

    /// Parses the arguments after the program name.
    public static func parse(_ arguments: [String]) throws -> CLICommand {
        guard let command = arguments.first else { return .help(.main) }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "run": return try parseRun(rest)
        case "validate":
            if rest.contains(where: isHelp) { return .help(.validate) }
            return .validate(paths: try positional(rest, command: "validate"))
        case "list": return try parseList(rest)
        case "import": return try ImportArguments.parse(rest)
        case "verdicts": return try VerdictsArguments.parse(rest)
        case "schema":
            if rest.contains(where: isHelp) { return .help(.schema) }
            guard rest.isEmpty else { throw UsageError("schema takes nothing after it; see 'blelab schema --help'") }
            return .schema
        case "help":
            switch rest.first {
            case nil: return .help(.main)
            case "run"?: return .help(.run)
            case "validate"?: return .help(.validate)
            case "list"?: return .help(.list)
            case "import"?: return .help(.importCapture)
            case "verdicts"?: return .help(.verdicts)
            case "schema"?: return .help(.schema)
            case let other?: throw UsageError("no help for '\(other)': the commands are run, validate, list, import, verdicts and schema")
            }
        case "-h", "--help": return .help(.main)
        case "--version", "version":
            guard rest.isEmpty else { throw UsageError("--version takes nothing after it") }
            return .version
        default:
            let hint = Spelling.suggestion(for: command, in: ["run", "validate", "list", "import", "verdicts", "schema", "help"]).map { "; \($0)" } ?? ""
            throw UsageError("unknown command '\(command)': expected run, validate, list, import, verdicts or schema\(hint)")
        }
    }

    static func isHelp(_ argument: String) -> Bool { argument == "-h" || argument == "--help" }

    private static func positional(_ arguments: [String], command: String) throws -> [String] {
        var paths: [String] = []
        var onlyPaths = false
        for argument in arguments {
            if !onlyPaths && argument == "--" { onlyPaths = true; continue }
            if !onlyPaths && argument.hasPrefix("-") && argument != "-" {
                throw UsageError("unknown option '\(argument)' for \(command); see 'blelab \(command) --help'")
            }
            paths.append(argument)
        }
        return paths
    }

    /// Reads option values in the `--name value` form (the `--name=value` form is split by the caller).
    private struct Cursor {
        var arguments: [String]
        var index = 0

        mutating func value(for option: String, inline: String?) throws -> String {
            if let inline { return inline }
            guard index < arguments.count else { throw UsageError("option \(option) needs a value") }
            defer { index += 1 }
            return arguments[index]
        }
    }

    private static func split(_ argument: String) -> (name: String, inline: String?) {
        guard let eq = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<eq]), String(argument[argument.index(after: eq)...]))
    }

    static let runOptions = ["--tag", "--filter", "--seed", "--repeat", "--shard", "--junit", "--capture", "--capture-air", "--json", "--html", "--transport",
                             "--central", "--peripheral", "--jobs", "--quiet", "--verbose", "--help"]

    /// The loop `run` and `list` share: operands (and everything after `--`) go to `paths`; each
    /// option goes to `option` with its `--name=value` part, if any, and the cursor for a separate
    /// value. `option` returns a command to stop at (`--help`), else nil.
    private static func scan(_ arguments: [String], paths: inout [String],
                             option: (_ name: String, _ inline: String?, _ cursor: inout Cursor) throws -> CLICommand?) throws -> CLICommand? {
        var cursor = Cursor(arguments: arguments)
        var onlyPaths = false
        while cursor.index < cursor.arguments.count {
            let argument = cursor.arguments[cursor.index]
            cursor.index += 1
            if onlyPaths || !argument.hasPrefix("-") || argument == "-" {
                paths.append(argument)
                continue
            }
            if argument == "--" { onlyPaths = true; continue }
            let (name, inline) = split(argument)
            if let stop = try option(name, inline, &cursor) { return stop }
        }
        return nil
    }

    /// `--tag` and `--filter`, which select scenarios for `run` and `list` alike; false for any other option.
    private static func selection(_ name: String, _ inline: String?, _ cursor: inout Cursor,
                                  tags: inout [String], filter: inout String?) throws -> Bool {
        switch name {
        case "--tag":
            let tag = try cursor.value(for: name, inline: inline)
            guard !tag.isEmpty else { throw UsageError("option --tag needs a tag") }
            tags.append(tag)
        case "--filter": filter = try cursor.value(for: name, inline: inline)
        default: return false
        }
        return true
    }

    private static func unknown(_ name: String, command: String, options: [String]) -> UsageError {
        let hint = Spelling.suggestion(for: name, in: options).map { "; \($0)" } ?? ""
        return UsageError("unknown option '\(name)' for \(command)\(hint); see 'blelab \(command) --help'")
    }

    private static func parseRun(_ arguments: [String]) throws -> CLICommand {
        var run = RunArguments()
        let stop = try scan(arguments, paths: &run.paths) { name, inline, cursor in
            if try selection(name, inline, &cursor, tags: &run.tags, filter: &run.filter) { return nil }
            switch name {
            case "-h", "--help": return .help(.run)
            case "--seed":
                let text = try cursor.value(for: name, inline: inline)
                guard let seed = ScalarSyntax.unsigned(text) else { throw UsageError("--seed takes a non-negative integer, not '\(text)'") }
                run.seed = seed
            case "--repeat":
                let text = try cursor.value(for: name, inline: inline)
                guard let n = Int(text), n >= 1 else { throw UsageError("--repeat takes a count of 1 or more, not '\(text)'") }
                run.repeatCount = n
            case "--shard":
                let text = try cursor.value(for: name, inline: inline)
                guard let shard = Shard(string: text) else {
                    throw UsageError("--shard takes I/N with 1 <= I <= N, such as 2/4, not '\(text)'")
                }
                run.shard = shard
            case "--junit": run.junit = try nonEmpty(cursor.value(for: name, inline: inline), name)
            case "--capture": run.capture = try nonEmpty(cursor.value(for: name, inline: inline), name)
            case "--capture-air": run.captureAir = try nonEmpty(cursor.value(for: name, inline: inline), name)
            case "--json": run.json = try nonEmpty(cursor.value(for: name, inline: inline), name)
            case "--html": run.html = try nonEmpty(cursor.value(for: name, inline: inline), name)
            case "--transport": run.transport = try cursor.value(for: name, inline: inline)
            case "--jobs", "-j":
                let text = try cursor.value(for: name, inline: inline)
                guard let n = text == "auto" ? 0 : Int(text), n >= 0 else {
                    throw UsageError("--jobs takes a count of scenarios to run at once (1 or more), or 0 or auto for one per CPU, not '\(text)'")
                }
                run.jobs = n
            case "--central": run.central = try nonEmpty(cursor.value(for: name, inline: inline), name)
            case "--peripheral": run.peripheral = try nonEmpty(cursor.value(for: name, inline: inline), name)
            case "-q", "--quiet", "-v", "--verbose":
                if inline != nil { throw UsageError("option \(name) takes no value") }
                if name.hasPrefix("-q") || name == "--quiet" { run.quiet = true } else { run.verbose = true }
            default: throw unknown(name, command: "run", options: runOptions)
            }
            return nil
        }
        if let stop { return stop }
        if run.quiet && run.verbose { throw UsageError("--quiet and --verbose cannot be used together") }
        return .run(run)
    }

    private static func nonEmpty(_ value: String, _ option: String) throws -> String {
        guard !value.isEmpty else { throw UsageError("option \(option) needs a path") }
        return value
    }

    static let listOptions = ["--tag", "--filter", "--controllers", "--help"]

    private static func parseList(_ arguments: [String]) throws -> CLICommand {
        var list = ListArguments()
        let stop = try scan(arguments, paths: &list.paths) { name, inline, cursor in
            if try selection(name, inline, &cursor, tags: &list.tags, filter: &list.filter) { return nil }
            switch name {
            case "-h", "--help": return .help(.list)
            case "--controllers":
                if inline != nil { throw UsageError("option --controllers takes no value") }
                list.controllers = true
            default: throw unknown(name, command: "list", options: listOptions)
            }
            return nil
        }
        return stop ?? .list(list)
    }
}

/// What `--help` can describe: the program, or one command.
public enum HelpTopic: Equatable {
    case main, run, validate, list, importCapture, verdicts, schema
}

/// The help texts.
public enum Help {
    /// The text on `topic`; `run`'s lists the transports and seats offered.
    public static func text(_ topic: HelpTopic, transports: TransportOffer = .simOnly, seats: SeatOffer = .none) -> String {
        switch topic {
        case .main: return main
        case .run: return run(transports: transports, seats: seats)
        case .validate: return validate
        case .list: return list
        case .importCapture: return importCapture
        case .verdicts: return verdicts
        case .schema: return schema
        }
    }

    public static let main = """
    blelab: run BLE scenarios on a virtual lab

    usage: blelab <command> [options] [PATHS…]

    commands:
      run [PATHS…]       run scenarios (files, or folders searched for *.yaml; default scenarios/)
      validate [PATHS…]  check scenario files without running them; every error is printed
      list [PATHS…]      list scenarios: name, tags, file (--controllers: how many the vhci tier needs)
      import CAPTURE     write a scenario from a capture: btsnoop, PacketLogger, pcap(ng) (-o FILE; default stdout;
                         --summary: what the capture holds; --strict: stop at the first damaged record)
      verdicts JUNIT…    compare the verdicts of the same scenarios on several tiers (run --junit files)
      schema             print the scenario format's JSON Schema, for editors (docs/editors.md)
      --version          the version, and the git commit blelab was built from

    exit status: 0 all passed, 1 some scenario failed, 2 bad input or usage (then nothing runs)
    'blelab <command> --help' describes each command.
    """

    public static let schema = """
    usage: blelab schema

    Prints the JSON Schema (draft 2020-12) of the scenario format, made from the code that reads
    scenario files; the repository ships it as schema/blelab-scenario.schema.json. Editors that
    use yaml-language-server (VS Code's YAML extension and others) complete and check scenario
    files with it: see docs/editors.md. It checks the keys and the form of each value; what
    depends on the whole file (declared peripherals and characteristics, sizes, step order) is
    left to 'blelab validate'.
    """

    /// `syntax  meaning` lines, the syntaxes padded to one width.
    static func valueLines(_ values: [(syntax: String, meaning: String)]) -> String {
        let width = values.map(\.syntax.count).max() ?? 0
        return values.map { $0.syntax + String(repeating: " ", count: width - $0.syntax.count + 2) + $0.meaning }
            .joined(separator: "\n")
    }

    /// Lines indented under an option of `run --help`.
    private static func underOption(_ lines: String) -> String {
        lines.split(separator: "\n").map { "                     " + $0 }.joined(separator: "\n")
    }

    public static func run(transports: TransportOffer = .simOnly, seats: SeatOffer = .none) -> String {
        let central = valueLines([("none", "a program outside the lab (wait, peripheral and peripheral-received only)")] + seats.centralValues)
        let peripheral = valueLines([("none:ID@ADDRESS", "a program outside the lab serves peripheral ID at ADDRESS (C0:11:22:33:44:55[/random])")]
            + seats.peripheralValues)
        return """
    usage: blelab run [options] [PATHS…]

    Runs every scenario in PATHS (files, or folders searched recursively for *.yaml, in sorted
    order; default scenarios/). Every file is validated first: one broken file runs nothing.

    options:
      --tag T          only scenarios tagged T (repeatable: any of the tags)
      --filter NAME    only scenarios whose name contains NAME (case-insensitive)
                       (a --tag/--filter that selects nothing is an error: exit 2)
      --seed N         use seed N instead of each scenario's own
      --repeat N       run each scenario N times, with seeds S, S+1, … (S: --seed or the scenario's)
      --shard I/N      run only the I-th of N shards (round-robin over the sorted list; 1 <= I <= N)
      -j, --jobs N     run N scenario runs at once (default 1; 0 or auto: one per CPU), each on a lab
                       of its own: on the sim, reports, captures and console lines are those of a run
                       with --jobs 1; rootcanal and bumble start one controller process per job;
                       hci-user and h4 need a group of controllers per job, on airs of their own
                       (hci-user:0,1/2,3); seats (--central, --peripheral) and one running RootCanal
                       run one at a time, saying so on stderr
      --junit FILE     write a JUnit XML report (one testcase per scenario run)
      --json FILE      write a machine-readable timeline of every run
      --html FILE      write a self-contained HTML report: summary, failures first, a message
                       sequence chart and the steps of each run, links to its captures
      --capture DIR    write one btsnoop capture per device per scenario run
      --capture-air DIR  write what a sniffer would have seen on the sim's air, one pcap
                       (LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR, 256) per scenario run:
                       DIR/<file>[.run<k>].air.pcap; sim only (other tiers have no air: exit 2)
      --transport T    where the controllers are (default sim); T is one of:
    \(underOption(transports.helpLines))
      --central S      put another stack, or a program outside the lab, in the central's seat;
                       --transport then holds only the peripherals' controllers; S is one of:
    \(underOption(central))
      --peripheral S   serve one peripheral with another stack; S is one of:
    \(underOption(peripheral))
      -q, --quiet      print only failures and the summary
      -v, --verbose    also print every step with its virtual time
      -h, --help       this text

    Colour is used only when standard output is a terminal and NO_COLOR is not set.
    exit status: 0 all passed, 1 some scenario failed, 2 bad input or usage (a --tag or
    --filter that selects nothing too)
    """
    }

    public static let validate = """
    usage: blelab validate [PATHS…]

    Parses and checks every scenario file in PATHS (default scenarios/) without running anything,
    and prints every error as file:line:column: error: found X, expected Y.
    exit status: 0 all valid, 2 some file has errors
    """

    public static let list = """
    usage: blelab list [--tag T] [--filter NAME] [--controllers] [PATHS…]

    Lists the scenarios in PATHS (default scenarios/): name, tags and file, in sorted file order.

      --controllers  print only how many controllers the vhci tier needs for the selected
                     scenarios: one for the central plus the most peripherals one of them
                     declares, at least 2; scenarios whose requires: leaves out vhci don't count
    exit status: 0, or 2 when a file cannot be read or validated or --tag/--filter select nothing
    """
}

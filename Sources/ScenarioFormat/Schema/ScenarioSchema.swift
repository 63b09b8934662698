import BLERuntime
import YAMLSubset

/// Reads a whole scenario file (docs/scenarios.md): the YAML subset, then every key, reporting
/// all errors of the file before anything runs.
enum ScenarioSchema {
    static let keys = ["scenario", "tags", "timeout", "seed", "requires", "expect-failure", "peripherals", "central"]

    static func scenario(from root: YAMLNode, file: String, probe: FormProbe? = nil) -> Result<Scenario, ScenarioErrors> {
        let r = SchemaReader(file: file, probe: probe)
        guard let m = r.mapping(root, "a scenario: a mapping with scenario, peripherals and central") else {
            return .failure(ScenarioErrors(r.errors))
        }
        r.checkKeys(m, allowed: keys, of: "a scenario")
        var name = ""
        if let n = r.required(m, "scenario", in: "a scenario file", expected: "'scenario: what it checks' as its first line"),
           let s = r.scalar(n, "a one-line scenario name") {
            if s.text.contains("\n") { r.error(n, expected: "a one-line scenario name") }
            name = s.text
        }
        var tags: [String] = []
        if let t = m["tags"], let items = r.items(t, "a list of tags such as [seed, serial]") {
            for item in items {
                guard let s = r.scalar(item, "a tag") else { continue }
                if s.text.contains(where: { $0 == " " || $0 == "," }) {
                    r.error(item, expected: "a tag without spaces or commas")
                } else {
                    tags.append(s.text)
                }
            }
        }
        var timeout: TimeSpan?
        if let t = m["timeout"], let span = r.duration(t, "a timeout") {
            if span <= .zero { r.error(t, expected: "a timeout longer than 0s") } else { timeout = span }
        }
        var seed: UInt64?
        if let s = m["seed"], let scalar = r.scalar(s, "a seed: a non-negative integer") {
            seed = ScalarSyntax.unsigned(scalar.text)
            if seed == nil { r.error(s, expected: "a seed: a non-negative integer below 2^64") }
        }
        var requires: [TransportTier]?
        if let q = m["requires"], let items = r.items(q, "a list of tiers such as [sim]") {
            let names = TransportTier.all.map(\.rawValue)
            requires = []
            for item in items {
                guard let s = r.scalar(item, "a tier (\(names.joined(separator: ", ")))") else { continue }
                guard names.contains(s.text) else {
                    let prefixed = names.first { s.text.lowercased().hasPrefix($0) }.map { "did you mean '\($0)'?" }
                    r.error(at: s.mark, found: "tier \(SchemaReader.quote(s.text))", expected: "a tier (\(names.joined(separator: ", ")))",
                            hint: Spelling.suggestion(for: s.text, in: names) ?? prefixed)
                    continue
                }
                requires?.append(TransportTier(rawValue: s.text))
            }
        }
        var expectFailure: String?
        if let e = m["expect-failure"], let s = r.scalar(e, "the text the scenario's failure must contain") {
            if s.text.isEmpty || s.text.contains("\n") {
                r.error(e, expected: "one line of text the scenario's failure must contain, such as 'no connection within 2s'")
            } else {
                expectFailure = s.text
            }
        }
        var peripheralSchema = PeripheralSchema(reader: r)
        var peripherals: [PeripheralSpec] = []
        if let p = r.required(m, "peripherals", in: "a scenario file", expected: "'peripherals:' declaring at least one peripheral") {
            peripherals = peripheralSchema.peripherals(p)
        }
        var steps: [CentralStep] = []
        if let c = r.required(m, "central", in: "a scenario file", expected: "'central:' with the steps of the scripted central") {
            var central = CentralSchema(reader: r, catalog: peripheralSchema.catalog)
            steps = central.steps(c)
        }
        if !r.errors.isEmpty {
            return .failure(ScenarioErrors(r.errors.sorted { ($0.line, $0.column) < ($1.line, $1.column) }))
        }
        var scenario = Scenario(name: name, file: file, tags: tags, timeout: timeout, seed: seed, requires: requires,
                                peripherals: peripherals, steps: steps)
        scenario.faults = peripheralSchema.faults
        scenario.expectFailure = expectFailure
        return .success(scenario)
    }
}

extension Scenario {
    /// Parses and validates a scenario file's text. Throws `ScenarioErrors` with every error found
    /// (a YAML syntax error stops at that error; schema errors are all reported).
    public static func parse(_ text: String, file: String) throws -> Scenario {
        let root: YAMLNode
        do {
            root = try parseYAML(text, file: file)
        } catch let error as YAMLError {
            throw ScenarioErrors([ScenarioError(error)])
        } catch {
            throw ScenarioErrors([ScenarioError(file: file, line: 0, column: 0, found: "\(error)", expected: "a YAML file")])
        }
        return try ScenarioSchema.scenario(from: root, file: file).get()
    }

    /// Reads, parses and validates the file at `path` (named `path` in errors and reports). Bytes
    /// that are not UTF-8 are an error at their line and column, never repaired.
    public static func load(path: String) throws -> Scenario {
        let bytes: [UInt8]
        do {
            bytes = try FileText.readBytes(path)
        } catch let error as FileError {
            throw ScenarioErrors([ScenarioError(file: path, line: 0, column: 0, found: error.reason, expected: "a readable scenario file")])
        }
        let text: String
        do { text = try UTF8Check.text(of: bytes, file: path) } catch let error as YAMLError {
            throw ScenarioErrors([ScenarioError(error)])
        }
        return try parse(text, file: path)
    }
}

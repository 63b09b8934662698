import YAMLSubset

/// How the schema code reads one keyword (a step, an expectation, an action): noted by
/// `KeywordFields` and by the actions that take a value alone, when a `SchemaReader` has a probe.
public enum KeywordForm: Equatable {
    /// `keyword: PRIMARY`, `keyword: { field: … }`, or the fields beside the keyword.
    case fields(primary: String?, allowed: [String])
    /// `keyword: VALUE`, nothing beside it.
    case valueOnly
}

/// Collects the keyword forms the schema code reads while it parses a scenario.
public final class FormProbe {
    private(set) var notes: [(keyword: String, form: KeywordForm)] = []

    func note(_ keyword: String, _ form: KeywordForm) { notes.append((keyword, form)) }

    /// The first form noted for `keyword`.
    func form(of keyword: String) -> KeywordForm? { notes.first { $0.keyword == keyword }?.form }
}

/// Runs the schema code on small scenarios, one keyword in one place each, and reports the
/// form it read, and whether a bare keyword is accepted: how ScenarioJSONSchema learns each
/// keyword's fields from the code that reads them, not from a second list.
enum KeywordProbe {
    /// Where a keyword stands.
    enum Place {
        case step, expectation, action
    }

    /// A peripheral `p` with one characteristic that can do everything, and the central's steps.
    private static func scenario(onWrite: String = "[]", steps: String) -> String {
        """
        scenario: probe
        peripherals:
          p:
            gatt:
              - service: FFE0
                characteristics:
                  - uuid: FFE1
                    properties: [read, write, write-without-response, notify, indicate]
                    on-write: \(onWrite)
        central:
        \(steps)
        """
    }

    /// The line (1-based) of the central's first step, and of `on-write`, in `scenario`.
    private static let stepLine = 11
    private static let onWriteLine = 9

    private static func run(_ text: String) -> (FormProbe, [ScenarioError]) {
        let probe = FormProbe()
        guard let root = try? parseYAML(text, file: "probe") else { return (probe, []) }
        switch ScenarioSchema.scenario(from: root, file: "probe", probe: probe) {
        case .success: return (probe, [])
        case let .failure(errors): return (probe, errors.errors)
        }
    }

    /// The form the code reads `keyword` with at `place` (nil: none noted, as for a keyword read
    /// by code of its own).
    static func form(of keyword: String, at place: Place) -> KeywordForm? {
        let text: String
        switch place {
        case .step: text = scenario(steps: "  - \(keyword): {}")
        case .expectation: text = scenario(steps: "  - expect: { \(keyword): {} }")
        case .action: text = scenario(onWrite: "[ { \(keyword): {} } ]", steps: "  - wait: 1s")
        }
        return run(text).0.form(of: keyword)
    }

    /// Whether an action may be written as its keyword alone (`- disconnect`): no error at it.
    static func acceptsBareAction(_ keyword: String) -> Bool {
        let (_, errors) = run(scenario(onWrite: "[ \(keyword) ]", steps: "  - wait: 1s"))
        return !errors.contains { $0.line == onWriteLine }
    }
}

/// A test report in the JUnit XML dialect CI systems read (Jenkins' JUnit plugin, GitLab's unit test
/// reports, GitHub actions that publish test results). There is no normative schema: this follows
/// the shape they all accept, Ant's JUnit task output as documented with Jenkins' junit.xsd:
///
///     <testsuites name tests failures errors skipped time>
///       <testsuite name tests failures errors skipped time [timestamp]>
///         [<properties><property name value/>…</properties>]
///         <testcase name classname time>
///           [<properties><property name value/>…</properties>]
///           [<failure message type>details</failure> | <error message type>details</error> |
///            <skipped message/>]
///           [<system-out>output</system-out>]
///         </testcase>
///       </testsuite>
///     </testsuites>
///
/// (Properties of a test case are the xunit2 dialect's, as pytest and junitparser write them.)
/// Rendering is deterministic: attributes in the order above, times in seconds with exactly three
/// decimals, two-space indentation, a trailing newline. Everything a report says comes from the
/// model, so equal models give equal files; `blelab run` puts wall times in `time` (what a CI
/// dashboard shows), so its reports differ between runs in those attributes only.
/// A `<property name value/>` of a suite or a case (seed, tier, virtual time, reproduce line).
public struct JUnitProperty: Hashable, Sendable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    static func render(_ properties: [JUnitProperty], indent: String, into out: inout String) {
        guard !properties.isEmpty else { return }
        out += indent + "<properties>\n"
        for p in properties { out += indent + "  <property" + XMLText.attributes([("name", p.name), ("value", p.value)]) + "/>\n" }
        out += indent + "</properties>\n"
    }
}

public struct JUnitReport: Hashable, Sendable {
    /// The `name` of `<testsuites>`.
    public var name: String
    public var suites: [JUnitSuite]
    /// The run's own time in seconds when it differs from the sum of its suites (as read from a
    /// file); nil means the sum.
    public var timeOverride: Double?

    public init(name: String = "blelab", suites: [JUnitSuite] = [], time: Double? = nil) {
        self.name = name
        self.suites = suites
        self.timeOverride = time
    }

    public var tests: Int { suites.reduce(0) { $0 + $1.tests } }
    public var failures: Int { suites.reduce(0) { $0 + $1.failures } }
    public var errors: Int { suites.reduce(0) { $0 + $1.errors } }
    public var skipped: Int { suites.reduce(0) { $0 + $1.skipped } }
    /// Seconds: the sum of the suites' times unless set.
    public var time: Double { timeOverride ?? suites.reduce(0) { $0 + $1.time } }
    /// True when nothing failed or errored (skips do not count against a run).
    public var succeeded: Bool { failures == 0 && errors == 0 }

    /// Several reports as one, e.g. the JUnit files of CI shards (`blelab run --shard I/N`). Suites
    /// with the same name become one suite holding their cases in report order; other suites keep
    /// the order in which they first appear. A merged suite keeps the first timestamp it met and
    /// adds up its parts' times.
    public static func merged(_ reports: [JUnitReport], name: String? = nil) -> JUnitReport {
        var suites: [JUnitSuite] = []
        var indexByName: [String: Int] = [:]
        for suite in reports.flatMap(\.suites) {
            if let i = indexByName[suite.name] {
                suites[i].timeOverride = suites[i].time + suite.time   // before the cases join
                suites[i].cases += suite.cases
                if suites[i].timestamp == nil { suites[i].timestamp = suite.timestamp }
            } else {
                indexByName[suite.name] = suites.count
                suites.append(suite)
            }
        }
        return JUnitReport(name: name ?? reports.first?.name ?? "blelab", suites: suites)
    }

    /// The report as a JUnit XML document.
    public var xml: String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites" + XMLText.attributes([
            ("name", name), ("tests", String(tests)), ("failures", String(failures)), ("errors", String(errors)),
            ("skipped", String(skipped)), ("time", JUnitReport.seconds(time)),
        ])
        if suites.isEmpty { return out + "/>\n" }
        out += ">\n"
        for suite in suites { suite.render(into: &out) }
        return out + "</testsuites>\n"
    }

    /// Seconds with exactly three decimals ("0.250"), rounded half away from zero, without locale or
    /// floating-point printing in the way. Negative, infinite and NaN times read "0.000".
    public static func seconds(_ value: Double) -> String {
        guard value.isFinite, value > 0 else { return "0.000" }
        let millis = (value * 1_000).rounded()
        guard millis < 9.0e15 else { return "9000000000000.000" }   // beyond any run; keeps Int64 exact
        let ms = Int64(millis)
        let fraction = String(ms % 1_000 + 1_000).dropFirst()      // three digits, zeros kept
        return "\(ms / 1_000).\(fraction)"
    }
}

/// One `<testsuite>`: a group of cases, e.g. one scenario file or one tier.
public struct JUnitSuite: Hashable, Sendable {
    public var name: String
    public var cases: [JUnitCase]
    /// ISO 8601 local date and time without zone ("2000-01-01T00:00:00"), as Jenkins reads it;
    /// omitted when nil. Supplied by the caller so reports stay deterministic.
    public var timestamp: String?
    /// The suite's own time in seconds when it differs from the sum of its cases (set-up, or a
    /// merge of shards); nil means the sum.
    public var timeOverride: Double?
    public var properties: [JUnitProperty]

    public init(name: String, cases: [JUnitCase] = [], timestamp: String? = nil, time: Double? = nil, properties: [JUnitProperty] = []) {
        self.name = name
        self.cases = cases
        self.timestamp = timestamp
        self.timeOverride = time
        self.properties = properties
    }

    public var tests: Int { cases.count }
    public var failures: Int { cases.filter { if case .failed = $0.outcome { return true } else { return false } }.count }
    public var errors: Int { cases.filter { if case .error = $0.outcome { return true } else { return false } }.count }
    public var skipped: Int { cases.filter { if case .skipped = $0.outcome { return true } else { return false } }.count }
    public var time: Double { timeOverride ?? cases.reduce(0) { $0 + $1.time } }

    func render(into out: inout String) {
        var attributes: [(String, String)] = [
            ("name", name), ("tests", String(tests)), ("failures", String(failures)), ("errors", String(errors)),
            ("skipped", String(skipped)), ("time", JUnitReport.seconds(time)),
        ]
        if let timestamp { attributes.append(("timestamp", timestamp)) }
        out += "  <testsuite" + XMLText.attributes(attributes)
        if cases.isEmpty && properties.isEmpty {
            out += "/>\n"
            return
        }
        out += ">\n"
        JUnitProperty.render(properties, indent: "    ", into: &out)
        for testCase in cases { testCase.render(into: &out) }
        out += "  </testsuite>\n"
    }
}

/// One `<testcase>`: a scenario, an expectation, or a step.
public struct JUnitCase: Hashable, Sendable {
    public enum Outcome: Hashable, Sendable {
        case passed
        /// An expectation that did not hold. `type` is the failure's kind, "failure" unless given.
        case failed(message: String, details: String, type: String = "failure")
        /// The case could not run to a verdict (bad input, a crash of the lab, a timeout of the tool).
        case error(message: String, details: String, type: String = "error")
        case skipped(reason: String)
    }

    public var name: String
    /// Dotted grouping CI tools show as the test's class ("scenarios.heart-rate").
    public var className: String
    /// Seconds.
    public var time: Double
    public var outcome: Outcome
    /// What the case printed (the lab's console transcript), as `<system-out>`.
    public var output: String?
    public var properties: [JUnitProperty]

    public init(name: String, className: String, time: Double, outcome: Outcome = .passed, output: String? = nil,
                properties: [JUnitProperty] = []) {
        self.name = name
        self.className = className
        self.time = time
        self.outcome = outcome
        self.output = output
        self.properties = properties
    }

    func render(into out: inout String) {
        out += "    <testcase" + XMLText.attributes([("name", name), ("classname", className), ("time", JUnitReport.seconds(time))])
        var body = ""
        JUnitProperty.render(properties, indent: "      ", into: &body)
        switch outcome {
        case .passed:
            break
        case let .failed(message, details, type):
            body += XMLText.element("failure", attributes: [("message", message), ("type", type)], text: details)
        case let .error(message, details, type):
            body += XMLText.element("error", attributes: [("message", message), ("type", type)], text: details)
        case let .skipped(reason):
            body += XMLText.element("skipped", attributes: [("message", reason)], text: "")
        }
        if let output { body += XMLText.element("system-out", attributes: [], text: output) }
        if body.isEmpty {
            out += "/>\n"
        } else {
            out += ">\n" + body + "    </testcase>\n"
        }
    }
}

/// XML 1.0 text and attribute escaping (W3C XML 1.0, 2.2 Characters and 2.4 Character Data).
public enum XMLText {
    /// Escapes `text` for use as character data or inside a double- or single-quoted attribute:
    /// `& < > " '` become entity references (so `]]>` can never appear), tab, line feed and carriage
    /// return become character references (attribute-value normalization and line-end handling
    /// would otherwise turn them into spaces or drop the CR), and characters XML 1.0 forbids
    /// (C0 controls other than tab/LF/CR, U+FFFE, U+FFFF) become U+FFFD.
    public static func escape(_ text: String) -> String { escape(text, keepingLineBreaks: false) }

    /// Like `escape`, but line feeds and tabs stay literal: for element content, where they survive
    /// parsing and keep multi-line details readable.
    public static func escapeContent(_ text: String) -> String { escape(text, keepingLineBreaks: true) }

    private static func escape(_ text: String, keepingLineBreaks: Bool) -> String {
        var out = String.UnicodeScalarView()
        func append(_ s: String) { out.append(contentsOf: s.unicodeScalars) }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": append("&amp;")
            case "<": append("&lt;")
            case ">": append("&gt;")
            case "\"": append("&quot;")
            case "'": append("&apos;")
            case "\t" where !keepingLineBreaks: append("&#9;")
            case "\n" where !keepingLineBreaks: append("&#10;")
            case "\r": append("&#13;")
            default: out.append(isAllowed(scalar) ? scalar : "\u{FFFD}")
            }
        }
        return String(out)
    }

    /// XML 1.0 production [2] Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
    /// (Swift scalars are never surrogates.)
    public static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }

    static func attributes(_ pairs: [(String, String)]) -> String {
        pairs.map { " \($0.0)=\"\(escape($0.1))\"" }.joined()
    }

    /// `<name attrs>text</name>` indented for a test case's children, or `<name attrs/>` when empty.
    static func element(_ name: String, attributes pairs: [(String, String)], text: String) -> String {
        let open = "      <\(name)" + attributes(pairs)
        return text.isEmpty ? open + "/>\n" : open + ">" + escapeContent(text) + "</\(name)>\n"
    }
}

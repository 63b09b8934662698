import BLERuntime
import YAMLSubset

// The radio side of the format (docs/scenarios.md sections 5, 6 and 18): a scan's or a connect's
// duty cycle, RSSI values, the `rssi` expectation, the central's answer to parameter requests.

extension SchemaReader {
    /// An RSSI in dBm, -127 to +20: what HCI can report (Vol 4 Part E 7.7.65.2, 7.5.4).
    func dBm(_ node: YAMLNode) -> Int8? {
        guard let s = scalar(node, "an RSSI in dBm from -127 to 20") else { return nil }
        var text = s.text
        if text.lowercased().hasSuffix("dbm") { text = String(text.dropLast(3)) }
        guard let n = ScalarSyntax.signed(text), (-127...20).contains(n) else {
            let hint = ScalarSyntax.signed(text).map { $0 > 20 ? "RSSI is negative dBm, such as -\($0)" : "the weakest HCI reports is -127" }
            error(node, expected: "an RSSI in dBm from -127 to 20 (such as -70)", hint: hint)
            return nil
        }
        return Int8(n)
    }

    /// A scan interval or window: 2.5 ms to 10.24 s in steps of 0.625 ms (LE Set Scan Parameters
    /// and LE Create Connection, Vol 4 Part E 7.8.10, 7.8.12).
    func scanDuration(_ node: YAMLNode, _ what: String) -> TimeSpan? {
        guard let t = duration(node, what) else { return nil }
        let expected = "\(what) from 2.5ms to 10.24s in steps of 0.625ms (such as 10ms, 30ms, 100ms or 1.28s)"
        guard t >= .microseconds(2_500), t <= .microseconds(10_240_000) else {
            error(node, expected: expected, hint: "Core Vol 4 Part E 7.8.10 allows 0x0004 to 0x4000 units of 0.625 ms")
            return nil
        }
        guard t.nanoseconds % 625_000 == 0 else {
            let down = t.nanoseconds / 625_000 * 625_000
            error(node, expected: expected, hint: "the nearest allowed values are \(Self.ms(down)) and \(Self.ms(down + 625_000))")
            return nil
        }
        return t
    }

    static func ms(_ nanoseconds: Int64) -> String {
        ConnectionUpdateRequest.milliseconds(micros: nanoseconds / 1_000)
    }

    /// `interval` and `window` (or the connect step's `scan-interval` and `scan-window`): both
    /// optional; the window may not exceed the interval. An interval alone keeps the default
    /// window (or the interval, if that is shorter); a window alone keeps the default interval.
    /// Returns nil for the timing when neither is given, and `ok: false` after an error.
    func scanTiming(interval: YAMLNode?, window: YAMLNode?, names: (String, String),
                    default base: ScanTiming) -> (ok: Bool, timing: ScanTiming?) {
        guard interval != nil || window != nil else { return (true, nil) }
        var ok = true
        var timing = base
        if let interval {
            if let t = scanDuration(interval, "a scan interval") {
                timing.interval = t
                timing.window = min(base.window, t)
            } else { ok = false }
        }
        if let window {
            if let t = scanDuration(window, "a scan window") {
                timing.window = t
                if ok, t > timing.interval {
                    let given = interval == nil ? "the default \(names.0) of \(Self.ms(timing.interval.nanoseconds))" : "\(names.0) \(Self.ms(timing.interval.nanoseconds))"
                    error(window, expected: "a \(names.1) no longer than the \(names.0) (Core Vol 4 Part E 7.8.10)",
                          hint: "it is longer than \(given)\(interval == nil ? "; give '\(names.0)' too" : "")")
                    ok = false
                }
            } else { ok = false }
        }
        return (ok, ok ? timing : nil)
    }
}

extension ExpectationSchema {
    static let rssiKeys = ["peripheral", "at-least", "at-most", "from"]

    /// `rssi: { peripheral: ID, at-least: -70, at-most: -30, from: scan|link }`; `rssi: ID` with
    /// the bounds beside it. At least one bound; at-least ≤ at-most.
    func rssiExpectation(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)],
                         central: inout CentralSchema) -> Expectation? {
        let f = KeywordFields(reader: r, keyword: keyword, node: value, primary: "peripheral", allowed: Self.rssiKeys,
                              siblings: siblings, what: keyword.text)
        let example = "rssi: { peripheral: hm10, at-least: -70 }"
        var ok = true
        var atLeast: Int8?
        var atMost: Int8?
        if let n = f["at-least"] { atLeast = r.dBm(n); ok = ok && atLeast != nil }
        if let n = f["at-most"] { atMost = r.dBm(n); ok = ok && atMost != nil }
        if ok, f["at-least"] == nil, f["at-most"] == nil {
            r.error(at: keyword.mark, found: "'rssi' without 'at-least' or 'at-most'", expected: example)
            ok = false
        }
        if let low = atLeast, let high = atMost, low > high, let n = f["at-most"] {
            r.error(n, expected: "at-most no lower than at-least (\(low))", hint: "no RSSI is at least \(low) and at most \(high) dBm")
            ok = false
        }
        var source: RSSIExpectation.Source?
        if let n = f["from"] {
            let names = RSSIExpectation.Source.allCases.map(\.rawValue)
            if let s = r.scalar(n, "scan or link"), let parsed = RSSIExpectation.Source(rawValue: s.text) {
                source = parsed
            } else {
                if let s = n.scalar, !s.isEmpty { r.error(n, expected: "scan or link", hint: Spelling.suggestion(for: s.text, in: names)) }
                ok = false
            }
        }
        guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok else { return nil }
        return .rssi(RSSIExpectation(peripheral: id, atLeast: atLeast, atMost: atMost, source: source))
    }
}

extension CentralSchema {
    /// `parameter-requests: accept|reject` (or `{ answer: reject, peripheral: ID }`).
    mutating func parameterRequestsStep(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)]) -> CentralAction? {
        let f = KeywordFields(reader: r, keyword: keyword, node: value, primary: "answer", allowed: ["answer", "peripheral"],
                              siblings: siblings, what: keyword.text)
        let example = "parameter-requests: reject, or { answer: reject, peripheral: hm10 }"
        var accept: Bool?
        if let n = f.required("answer", r, example: example), let s = r.scalar(n, "accept or reject") {
            switch s.text {
            case "accept": accept = true
            case "reject": accept = false
            default: r.error(n, expected: "accept or reject", hint: Spelling.suggestion(for: s.text, in: ["accept", "reject"]))
            }
        }
        guard let id = target(f["peripheral"], characteristic: nil, at: keyword), let accept else { return nil }
        return .fault(.parameterRequests(peripheral: id, accept: accept))
    }
}

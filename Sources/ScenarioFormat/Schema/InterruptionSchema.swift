import BLERuntime
import HCI
import YAMLSubset

// `link-lost` and `connect-failed` (docs/scenarios.md "Expectations"): an operation cut short by
// the end of the link, a connect that gave no connection. Each is about the step right before it
// (only other expectations may stand between), which validation checks.

extension ExpectationSchema {
    static let interruptionKinds = ["link-lost", "connect-failed"]

    func interruptionExpectation(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)],
                                 central: inout CentralSchema) -> Expectation? {
        let f = KeywordFields(reader: r, keyword: keyword, node: value, primary: "peripheral", allowed: ["peripheral", "reason"],
                              siblings: siblings, what: keyword.text)
        // Unnamed, it is about the peripheral the step before talked to (even with others connected).
        let id = f["peripheral"] == nil ? central.lastTarget ?? central.target(nil, characteristic: nil, at: keyword)
                                        : central.target(f["peripheral"], characteristic: nil, at: keyword)
        switch keyword.text {
        case "link-lost":
            var reason: HCIStatus?
            var ok = true
            if let v = f["reason"] { reason = r.reason(v); ok = reason != nil }
            guard let id, ok else { return nil }
            return .interruption(.linkLost(peripheral: id, reason: reason))
        default:
            var reason: ConnectFailureReason?
            var ok = true
            if let v = f["reason"] { reason = connectFailure(v); ok = reason != nil }
            guard let id, ok else { return nil }
            return .interruption(.connectFailed(peripheral: id, reason: reason))
        }
    }

    /// `timeout`, or an HCI status name or `0xNN`.
    private func connectFailure(_ node: YAMLNode) -> ConnectFailureReason? {
        let expected = "timeout, or an HCI status such as connection-failed-to-be-established, or 0xNN"
        guard let s = r.scalar(node, expected) else { return nil }
        if s.text == "timeout" { return .timeout }
        if let status = HCIStatus(name: s.text), !status.isSuccess { return .status(status) }
        r.error(at: s.mark, found: "reason \(SchemaReader.quote(s.text))", expected: expected,
                hint: Spelling.suggestion(for: s.text, in: ["timeout"] + HCIStatus.allNames))
        return nil
    }
}

extension CentralSchema {
    /// Each `link-lost` must follow an operation, and each `connect-failed` a `connect`, with only
    /// other expectations between, and name the peripheral that step talks to.
    func checkInterruptions(_ steps: [CentralStep]) {
        for (i, step) in steps.enumerated() {
            guard case let .expect(.interruption(e)) = step.action else { continue }
            let before = steps[..<i].last { !$0.isExpectation }
            let name: String, fits: Bool, what: String
            switch e {
            case .linkLost:
                name = "link-lost"
                fits = before?.action.isOperation ?? false
                what = "an operation (discover, mtu, read, write, subscribe, unsubscribe)"
            case .connectFailed:
                name = "connect-failed"
                if case .connect? = before?.action { fits = true } else { fits = false }
                what = "a connect"
            }
            let mark = Mark(line: step.location.line, column: step.location.column)
            guard let before, fits else {
                r.error(at: mark, found: "\(name) after \(before.map { "'\($0.text)' (step \($0.index))" } ?? "the start of the script")",
                        expected: "\(name) among the expect steps right after \(what)",
                        hint: "put it right after the step it expects to \(name == "link-lost" ? "be cut short" : "fail")")
                continue
            }
            if let target = before.action.peripheral, target != e.peripheral {
                r.error(at: mark, found: "\(name) about \(e.peripheral)", expected: "the peripheral step \(before.index) talks to (\(target))",
                        hint: "write '\(name): \(target)'")
            }
        }
    }
}

import ATT
import BLERuntime
import Controller
import YAMLSubset

// Faults (docs/scenarios.md "Faults"): a peripheral's `link:` block and `mtu:`, the central's
// fault steps, the peripheral's fault actions and the link expectations. Each is validated like
// the rest of the format: unknown keys get the closest valid one, values say what they accept.

/// Reads what faults share: link faults, connection parameters, rates.
public struct FaultSyntax {
    let r: SchemaReader

    static let linkKeys = ["loss", "latency", "jitter", "drop", "pdus-per-event", "encryption"]
    static let dropKeys = ["att", "from"]
    static let parameterKeys = ["interval", "latency", "timeout"]

    /// `loss`, `latency`, `jitter`, `drop` from `field`.
    func linkFaults(_ field: (String) -> YAMLNode?) -> LinkFaults? {
        var faults = LinkFaults()
        var ok = true
        if let n = field("loss") {
            if let rate = percentage(n) { faults.lossRate = rate } else { ok = false }
        }
        if let n = field("latency") {
            if let t = r.duration(n, "an added latency") { faults.latency = t } else { ok = false }
        }
        if let n = field("jitter") {
            if let t = r.duration(n, "a jitter") { faults.jitter = t } else { ok = false }
        }
        if let n = field("drop") {
            if let drops = drops(n) { faults.drops = drops } else { ok = false }
        }
        if let n = field("pdus-per-event") {
            if let k = r.integer(n, in: 1...32, "a number of data PDUs per connection event from 1 to 32 (the lab's default is 4)") {
                faults.pdusPerEvent = Int(k)
            } else { ok = false }
        }
        if let n = field("encryption") {
            // The Encryption Start procedure (Vol 6 Part B 5.1.3.1) failing whatever the hosts do.
            let names = LinkFaults.EncryptionFault.allCases.map(\.rawValue)
            let expected = "an encryption fault: key-missing (PIN or Key Missing, 0x06) or mic-failure (Connection Terminated due to MIC Failure, 0x3D)"
            if let s = r.scalar(n, expected) {
                if let fault = LinkFaults.EncryptionFault(rawValue: s.text) {
                    faults.encryption = fault
                } else {
                    let squeezed = s.text.lowercased().filter { $0.isLetter || $0.isNumber }
                    let hint = squeezed.contains("pin") || squeezed == "0x06" || squeezed == "06" ? "did you mean 'key-missing'?"
                        : squeezed.contains("mic") || squeezed.contains("3d") ? "did you mean 'mic-failure'?"
                        : Spelling.suggestion(for: s.text, in: names)
                    r.error(n, expected: expected, hint: hint)
                    ok = false
                }
            } else { ok = false }
        }
        return ok ? faults : nil
    }

    /// `10%`, `0.5%`, `100%`: a probability.
    func percentage(_ node: YAMLNode) -> Double? {
        let expected = "a loss rate from 0% to 100% such as 10%"
        guard let s = r.scalar(node, expected) else { return nil }
        let text = s.text
        if text.hasSuffix("%") {
            let number = String(text.dropLast())
            if !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), number.first != ".",
               let value = Double(number), value >= 0, value <= 100 {
                return value / 100
            }
        }
        var hint: String?
        if let value = Double(text), value >= 0 {
            hint = value <= 1 ? "write it as a percentage: \(Self.trimmed(value * 100))%" : "write it as a percentage: \(text)%"
        }
        r.error(node, expected: expected, hint: hint)
        return nil
    }

    public static func trimmed(_ v: Double) -> String {
        v == v.rounded() ? String(Int(v)) : String(v)
    }

    /// `{ att: 3, from: central }` or a list of them.
    func drops(_ node: YAMLNode) -> [ATTDrop]? {
        let items: [YAMLNode]
        switch node {
        case let .sequence(s): items = s.items
        case .mapping: items = [node]
        default:
            r.error(node, expected: "an ATT PDU to drop such as { att: 3, from: central }, or a list of them")
            return nil
        }
        var result: [ATTDrop] = []
        var ok = true
        for item in items {
            guard let m = r.mapping(item, "an ATT PDU to drop such as { att: 3, from: central }") else { ok = false; continue }
            r.checkKeys(m, allowed: Self.dropKeys, of: "a drop")
            let index = r.required(m, "att", in: "a drop", expected: "'att: N', the Nth ATT PDU (from 1)")
                .flatMap { r.integer($0, in: 1...1_000_000, "the number of the ATT PDU to drop, from 1 to 1000000") }
            var side: ATTDrop.Side?
            if let f = r.required(m, "from", in: "a drop", expected: "'from: central' or 'from: peripheral'"),
               let s = r.scalar(f, "central or peripheral") {
                side = ATTDrop.Side(rawValue: s.text)
                if side == nil { r.error(f, expected: "central or peripheral", hint: Spelling.suggestion(for: s.text, in: ["central", "peripheral"])) }
            }
            guard let index, let side else { ok = false; continue }
            result.append(ATTDrop(from: side, index: Int(index)))
        }
        return ok ? result : nil
    }

    /// `10dB/s`, `2.5dB/s`.
    func rate(_ node: YAMLNode) -> Double? {
        let expected = "a rate above 0 and up to 1000dB/s, such as 10dB/s"
        guard let s = r.scalar(node, expected) else { return nil }
        let lower = s.text.lowercased()
        if lower.hasSuffix("db/s") {
            let number = String(lower.dropLast(4))
            if !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), number.first != ".",
               let value = Double(number), value > 0, value <= 1000 {
                return value
            }
        }
        r.error(node, expected: expected, hint: Double(s.text) != nil ? "add the unit: \(s.text)dB/s" : nil)
        return nil
    }

    /// `interval`, `latency`, `timeout` as LE Connection Update takes them (Vol 4 Part E 7.8.18):
    /// an interval of 7.5 ms to 4 s in 1.25 ms steps, a latency of 0 to 499 events, a timeout of
    /// 100 ms to 32 s in 10 ms steps, longer than (1 + latency) × interval × 2 (Vol 6 Part B 4.5.2).
    /// With `allOptional`, each may be absent (expectations).
    func parameters(_ field: (String) -> YAMLNode?, keyword: YAMLScalar, example: String,
                    allOptional: Bool = false) -> (interval: UInt16?, latency: UInt16?, timeout: UInt16?)? {
        var ok = true
        var interval: UInt16?
        var latency: UInt16?
        var timeout: UInt16?
        if let n = field("interval") {
            if let t = r.duration(n, "a connection interval") {
                let micros = t.nanoseconds / 1000
                if t.nanoseconds % 1_250_000 != 0 || micros < 7_500 || micros > 4_000_000 {
                    r.error(n, expected: "a connection interval from 7.5ms to 4s in steps of 1.25ms (such as 30ms, 48.75ms or 1s)")
                    ok = false
                } else {
                    interval = UInt16(micros / 1250)
                }
            } else { ok = false }
        } else if !allOptional {
            r.error(at: keyword.mark, found: "'\(keyword.text)' without 'interval'", expected: example)
            ok = false
        }
        if let n = field("latency") {
            if let l = r.integer(n, in: 0...499, "a peripheral latency from 0 to 499 connection events") { latency = UInt16(l) } else { ok = false }
        } else if !allOptional {
            latency = 0
        }
        if let n = field("timeout") {
            if let t = r.duration(n, "a supervision timeout") {
                if t.nanoseconds % 10_000_000 != 0 || t < .milliseconds(100) || t > .seconds(32) {
                    r.error(n, expected: "a supervision timeout from 100ms to 32s in steps of 10ms")
                    ok = false
                } else {
                    timeout = UInt16(t.nanoseconds / 10_000_000)
                    if let interval, let l = latency ?? (allOptional ? nil : 0),
                       Int64(timeout!) * 10_000 <= (1 + Int64(l)) * Int64(interval) * 1250 * 2 {
                        r.error(n, expected: "a supervision timeout longer than (1 + latency) × interval × 2 = \(ConnectionUpdateRequest.milliseconds(micros: (1 + Int64(l)) * Int64(interval) * 2500)) (Core Vol 6 Part B 4.5.2)")
                        ok = false
                    }
                }
            } else { ok = false }
        } else if !allOptional {
            r.error(at: keyword.mark, found: "'\(keyword.text)' without 'timeout'", expected: example)
            ok = false
        }
        if allOptional, ok, interval == nil, latency == nil, timeout == nil {
            r.error(at: keyword.mark, found: "'\(keyword.text)' without interval, latency or timeout", expected: example)
            ok = false
        }
        return ok ? (interval, latency, timeout) : nil
    }
}

// MARK: Peripherals

extension PeripheralSchema {
    static let faultKeys = ["link", "mtu"]

    /// `link:` and `mtu:` of one peripheral.
    func faults(_ m: YAMLMapping) -> PeripheralFaults? {
        var result = PeripheralFaults()
        if let l = m["link"], let lm = r.mapping(l, "link faults: a mapping with loss, latency, jitter, drop") {
            r.checkKeys(lm, allowed: FaultSyntax.linkKeys, of: "a link")
            result.link = FaultSyntax(r: r).linkFaults { lm[$0] }
        }
        if let n = m["mtu"], let mtu = r.integer(n, in: 23...517, "an ATT_MTU from 23 to 517") { result.mtu = Int(mtu) }
        return result == PeripheralFaults() ? nil : result
    }
}

// MARK: Central steps

extension CentralSchema {
    static let faultKeywords = ["link-loss", "out-of-range", "in-range", "power-off", "power-on", "connection-update", "link",
                                "parameter-requests"]
    /// Fault steps that may be written without a value (the peripheral connected there).
    static let bareFaultKeywords = ["link-loss", "out-of-range", "in-range", "power-off", "power-on"]

    static func faultExample(_ keyword: String) -> String? {
        switch keyword {
        case "link-loss": return "link-loss: hm10, or link-loss: { peripheral: hm10, after: 2s }"
        case "out-of-range": return "out-of-range: { peripheral: hm10, rate: 10dB/s }"
        case "power-off": return "power-off: hm10, or power-off: central, or power-off: { device: central, after: 12s }"
        case "in-range", "power-on": return "\(keyword): hm10"
        case "connection-update": return "connection-update: { interval: 50ms, latency: 0, timeout: 2s }"
        case "link": return "link: { peripheral: hm10, loss: 10%, latency: 15ms }"
        case "parameter-requests": return "parameter-requests: reject"
        default: return nil
        }
    }

    mutating func faultStep(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)]) -> CentralAction? {
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        let syntax = FaultSyntax(r: r)
        let example = Self.faultExample(keyword.text) ?? keyword.text
        switch keyword.text {
        case "link-loss":
            let f = fields("peripheral", ["peripheral", "after"])
            var after: TimeSpan?
            var ok = true
            if let a = f["after"] { after = r.duration(a); ok = after != nil }
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword), ok else { return nil }
            return .fault(.linkLoss(peripheral: id, after: after))
        case "out-of-range":
            let f = fields("peripheral", ["peripheral", "rate"])
            var rate: Double?
            var ok = true
            if let n = f["rate"] { rate = syntax.rate(n); ok = rate != nil }
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword), ok else { return nil }
            return .fault(.outOfRange(peripheral: id, rate: rate))
        case "power-off":
            return powerOffStep(keyword: keyword, fields: fields("peripheral", ["peripheral", "device", "after"]), example: example)
        case "in-range", "power-on":
            let f = fields("peripheral", ["peripheral"])
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword) else { return nil }
            switch keyword.text {
            case "in-range": return .fault(.inRange(peripheral: id))
            default: return .fault(.powerOn(peripheral: id))
            }
        case "connection-update":
            let f = fields(nil, FaultSyntax.parameterKeys + ["peripheral"])
            let parsed = syntax.parameters({ f[$0] }, keyword: keyword, example: example)
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword),
                  let p = parsed, let interval = p.interval, let timeout = p.timeout else { return nil }
            return .fault(.connectionUpdate(peripheral: id, ConnectionUpdateRequest(interval: interval, latency: p.latency ?? 0, timeout: timeout)))
        case "link":
            let f = fields(nil, FaultSyntax.linkKeys + ["peripheral"])
            let faults = syntax.linkFaults { f[$0] }
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword), let faults else { return nil }
            return .fault(.link(peripheral: id, faults))
        case "parameter-requests":
            return parameterRequestsStep(keyword: keyword, value: value, siblings: siblings)
        default:
            return nil
        }
    }
}

extension CentralSchema {
    /// `power-off: ID` (a peripheral), `power-off: central` or `{ device: central, after: T }`
    /// (the central's controller, at once or T later).
    private mutating func powerOffStep(keyword: YAMLScalar, fields f: KeywordFields, example: String) -> CentralAction? {
        let central = PeripheralSchema.centralID
        var device: YAMLNode?
        if let d = f["device"] {
            if f["peripheral"] != nil {
                r.error(at: keyword.mark, found: "'power-off' with both 'peripheral' and 'device'", expected: example)
                return nil
            }
            guard let s = r.scalar(d, "central"), s.text == central else {
                if let s = d.scalar, !s.isEmpty {
                    r.error(d, expected: "central (a peripheral is named with 'power-off: ID' or 'peripheral: ID')")
                }
                return nil
            }
            device = d
        } else if let p = f["peripheral"], p.scalar?.text == central {
            device = p
        }
        var after: TimeSpan?
        if let a = f["after"] {
            guard device != nil else {
                r.error(at: keyword.mark, found: "'after' with a peripheral's power-off", expected: "'after' with the central's: \(example)")
                return nil
            }
            guard let parsed = r.duration(a) else { return nil }
            after = parsed
        }
        if device != nil { return .fault(.centralPowerOff(after: after)) }
        guard let id = target(f["peripheral"], characteristic: nil, at: keyword) else { return nil }
        return .fault(.powerOff(peripheral: id))
    }
}

// MARK: Peripheral actions

extension ActionSchema {
    static let faultKeywords = ["power-off", "request-connection-update", "burst"]

    func faultAction(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)],
                     site: ActionSite) -> (PeripheralAction, Mark)? {
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        switch keyword.text {
        case "power-off":
            for (k, _) in siblings {
                r.error(at: k.mark, found: "unknown key \(SchemaReader.quote(k.text))", expected: "'power-off' alone")
            }
            if !value.isEmptyValue { r.error(value, expected: "'power-off' without a value") }
            return (.powerOff, keyword.mark)
        case "request-connection-update":
            let example = "request-connection-update: { interval: 100ms, latency: 4, timeout: 6s }"
            let f = fields(nil, FaultSyntax.parameterKeys + ["via"])
            var via = ConnectionUpdateRequest.Procedure.l2cap
            var ok = true
            if let n = f["via"] {
                let names = ConnectionUpdateRequest.Procedure.allCases.map(\.rawValue)
                if let s = r.scalar(n, "l2cap or link-layer"), let parsed = ConnectionUpdateRequest.Procedure(rawValue: s.text) {
                    via = parsed
                } else {
                    if let s = n.scalar, !s.isEmpty { r.error(n, expected: "l2cap or link-layer", hint: Spelling.suggestion(for: s.text, in: names)) }
                    ok = false
                }
            }
            guard let p = FaultSyntax(r: r).parameters({ f[$0] }, keyword: keyword, example: example),
                  let interval = p.interval, let timeout = p.timeout, ok else { return nil }
            return (.requestConnectionUpdate(ConnectionUpdateRequest(interval: interval, latency: p.latency ?? 0, timeout: timeout, via: via)),
                    keyword.mark)
        case "burst":
            let example = "burst: { characteristic: FFE1, count: 20, value: { counter-u8: 0 } }"
            let f = fields(nil, ["characteristic", "count", "value"])
            guard let c = f.required("characteristic", r, example: example), let ref = characteristic(c, sending: keyword.text) else { return nil }
            guard let n = f.required("count", r, example: example),
                  let count = r.integer(n, in: 1...10_000, "a count from 1 to 10000") else { return nil }
            var source: ValueSource?
            if let v = f["value"] {
                guard let parsed = r.attributeValue(v, context: .action(writtenAllowed: site == .onWrite)) else { return nil }
                source = parsed
            }
            return (.burst(ref, value: source, count: Int(count)), keyword.mark)
        default:
            return nil
        }
    }
}

// MARK: Expectations

extension ExpectationSchema {
    static let faultKinds = ["connection-parameters", "mtu"]

    func faultExpectation(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)],
                          central: inout CentralSchema) -> Expectation? {
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        switch keyword.text {
        case "connection-parameters":
            let f = fields(nil, FaultSyntax.parameterKeys + ["within", "peripheral"])
            let example = "connection-parameters: { interval: 50ms, latency: 0, timeout: 2s }"
            let p = FaultSyntax(r: r).parameters({ f[$0] }, keyword: keyword, example: example, allOptional: true)
            var within: TimeSpan? = Expectation.defaultWithin
            if let w = f["within"] { within = r.duration(w) }
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), let p, let within else { return nil }
            return .fault(.connectionParameters(peripheral: id, interval: p.interval, latency: p.latency, timeout: p.timeout, within: within))
        case "mtu":
            let f = fields("size", ["size", "peripheral"])
            let size = f.required("size", r, example: "mtu: 23").flatMap { r.integer($0, in: 23...517, "an ATT_MTU from 23 to 517") }
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), let size else { return nil }
            return .fault(.mtu(peripheral: id, Int(size)))
        default:
            return nil
        }
    }
}

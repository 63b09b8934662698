import ATT
import BLERuntime
import HCI
import YAMLSubset

/// Reads `expect: {…}` (docs/scenarios.md sections 6 and 8).
/// One expectation per step; `notification` takes `value`, `count`, `within` and `in-order`
/// beside it.
struct ExpectationSchema {
    let r: SchemaReader

    static let kinds = ["discovered", "not-discovered", "only-discovered", "connected", "services", "characteristic", "value", "write-sent-as", "error",
                        "peripheral-received", "notification", "no-notification", "disconnected", "rssi"] + flawKinds + faultKinds
        + interruptionKinds + securityKinds

    mutating func expectation(_ node: YAMLNode, central: inout CentralSchema) -> Expectation? {
        guard let m = r.mapping(node, "an expectation such as { discovered: hm10 } or { notification: FFE1, value: text:hi }") else { return nil }
        // `value` beside `notification` is the notification's value, not the last read.
        let kinds = m.entries.filter { Self.kinds.contains($0.key.text) && !($0.key.text == "value" && m["notification"] != nil) }
        guard let (keyword, value) = kinds.first else {
            let first = m.entries.first?.key
            r.error(at: first?.mark ?? m.mark, found: first.map { "unknown expectation \(SchemaReader.quote($0.text))" } ?? "an empty expectation",
                    expected: "an expectation (\(Self.kinds.joined(separator: ", ")))",
                    hint: first.flatMap { Spelling.suggestion(for: $0.text, in: Self.kinds) })
            return nil
        }
        if kinds.count > 1 {
            r.error(at: kinds[1].key.mark, found: "'\(keyword.text)' and '\(kinds[1].key.text)' in one expect",
                    expected: "one expectation per expect step", hint: "split them into two '- expect:' steps")
            return nil
        }
        let siblings = m.entries.filter { $0.key.text != keyword.text }
        if keyword.text == "value" {
            // `{ notifcation: FFE1, value: … }`: the misspelt kind left `value` alone, which
            // would read as the last read's value; report the misspelling, not `value`'s options.
            for (k, _) in siblings {
                guard let kind = Spelling.closest(to: k.text, in: Self.kinds.filter { $0 != "value" }) else { continue }
                r.error(at: k.mark, found: "unknown expectation \(SchemaReader.quote(k.text))",
                        expected: "an expectation (\(Self.kinds.joined(separator: ", ")))", hint: "did you mean '\(kind)'?")
                return nil
            }
        }
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        func within(_ f: KeywordFields) -> TimeSpan? {
            guard let w = f["within"] else { return Expectation.defaultWithin }
            return r.duration(w)
        }
        switch keyword.text {
        case "discovered", "not-discovered", "connected":
            let f = fields("peripheral", ["peripheral"])
            guard let p = f.required("peripheral", r, example: "\(keyword.text): hm10"), let id = central.peripheralID(p) else { return nil }
            switch keyword.text {
            case "discovered": return .discovered(id)
            case "not-discovered": return .notDiscovered(id)
            default: return .connected(id)
            }
        case "only-discovered":
            let f = fields("peripherals", ["peripherals"])
            guard let list = f.required("peripherals", r, example: "only-discovered: [sensor, strap]"),
                  let items = r.items(list, "a list of peripheral ids, such as [sensor, strap]") else { return nil }
            var ids: [String] = []
            for item in items {
                guard let id = central.peripheralID(item) else { return nil }
                ids.append(id)
            }
            return .onlyDiscovered(ids)
        case "services":
            let f = fields("services", ["services", "peripheral"])
            let list = f.required("services", r, example: "services: [FFE0]").flatMap { r.uuids($0, "service") }
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), let list else { return nil }
            return .services(list, peripheral: id)
        case "characteristic":
            let f = fields("uuid", ["uuid", "properties", "peripheral"])
            let example = "characteristic: { uuid: FFE1, properties: [read, notify] }"
            guard let u = f.required("uuid", r, example: example) else { return nil }
            let resolved = central.characteristic(u, peripheral: f["peripheral"], at: keyword)
            let properties = f.required("properties", r, example: example).flatMap { r.properties($0) }
            guard let (id, ref) = resolved, let properties else { return nil }
            return .characteristic(ref, properties: properties, peripheral: id)
        case "value":
            let f = fields("value", ["value"])
            guard let v = f.required("value", r, example: "value: text:ready"), let bytes = r.attributeBytes(v) else { return nil }
            return .value(bytes)
        case "write-sent-as":
            let f = fields("method", ["method"])
            let names = WriteMethod.allCases.map(\.rawValue)
            guard let v = f.required("method", r, example: "write-sent-as: command"), let s = r.scalar(v, "command or request") else { return nil }
            guard let method = WriteMethod(rawValue: s.text) else {
                r.error(v, expected: "command or request", hint: Spelling.suggestion(for: s.text, in: names))
                return nil
            }
            return .writeSentAs(method)
        case "error":
            let f = fields("code", ["code"])
            guard let v = f.required("code", r, example: "error: write-not-permitted"), let code = r.attError(v) else { return nil }
            return .error(code)
        case "peripheral-received":
            let f = fields("characteristic", ["characteristic", "value", "via", "within", "peripheral"])
            let example = "peripheral-received: { characteristic: FFF1, value: text:hi, via: command }"
            guard let c = f.required("characteristic", r, example: example) else { return nil }
            let resolved = central.characteristic(c, peripheral: f["peripheral"], at: keyword)
            var ok = true
            var bytes: [UInt8]?
            if let v = f["value"] { bytes = r.attributeBytes(v); ok = ok && bytes != nil }
            var via: WriteMethod?
            if let v = f["via"] {
                let names = WriteMethod.allCases.map(\.rawValue)
                if let s = r.scalar(v, "command or request"), let m = WriteMethod(rawValue: s.text) {
                    via = m
                } else {
                    if let s = v.scalar, !s.isEmpty { r.error(v, expected: "command or request", hint: Spelling.suggestion(for: s.text, in: names)) }
                    ok = false
                }
            }
            let span = within(f)
            guard ok, let (id, ref) = resolved, let span else { return nil }
            return .peripheralReceived(PeripheralReceivedExpectation(peripheral: id, characteristic: ref, value: bytes, via: via, within: span))
        case "notification":
            let f = fields("characteristic", ["characteristic", "value", "count", "within", "in-order", "peripheral"])
            guard let c = f.required("characteristic", r, example: "notification: FFE1") else { return nil }
            let resolved = central.characteristic(c, peripheral: f["peripheral"], at: keyword)
            var ok = true
            var bytes: [UInt8]?
            if let v = f["value"] { bytes = r.attributeBytes(v); ok = ok && bytes != nil }
            var count: Int?
            if let n = f["count"] {
                count = r.integer(n, in: 0...1_000_000, "a count from 0 to 1000000").map { Int($0) }
                ok = ok && count != nil
            }
            var inOrder: [[UInt8]]?
            if let o = f["in-order"] {
                if let items = r.sequence(o, "a list of values such as [text:a, text:b]")?.items {
                    let values = items.map { r.attributeBytes($0) }
                    if values.contains(where: { $0 == nil }) { ok = false } else { inOrder = values.compactMap { $0 } }
                    if let count, let inOrder, count != inOrder.count {
                        r.error(o, expected: "\(count) values, as count says", hint: "count and in-order must agree")
                        ok = false
                    }
                } else {
                    ok = false
                }
            }
            if count == 0, bytes != nil {
                r.error(f["value"] ?? c, expected: "no value with count: 0", hint: "use no-notification to expect none")
                ok = false
            }
            let span = within(f)
            guard ok, let (id, ref) = resolved, let span else { return nil }
            return .notification(NotificationExpectation(peripheral: id, characteristic: ref, value: bytes, count: count, within: span, inOrder: inOrder))
        case "no-notification":
            let f = fields("characteristic", ["characteristic", "for", "peripheral"])
            let example = "no-notification: { characteristic: FFE1, for: 1s }"
            guard let c = f.required("characteristic", r, example: example) else { return nil }
            let resolved = central.characteristic(c, peripheral: f["peripheral"], at: keyword)
            let span = f.required("for", r, example: example).flatMap { r.duration($0) }
            guard let (id, ref) = resolved, let span else { return nil }
            return .noNotification(peripheral: id, characteristic: ref, duration: span)
        case "disconnected":
            let f = fields("peripheral", ["peripheral", "reason", "within"])
            var ok = true
            var reason: HCIStatus?
            if let v = f["reason"] { reason = r.reason(v); ok = reason != nil }
            let span = within(f)
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok, let span else { return nil }
            return .disconnected(peripheral: id, reason: reason, within: span)
        case "rssi":
            return rssiExpectation(keyword: keyword, value: value, siblings: siblings, central: &central)
        case _ where Self.flawKinds.contains(keyword.text):
            return flawExpectation(keyword: keyword, value: value, siblings: siblings, central: &central)
        case _ where Self.securityKinds.contains(keyword.text):
            return securityExpectation(keyword: keyword, value: value, siblings: siblings, central: &central)
        case _ where Self.interruptionKinds.contains(keyword.text):
            return interruptionExpectation(keyword: keyword, value: value, siblings: siblings, central: &central)
        default:
            return faultExpectation(keyword: keyword, value: value, siblings: siblings, central: &central)
        }
    }
}

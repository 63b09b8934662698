import ATT
import BLERuntime
import GATT
import HCI
import YAMLSubset

/// Where a list of peripheral actions runs, which decides what it may contain.
enum ActionSite: Equatable {
    case onWrite, onRead, onSubscribe, onUnsubscribe, onConnect, onDisconnect
    /// A central step `peripheral: { ID: [actions] }`.
    case step

    var name: String {
        switch self {
        case .onWrite: return "on-write"
        case .onRead: return "on-read"
        case .onSubscribe: return "on-subscribe"
        case .onUnsubscribe: return "on-unsubscribe"
        case .onConnect: return "on-connect"
        case .onDisconnect: return "on-disconnect"
        case .step: return "a peripheral step"
        }
    }

    /// Whether a request is being answered (`respond-error` has something to answer).
    var answersRequest: Bool { self == .onWrite || self == .onRead }
}

/// Reads peripheral actions (docs/scenarios.md section 7) for one peripheral.
struct ActionSchema {
    let r: SchemaReader
    let catalog: PeripheralCatalog
    let peripheral: String

    /// The reasons HCI Disconnect accepts (Core 5.4 Vol 4 Part E 7.1.6).
    static let disconnectReasons: [HCIStatus] = [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B].map { HCIStatus(rawValue: $0) }

    static let keywords = ["notify", "indicate", "notify-every", "stop-notifying", "set-value", "respond-error", "delay",
                           "disconnect", "stop-advertising", "start-advertising", "forget-bonds"] + flawKeywords + faultKeywords

    func actions(_ node: YAMLNode, site: ActionSite) -> [PeripheralAction] {
        guard let items = items(node) else { return [] }
        var result: [PeripheralAction] = []
        var sawOther = false
        for item in items {
            guard let (action, keywordMark) = self.action(item, site: site) else { continue }
            if case .respondError = action {
                if !site.answersRequest {
                    r.error(at: keywordMark, found: "respond-error in \(site.name)",
                            expected: "respond-error only in on-read or on-write, where there is a request to answer")
                } else if sawOther {
                    r.error(at: keywordMark, found: "respond-error after another action",
                            expected: "respond-error as the first action (after any delay)",
                            hint: "the request is answered before the first other action runs")
                }
            }
            if case .delay = action {} else { sawOther = true }
            result.append(action)
        }
        return result
    }

    private func items(_ node: YAMLNode) -> [YAMLNode]? {
        switch node {
        case let .sequence(s): return s.items
        case .mapping: return [node]
        default:
            r.error(node, expected: "a list of actions such as [{ notify: FFE1 }]")
            return nil
        }
    }

    /// One action and where its keyword is.
    private func action(_ item: YAMLNode, site: ActionSite) -> (PeripheralAction, Mark)? {
        if let s = item.scalar, !s.isEmpty {
            switch s.text {
            case "disconnect": return (.disconnect(nil), s.mark)
            case "stop-advertising": return (.stopAdvertising, s.mark)
            case "start-advertising": return (.startAdvertising, s.mark)
            case "service-changed": return (.serviceChanged(nil), s.mark)
            case "power-off": return (.powerOff, s.mark)
            case "forget-bonds": return (.forgetBonds, s.mark)
            default:
                let hint = Self.keywords.contains(s.text) ? "write '\(s.text): …' with its characteristic or value"
                    : Spelling.suggestion(for: s.text, in: Self.keywords)
                r.error(item, expected: "an action (\(Self.keywords.joined(separator: ", ")))", hint: hint)
                return nil
            }
        }
        guard let m = r.mapping(item, "an action such as 'notify: FFE1' or 'delay: 100ms'") else { return nil }
        guard let (keyword, value) = m.entries.first(where: { Self.keywords.contains($0.key.text) }) else {
            let first = m.entries.first?.key
            r.error(at: first?.mark ?? m.mark, found: first.map { "unknown action \(SchemaReader.quote($0.text))" } ?? "an empty mapping",
                    expected: "an action (\(Self.keywords.joined(separator: ", ")))",
                    hint: first.flatMap { Spelling.suggestion(for: $0.text, in: Self.keywords) })
            return nil
        }
        if let second = m.entries.first(where: { $0.key.text != keyword.text && Self.keywords.contains($0.key.text) }) {
            r.error(at: second.key.mark, found: "'\(keyword.text)' and '\(second.key.text)' in one action", expected: "one action per list item",
                    hint: "split them into two items, each starting with '- '")
            return nil
        }
        let siblings = m.entries.filter { $0.key.text != keyword.text }
        let writtenAllowed = site == .onWrite
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        func noOptions() -> Bool {
            r.probe?.note(keyword.text, .valueOnly)
            for (k, _) in siblings {
                r.error(at: k.mark, found: "unknown key \(SchemaReader.quote(k.text))", expected: "'\(keyword.text)' alone")
            }
            return siblings.isEmpty
        }
        switch keyword.text {
        case "notify", "indicate":
            let f = fields("characteristic", ["characteristic", "value"])
            guard let c = f.required("characteristic", r, example: "\(keyword.text): FFE1"),
                  let ref = characteristic(c, sending: keyword.text) else { return nil }
            var source: ValueSource?
            if let v = f["value"] {
                guard let parsed = r.attributeValue(v, context: .action(writtenAllowed: writtenAllowed)) else { return nil }
                source = parsed
            }
            return (keyword.text == "notify" ? .notify(ref, source) : .indicate(ref, source), keyword.mark)
        case "notify-every":
            let f = fields(nil, ["characteristic", "interval", "value", "count"])
            let example = "notify-every: { characteristic: 2A37, interval: 1s, value: …, count: N }"
            guard let c = f.required("characteristic", r, example: example), let ref = characteristic(c, sending: keyword.text),
                  let i = f.required("interval", r, example: example), let interval = r.duration(i, "an interval") else { return nil }
            guard interval > .zero else {
                r.error(i, expected: "an interval longer than 0s")
                return nil
            }
            var source: ValueSource?
            if let v = f["value"] {
                guard let parsed = r.attributeValue(v, context: .action(writtenAllowed: writtenAllowed)) else { return nil }
                source = parsed
            }
            var count: Int?
            if let n = f["count"] {
                guard let parsed = r.integer(n, in: 1...1_000_000, "a count from 1 to 1000000") else { return nil }
                count = Int(parsed)
            }
            return (.notifyEvery(ref, interval: interval, value: source, count: count), keyword.mark)
        case "stop-notifying":
            let f = fields("characteristic", ["characteristic"])
            guard let c = f.required("characteristic", r, example: "stop-notifying: 2A37"), let ref = characteristic(c) else { return nil }
            return (.stopNotifying(ref), keyword.mark)
        case "set-value":
            let f = fields("characteristic", ["characteristic", "value"])
            let example = "set-value: { characteristic: 2A19, value: u8:90 }"
            guard let c = f.required("characteristic", r, example: example), let ref = characteristic(c),
                  let v = f.required("value", r, example: example),
                  let source = r.attributeValue(v, context: .action(writtenAllowed: writtenAllowed)) else { return nil }
            return (.setValue(ref, source), keyword.mark)
        case "respond-error":
            guard noOptions(), let code = r.attError(value) else { return nil }
            return (.respondError(code), keyword.mark)
        case "delay":
            guard noOptions(), let span = r.duration(value) else { return nil }
            return (.delay(span), keyword.mark)
        case "disconnect":
            let f = fields("reason", ["reason"])
            guard let reasonNode = f["reason"] else { return (.disconnect(nil), keyword.mark) }
            guard let reason = r.reason(reasonNode) else { return nil }
            guard Self.disconnectReasons.contains(reason) else {
                r.error(reasonNode, expected: "a reason HCI Disconnect allows (\(Self.disconnectReasons.map(\.name).joined(separator: ", ")))",
                        hint: reason == .connectionTimeout ? "a supervision timeout happens to a link, it is not a reason to give" : nil)
                return nil
            }
            return (.disconnect(reason), keyword.mark)
        case "stop-advertising", "start-advertising":
            guard noOptions() else { return nil }
            if !value.isEmptyValue { r.error(value, expected: "'\(keyword.text)' without a value") }
            return (keyword.text == "stop-advertising" ? .stopAdvertising : .startAdvertising, keyword.mark)
        case _ where Self.flawKeywords.contains(keyword.text):
            return flawAction(keyword: keyword, value: value, siblings: siblings, site: site).map { ($0, keyword.mark) }
        default:
            return faultAction(keyword: keyword, value: value, siblings: siblings, site: site)
        }
    }

    /// A characteristic of this peripheral.
    func characteristic(_ node: YAMLNode) -> CharacteristicRef? {
        CharacteristicResolver(r: r, catalog: catalog).resolve(node, in: peripheral, context: "\(peripheral)", suggestingOthers: false)
    }

    /// A characteristic of this peripheral that `keyword` can send a notification or indication
    /// of: the server sends one only to a central whose CCCD enables it (Core Vol 3 Part G 3.3.3.3),
    /// and a characteristic gets a CCCD only with `notify` or `indicate`. Without the property the
    /// action would send nothing, every time, while its step said ok.
    func characteristic(_ node: YAMLNode, sending keyword: String) -> CharacteristicRef? {
        let resolver = CharacteristicResolver(r: r, catalog: catalog)
        guard let (ref, entry) = resolver.resolveEntry(node, in: peripheral, context: "\(peripheral)", suggestingOthers: false) else { return nil }
        let needed: CharacteristicProperties = keyword == "indicate" ? .indicate : .notify
        guard let properties = entry?.properties, !properties.contains(needed) else { return ref }
        let name = keyword == "indicate" ? "indicate" : "notify"
        let hint: String
        if keyword == "indicate" && properties.contains(.notify) {
            hint = "\(ref) offers notify: write 'notify: \(ref)', or add indicate to its properties"
        } else if keyword != "indicate" && properties.contains(.indicate) {
            hint = keyword == "notify" ? "\(ref) offers indicate: write 'indicate: \(ref)', or add notify to its properties"
                : "add notify to \(ref)'s properties (\(keyword) sends notifications; \(ref) offers indicate)"
        } else {
            hint = "add \(name) to \(ref)'s properties, or send to its handle regardless with \(name)-handle"
        }
        r.error(at: node.mark, found: "characteristic \(SchemaReader.found(node)) without \(name) (its properties: \(properties))",
                expected: "a characteristic with \(name), whose CCCD a central can enable", hint: hint)
        return nil
    }
}

/// Resolves a characteristic UUID against one peripheral's database, with the errors the format
/// promises: undeclared (and where it is declared instead) and ambiguous (with the fix).
struct CharacteristicResolver {
    let r: SchemaReader
    let catalog: PeripheralCatalog

    func parse(_ node: YAMLNode) -> (CharacteristicRef, YAMLScalar)? {
        let expected = "a characteristic UUID such as FFE1, or SERVICE/CHARACTERISTIC such as 180F/2A19"
        guard let s = r.scalar(node, expected) else { return nil }
        guard let ref = CharacteristicRef(string: s.text) else {
            r.error(node, expected: expected)
            return nil
        }
        return (ref, s)
    }

    /// - Parameter context: how messages name the peripheral ("hm10", "hm10 (the peripheral this step talks to)").
    ///   - suggestingOthers: point to other peripherals that declare it (not for a peripheral's own
    ///     actions, which only reach its own database).
    func resolve(_ node: YAMLNode, in peripheral: String, context: String, suggestingOthers: Bool = true) -> CharacteristicRef? {
        resolveEntry(node, in: peripheral, context: context, suggestingOthers: suggestingOthers)?.ref
    }

    /// The reference and, when the peripheral is known, what the file declares of it.
    func resolveEntry(_ node: YAMLNode, in peripheral: String, context: String,
                      suggestingOthers: Bool = true) -> (ref: CharacteristicRef, entry: PeripheralCatalog.Entry?)? {
        guard let (ref, s) = parse(node) else { return nil }
        guard catalog.contains(peripheral) else { return (ref, nil) }   // unknown peripheral: reported elsewhere
        switch catalog.resolve(ref, in: peripheral) {
        case let .success(entry): return (ref, entry)
        case .failure where catalog.isIncomplete(peripheral):
            // It may be under the service whose UUID is already reported: one error is enough.
            return nil
        case let .failure(.undeclared(elsewhere)):
            let declared = catalog.declared(in: peripheral)
            var hint: String?
            if suggestingOthers && !elsewhere.isEmpty {
                hint = "\(ref) is declared by \(SchemaReader.list(elsewhere, "and")); say which peripheral with 'peripheral: \(elsewhere[0])'"
            } else if let close = Spelling.closest(to: s.text, in: declared) {
                hint = "did you mean '\(close)'?"
            }
            let list = declared.isEmpty ? "none declared" : declared.joined(separator: ", ")
            r.error(at: s.mark, found: "characteristic \(SchemaReader.quote(s.text))",
                    expected: "a characteristic declared by \(context) (\(list))", hint: hint)
            return nil
        case let .failure(.ambiguous(services)):
            let options = services.map { "'\($0)/\(ref.characteristic)'" }
            r.error(at: s.mark, found: "characteristic \(SchemaReader.quote(s.text)) in \(services.count) services of \(peripheral) (\(services.map(\.description).joined(separator: ", ")))",
                    expected: "SERVICE/CHARACTERISTIC", hint: "write \(SchemaReader.list(options))")
            return nil
        }
    }
}

import BLERuntime
import GATT
import HCI
import YAMLSubset

// Reads the security keys (docs/scenarios.md section 19, model in Security.swift): a peripheral's
// `security:`, a characteristic's `permissions:`, the central's `pair`, `encrypt` and `auto-pair`
// steps and the expectations `paired`, `encrypted`, `pairing-failed`, `encryption-failed`.

/// What a peripheral's `security:` and a `pair:` step share.
struct SecuritySchema {
    let r: SchemaReader

    /// The keys of `security:` and of a `pair:` step's settings.
    static let settingKeys = ["io", "secure-connections", "bonding", "mitm", "passkey", "confirm", "oob"]

    /// A peripheral's `security: { io, secure-connections, bonding, mitm, passkey, confirm, request-security }`.
    func peripheralSecurity(_ node: YAMLNode) -> PeripheralSecurity? {
        guard let m = r.mapping(node, "security settings such as { io: display-only, passkey: 123456, request-security: on-connect }")
        else { return nil }
        r.checkKeys(m, allowed: Self.settingKeys + ["request-security"], of: "a security")
        var security = PeripheralSecurity(settings: settings { m[$0] })
        if let n = m["request-security"], let s = r.scalar(n, "on-connect") {
            if s.text == "on-connect" {
                security.requestsSecurityOnConnect = true
            } else {
                r.error(n, expected: "on-connect (it sends Security Request when a central connects)",
                        hint: Spelling.suggestion(for: s.text, in: ["on-connect"]))
            }
        }
        return security
    }

    /// A peripheral's `privacy: { rotate: 15m }`.
    func privacy(_ node: YAMLNode) -> PeripheralPrivacy? {
        guard let m = r.mapping(node, "privacy settings such as { rotate: 15m } (how often the resolvable private address changes)") else {
            return nil
        }
        r.checkKeys(m, allowed: ["rotate"], of: "a privacy")
        guard let n = r.required(m, "rotate", in: "privacy", expected: "privacy: { rotate: DURATION }, such as { rotate: 15m }"),
              let span = r.duration(n, "a rotation interval") else { return nil }
        let range = PeripheralPrivacy.rotateRange
        guard range.contains(span) else {
            r.error(n, expected: "a rotation interval from \(range.lowerBound) to 1h (a controller's RPA timeout, Core Vol 4 Part E 7.8.45)",
                    hint: span < range.lowerBound ? "an address that changes more often than every second is no device's; Core Vol 3 Part C 10.8.2.2 recommends 15m"
                        : "Core Vol 3 Part C 10.8.2.2 recommends 15m")
            return nil
        }
        return PeripheralPrivacy(rotate: span)
    }

    /// The settings among fields `field` gives.
    func settings(_ field: (String) -> YAMLNode?) -> SecuritySpec {
        var spec = SecuritySpec()
        if let n = field("io"), let s = r.scalar(n, "an IO capability") {
            let names = IOCapabilityName.allCases.map(\.rawValue)
            if let io = IOCapabilityName(rawValue: s.text) {
                spec.io = io
            } else {
                r.error(at: s.mark, found: "IO capability \(SchemaReader.quote(s.text))", expected: "one of \(names.joined(separator: ", "))",
                        hint: Spelling.suggestion(for: s.text, in: names) ?? Self.ioHint(s.text))
            }
        }
        if let n = field("secure-connections") { spec.secureConnections = r.boolean(n) }
        if let n = field("bonding") { spec.bonding = r.boolean(n) }
        if let n = field("mitm") { spec.mitm = r.boolean(n) }
        if let n = field("confirm") { spec.confirm = r.boolean(n) }
        if let n = field("oob") { spec.oob = r.boolean(n) }
        if let n = field("passkey"), let s = r.scalar(n, "a passkey of six digits such as 123456") {
            // Vol 3 Part H 2.3.5.3: a passkey is 000000 to 999999, shown with its leading zeros.
            if s.text.count == 6, s.text.allSatisfy({ $0.isASCII && $0.isNumber }), let v = UInt32(s.text) {
                spec.passkey = v
            } else {
                let hint = s.text.allSatisfy({ $0.isASCII && $0.isNumber }) ? "write all six digits, leading zeros too (\(String(repeating: "0", count: max(0, 6 - s.text.count)) + s.text))" : nil
                r.error(at: s.mark, found: "passkey \(SchemaReader.quote(s.text))", expected: "a passkey of six digits, 000000 to 999999 (Core Vol 3 Part H 2.3.5.3)",
                        hint: s.text.count < 6 ? hint : nil)
            }
        }
        return spec
    }

    /// What a phone's or a module's wording means.
    static func ioHint(_ text: String) -> String? {
        let squeezed = text.lowercased().filter { $0.isLetter }
        if squeezed.contains("none") || squeezed == "noio" || squeezed == "justworks" {
            return "a device with neither display nor keyboard is no-input-no-output"
        }
        if squeezed.contains("display") && squeezed.contains("keyboard") { return "did you mean 'keyboard-display'?" }
        if squeezed.contains("yesno") { return "did you mean 'display-yes-no'?" }
        return nil
    }

    /// `permissions: [encrypted-read, …]` of a characteristic.
    func permissions(_ node: YAMLNode, properties: CharacteristicProperties, into spec: inout CharacteristicSpec) {
        guard let items = r.items(node, "a list of permissions such as [encrypted-read, encrypted-write]") else { return }
        for item in items {
            guard let s = r.scalar(item, "a permission (\(PermissionName.all.joined(separator: ", ")))") else { continue }
            guard PermissionName.apply(s.text, value: &spec.permissions, configuration: &spec.configurationPermissions) else {
                let squeezed = s.text.lowercased().filter { $0.isLetter }
                let hint = squeezed.contains("notify") || squeezed.contains("cccd") || squeezed.contains("indicate")
                    ? "encrypted-subscribe protects the CCCD (what a subscription writes)"
                    : Spelling.suggestion(for: s.text, in: PermissionName.all)
                r.error(at: s.mark, found: "permission \(SchemaReader.quote(s.text))", expected: "one of \(PermissionName.all.joined(separator: ", "))",
                        hint: hint)
                continue
            }
            if s.text.hasSuffix("subscribe"), properties.isDisjoint(with: [.notify, .indicate]) {
                r.error(at: s.mark, found: "\(s.text) on a characteristic with neither notify nor indicate",
                        expected: "a characteristic with a CCCD (notify or indicate) to protect", hint: "add notify to its properties, or remove \(s.text)")
            }
        }
    }
}

extension CentralSchema {
    static let securityKeywords = ["pair", "encrypt", "auto-pair"]
    static let bareSecurityKeywords = ["pair", "encrypt"]

    static func securityExample(_ keyword: String) -> String? {
        switch keyword {
        case "pair": return "pair: { peripheral: lock, io: keyboard-only, passkey: 123456 }"
        case "encrypt": return "encrypt: lock"
        case "auto-pair": return "auto-pair: true"
        default: return nil
        }
    }

    /// `oob: true` aimed at a peripheral (or, for auto-pair, a scenario) without OOB data.
    private func outOfBandError(_ node: YAMLNode, _ id: String?) {
        let what = id.map { "oob: true for \($0), whose security: has no oob: true" } ?? "oob: true, while no peripheral's security: has oob: true"
        r.error(at: node.mark, found: what, expected: "a peripheral that can exchange data out of band (an NFC tag, a QR code)",
                hint: "add oob: true to \(id ?? "the peripheral")'s security:, or leave oob out of this step")
    }

    mutating func securityStep(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)]) -> CentralAction? {
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        switch keyword.text {
        case "pair":
            let f = fields("peripheral", ["peripheral"] + SecuritySchema.settingKeys)
            let settings = SecuritySchema(r: r).settings { f[$0] }
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword) else { return nil }
            if settings.oob == true, let n = f["oob"], !catalog.outOfBand.contains(id) { outOfBandError(n, id) }
            return .security(.pair(peripheral: id, settings: settings))
        case "encrypt":
            let f = fields("peripheral", ["peripheral"])
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword) else { return nil }
            return .security(.encrypt(peripheral: id))
        default:
            let f = fields("enabled", ["enabled"] + SecuritySchema.settingKeys)
            let settings = SecuritySchema(r: r).settings { f[$0] }
            if settings.oob == true, let n = f["oob"], catalog.outOfBand.isEmpty { outOfBandError(n, nil) }
            guard let n = f.required("enabled", r, example: "auto-pair: true"), let on = r.boolean(n) else { return nil }
            return .security(.autoPair(on, settings: settings))
        }
    }
}

extension ExpectationSchema {
    static let securityKinds = ["paired", "encrypted", "pairing-failed", "encryption-failed", "addresses-seen"]

    func securityExpectation(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)],
                             central: inout CentralSchema) -> Expectation? {
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        func within(_ f: KeywordFields) -> TimeSpan? {
            guard let w = f["within"] else { return SecurityExpectation.defaultWithin }
            return r.duration(w)
        }
        switch keyword.text {
        case "paired":
            // `paired: hm10`, `paired: { method: passkey-entry }`, or bare `paired`.
            let f = fields("peripheral", ["peripheral", "method", "secure-connections", "bonded", "within"])
            var ok = true
            var method: PairingMethodName?
            if let n = f["method"], let s = r.scalar(n, "a pairing method") {
                let names = PairingMethodName.allCases.map(\.rawValue)
                method = PairingMethodName(rawValue: s.text)
                if method == nil {
                    r.error(at: s.mark, found: "pairing method \(SchemaReader.quote(s.text))", expected: "one of \(names.joined(separator: ", "))",
                            hint: Spelling.suggestion(for: s.text, in: names)
                                ?? names.first { $0.hasPrefix(s.text.lowercased()) }.map { "did you mean '\($0)'?" })
                    ok = false
                }
            } else if f["method"] != nil { ok = false }
            var sc: Bool?, bonded: Bool?
            if let n = f["secure-connections"] { sc = r.boolean(n); ok = ok && sc != nil }
            if let n = f["bonded"] { bonded = r.boolean(n); ok = ok && bonded != nil }
            let span = within(f)
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok, let span else { return nil }
            return .security(.paired(peripheral: id, method: method, secureConnections: sc, bonded: bonded, within: span))
        case "encrypted":
            let f = fields("encrypted", ["encrypted", "peripheral", "within"])
            guard let n = f.required("encrypted", r, example: "encrypted: true"), let on = r.boolean(n) else { return nil }
            let span = within(f)
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), let span else { return nil }
            return .security(.encrypted(peripheral: id, on, within: span))
        case "pairing-failed":
            let f = fields("reason", ["reason", "peripheral", "within"])
            var ok = true
            var reason: PairingFailureName?
            if let n = f["reason"] {
                let expected = "a Pairing Failed reason such as confirm-value-failed or pairing-not-supported"
                if let s = r.scalar(n, expected) {
                    reason = PairingFailureName(name: s.text)
                    if reason == nil {
                        r.error(at: s.mark, found: "reason \(SchemaReader.quote(s.text))", expected: expected + " (\(PairingFailureName.allNames.joined(separator: ", ")))",
                                hint: Spelling.suggestion(for: s.text, in: PairingFailureName.allNames))
                    }
                }
                ok = reason != nil
            }
            let span = within(f)
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok, let span else { return nil }
            return .security(.pairingFailed(peripheral: id, reason: reason, within: span))
        case "addresses-seen":
            // `addresses-seen: 2`, or `addresses-seen: { peripheral: lock, count: 2, resolved: true }`.
            let f = fields("count", ["count", "resolved", "peripheral"])
            var ok = true
            var count: Int?, resolved: Bool?
            if let n = f["count"] {
                count = r.integer(n, in: 1...1_000_000, "a count of addresses, 1 or more").map { Int($0) }
                ok = count != nil
            }
            if let n = f["resolved"] { resolved = r.boolean(n); ok = ok && resolved != nil }
            if f["count"] == nil && f["resolved"] == nil {
                r.error(at: keyword.mark, found: "addresses-seen without count or resolved",
                        expected: "what to check, such as addresses-seen: { count: 2, resolved: true }")
                ok = false
            }
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok else { return nil }
            return .security(.addressesSeen(peripheral: id, count: count, resolved: resolved))
        default:
            let f = fields("reason", ["reason", "peripheral", "within"])
            var ok = true
            var reason: HCIStatus?
            if let n = f["reason"] {
                let expected = "an HCI status such as pin-or-key-missing"
                if let s = r.scalar(n, expected) {
                    reason = HCIStatus(name: s.text)
                    if reason == nil {
                        r.error(at: s.mark, found: "reason \(SchemaReader.quote(s.text))", expected: expected,
                                hint: Spelling.suggestion(for: s.text, in: HCIStatus.allNames))
                    }
                }
                ok = reason != nil
            }
            let span = within(f)
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok, let span else { return nil }
            return .security(.encryptionFailed(peripheral: id, reason: reason, within: span))
        }
    }
}

import BLERuntime

/// The security keys (docs/scenarios.md section 19) as the reader takes them back.
extension ScenarioDocument {
    func securitySettings(_ s: SecuritySpec) -> Fields {
        var fields: Fields = []
        if let io = s.io { fields.append(("io", .scalar(io.rawValue))) }
        if let sc = s.secureConnections { fields.append(("secure-connections", .scalar(String(sc)))) }
        if let b = s.bonding { fields.append(("bonding", .scalar(String(b)))) }
        if let m = s.mitm { fields.append(("mitm", .scalar(String(m)))) }
        if let p = s.passkey {
            let digits = String(p)
            // All six digits: 000123 is the passkey a display shows.
            fields.append(("passkey", .scalar(String(repeating: "0", count: max(0, 6 - digits.count)) + digits)))
        }
        if let c = s.confirm { fields.append(("confirm", .scalar(String(c)))) }
        if let o = s.oob { fields.append(("oob", .scalar(String(o)))) }
        return fields
    }

    func peripheralSecurity(_ p: PeripheralSecurity) -> YAMLOut {
        var fields = securitySettings(p.settings)
        if p.requestsSecurityOnConnect { fields.append(("request-security", .scalar("on-connect"))) }
        return .mapping(fields, .flow)
    }

    func securityStep(_ s: SecurityStep) -> YAMLOut {
        switch s {
        case let .pair(p, settings):
            let fields = named(p) + securitySettings(settings)
            return fields.isEmpty ? .scalar("pair") : keyword("pair", flow(fields))
        case let .encrypt(p):
            return multi ? keyword("encrypt", .scalar(p)) : .scalar("encrypt")
        case let .autoPair(on, settings):
            let fields = securitySettings(settings)
            return keyword("auto-pair", primary("enabled", .scalar(String(on)), fields))
        }
    }

    func securityWithin(_ span: TimeSpan) -> Fields {
        span == SecurityExpectation.defaultWithin ? [] : [("within", duration(span))]
    }

    func securityExpectation(_ e: SecurityExpectation) -> Fields {
        switch e {
        case let .paired(p, method, sc, bonded, span):
            var fields: Fields = []
            if let method { fields.append(("method", .scalar(method.rawValue))) }
            if let sc { fields.append(("secure-connections", .scalar(String(sc)))) }
            if let bonded { fields.append(("bonded", .scalar(String(bonded)))) }
            fields += securityWithin(span)
            return [("paired", fields.isEmpty ? .scalar(p) : flow(fields + named(p)))]
        case let .encrypted(p, on, span):
            return [("encrypted", .scalar(String(on)))] + named(p) + securityWithin(span)
        case let .pairingFailed(p, reason, span):
            return (reason.map { [("pairing-failed", .scalar($0.name))] } ?? [("pairing-failed", flow([]))])
                + named(p) + securityWithin(span)
        case let .encryptionFailed(p, reason, span):
            return (reason.map { [("encryption-failed", .scalar($0.name))] } ?? [("encryption-failed", flow([]))])
                + named(p) + securityWithin(span)
        case let .addressesSeen(p, count, resolved):
            var fields: Fields = []
            if let count { fields.append(("count", .scalar(String(count)))) }
            if let resolved { fields.append(("resolved", .scalar(String(resolved)))) }
            return [("addresses-seen", flow(fields + named(p)))]
        }
    }
}

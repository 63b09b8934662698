import ATT
import BLERuntime
import BLEWire
import GATT
import YAMLSubset

/// Reads what makes a peripheral flawed (docs/scenarios.md, "Flawed peripherals"): the `flaws:`
/// of a peripheral, the actions only a flawed device takes, and the expectations about how the
/// central met it.
struct FlawSchema {
    let r: SchemaReader
    let catalog: PeripheralCatalog
    let peripheral: String

    static let keys = ["request", "characteristic", "skip", "count", "delay", "respond-error", "no-response", "malformed"]
    static let answers = ["respond-error", "no-response", "malformed"]
    static let malformations: [(String, ATTFlaw.Malformation)] = [
        ("truncated", .truncated), ("wrong-opcode", .wrongOpcode), ("bad-error-length", .badErrorLength),
    ]
    static var requestNames: [String] { ATTFlaw.requestNames.map(\.name) }

    /// `flaws:`: a list of rules, each a mapping.
    func flaws(_ node: YAMLNode) -> [ATTFlaw] {
        guard let items = r.sequence(node, "a list of flaws such as - { request: read, respond-error: insufficient-encryption }")?.items else {
            return []
        }
        return items.compactMap(flaw)
    }

    private func flaw(_ node: YAMLNode) -> ATTFlaw? {
        guard let m = r.mapping(node, "a flaw: a mapping with request and what the peripheral answers") else { return nil }
        r.checkKeys(m, allowed: Self.keys, of: "a flaw")
        var ok = true
        var requests: [ATTOpcode] = []
        if let q = m["request"] {
            if let parsed = self.requests(q) { requests = parsed } else { ok = false }
        } else {
            r.error(at: m.mark, found: "a flaw without 'request'",
                    expected: "'request: NAME' (\(Self.requestNames.joined(separator: ", ")), or any)")
            ok = false
        }
        var characteristic: CharacteristicRef?
        if let c = m["characteristic"] {
            characteristic = CharacteristicResolver(r: r, catalog: catalog).resolve(c, in: peripheral, context: peripheral, suggestingOthers: false)
            if characteristic == nil { ok = false }
            let handleless: [ATTOpcode] = [.exchangeMTURequest, .executeWriteRequest]
            if !requests.isEmpty, requests.allSatisfy(handleless.contains) {
                r.error(c, expected: "no characteristic: \(requests.map(ATTFlaw.requestName).joined(separator: " and ")) names no handle")
                ok = false
            }
        }
        var skip = 0
        if let s = m["skip"] {
            if let n = r.integer(s, in: 0...1_000_000, "a number of requests from 0 to 1000000 to answer normally first") { skip = Int(n) } else { ok = false }
        }
        var count: Int?
        if let c = m["count"] {
            if let n = r.integer(c, in: 1...1_000_000, "a count from 1 to 1000000") { count = Int(n) } else { ok = false }
        }
        var delay = TimeSpan.zero
        if let d = m["delay"] {
            if let span = r.duration(d, "a delay") { delay = span } else { ok = false }
        }
        let given = m.entries.filter { Self.answers.contains($0.key.text) }
        if given.count > 1 {
            r.error(at: given[1].key.mark, found: "'\(given[0].key.text)' and '\(given[1].key.text)' in one flaw",
                    expected: "one answer per flaw (\(Self.answers.joined(separator: ", ")))", hint: "split it into two flaws")
            return nil
        }
        var answer = ATTFlaw.Answer.normal
        if let (key, value) = given.first {
            switch key.text {
            case "respond-error":
                guard let code = r.attError(value) else { return nil }
                answer = .error(code)
            case "no-response":
                guard let b = r.boolean(value) else { return nil }
                guard b else {
                    r.error(value, expected: "no-response: true", hint: "leave no-response out for a peripheral that answers")
                    return nil
                }
                if delay > .zero {
                    r.error(at: key.mark, found: "no-response with a delay", expected: "one of them",
                            hint: "a request that is never answered cannot be answered late")
                    return nil
                }
                answer = .none
            default:
                guard let malformation = malformation(value) else { return nil }
                answer = .malformed(malformation)
            }
        } else if delay == .zero {
            // A misspelt answer key is reported as such (checkKeys), not as a missing answer.
            if !m.entries.contains(where: { !Self.keys.contains($0.key.text) }) {
                r.error(at: m.mark, found: "a flaw that answers normally at once",
                        expected: "respond-error, no-response, malformed, or a delay (an answer that comes late)")
            }
            return nil
        }
        guard ok else { return nil }
        return ATTFlaw(requests: requests, characteristic: characteristic, skip: skip, count: count, delay: delay, answer: answer)
    }

    /// `read`, `[read, read-blob]`, `any`, or `0xNN`.
    private func requests(_ node: YAMLNode) -> [ATTOpcode]? {
        let expected = "a request (\(Self.requestNames.joined(separator: ", ")), any, or 0xNN)"
        guard let items = r.items(node, expected) else { return nil }
        var result: [ATTOpcode] = []
        for item in items {
            guard let s = r.scalar(item, expected) else { return nil }
            if s.text == "any", items.count == 1 { return [] }
            if let entry = ATTFlaw.requestNames.first(where: { $0.name == s.text }) {
                result.append(entry.opcode)
            } else if let n = ScalarSyntax.unsigned(s.text), n <= 0xFF, ATTOpcode(UInt8(n)).method == .request {
                result.append(ATTOpcode(UInt8(n)))
            } else {
                let bare = s.text.hasSuffix("-request") ? String(s.text.dropLast("-request".count)) : s.text
                let hint = Spelling.suggestion(for: bare, in: Self.requestNames)
                r.error(at: s.mark, found: "request \(SchemaReader.quote(s.text))", expected: expected, hint: hint)
                return nil
            }
        }
        return result
    }

    /// `truncated`, `wrong-opcode`, `bad-error-length`, or a value: the octets to send.
    private func malformation(_ node: YAMLNode) -> ATTFlaw.Malformation? {
        let names = Self.malformations.map(\.0)
        let expected = "\(names.joined(separator: ", ")), or the octets to send (hex:…)"
        if let s = node.scalar, !s.isEmpty, !s.text.contains(":") {
            if let (_, m) = Self.malformations.first(where: { $0.0 == s.text }) { return m }
            r.error(node, expected: expected, hint: Spelling.suggestion(for: s.text, in: names))
            return nil
        }
        guard let bytes = r.bytes(node) else { return nil }
        return .octets(bytes)
    }

    /// The service of an `add-service` action: UUID and characteristics (uuid, properties, value).
    func service(_ node: YAMLNode, at keyword: YAMLScalar) -> ServiceSpec? {
        guard let m = r.mapping(node, "a service such as { service: FFD0, characteristics: [{ uuid: FFD1, properties: [read] }] }") else { return nil }
        r.checkKeys(m, allowed: ["service", "characteristics"], of: "an add-service")
        guard let u = r.required(m, "service", in: "add-service", expected: "'service: UUID'"), let uuid = r.uuid(u, "a service UUID"),
              PeripheralSchema.checkServiceUUID(uuid, at: u, r) else { return nil }
        var service = ServiceSpec(uuid: uuid)
        guard let cs = m["characteristics"] else { return service }
        guard let items = r.sequence(cs, "a list of characteristics (- { uuid: FFD1, properties: [read] })")?.items else { return nil }
        var ok = true
        for item in items {
            guard let cm = r.mapping(item, "a characteristic: a mapping with uuid, properties and value") else { ok = false; continue }
            r.checkKeys(cm, allowed: ["uuid", "properties", "value"], of: "an add-service characteristic")
            guard let cu = r.required(cm, "uuid", in: "a characteristic", expected: "'uuid: UUID'"), let cuuid = r.uuid(cu, "a characteristic UUID"),
                  let p = r.required(cm, "properties", in: "a characteristic", expected: "'properties: [read, notify…]'"),
                  let properties = r.properties(p) else { ok = false; continue }
            if let why = PeripheralSchema.attributeTypeUse(cuuid) {
                r.error(at: cu.mark, found: "characteristic UUID \(SchemaReader.found(cu)), \(why)", expected: "a characteristic UUID (such as 2A19, or a 128-bit UUID of your own)")
                ok = false
                continue
            }
            var value: [UInt8] = []
            if let v = cm["value"] {
                guard let bytes = r.attributeBytes(v) else {
                    ok = false
                    continue
                }
                value = bytes
            }
            if service.characteristics.contains(where: { $0.uuid == cuuid }) {
                r.error(cu, expected: "each characteristic once per service")
                ok = false
                continue
            }
            service.characteristics.append(CharacteristicSpec(uuid: cuuid, properties: properties, value: value))
        }
        return ok ? service : nil
    }
}

// MARK: Actions

extension ActionSchema {
    static let flawKeywords = ["notify-handle", "indicate-handle", "send-pdu", "add-service", "remove-service", "service-changed"]

    /// The actions of a flawed peripheral (`notify-handle`, `send-pdu`, `add-service`…).
    func flawAction(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)], site: ActionSite) -> PeripheralAction? {
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        let flaws = FlawSchema(r: r, catalog: catalog, peripheral: peripheral)
        switch keyword.text {
        case "notify-handle", "indicate-handle":
            let f = fields(nil, ["handle", "value"])
            let example = "\(keyword.text): { handle: 0x00F0, value: hex:01 }"
            guard let h = f.required("handle", r, example: example),
                  let handle = r.integer(h, in: 1...0xFFFF, "a handle from 0x0001 to 0xFFFF"),
                  let v = f.required("value", r, example: example),
                  let source = r.value(v, context: .action(writtenAllowed: site == .onWrite)) else { return nil }
            return keyword.text == "notify-handle" ? .notifyHandle(UInt16(handle), source) : .indicateHandle(UInt16(handle), source)
        case "send-pdu":
            let f = fields("octets", ["octets"])
            guard let v = f.required("octets", r, example: "send-pdu: hex:0b 01 02"), let bytes = r.bytes(v) else { return nil }
            guard !bytes.isEmpty else {
                r.error(v, expected: "at least one octet: the ATT opcode")
                return nil
            }
            return .sendPDU(bytes)
        case "add-service":
            for (k, _) in siblings {
                r.error(at: k.mark, found: "unknown key \(SchemaReader.quote(k.text))", expected: "the service inside add-service: { … }")
            }
            guard let service = flaws.service(value, at: keyword) else { return nil }
            catalog.addRuntimeService(peripheral, service)
            return .addService(service)
        case "remove-service":
            let f = fields("service", ["service"])
            guard let s = f.required("service", r, example: "remove-service: FFD0"), let uuid = r.uuid(s, "a service UUID") else { return nil }
            return .removeService(uuid)
        case "service-changed":
            let f = fields(nil, ["start", "end"])
            guard f["start"] != nil || f["end"] != nil else { return .serviceChanged(nil) }
            let example = "service-changed: { start: 0x000C, end: 0xFFFF }"
            guard let s = f.required("start", r, example: example), let e = f.required("end", r, example: example),
                  let start = r.integer(s, in: 1...0xFFFF, "a handle from 0x0001 to 0xFFFF"),
                  let end = r.integer(e, in: 1...0xFFFF, "a handle from 0x0001 to 0xFFFF") else { return nil }
            guard start <= end else {
                r.error(e, expected: "an end handle not below the start handle")
                return nil
            }
            return .serviceChanged(ATTHandleRange(start: UInt16(start), end: UInt16(end)))
        default:
            return nil
        }
    }
}

// MARK: Expectations

extension ExpectationSchema {
    static let flawKinds = ["malformed-response", "att-timeout", "response-time", "ignored-notification", "service-changed", "not-services"]

    /// Response opcodes by their kebab-case names (`read-by-group-type-response`).
    static let responseNames: [(String, ATTOpcode)] = (0...0xFF).compactMap { n -> (String, ATTOpcode)? in
        let opcode = ATTOpcode(UInt8(n))
        guard opcode.method == .response, !opcode.name.hasPrefix("Opcode") else { return nil }
        return (opcode.name.lowercased().split(separator: " ").joined(separator: "-"), opcode)
    }

    func flawExpectation(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)],
                         central: inout CentralSchema) -> Expectation? {
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        func within(_ f: KeywordFields) -> TimeSpan? {
            guard let w = f["within"] else { return Expectation.defaultWithin }
            return r.duration(w)
        }
        switch keyword.text {
        case "malformed-response":
            let f = fields("opcode", ["opcode", "bytes", "within", "peripheral"])
            var ok = true
            var opcode: ATTOpcode?
            if let o = f["opcode"] {
                let names = Self.responseNames.map(\.0)
                let expected = "the opcode of the response that arrived (\(names.joined(separator: ", ")), 0xNN, or any)"
                if let s = r.scalar(o, expected) {
                    if s.text == "any" {
                    } else if let named = Self.responseNames.first(where: { $0.0 == s.text }) {
                        opcode = named.1
                    } else if let n = ScalarSyntax.unsigned(s.text), n <= 0xFF {
                        opcode = ATTOpcode(UInt8(n))
                    } else {
                        r.error(o, expected: expected, hint: Spelling.suggestion(for: s.text, in: names))
                        ok = false
                    }
                } else {
                    ok = false
                }
            }
            var bytes: [UInt8]?
            if let b = f["bytes"] { bytes = r.bytes(b); ok = ok && bytes != nil }
            let span = within(f)
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok, let span else { return nil }
            return .flaw(.malformedResponse(peripheral: id, opcode: opcode, bytes: bytes, within: span))
        case "att-timeout":
            let f = fields("request", ["request", "within", "peripheral"])
            var ok = true
            var request: ATTOpcode?
            if let q = f["request"] {
                let names = FlawSchema.requestNames
                let expected = "the request that timed out (\(names.joined(separator: ", ")), or any)"
                if let s = r.scalar(q, expected) {
                    if s.text == "any" {
                    } else if let entry = ATTFlaw.requestNames.first(where: { $0.name == s.text }) {
                        request = entry.opcode
                    } else {
                        r.error(q, expected: expected, hint: Spelling.suggestion(for: s.text, in: names))
                        ok = false
                    }
                } else {
                    ok = false
                }
            }
            let span = within(f)
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok, let span else { return nil }
            return .flaw(.attTimeout(peripheral: id, request: request, within: span))
        case "response-time":
            let f = fields(nil, ["at-least", "at-most"])
            var ok = true
            var least: TimeSpan?, most: TimeSpan?
            if let l = f["at-least"] { least = r.duration(l); ok = ok && least != nil }
            if let m = f["at-most"] { most = r.duration(m); ok = ok && most != nil }
            guard ok else { return nil }
            guard least != nil || most != nil else {
                r.error(at: keyword.mark, found: "'response-time' without a bound", expected: "response-time: { at-least: 5s, at-most: 6s }")
                return nil
            }
            if let least, let most, least > most {
                r.error(f["at-most"] ?? value, expected: "at-most not below at-least")
                return nil
            }
            return .flaw(.responseTime(atLeast: least, atMost: most))
        case "ignored-notification":
            let f = fields("handle", ["handle", "indication", "within", "peripheral"])
            var ok = true
            let handle = f.required("handle", r, example: "ignored-notification: { handle: 0x00F0, indication: true }")
                .flatMap { r.integer($0, in: 1...0xFFFF, "a handle from 0x0001 to 0xFFFF") }
            var indication: Bool?
            if let i = f["indication"] { indication = r.boolean(i); ok = ok && indication != nil }
            let span = within(f)
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok, let handle, let span else { return nil }
            return .flaw(.ignoredNotification(peripheral: id, handle: UInt16(handle), indication: indication, within: span))
        case "service-changed":
            let f = fields("peripheral", ["peripheral", "start", "end", "within"])
            var ok = true
            var range: ATTHandleRange?
            if f["start"] != nil || f["end"] != nil {
                let example = "service-changed: { start: 0x000C, end: 0xFFFF }"
                let start = f.required("start", r, example: example).flatMap { r.integer($0, in: 1...0xFFFF, "a handle from 0x0001 to 0xFFFF") }
                let end = f.required("end", r, example: example).flatMap { r.integer($0, in: 1...0xFFFF, "a handle from 0x0001 to 0xFFFF") }
                if let start, let end { range = ATTHandleRange(start: UInt16(start), end: UInt16(end)) } else { ok = false }
            }
            let span = within(f)
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), ok, let span else { return nil }
            return .flaw(.serviceChanged(peripheral: id, range: range, within: span))
        case "not-services":
            let f = fields("services", ["services", "peripheral"])
            let list = f.required("services", r, example: "not-services: [180A]").flatMap { r.uuids($0, "service") }
            guard let id = central.target(f["peripheral"], characteristic: nil, at: keyword), let list else { return nil }
            return .flaw(.notServices(list, peripheral: id))
        default:
            return nil
        }
    }
}

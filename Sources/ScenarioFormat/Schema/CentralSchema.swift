import BLERuntime
import BLEWire
import GATT
import YAMLSubset

/// Reads `central:` (docs/scenarios.md section 5) into `CentralStep`s.
///
/// Which peripheral a step talks to is settled here, before anything runs: the one it names
/// (`peripheral: ID`), else the only one connected at that point of the script (connections
/// follow `connect`, `disconnect`, `expect: { disconnected }` and peripheral `disconnect` actions),
/// else the only peripheral that declares the characteristic, else the peripheral the previous
/// steps talked to (so `disconnect` then `expect: { disconnected }` needs no name), else the only
/// peripheral.
struct CentralSchema {
    let r: SchemaReader
    let catalog: PeripheralCatalog
    /// Connected at the step being read, in connection order.
    private var connected: [String] = []
    /// The peripheral the latest step talked to.
    private(set) var lastTarget: String?

    static let keywords = ["scan", "connect", "discover", "mtu", "read", "write", "subscribe", "unsubscribe", "wait", "disconnect",
                           "peripheral", "expect"] + faultKeywords + securityKeywords
    /// Steps that may be written without a value.
    static let bare = ["scan", "discover", "disconnect"] + bareFaultKeywords + bareSecurityKeywords

    /// The step being read said `acquire: true`.
    private var acquire = false
    /// The subscribe step being read said `type: …` (CentralSchema+Descriptors.swift).
    var subscription: GATTClientConfiguration?
    /// The connect step being read gave `scan-interval` or `scan-window`.
    private var connectScan: ScanTiming?
    /// The connect step being read said `gatt-cache: true`.
    private var gattCache = false
    /// The connect step being read gave `interval`, `latency` or `timeout`.
    private var connectParameters: ConnectionUpdateRequest?

    init(reader: SchemaReader, catalog: PeripheralCatalog) {
        r = reader
        self.catalog = catalog
    }

    mutating func steps(_ node: YAMLNode) -> [CentralStep] {
        guard let items = r.sequence(node, "a list of steps (- scan: …, - connect: …)")?.items else { return [] }
        if items.isEmpty { r.error(node, expected: "at least one step") }
        var steps: [CentralStep] = []
        for item in items {
            let location = SourceLocation(file: r.file, line: item.mark.line, column: item.mark.column)
            acquire = false
            subscription = nil
            connectScan = nil
            gattCache = false
            connectParameters = nil
            guard let action = step(item) else { continue }
            steps.append(CentralStep(index: steps.count + 1, location: location, text: StepText.render(item, top: true), action: action,
                                     acquire: acquire, subscription: subscription, connectScan: connectScan,
                                     gattCache: gattCache, connectParameters: connectParameters))
        }
        checkInterruptions(steps)
        return steps
    }

    // MARK: One step

    private mutating func step(_ item: YAMLNode) -> CentralAction? {
        if let s = item.scalar, !s.isEmpty {
            guard Self.bare.contains(s.text) else {
                let hint = Self.keywords.contains(s.text) ? "'\(s.text)' needs a value, e.g. \(Self.example(s.text))"
                    : Spelling.suggestion(for: s.text, in: Self.keywords)
                r.error(item, expected: "a step (\(Self.keywords.joined(separator: ", ")))", hint: hint)
                return nil
            }
            return step(keyword: s, value: .scalar(YAMLScalar(text: "", style: .plain, mark: s.mark)), siblings: [])
        }
        guard let m = r.mapping(item, "a step such as '- scan: { services: [FFE0], for: 1s }'") else { return nil }
        let keyword = m.entries.first(where: { Self.keywords.contains($0.key.text) && $0.key.text != "peripheral" })
            ?? m.entries.first(where: { $0.key.text == "peripheral" })
        guard let (key, value) = keyword else {
            let first = m.entries.first?.key
            r.error(at: first?.mark ?? m.mark, found: first.map { "unknown step \(SchemaReader.quote($0.text))" } ?? "an empty mapping",
                    expected: "a step (\(Self.keywords.joined(separator: ", ")))",
                    hint: first.flatMap { Spelling.suggestion(for: $0.text, in: Self.keywords) })
            return nil
        }
        if key.text != "peripheral", let second = m.entries.first(where: { $0.key.text != key.text && $0.key.text != "peripheral" && Self.keywords.contains($0.key.text) }) {
            r.error(at: second.key.mark, found: "'\(key.text)' and '\(second.key.text)' in one step", expected: "one step per list item",
                    hint: "split them into two items, each starting with '- '")
            return nil
        }
        return step(keyword: key, value: value, siblings: m.entries.filter { $0.key.text != key.text })
    }

    /// CoreBluetooth's names for the two write types, and the like.
    static func writeTypeHint(_ text: String) -> String? {
        let squeezed = text.lowercased().filter { $0.isLetter }
        if squeezed.contains("without") || squeezed.contains("noresponse") {
            return "'command' sends a Write Command (write without response)"
        }
        if squeezed.contains("withresponse") { return "'request' sends a Write Request (write with response)" }
        return nil
    }

    static func example(_ keyword: String) -> String {
        switch keyword {
        case "connect": return "connect: hm10"
        case "mtu": return "mtu: 247"
        case "read", "subscribe", "unsubscribe": return "\(keyword): FFE1"
        case "write": return "write: { characteristic: FFE1, value: text:hello }"
        case "wait": return "wait: 2s"
        case "peripheral": return "peripheral: { hm10: [{ notify: FFE1 }] }"
        case "expect": return "expect: { discovered: hm10 }"
        default: return faultExample(keyword) ?? securityExample(keyword) ?? "\(keyword): …"
        }
    }

    private mutating func step(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)]) -> CentralAction? {
        func fields(_ primary: String?, _ allowed: [String]) -> KeywordFields {
            KeywordFields(reader: r, keyword: keyword, node: value, primary: primary, allowed: allowed, siblings: siblings, what: keyword.text)
        }
        let example = Self.example(keyword.text)
        switch keyword.text {
        case "scan":
            let f = fields(nil, ["services", "names", "for", "duplicates", "interval", "window", "min-rssi"])
            var scan = ScanStep()
            if let s = f["services"] { scan.services = r.uuids(s, "service") ?? [] }
            if let n = f["names"], let items = r.items(n, "a list of names such as [Smart_Curtain]") {
                scan.names = items.compactMap { r.scalar($0, "a local name")?.text }
            }
            if let d = f["for"], let span = r.duration(d) {
                // A scan of no time hears no advertising event: every expectation on it would
                // judge an empty scan.
                if span <= .zero { r.error(d, expected: "a scan longer than 0s", hint: "advertisers send every 20ms to 10.24s; scan at least one interval, such as 1s") }
                scan.duration = span
            }
            if let d = f["duplicates"], let b = r.boolean(d) { scan.duplicates = b }
            scan.timing = r.scanTiming(interval: f["interval"], window: f["window"], names: ("interval", "window"), default: .scanDefault).timing
            if let n = f["min-rssi"] { scan.minRSSI = r.dBm(n) }
            return .scan(scan)
        case "connect":
            let f = fields("peripheral", ["peripheral", "within", "scan-interval", "scan-window", "gatt-cache"] + FaultSyntax.parameterKeys)
            guard let p = f.required("peripheral", r, example: example), let id = peripheralID(p) else { return nil }
            var within = Expectation.defaultWithin
            if let w = f["within"], let span = r.duration(w) {
                // A connection takes at least the peripheral's next advertising event.
                if span <= .zero { r.error(w, expected: "a time longer than 0s to connect within", hint: "a connection needs the peripheral's next advertising event; the default is 1s") }
                within = span
            }
            connectScan = r.scanTiming(interval: f["scan-interval"], window: f["scan-window"], names: ("scan-interval", "scan-window"),
                                       default: .connectDefault).timing
            if let c = f["gatt-cache"], let b = r.boolean(c) { gattCache = b }
            if FaultSyntax.parameterKeys.contains(where: { f[$0] != nil }),
               let p = FaultSyntax(r: r).parameters({ f[$0] }, keyword: keyword, example: example, allOptional: true) {
                // Untold: the lab central's own 30 ms, 0 and 5 s.
                let interval = p.interval ?? 24, latency = p.latency ?? 0, timeout = p.timeout ?? 500
                if Int64(timeout) * 10_000 <= (1 + Int64(latency)) * Int64(interval) * 2500 {
                    r.error(at: keyword.mark, found: "a supervision timeout of \(ConnectionUpdateRequest.milliseconds(micros: Int64(timeout) * 10_000))",
                            expected: "a timeout longer than (1 + latency) × interval × 2 = \(ConnectionUpdateRequest.milliseconds(micros: (1 + Int64(latency)) * Int64(interval) * 2500)) (Core Vol 6 Part B 4.5.2)")
                } else {
                    connectParameters = ConnectionUpdateRequest(interval: interval, latency: latency, timeout: timeout)
                }
            }
            if !connected.contains(id) { connected.append(id) }
            lastTarget = id
            return .connect(peripheral: id, within: within)
        case "discover":
            if let s = value.scalar, s.text == "all" {
                let f = KeywordFields(reader: r, keyword: keyword, node: .scalar(YAMLScalar(text: "", style: .plain, mark: s.mark)),
                                      primary: nil, allowed: ["peripheral"], siblings: siblings, what: keyword.text)
                guard let id = target(f["peripheral"], characteristic: nil, at: keyword) else { return nil }
                return .discover(peripheral: id, services: nil)
            }
            if let s = value.scalar, !s.isEmpty, BluetoothUUID(string: s.text) == nil {
                // `discover: everything`: neither `all` nor a service UUID.
                r.error(value, expected: "'all', or the services to discover such as { services: [180D] }",
                        hint: Spelling.suggestion(for: s.text, in: ["all"]))
                return nil
            }
            let f = fields("services", ["services", "peripheral"])
            var services: [BluetoothUUID]?
            if let s = f["services"] {
                guard let list = r.uuids(s, "service") else { return nil }
                services = list
            }
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword) else { return nil }
            return .discover(peripheral: id, services: services)
        case "mtu":
            let f = fields("size", ["size", "peripheral"])
            guard let s = f.required("size", r, example: example),
                  let size = r.integer(s, in: 23...517, "an ATT_MTU from 23 to 517") else { return nil }
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword) else { return nil }
            return .exchangeMTU(peripheral: id, mtu: Int(size))
        case "read", "subscribe", "unsubscribe":
            let allowed = ["read": ["characteristic", "peripheral", "descriptor"], "subscribe": ["characteristic", "peripheral", "acquire", "type"]]
            let f = fields("characteristic", allowed[keyword.text] ?? ["characteristic", "peripheral", "acquire"])
            if let a = f["acquire"], let b = r.boolean(a) { acquire = b }
            guard let c = f.required("characteristic", r, example: example),
                  let (id, ref) = characteristic(c, peripheral: f["peripheral"], at: keyword) else { return nil }
            if keyword.text != "read", !hasCCCD(ref, in: id, at: c, keyword: keyword.text) { return nil }
            switch keyword.text {
            case "read":
                guard let d = f["descriptor"] else { return .read(peripheral: id, characteristic: ref) }
                return descriptor(d, of: ref, on: id).map { .readDescriptor(peripheral: id, descriptor: $0) }
            case "subscribe":
                if let t = f["type"] {
                    guard let configuration = subscriptionType(t, of: ref, on: id) else { return nil }
                    subscription = configuration
                }
                return .subscribe(peripheral: id, characteristic: ref)
            default: return .unsubscribe(peripheral: id, characteristic: ref)
            }
        case "write":
            let f = fields("characteristic", ["characteristic", "value", "type", "peripheral", "acquire", "descriptor"])
            if let d = f["descriptor"] { return descriptorWrite(d, fields: f, keyword: keyword) }
            if let a = f["acquire"], let b = r.boolean(a) { acquire = b }
            let resolved = f.required("characteristic", r, example: example).flatMap { characteristic($0, peripheral: f["peripheral"], at: keyword) }
            let bytes = f.required("value", r, example: example).flatMap { r.attributeBytes($0) }
            var type = WriteType.preferRequest
            if let t = f["type"] {
                let names = WriteType.allCases.map(\.rawValue)
                guard let s = r.scalar(t, "a write type (\(names.joined(separator: ", ")))") else { return nil }
                guard let parsed = WriteType(rawValue: s.text) else {
                    r.error(t, expected: "a write type (\(names.joined(separator: ", ")))",
                            hint: Spelling.suggestion(for: s.text, in: names) ?? Self.writeTypeHint(s.text))
                    return nil
                }
                type = parsed
            }
            if acquire, let t = f["type"], type != .command {
                r.error(t, expected: "type: command (or no type) with acquire: true",
                        hint: "AcquireWrite's socket only sends Write Commands (BlueZ doc/org.bluez.GattCharacteristic.rst)")
                return nil
            }
            guard let (id, ref) = resolved, let bytes else { return nil }
            return .write(WriteStep(peripheral: id, characteristic: ref, value: bytes, type: type))
        case "wait":
            let f = fields("for", ["for"])
            guard let d = f.required("for", r, example: example), let span = r.duration(d) else { return nil }
            return .wait(span)
        case "disconnect":
            let f = fields("peripheral", ["peripheral", "within"])
            var within: TimeSpan?
            var ok = true
            if let w = f["within"] {
                within = r.duration(w)
                ok = within != nil
            }
            guard let id = target(f["peripheral"], characteristic: nil, at: keyword), ok else { return nil }
            connected.removeAll { $0 == id }
            return .disconnect(peripheral: id, within: within)
        case "peripheral":
            return peripheralActions(keyword: keyword, value: value, siblings: siblings)
        case "expect":
            for (k, _) in siblings {
                r.error(at: k.mark, found: "unknown key \(SchemaReader.quote(k.text))", expected: "'expect' alone in its step",
                        hint: "put every part of the expectation inside expect: { … }")
            }
            var schema = ExpectationSchema(r: r)
            guard let expectation = schema.expectation(value, central: &self) else { return nil }
            if case let .disconnected(id, _, _) = expectation { connected.removeAll { $0 == id } }
            // The link the step before relied on is down after it.
            if case let .interruption(e) = expectation { connected.removeAll { $0 == e.peripheral } }
            return .expect(expectation)
        case _ where Self.securityKeywords.contains(keyword.text):
            return securityStep(keyword: keyword, value: value, siblings: siblings)
        default:
            return faultStep(keyword: keyword, value: value, siblings: siblings)
        }
    }

    private mutating func peripheralActions(keyword: YAMLScalar, value: YAMLNode, siblings: [(key: YAMLScalar, value: YAMLNode)]) -> CentralAction? {
        for (k, _) in siblings {
            r.error(at: k.mark, found: "unknown key \(SchemaReader.quote(k.text))", expected: "'peripheral' alone in its step")
        }
        guard let m = r.mapping(value, "peripheral ids with their actions, such as { hm10: [{ notify: FFE1 }] }") else { return nil }
        var result: [PeripheralActions] = []
        for (key, actionsNode) in m.entries {
            guard let id = knownPeripheral(key) else { continue }
            let actions = ActionSchema(r: r, catalog: catalog, peripheral: id).actions(actionsNode, site: .step)
            if actions.contains(where: { if case .disconnect = $0 { return true }; return false }) {
                connected.removeAll { $0 == id }
            }
            result.append(PeripheralActions(peripheral: id, actions: actions))
        }
        return result.isEmpty ? nil : .peripheralActions(result)
    }

    // MARK: Peripherals and characteristics

    /// A declared peripheral id.
    mutating func peripheralID(_ node: YAMLNode) -> String? {
        guard let s = r.scalar(node, "a peripheral id") else { return nil }
        return knownPeripheral(s)
    }

    private func knownPeripheral(_ s: YAMLScalar) -> String? {
        if catalog.contains(s.text) { return s.text }
        r.error(at: s.mark, found: "peripheral \(SchemaReader.quote(s.text))",
                expected: "a peripheral declared under peripherals: (\(catalog.ids.joined(separator: ", ")))",
                hint: Spelling.suggestion(for: s.text, in: catalog.ids))
        return nil
    }

    /// The peripheral a step talks to (see the type's documentation).
    mutating func target(_ explicit: YAMLNode?, characteristic: CharacteristicRef?, at keyword: YAMLScalar) -> String? {
        let id = resolveTarget(explicit, characteristic: characteristic, at: keyword)
        if let id { lastTarget = id }
        return id
    }

    private mutating func resolveTarget(_ explicit: YAMLNode?, characteristic: CharacteristicRef?, at keyword: YAMLScalar) -> String? {
        if let explicit { return peripheralID(explicit) }
        if connected.count == 1 { return connected[0] }
        if connected.count > 1 {
            r.error(at: keyword.mark, found: "'\(keyword.text)' while connected to \(SchemaReader.list(connected, "and"))",
                    expected: "the peripheral it means", hint: "add 'peripheral: \(connected[0])' (or another) to the step")
            return nil
        }
        if let characteristic {
            let declarers = catalog.declarers(of: characteristic)
            if declarers.count == 1 { return declarers[0] }
            if declarers.count > 1 {
                r.error(at: keyword.mark, found: "'\(keyword.text)' of \(characteristic), declared by \(SchemaReader.list(declarers, "and"))",
                        expected: "the peripheral it means", hint: "add 'peripheral: \(declarers[0])' (or another) to the step")
                return nil
            }
        }
        if let lastTarget, characteristic.map({ !catalog.matches($0, in: lastTarget).isEmpty }) ?? true { return lastTarget }
        if catalog.ids.count == 1 { return catalog.ids[0] }
        if characteristic != nil { return catalog.ids.first }   // reported as undeclared by the caller
        r.error(at: keyword.mark, found: "'\(keyword.text)' with no peripheral connected here",
                expected: "the peripheral it means", hint: "add 'peripheral: ID' to the step")
        return nil
    }

    /// Whether `ref` in `id` has a CCCD to write (Core Vol 3 Part G 3.3.3.3: a characteristic
    /// has one when it offers notify or indicate); reports it when it has not. A `subscribe` to
    /// one without would fail at run time, after the whole set-up, for a mistake in the file.
    private func hasCCCD(_ ref: CharacteristicRef, in id: String, at node: YAMLNode, keyword: String) -> Bool {
        guard case let .success(entry) = catalog.resolve(ref, in: id), let properties = entry.properties,
              properties.isDisjoint(with: [.notify, .indicate]) else { return true }
        r.error(at: node.mark, found: "\(keyword) to characteristic \(SchemaReader.found(node)), which has neither notify nor indicate (its properties: \(properties))",
                expected: "a characteristic with notify or indicate, which gives it a CCCD to write",
                hint: "add notify (or indicate) to \(ref)'s properties in \(id)")
        return false
    }

    /// A characteristic and the peripheral whose database holds it.
    mutating func characteristic(_ node: YAMLNode, peripheral explicit: YAMLNode?, at keyword: YAMLScalar) -> (String, CharacteristicRef)? {
        let resolver = CharacteristicResolver(r: r, catalog: catalog)
        guard let (ref, s) = resolver.parse(node) else {
            if let explicit { _ = peripheralID(explicit) }
            return nil
        }
        if explicit == nil, connected.isEmpty, catalog.ids.count > 1, catalog.declarers(of: ref).isEmpty,
           !catalog.ids.contains(where: { !catalog.matches(ref, in: $0).isEmpty }) {
            let all = catalog.ids.flatMap { catalog.declared(in: $0) }
            let listing = catalog.ids.map { "\($0): \(catalog.declared(in: $0).joined(separator: ", "))" }.joined(separator: "; ")
            r.error(at: s.mark, found: "characteristic \(SchemaReader.quote(s.text))", expected: "a characteristic declared by a peripheral (\(listing))",
                    hint: Spelling.suggestion(for: s.text, in: all))
            return nil
        }
        guard let id = target(explicit, characteristic: ref, at: keyword) else { return nil }
        guard let resolved = resolver.resolve(node, in: id, context: id) else { return nil }
        return (id, resolved)
    }
}

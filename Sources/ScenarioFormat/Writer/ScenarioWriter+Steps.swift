import ATT
import BLERuntime
import GATT
import HCI

typealias Fields = [(key: String, value: YAMLOut)]

/// The central's steps (docs/scenarios.md sections 5, 6 and 18), each one line: `- keyword: value`.
extension ScenarioDocument {
    func step(_ step: CentralStep) -> YAMLOut {
        site(stepNode(step), .step(step.index))
    }

    private func stepNode(_ step: CentralStep) -> YAMLOut {
        switch step.action {
        case let .scan(scan):
            var fields: Fields = []
            if !scan.services.isEmpty { fields.append(("services", uuids(scan.services))) }
            if !scan.names.isEmpty { fields.append(("names", .sequence(scan.names.map { .scalar(ScalarText.text($0)) }, .flow))) }
            fields.append(("for", duration(scan.duration)))
            if scan.duplicates { fields.append(("duplicates", .scalar("true"))) }
            if let t = scan.timing { fields += [("interval", duration(t.interval)), ("window", duration(t.window))] }
            if let rssi = scan.minRSSI { fields.append(("min-rssi", .scalar(String(rssi)))) }
            return keyword("scan", flow(fields))
        case let .connect(p, within):
            var fields: Fields = []
            if within != Expectation.defaultWithin { fields.append(("within", duration(within))) }
            if let t = step.connectScan { fields += [("scan-interval", duration(t.interval)), ("scan-window", duration(t.window))] }
            if let p = step.connectParameters {
                fields += [("interval", duration(.microseconds(Int64(p.interval) * 1250))), ("latency", .scalar(String(p.latency))),
                           ("timeout", duration(.milliseconds(Int64(p.timeout) * 10)))]
            }
            if step.gattCache { fields.append(("gatt-cache", .scalar("true"))) }
            return keyword("connect", primary("peripheral", .scalar(p), fields))
        case let .discover(p, services):
            guard let services else {
                // `discover: all`, naming the peripheral beside it.
                return .mapping([("discover", .scalar("all"))] + named(p), .block)
            }
            return keyword("discover", flow([("services", uuids(services))] + named(p)))
        case let .exchangeMTU(p, mtu):
            return keyword("mtu", primary("size", .scalar(String(mtu)), named(p)))
        case let .read(p, ref):
            return keyword("read", primary("characteristic", .scalar(ref.description), named(p)))
        case let .readDescriptor(p, d):
            return keyword("read", flow([("characteristic", .scalar(d.characteristic.description)), ("descriptor", .scalar(d.uuid.description))] + named(p)))
        case let .write(w):
            var fields: Fields = [("characteristic", .scalar(w.characteristic.description)), ("value", .scalar(ScalarText.value(w.value)))]
            if w.type != .preferRequest { fields.append(("type", .scalar(w.type.rawValue))) }
            if step.acquire { fields.append(("acquire", .scalar("true"))) }
            return keyword("write", flow(fields + named(w.peripheral)))
        case let .writeDescriptor(p, d, value):
            // A CCCD's value is bits, written as octets.
            let text = d.uuid == .clientCharacteristicConfiguration ? ScalarText.hex(value) : ScalarText.value(value)
            return keyword("write", flow([("characteristic", .scalar(d.characteristic.description)), ("descriptor", .scalar(d.uuid.description)),
                                          ("value", .scalar(text))] + named(p)))
        case let .subscribe(p, ref), let .unsubscribe(p, ref):
            var fields: Fields = []
            if let type = step.subscription.flatMap(Self.subscriptionName) { fields.append(("type", .scalar(type))) }
            if step.acquire { fields.append(("acquire", .scalar("true"))) }
            let name: String
            if case .subscribe = step.action { name = "subscribe" } else { name = "unsubscribe" }
            return keyword(name, primary("characteristic", .scalar(ref.description), fields + named(p)))
        case let .wait(span):
            return keyword("wait", duration(span))
        case let .disconnect(p, within):
            guard let within else { return multi ? keyword("disconnect", .scalar(p)) : .scalar("disconnect") }
            return keyword("disconnect", flow(named(p) + [("within", duration(within))]))
        case let .peripheralActions(list):
            return keyword("peripheral", flow(list.map { ($0.peripheral, .sequence($0.actions.map(action), .flow)) }))
        case let .expect(e):
            return keyword("expect", flow(expectation(e)))
        case let .fault(f):
            return faultStep(f)
        case let .security(s):
            return securityStep(s)
        }
    }

    /// `subscribe`'s `type:` for what it writes to the CCCD.
    static func subscriptionName(_ c: GATTClientConfiguration) -> String? {
        switch c {
        case .notification: return "notifications"
        case .indication: return "indications"
        case [.notification, .indication]: return "both"
        default: return nil
        }
    }

    // MARK: Building blocks

    /// `- keyword: value`.
    func keyword(_ k: String, _ value: YAMLOut) -> YAMLOut { .mapping([(k, value)], .block) }

    func flow(_ fields: Fields) -> YAMLOut { .mapping(fields, .flow) }

    func duration(_ span: TimeSpan) -> YAMLOut { .scalar(ScalarText.duration(span)) }

    /// `peripheral: ID` when the scenario has several peripherals (with one, every step means it).
    func named(_ id: String) -> Fields { multi ? [("peripheral", .scalar(id))] : [] }

    /// The main field alone (`read: FFE1`), or every field in a mapping, the main one first.
    func primary(_ key: String, _ value: YAMLOut, _ others: Fields) -> YAMLOut {
        others.isEmpty ? value : flow([(key, value)] + others)
    }

    func within(_ span: TimeSpan) -> Fields {
        span == Expectation.defaultWithin ? [] : [("within", duration(span))]
    }

    func value(_ bytes: [UInt8]) -> YAMLOut { .scalar(ScalarText.value(bytes)) }

    // MARK: Expectations

    /// The fields of `expect: { … }`.
    func expectation(_ e: Expectation) -> Fields {
        switch e {
        case let .discovered(p): return [("discovered", .scalar(p))]
        case let .notDiscovered(p): return [("not-discovered", .scalar(p))]
        case let .onlyDiscovered(list): return [("only-discovered", .sequence(list.map { .scalar($0) }, .flow))]
        case let .connected(p): return [("connected", .scalar(p))]
        case let .services(list, p): return [("services", uuids(list))] + named(p)
        case let .characteristic(ref, properties, p):
            return [("characteristic", flow([("uuid", .scalar(ref.description)),
                                              ("properties", .sequence(properties.names.map { .scalar($0) }, .flow))] + named(p)))]
        case let .value(bytes): return [("value", value(bytes))]
        case let .writeSentAs(method): return [("write-sent-as", .scalar(method.rawValue))]
        case let .error(code): return [("error", .scalar(code.name))]
        case let .peripheralReceived(r):
            var fields: Fields = []
            if let v = r.value { fields.append(("value", value(v))) }
            if let via = r.via { fields.append(("via", .scalar(via.rawValue))) }
            fields += within(r.within) + named(r.peripheral)
            return [("peripheral-received", primary("characteristic", .scalar(r.characteristic.description), fields))]
        case let .notification(n):
            var fields: Fields = [("notification", .scalar(n.characteristic.description))]
            if let count = n.count { fields.append(("count", .scalar(String(count)))) }
            if let v = n.value { fields.append(("value", value(v))) }
            if let list = n.inOrder { fields.append(("in-order", .sequence(list.map(value), .flow))) }
            return fields + within(n.within) + named(n.peripheral)
        case let .noNotification(p, ref, span):
            return [("no-notification", flow([("characteristic", .scalar(ref.description)), ("for", duration(span))] + named(p)))]
        case let .disconnected(p, reason, span):
            var fields: Fields = []
            if let reason { fields.append(("reason", .scalar(reason.name))) }
            fields += within(span)
            return [("disconnected", fields.isEmpty ? .scalar(p) : flow(fields + named(p)))]
        case let .rssi(r):
            var fields: Fields = [("peripheral", .scalar(r.peripheral))]
            if let low = r.atLeast { fields.append(("at-least", .scalar(String(low)))) }
            if let high = r.atMost { fields.append(("at-most", .scalar(String(high)))) }
            if let source = r.source { fields.append(("from", .scalar(source.rawValue))) }
            return [("rssi", flow(fields))]
        case let .flaw(f): return flawExpectation(f)
        case let .fault(f):
            switch f {
            case let .connectionParameters(p, interval, latency, timeout, span):
                return [("connection-parameters", flow(parameters(interval, latency, timeout) + within(span) + named(p)))]
            case let .mtu(p, size):
                return [("mtu", .scalar(String(size)))] + named(p)
            }
        case let .security(s):
            return securityExpectation(s)
        case let .interruption(i):
            switch i {
            case let .linkLost(p, reason):
                return [("link-lost", primary("peripheral", .scalar(p), reason.map { [("reason", .scalar($0.name))] } ?? []))]
            case let .connectFailed(p, reason):
                return [("connect-failed", primary("peripheral", .scalar(p), reason.map { [("reason", .scalar(Self.failure($0)))] } ?? []))]
            }
        }
    }

    static func failure(_ reason: ConnectFailureReason) -> String {
        switch reason {
        case .timeout: return "timeout"
        case let .status(s): return s.name
        }
    }

    func flawExpectation(_ f: FlawExpectation) -> Fields {
        switch f {
        case let .malformedResponse(p, opcode, bytes, span):
            var fields: Fields = [("opcode", .scalar(opcode.map(Self.responseName) ?? "any"))]
            if let bytes { fields.append(("bytes", .scalar(ScalarText.hex(bytes)))) }
            return [("malformed-response", flow(fields + within(span) + named(p)))]
        case let .attTimeout(p, request, span):
            let name = request.map(ATTFlaw.requestName) ?? "any"
            return [("att-timeout", flow([("request", .scalar(name))] + within(span) + named(p)))]
        case let .responseTime(least, most):
            var fields: Fields = []
            if let least { fields.append(("at-least", duration(least))) }
            if let most { fields.append(("at-most", duration(most))) }
            return [("response-time", flow(fields))]
        case let .ignoredNotification(p, handle, indication, span):
            var fields: Fields = [("handle", .scalar(ScalarText.handle(handle)))]
            if let indication { fields.append(("indication", .scalar(indication ? "true" : "false"))) }
            return [("ignored-notification", flow(fields + within(span) + named(p)))]
        case let .serviceChanged(p, range, span):
            var fields: Fields = []
            if let range { fields += [("start", .scalar(ScalarText.handle(range.start))), ("end", .scalar(ScalarText.handle(range.end)))] }
            fields += within(span)
            return [("service-changed", fields.isEmpty ? .scalar(p) : flow(fields + named(p)))]
        case let .notServices(list, p):
            return [("not-services", uuids(list))] + named(p)
        }
    }

    /// The scenario's name of a response opcode (`read-by-group-type-response`), or `0xNN`.
    static func responseName(_ opcode: ATTOpcode) -> String {
        guard opcode.method == .response, !opcode.name.hasPrefix("Opcode") else { return ScalarText.octet(opcode.rawValue) }
        return opcode.name.lowercased().split(separator: " ").joined(separator: "-")
    }

    /// `interval`, `latency`, `timeout` in their HCI units (1.25 ms, events, 10 ms).
    func parameters(_ interval: UInt16?, _ latency: UInt16?, _ timeout: UInt16?) -> Fields {
        var fields: Fields = []
        if let interval { fields.append(("interval", duration(.microseconds(Int64(interval) * 1250)))) }
        if let latency { fields.append(("latency", .scalar(String(latency)))) }
        if let timeout { fields.append(("timeout", duration(.milliseconds(Int64(timeout) * 10)))) }
        return fields
    }

    // MARK: Faults

    func faultStep(_ f: FaultStep) -> YAMLOut {
        switch f {
        case let .linkLoss(p, after):
            return keyword("link-loss", primary("peripheral", .scalar(p), after.map { [("after", duration($0))] } ?? []))
        case let .outOfRange(p, rate):
            return keyword("out-of-range", primary("peripheral", .scalar(p), rate.map { [("rate", .scalar(ScalarText.number($0) + "dB/s"))] } ?? []))
        case let .inRange(p): return keyword("in-range", .scalar(p))
        case let .powerOff(p): return keyword("power-off", .scalar(p))
        case let .centralPowerOff(after):
            guard let after else { return keyword("power-off", .scalar(PeripheralSchema.centralID)) }
            return keyword("power-off", flow([("device", .scalar(PeripheralSchema.centralID)), ("after", duration(after))]))
        case let .powerOn(p): return keyword("power-on", .scalar(p))
        case let .connectionUpdate(p, r):
            return keyword("connection-update", flow(parameters(r.interval, r.latency, r.timeout) + named(p)))
        case let .link(p, faults):
            return keyword("link", linkFaults(faults, peripheral: multi ? p : nil).flowing)
        case let .parameterRequests(p, accept):
            let answer = YAMLOut.scalar(accept ? "accept" : "reject")
            return keyword("parameter-requests", primary("answer", answer, named(p)))
        }
    }
}

extension YAMLOut {
    /// The same collection, on one line.
    var flowing: YAMLOut {
        var copy = self
        copy.layout = .flow
        return copy
    }
}

/// Peripheral actions and the values they send (docs/scenarios.md section 7), each one item of a
/// list: a bare keyword (`stop-advertising`) or a one-line mapping (`{ notify: FFE1, value: written }`).
extension ScenarioDocument {
    /// A trigger's or `on-connect`'s actions, one per line.
    func actionList(_ actions: [PeripheralAction]) -> YAMLOut {
        .sequence(actions.map(action), .block)
    }

    func action(_ a: PeripheralAction) -> YAMLOut {
        switch a {
        case let .notify(ref, source), let .indicate(ref, source):
            let name: String
            if case .notify = a { name = "notify" } else { name = "indicate" }
            var fields: Fields = [(name, .scalar(ref.description))]
            if let source { fields.append(("value", value(source))) }
            return flow(fields)
        case let .notifyEvery(ref, interval, source, count):
            var fields: Fields = [("characteristic", .scalar(ref.description)), ("interval", duration(interval))]
            if let source { fields.append(("value", value(source))) }
            if let count { fields.append(("count", .scalar(String(count)))) }
            return flow([("notify-every", flow(fields))])
        case let .stopNotifying(ref):
            return flow([("stop-notifying", .scalar(ref.description))])
        case let .setValue(ref, source):
            return flow([("set-value", flow([("characteristic", .scalar(ref.description)), ("value", value(source))]))])
        case let .respondError(code):
            return flow([("respond-error", .scalar(code.name))])
        case let .delay(span):
            return flow([("delay", duration(span))])
        case .powerOff:
            return .scalar("power-off")
        case .forgetBonds:
            return .scalar("forget-bonds")
        case let .requestConnectionUpdate(r):
            var fields = parameters(r.interval, r.latency, r.timeout)
            if r.via != .l2cap { fields.append(("via", .scalar(r.via.rawValue))) }
            return flow([("request-connection-update", flow(fields))])
        case let .burst(ref, source, count):
            var fields: Fields = [("characteristic", .scalar(ref.description)), ("count", .scalar(String(count)))]
            if let source { fields.append(("value", value(source))) }
            return flow([("burst", flow(fields))])
        case let .disconnect(reason):
            guard let reason else { return .scalar("disconnect") }
            return flow([("disconnect", flow([("reason", .scalar(reason.name))]))])
        case .stopAdvertising:
            return .scalar("stop-advertising")
        case .startAdvertising:
            return .scalar("start-advertising")
        case let .notifyHandle(handle, source), let .indicateHandle(handle, source):
            let name: String
            if case .notifyHandle = a { name = "notify-handle" } else { name = "indicate-handle" }
            return flow([(name, flow([("handle", .scalar(ScalarText.handle(handle))), ("value", value(source))]))])
        case let .sendPDU(octets):
            return flow([("send-pdu", .scalar(ScalarText.hex(octets)))])
        case let .addService(s):
            var fields: Fields = [("service", .scalar(s.uuid.description))]
            if !s.characteristics.isEmpty {
                // What add-service takes of a characteristic: its UUID, properties and value.
                let list = s.characteristics.map { c -> YAMLOut in
                    var entries: Fields = [("uuid", .scalar(c.uuid.description)), ("properties", .sequence(c.properties.names.map { .scalar($0) }, .flow))]
                    if !c.value.isEmpty { entries.append(("value", value(c.value))) }
                    return flow(entries)
                }
                fields.append(("characteristics", .sequence(list, .flow)))
            }
            return flow([("add-service", flow(fields))])
        case let .removeService(uuid):
            return flow([("remove-service", .scalar(uuid.description))])
        case let .serviceChanged(range):
            guard let range else { return .scalar("service-changed") }
            return flow([("service-changed", flow([("start", .scalar(ScalarText.handle(range.start))), ("end", .scalar(ScalarText.handle(range.end)))]))])
        }
    }

    /// A value an action sends: bytes, `written`, a generator, or a list of these.
    func value(_ source: ValueSource) -> YAMLOut {
        switch source {
        case let .bytes(b): return value(b)
        case .written: return .scalar("written")
        case let .randomU8(range):
            return flow([("random-u8", .sequence([.scalar(String(range.lowerBound)), .scalar(String(range.upperBound))], .flow))])
        case let .counterU8(start): return flow([("counter-u8", .scalar(String(start)))])
        case let .sequence(list): return flow([("sequence", .sequence(list.map(value), .flow))])
        case let .concatenation(parts): return .sequence(parts.map(value), .flow)
        }
    }
}

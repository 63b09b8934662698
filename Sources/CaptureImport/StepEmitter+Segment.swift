import ATT
import BLEWire
import HCI

/// What the peripheral did after a step, and what the air did to its link: a `peripheral:` step
/// with the observed actions and delays, the fault steps the central needs (`link-loss`), and the
/// expectations of what the capture shows came of them.
extension StepEmitter {
    mutating func emitSegment(_ events: [ScenarioWriter.PeerEvent], after timed: ScenarioWriter.Timed, triggered: Set<CaptureMark>) {
        waitedUntil = nil
        guard !events.isEmpty else { return }
        let base = timed.end.time
        var actions: [Int: [String]] = [:]
        var order: [Int] = []
        var lastTime: [Int: Int64] = [:]
        var arrivals: [(p: Int, handle: UInt16, values: [[UInt8]], last: Int64)] = []
        var expectations: [String] = []
        var faultSteps: [String] = []
        var disconnects: [(comment: String, line: String)] = []
        var first: CaptureMark?
        // The last action no expectation waits for: the steps after it must not overtake it.
        var unawaited: Int64?

        func act(_ p: Int, at mark: CaptureMark, _ action: String) {
            first = first ?? mark
            if !order.contains(p) { order.append(p) }
            appendDelay(&actions[p, default: []], from: lastTime[p] ?? base, to: mark.time)
            lastTime[p] = max(lastTime[p] ?? base, mark.time)
            actions[p, default: []].append(action)
        }
        func within(_ time: Int64) -> String { YAMLValues.duration(microseconds: max(0, time - base) + 1_000_000) }

        for e in events {
            switch e {
            case let .notification(c, n):
                let p = writer.owner[c]
                let kind = n.indication ? "indication" : "notification"
                if n.handle == 0 {
                    // No attribute has handle 0x0000 (Core 5.4, Vol 3, Part F, 3.2.2): the octets, as they came.
                    act(p, at: n.mark, "{ send-pdu: \(YAMLValues.hex([n.indication ? 0x1D : 0x1B, 0, 0] + n.value)) }")
                    unawaited = max(unawaited ?? 0, n.mark.time)
                    notes.append("\(n.mark): a \(kind) of handle 0x0000, which no attribute has; the scenario sends its octets (send-pdu), and nothing expects what the central makes of it")
                    continue
                }
                guard let ref = peripherals[p].reference(n.handle), !writer.isGAPOrGATT(p, n.handle) else {
                    // Sent by handle, as the capture shows it; the central ignores a handle it never
                    // discovered (and confirms an indication all the same, Core 5.4, Vol 3, Part F, 3.4.7.2).
                    let action = n.indication ? "indicate-handle" : "notify-handle"
                    act(p, at: n.mark, "{ \(action): { handle: 0x\(hex(n.handle)), value: \(YAMLValues.value(n.value)) } }")
                    if peripherals[p].database.characteristic(valueHandle: n.handle) == nil {
                        expectations.append("  - expect: { ignored-notification: { handle: 0x\(hex(n.handle)), indication: \(n.indication)\(key(p)) } }")
                    } else {
                        notes.append("\(n.mark): a \(kind) of handle 0x\(hex(n.handle)), a characteristic the scenario cannot name (of the GAP or GATT service, or a second one with its UUID); sent by handle, and nothing expects it")
                    }
                    continue
                }
                values[p][n.handle] = n.value
                let connection = writer.transcript.connections[c]
                if connection.capturedOnPeripheral, let (lost, end) = writer.linkLoss(c),
                   n.mark.time > end.time - Int64(connection.parameters(at: end).timeout) * 10_000 {
                    // Sent into a link already lost: the central's last heard event was one
                    // supervision timeout before the end (Core 5.4, Vol 6, Part B, 4.5.2).
                    if !triggered.contains(n.mark) { act(p, at: n.mark, writer.sendAction(n.indication, to: ref, handle: n.handle, of: p, value: YAMLValues.value(n.value))) }
                    notes.append("\(n.mark): a \(kind) of \(ref) the peripheral sent after its link was lost (about \(lost)) never reached the central; nothing expects it")
                    continue
                }
                if let i = arrivals.firstIndex(where: { $0.p == p && $0.handle == n.handle }) {
                    arrivals[i].values.append(n.value)
                    arrivals[i].last = n.mark.time
                } else {
                    arrivals.append((p, n.handle, [n.value], n.mark.time))
                }
                guard !triggered.contains(n.mark) else { continue }
                act(p, at: n.mark, writer.sendAction(n.indication, to: ref, handle: n.handle, of: p, value: YAMLValues.value(n.value)))
            case let .unsolicited(c, u):
                let p = writer.owner[c]
                act(p, at: u.mark, "{ send-pdu: \(YAMLValues.hex(u.bytes)) }")
                let opcode = ATTOpcode(u.bytes.first ?? 0)
                if opcode.method == .response {
                    expectations.append("  - expect: { malformed-response: { opcode: \(FlawPlan.responseName(opcode)), bytes: \(YAMLValues.hex(u.bytes))\(key(p)) } }")
                } else {
                    unawaited = max(unawaited ?? 0, u.mark.time)
                    notes.append("\(u.mark): the peripheral sent \(YAMLValues.hex(u.bytes)) (\(opcode.name)) outside any transaction; the scenario sends it too (send-pdu), and nothing expects what the central makes of it")
                }
            case let .serviceChanged(c, k, mark):
                let p = writer.owner[c]
                let change = peripherals[p].databaseChanges[k]
                guard change.start != 0, change.start <= change.end else {
                    // A range no handles have: indicated as its octets, where the lab has Service Changed.
                    let value = [UInt8(change.start & 0xFF), UInt8(change.start >> 8), UInt8(change.end & 0xFF), UInt8(change.end >> 8)]
                    if peripherals[p].database.serviceChangedValueHandle == 0x0008 {
                        act(p, at: mark, "{ indicate-handle: { handle: 0x0008, value: \(YAMLValues.hex(value)) } }")
                        unawaited = max(unawaited ?? 0, mark.time)
                    }
                    notes.append("\(mark): Service Changed for 0x\(hex(change.start))-0x\(hex(change.end)), a range no handles have (Core 5.4, Vol 3, Part G, 7.1); \(peripherals[p].database.serviceChangedValueHandle == 0x0008 ? "the scenario indicates its octets, and nothing expects what the central makes of it" : "not reproduced")")
                    continue
                }
                let (list, more) = writer.serviceChangeActions(p, change)
                notes += more
                for action in list { act(p, at: mark, action) }
                if change.handlesMatch {
                    expectations.append("  - expect: { service-changed: { start: 0x\(hex(change.start)), end: 0x\(hex(change.end))\(key(p)) } }")
                } else {
                    expectations.append(writer.multi ? "  - expect: { service-changed: { peripheral: \(peripherals[p].id) } }"
                                                     : "  - expect: { service-changed: \(peripherals[p].id) }")
                }
                if !change.added.isEmpty {
                    expectations.append("  - expect: { services: [\(change.added.map { YAMLValues.uuid($0.uuid) }.joined(separator: ", "))]\(key(p)) }")
                }
                if !change.removed.isEmpty {
                    expectations.append("  - expect: { not-services: [\(change.removed.map { YAMLValues.uuid($0.uuid) }.joined(separator: ", "))]\(key(p)) }")
                }
            case let .linkLoss(c, mark, end):
                let p = writer.owner[c]
                first = first ?? mark
                requiresSim = true
                let after = mark.time - base
                let id = peripherals[p].id
                faultSteps.append("  # \(mark): the link to \(id) lost its radio path here: both ends timed out (Connection Timeout, 0x08) at \(end)")
                faultSteps.append(after >= 1000 ? "  - link-loss: { peripheral: \(id), after: \(YAMLValues.duration(microseconds: after - after % 1000)) }"
                                               : "  - link-loss: \(id)")
            case let .powerOff(c, mark):
                let p = writer.owner[c]
                requiresSim = true
                act(p, at: mark, "power-off")
            case let .parameterRequest(c, request, update):
                let p = writer.owner[c]
                let id = peripherals[p].id
                let answer = ScenarioWriter.answer(to: request, update: update)
                // Accepted, the parameters the central applied; else those asked for.
                let applied = update.flatMap { $0.status == .success ? $0 : nil }
                let interval = applied?.interval ?? request.intervalMin
                let latency = applied?.latency ?? request.latency
                let timeout = applied?.supervisionTimeout ?? request.supervisionTimeout
                let asked = "\(request.viaLinkLayer ? "over its link layer (LL_CONNECTION_PARAM_REQ)" : "with an L2CAP Connection Parameter Update Request")"
                if case let .other(what) = answer {
                    notes.append("\(request.mark): \(id) asked for new connection parameters \(asked) and \(what), which the lab's central does not do; not reproduced")
                    continue
                }
                if case .unknown = answer, request.viaLinkLayer {
                    notes.append("\(request.mark): \(id) asked for new connection parameters \(asked) and the capture shows no answer; the lab's central answers every one, so this is not reproduced")
                    continue
                }
                guard Self.allowed(interval: interval, latency: latency, timeout: timeout) else {
                    notes.append("\(request.mark): \(id) asked for connection parameters the specification does not allow (\(Self.describe(interval, latency, timeout))); not reproduced")
                    continue
                }
                let values = "interval: \(FlawPlan.exact(microseconds: Int64(interval) * 1250)), latency: \(latency), timeout: \(FlawPlan.exact(microseconds: Int64(timeout) * 10_000))"
                act(p, at: request.mark, "{ request-connection-update: { \(values)\(request.viaLinkLayer ? ", via: link-layer" : "") } }")
                if request.intervalMin != request.intervalMax {
                    let chosen = applied != nil ? "the \(FlawPlan.exact(microseconds: Int64(interval) * 1250)) the central chose" : "the shortest"
                    notes.append("\(request.mark): \(id) asked for an interval from \(FlawPlan.exact(microseconds: Int64(request.intervalMin) * 1250)) to \(FlawPlan.exact(microseconds: Int64(request.intervalMax) * 1250)); the scenario asks for \(chosen)")
                }
                switch answer {
                case .accepted:
                    if let applied {
                        expectations.append("  - expect: { connection-parameters: { \(values), within: \(within(applied.mark.time))\(key(p)) } }")
                    } else {
                        notes.append("\(request.mark): \(id) asked for new connection parameters and the central accepted them, but no update followed; the lab's central applies them")
                    }
                case .rejected:
                    // `parameter-requests: reject` before it (ScenarioWriter.parameterPolicies); nothing
                    // to wait for, so the steps after it wait for it to have been sent.
                    unawaited = max(unawaited ?? 0, request.answered?.time ?? request.mark.time)
                case .unknown:
                    notes.append("\(request.mark): \(id) asked for new connection parameters and no answer or update followed; the lab's central answers and, accepting, applies them")
                case .other:
                    break
                }
            case let .disconnect(c, mark, reason):
                let p = writer.owner[c]
                first = first ?? mark
                if reason == .connectionTimeout {
                    // Its cause (link-loss, power-off) is above; the central's supervision timer runs
                    // out one timeout after the peripheral was last heard (Core 5.4, Vol 6, Part B, 4.5.2).
                    let cause = writer.linkLoss(c)?.lost.time ?? writer.transcript.connections[c].lastTraffic?.time ?? mark.time
                    let replay = cause + replayTimeout(c, at: mark)
                    disconnects.append(("  # \(mark): Disconnection Complete, reason connection-timeout",
                                        "  - expect: { disconnected: { reason: connection-timeout, within: \(within(max(mark.time, replay)))\(key(p)) } }"))
                    continue
                }
                if earlyActions.contains(mark) {
                    // Already scheduled before the step it cut short (`emitEarlyDisconnect`).
                    if !Self.peripheralReasons.contains(reason.rawValue) { notes.append("\(mark): the link to \(peripherals[p].id) ended with \(reason.name) (0x\(hex8(reason.rawValue))), which a peripheral cannot send; the scenario has the peripheral disconnect instead") }
                } else if Self.peripheralReasons.contains(reason.rawValue) {
                    act(p, at: mark, "{ disconnect: { reason: \(reason.name) } }")
                } else {
                    act(p, at: mark, "disconnect")
                    notes.append("\(mark): the link to \(peripherals[p].id) ended with \(reason.name) (0x\(hex8(reason.rawValue))), which a peripheral cannot send; the scenario has the peripheral disconnect instead")
                }
                let expected = Self.peripheralReasons.contains(reason.rawValue) ? "reason: \(reason.name), " : ""
                disconnects.append(("  # \(mark): Disconnection Complete, reason \(reason.name)",
                                    "  - expect: { disconnected: { \(expected)within: \(within(mark.time))\(key(p)) } }"))
            }
        }
        if let first, !order.isEmpty {
            comment(first, "what the peripheral sent after the step above, with the delays the capture shows")
            let items = order.map { "\(peripherals[$0].id): [\(actions[$0]!.joined(separator: ", "))]" }
            lines.append("  - peripheral: { \(items.joined(separator: ", ")) }")
        }
        lines += faultSteps
        for a in arrivals {
            guard let ref = peripherals[a.p].reference(a.handle) else { continue }
            var fields = ["notification: \(ref)", "count: \(a.values.count)"]
            if a.values.count <= 8 {
                fields.append("in-order: [\(a.values.map(YAMLValues.value).joined(separator: ", "))]")
            } else {
                fields.append("value: \(YAMLValues.value(a.values.last!))")
            }
            fields.append("within: \(within(a.last))")
            lines.append("  - expect: { \(fields.joined(separator: ", "))\(key(a.p)) }")
        }
        lines += expectations
        for d in disconnects { lines += [d.comment, d.line] }
        if let unawaited, unawaited > base {
            // Its delay, and two connection events for it to cross the link.
            lines.append("  - wait: \(YAMLValues.duration(microseconds: unawaited - base + 60_000))")
            waitedUntil = unawaited + 60_000
        }
    }

    /// The peripheral's disconnect that cut the request of `timed` short: scheduled before the
    /// step, with its delay into it, so that it comes while the request waits (its flaw never
    /// answers it). Its expectation stays after the step (`emitSegment`).
    mutating func emitEarlyDisconnect(_ e: ScenarioWriter.PeerEvent, before timed: ScenarioWriter.Timed) {
        guard case let .disconnect(c, mark, reason) = e else { return }
        let id = peripherals[writer.owner[c]].id
        var list: [String] = []
        appendDelay(&list, from: timed.start.time, to: mark.time)
        list.append(Self.peripheralReasons.contains(reason.rawValue) ? "{ disconnect: { reason: \(reason.name) } }" : "disconnect")
        comment(mark, "\(id) hung up while the request below waited for its answer")
        lines.append("  - peripheral: { \(id): [\(list.joined(separator: ", "))] }")
        earlyActions.insert(mark)
    }

    /// A link loss that came while the step `timed` was running (a connection update, which the
    /// central completes on its own): `link-loss` before the step, `after` the time into it. The
    /// central's capture cannot tell whether the peripheral's link layer had taken the update;
    /// if it had not, it left with Instant Passed (0x28) on its side, as the header says.
    mutating func emitLinkLoss(_ e: ScenarioWriter.PeerEvent, before timed: ScenarioWriter.Timed, during what: String = "the connection update below") {
        guard case let .linkLoss(c, mark, end) = e else { return }
        let id = peripherals[writer.owner[c]].id
        requiresSim = true
        let after = max(0, mark.time - timed.start.time)
        lines.append("  # \(mark): the link to \(id) lost its radio path here, during \(what): both ends timed out (Connection Timeout, 0x08) at \(end)")
        lines.append(after >= 1000 ? "  - link-loss: { peripheral: \(id), after: \(YAMLValues.duration(microseconds: after - after % 1000)) }"
                                   : "  - link-loss: \(id)")
        guard what == "the connection update below" else { return }
        notes.append("\(mark): the link to \(id) was lost while a connection update ran, and the central's capture cannot show whether \(id) had taken the update: the scenario loses the link there, so \(id) times out (0x08) where it may have left with Instant Passed (0x28) on hearing the central again")
    }

    /// Connection parameters LE Connection Update accepts (Core 5.4, Vol 4, Part E, 7.8.18): an
    /// interval of 7.5 ms to 4 s, a latency below 500, a timeout of 100 ms to 32 s longer than
    /// (1 + latency) × interval × 2.
    static func allowed(interval: UInt16, latency: UInt16, timeout: UInt16) -> Bool {
        (6...3200).contains(interval) && latency <= 499 && (10...3200).contains(timeout)
            && Int(timeout) * 10_000 > (1 + Int(latency)) * Int(interval) * 1250 * 2
    }

    static func describe(_ interval: UInt16, _ latency: UInt16, _ timeout: UInt16) -> String {
        "interval \(FlawPlan.exact(microseconds: Int64(interval) * 1250)), latency \(latency), timeout \(FlawPlan.exact(microseconds: Int64(timeout) * 10_000))"
    }

    /// The supervision timeout the replay's link has at `mark`: the lab central's 5 s, or what a
    /// reproduced parameter update set.
    func replayTimeout(_ c: Int, at mark: CaptureMark) -> Int64 {
        Int64(writer.replayParameters(c, at: mark).timeout) * 10_000
    }
}

import ATT
import BLERuntime
import BLEWire
import HCI
import ScenarioFormat

/// What the peripheral did after a step, and what the air did to its link: a `peripheral:` step
/// with the observed actions and delays, the fault steps the central needs (`link-loss`), and the
/// expectations of what the capture shows came of them.
extension StepBuilder {
    mutating func emitSegment(_ events: [ImportedScenario.PeerEvent], after timed: ImportedScenario.Timed, triggered: Set<CaptureMark>) {
        waitedUntil = nil
        guard !events.isEmpty else { return }
        let base = timed.end.time
        var actions: [Int: [PeripheralAction]] = [:]
        var order: [Int] = []
        var lastTime: [Int: Int64] = [:]
        var arrivals: [(p: Int, handle: UInt16, values: [[UInt8]], last: Int64)] = []
        var expectations: [Expectation] = []
        var faultSteps: [Line] = []
        var disconnects: [(comment: String, expectation: Expectation)] = []
        var first: CaptureMark?
        // The last action no expectation waits for: the steps after it must not overtake it.
        var unawaited: Int64?
        var lastRequest: [Int: Int64] = [:]       // when each peripheral's last own ATT request went

        func act(_ p: Int, at mark: CaptureMark, _ action: PeripheralAction) {
            first = first ?? mark
            if !order.contains(p) { order.append(p) }
            appendDelay(&actions[p, default: []], from: lastTime[p] ?? base, to: mark.time)
            lastTime[p] = max(lastTime[p] ?? base, mark.time)
            actions[p, default: []].append(action)
        }
        func within(_ time: Int64) -> TimeSpan { millisecondsUp(max(0, time - base) + 1_000_000) }

        for e in events {
            switch e {
            case let .notification(c, n):
                let p = importing.owner[c]
                let kind = n.indication ? "indication" : "notification"
                if n.handle == 0 {
                    // No attribute has handle 0x0000 (Core 5.4, Vol 3, Part F, 3.2.2): the octets, as they came.
                    act(p, at: n.mark, .sendPDU([n.indication ? 0x1D : 0x1B, 0, 0] + n.value))
                    unawaited = max(unawaited ?? 0, n.mark.time)
                    notes.append("\(n.mark): a \(kind) of handle 0x0000, which no attribute has; the scenario sends its octets (send-pdu), and nothing expects what the central makes of it")
                    continue
                }
                guard let ref = peripherals[p].reference(n.handle), !importing.isGAPOrGATT(p, n.handle) else {
                    // Sent by handle, as the capture shows it; the central ignores a handle it never
                    // discovered (and confirms an indication all the same, Core 5.4, Vol 3, Part F, 3.4.7.2).
                    act(p, at: n.mark, n.indication ? .indicateHandle(n.handle, .bytes(n.value)) : .notifyHandle(n.handle, .bytes(n.value)))
                    if peripherals[p].database.characteristic(valueHandle: n.handle) == nil {
                        expectations.append(.flaw(.ignoredNotification(peripheral: peripherals[p].id, handle: n.handle, indication: n.indication,
                                                                       within: Expectation.defaultWithin)))
                    } else {
                        notes.append("\(n.mark): a \(kind) of handle 0x\(hex(n.handle)), a characteristic the scenario cannot name (of the GAP or GATT service, or a second one with its UUID); sent by handle, and nothing expects it")
                    }
                    continue
                }
                values[p][n.handle] = n.value
                let connection = importing.transcript.connections[c]
                if connection.capturedOnPeripheral, let (lost, end) = importing.linkLoss(c),
                   n.mark.time > end.time - Int64(connection.parameters(at: end).timeout) * 10_000 {
                    // Sent into a link already lost: the central's last heard event was one
                    // supervision timeout before the end (Core 5.4, Vol 6, Part B, 4.5.2).
                    if !triggered.contains(n.mark) { act(p, at: n.mark, importing.sendAction(n.indication, to: ref, handle: n.handle, of: p, value: .bytes(n.value))) }
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
                act(p, at: n.mark, importing.sendAction(n.indication, to: ref, handle: n.handle, of: p, value: .bytes(n.value)))
            case let .unsolicited(c, u):
                let p = importing.owner[c]
                let opcode = ATTOpcode(u.bytes.first ?? 0)
                if opcode.method == .request, let previous = lastRequest[p] {
                    // The peripheral's own requests (its GATT client) wait for the central's answer
                    // between them (Core 5.4, Vol 3, Part F, 3.3.2): keep the capture's spacing, even
                    // for requests that came while the step above ran.
                    let gap = max(u.mark.time - previous, 5_000)
                    if (lastTime[p] ?? base) > u.mark.time || u.mark.time < base { actions[p, default: []].append(.delay(millisecondsUp(gap - 999))) }
                }
                if opcode.method == .request { lastRequest[p] = u.mark.time }
                act(p, at: u.mark, .sendPDU(u.bytes))
                if opcode.method == .response {
                    expectations.append(.flaw(.malformedResponse(peripheral: peripherals[p].id, opcode: opcode, bytes: u.bytes, within: Expectation.defaultWithin)))
                } else {
                    unawaited = max(unawaited ?? 0, u.mark.time)
                    notes.append("\(u.mark): the peripheral sent \(ScalarText.hex(u.bytes)) (\(opcode.name)) outside any transaction; the scenario sends it too (send-pdu), and nothing expects what the central makes of it")
                }
            case let .serviceChanged(c, k, mark):
                let p = importing.owner[c]
                let change = peripherals[p].databaseChanges[k]
                guard change.start != 0, change.start <= change.end else {
                    // A range no handles have: indicated as its octets, where the lab has Service Changed.
                    let value = [UInt8(change.start & 0xFF), UInt8(change.start >> 8), UInt8(change.end & 0xFF), UInt8(change.end >> 8)]
                    if peripherals[p].database.serviceChangedValueHandle == 0x0008 {
                        act(p, at: mark, .indicateHandle(0x0008, .bytes(value)))
                        unawaited = max(unawaited ?? 0, mark.time)
                    }
                    notes.append("\(mark): Service Changed for 0x\(hex(change.start))-0x\(hex(change.end)), a range no handles have (Core 5.4, Vol 3, Part G, 7.1); \(peripherals[p].database.serviceChangedValueHandle == 0x0008 ? "the scenario indicates its octets, and nothing expects what the central makes of it" : "not reproduced")")
                    continue
                }
                let (list, more) = importing.serviceChangeActions(p, change)
                notes += more
                for action in list { act(p, at: mark, action) }
                let id = peripherals[p].id
                let range = change.handlesMatch ? ATTHandleRange(start: change.start, end: change.end) : nil
                expectations.append(.flaw(.serviceChanged(peripheral: id, range: range, within: Expectation.defaultWithin)))
                if !change.added.isEmpty { expectations.append(.services(change.added.map(\.uuid), peripheral: id)) }
                if !change.removed.isEmpty { expectations.append(.flaw(.notServices(change.removed.map(\.uuid), peripheral: id))) }
            case let .linkLoss(c, mark, end):
                let p = importing.owner[c]
                first = first ?? mark
                requiresSim = true
                let after = mark.time - base
                let id = peripherals[p].id
                faultSteps.append(.comment("\(mark): the link to \(id) lost its radio path here: both ends timed out (Connection Timeout, 0x08) at \(end)"))
                faultSteps.append(.step(StepDraft(action: .fault(.linkLoss(peripheral: id, after: after >= 1000 ? millisecondsUp(after - after % 1000) : nil)))))
            case let .powerOff(c, mark):
                let p = importing.owner[c]
                requiresSim = true
                act(p, at: mark, .powerOff)
            case let .parameterRequest(c, request, update):
                let p = importing.owner[c]
                let id = peripherals[p].id
                let answer = ImportedScenario.answer(to: request, update: update)
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
                act(p, at: request.mark, .requestConnectionUpdate(ConnectionUpdateRequest(interval: interval, latency: latency, timeout: timeout,
                                                                                           via: request.viaLinkLayer ? .linkLayer : .l2cap)))
                if request.intervalMin != request.intervalMax {
                    let chosen = applied != nil ? "the \(FlawPlan.exact(microseconds: Int64(interval) * 1250)) the central chose" : "the shortest"
                    notes.append("\(request.mark): \(id) asked for an interval from \(FlawPlan.exact(microseconds: Int64(request.intervalMin) * 1250)) to \(FlawPlan.exact(microseconds: Int64(request.intervalMax) * 1250)); the scenario asks for \(chosen)")
                }
                switch answer {
                case .accepted:
                    if let applied {
                        expectations.append(.fault(.connectionParameters(peripheral: id, interval: interval, latency: latency, timeout: timeout,
                                                                         within: within(applied.mark.time))))
                    } else {
                        notes.append("\(request.mark): \(id) asked for new connection parameters and the central accepted them, but no update followed; the lab's central applies them")
                    }
                case .rejected:
                    // `parameter-requests: reject` before it (ImportedScenario.parameterPolicies); nothing
                    // to wait for, so the steps after it wait for it to have been sent.
                    unawaited = max(unawaited ?? 0, request.answered?.time ?? request.mark.time)
                case .unknown:
                    notes.append("\(request.mark): \(id) asked for new connection parameters and no answer or update followed; the lab's central answers and, accepting, applies them")
                case .other:
                    break
                }
            case let .disconnect(c, mark, reason):
                let p = importing.owner[c]
                first = first ?? mark
                if reason == .connectionTimeout {
                    // Its cause (link-loss, power-off) is above; the central's supervision timer runs
                    // out one timeout after the peripheral was last heard (Core 5.4, Vol 6, Part B, 4.5.2).
                    let cause = importing.linkLoss(c)?.lost.time ?? importing.transcript.connections[c].lastTraffic?.time ?? mark.time
                    let replay = cause + replayTimeout(c, at: mark)
                    disconnects.append(("\(mark): Disconnection Complete, reason connection-timeout",
                                        .disconnected(peripheral: peripherals[p].id, reason: .connectionTimeout, within: within(max(mark.time, replay)))))
                    continue
                }
                if earlyActions.contains(mark) {
                    // Already scheduled before the step it cut short (`emitEarlyDisconnect`).
                    if !Self.peripheralReasons.contains(reason.rawValue) { notes.append("\(mark): the link to \(peripherals[p].id) ended with \(reason.name) (0x\(hex8(reason.rawValue))), which a peripheral cannot send; the scenario has the peripheral disconnect instead") }
                } else if Self.peripheralReasons.contains(reason.rawValue) {
                    act(p, at: mark, .disconnect(reason))
                } else {
                    act(p, at: mark, .disconnect(nil))
                    notes.append("\(mark): the link to \(peripherals[p].id) ended with \(reason.name) (0x\(hex8(reason.rawValue))), which a peripheral cannot send; the scenario has the peripheral disconnect instead")
                }
                let expected = Self.peripheralReasons.contains(reason.rawValue) ? reason : nil
                disconnects.append(("\(mark): Disconnection Complete, reason \(reason.name)",
                                    .disconnected(peripheral: peripherals[p].id, reason: expected, within: within(mark.time))))
            }
        }
        if let first, !order.isEmpty {
            comment(first, "what the peripheral sent after the step above, with the delays the capture shows")
            add(.peripheralActions(order.map { PeripheralActions(peripheral: peripherals[$0].id, actions: actions[$0]!) }))
        }
        lines += faultSteps
        for a in arrivals {
            guard let ref = peripherals[a.p].reference(a.handle) else { continue }
            let few = a.values.count <= 8
            expect(.notification(NotificationExpectation(peripheral: peripherals[a.p].id, characteristic: ref, value: few ? nil : a.values.last,
                                                         count: a.values.count, within: within(a.last), inOrder: few ? a.values : nil)))
        }
        expect(expectations)
        for d in disconnects {
            comment(d.comment)
            expect(d.expectation)
        }
        if let unawaited, unawaited > base {
            // Its delay, and two connection events for it to cross the link.
            add(.wait(millisecondsUp(unawaited - base + 60_000)))
            waitedUntil = unawaited + 60_000
        }
    }

    /// The peripheral's disconnect that cut the request of `timed` short: scheduled before the
    /// step, with its delay into it, so that it comes while the request waits (its flaw never
    /// answers it). Its expectation stays after the step (`emitSegment`).
    mutating func emitEarlyDisconnect(_ e: ImportedScenario.PeerEvent, before timed: ImportedScenario.Timed) {
        guard case let .disconnect(c, mark, reason) = e else { return }
        let id = peripherals[importing.owner[c]].id
        var list: [PeripheralAction] = []
        appendDelay(&list, from: timed.start.time, to: mark.time)
        list.append(.disconnect(Self.peripheralReasons.contains(reason.rawValue) ? reason : nil))
        comment(mark, "\(id) hung up while the request below waited for its answer")
        add(.peripheralActions([PeripheralActions(peripheral: id, actions: list)]))
        earlyActions.insert(mark)
    }

    /// A link loss that came while the step `timed` was running (a connection update, which the
    /// central completes on its own): `link-loss` before the step, `after` the time into it. The
    /// central's capture cannot tell whether the peripheral's link layer had taken the update;
    /// if it had not, it left with Instant Passed (0x28) on its side, as the header says.
    mutating func emitLinkLoss(_ e: ImportedScenario.PeerEvent, before timed: ImportedScenario.Timed, during what: String = "the connection update below") {
        guard case let .linkLoss(c, mark, end) = e else { return }
        let id = peripherals[importing.owner[c]].id
        requiresSim = true
        let after = max(0, mark.time - timed.start.time)
        comment(mark, "the link to \(id) lost its radio path here, during \(what): both ends timed out (Connection Timeout, 0x08) at \(end)")
        add(.fault(.linkLoss(peripheral: id, after: after >= 1000 ? millisecondsUp(after - after % 1000) : nil)))
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
        Int64(importing.replayParameters(c, at: mark).timeout) * 10_000
    }
}

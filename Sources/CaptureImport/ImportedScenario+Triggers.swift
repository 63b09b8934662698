import ATT
import BLEWire
import ScenarioFormat

/// The behaviour that reproduces what the peripheral sent: triggers on its characteristics.
extension ImportedScenario {
    /// A notification right after every accepted write of a characteristic, carrying the bytes
    /// written (after a fixed prefix): the peripheral echoes, so `on-write` notifies `written`.
    mutating func findEchoes(items: [Timed], segments: [[PeerEvent]], triggered: inout Set<CaptureMark>) {
        struct Echo: Hashable { var handle: UInt16; var prefix: [UInt8]; var indication: Bool }
        var candidates: [Int: [UInt16: [Echo?]]] = [:]          // peripheral → written handle → echo per write
        var marks: [Int: [UInt16: [CaptureMark]]] = [:]
        var claimed = Set<CaptureMark>()
        for (i, timed) in items.enumerated() {
            guard case let .operation(c, k) = timed.item, case let .write(handle, value, command) = sessions[c].operations[k].kind,
                  sessions[c].operations[k].error == nil else { continue }
            let p = owner[c]
            guard let (_, ch) = peripherals[p].database.characteristic(valueHandle: handle) else { continue }
            if command && ch.properties & 0x04 == 0 { continue }   // dropped by the server: no on-write
            // The echo may arrive after the central's next operation has begun (a Write Command
            // right behind a Write Request): look in this step's segment and the next one.
            let window = segments[i] + (i + 1 < segments.count ? segments[i + 1] : [])
            let mine = window.compactMap { e -> ValueNotification? in
                if case let .notification(cc, n) = e, owner[cc] == p, !claimed.contains(n.mark) { return n }
                return nil
            }
            var echo: Echo?
            if let n = mine.first(where: { $0.value.count >= value.count && Array($0.value.suffix(value.count)) == value }) {
                echo = Echo(handle: n.handle, prefix: Array(n.value.dropLast(value.count)), indication: n.indication)
                marks[p, default: [:]][handle, default: []].append(n.mark)
                claimed.insert(n.mark)
            }
            candidates[p, default: [:]][handle, default: []].append(echo)
        }
        for (p, byHandle) in candidates {
            for (handle, echoes) in byHandle {
                guard let first = echoes.first ?? nil, echoes.allSatisfy({ $0 == first }),
                      let target = peripherals[p].reference(first.handle) else { continue }
                let value = first.prefix.isEmpty ? ValueSource.written : .concatenating([.bytes(first.prefix), .written])
                peripherals[p].onWrite[handle] = [sendAction(first.indication, to: target, handle: first.handle, of: p, value: value)]
                let seen = marks[p]?[handle] ?? []
                peripherals[p].triggerNotes[handle, default: []].append(
                    "each of the \(echoes.count) write\(echoes.count == 1 ? "" : "s") was echoed by \(first.indication ? "an indication" : "a notification") of \(target) (first at \(seen.first.map { "\($0)" } ?? "?"))")
                for m in seen { triggered.insert(m) }
            }
        }
    }

    /// The action that sends what the capture shows: `notify`/`indicate` of the characteristic when
    /// it offers that property, else `notify-handle`/`indicate-handle` of its value handle (a
    /// firmware that sends regardless; a scenario's `notify` needs the property).
    func sendAction(_ indication: Bool, to ref: CharacteristicRef, handle: UInt16, of p: Int, value: ValueSource) -> PeripheralAction {
        if let (_, ch) = peripherals[p].database.characteristic(valueHandle: handle), ch.properties & (indication ? 0x20 : 0x10) != 0 {
            return indication ? .indicate(ref, value) : .notify(ref, value)
        }
        return indication ? .indicateHandle(handle, value) : .notifyHandle(handle, value)
    }

    /// A characteristic subscribed once whose notifications then came at a regular interval:
    /// `on-subscribe: notify-every` with the observed values, interval and count.
    mutating func findPeriodicNotifications(triggered: inout Set<CaptureMark>) {
        for p in peripherals.indices {
            var subscriptions: [UInt16: [(connection: Int, start: CaptureMark, end: CaptureMark)]] = [:]
            for c in peripherals[p].connections {
                let ops = sessions[c].operations
                for (k, op) in ops.enumerated() {
                    guard case let .configure(handle, value) = op.kind, op.error == nil, value.first.map({ $0 & 0x03 != 0 }) == true,
                          let (_, ch) = peripherals[p].database.characteristic(configurationHandle: handle),
                          ch.properties & 0x10 != 0 else { continue }   // notify-every needs notify
                    // Until the next write of this CCCD, or the end of the connection.
                    let until = ops[(k + 1)...].first { later in
                        if case let .configure(h, _) = later.kind { return h == handle }
                        return false
                    }?.start ?? transcript.connections[c].disconnected ?? CaptureMark(record: Int.max, time: Int64.max)
                    subscriptions[ch.valueHandle, default: []].append((c, op.end, until))
                }
            }
            for (handle, subs) in subscriptions where subs.count == 1 {
                let sub = subs[0]
                let all = sessions[sub.connection].notifications.filter { $0.handle == handle }
                let series = all.filter { $0.mark.time >= sub.start.time && $0.mark < sub.end }
                guard series.count >= 3, series.count == all.count, series.allSatisfy({ !$0.indication }),
                      !series.contains(where: { triggered.contains($0.mark) }) else { continue }
                let gaps = zip(series.dropFirst(), series).map { $0.mark.time - $1.mark.time }
                let mean = (series.last!.mark.time - series.first!.mark.time) / Int64(gaps.count)
                guard mean >= 50_000 else { continue }
                let tolerance = max(35_000, mean / 10)
                guard gaps.allSatisfy({ abs($0 - mean) <= tolerance }) else { continue }
                let first = series[0].mark.time - sub.start.time
                guard first >= mean / 2 && first <= mean + mean / 2 + 100_000 else { continue }
                // Whole milliseconds; to 10 ms when the series is long enough to pin it down.
                var intervalMs = (mean + 500) / 1000
                if intervalMs >= 100 { intervalMs = (intervalMs + 5) / 10 * 10 }
                guard let ref = peripherals[p].reference(handle) else { continue }
                let values = series.map(\.value)
                let value: ValueSource = values.allSatisfy({ $0 == values[0] }) ? .bytes(values[0]) : .sequence(values)
                peripherals[p].onSubscribe[handle, default: []].append(
                    .notifyEvery(ref, interval: .milliseconds(intervalMs), value: value, count: series.count))
                peripherals[p].triggerNotes[handle, default: []].append(
                    "\(series.count) notifications every ~\(intervalMs)ms after the subscription (\(series.first!.mark) to \(series.last!.mark))")
                for n in series { triggered.insert(n.mark) }
            }
        }
    }

    /// Every Write Request to a characteristic refused with the same ATT error, which its
    /// properties do not explain: `on-write: respond-error`.
    mutating func findWriteErrors() {
        for p in peripherals.indices {
            var outcomes: [UInt16: [ATTErrorCode?]] = [:]
            var first: [UInt16: CaptureMark] = [:]
            for c in peripherals[p].connections {
                for op in sessions[c].operations {
                    guard case let .write(handle, _, command) = op.kind, !command else { continue }
                    outcomes[handle, default: []].append(op.error)
                    if op.error != nil, first[handle] == nil { first[handle] = op.start }
                }
            }
            for (handle, errors) in outcomes {
                guard let code = errors.first ?? nil, errors.allSatisfy({ $0 == code }), peripherals[p].onWrite[handle] == nil,
                      let (_, ch) = peripherals[p].database.characteristic(valueHandle: handle) else { continue }
                if code == .writeNotPermitted && ch.properties & 0x08 == 0 { continue }   // the server refuses it by itself
                peripherals[p].onWrite[handle] = [.respondError(code)]
                peripherals[p].triggerNotes[handle, default: []].append(
                    "every Write Request got ATT error \(code.name) (first at \(first[handle].map { "\($0)" } ?? "?"))")
            }
        }
    }

    /// Notifications the peripheral sent between a Write Request enabling a CCCD and its answer:
    /// its subscription trigger sent them before answering (a burst that fills the controller's
    /// buffers delays the Write Response, Core 5.4, Vol 4, Part E, 4.1.1). For a CCCD enabled once,
    /// `on-subscribe` notifies them, so the answer waits for them again.
    mutating func findSubscribeBursts(triggered: inout Set<CaptureMark>) {
        for p in peripherals.indices {
            var enabled: [UInt16: [(connection: Int, op: GATTOperation)]] = [:]
            for c in peripherals[p].connections {
                for op in sessions[c].operations {
                    guard case let .configure(handle, value) = op.kind, op.error == nil, op.rejected == nil, !op.unanswered,
                          value.first.map({ $0 & 0x03 != 0 }) == true,
                          let (_, ch) = peripherals[p].database.characteristic(configurationHandle: handle) else { continue }
                    enabled[ch.valueHandle, default: []].append((c, op))
                }
            }
            for (handle, subs) in enabled where subs.count == 1 && peripherals[p].onSubscribe[handle] == nil {
                let (c, op) = subs[0]
                let burst = sessions[c].notifications.filter { $0.mark > op.start && $0.mark < op.end && !triggered.contains($0.mark) }
                guard !burst.isEmpty, burst.allSatisfy({ peripherals[p].reference($0.handle) != nil }) else { continue }
                peripherals[p].onSubscribe[handle] = burst.map { n in
                    sendAction(n.indication, to: peripherals[p].reference(n.handle)!, handle: n.handle, of: p, value: .bytes(n.value))
                }
                peripherals[p].triggerNotes[handle, default: []].append(
                    "\(burst.count) notification\(burst.count == 1 ? "" : "s") sent before the subscription's Write Response (\(burst.first!.mark) to \(burst.last!.mark))")
                for n in burst { triggered.insert(n.mark) }
            }
        }
    }
}

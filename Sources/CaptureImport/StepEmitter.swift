import ATT
import BLEWire
import HCI

/// Writes the `central:` steps, keeping a model of the imported lab as it goes: which peripheral
/// advertises, what each characteristic's value is on the simulated server, what each scan
/// discovered. Where the model and the capture disagree, it adds the `peripheral:` step that makes
/// them agree (a `set-value` before a read, a `start-advertising` before a scan).
struct StepEmitter {
    var writer: ScenarioWriter
    var lines: [String] = []
    var notes: [String] = []
    /// Per peripheral: the value the simulated server holds, by value handle.
    var values: [[UInt16: [UInt8]]]
    /// Per peripheral: whether it advertises now.
    var advertising: [Bool]
    var discoveredEver: Set<Int> = []
    let filterServices: [BluetoothUUID]
    let filterNames: [String]

    init(writer: ScenarioWriter) {
        self.writer = writer
        let ps = writer.peripherals
        values = Array(repeating: [:], count: ps.count)
        advertising = ps.map { _ in true }
        let connected = ps.indices.filter { !ps[$0].connections.isEmpty }
        let others = ps.indices.filter { ps[$0].connections.isEmpty && !ps[$0].reports.isEmpty }
        var services: [BluetoothUUID]?
        var names: [String]?
        if !connected.isEmpty {
            if connected.allSatisfy({ !ps[$0].advertisedServices.isEmpty }) {
                var list: [BluetoothUUID] = []
                for p in connected { for u in ps[p].advertisedServices where !list.contains(u) { list.append(u) } }
                services = list
            }
            if connected.allSatisfy({ !ps[$0].advertisedNames.isEmpty }) {
                var list: [String] = []
                for p in connected where !list.contains(ps[p].advertisedNames[0]) { list.append(ps[p].advertisedNames[0]) }
                names = list
            }
        }
        func admitted(_ s: [BluetoothUUID], _ n: [String]) -> Int { others.filter { ps[$0].matches(services: s, names: n) }.count }
        if let s = services, names == nil || admitted(s, []) <= admitted([], names!) {
            filterServices = s
            filterNames = []
        } else if let n = names {
            filterServices = []
            filterNames = n
        } else {
            filterServices = []
            filterNames = []
        }
    }

    var peripherals: [ImportedPeripheral] {
        get { writer.peripherals }
        set { writer.peripherals = newValue }
    }

    func key(_ p: Int) -> String { writer.peripheralKey(p) }

    mutating func comment(_ mark: CaptureMark, _ text: String) { lines.append("  # \(mark): \(text)") }

    // MARK: Steps

    mutating func emit(_ timed: ScenarioWriter.Timed, items: [ScenarioWriter.Timed]) {
        switch timed.item {
        case let .scan(i): scan(i, timed)
        case let .connect(c): connect(c, timed)
        case let .operation(c, k): operation(c, writer.sessions[c].operations[k])
        case let .disconnect(c):
            let p = writer.owner[c]
            let connection = writer.transcript.connections[c]
            comment(timed.start, connection.capturedOnPeripheral ? "the central disconnected (Disconnection Complete, \(connection.reason?.name ?? "?"))" : "HCI Disconnect")
            lines.append(writer.multi ? "  - disconnect: \(peripherals[p].id)" : "  - disconnect")
            if connection.reason == .connectionTerminatedByLocalHost || connection.capturedOnPeripheral {
                lines.append("  - expect: { disconnected: { reason: local-host-terminated\(key(p)) } }")
            }
        }
    }

    /// Starts or stops peripherals' advertising so that the lab's match the capture's.
    private mutating func setAdvertising(_ wanted: [Int: Bool], at mark: CaptureMark) {
        let changes = wanted.filter { advertising[$0.key] != $0.value }.sorted { $0.key < $1.key }
        guard !changes.isEmpty else { return }
        let described = changes.map { "\(peripherals[$0.key].id) \($0.value ? "advertises" : "does not advertise")" }
        comment(mark, "the capture shows " + described.joined(separator: ", ") + " here")
        let items = changes.map { "\(peripherals[$0.key].id): [\($0.value ? "start-advertising" : "stop-advertising")]" }
        lines.append("  - peripheral: { \(items.joined(separator: ", ")) }")
        for (p, on) in changes { advertising[p] = on }
    }

    private mutating func scan(_ i: Int, _ timed: ScenarioWriter.Timed) {
        let reports = writer.transcript.reports.filter { $0.scan == i }
        var seen: [Int] = []
        for r in reports {
            if let p = peripherals.firstIndex(where: { $0.address == ImportedPeripheral.normalized(r.address) }), !seen.contains(p) { seen.append(p) }
        }
        var wanted: [Int: Bool] = [:]
        for p in peripherals.indices where !peripherals[p].reports.isEmpty || !peripherals[p].connections.isEmpty {
            wanted[p] = seen.contains(p)
        }
        setAdvertising(wanted, at: timed.start)
        var filter: [String] = []
        if !filterServices.isEmpty { filter.append("services: [\(filterServices.map(YAMLValues.uuid).joined(separator: ", "))]") }
        if !filterNames.isEmpty { filter.append("names: [\(filterNames.map(YAMLValues.quoted).joined(separator: ", "))]") }
        // Long enough to hear each device it found again: a scan that ended 2 ms after its first
        // report was lucky in its phase, and an advertiser sends one event per interval plus a
        // 0–10 ms advDelay (Core 5.4, Vol 6, Part B, 4.4.2.2.1).
        let hearing = seen.map { (peripherals[$0].advertisingInterval ?? 100) * 1000 + 10_000 }.max() ?? 0
        let duration = max(1_000, timed.end.time - timed.start.time, hearing)
        filter.append("for: \(YAMLValues.duration(microseconds: duration))")
        comment(timed.start, "scanning (LE Set Scan Enable) until \(timed.end); \(reports.count) advertising report\(reports.count == 1 ? "" : "s") from \(seen.count) device\(seen.count == 1 ? "" : "s")")
        lines.append("  - scan: { \(filter.joined(separator: ", ")) }")
        for p in seen {
            if peripherals[p].matches(services: filterServices, names: filterNames) {
                lines.append("  - expect: { discovered: \(peripherals[p].id) }")
                discoveredEver.insert(p)
            } else {
                lines.append("  - expect: { not-discovered: \(peripherals[p].id) }")
            }
        }
    }

    private mutating func connect(_ c: Int, _ timed: ScenarioWriter.Timed) {
        let p = writer.owner[c]
        if discoveredEver.contains(p) && !advertising[p] {
            // It connected again, so it advertised again (after an earlier connection, say).
            setAdvertising([p: true], at: timed.start)
        } else if !discoveredEver.contains(p) {
            // The lab connects only to what a scan found: scan for it first.
            setAdvertising([p: true], at: timed.start)
            comment(timed.start, "the capture has no scan that found \(peripherals[p].id) before this connection; scanning for it")
            lines.append("  - scan: { for: 1s }")
            discoveredEver.insert(p)
        }
        let connection = writer.transcript.connections[c]
        let took = connection.established.time - (connection.requested?.time ?? connection.established.time)
        let within = max(1, (took * 2 + 999_999) / 1_000_000)
        if connection.capturedOnPeripheral {
            comment(timed.start, "the central \(connection.peer.address) connected (LE Connection Complete, handle 0x\(hex(connection.handle)))")
        } else {
            comment(timed.start, "connecting to \(connection.peer.address); LE Connection Complete, handle 0x\(hex(connection.handle)), at \(connection.established)")
        }
        lines.append("  - connect: { peripheral: \(peripherals[p].id), within: \(within)s }")
        lines.append("  - expect: { connected: \(peripherals[p].id) }")
        advertising[p] = false   // a legacy advertiser stops once connected (Core 5.4, Vol 6, Part B, 4.4.2)
    }

    private func isGAPOrGATT(_ p: Int, _ handle: UInt16) -> (BluetoothUUID, BluetoothUUID)? {
        guard let (s, c) = peripherals[p].database.characteristic(valueHandle: handle),
              s.uuid == BluetoothUUID(uuid16: 0x1800) || s.uuid == BluetoothUUID(uuid16: 0x1801) else { return nil }
        return (s.uuid, c.uuid)
    }

    private mutating func operation(_ c: Int, _ op: GATTOperation) {
        let p = writer.owner[c]
        let id = peripherals[p].id
        let pk = key(p)
        switch op.kind {
        case let .discover(all, services):
            comment(op.start, "\(all ? "discovery of all primary services" : "discovery of services \(services.map(YAMLValues.uuid).joined(separator: ", "))") until \(op.end)")
            if all {
                lines.append("  - discover: all")
                if writer.multi { lines.append("    peripheral: \(id)") }
            } else {
                lines.append("  - discover: { services: [\(services.map(YAMLValues.uuid).joined(separator: ", "))]\(pk) }")
            }
            let declared = peripherals[p].declaredServices.map(\.uuid)
            if !declared.isEmpty {
                lines.append("  - expect: { services: [\(declared.map(YAMLValues.uuid).joined(separator: ", "))]\(pk) }")
            }
        case let .mtu(client, server):
            let size = min(517, max(23, Int(client)))
            comment(op.start, "Exchange MTU: the central offered \(client)\(server.map { ", the peripheral \($0)" } ?? "")")
            lines.append(writer.multi ? "  - mtu: { size: \(size)\(pk) }" : "  - mtu: \(size)")
        case let .read(handle, value):
            read(p, handle: handle, value: value, op: op)
        case let .write(handle, value, command):
            guard let ref = peripherals[p].reference(handle), let (_, ch) = peripherals[p].database.characteristic(valueHandle: handle) else {
                comment(op.start, "a write to handle 0x\(hex(handle)), which discovery did not find (\(YAMLValues.hex(value))); not reproduced")
                return
            }
            comment(op.start, "ATT \(command ? "Write Command (0x52)" : "Write Request (0x12)") to \(ref) at handle 0x\(hex(handle))")
            lines.append("  - write: { characteristic: \(ref), value: \(YAMLValues.value(value)), type: \(command ? "command" : "request")\(pk) }")
            if let error = op.error {
                if reproducibleWriteError(p, handle: handle, error: error, properties: ch.properties) {
                    lines.append("  - expect: { error: \(error.name) }")
                } else {
                    notes.append("\(op.start): the write to \(ref) got ATT error \(error.name), which the importer cannot reproduce")
                }
            }
            lines.append("  - expect: { write-sent-as: \(command ? "command" : "request") }")
            if op.error == nil {
                lines.append("  - expect: { peripheral-received: { characteristic: \(ref), value: \(YAMLValues.value(value)), via: \(command ? "command" : "request")\(pk) } }")
                if !command || ch.properties & 0x04 != 0 { values[p][handle] = value }
            }
        case let .configure(handle, value):
            guard let (_, ch) = peripherals[p].database.characteristic(configurationHandle: handle), let ref = peripherals[p].reference(ch.valueHandle) else { return }
            let bits = value.first ?? 0
            comment(op.start, "Write Request to \(ref)'s CCCD (handle 0x\(hex(handle))): \(YAMLValues.hex(value))")
            if op.error != nil {
                notes.append("\(op.start): the CCCD write for \(ref) got ATT error \(op.error!.name); not reproduced")
            }
            if ch.properties & 0x30 == 0 {
                // A CCCD under a characteristic that offers neither notify nor indicate: the lab
                // gives such a characteristic none, so a subscribe to it would not validate.
                notes.append("\(op.start): the central wrote a CCCD of \(ref), which offers neither notify nor indicate; not reproduced")
            } else if bits & 0x03 == 0 {
                lines.append(writer.multi ? "  - unsubscribe: { characteristic: \(ref)\(pk) }" : "  - unsubscribe: \(ref)")
            } else {
                if bits & 0x03 == 0x02 && ch.properties & 0x10 != 0 {
                    notes.append("\(op.start): the central enabled indications of \(ref), which also offers notify; the lab's subscribe enables notifications")
                }
                lines.append(writer.multi ? "  - subscribe: { characteristic: \(ref)\(pk) }" : "  - subscribe: \(ref)")
            }
        case let .unsupported(text):
            comment(op.start, "\(text): not reproduced")
            notes.append("\(op.start): \(text) (on the connection to \(id))")
        case .discoverMore:
            break
        }
    }

    private func reproducibleWriteError(_ p: Int, handle: UInt16, error: ATTErrorCode, properties: UInt8) -> Bool {
        if error == .writeNotPermitted && properties & 0x08 == 0 { return true }
        return peripherals[p].onWrite[handle]?.first?.hasPrefix("{ respond-error") == true
    }

    private mutating func read(_ p: Int, handle: UInt16, value: [UInt8], op: GATTOperation) {
        let pk = key(p)
        guard let ref = peripherals[p].reference(handle), let (_, ch) = peripherals[p].database.characteristic(valueHandle: handle) else {
            comment(op.start, "a read of handle 0x\(hex(handle)), which discovery did not find; not reproduced")
            return
        }
        let step = writer.multi ? "  - read: { characteristic: \(ref)\(pk) }" : "  - read: \(ref)"
        if let (service, uuid) = isGAPOrGATT(p, handle) {
            comment(op.start, "ATT Read Request for \(ref) (the \(service == BluetoothUUID(uuid16: 0x1800) ? "GAP" : "GATT") service)")
            lines.append(step)
            if uuid == BluetoothUUID(uuid16: 0x2A00), op.error == nil {
                peripherals[p].deviceName = peripherals[p].deviceName ?? String(decoding: value, as: UTF8.self)
                lines.append("  - expect: { value: \(YAMLValues.value(value)) }")
            } else {
                lines.append("  # the lab's peripheral serves its own \(ref); the capture read \(YAMLValues.hex(value))")
            }
            return
        }
        if let error = op.error {
            let natural = error == .readNotPermitted && ch.properties & 0x02 == 0
            let all = readErrors(p, handle: handle)
            if !natural {
                guard all.allSatisfy({ $0 == error }) else {
                    comment(op.start, "a read of \(ref) got ATT error \(error.name) while others did not; not reproduced")
                    notes.append("\(op.start): a read of \(ref) got \(error.name), other reads did not")
                    return
                }
                if peripherals[p].onRead[handle] == nil {
                    peripherals[p].onRead[handle] = ["{ respond-error: \(error.name) }"]
                    peripherals[p].triggerNotes[handle, default: []].append("every read got ATT error \(error.name) (first at \(op.start))")
                }
            }
            comment(op.start, "ATT Read Request for \(ref): Error Response \(error.name)")
            lines.append(step)
            lines.append("  - expect: { error: \(error.name) }")
            return
        }
        if let current = values[p][handle] {
            if current != value {
                comment(op.start, "the value changed without a write or a notification the capture shows")
                lines.append("  - peripheral: { \(peripherals[p].id): [{ set-value: { characteristic: \(ref), value: \(YAMLValues.value(value)) } }] }")
            }
        } else if peripherals[p].initialValues[handle] == nil {
            peripherals[p].initialValues[handle] = value
        } else {
            lines.append("  - peripheral: { \(peripherals[p].id): [{ set-value: { characteristic: \(ref), value: \(YAMLValues.value(value)) } }] }")
        }
        values[p][handle] = value
        comment(op.start, "ATT Read Request for \(ref) at handle 0x\(hex(handle)); \(value.count) octet\(value.count == 1 ? "" : "s") by \(op.end)")
        lines.append(step)
        lines.append("  - expect: { value: \(YAMLValues.value(value)) }")
    }

    private func readErrors(_ p: Int, handle: UInt16) -> [ATTErrorCode?] {
        var out: [ATTErrorCode?] = []
        for c in peripherals[p].connections {
            for op in writer.sessions[c].operations {
                if case let .read(h, _) = op.kind, h == handle { out.append(op.error) }
            }
        }
        return out
    }

    // MARK: What the peripheral did after a step

    mutating func emitSegment(_ events: [ScenarioWriter.PeerEvent], after timed: ScenarioWriter.Timed, triggered: Set<CaptureMark>) {
        guard !events.isEmpty else { return }
        let base = timed.end.time
        var actions: [Int: [String]] = [:]
        var order: [Int] = []
        var lastTime: [Int: Int64] = [:]
        var arrivals: [(p: Int, handle: UInt16, values: [[UInt8]], last: Int64)] = []
        var disconnects: [(p: Int, reason: HCIStatus, mark: CaptureMark)] = []
        var first: CaptureMark?
        for e in events {
            switch e {
            case let .notification(c, n):
                let p = writer.owner[c]
                guard let ref = peripherals[p].reference(n.handle) else {
                    notes.append("\(n.mark): a \(n.indication ? "indication" : "notification") for handle 0x\(hex(n.handle)), which discovery did not find (\(YAMLValues.hex(n.value)))")
                    continue
                }
                if isGAPOrGATT(p, n.handle) != nil {
                    notes.append("\(n.mark): \(n.indication ? "an indication" : "a notification") of \(ref) (the peripheral's own GAP or GATT service, such as Service Changed) is not reproduced")
                    continue
                }
                values[p][n.handle] = n.value
                if let i = arrivals.firstIndex(where: { $0.p == p && $0.handle == n.handle }) {
                    arrivals[i].values.append(n.value)
                    arrivals[i].last = n.mark.time
                } else {
                    arrivals.append((p, n.handle, [n.value], n.mark.time))
                }
                guard !triggered.contains(n.mark) else { continue }
                first = first ?? n.mark
                if !order.contains(p) { order.append(p) }
                appendDelay(&actions[p, default: []], from: lastTime[p] ?? base, to: n.mark.time)
                lastTime[p] = n.mark.time
                actions[p, default: []].append(ScenarioWriter.sendAction(n.indication, to: ref, handle: n.handle,
                                                                         properties: peripherals[p].database.characteristic(valueHandle: n.handle)?.1.properties,
                                                                         value: YAMLValues.value(n.value)))
            case let .disconnect(c, mark, reason):
                let p = writer.owner[c]
                first = first ?? mark
                if !order.contains(p) { order.append(p) }
                appendDelay(&actions[p, default: []], from: lastTime[p] ?? base, to: mark.time)
                lastTime[p] = mark.time
                if Self.peripheralReasons.contains(reason.rawValue) {
                    actions[p, default: []].append("{ disconnect: { reason: \(reason.name) } }")
                } else {
                    actions[p, default: []].append("disconnect")
                    notes.append("\(mark): the link to \(peripherals[p].id) ended with \(reason.name) (0x\(hex8(reason.rawValue))), which a peripheral cannot send; the scenario has the peripheral disconnect instead")
                }
                disconnects.append((p, reason, mark))
            }
        }
        if let first, !order.isEmpty {
            comment(first, "what the peripheral sent after the step above, with the delays the capture shows")
            let items = order.map { "\(peripherals[$0].id): [\(actions[$0]!.joined(separator: ", "))]" }
            lines.append("  - peripheral: { \(items.joined(separator: ", ")) }")
        }
        for a in arrivals {
            guard let ref = peripherals[a.p].reference(a.handle) else { continue }
            let within = YAMLValues.duration(microseconds: max(0, a.last - base) + 1_000_000)
            var fields = ["notification: \(ref)", "count: \(a.values.count)"]
            if a.values.count <= 8 {
                fields.append("in-order: [\(a.values.map(YAMLValues.value).joined(separator: ", "))]")
            } else {
                fields.append("value: \(YAMLValues.value(a.values.last!))")
            }
            fields.append("within: \(within)")
            lines.append("  - expect: { \(fields.joined(separator: ", "))\(key(a.p)) }")
        }
        for d in disconnects {
            let within = YAMLValues.duration(microseconds: max(0, d.mark.time - base) + 1_000_000)
            let reason = Self.peripheralReasons.contains(d.reason.rawValue) ? "reason: \(d.reason.name), " : ""
            comment(d.mark, "Disconnection Complete, reason \(d.reason.name)")
            lines.append("  - expect: { disconnected: { \(reason)within: \(within)\(key(d.p)) } }")
        }
    }

    private func appendDelay(_ list: inout [String], from: Int64, to: Int64) {
        let gap = to - from
        if gap >= 5_000 { list.append("{ delay: \(YAMLValues.duration(microseconds: gap - 999)) }") }
    }

    /// The reasons HCI Disconnect allows (Core 5.4, Vol 4, Part E, 7.1.6), which a peripheral's
    /// `disconnect` action can give.
    static let peripheralReasons: Set<UInt8> = [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B]
}

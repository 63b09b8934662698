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
    /// A step or action that needs the embedded simulator was written (`requires: [sim]`).
    var requiresSim = false
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
        case let .operation(c, k): operation(c, k, writer.sessions[c].operations[k])
        case let .disconnect(c):
            let p = writer.owner[c]
            let connection = writer.transcript.connections[c]
            if let timeout = timedOut(c), timed.start.time >= timeout - 1_000_000, timed.start.time <= timeout + 2_000_000 {
                // The lab's central ends the link itself once the ATT transaction timed out.
                comment(timed.start, "the central disconnected after the ATT transaction timeout, as the lab's central does by itself")
                lines.append("  - expect: { disconnected: { within: \(YAMLValues.duration(microseconds: max(0, timed.end.time - timeout) + 1_000_000))\(key(p)) } }")
                return
            }
            if connection.endedByReset && !connection.capturedOnPeripheral {
                notes.append("\(timed.start): the central's controller was reset (a power cycle) while connected to \(peripherals[p].id); the lab's central disconnects there instead")
            }
            comment(timed.start, connection.capturedOnPeripheral ? "the central disconnected (Disconnection Complete, \(connection.reason?.name ?? "?"))" : "HCI Disconnect")
            lines.append(writer.multi ? "  - disconnect: \(peripherals[p].id)" : "  - disconnect")
            if connection.reason == .connectionTerminatedByLocalHost || connection.capturedOnPeripheral {
                lines.append("  - expect: { disconnected: { reason: local-host-terminated\(key(p)) } }")
            }
        case let .connectionUpdate(c, u):
            let p = writer.owner[c]
            let update = writer.transcript.connections[c].parameterUpdates[u]
            let values = "interval: \(FlawPlan.exact(microseconds: Int64(update.interval) * 1250)), latency: \(update.latency), timeout: \(FlawPlan.exact(microseconds: Int64(update.supervisionTimeout) * 10_000))"
            guard Self.allowed(interval: update.interval, latency: update.latency, timeout: update.supervisionTimeout) || update.status != .success else {
                comment(timed.start, "a connection parameter update to parameters the specification does not allow; not reproduced")
                notes.append("\(update.mark): LE Connection Update Complete with parameters the specification does not allow (\(Self.describe(update.interval, update.latency, update.supervisionTimeout))) (on the connection to \(peripherals[p].id))")
                return
            }
            guard update.status == .success else {
                comment(timed.start, "a connection parameter update that failed (\(update.status.name)); not reproduced")
                notes.append("\(update.mark): LE Connection Update Complete with \(update.status.name) (on the connection to \(peripherals[p].id))")
                return
            }
            if writer.transcript.connections[c].capturedOnPeripheral {
                comment(timed.start, "LE Connection Update Complete: the central changed the connection parameters")
                notes.append("\(update.mark): the central's LE Connection Update is not in a peripheral's capture, only its completion: the scenario's central asks when the update took effect, and the update's connection events come after it")
            } else {
                comment(timed.start, "the central asked for new connection parameters (LE Connection Update); LE Connection Update Complete at \(update.mark)")
            }
            lines.append("  - connection-update: { \(values)\(key(p)) }")
            lines.append("  - expect: { connection-parameters: { \(values)\(key(p)) } }")
        case let .powerOn(c):
            let p = writer.owner[c]
            requiresSim = true
            comment(timed.start, "the peripheral's controller was reset (HCI Reset): it had lost power, and comes back")
            lines.append("  - power-on: \(peripherals[p].id)")
            advertising[p] = true
        }
    }

    /// When the connection's ATT transaction timed out (its last operation left unanswered), if it did.
    private func timedOut(_ c: Int) -> Int64? {
        var out: Int64?
        for (k, op) in writer.sessions[c].operations.enumerated() where outcome(c, k).timedOut != nil {
            out = max(out ?? 0, op.start.time + FlawPlan.transactionTimeout)
        }
        return out
    }

    func outcome(_ c: Int, _ k: Int) -> OperationOutcome {
        writer.flawPlan.outcomes[OperationKey(connection: c, operation: k)] ?? OperationOutcome()
    }

    /// Whether the operation ended in a failure its flaws reproduce (no value, no success to expect).
    private func failed(_ o: OperationOutcome) -> Bool { o.rejected != nil || o.timedOut != nil || o.expectsError }

    /// The expectations the peripheral's flaws call for right after the operation's step: the
    /// damaged answer, the transaction timeout, the ATT error, the slowest response's time.
    private func flawExpectations(_ o: OperationOutcome, error: ATTErrorCode?, _ p: Int) -> [String] {
        var out: [String] = []
        if let bytes = o.rejected {
            out.append("  - expect: { malformed-response: { opcode: \(FlawPlan.responseName(ATTOpcode(bytes.first ?? 0))), bytes: \(YAMLValues.hex(bytes))\(key(p)) } }")
        }
        if let r = o.timedOut {
            let name = FlawPlan.requestName(r)
            out.append("  - expect: { att-timeout: { request: \(name.hasPrefix("0x") ? "any" : name)\(key(p)) } }")
        }
        if o.expectsError, let error { out.append("  - expect: { error: \(error.name) }") }
        if let (least, most) = o.responseTime {
            let atLeast = least - least % 1000
            var bounds = atLeast >= 1000 ? ["at-least: \(YAMLValues.duration(microseconds: atLeast))"] : []
            bounds.append("at-most: \(YAMLValues.duration(microseconds: most))")
            out.append("  - expect: { response-time: { \(bounds.joined(separator: ", ")) } }")
        }
        return out
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
        if (connection.interval, connection.latency, connection.supervisionTimeout) != (24, 0, 500) {
            notes.append("\(connection.established): the connection to \(peripherals[p].id) had interval \(FlawPlan.exact(microseconds: Int64(connection.interval) * 1250)), latency \(connection.latency), supervision timeout \(FlawPlan.exact(microseconds: Int64(connection.supervisionTimeout) * 10_000)); the lab's central connects with 30ms, 0 and 5s, so the replay's link times follow those")
        }
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

    private mutating func operation(_ c: Int, _ k: Int, _ op: GATTOperation) {
        let p = writer.owner[c]
        let id = peripherals[p].id
        let pk = key(p)
        let o = outcome(c, k)
        if let why = o.dropped {
            comment(op.start, "\(why); not reproduced")
            notes.append("\(op.start): \(why) (on the connection to \(id))")
            return
        }
        let flawed = flawExpectations(o, error: op.error, p)
        if let n = o.lostAnswer {
            // A fault beyond the specification (docs/scenarios.md, Faults): the answer vanishes on the air.
            comment(op.start, "the peripheral answered, but the central sent nothing more and disconnected 30 s later: the answer was lost on the way")
            lines.append("  - link: { drop: { att: \(n), from: peripheral }\(pk) }")
            requiresSim = true
        }
        switch op.kind {
        case let .discover(all, services):
            comment(op.start, "\(all ? "discovery of all primary services" : "discovery of services \(services.map(YAMLValues.uuid).joined(separator: ", "))") until \(op.end)")
            if all {
                lines.append("  - discover: all")
                if writer.multi { lines.append("    peripheral: \(id)") }
            } else {
                lines.append("  - discover: { services: [\(services.map(YAMLValues.uuid).joined(separator: ", "))]\(pk) }")
            }
            lines += flawed
            guard !failed(o), op.error == nil else { return }
            // What this discovery found, and (discovering all) what it missed of what the peripheral had then.
            let declared = peripherals[p].declaredServices.map(\.uuid)
            let found = declared.filter(op.found.contains)
            if !found.isEmpty {
                lines.append("  - expect: { services: [\(found.map(YAMLValues.uuid).joined(separator: ", "))]\(pk) }")
            }
            var present: [BluetoothUUID] = []
            for s in writer.servicesPresent(p, at: op.start) where declared.contains(s.uuid) && !present.contains(s.uuid) { present.append(s.uuid) }
            let missed = present.filter { !op.found.contains($0) }
            if all, !missed.isEmpty {
                lines.append("  - expect: { not-services: [\(missed.map(YAMLValues.uuid).joined(separator: ", "))]\(pk) }")
            }
        case let .mtu(client, server):
            let size = min(517, max(23, Int(client)))
            comment(op.start, "Exchange MTU: the central offered \(client)\(server.map { ", the peripheral \($0)" } ?? "")")
            lines.append(writer.multi ? "  - mtu: { size: \(size)\(pk) }" : "  - mtu: \(size)")
            lines += flawed
            if !failed(o), op.error == nil, let mtu = peripherals[p].mtu {
                lines.append("  - expect: { mtu: \(min(size, mtu))\(pk) }")
            }
        case let .read(handle, value):
            read(p, handle: handle, value: value, op: op, outcome: o, flawed: flawed)
        case let .write(handle, value, command):
            if !command, peripherals[p].database.characteristic(valueHandle: handle) == nil, let (ref, uuid) = descriptor(p, handle) {
                return writeDescriptor(p, ref: ref, uuid: uuid, handle: handle, value: value, op: op)
            }
            guard let ref = peripherals[p].reference(handle), let (_, ch) = peripherals[p].database.characteristic(valueHandle: handle) else {
                comment(op.start, "a write to handle 0x\(hex(handle)), which discovery did not find (\(YAMLValues.hex(value))); not reproduced")
                return
            }
            comment(op.start, "ATT \(command ? "Write Command (0x52)" : "Write Request (0x12)") to \(ref) at handle 0x\(hex(handle))")
            lines.append("  - write: { characteristic: \(ref), value: \(YAMLValues.value(value)), type: \(command ? "command" : "request")\(pk) }")
            lines += flawed
            if failed(o) {
                // The request reached the peripheral, whose flaw answered it instead of its server.
                lines.append("  - expect: { write-sent-as: request }")
                if !o.expectsError {
                    lines.append("  - expect: { peripheral-received: { characteristic: \(ref), value: \(YAMLValues.value(value)), via: request\(pk) } }")
                }
                return
            }
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
            defer { lines += flawed }
            if op.error != nil, !failed(o) {
                notes.append("\(op.start): the CCCD write for \(ref) got ATT error \(op.error!.name); not reproduced")
            }
            if ch.properties & 0x30 == 0 {
                // A CCCD under a characteristic that offers neither notify nor indicate: the lab
                // gives such a characteristic none, so a subscribe to it would not validate.
                notes.append("\(op.start): the central wrote a CCCD of \(ref), which offers neither notify nor indicate; not reproduced")
            } else if bits & 0x03 == 0 {
                lines.append(writer.multi ? "  - unsubscribe: { characteristic: \(ref)\(pk) }" : "  - unsubscribe: \(ref)")
            } else if bits & 0x03 == 0x03 || (bits & 0x03 == 0x02 && ch.properties & 0x10 != 0) {
                // Both, or indications where notify is offered too: subscribe's type says which.
                lines.append("  - subscribe: { characteristic: \(ref), type: \(bits & 0x03 == 0x03 ? "both" : "indications")\(pk) }")
            } else {
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

    private mutating func read(_ p: Int, handle: UInt16, value: [UInt8], op: GATTOperation, outcome o: OperationOutcome, flawed: [String]) {
        let pk = key(p)
        if peripherals[p].database.characteristic(valueHandle: handle) == nil, let (ref, uuid) = descriptor(p, handle) {
            return readDescriptor(p, ref: ref, uuid: uuid, handle: handle, value: value, op: op)
        }
        guard let ref = peripherals[p].reference(handle), let (_, ch) = peripherals[p].database.characteristic(valueHandle: handle) else {
            comment(op.start, "a read of handle 0x\(hex(handle)), which discovery did not find; not reproduced")
            return
        }
        let step = writer.multi ? "  - read: { characteristic: \(ref)\(pk) }" : "  - read: \(ref)"
        if failed(o) {
            comment(op.start, "ATT Read Request for \(ref) at handle 0x\(hex(handle)): \(o.rejected != nil ? "an answer the central rejects" : o.timedOut != nil ? "never answered" : "Error Response \(op.error?.name ?? "?")")")
            lines.append(step)
            lines += flawed
            return
        }
        defer { lines += flawed }
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

    // MARK: Descriptors

    /// How steps name the characteristic that has a descriptor at `handle`, and the descriptor's type.
    private func descriptor(_ p: Int, _ handle: UInt16) -> (ref: String, uuid: BluetoothUUID)? {
        for s in peripherals[p].database.services {
            for c in s.characteristics {
                if let d = c.descriptors.first(where: { $0.handle == handle }), let ref = peripherals[p].reference(c.valueHandle) { return (ref, d.uuid) }
            }
        }
        return nil
    }

    /// A read of a descriptor: the step, and the value it expects when the lab's server holds it
    /// (the declared descriptors and 0x2900, whose value the scenario sets from this read).
    private mutating func readDescriptor(_ p: Int, ref: String, uuid: BluetoothUUID, handle: UInt16, value: [UInt8], op: GATTOperation) {
        comment(op.start, "ATT Read Request for \(ref)'s descriptor \(uuid) at handle 0x\(hex(handle))")
        if let error = op.error {
            comment(op.start, "the read got ATT error \(error.name); not reproduced")
            notes.append("\(op.start): a read of \(ref)'s descriptor \(uuid) got ATT error \(error.name), which the importer cannot reproduce")
            return
        }
        lines.append("  - read: { characteristic: \(ref), descriptor: \(YAMLValues.uuid(uuid))\(key(p)) }")
        guard uuid != .clientCharacteristicConfiguration, uuid != .serverCharacteristicConfiguration else {
            lines.append("  # the lab's peripheral keeps this configuration itself; the capture read \(YAMLValues.hex(value))")
            return
        }
        if let current = values[p][handle] {
            guard current == value else {
                lines.append("  # the capture read \(YAMLValues.hex(value)), which no write the capture shows explains; not checked")
                return
            }
        } else {
            peripherals[p].initialValues[handle] = value
            values[p][handle] = value
        }
        lines.append("  - expect: { value: \(YAMLValues.value(value)) }")
    }

    /// A Write Request to a descriptor other than the CCCD (Core Vol 3 Part G 4.12.3).
    private mutating func writeDescriptor(_ p: Int, ref: String, uuid: BluetoothUUID, handle: UInt16, value: [UInt8], op: GATTOperation) {
        comment(op.start, "ATT Write Request to \(ref)'s descriptor \(uuid) at handle 0x\(hex(handle))")
        lines.append("  - write: { characteristic: \(ref), descriptor: \(YAMLValues.uuid(uuid)), value: \(YAMLValues.value(value))\(key(p)) }")
        if let error = op.error {
            if error == .writeNotPermitted {
                lines.append("  - expect: { error: write-not-permitted }")
            } else {
                notes.append("\(op.start): the write of \(ref)'s descriptor \(uuid) got ATT error \(error.name), which the importer cannot reproduce")
            }
            return
        }
        peripherals[p].writableDescriptors.insert(handle)
        values[p][handle] = value
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

    func appendDelay(_ list: inout [String], from: Int64, to: Int64) {
        let gap = to - from
        if gap >= 5_000 { list.append("{ delay: \(YAMLValues.duration(microseconds: gap - 999)) }") }
    }

    /// The reasons HCI Disconnect allows (Core 5.4, Vol 4, Part E, 7.1.6), which a peripheral's
    /// `disconnect` action can give.
    static let peripheralReasons: Set<UInt8> = [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B]
}

import ATT
import BLEWire
import HCI

/// Turns a central's capture, analysed, into a scenario file: the peripherals as they advertised
/// and as discovery found them, the central's operations as steps in capture order, expectations
/// of what the capture shows, and comments saying which record each came from.
///
/// What a peripheral sent is reproduced by behaviour: a notification that echoes every write of a
/// characteristic becomes an `on-write` trigger, a regular series after a subscription becomes an
/// `on-subscribe` `notify-every`, and anything else a `peripheral:` step with the observed values
/// and delays, right after the step it followed. docs/import.md describes the rules.
struct ScenarioWriter {
    let transcript: HCITranscript
    let sessions: [GATTSession]
    let source: String
    let format: CaptureFile.Format
    let recordCount: Int

    var peripherals: [ImportedPeripheral] = []
    /// Connection index → peripheral index.
    var owner: [Int] = []

    init(transcript: HCITranscript, sessions: [GATTSession], source: String, format: CaptureFile.Format, recordCount: Int) {
        self.transcript = transcript
        self.sessions = sessions
        self.source = source
        self.format = format
        self.recordCount = recordCount
        buildPeripherals()
    }

    // MARK: Peripherals

    private mutating func buildPeripherals() {
        var byAddress: [LEAddress: Int] = [:]
        func index(for given: LEAddress) -> Int {
            // As the scenario writes it: random, or public (identity address types fold into these).
            let address = ImportedPeripheral.normalized(given)
            if let i = byAddress[address] { return i }
            peripherals.append(ImportedPeripheral(id: "", address: address))
            byAddress[address] = peripherals.count - 1
            return peripherals.count - 1
        }
        for r in transcript.reports { peripherals[index(for: r.address)].reports.append(r) }
        var own: Int?
        if peripheralSide {
            // The capturing host is the one peripheral: its own advertising, its own address.
            let address = transcript.ownAddress ?? LEAddress(BDAddr(rawValue: 0xC0_00_00_00_00_01), type: .random)
            let i = index(for: address)
            own = i
            if transcript.ownAddress == nil { peripherals[i].notes.append("its own address is not in the capture") }
            if let own = transcript.ownAdvertising {
                peripherals[i].reports.append(AdvertisingObservation(mark: own.enabled, address: address, connectable: own.connectable,
                                                                     isScanResponse: false, data: own.data, rssi: nil, scan: nil))
                if let sr = own.scanResponse, !sr.isEmpty {
                    peripherals[i].reports.append(AdvertisingObservation(mark: own.enabled, address: address, connectable: own.connectable,
                                                                         isScanResponse: true, data: sr, rssi: nil, scan: nil))
                }
                peripherals[i].declaredInterval = own.interval
            }
        }
        for (c, connection) in transcript.connections.enumerated() {
            let i = own ?? index(for: connection.peer)
            owner.append(i)
            peripherals[i].connections.append(c)
            let db = sessions[c].database
            for s in db.services {
                peripherals[i].database.addService(s.uuid, start: s.start, end: s.end)
                for ch in s.characteristics {
                    var declaration: [UInt8] = [ch.properties, UInt8(ch.valueHandle & 0xFF), UInt8(ch.valueHandle >> 8)]
                    declaration += ch.uuid.littleEndianBytes
                    peripherals[i].database.addCharacteristic(declaration: ch.declarationHandle, value: declaration)
                    for d in ch.descriptors { peripherals[i].database.addDescriptor(handle: d.handle, uuid: d.uuid) }
                }
            }
        }
        var taken: Set<LEAddress> = Set(peripherals.map(\.address).filter { $0.type == .public || $0.address.isValidRandomStatic })
        for i in peripherals.indices {
            let a = peripherals[i].address
            if a.type == .public || a.address.isValidRandomStatic {
                peripherals[i].scenarioAddress = a
                continue
            }
            // A resolvable or non-resolvable private address: the same octets with the two top
            // bits set make a static one (Core 5.4, Vol 6, Part B, 1.3.2.1).
            let made = LEAddress(BDAddr(rawValue: a.address.rawValue | 0xC000_0000_0000), type: .random)
            if made.address.isValidRandomStatic, taken.insert(made).inserted {
                peripherals[i].scenarioAddress = made
                peripherals[i].notes.append("it used the private address \(a.address); the scenario gives it the static address \(made.address)")
            } else {
                peripherals[i].notes.append("it used the private address \(a.address); the scenario leaves the address to the lab")
            }
        }
        var used: Set<String> = ["central"]
        for i in peripherals.indices {
            let name = peripherals[i].advertisedNames.first
            var base = YAMLValues.identifier(from: name)
            while let first = base.unicodeScalars.first, !(("a"..."z").contains(first) || ("0"..."9").contains(first)) { base.removeFirst() }
            if base.isEmpty { base = "peripheral" }
            var id = base
            var n = 2
            while used.contains(id) {
                id = "\(base)-\(n)"
                n += 1
            }
            used.insert(id)
            peripherals[i].id = id
        }
    }

    var multi: Bool { peripherals.count > 1 }

    /// The capture was taken on the peripheral: the capturing host is the scenario's one
    /// peripheral, and the other side of its connections the scripted central.
    var peripheralSide: Bool {
        transcript.scans.isEmpty && (transcript.ownAdvertising != nil || !transcript.connections.isEmpty)
            && transcript.connections.allSatisfy(\.capturedOnPeripheral)
    }

    /// When the central ended the connection (its HCI Disconnect), if it did.
    func centralDisconnect(_ c: Int) -> (start: CaptureMark, end: CaptureMark)? {
        let connection = transcript.connections[c]
        if connection.capturedOnPeripheral {
            guard connection.disconnectRequested == nil, !connection.endedByReset, let done = connection.disconnected else { return nil }
            return (done, done)
        }
        guard let requested = connection.disconnectRequested else { return nil }
        return (requested, connection.disconnected ?? requested)
    }

    /// When the peripheral ended the connection, and the reason the central was given.
    func peripheralDisconnect(_ c: Int) -> (mark: CaptureMark, reason: HCIStatus)? {
        let connection = transcript.connections[c]
        if connection.capturedOnPeripheral {
            // The peripheral's own HCI Disconnect, or its controller reset (powered off).
            if connection.endedByReset, let mark = connection.disconnected { return (mark, .remoteDeviceTerminatedPowerOff) }
            guard let requested = connection.disconnectRequested else { return nil }
            return (connection.disconnected ?? requested, connection.requestedReason ?? .remoteUserTerminatedConnection)
        }
        guard connection.disconnectRequested == nil, let mark = connection.disconnected, let reason = connection.reason else { return nil }
        return (mark, reason)
    }

    func peripheralKey(_ p: Int) -> String { multi ? ", peripheral: \(peripherals[p].id)" : "" }

    // MARK: The timeline

    enum Item {
        case scan(Int)
        case connect(Int)
        case operation(connection: Int, index: Int)
        case disconnect(Int)

        var order: Int {
            switch self {
            case .scan: return 0
            case .connect: return 1
            case .operation: return 2
            case .disconnect: return 3
            }
        }
    }

    struct Timed {
        var item: Item
        var start: CaptureMark
        var end: CaptureMark
    }

    /// Something the peripheral did, attributed to the step it followed.
    enum PeerEvent {
        case notification(connection: Int, ValueNotification)
        case disconnect(connection: Int, mark: CaptureMark, reason: HCIStatus)

        var mark: CaptureMark {
            switch self {
            case let .notification(_, n): return n.mark
            case let .disconnect(_, mark, _): return mark
            }
        }
    }

    func timeline() -> [Timed] {
        var items: [Timed] = []
        for (i, scan) in transcript.scans.enumerated() {
            let end = scan.end ?? transcript.connections.compactMap { $0.requested ?? $0.established }.first { $0 > scan.start }
                ?? CaptureMark(record: scan.start.record, time: transcript.endTime)
            items.append(Timed(item: .scan(i), start: scan.start, end: end))
        }
        for (c, connection) in transcript.connections.enumerated() {
            items.append(Timed(item: .connect(c), start: connection.requested ?? connection.established, end: connection.established))
            for (k, op) in sessions[c].operations.enumerated() {
                if case .discoverMore = op.kind { continue }
                items.append(Timed(item: .operation(connection: c, index: k), start: op.start, end: op.end))
            }
            if let (start, end) = centralDisconnect(c) {
                items.append(Timed(item: .disconnect(c), start: start, end: end))
            }
        }
        return items.sorted { ($0.start, $0.item.order) < ($1.start, $1.item.order) }
    }

    func peerEvents() -> [PeerEvent] {
        var events: [PeerEvent] = []
        for c in transcript.connections.indices {
            events += sessions[c].notifications.map { PeerEvent.notification(connection: c, $0) }
            if let (mark, reason) = peripheralDisconnect(c) {
                events.append(.disconnect(connection: c, mark: mark, reason: reason))
            }
        }
        return events.sorted { $0.mark < $1.mark }
    }

    // MARK: Writing

    mutating func write() -> String {
        let items = timeline()
        // Each peripheral event goes with the last step that started before it.
        var segments: [[PeerEvent]] = Array(repeating: [], count: items.count)
        var orphans: [PeerEvent] = []
        for e in peerEvents() {
            // The last item that started at or before the event (items are sorted by start).
            var low = 0
            var high = items.count
            while low < high {
                let mid = (low + high) / 2
                if items[mid].start <= e.mark { low = mid + 1 } else { high = mid }
            }
            if low > 0 { segments[low - 1].append(e) } else { orphans.append(e) }
        }
        var triggered = Set<CaptureMark>()
        findEchoes(items: items, segments: segments, triggered: &triggered)
        findPeriodicNotifications(triggered: &triggered)
        findWriteErrors()

        var steps = StepEmitter(writer: self)
        for (i, timed) in items.enumerated() {
            steps.emit(timed, items: items)
            steps.emitSegment(segments[i], after: timed, triggered: triggered)
            let next = i + 1 < items.count ? items[i + 1].start.time : nil
            let last = max(timed.end.time, segments[i].map(\.mark.time).max() ?? 0)
            // A peripheral's capture sees each request a link latency after the central sent it,
            // and its answer as many before the central got it: only longer pauses are the central's.
            if let next, next - last >= (peripheralSide ? 150_000 : 50_000) {
                steps.lines.append("  - wait: \(YAMLValues.duration(microseconds: next - last))")
            }
        }
        for e in orphans { steps.lines.append("  # \(e.mark): the peripheral acted before any step; not reproduced") }
        if items.isEmpty {
            // Only advertising (a peripheral's capture without a connection): a scan that finds it.
            steps.lines.append("  # the capture shows no central; a scan that finds what advertised")
            steps.lines.append("  - scan: { for: 1s }")
            for p in peripherals where !p.reports.isEmpty { steps.lines.append("  - expect: { discovered: \(p.id) }") }
        }
        peripherals = steps.writer.peripherals
        return assemble(steps: steps.lines, notes: steps.notes)
    }

    /// A notification right after every accepted write of a characteristic, carrying the bytes
    /// written (after a fixed prefix): the peripheral echoes, so `on-write` notifies `written`.
    private mutating func findEchoes(items: [Timed], segments: [[PeerEvent]], triggered: inout Set<CaptureMark>) {
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
                let value = first.prefix.isEmpty ? "written" : "[\(YAMLValues.value(first.prefix)), written]"
                peripherals[p].onWrite[handle] = [Self.sendAction(first.indication, to: target, handle: first.handle,
                                                                  properties: peripherals[p].database.characteristic(valueHandle: first.handle)?.1.properties,
                                                                  value: value)]
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
    static func sendAction(_ indication: Bool, to ref: String, handle: UInt16, properties: UInt8?, value: String) -> String {
        let kind = indication ? "indicate" : "notify"
        if let properties, properties & (indication ? 0x20 : 0x10) != 0 { return "{ \(kind): \(ref), value: \(value) }" }
        return "{ \(kind)-handle: { handle: 0x\(hex(handle)), value: \(value) } }"
    }

    /// A characteristic subscribed once whose notifications then came at a regular interval:
    /// `on-subscribe: notify-every` with the observed values, interval and count.
    private mutating func findPeriodicNotifications(triggered: inout Set<CaptureMark>) {
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
                let value = values.allSatisfy({ $0 == values[0] }) ? YAMLValues.value(values[0])
                    : "{ sequence: [\(values.map(YAMLValues.value).joined(separator: ", "))] }"
                peripherals[p].onSubscribe[handle, default: []].append(
                    "{ notify-every: { characteristic: \(ref), interval: \(intervalMs)ms, value: \(value), count: \(series.count) } }")
                peripherals[p].triggerNotes[handle, default: []].append(
                    "\(series.count) notifications every ~\(intervalMs)ms after the subscription (\(series.first!.mark) to \(series.last!.mark))")
                for n in series { triggered.insert(n.mark) }
            }
        }
    }

    /// Every Write Request to a characteristic refused with the same ATT error, which its
    /// properties do not explain: `on-write: respond-error`.
    private mutating func findWriteErrors() {
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
                peripherals[p].onWrite[handle] = ["{ respond-error: \(code.name) }"]
                peripherals[p].triggerNotes[handle, default: []].append(
                    "every Write Request got ATT error \(code.name) (first at \(first[handle].map { "\($0)" } ?? "?"))")
            }
        }
    }

    // MARK: The file

    private func assemble(steps: [String], notes: [String]) -> String {
        var out: [String] = []
        let seconds = CaptureMark.seconds(transcript.endTime)
        out.append("# Imported by `blelab import` from \(source)")
        out.append("# (\(format), \(recordCount) records, \(transcript.packetCount) HCI packets over \(seconds)), "
                   + (peripheralSide ? "taken on the peripheral: it is the peripheral below, the central is the other side." : "as the central saw it."))
        out.append("# Each step's comment gives the capture record it came from (1-based, as Wireshark numbers")
        out.append("# frames) and its time since the first record. Edit it down to the bug: keep the steps")
        out.append("# that lead to it and the expectation that fails (docs/import.md).")
        var allNotes = transcript.notes
        for (c, connection) in transcript.connections.enumerated() {
            allNotes += connection.notes.map { "connection to \(peripherals[owner[c]].id): \($0)" }
            allNotes += sessions[c].notes.map { "connection to \(peripherals[owner[c]].id): \($0)" }
        }
        allNotes += notes
        for p in peripherals { allNotes += p.notes.map { "\(p.id): \($0)" } }
        if !allNotes.isEmpty {
            out.append("#")
            out.append("# Not reproduced:")
            out += allNotes.map { "#   - \($0)" }
        }
        out.append("scenario: \(YAMLValues.quoted("Imported from " + source))")
        out.append("tags: [imported]")
        let total = transcript.endTime
        let timeoutSeconds = (total + max(10_000_000, total / 2)) / 1_000_000 + 1
        out.append("timeout: \(timeoutSeconds)s")
        out.append("seed: 1")
        out.append("")
        out.append("peripherals:")
        for p in peripherals { out += peripheralLines(p) }
        out.append("")
        out.append("central:")
        out += steps
        return out.joined(separator: "\n") + "\n"
    }

    private func peripheralLines(_ p: ImportedPeripheral) -> [String] {
        var lines: [String] = []
        let seen = p.reports.first.map { "first advertised at \($0.mark)" } ?? "never seen advertising"
        lines.append("  \(p.id):                # \(seen)")
        if let a = p.scenarioAddress { lines.append("    address: \(a.address)/\(a.type == .random ? "random" : "public")") }
        if let rssi = p.rssi { lines.append("    rssi: \(rssi)") }
        if let name = p.deviceName { lines.append("    device-name: \(YAMLValues.quoted(name))") }
        lines += p.advertiseLines(indent: "    ")
        let services = p.declaredServices
        guard !services.isEmpty else { return lines }
        lines.append("    gatt:")
        for s in services {
            lines.append("      - service: \(YAMLValues.uuid(s.uuid))          # handles 0x\(hex(s.start))-0x\(hex(s.end))")
            if s.characteristics.isEmpty { lines.append("        characteristics: []"); continue }
            lines.append("        characteristics:")
            for c in s.characteristics {
                let others = c.descriptors.filter { $0.uuid != .clientCharacteristicConfiguration }
                var header = "          - uuid: \(YAMLValues.uuid(c.uuid))          # value handle 0x\(hex(c.valueHandle))"
                if !others.isEmpty {
                    header += "; descriptors \(others.map { "\($0.uuid) at 0x\(hex($0.handle))" }.joined(separator: ", ")) have no scenario key"
                }
                lines.append(header)
                lines.append("            properties: [\(YAMLValues.properties(c.properties).joined(separator: ", "))]")
                if let v = p.initialValues[c.valueHandle] { lines.append("            value: \(YAMLValues.value(v))") }
                for note in p.triggerNotes[c.valueHandle] ?? [] { lines.append("            # \(note)") }
                for (key, actions) in [("on-read", p.onRead[c.valueHandle]), ("on-write", p.onWrite[c.valueHandle]),
                                       ("on-subscribe", p.onSubscribe[c.valueHandle])] {
                    guard let actions, !actions.isEmpty else { continue }
                    lines.append("            \(key):")
                    lines += actions.map { "              - \($0)" }
                }
            }
        }
        return lines
    }
}

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
    /// Mutable for the flaw plan: an operation left to time out ends 30 s after its request.
    var sessions: [GATTSession]
    let source: String
    let format: CaptureFile.Format
    let recordCount: Int

    var peripherals: [ImportedPeripheral] = []
    /// Connection index → peripheral index.
    var owner: [Int] = []
    var flawPlan = FlawPlan()

    init(transcript: HCITranscript, sessions: [GATTSession], source: String, format: CaptureFile.Format, recordCount: Int) {
        self.transcript = transcript
        self.sessions = sessions
        self.source = source
        self.format = format
        self.recordCount = recordCount
        buildPeripherals()
        planServiceChanges()
        planFlaws()
        planMTU()
    }

    /// A peripheral whose Exchange MTU Response gave another receive MTU than the lab's 247 gets
    /// it as its `mtu:` (Core 5.4, Vol 3, Part F, 3.4.2.2).
    private mutating func planMTU() {
        for p in peripherals.indices {
            var servers: [UInt16] = []
            for c in peripherals[p].connections {
                for op in sessions[c].operations {
                    if case let .mtu(_, server?) = op.kind { servers.append(server) }
                }
            }
            guard let first = servers.first else { continue }
            if servers.contains(where: { $0 != first }) {
                peripherals[p].notes.append("its Exchange MTU Responses gave different receive MTUs (\(servers.map(String.init).joined(separator: ", "))); the scenario gives it the first")
            }
            if first != 247 { peripherals[p].mtu = min(517, max(23, Int(first))) }
        }
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
        // The scenario has one RSSI per peripheral (the median): a spread wider than the sim's
        // noise is a device that moved, or a path that changed (docs/import.md).
        for i in peripherals.indices {
            let values = peripherals[i].reports.compactMap(\.rssi).map(Int.init)
            if let low = values.min(), let high = values.max(), high - low > 10 {
                peripherals[i].notes.append("its advertising reports' RSSI ranged from \(low) to \(high) dBm; the scenario gives it one (the median)")
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
            guard connection.disconnectRequested == nil, !connection.endedByReset, connection.reason != .connectionTimeout,
                  let done = connection.disconnected else { return nil }
            return (done, done)
        }
        // The central's own controller reset (Bluetooth turned off): the closest the lab's central
        // comes is to disconnect there.
        if connection.endedByReset, connection.disconnectRequested == nil, let mark = connection.disconnected { return (mark, mark) }
        guard let requested = connection.disconnectRequested else { return nil }
        return (requested, connection.disconnected ?? requested)
    }

    /// When the peripheral ended the connection, and the reason the central was given.
    func peripheralDisconnect(_ c: Int) -> (mark: CaptureMark, reason: HCIStatus)? {
        let connection = transcript.connections[c]
        if connection.capturedOnPeripheral {
            // The peripheral's own HCI Disconnect; its controller reset (it lost power, and the
            // central's supervision timer ran out); or its supervision timer running out.
            if connection.endedByReset, connection.disconnected != nil {
                // It went silent after its last packet; the reset came when it powered on again.
                return (connection.lastTraffic ?? connection.established, .connectionTimeout)
            }
            if connection.disconnectRequested == nil, connection.reason == .connectionTimeout, let mark = connection.disconnected {
                return (mark, .connectionTimeout)
            }
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
        /// The central's LE Connection Update, completed by the connection's update `update`.
        case connectionUpdate(connection: Int, update: Int)
        case disconnect(Int)
        /// The peripheral's controller reset after it had lost power on this connection: it comes back.
        case powerOn(connection: Int)

        var order: Int {
            switch self {
            case .scan: return 0
            case .connect: return 1
            case .operation, .connectionUpdate: return 2
            case .disconnect: return 3
            case .powerOn: return 4
            }
        }
    }

    struct Timed {
        var item: Item
        var start: CaptureMark
        var end: CaptureMark
    }

    /// Something the peripheral did (or the air did to its link), attributed to the step it followed.
    enum PeerEvent {
        case notification(connection: Int, ValueNotification)
        case disconnect(connection: Int, mark: CaptureMark, reason: HCIStatus)
        /// An ATT PDU outside any transaction (`send-pdu`).
        case unsolicited(connection: Int, UnsolicitedPDU)
        /// A Service Changed indication: `peripherals[p].databaseChanges[change]`.
        case serviceChanged(connection: Int, change: Int, mark: CaptureMark)
        /// The link's radio path was lost at `mark`; both ends timed out at `disconnected`.
        case linkLoss(connection: Int, mark: CaptureMark, disconnected: CaptureMark)
        /// The peripheral lost power after its last packet on the link, at `mark`.
        case powerOff(connection: Int, mark: CaptureMark)
        /// The peripheral asked for new connection parameters; `update` is what the central applied.
        case parameterRequest(connection: Int, ParameterRequest, update: ParameterUpdate?)

        var mark: CaptureMark {
            switch self {
            case let .notification(_, n): return n.mark
            case let .disconnect(_, mark, _): return mark
            case let .unsolicited(_, u): return u.mark
            case let .serviceChanged(_, _, mark): return mark
            case let .linkLoss(_, mark, _): return mark
            case let .powerOff(_, mark): return mark
            case let .parameterRequest(_, r, _): return r.mark
            }
        }
    }

    /// When what an event starts is over, as the expectations after it wait for it: the
    /// disconnection, the central's re-discovery after Service Changed, the parameter update.
    func settled(_ e: PeerEvent) -> Int64 {
        switch e {
        case let .disconnect(c, mark, _): return max(mark.time, transcript.connections[c].disconnected?.time ?? mark.time)
        case let .serviceChanged(c, k, mark):
            let change = peripherals[owner[c]].databaseChanges[k]
            return max(mark.time, sessions[c].serviceChanges[change.index].rediscoveryEnd?.time ?? mark.time)
        case let .parameterRequest(_, r, update): return max(r.mark.time, update?.mark.time ?? r.mark.time)
        default: return e.mark.time
        }
    }

    /// What asked for each of a connection's parameter updates: the peripheral (an L2CAP request,
    /// or its link layer's) or the central's host; the requests no update followed.
    func parameterChanges(_ c: Int) -> (central: [(request: ParameterRequest?, update: Int)], peripheral: [(ParameterRequest, ParameterUpdate?)]) {
        let connection = transcript.connections[c]
        var central: [(ParameterRequest?, Int)] = []
        var peripheral: [(ParameterRequest, ParameterUpdate?)] = []
        var used = 0
        var previous = connection.established
        for (k, u) in connection.parameterUpdates.enumerated() {
            let asked = connection.parameterRequests[used...].filter { $0.mark >= previous && $0.mark <= u.mark }
            used += asked.count
            previous = u.mark
            if let byPeripheral = asked.first(where: { !$0.byCentral }) {
                peripheral.append((byPeripheral, u))
            } else {
                central.append((asked.first, k))
            }
        }
        for r in connection.parameterRequests[used...] where !r.byCentral { peripheral.append((r, nil)) }
        return (central, peripheral)
    }

    /// When the link to the peripheral was lost, for a connection that ended by supervision
    /// timeout with neither side asking: the timeout back from the end, plus half an interval
    /// (the last connection event heard lies within one interval of the loss).
    func linkLoss(_ c: Int) -> (lost: CaptureMark, disconnected: CaptureMark)? {
        let connection = transcript.connections[c]
        guard connection.reason == .connectionTimeout, connection.disconnectRequested == nil, !connection.endedByReset,
              let end = connection.disconnected else { return nil }
        let (interval, _, timeout) = connection.parameters(at: end)
        let lost = max(connection.established.time, end.time - Int64(timeout) * 10_000 + Int64(interval) * 625)
        return (CaptureMark(record: end.record, time: lost), end)
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
            for (request, update) in parameterChanges(c).central {
                let done = connection.parameterUpdates[update].mark
                items.append(Timed(item: .connectionUpdate(connection: c, update: update), start: request?.mark ?? done, end: done))
            }
            if connection.capturedOnPeripheral, connection.endedByReset, let reset = connection.disconnected {
                items.append(Timed(item: .powerOn(connection: c), start: reset, end: reset))
            }
        }
        return items.sorted { ($0.start, $0.item.order) < ($1.start, $1.item.order) }
    }

    func peerEvents() -> [PeerEvent] {
        var events: [PeerEvent] = []
        for c in transcript.connections.indices {
            events += sessions[c].notifications.map { PeerEvent.notification(connection: c, $0) }
            events += sessions[c].unsolicited.map { PeerEvent.unsolicited(connection: c, $0) }
            let p = owner[c]
            for (k, change) in peripherals[p].databaseChanges.enumerated() where change.connection == c {
                events.append(.serviceChanged(connection: c, change: k, mark: change.mark))
            }
            for (request, update) in parameterChanges(c).peripheral {
                events.append(.parameterRequest(connection: c, request, update: update))
            }
            if let (mark, reason) = peripheralDisconnect(c) {
                events.append(.disconnect(connection: c, mark: mark, reason: reason))
            }
            let connection = transcript.connections[c]
            if let (lost, end) = linkLoss(c) {
                events.append(.linkLoss(connection: c, mark: lost, disconnected: end))
            } else if connection.capturedOnPeripheral, connection.endedByReset {
                events.append(.powerOff(connection: c, mark: connection.lastTraffic ?? connection.established))
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
        findSubscribeBursts(triggered: &triggered)
        findPeriodicNotifications(triggered: &triggered)
        findWriteErrors()

        var steps = StepEmitter(writer: self)
        for (i, timed) in items.enumerated() {
            steps.emit(timed, items: items)
            steps.emitSegment(segments[i], after: timed, triggered: triggered)
            let next = i + 1 < items.count ? items[i + 1].start.time : nil
            let last = max(timed.end.time, segments[i].map(settled).max() ?? 0)
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
        return assemble(steps: steps.lines, notes: flawPlan.notes + steps.notes, requiresSim: steps.requiresSim)
    }

    // MARK: The file

    private func assemble(steps: [String], notes: [String], requiresSim: Bool) -> String {
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
        // A request left to time out ends 30 s after it, whenever the capture stops.
        let total = sessions.flatMap(\.operations).map(\.end.time).reduce(transcript.endTime, max)
        let timeoutSeconds = (total + max(10_000_000, total / 2)) / 1_000_000 + 1
        out.append("timeout: \(timeoutSeconds)s")
        out.append("seed: 1")
        // link-loss, power-off and power-on act on the simulated air (docs/scenarios.md, Faults).
        if requiresSim { out.append("requires: [sim]") }
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
        if let mtu = p.mtu { lines.append("    mtu: \(mtu)                # its Exchange MTU Response") }
        if !p.flaws.isEmpty {
            lines.append("    flaws:")
            for (comments, text) in p.flaws {
                lines += comments.map { "      # \($0)" }
                lines.append("      - \(text)")
            }
        }
        let services = p.initialServices
        guard !services.isEmpty else { return lines }
        lines.append("    gatt:")
        for s in services {
            lines.append("      - service: \(YAMLValues.uuid(s.uuid))          # handles 0x\(hex(s.start))-0x\(hex(s.end))")
            if s.characteristics.isEmpty { lines.append("        characteristics: []"); continue }
            lines.append("        characteristics:")
            for c in s.characteristics {
                lines.append("          - uuid: \(YAMLValues.uuid(c.uuid))          # value handle 0x\(hex(c.valueHandle))")
                lines.append("            properties: [\(YAMLValues.properties(c.properties).joined(separator: ", "))]")
                if let v = p.initialValues[c.valueHandle] { lines.append("            value: \(YAMLValues.value(v))") }
                lines += descriptorLines(c, of: p)
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

    /// A characteristic's `extended-properties:` and `descriptors:` (docs/scenarios.md
    /// "Descriptors"): the descriptors the lab does not add itself, with the value the capture
    /// read first and write permission when the central wrote one.
    private func descriptorLines(_ c: DiscoveredDatabase.Characteristic, of p: ImportedPeripheral) -> [String] {
        var lines: [String] = []
        let automatic: [BluetoothUUID] = [.clientCharacteristicConfiguration, .characteristicExtendedProperties, .serverCharacteristicConfiguration]
        var writableAuxiliaries = false
        if c.properties & 0x80 != 0 {
            var bits: UInt16 = 0
            if let d = c.descriptors.first(where: { $0.uuid == .characteristicExtendedProperties }), let v = p.initialValues[d.handle], v.count == 2 {
                bits = UInt16(v[0]) | UInt16(v[1]) << 8
            }
            if c.descriptors.contains(where: { $0.uuid == .characteristicUserDescription && p.writableDescriptors.contains($0.handle) }) { bits |= 0x0002 }
            writableAuxiliaries = bits & 0x0002 != 0
            let names = [(0x0001, "reliable-write"), (0x0002, "writable-auxiliaries")].filter { bits & UInt16($0.0) != 0 }.map(\.1)
            if !names.isEmpty { lines.append("            extended-properties: [\(names.joined(separator: ", "))]") }
        }
        let declared = c.descriptors.filter { !automatic.contains($0.uuid) }
        guard !declared.isEmpty else { return lines }
        lines.append("            descriptors:")
        for d in declared {
            guard d.uuid != BluetoothUUID(uuid16: 0x2905) else {
                lines.append("              # 0x\(hex(d.handle)) \(d.uuid) (Aggregate Format): the lab lays out its own handles; not reproduced")
                continue
            }
            var entry = "              - { uuid: \(YAMLValues.uuid(d.uuid))"
            var comment = "0x\(hex(d.handle))"
            if let v = p.initialValues[d.handle], d.uuid != .characteristicUserDescription || String(validating: v, as: UTF8.self) != nil {
                entry += ", value: \(YAMLValues.value(v))"
            } else if d.uuid == BluetoothUUID(uuid16: 0x2904) {
                entry += ", value: hex:00 00 00 00 00 00 00"
                comment += "; its value is not in the capture"
            }
            if p.writableDescriptors.contains(d.handle), d.uuid != .characteristicUserDescription || writableAuxiliaries {
                entry += ", permissions: [read, write]"
            }
            lines.append(entry + " }    # \(comment)")
        }
        return lines
    }
}

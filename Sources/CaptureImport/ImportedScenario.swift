import ATT
import BLERuntime
import BLEWire
import Controller
import GATT
import HCI
import ScenarioFormat

/// Turns a central's capture, analysed, into a scenario (the format's model, which
/// `ScenarioWriter` writes): the peripherals as they advertised and as discovery found them, the
/// central's operations as steps in capture order, expectations of what the capture shows, and
/// comments saying which record each came from.
///
/// What a peripheral sent is reproduced by behaviour: a notification that echoes every write of a
/// characteristic becomes an `on-write` trigger, a regular series after a subscription becomes an
/// `on-subscribe` `notify-every`, and anything else a `peripheral:` step with the observed values
/// and delays, right after the step it followed. docs/import.md describes the rules.
struct ImportedScenario {
    let transcript: HCITranscript
    /// Mutable for the flaw plan: an operation left to time out ends 30 s after its request.
    var sessions: [GATTSession]
    let source: String
    let format: CaptureFile.Format
    let recordCount: Int

    var peripherals: [ImportedPeripheral] = []
    /// Connection index → peripheral index.
    var owner: [Int] = []
    /// Failed connection attempt index → peripheral index (nil: no peer address, or a
    /// peripheral's capture).
    var failedOwner: [Int?] = []
    var flawPlan = FlawPlan()

    init(transcript: HCITranscript, sessions: [GATTSession], source: String, format: CaptureFile.Format, recordCount: Int) {
        self.transcript = transcript
        self.sessions = sessions
        self.source = source
        self.format = format
        self.recordCount = recordCount
        buildPeripherals()
        planServiceChanges()
        planDescriptors()
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
            guard let first = servers.first else {
                // No exchange in the capture, but PDUs longer than the lab peripheral's 247 (the
                // replay exchanges their size, `StepBuilder.exchangeMissingMTU`): it must take them.
                let largest = peripherals[p].connections.flatMap { transcript.connections[$0].att.map(\.bytes.count) }.max() ?? 0
                if largest > 247 { peripherals[p].mtu = min(517, largest) }
                continue
            }
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
                peripherals[i].database.markInferred(s)
            }
        }
        for f in transcript.failedConnections {
            // A device the central tried to connect to: seen advertising, or remembered (never seen).
            failedOwner.append(peripheralSide ? nil : f.peer.map { index(for: $0) })
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
            if let median = peripherals[i].reportedRSSI, median < ImportedPeripheral.weakestHeard {
                peripherals[i].notes.append("its advertising reports' RSSI (\(median) dBm) is below what the lab's receivers hear (-100 dBm, with ±2 dB of noise); the scenario gives it \(ImportedPeripheral.weakestHeard)")
            }
        }
        var used: Set<String> = ["central"]
        for i in peripherals.indices {
            let name = peripherals[i].advertisedNames.first
            var base = Self.identifier(from: name)
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

    /// The capture was taken on the peripheral: the capturing host is the scenario's one
    /// peripheral, and the other side of its connections the scripted central.
    var peripheralSide: Bool {
        transcript.scans.isEmpty && (transcript.ownAdvertising != nil || !transcript.connections.isEmpty)
            && transcript.connections.allSatisfy(\.capturedOnPeripheral)
    }

    /// On a peripheral's capture, a link that its own link layer ended with Instant Passed (0x28)
    /// without its host asking: it received a connection update's LL_CONNECTION_UPDATE_IND only
    /// after the update's instant, having missed every one before (Core 5.4, Vol 6, Part B,
    /// 5.1.1), while the central moved to the new parameters and, hearing nothing more, timed
    /// out. When it was last heard, and when it left.
    func missedInstant(_ c: Int) -> (lastHeard: CaptureMark, left: CaptureMark)? {
        let connection = transcript.connections[c]
        guard connection.capturedOnPeripheral, connection.reason == .instantPassed, connection.disconnectRequested == nil,
              !connection.endedByReset, let left = connection.disconnected else { return nil }
        return (min(left, connection.lastTraffic ?? connection.established), left)
    }

    /// When the central ended the connection (its HCI Disconnect), if it did.
    func centralDisconnect(_ c: Int) -> (start: CaptureMark, end: CaptureMark)? {
        let connection = transcript.connections[c]
        if connection.capturedOnPeripheral {
            guard connection.disconnectRequested == nil, !connection.endedByReset, connection.reason != .connectionTimeout,
                  missedInstant(c) == nil, let done = connection.disconnected else { return nil }
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

    // MARK: The timeline

    enum Item {
        case scan(Int)
        case connect(Int)
        /// A connection attempt that gave no connection (`transcript.failedConnections`).
        case failedConnect(Int)
        /// HCI Read RSSI on a connection: `connections[connection].rssiReads[index]`.
        case rssiRead(connection: Int, index: Int)
        case operation(connection: Int, index: Int)
        /// The central's LE Connection Update, completed by the connection's update `update`.
        case connectionUpdate(connection: Int, update: Int)
        case disconnect(Int)
        /// The peripheral's controller reset after it had lost power on this connection: it comes back.
        case powerOn(connection: Int)
        /// From here the central's host rejects (or accepts) the peripheral's requests for new
        /// connection parameters (`parameter-requests:`).
        case parameterPolicy(connection: Int, reject: Bool)
        /// On a peripheral's capture, a link its link layer ended with Instant Passed: it missed a
        /// connection update of the central's (`ImportedScenario.missedInstant`).
        case missedInstant(connection: Int)

        var order: Int {
            switch self {
            case .scan: return 0
            case .connect, .failedConnect: return 1
            case .parameterPolicy: return 2
            case .operation, .connectionUpdate, .rssiRead: return 3
            case .disconnect, .missedInstant: return 4
            case .powerOn: return 5
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
        case let .parameterRequest(_, r, update): return [r.mark.time, r.answered?.time ?? 0, update?.mark.time ?? 0].max()!
        default: return e.mark.time
        }
    }

    /// What asked for each of a connection's parameter updates: the peripheral (an L2CAP request,
    /// or its link layer's) or the central's host; and every request of the peripheral, with the
    /// update it led to (nil: rejected, or none followed).
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
            var cause: ParameterRequest?
            for r in asked where !r.byCentral {
                if cause == nil, r.accepted != false {
                    cause = r
                    peripheral.append((r, u))
                } else {
                    peripheral.append((r, nil))
                }
            }
            // A failed update on a peripheral's capture that ends its own LE Connection Update is
            // the central's rejection of that request, not an update of the central's.
            let answersOwnRequest = u.status != .success && asked.contains { !$0.byCentral && $0.kind == .hciCommand }
            if cause == nil, !answersOwnRequest { central.append((asked.first { $0.byCentral }, k)) }
        }
        for r in connection.parameterRequests[used...] where !r.byCentral { peripheral.append((r, nil)) }
        return (central, peripheral)
    }

    /// What the central's host did with a peripheral's request for new parameters, as far as the
    /// lab's central can do it again (`parameter-requests: accept | reject`, docs/scenarios.md
    /// "Faults").
    enum ParameterAnswer {
        case accepted
        /// Rejected as the lab's central rejects: an L2CAP response "rejected", or a Negative Reply
        /// with Unacceptable Connection Parameters (0x3B).
        case rejected
        /// An outcome the lab's central cannot give, with what it was.
        case other(String)
        /// No answer in the capture.
        case unknown
    }

    static func answer(to r: ParameterRequest, update: ParameterUpdate?) -> ParameterAnswer {
        if let update, update.status == .success { return .accepted }
        switch (r.accepted, r.rejection) {
        case (true?, _): return .accepted
        case (false?, nil), (false?, HCIStatus.unacceptableConnectionParameters?): return .rejected
        case let (false?, status?):
            if r.kind == .hciCommand {
                // Its own LE Connection Update ended with this status (Vol 6, Part B, 5.1.7: a central
                // whose host masks the event rejects with Unsupported Remote Feature, 0x1A; no answer
                // in 40 s gives LL Response Timeout, 0x22).
                return .other("LE Connection Update Complete said \(status.name) (0x\(hex8(status.rawValue)))")
            }
            return .other("the central's host rejected it with \(status.name) (0x\(hex8(status.rawValue))); the lab's central rejects with unacceptable-connection-parameters (0x3b)")
        case (nil, _):
            return .unknown
        }
    }

    /// Where the central's host changes its answer to the peripheral's requests: before each
    /// request it answered otherwise than the one before (the lab's central accepts at first), as
    /// soon as the request before had its answer, so that the request keeps its delay after that.
    func parameterPolicies() -> [Timed] {
        var items: [Timed] = []
        var rejecting: [Int: Bool] = [:]
        for c in transcript.connections.indices {
            let p = owner[c]
            var settledBefore = transcript.connections[c].established
            for (request, update) in parameterChanges(c).peripheral {
                // Just after its answer (or the update it led to): what came before is its own.
                defer {
                    let last = [request.mark, request.answered, update?.mark].compactMap { $0 }.max()!
                    settledBefore = CaptureMark(record: last.record, time: last.time + 1)
                }
                let wanted: Bool
                switch Self.answer(to: request, update: update) {
                case .accepted: wanted = false
                case .rejected: wanted = true
                case .other, .unknown: continue
                }
                guard wanted != (rejecting[p] ?? false) else { continue }
                rejecting[p] = wanted
                let at = min(request.mark, settledBefore)
                items.append(Timed(item: .parameterPolicy(connection: c, reject: wanted), start: at, end: at))
            }
        }
        return items
    }

    /// The parameters the replay's link has at `mark` (interval and timeout in their HCI units):
    /// those its connect step asks for (the capture's, `connectParameters`), else the lab
    /// central's 30 ms, 0 and 5 s, or what the last parameter update before set.
    func replayParameters(_ c: Int, at mark: CaptureMark) -> (interval: UInt16, latency: UInt16, timeout: UInt16) {
        guard let u = transcript.connections[c].parameterUpdates.last(where: { $0.status == .success && $0.mark <= mark }) else {
            return connectParameters(c).map { ($0.interval, $0.latency, $0.timeout) } ?? (24, 0, 500)
        }
        return (u.interval, u.latency, u.supervisionTimeout)
    }

    /// What the replay's central does right after connecting `c` because the capture shows its
    /// effects but not the requests: `mtu`, the ATT_MTU to exchange when PDUs longer than the
    /// default 23 octets (Core 5.4, Vol 3, Part F, 3.2.8) come with no Exchange MTU in the
    /// capture (it happened before the capture started, or in records it lost); `subscriptions`,
    /// on a connection the capture started inside, the characteristics notified or indicated
    /// whose CCCD write the capture never shows, by value handle.
    struct ConnectionSetup {
        var mtu: Int?
        var subscriptions: [(handle: UInt16, configuration: GATTClientConfiguration)] = []
    }

    func setup(of c: Int) -> ConnectionSetup {
        var setup = ConnectionSetup()
        let session = sessions[c]
        let connection = transcript.connections[c]
        if !session.operations.contains(where: { if case .mtu = $0.kind { return true } else { return false } }) {
            let largest = connection.att.map(\.bytes.count).max() ?? 0
            if largest > 23 { setup.mtu = min(517, largest) }
        }
        guard connection.startedBeforeCapture else { return setup }
        let p = owner[c]
        var configured: Set<UInt16> = []
        for op in session.operations {
            if case let .configure(handle, _) = op.kind { configured.insert(handle) }
        }
        var seen: Set<UInt16> = []
        for n in session.notifications where !seen.contains(n.handle) {
            guard let (_, ch) = peripherals[p].database.characteristic(valueHandle: n.handle),
                  !ch.descriptors.contains(where: { $0.uuid == .clientCharacteristicConfiguration && configured.contains($0.handle) }),
                  peripherals[p].reference(n.handle) != nil else { continue }
            seen.insert(n.handle)
            let both = session.notifications.contains { $0.handle == n.handle && $0.indication != n.indication }
            setup.subscriptions.append((n.handle, both ? [.notification, .indication] : n.indication ? .indication : .notification))
        }
        return setup
    }

    /// The requests `setup(of:)` adds, as the peripheral receives them (for the flaws, which count
    /// requests): Exchange MTU, then a Write Request to each CCCD, at the handle after the value
    /// where the capture does not show it.
    func setupRequests(of c: Int) -> [ATTPDU] {
        let setup = setup(of: c)
        var out: [ATTPDU] = []
        if let mtu = setup.mtu { out.append(.exchangeMTURequest(ATTExchangeMTURequest(clientRxMTU: UInt16(mtu)))) }
        let p = owner[c]
        for s in setup.subscriptions {
            // A value at 0xFFFF has no handle after it: the wrapped 0x0000 only stands for the
            // request, which is all the flaws count (the lab lays out its own CCCD).
            let cccd = peripherals[p].database.characteristic(valueHandle: s.handle)?.characteristic.descriptors
                .first { $0.uuid == .clientCharacteristicConfiguration }?.handle ?? s.handle &+ 1
            out.append(.writeRequest(ATTWriteRequest(handle: cccd, value: s.configuration.littleEndianBytes)))
        }
        return out
    }

    /// Data PDUs a connection event of the lab's sim carries each way unless told
    /// (`AirModel.maxPDUsPerEvent`).
    static let labPDUsPerEvent = 4

    /// The most ATT PDUs peripheral `p` sent within one connection interval (the interval in
    /// force then) on any of its connections, and where: phones' connection events carry several
    /// notifications each, and the replay's must carry as many for its notifications to arrive
    /// when the capture's did. Only a central's capture shows this: its controller delivers what
    /// each event carried; a peripheral's shows when its host handed PDUs over (a burst at once),
    /// not how the events carried them.
    func burstiest(_ p: Int) -> (Int, CaptureMark)? {
        var best: (Int, CaptureMark)?
        for c in peripherals[p].connections where !transcript.connections[c].capturedOnPeripheral {
            let connection = transcript.connections[c]
            let sent = connection.att.filter { !$0.fromCentral }
            var first = 0
            for (k, r) in sent.enumerated() {
                // At least the PDU itself: an interval of 0 (a damaged LE Connection Complete)
                // leaves a window of one.
                let window = Int64(connection.parameters(at: r.mark).interval) * 1250
                while first < k, sent[first].mark.time <= r.mark.time - window { first += 1 }
                let n = k - first + 1
                if n > (best?.0 ?? 0) { best = (n, sent[first].mark) }
            }
        }
        return best
    }

    /// The parameters connection `c` was made with (LE Connection Complete), for the replay's
    /// connect step to ask for, so that its connection events (how many notifications arrive in a
    /// window, how long an answer waits) follow the capture's; nil when they are the lab central's
    /// own (30 ms, 0, 5 s), unknown (the capture started inside the connection), or outside what
    /// LE Create Connection takes.
    func connectParameters(_ c: Int) -> ConnectionUpdateRequest? {
        let connection = transcript.connections[c]
        guard !connection.startedBeforeCapture,
              (connection.interval, connection.latency, connection.supervisionTimeout) != (24, 0, 500),
              StepBuilder.allowed(interval: connection.interval, latency: connection.latency, timeout: connection.supervisionTimeout) else { return nil }
        return ConnectionUpdateRequest(interval: connection.interval, latency: connection.latency, timeout: connection.supervisionTimeout)
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
            // A scan step runs for its whole length, so one the phone kept running while it
            // connected (Android scans on beside its links) ends at the connection request; what
            // it heard after is listed (`StepBuilder.scan`).
            let request = transcript.connections.filter { !$0.capturedOnPeripheral && !$0.startedBeforeCapture }
                .compactMap { $0.requested ?? $0.established }.first { $0 > scan.start }
            var end = scan.end ?? request ?? CaptureMark(record: max(scan.start.record, transcript.lastRecord), time: transcript.endTime)
            if let request, request < end { end = request }
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
            if !connection.capturedOnPeripheral {
                for (k, r) in connection.rssiReads.enumerated() { items.append(Timed(item: .rssiRead(connection: c, index: k), start: r.mark, end: r.mark)) }
            }
            if let (lastHeard, left) = missedInstant(c) {
                items.append(Timed(item: .missedInstant(connection: c), start: lastHeard, end: left))
            }
            for (request, update) in parameterChanges(c).central {
                let done = connection.parameterUpdates[update].mark
                items.append(Timed(item: .connectionUpdate(connection: c, update: update), start: request?.mark ?? done, end: done))
            }
            if connection.capturedOnPeripheral, connection.endedByReset, let reset = connection.disconnected {
                items.append(Timed(item: .powerOn(connection: c), start: reset, end: reset))
            }
        }
        items += parameterPolicies()
        for (k, f) in transcript.failedConnections.enumerated() {
            items.append(Timed(item: .failedConnect(k), start: f.requested, end: f.ended))
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

    // MARK: Building

    /// The scenario, and the comments its file carries.
    mutating func build() -> (scenario: Scenario, comments: ScenarioComments) {
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

        var steps = StepBuilder(importing: self)
        if let first = items.first, case .scan = first.item, first.start.time >= 50_000 {
            // Advertisers start at the lab's start: a scan that began later meets their events in
            // another phase (what a duty-cycled scan hears depends on it).
            steps.comment(first.start, "the first scan began \(CaptureMark.seconds(first.start.time)) after the capture's first record")
            steps.add(.wait(millisecondsUp(first.start.time)))
        }
        for (i, timed) in items.enumerated() {
            let isScan: Bool
            if case .scan = timed.item { isScan = true } else { isScan = false }
            if isScan || { if case .connectionUpdate = timed.item { return true } else { return false } }() {
                // A link lost while the central's update ran: the central's side of an update
                // completes at its instant whether the peripheral heard it or not (Core 5.4, Vol 6,
                // Part B, 5.1.1), so the loss goes before the step, at its time. A link lost
                // during a scan (which runs for its whole length) likewise goes before it, so that
                // the supervision timeout runs while the scan does, as in the capture.
                let early = segments[i].indices.filter { k in
                    if case .linkLoss = segments[i][k], segments[i][k].mark < timed.end { return true }
                    return false
                }
                for k in early { steps.emitLinkLoss(segments[i][k], before: timed, during: isScan ? "the scan below" : "the connection update below") }
                for k in early.reversed() { segments[i].remove(at: k) }
            }
            if case let .operation(c, k) = timed.item, steps.outcome(c, k).cutShort {
                // What ended the link while the request waited goes before the step, at its time.
                var lost: [Int] = []
                for (n, e) in segments[i].enumerated() {
                    switch e {
                    case let .disconnect(cc, _, reason) where cc == c && reason != .connectionTimeout: steps.emitEarlyDisconnect(e, before: timed)
                    case let .linkLoss(cc, _, _) where cc == c:
                        steps.emitLinkLoss(e, before: timed, during: "the request below")
                        lost.append(n)
                    default: break
                    }
                }
                for n in lost.reversed() { segments[i].remove(at: n) }
            }
            steps.emit(timed, items: items)
            steps.emitSegment(segments[i], after: timed, triggered: triggered)
            let next = i + 1 < items.count ? items[i + 1].start.time : nil
            let last = max(timed.end.time, segments[i].map(settled).max() ?? 0, steps.waitedUntil ?? 0)
            // A peripheral's capture sees each request a link latency after the central sent it,
            // and its answer as many before the central got it: only longer pauses are the central's.
            if let next, next - last >= (peripheralSide ? 150_000 : 50_000) {
                if let reached = steps.waitedUntil, steps.endsWithWait {
                    // One wait, from the step above to the next, instead of two in a row.
                    steps.replaceLast(.wait(millisecondsUp((reached - timed.end.time) + (next - last))))
                } else {
                    steps.add(.wait(millisecondsUp(next - last)))
                }
            }
        }
        for e in orphans { steps.comment("\(e.mark): the peripheral acted before any step; not reproduced") }
        if items.isEmpty {
            // Only advertising (a peripheral's capture without a connection): a scan that finds it.
            steps.comment("the capture shows no central; a scan that finds what advertised")
            steps.add(.scan(ScanStep(duration: .seconds(1))))
            for p in peripherals where !p.reports.isEmpty { steps.add(.expect(.discovered(p.id))) }
        }
        peripherals = steps.importing.peripherals
        var comments = steps.comments
        comments.add(header(notes: flawPlan.notes + steps.notes), above: .file)
        var scenario = Scenario(name: "Imported from " + source, file: source + ".yaml", tags: ["imported"], timeout: timeout,
                                seed: 1, requires: steps.requiresSim ? [.sim] : nil, peripherals: [], steps: steps.steps)
        for p in peripherals {
            let (spec, faults) = peripheralSpec(p, comments: &comments)
            scenario.peripherals.append(spec)
            if let faults { scenario.faults[p.id] = faults }
        }
        return (scenario, comments)
    }

    // MARK: The file

    /// The scenario's time budget: the capture's length and then some. A request left to time out
    /// ends 30 s after it, whenever the capture stops.
    private var timeout: TimeSpan {
        let total = sessions.flatMap(\.operations).map(\.end.time).reduce(transcript.endTime, max)
        // Twice the capture: a replay runs on the lab's link timing (a peripheral with latency
        // listening at every latency + 1 events, the lab's own connection events), which can
        // make each exchange slower than the capture's and their sum drift; the timeout is a
        // guard against a hang, not a verdict on timing.
        return .seconds((total + max(10_000_000, total)) / 1_000_000 + 1)
    }

    /// The comment at the top: where the scenario came from, and what it does not reproduce.
    private func header(notes: [String]) -> [String] {
        var out: [String] = []
        let seconds = CaptureMark.seconds(transcript.endTime)
        out.append("Imported by `blelab import` from \(source)")
        out.append("(\(format), \(recordCount) records, \(transcript.packetCount) HCI packets over \(seconds)), "
                   + (peripheralSide ? "taken on the peripheral: it is the peripheral below, the central is the other side." : "as the central saw it."))
        out.append("Each step's comment gives the capture record it came from (1-based, as Wireshark numbers")
        out.append("frames) and its time since the first record. Edit it down to the bug: keep the steps")
        out.append("that lead to it and the expectation that fails (docs/import.md).")
        var allNotes = transcript.notes
        for (c, connection) in transcript.connections.enumerated() {
            allNotes += connection.notes.map { "connection to \(peripherals[owner[c]].id): \($0)" }
            allNotes += sessions[c].notes.map { "connection to \(peripherals[owner[c]].id): \($0)" }
        }
        allNotes += notes
        for p in peripherals { allNotes += p.notes.map { "\(p.id): \($0)" } }
        if !allNotes.isEmpty {
            out.append("")
            out.append("Not reproduced:")
            out += allNotes.map { "  - \($0)" }
        }
        return out
    }

    /// The peripheral as the scenario declares it, its `mtu:`, and the comments on its parts:
    /// which handles each service and characteristic had in the capture.
    private func peripheralSpec(_ p: ImportedPeripheral, comments: inout ScenarioComments) -> (PeripheralSpec, PeripheralFaults?) {
        let id = p.id
        var spec = PeripheralSpec(id: id, address: p.scenarioAddress, rssi: p.rssi.map { Int8($0) }, deviceName: p.deviceName)
        comments.add(inline: p.reports.first.map { "first advertised at \($0.mark)" } ?? "never seen advertising", at: .peripheral(id))
        let (advertising, notes, inline) = p.advertising()
        spec.advertising = advertising
        comments.add(notes, above: .advertise(id))
        if let inline { comments.add(inline: inline, at: .advertise(id)) }
        var faults: PeripheralFaults?
        if let mtu = p.mtu {
            faults = PeripheralFaults(mtu: mtu)
            comments.add(inline: "its Exchange MTU Response", at: .mtu(id))
        }
        if let index = peripherals.firstIndex(where: { $0.id == id }), let (most, at) = burstiest(index), most > Self.labPDUsPerEvent {
            var f = faults ?? PeripheralFaults()
            f.link = LinkFaults(pdusPerEvent: min(32, most))
            faults = f
            comments.add(["\(at): \(most) ATT PDUs from it within one connection interval, more than the lab's connection events carry by default (\(Self.labPDUsPerEvent)): link: { pdus-per-event: \(min(32, most)) }"],
                         above: .advertise(id))
        }
        for (k, (notes, flaw)) in p.flaws.enumerated() {
            spec.flaws.append(flaw)
            comments.add(notes, above: .flaw(id, k))
        }
        for (si, s) in p.initialServices.enumerated() {
            comments.add(inline: s.inferred ? "not discovered in the capture: a placeholder holding the handles the app used"
                                            : "handles 0x\(hex(s.start))-0x\(hex(s.end))", at: .service(id, si))
            var service = ServiceSpec(uuid: s.uuid)
            // What the traffic alone shows (never discovered) keeps the capture's handles, so
            // the replay's PDUs carry the handles the app used.
            if s.inferred { service.handle = s.start }
            for (ci, c) in s.characteristics.enumerated() {
                comments.add(inline: c.inferred ? "its UUID is not in the capture (a placeholder); its properties are what the app did with it"
                                                : "value handle 0x\(hex(c.valueHandle))", at: .characteristic(id, service: si, ci))
                var characteristic = CharacteristicSpec(uuid: c.uuid, properties: CharacteristicProperties(rawValue: c.properties),
                                                        value: p.initialValues[c.valueHandle] ?? [])
                characteristic.extendedProperties = CharacteristicExtendedProperties(rawValue: p.extendedPropertiesBits(c))
                characteristic.descriptors = descriptors(c, of: p, comments: &comments, at: (id, si, ci))
                comments.add(p.triggerNotes[c.valueHandle] ?? [], above: .triggers(id, service: si, characteristic: ci))
                characteristic.onRead = p.onRead[c.valueHandle] ?? []
                characteristic.onWrite = p.onWrite[c.valueHandle] ?? []
                characteristic.onSubscribe = p.onSubscribe[c.valueHandle] ?? []
                if c.inferred { characteristic.handle = c.valueHandle }
                service.characteristics.append(characteristic)
            }
            spec.services.append(service)
        }
        let pinned = spec.services.contains { $0.handle != nil || $0.characteristics.contains { $0.handle != nil } }
        if pinned, (try? GATTDatabase(services: spec.services.map(\.gattService))) == nil {
            // The lab's own GAP and GATT services, or the attributes it lays out around each
            // characteristic, take handles the capture's need: the lab lays them out itself.
            for si in spec.services.indices {
                spec.services[si].handle = nil
                for ci in spec.services[si].characteristics.indices { spec.services[si].characteristics[ci].handle = nil }
            }
            comments.add(["the capture's handles of the characteristics below cannot be kept (the lab's GAP and GATT services take 0x0001-0x0009, and each characteristic its declaration and descriptors): the lab lays them out itself, and the central finds them by UUID"],
                         above: .service(id, 0))
        }
        return (spec, faults)
    }

    /// A characteristic's `descriptors:` (docs/scenarios.md "Descriptors"): the descriptors the
    /// lab does not add itself, each type once, with the value the capture read first when the
    /// type can hold it, and write permission when the central wrote one.
    private func descriptors(_ c: DiscoveredDatabase.Characteristic, of p: ImportedPeripheral, comments: inout ScenarioComments,
                             at place: (String, Int, Int)) -> [GATTDescriptor] {
        let (id, s, k) = place
        let extended = CharacteristicExtendedProperties(rawValue: p.extendedPropertiesBits(c))
        let declared = ImportedPeripheral.declarable(c)
        for d in c.descriptors where d.uuid == BluetoothUUID(uuid16: 0x2905) || (!ImportedPeripheral.undeclarable.contains(d.uuid) && !declared.contains(d)) {
            comments.add("descriptor \(d.uuid) at 0x\(hex(d.handle)): \(d.uuid == BluetoothUUID(uuid16: 0x2905) ? "an Aggregate Format lists handles, which the lab lays out itself" : "a second one of its type, which a characteristic declares once"); not reproduced",
                         above: .descriptors(id, service: s, characteristic: k))
        }
        var out: [GATTDescriptor] = []
        for (n, d) in declared.enumerated() {
            var comment = "0x\(hex(d.handle))"
            let place = ImportedPeripheral.DescriptorPlace(ref: CharacteristicRef(c.uuid), service: DiscoveredDatabase.Service(uuid: c.uuid, start: 0, end: 0, characteristics: []),
                                                           characteristic: c, uuid: d.uuid)
            let value = p.initialDescriptorValue(place, handle: d.handle)
            if let read = p.descriptorReads[d.handle], read != value {
                comment += "; the capture read \(ScalarText.hex(Array(read.prefix(16))))\(read.count > 16 ? " …" : ""), which a \(d.uuid) cannot hold"
            } else if p.descriptorReads[d.handle] == nil {
                comment += "; its value before any write is not in the capture"
            }
            // A user description is writable exactly when writable-auxiliaries says so (Core 5.4,
            // Vol 3, Part G, 3.3.3.2); another declared descriptor when the central wrote it.
            let writable = d.uuid == .characteristicUserDescription ? extended.contains(.writableAuxiliaries) : p.writtenDescriptors.contains(d.handle)
            out.append(GATTDescriptor(uuid: d.uuid, value: value, isReadable: true, isWritable: writable))
            comments.add(inline: comment, at: .descriptor(id, service: s, characteristic: k, n))
        }
        return out
    }

    /// A peripheral id from an advertised name: lower case letters, digits and dashes.
    static func identifier(from name: String?) -> String {
        var out = ""
        for ch in (name ?? "").lowercased().unicodeScalars {
            if ("a"..."z").contains(ch) || ("0"..."9").contains(ch) || ch == "_" || ch == "." {
                out.unicodeScalars.append(ch)
            } else if !out.isEmpty && !out.hasSuffix("-") {
                out += "-"
            }
        }
        while out.hasSuffix("-") || out.hasSuffix(".") || out.hasSuffix("_") { out.removeLast() }
        if out.isEmpty || out == "central" { return "peripheral" }
        return String(out.prefix(32))
    }
}

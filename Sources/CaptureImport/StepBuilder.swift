import ATT
import BLERuntime
import BLEWire
import Controller
import GATT
import HCI
import ScenarioFormat

/// Builds the `central:` steps, keeping a model of the imported lab as it goes: which peripheral
/// advertises, what each characteristic's value is on the simulated server, what each scan
/// discovered. Where the model and the capture disagree, it adds the `peripheral:` step that makes
/// them agree (a `set-value` before a read, a `start-advertising` before a scan).
struct StepBuilder {
    var importing: ImportedScenario
    /// The steps so far, in order, with the comment lines that go above each.
    var lines: [Line] = []
    var notes: [String] = []
    /// Per peripheral: the value the simulated server holds, by value handle.
    var values: [[UInt16: [UInt8]]]
    /// Per peripheral: whether it advertises now.
    var advertising: [Bool]
    var discoveredEver: Set<Int> = []
    /// A step or action that needs the embedded simulator was written (`requires: [sim]`).
    var requiresSim = false
    /// Peripheral events whose action went before the step they cut short.
    var earlyActions: Set<CaptureMark> = []
    /// The capture time the last segment's closing `wait` reaches (it waits for actions nothing
    /// expects), when it wrote one as its last line.
    var waitedUntil: Int64?
    let filterServices: [BluetoothUUID]
    let filterNames: [String]

    /// A step, or a comment line above the next one.
    enum Line {
        case comment(String)
        case step(StepDraft)
    }

    /// A step and its options (`CentralStep` without its place in the script).
    struct StepDraft {
        var action: CentralAction
        var acquire = false
        var subscription: GATTClientConfiguration?
        var connectScan: ScanTiming?
        var gattCache = false
        var connectParameters: ConnectionUpdateRequest?
    }

    init(importing: ImportedScenario) {
        self.importing = importing
        let ps = importing.peripherals
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
        get { importing.peripherals }
        set { importing.peripherals = newValue }
    }

    mutating func comment(_ mark: CaptureMark, _ text: String) { lines.append(.comment("\(mark): \(text)")) }

    mutating func comment(_ text: String) { lines.append(.comment(text)) }

    mutating func add(_ action: CentralAction, subscription: GATTClientConfiguration? = nil, connectScan: ScanTiming? = nil) {
        lines.append(.step(StepDraft(action: action, subscription: subscription, connectScan: connectScan)))
    }

    mutating func expect(_ e: Expectation) { add(.expect(e)) }

    /// Whether the last line is a `wait` step.
    var endsWithWait: Bool {
        if case let .step(d)? = lines.last, case .wait = d.action { return true }
        return false
    }

    mutating func replaceLast(_ action: CentralAction) {
        lines[lines.count - 1] = .step(StepDraft(action: action))
    }

    /// The steps, numbered, and the comments above them (those after the last go at the end).
    var steps: [CentralStep] { built.steps }
    var comments: ScenarioComments { built.comments }

    private var built: (steps: [CentralStep], comments: ScenarioComments) {
        var steps: [CentralStep] = []
        var comments = ScenarioComments()
        var pending: [String] = []
        for line in lines {
            switch line {
            case let .comment(text): pending.append(text)
            case let .step(d):
                let index = steps.count + 1
                comments.add(pending, above: .step(index))
                pending = []
                steps.append(CentralStep(index: index, action: d.action, acquire: d.acquire, subscription: d.subscription, connectScan: d.connectScan,
                                         gattCache: d.gattCache, connectParameters: d.connectParameters))
            }
        }
        comments.add(pending, above: .end)
        return (steps, comments)
    }

    // MARK: Steps

    mutating func emit(_ timed: ImportedScenario.Timed, items: [ImportedScenario.Timed]) {
        switch timed.item {
        case let .scan(i): scan(i, timed)
        case let .connect(c): connect(c, timed)
        case let .failedConnect(k): failedConnect(k, timed)
        case let .rssiRead(c, k): rssiRead(c, k, timed)
        case let .operation(c, k): operation(c, k, importing.sessions[c].operations[k])
        case let .disconnect(c):
            let p = importing.owner[c]
            let connection = importing.transcript.connections[c]
            if let timeout = timedOut(c), timed.start.time >= timeout - 1_000_000, timed.start.time <= timeout + 2_000_000 {
                // The lab's central ends the link itself once the ATT transaction timed out.
                comment(timed.start, "the central disconnected after the ATT transaction timeout, as the lab's central does by itself")
                expect(.disconnected(peripheral: peripherals[p].id, reason: nil, within: millisecondsUp(max(0, timed.end.time - timeout) + 1_000_000)))
                return
            }
            if connection.endedByReset && !connection.capturedOnPeripheral {
                notes.append("\(timed.start): the central's controller was reset (a power cycle) while connected to \(peripherals[p].id); the lab's central disconnects there instead")
            }
            comment(timed.start, connection.capturedOnPeripheral ? "the central disconnected (Disconnection Complete, \(connection.reason?.name ?? "?"))" : "HCI Disconnect")
            add(.disconnect(peripheral: peripherals[p].id, within: nil))
            if connection.reason == .connectionTerminatedByLocalHost || connection.capturedOnPeripheral {
                expect(.disconnected(peripheral: peripherals[p].id, reason: .connectionTerminatedByLocalHost, within: Expectation.defaultWithin))
            }
        case let .connectionUpdate(c, u):
            let p = importing.owner[c]
            let update = importing.transcript.connections[c].parameterUpdates[u]
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
            if importing.transcript.connections[c].capturedOnPeripheral {
                comment(timed.start, "LE Connection Update Complete: the central changed the connection parameters")
                notes.append("\(update.mark): the central's LE Connection Update is not in a peripheral's capture, only its completion: the scenario's central asks when the update took effect, and the update's connection events come after it")
            } else {
                comment(timed.start, "the central asked for new connection parameters (LE Connection Update); LE Connection Update Complete at \(update.mark)")
            }
            updateParameters(p, interval: update.interval, latency: update.latency, timeout: update.supervisionTimeout)
        case let .parameterPolicy(c, reject):
            let p = importing.owner[c]
            let connection = importing.transcript.connections[c]
            let how = connection.capturedOnPeripheral ? "the central \(reject ? "rejected" : "accepted") \(peripherals[p].id)'s next request for new connection parameters"
                : "the central's host \(reject ? "rejected" : "accepted") \(peripherals[p].id)'s next request for new connection parameters"
            comment(timed.start, how + (reject ? "; from here it rejects them" : "; from here it accepts them"))
            add(.fault(.parameterRequests(peripheral: peripherals[p].id, accept: !reject)))
        case let .missedInstant(c):
            missedInstant(c, timed)
        case let .powerOn(c):
            let p = importing.owner[c]
            requiresSim = true
            comment(timed.start, "the peripheral's controller was reset (HCI Reset): it had lost power, and comes back")
            add(.fault(.powerOn(peripheral: peripherals[p].id)))
            advertising[p] = true
        }
    }

    /// A peripheral's link ended with Instant Passed (`ImportedScenario.missedInstant`): the
    /// peripheral goes out of range after it was last heard, the central updates the connection
    /// (its side completes at the instant, Core 5.4, Vol 6, Part B, 5.1.1), and the peripheral
    /// comes back half an interval before it left, so that the central's resent
    /// LL_CONNECTION_UPDATE_IND reaches it at its next connection event, past the instant. The
    /// central then times out. The capture shows neither the update nor its parameters: the
    /// central asks for those the replay's link has.
    private mutating func missedInstant(_ c: Int, _ timed: ImportedScenario.Timed) {
        let p = importing.owner[c]
        let id = peripherals[p].id
        let (interval, latency, timeout) = importing.replayParameters(c, at: timed.start)
        let period = Int64(interval) * 1250
        requiresSim = true
        comment(timed.start, "\(id) was last heard here; at \(timed.end) its link layer ended the link with Instant Passed (0x28): it received a connection update's LL_CONNECTION_UPDATE_IND only after the update's instant (Core Vol 6 Part B 5.1.1). The central moved to the new parameters and timed out")
        add(.fault(.outOfRange(peripheral: id, rate: nil)))
        updateParameters(p, interval: interval, latency: latency, timeout: timeout)
        // The replay's step starts once the central has the peripheral's last packet (an event
        // later); the update's instant is 6 × (latency + 1) events after the next event.
        let start = timed.start.time + period
        let completed = start + period * (1 + 6 * (Int64(latency) + 1))
        let back = timed.end.time - period / 2
        if back - completed >= 1000 { add(.wait(millisecondsUp(back - completed))) }
        add(.fault(.inRange(peripheral: id)))
        // The central's supervision timer runs from the last event it heard (Vol 6, Part B, 4.5.2).
        let timesOut = start + Int64(timeout) * 10_000
        expect(.disconnected(peripheral: id, reason: .connectionTimeout, within: millisecondsUp(max(0, timesOut - max(back, completed)) + 1_000_000)))
        notes.append("\(timed.end): \(id) left with Instant Passed (0x28): it missed a connection update of the central's, which its capture does not show; the scenario's central asks for the parameters its link has (\(Self.describe(interval, latency, timeout))) while \(id) is out of range, so its supervision timeout after the instant is that link's")
    }

    /// `connection-update` with these parameters, and the expectation that the link has them.
    private mutating func updateParameters(_ p: Int, interval: UInt16, latency: UInt16, timeout: UInt16) {
        let id = peripherals[p].id
        add(.fault(.connectionUpdate(peripheral: id, ConnectionUpdateRequest(interval: interval, latency: latency, timeout: timeout))))
        expect(.fault(.connectionParameters(peripheral: id, interval: interval, latency: latency, timeout: timeout, within: Expectation.defaultWithin)))
    }

    /// When the connection's ATT transaction timed out (its last operation left unanswered), if it did.
    private func timedOut(_ c: Int) -> Int64? {
        var out: Int64?
        for (k, op) in importing.sessions[c].operations.enumerated() where outcome(c, k).timedOut != nil {
            out = max(out ?? 0, op.start.time + FlawPlan.transactionTimeout)
        }
        return out
    }

    func outcome(_ c: Int, _ k: Int) -> OperationOutcome {
        importing.flawPlan.outcomes[OperationKey(connection: c, operation: k)] ?? OperationOutcome()
    }

    /// Whether the operation ended in a failure its flaws reproduce (no value, no success to expect).
    func failed(_ o: OperationOutcome) -> Bool { o.rejected != nil || o.timedOut != nil || o.expectsError || o.cutShort }

    /// The expectations the peripheral's flaws call for right after the operation's step: the
    /// damaged answer, the transaction timeout, the ATT error, the slowest response's time.
    private func flawExpectations(_ o: OperationOutcome, error: ATTErrorCode?, _ p: Int) -> [Expectation] {
        let id = peripherals[p].id
        var out: [Expectation] = []
        if let bytes = o.rejected {
            out.append(.flaw(.malformedResponse(peripheral: id, opcode: ATTOpcode(bytes.first ?? 0), bytes: bytes, within: Expectation.defaultWithin)))
        }
        if let r = o.timedOut {
            // A request the format has no name for is any request.
            let named = ATTFlaw.requestNames.contains { $0.opcode == r }
            out.append(.flaw(.attTimeout(peripheral: id, request: named ? r : nil, within: Expectation.defaultWithin)))
        }
        if o.expectsError, let error { out.append(.error(error)) }
        if o.cutShort {
            // Right after the step, naming the peripheral (docs/scenarios.md, "When the link cuts a step short").
            out.append(.interruption(.linkLost(peripheral: id, reason: o.cutShortReason)))
        }
        if let (least, most) = o.responseTime {
            let atLeast = least - least % 1000
            out.append(.flaw(.responseTime(atLeast: atLeast >= 1000 ? millisecondsUp(atLeast) : nil, atMost: millisecondsUp(most))))
        }
        return out
    }

    mutating func expect(_ list: [Expectation]) { list.forEach { expect($0) } }

    /// Starts or stops peripherals' advertising so that the lab's match the capture's.
    private mutating func setAdvertising(_ wanted: [Int: Bool], at mark: CaptureMark) {
        let changes = wanted.filter { advertising[$0.key] != $0.value }.sorted { $0.key < $1.key }
        guard !changes.isEmpty else { return }
        let described = changes.map { "\(peripherals[$0.key].id) \($0.value ? "advertises" : "does not advertise")" }
        comment(mark, "the capture shows " + described.joined(separator: ", ") + " here")
        add(.peripheralActions(changes.map { PeripheralActions(peripheral: peripherals[$0.key].id, actions: [$0.value ? .startAdvertising : .stopAdvertising]) }))
        for (p, on) in changes { advertising[p] = on }
    }

    private mutating func scan(_ i: Int, _ timed: ImportedScenario.Timed) {
        let all = importing.transcript.reports.filter { $0.scan == i }
        let reports = all.filter { $0.mark <= timed.end }
        if reports.count < all.count, let first = all.first(where: { $0.mark > timed.end }) {
            let devices = Set(all.filter { $0.mark > timed.end }.map(\.address)).count
            notes.append("\(timed.end): the scan went on while the central connected (until \(importing.transcript.scans[i].end.map(\.description) ?? "the end of the capture")); its \(all.count - reports.count) advertising report\(all.count - reports.count == 1 ? "" : "s") from \(devices) device\(devices == 1 ? "" : "s") after the connection request (first at \(first.mark)) are not reproduced: the scenario's scan ends there")
        }
        var seen: [Int] = []
        for r in reports {
            if let p = peripherals.firstIndex(where: { $0.address == ImportedPeripheral.normalized(r.address) }), !seen.contains(p) { seen.append(p) }
        }
        let scan = importing.transcript.scans[i]
        let duty = Self.dutyCycle(interval: scan.interval, window: scan.window, defaultUnits: 16)
        var wanted: [Int: Bool] = [:]
        var missed: [Int] = []
        for p in peripherals.indices where !peripherals[p].reports.isEmpty || !peripherals[p].connections.isEmpty {
            if !seen.contains(p), duty.cycled, advertising[p] {
                // A scan that listens part of the time misses advertisers by their phase: not
                // hearing one says nothing of whether it still advertised.
                missed.append(p)
                continue
            }
            wanted[p] = seen.contains(p)
        }
        setAdvertising(wanted, at: timed.start)
        for p in missed {
            let every = peripherals[p].advertisingInterval.map { " (every \(millisecondsUpText($0 * 1000)))" } ?? ""
            comment(timed.start, "\(peripherals[p].id) advertised\(every) but this scan, listening \(duty.text), did not hear it: which events a duty-cycled scan hears depends on their phase, so nothing is expected of it")
        }
        if let note = duty.note { notes.append("\(timed.start): the scan's \(note)") }
        if scan.passive { notes.append("\(timed.start): the scan was passive (no scan requests); the lab's scans are active") }
        // Long enough to hear each device it found again: a scan that ended 2 ms after its first
        // report was lucky in its phase, and an advertiser sends one event per interval plus a
        // 0–10 ms advDelay (Core 5.4, Vol 6, Part B, 4.4.2.2.1).
        let hearing = seen.map { (peripherals[$0].advertisingInterval ?? 100) * 1000 + 10_000 }.max() ?? 0
        let duration = max(1_000, timed.end.time - timed.start.time, hearing)
        let began = scan.startedBeforeCapture ? "the capture starts during a scan (advertising reports before any LE Set Scan Enable)" : "scanning (LE Set Scan Enable)"
        comment(timed.start, "\(began) until \(timed.end); \(reports.count) advertising report\(reports.count == 1 ? "" : "s") from \(seen.count) device\(seen.count == 1 ? "" : "s")")
        add(.scan(ScanStep(services: filterServices, names: filterNames, duration: millisecondsUp(duration), timing: duty.timing)))
        let connectsNext = importing.transcript.connections.indices.filter { c in
            let at = importing.transcript.connections[c].requested ?? importing.transcript.connections[c].established
            return at >= timed.end && !importing.transcript.connections[c].startedBeforeCapture
        }.first.map { importing.owner[$0] }
        for p in seen {
            if peripherals[p].matches(services: filterServices, names: filterNames) {
                discoveredEver.insert(p)
                // A scan that listens only part of the time hears an advertiser in every window
                // only when one of its events (interval plus up to 10 ms of advDelay, Core 5.4,
                // Vol 6, Part B, 4.4.2.2.1) always falls in a window; otherwise hearing it, like
                // missing it, depends on the phase, and the replay's may differ. The peripheral
                // the central connects to next is expected all the same: the connection needs it.
                let every = peripherals[p].advertisingInterval.map { $0 * 1000 + 10_000 }
                let window = duty.timing.map { $0.window.nanoseconds / 1000 }
                if duty.cycled, p != connectsNext, let window, (every ?? Int64.max) > window {
                    comment(timed.start, "\(peripherals[p].id) was heard, but this scan listens \(duty.text) and which advertising events it hears depends on their phase: nothing is expected of it")
                    continue
                }
                expect(.discovered(peripherals[p].id))
            } else {
                expect(.notDiscovered(peripherals[p].id))
            }
        }
    }

    private mutating func connect(_ c: Int, _ timed: ImportedScenario.Timed) {
        let p = importing.owner[c]
        if discoveredEver.contains(p) && !advertising[p] {
            // It connected again, so it advertised again (after an earlier connection, say).
            setAdvertising([p: true], at: timed.start)
        } else if !discoveredEver.contains(p) {
            // The lab connects only to what a scan found: scan for it first.
            setAdvertising([p: true], at: timed.start)
            comment(timed.start, "the capture has no scan that found \(peripherals[p].id) before this connection; scanning for it")
            add(.scan(ScanStep(duration: .seconds(1))))
            discoveredEver.insert(p)
        }
        let connection = importing.transcript.connections[c]
        let parameters = importing.connectParameters(c)
        if parameters == nil, !connection.startedBeforeCapture, (connection.interval, connection.latency, connection.supervisionTimeout) != (24, 0, 500) {
            notes.append("\(connection.established): the connection to \(peripherals[p].id) had interval \(FlawPlan.exact(microseconds: Int64(connection.interval) * 1250)), latency \(connection.latency), supervision timeout \(FlawPlan.exact(microseconds: Int64(connection.supervisionTimeout) * 10_000)); the lab's central connects with 30ms, 0 and 5s, so the replay's link times follow those")
        }
        let took = connection.established.time - (connection.requested?.time ?? connection.established.time)
        let within = max(1, (took * 2 + 999_999) / 1_000_000)
        if connection.startedBeforeCapture {
            comment(timed.start, "the capture starts inside the connection on handle 0x\(hex(connection.handle)) (its first ATT PDU); the scenario connects first")
            notes.append("\(connection.established): the capture starts inside the connection on handle 0x\(hex(connection.handle)): the peer's address (the scenario gives it \(connection.peer.address)), the connection's parameters and what the app did before are not in it")
        } else if connection.capturedOnPeripheral {
            comment(timed.start, "the central \(connection.peer.address) connected (LE Connection Complete, handle 0x\(hex(connection.handle)))")
        } else {
            comment(timed.start, "connecting to \(connection.peer.address); LE Connection Complete, handle 0x\(hex(connection.handle)), at \(connection.established)")
        }
        // A new link starts with every CCCD at 0x0000 (they are per central, Core Vol 3 Part G 3.3.3.3).
        for s in peripherals[p].database.services {
            for ch in s.characteristics {
                for d in ch.descriptors where d.uuid == .clientCharacteristicConfiguration { values[p][d.handle] = nil }
            }
        }
        let initiator = Self.dutyCycle(interval: connection.scanInterval, window: connection.scanWindow, defaultUnits: 96)
        if let note = initiator.note { notes.append("\(timed.start): the initiator's \(note)") }
        let session = importing.sessions[c]
        if session.usesCachedHandles {
            comment(timed.start, "the app used \(peripherals[p].id)'s handles before discovering them (a GATT cache): the central connects with the database as known (gatt-cache: true)")
        }
        add(.connect(peripheral: peripherals[p].id, within: .seconds(within)), connectScan: initiator.timing)
        if case let .step(d)? = lines.last {
            var draft = d
            draft.gattCache = session.usesCachedHandles
            draft.connectParameters = parameters
            lines[lines.count - 1] = .step(draft)
        }
        expect(.connected(peripherals[p].id))
        resume(c, p, at: timed.start)
        advertising[p] = false   // a legacy advertiser stops once connected (Core 5.4, Vol 6, Part B, 4.4.2)
    }

    /// What the app had done on connection `c` before the capture shows it (`ImportedScenario.setup`):
    /// an MTU exchange, subscriptions.
    private mutating func resume(_ c: Int, _ p: Int, at mark: CaptureMark) {
        let id = peripherals[p].id
        let setup = importing.setup(of: c)
        if let mtu = setup.mtu {
            let why = importing.transcript.connections[c].startedBeforeCapture ? "the capture starts inside this connection" : "the capture shows no Exchange MTU on this connection"
            comment(mark, "\(why), and it carries ATT PDUs of up to \(mtu) octets: its ATT_MTU was at least \(mtu); the replay exchanges that")
            add(.exchangeMTU(peripheral: id, mtu: mtu))
        }
        for s in setup.subscriptions {
            guard let ref = peripherals[p].reference(s.handle) else { continue }
            let what = s.configuration == .indication ? "indications" : "notifications"
            comment(mark, "\(what) of \(ref) arrive without the capture showing the app subscribing (it did before the capture started): the replay subscribes")
            add(.subscribe(peripheral: id, characteristic: ref), subscription: s.configuration)
        }
    }

    /// A scan's or an initiator's duty cycle (LE_Scan_Interval, LE_Scan_Window in 0.625 ms units,
    /// Core Vol 4 Part E 7.8.10, 7.8.12) as the step's keys, when it differs from the lab's default
    /// (`defaultUnits` for both) and the format can hold it (4 to 0x4000 units, the window no
    /// longer than the interval; else a note).
    static func dutyCycle(interval: UInt16?, window: UInt16?, defaultUnits: UInt16)
        -> (timing: ScanTiming?, cycled: Bool, text: String, note: String?) {
        guard let interval, let window else { return (nil, false, "", nil) }
        let timing = ScanTiming(interval: .microseconds(Int64(interval) * 625), window: .microseconds(Int64(window) * 625))
        let text = "\(ScalarText.duration(timing.window)) every \(ScalarText.duration(timing.interval))"
        guard (4...0x4000).contains(interval), (4...0x4000).contains(window), window <= interval else {
            return (nil, false, text, "interval and window (\(text)) are outside what LE Set Scan Parameters allows; the lab listens all the time")
        }
        return ((interval, window) == (defaultUnits, defaultUnits) ? nil : timing, window < interval, text, nil)
    }

    /// A connection attempt that gave no connection. One the central's host gave up on (LE Create
    /// Connection Cancel, then LE Connection Complete with Unknown Connection Identifier, Core Vol
    /// 4 Part E 7.8.13) is a `connect` with that timeout and `connect-failed: timeout`: the device
    /// was not connectable then, so it stops advertising first. Other failures are listed.
    private mutating func failedConnect(_ k: Int, _ timed: ImportedScenario.Timed) {
        let f = importing.transcript.failedConnections[k]
        let status = "\(f.status.name) (0x\(hex8(f.status.rawValue)))"
        guard let p = importing.failedOwner[k] else {
            let why = importing.peripheralSide ? "the capturing host also tried to be a central" : "it named no address (the Filter Accept List)"
            comment(timed.start, "a connection attempt that failed with \(status); not reproduced")
            notes.append("\(timed.start): a connection attempt failed with \(status), and \(why); not reproduced")
            return
        }
        let id = peripherals[p].id
        guard f.status == .unknownConnectionIdentifier, let cancelled = f.cancelled else {
            comment(timed.start, "connecting to \(id) failed with \(status) at \(f.ended); not reproduced")
            notes.append("\(timed.start): connecting to \(id) failed with \(status); the lab's central gives up a connect only at its timeout, so this is not reproduced")
            return
        }
        let connectable = peripherals[p].advertisement?.connectable ?? (peripherals[p].scanResponse != nil || !peripherals[p].connections.isEmpty)
        if connectable { setAdvertising([p: false], at: timed.start) }
        comment(timed.start, "connecting to \(peripherals[p].address.address); the central gave up at \(cancelled) (LE Create Connection Cancel), no connection")
        let initiator = Self.dutyCycle(interval: f.scanInterval, window: f.scanWindow, defaultUnits: 96)
        if let note = initiator.note { notes.append("\(timed.start): the initiator's \(note)") }
        add(.connect(peripheral: id, within: millisecondsUp(cancelled.time - f.requested.time)), connectScan: initiator.timing)
        expect(.interruption(.connectFailed(peripheral: id, reason: .timeout)))
    }

    /// HCI Read RSSI on a central's link: `expect: { rssi: { from: link } }` reads it again, around
    /// what the capture read and the peripheral's `rssi:` (the sim adds ±2 dB of noise); RSSI
    /// values are the sim's, so the scenario then needs it.
    private mutating func rssiRead(_ c: Int, _ k: Int, _ timed: ImportedScenario.Timed) {
        let p = importing.owner[c]
        let id = peripherals[p].id
        let read = Int(importing.transcript.connections[c].rssiReads[k].rssi)
        let declared = peripherals[p].rssi ?? -60
        comment(timed.start, "HCI Read RSSI on the link to \(id): \(read) dBm")
        guard abs(read - declared) <= 10 else {
            comment("the scenario's \(id) is at \(declared) dBm (its advertising reports'); not checked")
            notes.append("\(timed.start): the link's RSSI read \(read) dBm, more than 10 dB from \(id)'s advertising reports (\(declared) dBm), which give the scenario's one RSSI")
            return
        }
        requiresSim = true
        let low = max(-127, min(read, declared) - 2), high = min(20, max(read, declared) + 2)
        expect(.rssi(RSSIExpectation(peripheral: id, atLeast: Int8(low), atMost: Int8(high), source: .link)))
    }

    private func isGAPOrGATT(_ p: Int, _ handle: UInt16) -> (BluetoothUUID, BluetoothUUID)? {
        guard let (s, c) = peripherals[p].database.characteristic(valueHandle: handle),
              s.uuid == BluetoothUUID(uuid16: 0x1800) || s.uuid == BluetoothUUID(uuid16: 0x1801) else { return nil }
        return (s.uuid, c.uuid)
    }

    private mutating func operation(_ c: Int, _ k: Int, _ op: GATTOperation) {
        let p = importing.owner[c]
        let id = peripherals[p].id
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
            add(.fault(.link(peripheral: id, LinkFaults(drops: [ATTDrop(from: .peripheral, index: n)]))))
            requiresSim = true
        }
        switch op.kind {
        case let .discover(all, services):
            comment(op.start, "\(all ? "discovery of all primary services" : "discovery of services \(services.map(\.description).joined(separator: ", "))") until \(op.end)")
            add(.discover(peripheral: id, services: all ? nil : services))
            expect(flawed)
            guard !failed(o), op.error == nil else { return }
            // What this discovery found, and (discovering all) what it missed of what the peripheral had then.
            let declared = peripherals[p].declaredServices.map(\.uuid)
            let found = declared.filter(op.found.contains)
            if !found.isEmpty {
                expect(.services(found, peripheral: id))
            }
            var present: [BluetoothUUID] = []
            // A service rebuilt from the traffic was not missed by the discovery: the capture lost it.
            for s in importing.servicesPresent(p, at: op.start) where declared.contains(s.uuid) && !present.contains(s.uuid) && !s.inferred { present.append(s.uuid) }
            let missed = present.filter { !op.found.contains($0) }
            if all, !missed.isEmpty {
                expect(.flaw(.notServices(missed, peripheral: id)))
            }
        case let .mtu(client, server):
            let size = min(517, max(23, Int(client)))
            comment(op.start, "Exchange MTU: the central offered \(client)\(server.map { ", the peripheral \($0)" } ?? "")")
            add(.exchangeMTU(peripheral: id, mtu: size))
            expect(flawed)
            if !failed(o), op.error == nil, let mtu = peripherals[p].mtu {
                expect(.fault(.mtu(peripheral: id, min(size, mtu))))
            }
        case let .read(handle, value):
            read(p, handle: handle, value: value, op: op, outcome: o, flawed: flawed)
        case let .write(handle, value, command):
            if !command, !peripherals[p].isValueHandle(handle), let place = peripherals[p].descriptorPlace(handle) {
                return writeDescriptor(p, place, handle: handle, value: value, op: op, outcome: o, flawed: flawed)
            }
            guard let ref = peripherals[p].reference(handle), let (_, ch) = peripherals[p].database.characteristic(valueHandle: handle) else {
                comment(op.start, "a write to handle 0x\(hex(handle)), which discovery did not find (\(ScalarText.hex(value))); not reproduced")
                return
            }
            comment(op.start, "ATT \(command ? "Write Command (0x52)" : "Write Request (0x12)") to \(ref) at handle 0x\(hex(handle))")
            add(.write(WriteStep(peripheral: id, characteristic: ref, value: value, type: command ? .command : .request)))
            expect(flawed)
            if failed(o) {
                // Whether the request crossed before the link ended is not in the capture.
                if o.cutShort { return }
                // The request reached the peripheral, whose flaw answered it instead of its server.
                expect(.writeSentAs(.request))
                if !o.expectsError {
                    expect(.peripheralReceived(PeripheralReceivedExpectation(peripheral: id, characteristic: ref, value: value, via: .request)))
                }
                return
            }
            if let error = op.error {
                if reproducibleWriteError(p, handle: handle, error: error, properties: ch.properties) {
                    expect(.error(error))
                } else {
                    notes.append("\(op.start): the write to \(ref) got ATT error \(error.name), which the importer cannot reproduce")
                }
            }
            expect(.writeSentAs(command ? .command : .request))
            if op.error == nil {
                expect(.peripheralReceived(PeripheralReceivedExpectation(peripheral: id, characteristic: ref, value: value, via: command ? .command : .request)))
                if !command || ch.properties & 0x04 != 0 { values[p][handle] = value }
            }
        case let .configure(handle, value):
            guard let place = peripherals[p].descriptorPlace(handle) else {
                comment(op.start, "a write of \(ScalarText.hex(value)) to the CCCD at handle 0x\(hex(handle)), which the scenario's characteristic does not have; not reproduced")
                notes.append("\(op.start): a CCCD write at handle 0x\(hex(handle)) (\(ScalarText.hex(value))) on a characteristic the scenario cannot name, or without notify or indicate (on the connection to \(id))")
                return
            }
            configure(p, place, handle: handle, value: value, op: op, outcome: o, flawed: flawed)
        case let .unsupported(text):
            comment(op.start, "\(text): not reproduced")
            notes.append("\(op.start): \(text) (on the connection to \(id))")
        case .discoverMore:
            break
        }
    }

    private func reproducibleWriteError(_ p: Int, handle: UInt16, error: ATTErrorCode, properties: UInt8) -> Bool {
        if error == .writeNotPermitted && properties & 0x08 == 0 { return true }
        if case .respondError? = peripherals[p].onWrite[handle]?.first { return true }
        return false
    }

    private mutating func read(_ p: Int, handle: UInt16, value: [UInt8], op: GATTOperation, outcome o: OperationOutcome, flawed: [Expectation]) {
        let id = peripherals[p].id
        if !peripherals[p].isValueHandle(handle), let place = peripherals[p].descriptorPlace(handle) {
            return readDescriptor(p, place, handle: handle, value: value, op: op, outcome: o, flawed: flawed)
        }
        guard let ref = peripherals[p].reference(handle), let (_, ch) = peripherals[p].database.characteristic(valueHandle: handle) else {
            comment(op.start, "a read of handle 0x\(hex(handle)), which discovery did not find; not reproduced")
            return
        }
        let step = CentralAction.read(peripheral: id, characteristic: ref)
        if failed(o) {
            let what = o.rejected != nil ? "an answer the central rejects" : o.timedOut != nil ? "never answered"
                : o.cutShort ? "never answered before the link ended" : "Error Response \(op.error?.name ?? "?")"
            comment(op.start, "ATT Read Request for \(ref) at handle 0x\(hex(handle)): \(what)")
            add(step)
            expect(flawed)
            return
        }
        defer { expect(flawed) }
        if let (service, uuid) = isGAPOrGATT(p, handle) {
            comment(op.start, "ATT Read Request for \(ref) (the \(service == BluetoothUUID(uuid16: 0x1800) ? "GAP" : "GATT") service)")
            add(step)
            if uuid == BluetoothUUID(uuid16: 0x2A00), op.error == nil {
                peripherals[p].deviceName = peripherals[p].deviceName ?? String(decoding: value, as: UTF8.self)
                expect(.value(value))
            } else {
                comment("the lab's peripheral serves its own \(ref); the capture read \(ScalarText.hex(value))")
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
                    peripherals[p].onRead[handle] = [.respondError(error)]
                    peripherals[p].triggerNotes[handle, default: []].append("every read got ATT error \(error.name) (first at \(op.start))")
                }
            }
            comment(op.start, "ATT Read Request for \(ref): Error Response \(error.name)")
            add(step)
            expect(.error(error))
            return
        }
        guard value.count <= 512 else {
            // No attribute holds more (Core Vol 3 Part F 3.2.9): the lab's value cannot be this one.
            comment(op.start, "ATT Read Request for \(ref): the read gave \(value.count) octets, more than an attribute holds (512); not checked")
            add(step)
            notes.append("\(op.start): the read of \(ref) gave \(value.count) octets, more than an attribute holds (512, Core Vol 3 Part F 3.2.9); the scenario neither declares nor expects it")
            return
        }
        if let current = values[p][handle] {
            if current != value {
                comment(op.start, "the value changed without a write or a notification the capture shows")
                add(.peripheralActions([PeripheralActions(peripheral: id, actions: [.setValue(ref, .bytes(value))])]))
            }
        } else if peripherals[p].initialValues[handle] == nil {
            peripherals[p].initialValues[handle] = value
        } else {
            add(.peripheralActions([PeripheralActions(peripheral: id, actions: [.setValue(ref, .bytes(value))])]))
        }
        values[p][handle] = value
        comment(op.start, "ATT Read Request for \(ref) at handle 0x\(hex(handle)); \(value.count) octet\(value.count == 1 ? "" : "s") by \(op.end)")
        add(step)
        expect(.value(value))
    }

    // MARK: Descriptors

    /// A Write Request to a CCCD (Core Vol 3 Part G 3.3.3.3, 4.10): `unsubscribe` for 0x0000,
    /// `subscribe` (with the `type` that writes exactly the capture's bits) for what the
    /// characteristic offers, and for any other value the descriptor write itself, which sends
    /// exactly those octets. A value the lab's server refuses comes here only with the error the
    /// capture shows (`ImportedScenario.omission` leaves out one the device accepted).
    private mutating func configure(_ p: Int, _ place: ImportedPeripheral.DescriptorPlace, handle: UInt16, value: [UInt8],
                                    op: GATTOperation, outcome o: OperationOutcome, flawed: [Expectation]) {
        let id = peripherals[p].id
        let ref = place.ref
        let properties = place.characteristic.properties
        comment(op.start, "Write Request to \(ref)'s CCCD (handle 0x\(hex(handle))): \(ScalarText.hex(value))")
        let natural = op.error != nil && !failed(o) && ImportedPeripheral.configurationError(value, properties: properties) == op.error
        if op.error != nil, !failed(o), !natural {
            comment(op.start, "the write got ATT error \(op.error!.name), which the lab's server does not give; not reproduced")
            notes.append("\(op.start): the CCCD write for \(ref) got ATT error \(op.error!.name); not reproduced")
            return
        }
        let notify = properties & 0x10 != 0, indicate = properties & 0x20 != 0
        let single = value.count == 2 && value[1] == 0 ? value[0] : nil
        switch single {
        case 0x00?:
            add(.unsubscribe(peripheral: id, characteristic: ref))
        case 0x01? where notify, 0x02? where indicate && !notify:
            // What `subscribe` writes untold: notifications, or indications when only those are offered.
            add(.subscribe(peripheral: id, characteristic: ref))
        case 0x02? where indicate, 0x03? where indicate && notify:
            add(.subscribe(peripheral: id, characteristic: ref), subscription: single == 0x03 ? [.notification, .indication] : .indication)
        default:
            add(.writeDescriptor(peripheral: id, descriptor: DescriptorRef(.clientCharacteristicConfiguration, of: ref), value: value))
        }
        expect(flawed)
        if natural, let error = op.error { expect(.error(error)) }
        if op.error == nil, !failed(o) { values[p][handle] = value }
    }

    /// A read of a descriptor the scenario's characteristic has: the step, and the value it
    /// expects when the lab's descriptor holds what the capture read.
    private mutating func readDescriptor(_ p: Int, _ place: ImportedPeripheral.DescriptorPlace, handle: UInt16, value: [UInt8],
                                         op: GATTOperation, outcome o: OperationOutcome, flawed: [Expectation]) {
        let ref = place.ref
        comment(op.start, "ATT Read Request for \(ref)'s descriptor \(place.uuid) at handle 0x\(hex(handle))")
        if let error = op.error, !failed(o) {
            comment(op.start, "the read got ATT error \(error.name); not reproduced")
            notes.append("\(op.start): a read of \(ref)'s descriptor \(place.uuid) got ATT error \(error.name), which the importer cannot reproduce")
            return
        }
        add(.readDescriptor(peripheral: peripherals[p].id, descriptor: DescriptorRef(place.uuid, of: ref)))
        if failed(o) {
            expect(flawed)
            return
        }
        defer { expect(flawed) }
        let current = values[p][handle] ?? peripherals[p].initialDescriptorValue(place, handle: handle)
        guard current == value else {
            comment("the capture read \(ScalarText.hex(value)); the lab's descriptor holds \(ScalarText.hex(current)) here, so the value is not checked")
            notes.append("\(op.start): a read of \(ref)'s descriptor \(place.uuid) gave \(ScalarText.hex(value)), which the scenario's descriptor does not hold there")
            return
        }
        values[p][handle] = value
        expect(.value(value))
    }

    /// A Write Request to a descriptor other than the CCCD (Core Vol 3 Part G 4.12.3). One the
    /// device accepted and the lab's server refuses has no step (`ImportedScenario.omission`).
    private mutating func writeDescriptor(_ p: Int, _ place: ImportedPeripheral.DescriptorPlace, handle: UInt16, value: [UInt8],
                                          op: GATTOperation, outcome o: OperationOutcome, flawed: [Expectation]) {
        let ref = place.ref
        comment(op.start, "ATT Write Request to \(ref)'s descriptor \(place.uuid) at handle 0x\(hex(handle))")
        add(.writeDescriptor(peripheral: peripherals[p].id, descriptor: DescriptorRef(place.uuid, of: ref), value: value))
        expect(flawed)
        if failed(o) { return }
        if let error = op.error {
            if peripherals[p].labWriteError(place, handle: handle, value: value) == error {
                expect(.error(error))
            } else {
                notes.append("\(op.start): the write of \(ref)'s descriptor \(place.uuid) got ATT error \(error.name), which the importer cannot reproduce")
            }
            return
        }
        values[p][handle] = value
    }

    private func readErrors(_ p: Int, handle: UInt16) -> [ATTErrorCode?] {
        var out: [ATTErrorCode?] = []
        for c in peripherals[p].connections {
            for op in importing.sessions[c].operations {
                if case let .read(h, _) = op.kind, h == handle { out.append(op.error) }
            }
        }
        return out
    }

    func appendDelay(_ list: inout [PeripheralAction], from: Int64, to: Int64) {
        let gap = to - from
        if gap >= 5_000 { list.append(.delay(millisecondsUp(gap - 999))) }
    }

    /// The reasons HCI Disconnect allows (Core 5.4, Vol 4, Part E, 7.1.6), which a peripheral's
    /// `disconnect` action can give.
    static let peripheralReasons: Set<UInt8> = [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B]
}

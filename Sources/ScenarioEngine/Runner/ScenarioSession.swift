import ATT
import BLELab
import BLERuntime
import BLEWire
import Controller
import GAP
import GATT
import HCI
import ScenarioFormat
import SMP
import Transport

/// Why a step stopped the scenario (internal: becomes a `ScenarioFailure`).
struct StepFailure: Error {
    var kind: ScenarioFailure.Kind
    var expected: String
    var seen: String
}

/// One run of one scenario: its lab, its peripherals, the scripted central, and what has been
/// observed so far. Steps run in order on the lab's virtual time; every wait is bounded by the
/// step's own limit and by the scenario's `timeout`.
final class ScenarioSession {
    let scenario: Scenario
    let backend: ScenarioBackend
    let seed: UInt64
    let options: RunOptions
    /// Seats played by another stack (ScenarioRoles.swift).
    let roles: ScenarioRoles

    var lab: Lab!
    /// `RunOptions.capturesAir`: the sniffer on the sim's air.
    var airRecorder: AirRecorder?
    /// Whoever plays the central: BLELab's own host, or the stack `roles` names.
    var central: CentralSeat!
    /// The central's lab device, when BLELab's host plays it (its HCI is in the lab).
    var centralDevice: LabDevice! { central?.device }
    /// Every peripheral's seat, by id: BLELab's simulated peripheral or another stack's.
    private(set) var peripheralSeats: [String: PeripheralSeat] = [:]
    /// The simulated ones, for what only the simulator offers (kept with `peripheralSeats`, not
    /// derived on each use: steps look peripherals up one at a time, and a crowd has thousands).
    private(set) var peripherals: [String: SimulatedPeripheral] = [:]
    /// The scenario's id of the peripheral at each address, first in the scenario's order
    /// (`peripheralID(at:)`); rebuilt when a look-up misses, since an external peripheral's
    /// address becomes known only once its stack serves it.
    var idsByAddress: [LEAddress: String] = [:]
    /// The peripherals with `privacy:`: their address changes (ScenarioSession+Privacy.swift).
    var privatePeripherals: [String] = []
    /// Where the central knows each peripheral with `privacy:` to be: the address its latest scan
    /// heard it at, or the one it connected to (`address(of:)`).
    var centralAddresses: [String: LEAddress] = [:]
    /// Every address the central's scans heard each peripheral at, in the order first heard.
    var addressesSeen: [String: [LEAddress]] = [:]
    let observations: LinkObservations
    /// Judges the `expect:` steps (ExpectationJudge.swift).
    lazy var judge = ExpectationJudge(session: self)
    /// Runs the steps (StepRunner.swift).
    lazy var steps = StepRunner(session: self)
    /// The simulator's faults (FaultSteps.swift).
    lazy var faults = FaultSteps(session: self)
    /// The central's pairings and encryptions (SecurityAccount.swift).
    let security = SecurityAccount()
    /// What BLELab's host in the central's seat met on its links to flawed peripherals.
    var flawObservations: FlawObservations { (central as? HostCentral)?.flaws ?? FlawObservations() }

    /// The scenario's end, when it has a `timeout`.
    var deadline: Instant?
    /// The step running now.
    var current: CentralStep?
    var note: String?

    // What the central has seen.
    /// Reports of the most recent scan, by peripheral id (nil before any scan).
    var lastScan: (step: Int, found: [String: SeatScanReport], others: Int)?
    /// Peripherals any scan found: those `connect` may aim at.
    var discovered: Set<String> = []
    /// Peripherals the central connected to at some point.
    var everConnected: Set<String> = []
    /// The latest GAP connection to each peripheral, when BLELab's host plays the central (kept
    /// after it ends, for its reason).
    var connections: [String: Connection] = [:]
    /// When each peripheral's latest connection ended.
    var linkEnded: [String: Instant] = [:]
    /// The latest `connect` step's outcome (`expect: { connect-failed }`).
    var lastConnect: ConnectAttempt?
    var lastRead: (step: Int, value: [UInt8])?
    var lastOperation: (step: CentralStep, error: SeatError?)?
    /// The last write: its step, and where the accounts of writes stood when it started.
    var lastWrite: WriteMark? {
        didSet {
            for mark in [oldValue, lastWrite] {
                guard let mark, let handle = mark.handle else { continue }
                keepAskedWrites(LinkObservations.Key(peripheral: mark.peripheral, handle: handle))
            }
        }
    }
    /// Notifications already accounted for, per (peripheral, value handle).
    var notificationMarks: [LinkObservations.Key: Int] = [:] {
        didSet {
            markSteps(from: oldValue, to: notificationMarks, into: &notificationMarkSteps)
            for (key, mark) in notificationMarks where oldValue[key] != mark { observations.forgetArrivals(key, before: mark) }
        }
    }
    var writeMarks: [LinkObservations.Key: Int] = [:] {
        didSet {
            markSteps(from: oldValue, to: writeMarks, into: &writeMarkSteps)
            for (key, mark) in writeMarks where oldValue[key] != mark { keepAskedWrites(key) }
        }
    }
    /// The step that last set each mark, so that a failure can say "since step N" rather than
    /// "none arrived" when an earlier step accounted for what did.
    var notificationMarkSteps: [LinkObservations.Key: Int] = [:]
    var writeMarkSteps: [LinkObservations.Key: Int] = [:]

    var timeline: [TimelineEvent] = []
    /// The timeline in a file instead (`RunOptions.timelineDirectory`).
    var timelineSpool: TimelineSpool?
    /// Why the timeline could not be spooled.
    var timelineFailure: String?
    /// Set when the result's timeline is taken. What the end of the run does after that (seats
    /// ending, real controllers' advertising stopped, a peripheral's `notify-every` ticking
    /// meanwhile on a real-time tier) is in no timeline, as it is in no capture.
    var timelineClosed = false
    var stepRecords: [StepRecord] = []
    /// Every protocol violation a lab device's host reported, of every layer, in words
    /// ("hm10: att/pipelined-request: …"), for the notes of the steps they happened in;
    /// `violation` is its detail, which a note that already tells it contains.
    var violationNotes: [(text: String, violation: String)] = []
    /// The captures streamed to files (`RunOptions.captureFile`), in the order of `captures`.
    var captureStreams: [BTSnoopStreamWriter] = []
    /// Streamed captures that could not be opened or written.
    var captureFailures: [String] = []
    /// The reason of the latest HCI Disconnect each simulated peripheral's host sent.
    var lastDisconnectAsked: [String: HCIStatus] = [:]

    /// Longest a GATT procedure may take: past ATT's 30 s transaction timeout (Vol 3 Part F 3.3.3).
    static let operationLimit = TimeSpan.seconds(35)

    init(scenario: Scenario, backend: ScenarioBackend, seed: UInt64, options: RunOptions, roles: ScenarioRoles = ScenarioRoles()) {
        self.scenario = scenario
        self.backend = backend
        self.roles = roles
        self.seed = seed
        self.options = options
        if options.recordsTimeline, let directory = options.timelineDirectory {
            do { timelineSpool = try TimelineSpool(directory: directory) } catch { timelineFailure = "\(error)" }
        }
        let longestInOrder = scenario.steps.map { step -> Int in
            if case let .expect(.notification(e)) = step.action { return e.inOrder?.count ?? 0 }
            return 0
        }.max() ?? 0
        observations = LinkObservations(keptArrivals: max(ArrivalLog.defaultKept, longestInOrder + 1), writeQuestions: WriteQuestions(scenario))
    }

    var now: Instant { lab?.loop.now ?? .zero }

    /// Seats `seat` as peripheral `id`.
    func seat(_ seat: PeripheralSeat, as id: String) {
        peripheralSeats[id] = seat
        peripherals[id] = seat.simulated
        idsByAddress.removeAll(keepingCapacity: true)
    }

    /// Tells the observations which writes of `key` can still be asked about: from the mark of a
    /// peripheral with `peripheral-received` expectations, and from the latest write step's count
    /// when a `write-sent-as` may read it on the peripheral's side.
    private func keepAskedWrites(_ key: LinkObservations.Key) {
        let questions = observations.writeQuestions
        var floor: Int? = questions.filters[key.peripheral] == nil ? nil : writeMarks[key] ?? 0
        if questions.asksMethod, let write = lastWrite, write.peripheral == key.peripheral, write.handle == key.handle {
            floor = min(floor ?? write.received, write.received)
        }
        observations.keepWrites(key, from: floor)
    }

    private func markSteps(from old: [LinkObservations.Key: Int], to new: [LinkObservations.Key: Int], into steps: inout [LinkObservations.Key: Int]) {
        guard let step = current?.index else { return }
        for (key, value) in new where old[key] != value { steps[key] = step }
    }

    // MARK: Running

    func run() -> ScenarioResult {
        var outcome = ScenarioResult.Outcome.passed
        do {
            try setUp()
            if let lost = controllerLost() { throw lost }
        } catch {
            let failure = controllerLost() ?? (error as? StepFailure) ?? StepFailure(kind: .setup, expected: "the lab to start", seen: "\(error)")
            outcome = .failed(makeFailure(failure, step: nil))
        }
        if case .passed = outcome {
            for (position, step) in scenario.steps.enumerated() {
                let start = now
                current = step
                note = nil
                let violationsBefore = violationNotes.count
                record(TimelineEvent(time: start, device: "central", kind: .stepStarted, text: step.text, step: step.index))
                do {
                    try steps.execute(step, position: position)
                    if let lost = controllerLost() { throw lost }
                    note = withViolations(note, since: violationsBefore)
                    stepRecords.append(StepRecord(step: StepReference(step), start: start, end: now, outcome: .passed, note: note))
                    record(TimelineEvent(time: now, device: "central", kind: .stepEnded, text: "passed" + (note.map { ": \($0)" } ?? ""), step: step.index))
                } catch {
                    // A lost controller explains whatever the step saw (a dropped link, a timeout).
                    let failure = controllerLost() ?? (error as? StepFailure)
                        ?? StepFailure(kind: .operation, expected: "the step to run", seen: "\(error)")
                    let report = makeFailure(failure, step: step)
                    stepRecords.append(StepRecord(step: StepReference(step), start: start, end: now, outcome: .failed, note: report.seen))
                    record(TimelineEvent(time: now, device: "central", kind: .stepEnded, text: "failed: expected \(report.expected); seen \(report.seen)", step: step.index))
                    for rest in scenario.steps[(position + 1)...] {
                        stepRecords.append(StepRecord(step: StepReference(rest), start: now, end: now, outcome: .notRun, note: nil))
                    }
                    outcome = .failed(report)
                    break
                }
            }
            // A pairing the peripheral started that failed, and that no expectation took up.
            if case .passed = outcome, let failed = security.unjudgedFailure(), let last = scenario.steps.last {
                outcome = .failed(makeFailure(failed, step: last))
            }
        }
        current = nil
        RealControllers.settleFinalInstant(lab: lab, now: now, central: centralDevice, peripherals: peripherals)
        var captures: [DeviceCapture] = []
        // Streamed captures end where kept ones are taken: what the end of the run sends after
        // (stopping real controllers' advertising) is in neither.
        for stream in captureStreams {
            do { try stream.close() } catch { captureFailures.append("\(error)") }
        }
        if options.keepsCaptures, options.captureFile == nil, let lab {
            let ordered = scenario.peripherals.compactMap { peripherals[$0.id]?.device } + (centralDevice.map { [$0] } ?? [])
            let inLab = Set(lab.devices.map(ObjectIdentifier.init))
            captures = ordered.filter { inLab.contains(ObjectIdentifier($0)) }.map { DeviceCapture(device: $0.name, packets: $0.log.packets) }
        }
        let ordered = timeline.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        timelineClosed = true
        timelineSpool?.finish()
        endRoles()
        RealControllers.quiet(lab: lab, peripherals: peripherals)
        lab?.shutDown()
        var result = ScenarioResult(name: scenario.name, file: scenario.file, tags: scenario.tags, seed: seed, tier: backend.tier,
                                    outcome: outcome, virtualTime: now - .zero, steps: stepRecords, timeline: ordered, captures: captures)
        result.airCapture = airRecorder?.pcap()
        result.captureFailures = captureFailures
        result.timelineSpool = timelineSpool
        if let failure = timelineFailure ?? timelineSpool?.failure { result.timelineFailures.append(failure) }
        return result
    }

    private func setUp() throws {
        let lab = try backend.makeLab(seed: seed)
        self.lab = lab
        if options.capturesAir, let air = lab.air {
            let recorder = AirRecorder(seed: seed)
            air.observer = recorder
            airRecorder = recorder
        }
        if let timeout = scenario.timeout { deadline = lab.loop.now + timeout }
        let servedElsewhere = roles.peripheral?.served(in: scenario)?.id
        for (k, declared) in scenario.peripherals.enumerated() {
            if declared.id == servedElsewhere, let provider = roles.peripheral {
                try addExternalPeripheral(declared, provider: provider)
                continue
            }
            var spec = declared
            if let advertising = spec.advertising, backend.advertisingIntervalStagger > .zero {
                spec.advertising?.interval = advertising.interval + backend.advertisingIntervalStagger * Int64(k)
            }
            let peripheral: SimulatedPeripheral
            do { peripheral = try lab.addPeripheral(spec) } catch {
                throw StepFailure(kind: .setup, expected: "peripheral \(spec.id)'s GATT database to be built", seen: "\(error)")
            }
            seat(peripheral, as: spec.id)
            if spec.privacy != nil { privatePeripherals.append(spec.id) }
            keepBounded(peripheral.device, central: false)
            peripheral.keepsSentValues = false
            let id = spec.id
            peripheral.device.log.observe { [weak self] packet in
                // HCI_Disconnect: 01 06 04 03 handle(2) reason (centralSideReason).
                let f = packet.frame
                guard packet.direction == .hostToController, f.count == 7, f[0] == 0x01, f[1] == 0x06, f[2] == 0x04, f[3] == 0x03 else { return }
                self?.lastDisconnectAsked[id] = HCIStatus(rawValue: f[6])
            }
            observations.watchPeripheral(spec.id, traffic: peripheral.device.traffic)
            watchViolations(of: peripheral.host, device: spec.id)
            // Another stack in the central's seat: its pairings are judged on this peripheral's
            // side of the link, which BLELab's host plays.
            if roles.central != nil {
                security.watch(peripheral.host) { _ in id }
                if spec.security == nil {
                    // No Security Manager: the link answers SMP, no pairing reports it. A Pairing
                    // Failed on its HCI (H4 ACL, L2CAP CID 0x0006, code 0x05) is the outcome.
                    peripheral.device.log.observe { [weak self] packet in
                        let f = packet.frame
                        guard f.count == 11, f[0] == 0x02, f[7] == 0x06, f[8] == 0x00, f[9] == 0x05 else { return }
                        self?.security.linkPairingFailed(id, reason: f[10], sent: packet.direction == .hostToController)
                    }
                }
            }
            if options.recordsTimeline {
                peripheral.onActivity = { [weak self] activity in
                    guard let self else { return }
                    // What the central broke is in the timeline as its host reported it, typed.
                    if case .protocolViolation = activity.kind { return }
                    self.record(TimelineEvent(time: activity.time, device: id, kind: .peripheral, text: Self.describe(activity)))
                }
                watchTimeline(peripheral.device)
            }
        }
        try faults.applyDeclaredFaults()
        if let seat = roles.central {
            central = seat
        } else {
            let device: LabDevice
            // BLELab's central pairs with the Security Manager's defaults (docs/scenarios.md section 19).
            var configuration = HostConfiguration()
            configuration.security = SecuritySettings()
            do { device = try lab.addDevice(PeripheralSchema.centralID, configuration: configuration) } catch {
                throw StepFailure(kind: .setup, expected: "a controller for the central", seen: "\(error)")
            }
            central = HostCentral(lab: lab, device: device, recordsTimeline: options.recordsTimeline,
                                  peripheralID: { [weak self] in self?.peripheralID(at: $0) }, record: { [weak self] in self?.record($0) })
            watchViolations(of: device.host, device: PeripheralSchema.centralID)
            keepBounded(device, central: true)
            security.watch(device.host) { [weak self] in self?.peripheralID(at: $0) }
            if options.recordsTimeline {
                security.record = { [weak self] _, text in
                    guard let self else { return }
                    self.record(TimelineEvent(time: self.now, device: PeripheralSchema.centralID, kind: .central, text: text))
                }
            }
            observations.watchCentral(device.traffic)
            if options.recordsTimeline { watchTimeline(device) }
        }
        do { try lab.powerOn() } catch {
            throw StepFailure(kind: .setup, expected: "every device to power on", seen: "\(error)")
        }
        try beginCentral()
        for spec in scenario.peripherals {
            guard let seat = peripheralSeats[spec.id] else { continue }
            let servedBy = seat.simulated == nil ? roles.peripheral?.description ?? "?" : nil
            let result = try operate(servedBy.map { "\(spec.id) to start on \($0)" } ?? "advertising of \(spec.id) to start") { done in
                seat.startServing(completion: done)
            }
            if case let .failure(error) = result {
                throw StepFailure(kind: .setup, expected: servedBy.map { "\(spec.id) served by \($0)" } ?? "\(spec.id) to start advertising", seen: "\(error)")
            }
        }
    }

    /// What a device's records keep, so that memory does not grow with the length of a run: its
    /// packet log only the latest packets (failure reports show the last few) unless the run
    /// keeps captures; its ATT records only what the judge reads back (the central's, without the
    /// notifications and indications it received, which `observations` counts as they come; none
    /// of a peripheral's). Everything is still seen, as it happens, by the observers.
    private func keepBounded(_ device: LabDevice, central: Bool) {
        if let path = options.captureFile?(device.name) {
            // Streamed: every packet from now on goes to the file as it is recorded.
            do {
                let stream = try BTSnoopStreamWriter(path: path)
                stream.capture(device.log)
                captureStreams.append(stream)
            } catch {
                captureFailures.append("\(error)")
            }
        }
        if !options.keepsCaptures || options.captureFile != nil {
            device.log.window = max(Self.packetWindow, 4 * options.recentPacketCount)
        }
        device.traffic.retention = central ? .exceptReceivedValues : .none
        // A peripheral's ATT view serves what it received (writes) and, with a timeline, all.
        if !central, !options.recordsTimeline { device.traffic.watchesSent = false }
    }

    /// Packets a device's log keeps when the run keeps no captures.
    static let packetWindow = 4096

    private func watchTimeline(_ device: LabDevice) {
        let name = device.name
        device.traffic.observe { [weak self] r in
            guard let self else { return }
            self.record(TimelineEvent(time: r.time, device: name, kind: .att, text: r.pdu?.description ?? ATTPDU.describe(r.bytes),
                                      direction: r.wasSent ? "sent" : "received", bytes: r.bytes))
        }
    }

    /// A step's note with the protocol violations met while it ran.
    /// Those the note already tells (a response the central rejected) are not repeated.
    func withViolations(_ note: String?, since start: Int) -> String? {
        let new = violationNotes[min(start, violationNotes.count)...].filter { entry in !(note ?? "").contains(entry.violation) }
        guard !new.isEmpty else { return note }
        let met = "protocol violation\(new.count == 1 ? "" : "s"): " + new.map(\.text).joined(separator: "; ")
        return note.map { "\($0); \(met)" } ?? met
    }

    func record(_ event: TimelineEvent) {
        guard options.recordsTimeline, !timelineClosed else { return }
        if let timelineSpool { timelineSpool.append(event) } else if timelineFailure == nil { timeline.append(event) }
    }

    /// The activity without its time (the event carries it).
    static func describe(_ activity: PeripheralActivity) -> String {
        let text = activity.description, prefix = "\(activity.time) "
        return text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
    }

    private func makeFailure(_ f: StepFailure, step: CentralStep?) -> ScenarioFailure {
        let packets = centralDevice.map { PacketDescriptions.recent($0.log, count: options.recentPacketCount) } ?? []
        return ScenarioFailure(kind: f.kind, step: step.map(StepReference.init), expected: f.expected, seen: f.seen, time: now,
                               recentPackets: packets)
    }

    // MARK: Controllers

    /// The first device (in the order they were added) whose transport to its controller closed
    /// or failed, as a failure naming the device, the backend and the transport's own account
    /// (endpoint, and the bytes when they were not HCI). Nil while every transport is up.
    func controllerLost() -> StepFailure? {
        if let central, let failure = central.failure {
            return StepFailure(kind: .transport, expected: "the central (\(central.description)) to stay usable", seen: failure)
        }
        guard let lab else { return nil }
        for device in lab.devices {
            guard let error = device.host.driver.closed else { continue }
            return StepFailure(kind: .transport, expected: "\(device.name)'s controller to stay connected",
                               seen: "\(device.name) lost its controller (\(backend.description)): \(error)")
        }
        return nil
    }

    /// Why the central cannot be used any more after `power-off: central` on BLELab's own host.
    var centralPoweredOff: String? { (central as? HostCentral)?.poweredOff }

    /// The failure of a step that needs the central after `power-off: central`, or nil.
    func centralOff() -> StepFailure? {
        centralPoweredOff.map { StepFailure(kind: .operation, expected: "the central's controller to be on", seen: $0) }
    }

    /// True once any device's transport has closed: waits stop at once instead of running out.
    private var anyControllerLost: Bool {
        if central?.failure != nil { return true }
        // Asked after every task of every wait: the lab's count, not a walk over its devices.
        return lab?.hasLostController ?? false
    }

    // MARK: Waiting on virtual time

    /// Runs the lab until `condition` holds or `span` passes. When the scenario's timeout comes
    /// first, fails with what the step was waiting for.
    @discardableResult
    func waitFor(_ waitingFor: @autoclosure () -> String, within span: TimeSpan, until condition: () -> Bool) throws -> Bool {
        let limit = now + span
        var lost = false
        // A wait on the central (`waitFor`, not `pass`) also ends when its controller powers off.
        let held: () -> Bool = {
            if condition() { return true }
            lost = self.anyControllerLost || self.centralPoweredOff != nil
            return lost
        }
        if let deadline, deadline < limit {
            let done = lab.run(within: max(.zero, deadline - now), until: held)
            if lost, let failure = controllerLost() ?? centralOff() { throw failure }
            if done { return true }
            throw timedOut(waitingFor())
        }
        let done = lab.run(within: span, until: held)
        if lost, let failure = controllerLost() ?? centralOff() { throw failure }
        return done
    }

    /// Lets `span` pass (bounded by the scenario's timeout).
    func pass(_ span: TimeSpan, doing: @autoclosure () -> String) throws {
        let cut = deadline.map { $0 < now + span } ?? false
        let end = cut ? deadline! : now + span
        // A wait does not need the central: after `power-off: central` it lets the peripherals
        // time out.
        lab.run(within: max(.zero, end - now)) { self.anyControllerLost }
        if let failure = controllerLost() { throw failure }
        if cut { throw timedOut(doing()) }
    }

    func timedOut(_ what: String) -> StepFailure {
        let timeout = scenario.timeout.map { "\($0)" } ?? "?"
        let step = current.map { "step \($0.index) (\($0.text))" } ?? "setup"
        return StepFailure(kind: .timeout, expected: "the scenario to finish within its timeout of \(timeout)",
                           seen: "the timeout ran out at \(now) while \(step) was waiting for \(what)")
    }

    /// Starts an asynchronous operation and waits for its completion.
    func operate<T>(_ what: String, limit: TimeSpan = ScenarioSession.operationLimit, _ start: (@escaping (T) -> Void) -> Void) throws -> T {
        var result: T?
        start { value in if result == nil { result = value } }
        try waitFor(what, within: limit) { result != nil }
        guard let value = result else {
            throw StepFailure(kind: .operation, expected: "\(what) to complete", seen: "no completion within \(limit)")
        }
        return value
    }
}

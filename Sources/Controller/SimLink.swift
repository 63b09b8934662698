import BLERuntime
import BLEWire
import HCI

/// One LE connection between two controllers on the air (Core 5.4, Vol 6, Part B, 4.5): its
/// parameters, anchor points, the ACL packets each side has queued, pending LL control
/// procedures and the supervision timer.
///
/// ## Connection events, lazily
/// Connection event k starts at anchor(k) = anchorBase + (k − counterBase) × connInterval; the
/// first anchor (k = 0) is 1.25 ms + transmitWindowOffset after the CONNECT_IND. Idle events are
/// not simulated: a task is scheduled only for an event that has something to carry (data, an LL
/// control PDU, an update instant), at the first anchor not earlier than now and after the last
/// event processed. With peripheral latency L the peripheral listens only on events with
/// (k − counterBase) mod (L + 1) = 0 unless it has something to send itself (4.5.1), so the
/// central's traffic waits for those.
///
/// In an event each side sends up to `AirModel.maxPDUsPerEvent` data PDUs (an ACL packet of up to
/// `llDataPayloadOctets` is one PDU; LL control PDUs take a slot of their sender). Everything in the
/// event is delivered at the anchor, produced in this order: the central's packets to the
/// peripheral's host and Number Of Completed Packets for them to the central's host, then the
/// peripheral's packets to the central's host and their Number Of Completed Packets to the
/// peripheral's host. Each host receives its frames in that order, in one batch per host.
///
/// ## Control procedures (SimLink+Procedures.swift)
/// Connection Update (5.1.1), Connection Parameters Request (5.1.7) with the central's host asked
/// through LE Remote Connection Parameter Request, the Instant Passed (0x28) and LL Response
/// Timeout (0x22) endings. LL control PDUs take a slot of their sender's event and, like data,
/// are lost under `LinkFaults.lossRate` or a marginal signal and resent at the next opportunity.
///
/// ## Silence and supervision (4.5.2)
/// While both ends are attached, powered and in range, every anchor counts as an event in which
/// each side heard the other. When that stops (power-off, reset, out of range) the timeout is
/// armed at (anchor of the last event heard) + connSupervisionTimeout, or, if no event happened
/// yet, at CONNECT_IND + 6 × connInterval with Connection Failed to be Established (0x3E).
/// Coming back in range before it fires resumes the connection.
final class SimLink {
    struct Parameters {
        /// The interval the link uses (Connection_Interval_Min, as at creation).
        var intervalUnits: UInt16
        /// Interval_Max, as a request carries it (LL_CONNECTION_PARAM_REQ).
        var intervalMaxUnits: UInt16
        var latency: UInt16
        var timeoutUnits: UInt16
    }

    /// A Disconnect waiting for its LL_TERMINATE_IND (5.1.3). The PDU is queued for transmission
    /// behind the ACL packets the initiator's host handed over before the Disconnect (`ahead`),
    /// as a link layer sends its queue in order; what the host hands over after it is discarded
    /// with the link.
    struct Termination {
        var byCentral: Bool
        var reason: HCIStatus
        /// Packets still to go out before the LL_TERMINATE_IND.
        var ahead: Int
    }

    /// The Connection Update (5.1.1) and Connection Parameters Request (5.1.7) procedures.
    enum Update {
        /// The peripheral's LL_CONNECTION_PARAM_REQ waits for a connection event (and is resent
        /// until the central receives it).
        case requestPending(Parameters)
        /// The central's host was asked (LE Remote Connection Parameter Request) and has not answered.
        case awaitingCentralHost(Parameters)
        /// The central's LL_REJECT_EXT_IND waits for a connection event.
        case rejectionPending(HCIStatus)
        /// The central's LL_CONNECTION_UPDATE_IND waits for its first connection event.
        case indicationPending(Parameters)
        /// LL_CONNECTION_UPDATE_IND went out; the parameters apply at event `instant`. Until the
        /// peripheral has received it (`delivered`) the central resends it at each event the
        /// peripheral listens to.
        case waitingForInstant(Parameters, instant: Int64, delivered: Bool)
    }

    /// The ends after an instant the peripheral missed: the central runs on the new parameters
    /// from `base`, the peripheral still on the old ones (SimLink+Procedures.swift).
    struct Desync {
        /// What the LL_CONNECTION_UPDATE_IND the central keeps resending carries.
        var parameters: Parameters
        /// The instant's anchor: the old timing's anchor and the new timing's first.
        var base: Instant
        /// Nanoseconds between the anchors the peripheral listens on: old interval × (old latency + 1).
        var peripheralPeriod: Int64
        /// The peripheral's supervision timeout (the old one).
        var peripheralTimeout: TimeSpan
    }

    unowned let air: SimAir
    let loop: EventLoop
    let central: SimController
    let peripheral: SimController
    let centralAddress: LEAddress
    let peripheralAddress: LEAddress
    let centralHandle: UInt16
    let peripheralHandle: UInt16
    let createdAt: Instant
    /// Numbers the connection for `SimAir.observer`.
    var airNumber = 0

    private(set) var intervalUnits: UInt16
    private(set) var latency: UInt16
    private(set) var timeoutUnits: UInt16
    private(set) var intervalNanoseconds: Int64
    private(set) var anchorBase: Instant
    private var counterBase: Int64 = 0

    private(set) var termination: Termination?
    /// T_Terminate (5.1.3): started when the LL_TERMINATE_IND is queued.
    private var terminationTimer: LoopTimer?
    var update: Update?
    /// The Encryption Start or Pause procedure under way (SimLink+Encryption.swift).
    var encryption: Encryption?
    /// The link is encrypted (AES-CCM on a real link; the sim's air carries the payloads in clear).
    var isEncrypted = false
    /// Set when the peripheral missed an instant (SimLink+Procedures.swift).
    var desync: Desync?
    /// The peripheral's procedure response timer (Vol 6, Part B, 5.2), while its request waits.
    var procedureTimer: LoopTimer?
    /// The next attempt to reach a desynchronized peripheral.
    var resyncTimer: LoopTimer?
    /// The peripheral's own supervision timer once the ends are desynchronized.
    var peripheralSupervisionTimer: LoopTimer?

    private(set) var centralAttached = true
    private(set) var peripheralAttached = true
    private(set) var isClosed = false
    private var toPeripheral = FIFO<QueuedPacket>()
    private var toCentral = FIFO<QueuedPacket>()

    // Faults (LinkFaults.swift): the combined faults of both ends, per-direction state, and the
    // link's own seeded streams, made only when a fault needs them.
    var faults = LinkFaults.none { didSet { readFaults() } }
    // What `faults` asks for, read on every packet (kept apart so the fault-free path stays cheap).
    private var isDelaying = false
    private(set) var isLossy = false
    private var isDropping = false
    private var isTotalLoss = false

    /// Caches what `faults` asks for (also after the initializer sets it: no didSet there).
    private func readFaults() {
        isDelaying = faults.latency > .zero || faults.jitter > .zero
        isLossy = faults.lossRate > 0
        isDropping = !faults.drops.isEmpty
        isTotalLoss = faults.lossRate >= 1
    }
    var fromCentralState = DirectionState()
    var fromPeripheralState = DirectionState()
    var lossRandom: SeededRandom?
    var jitterRandom: SeededRandom?
    /// `SimAir.loseLink`: the two ends no longer hear each other.
    var isSevered = false
    /// Data PDU transmissions lost to `LinkFaults.lossRate` (each resent later).
    var lostTransmissions = 0
    /// ATT PDUs removed by `LinkFaults.drops`.
    var droppedATTPDUs: [ATTDrop] = []
    private var lastProcessed: Int64 = -1
    var lastProcessedCounter: Int64 { lastProcessed }
    private var eventTimer: LoopTimer?
    private var scheduledCounter: Int64 = .max
    private lazy var eventTask: () -> Void = { [weak self] in self?.runEvent() }

    var wasReachable = true
    private var reachableSince: Instant
    /// The anchor of the last connection event in which both ends heard each other.
    var lastHeard: Instant?
    var supervisionTimer: LoopTimer?

    init(air: SimAir, central: SimController, peripheral: SimController,
         centralAddress: LEAddress, peripheralAddress: LEAddress,
         intervalUnits: UInt16, latency: UInt16, timeoutUnits: UInt16,
         createdAt: Instant, firstAnchor: Instant, centralHandle: UInt16, peripheralHandle: UInt16) {
        self.air = air
        self.loop = air.loop
        self.central = central
        self.peripheral = peripheral
        self.centralAddress = centralAddress
        self.peripheralAddress = peripheralAddress
        self.intervalUnits = intervalUnits
        self.latency = latency
        self.timeoutUnits = timeoutUnits
        self.intervalNanoseconds = Int64(intervalUnits) * 1_250_000
        self.createdAt = createdAt
        self.anchorBase = firstAnchor
        self.reachableSince = createdAt
        self.centralHandle = centralHandle
        self.peripheralHandle = peripheralHandle
        faults = Self.faults(central: central, peripheral: peripheral)
        readFaults()
    }

    // MARK: Anchor arithmetic

    @inline(__always)
    func anchor(_ k: Int64) -> Instant {
        Instant(nanoseconds: anchorBase.nanoseconds + (k - counterBase) * intervalNanoseconds)
    }

    func firstEventCounter(atOrAfter t: Instant) -> Int64 { firstCounter(atOrAfter: t) }

    /// The first event whose anchor is at or after `t`.
    private func firstCounter(atOrAfter t: Instant) -> Int64 {
        let delta = t.nanoseconds - anchorBase.nanoseconds
        guard delta > 0 else { return counterBase }
        return counterBase + (delta + intervalNanoseconds - 1) / intervalNanoseconds
    }

    /// The last event whose anchor is at or before `t` (counterBase − 1 if none).
    private func lastCounter(atOrBefore t: Instant) -> Int64 {
        let delta = t.nanoseconds - anchorBase.nanoseconds
        guard delta >= 0 else { return counterBase - 1 }
        return counterBase + delta / intervalNanoseconds
    }

    /// The first event at or after `k` on which the peripheral listens despite latency.
    func peripheralListens(atOrAfter k: Int64) -> Int64 {
        guard latency > 0 else { return k }
        let step = Int64(latency) + 1
        let offset = (k - counterBase) % step
        return offset == 0 ? k : k + step - offset
    }

    // MARK: Scheduling

    /// Whether the two ends hear each other at all: both attached, powered and in range, the path
    /// not cut, and each one's signal able to reach the other's sensitivity.
    var physicallyReachable: Bool {
        guard centralAttached && peripheralAttached && !isSevered && !isTotalLoss else { return false }
        // One load of the unowned reference for the three questions.
        let air = self.air
        return air.canHear(central, peripheral) && air.signalCanReach(central) && air.signalCanReach(peripheral)
    }

    /// Whether connection events carry anything: reachable, and both on the same timing.
    var isReachable: Bool { desync == nil && physicallyReachable }

    /// The next event that has something to carry, if any. A packet held back by added latency
    /// (`QueuedPacket.readyAt`) waits for the first event at or after its time.
    private func nextEventCounter() -> Int64? {
        let earliest = max(lastProcessed + 1, firstCounter(atOrAfter: loop.now))
        let now = loop.now
        func due(_ p: QueuedPacket) -> Int64 { p.readyAt <= now ? earliest : max(earliest, firstCounter(atOrAfter: p.readyAt)) }
        // While an encryption procedure runs, data waits (SimLink+Encryption.swift).
        let dataWaits = encryptionPausesData
        var peripheralAt = dataWaits ? nil : toCentral.first.map(due)
        var centralAt = dataWaits ? nil : toPeripheral.first.map(due)
        let senders = encryptionSenders
        if senders.central { centralAt = earliest }
        if senders.peripheral { peripheralAt = earliest }
        // The initiator's LL_TERMINATE_IND goes after the packets ahead of it (the first of which is
        // its queue's head), at once when there are none.
        if let termination, termination.ahead == 0 {
            if termination.byCentral { centralAt = earliest } else { peripheralAt = earliest }
        }
        var instant: Int64?
        switch update {
        case .requestPending?: peripheralAt = earliest
        case .indicationPending?, .rejectionPending?: centralAt = earliest
        case let .waitingForInstant(_, at, delivered)?:
            instant = max(at, earliest)
            if !delivered { centralAt = earliest }
        case .awaitingCentralHost?, nil: break
        }
        var next = instant
        if let k = peripheralAt { next = min(next ?? k, k) }
        if let c = centralAt {
            let k = peripheralListens(atOrAfter: c)
            next = min(next ?? k, k)
        }
        return next
    }

    /// Makes sure the next event with work is scheduled (at most one task per connection). While
    /// the peripheral does not hear the central, only the central's side of a connection update
    /// goes on (`unheardEventCounter`).
    func scheduleNextEvent() {
        // Both `nextEventCounter` and `unheardEventCounter` answer an event at or after this one,
        // so an event already scheduled no later stays (the common case: a packet queued behind
        // others), without working out reachability and procedures again.
        if eventTimer != nil, scheduledCounter <= max(lastProcessed + 1, firstCounter(atOrAfter: loop.now)) { return }
        guard !isClosed, let k = isReachable ? nextEventCounter() : unheardEventCounter() else { return }
        if let pending = eventTimer {
            if scheduledCounter <= k { return }
            pending.cancel()
        }
        scheduledCounter = k
        eventTimer = loop.schedule(at: anchor(k), eventTask)
    }

    /// Drops the scheduled event, if any.
    func cancelPendingEvent() {
        eventTimer?.cancel()
        eventTimer = nil
        scheduledCounter = .max
    }

    func enqueue(_ frame: [UInt8], fromCentral: Bool) {
        let readyAt = isDelaying ? delayedReadyTime(fromCentral: fromCentral) : loop.now
        if fromCentral {
            toPeripheral.append(QueuedPacket(frame: frame, readyAt: readyAt))
        } else {
            toCentral.append(QueuedPacket(frame: frame, readyAt: readyAt))
        }
        scheduleNextEvent()
    }

    // MARK: One connection event

    private func runEvent() {
        let k = scheduledCounter
        scheduledCounter = .max
        eventTimer = nil
        guard !isClosed else { return }
        lastProcessed = k
        guard isReachable else {
            // Nobody hears this event; the central's link layer runs its side of an update anyway.
            runProcedures(at: k, heard: false)
            scheduleNextEvent()
            return
        }

        if let termination, termination.ahead == 0 {
            terminate(termination)
            return
        }

        let perEvent = max(1, faults.pdusPerEvent ?? air.model.maxPDUsPerEvent)
        var budgets = (central: perEvent, peripheral: perEvent)
        guard runProcedures(at: k, heard: true, budgets: &budgets) else { return }
        guard runEncryption(at: k, budgets: &budgets) else { return }
        if encryptionPausesData { budgets = (0, 0) }
        var centralBudget = budgets.central, peripheralBudget = budgets.peripheral

        // An initiator sends only what is ahead of its LL_TERMINATE_IND.
        let centralLimit = termination?.byCentral == true ? termination!.ahead : Int.max
        let peripheralLimit = termination.map { $0.byCentral ? Int.max : $0.ahead } ?? Int.max
        let fromCentral = transmit(&toPeripheral, budget: &centralBudget, limit: centralLimit, fromCentral: true)
        if fromCentral > 0 {
            central.aclOutstanding -= fromCentral
            central.sendCompletedPackets(handle: centralHandle, count: fromCentral)
        }
        let fromPeripheral = transmit(&toCentral, budget: &peripheralBudget, limit: peripheralLimit, fromCentral: false)
        if fromPeripheral > 0 {
            peripheral.aclOutstanding -= fromPeripheral
            peripheral.sendCompletedPackets(handle: peripheralHandle, count: fromPeripheral)
        }
        if var t = termination {
            t.ahead -= t.byCentral ? fromCentral : fromPeripheral
            termination = t
            // The LL_TERMINATE_IND right after the last of them, if this event has a slot left.
            if t.ahead == 0, (t.byCentral ? centralBudget : peripheralBudget) > 0 {
                terminate(t)
                return
            }
        }
        scheduleNextEvent()
    }

    /// HCI Disconnect on one end (Vol 4 Part E 7.1.6): its link layer queues LL_TERMINATE_IND
    /// behind what its host already handed over and starts T_Terminate with the supervision
    /// timeout's value (Vol 6 Part B 5.1.3).
    func requestTermination(byCentral: Bool, reason: HCIStatus) {
        termination = Termination(byCentral: byCentral, reason: reason, ahead: byCentral ? toPeripheral.count : toCentral.count)
        terminationTimer = loop.schedule(after: .milliseconds(Int64(timeoutUnits) * 10)) { [weak self] in self?.terminationTimedOut() }
        scheduleNextEvent()
    }

    /// T_Terminate ran out before the LL_TERMINATE_IND was acknowledged (5.1.3): the initiator
    /// leaves the Connection state and tells its host (Connection Terminated By Local Host); the
    /// peer hears nothing more and its supervision timer runs out (4.5.2).
    private func terminationTimedOut() {
        terminationTimer = nil
        guard !isClosed, let t = termination else { return }
        let initiator = t.byCentral ? central : peripheral
        guard t.byCentral ? centralAttached : peripheralAttached else { return }
        let queued = t.byCentral ? toPeripheral.count : toCentral.count
        initiator.aclOutstanding -= queued
        initiator.counters.aclDiscardedOnDisconnect += queued
        initiator.removeLink(self)
        termination = nil
        detach(initiator)
        initiator.sendDisconnectionComplete(handle: t.byCentral ? centralHandle : peripheralHandle, reason: .connectionTerminatedByLocalHost)
    }

    /// New parameters from the instant on; the instant's anchor (old interval) is the new base.
    func apply(_ p: Parameters, at k: Int64) {
        anchorBase = anchor(k)
        counterBase = k
        intervalUnits = p.intervalUnits
        intervalNanoseconds = Int64(p.intervalUnits) * 1_250_000
        latency = p.latency
        timeoutUnits = p.timeoutUnits
    }

    /// Sends the queued packets of one side in this event, within `budget` data PDUs, and hands
    /// them to the other side's host; returns how many packets went (for Number Of Completed
    /// Packets). Without loss an ACL packet of n PDUs takes n slots (the last may overrun the
    /// budget, as before); with loss each transmission attempt takes a slot and a lost one is
    /// resent at the next opportunity (Vol 6 Part B 4.5.9), so a packet may straddle events.
    private func transmit(_ queue: inout FIFO<QueuedPacket>, budget: inout Int, limit: Int, fromCentral: Bool) -> Int {
        // One load of the unowned reference for the whole event (not one per packet).
        let air = self.air
        let payload = max(1, air.model.llDataPayloadOctets)
        let now = loop.now
        let receiver = fromCentral ? peripheral : central
        let handle = fromCentral ? peripheralHandle : centralHandle
        // A sender whose readings straddle the sensitivity loses some PDUs, as under `lossRate`.
        let lossy = isLossy || air.signalIsMarginal(fromCentral ? central : peripheral)
        var sent = 0
        while budget > 0, sent < limit, let head = queue.first, head.readyAt <= now {
            let pdus = Self.pduCount(head.frame, payload: payload)
            var begun = 0
            if lossy {
                var state = fromCentral ? fromCentralState : fromPeripheralState
                while state.headPDUsAcknowledged < pdus && budget > 0 {
                    budget -= 1
                    let lost = transmissionLost(fromCentral: fromCentral)
                    if air.observer != nil {
                        // Under loss each transmission is on the air, a lost one sent again with its SN.
                        air.observe(.dataAttempt(link: airNumber, fromCentral: fromCentral, aclFrame: head.frame, payloadOctets: payload,
                                                 index: state.headPDUsAcknowledged, acknowledged: !lost, event: lastProcessed,
                                                 rssi: air.sniffedRSSI(fromCentral ? central : peripheral)))
                    }
                    if lost {
                        lostTransmissions += 1
                        air.faultRecord.lostTransmissions += 1
                    } else {
                        state.headPDUsAcknowledged += 1
                    }
                }
                let complete = state.headPDUsAcknowledged == pdus
                if complete { state.headPDUsAcknowledged = 0 }
                if fromCentral { fromCentralState = state } else { fromPeripheralState = state }
                guard complete else { break }
            } else {
                budget -= pdus
                // A packet begun under loss that ends after the loss was lifted.
                begun = fromCentral ? fromCentralState.headPDUsAcknowledged : fromPeripheralState.headPDUsAcknowledged
                if fromCentral { fromCentralState.headPDUsAcknowledged = 0 } else { fromPeripheralState.headPDUsAcknowledged = 0 }
            }
            guard var frame = queue.popFirst()?.frame else { break }
            sent += 1
            if isDropping, shouldDrop(frame, fromCentral: fromCentral) { continue }
            if !lossy, air.observer != nil {
                // Its PDUs not yet on the air (all of them, unless begun under loss).
                air.observe(.data(link: airNumber, fromCentral: fromCentral, aclFrame: frame, payloadOctets: payload, fromPDU: begun,
                                  event: lastProcessed, rssi: air.sniffedRSSI(fromCentral ? central : peripheral)))
            }
            Self.rewriteHeader(&frame, handle: handle)
            receiver.deliverACL(frame)
        }
        return sent
    }

    /// Data PDUs an ACL packet takes.
    @inline(__always)
    private static func pduCount(_ frame: [UInt8], payload: Int) -> Int {
        let length = frame.count - 5
        return length <= payload ? 1 : (length + payload - 1) / payload
    }

    /// The receiver's handle, and PB 0b10 (first, flushable) for a start fragment or 0b01 for a
    /// continuation, as a controller reports them to its host on LE (Vol 4, Part E, 5.4.2).
    @inline(__always)
    private static func rewriteHeader(_ frame: inout [UInt8], handle: UInt16) {
        let boundary: UInt16 = (frame[2] >> 4) & 0x03 == 0 ? 0b10 : 0b01
        let header = handle | boundary << 12
        frame[1] = UInt8(truncatingIfNeeded: header)
        frame[2] = UInt8(truncatingIfNeeded: header >> 8)
    }

    // MARK: Ending

    /// LL_TERMINATE_IND goes out and is acknowledged in this event (5.1.3): the initiator's host
    /// gets Disconnection Complete with Connection Terminated By Local Host (0x16), the peer's
    /// host the reason given in Disconnect (Vol 4, Part E, 7.1.6). What is still queued on either
    /// side (behind the LL_TERMINATE_IND, or the peer's not sent by then) is discarded.
    private func terminate(_ t: Termination) {
        air.observe(.control(link: airNumber, fromCentral: t.byCentral, pdu: .terminate(errorCode: t.reason.rawValue), acknowledged: true,
                             event: lastProcessed, rssi: air.sniffedRSSI(t.byCentral ? central : peripheral)))
        close()
        if t.byCentral {
            central.sendDisconnectionComplete(handle: centralHandle, reason: .connectionTerminatedByLocalHost)
            peripheral.sendDisconnectionComplete(handle: peripheralHandle, reason: t.reason)
        } else {
            peripheral.sendDisconnectionComplete(handle: peripheralHandle, reason: .connectionTerminatedByLocalHost)
            central.sendDisconnectionComplete(handle: centralHandle, reason: t.reason)
        }
    }

    /// Ends the connection on both attached ends: handles freed, queued packets discarded (the
    /// host treats them as flushed on Disconnection Complete, Vol 4, Part E, 4.3).
    func close() {
        isClosed = true
        eventTimer?.cancel()
        eventTimer = nil
        terminationTimer?.cancel()
        terminationTimer = nil
        supervisionTimer?.cancel()
        supervisionTimer = nil
        for timer in [procedureTimer, resyncTimer, peripheralSupervisionTimer] { timer?.cancel() }
        procedureTimer = nil
        resyncTimer = nil
        peripheralSupervisionTimer = nil
        if centralAttached {
            centralAttached = false
            central.aclOutstanding -= toPeripheral.count
            central.counters.aclDiscardedOnDisconnect += toPeripheral.count
            central.removeLink(self)
        }
        if peripheralAttached {
            peripheralAttached = false
            peripheral.aclOutstanding -= toCentral.count
            peripheral.counters.aclDiscardedOnDisconnect += toCentral.count
            peripheral.removeLink(self)
        }
        toPeripheral.removeAll()
        toCentral.removeAll()
    }

    /// `controller` forgot this connection without telling anyone (Reset, power-off): its end
    /// goes silent and the other end will time out. The controller has already dropped its entry
    /// and its buffer accounting.
    func detach(_ controller: SimController) {
        if controller === central, centralAttached {
            centralAttached = false
            toPeripheral.removeAll()
        } else if controller === peripheral, peripheralAttached {
            peripheralAttached = false
            toCentral.removeAll()
        }
        if !centralAttached && !peripheralAttached {
            close()
        } else {
            reachabilityMayHaveChanged()
        }
    }

    /// Re-evaluates whether the two ends hear each other, arming or cancelling the supervision
    /// timeout on a change. Desynchronized ends (a missed instant) never resume: the central
    /// only tries to reach the peripheral at the anchors the two timings share.
    func reachabilityMayHaveChanged() {
        guard !isClosed else { return }
        if desync != nil {
            scheduleResync()
            return
        }
        let reachable = isReachable
        guard reachable != wasReachable else { return }
        wasReachable = reachable
        let now = loop.now
        if reachable {
            supervisionTimer?.cancel()
            supervisionTimer = nil
            reachableSince = now
            scheduleNextEvent()
            return
        }
        eventTimer?.cancel()
        eventTimer = nil
        scheduledCounter = .max
        var k = lastCounter(atOrBefore: now)
        if k > lastProcessed, anchor(k) >= now { k -= 1 }   // an event due this very instant has not happened
        if k >= 0, anchor(k) >= reachableSince { lastHeard = anchor(k) }
        armSupervision()
        scheduleNextEvent()   // the central's side of a connection update goes on unheard
    }

    /// The supervision timer of both ends: (last event heard) + connSupervisionTimeout with
    /// Connection Timeout (0x08), or, if no event was heard, CONNECT_IND + 6 × connInterval with
    /// Connection Failed to be Established (0x3E) (4.5.2).
    func armSupervision() {
        supervisionTimer?.cancel()
        let deadline: Instant
        let reason: HCIStatus
        if let lastHeard {
            deadline = lastHeard + .milliseconds(Int64(timeoutUnits) * 10)
            reason = .connectionTimeout
        } else {
            deadline = createdAt + TimeSpan(nanoseconds: 6 * intervalNanoseconds)
            reason = .connectionFailedToBeEstablished
        }
        supervisionTimer = loop.schedule(at: deadline) { [weak self] in self?.supervisionTimedOut(reason) }
    }

    private func supervisionTimedOut(_ reason: HCIStatus) {
        supervisionTimer = nil
        guard !isClosed else { return }
        if desync != nil {
            // Only the central's timer: the peripheral keeps its own (old) timeout.
            leave(central: true, reason: reason)
            return
        }
        let notifyCentral = centralAttached
        let notifyPeripheral = peripheralAttached
        close()
        if notifyCentral { central.sendDisconnectionComplete(handle: centralHandle, reason: reason) }
        if notifyPeripheral { peripheral.sendDisconnectionComplete(handle: peripheralHandle, reason: reason) }
    }

    /// One end's link layer leaves the connection by itself (an instant passed, a procedure or its
    /// own supervision timer ran out) and tells its host `reason`; the other end goes on until its
    /// supervision timer runs out. Its queued packets are discarded as at a disconnection.
    func leave(central isCentral: Bool, reason: HCIStatus) {
        guard !isClosed else { return }
        if isCentral {
            guard centralAttached else { return }
            centralAttached = false
            central.aclOutstanding -= toPeripheral.count
            central.counters.aclDiscardedOnDisconnect += toPeripheral.count
            toPeripheral.removeAll()
            central.removeLink(self)
            central.sendDisconnectionComplete(handle: centralHandle, reason: reason)
        } else {
            guard peripheralAttached else { return }
            peripheralAttached = false
            peripheral.aclOutstanding -= toCentral.count
            peripheral.counters.aclDiscardedOnDisconnect += toCentral.count
            toCentral.removeAll()
            peripheral.removeLink(self)
            peripheral.sendDisconnectionComplete(handle: peripheralHandle, reason: reason)
            procedureTimer?.cancel()
            procedureTimer = nil
        }
        if !centralAttached && !peripheralAttached {
            close()
        } else {
            reachabilityMayHaveChanged()
        }
    }
}

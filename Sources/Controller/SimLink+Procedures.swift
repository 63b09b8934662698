import BLERuntime
import BLEWire
import HCI

// The LL control procedures of a connection (Core 5.4, Vol 6, Part B, 5.1): Connection Update
// (5.1.1) and Connection Parameters Request (5.1.7), with the endings the specification gives
// them: Instant Passed (0x28) when the peripheral gets LL_CONNECTION_UPDATE_IND too late, LL
// Response Timeout (0x22) when its request is never answered (5.2).
//
// - The central's LL_CONNECTION_UPDATE_IND goes at an event the peripheral listens to, k0; the
//   instant is k0 + 6 × (latency + 1) (`AirModel.connectionUpdateInstantOffset`): the 6 events the
//   peripheral listens to that 5.1.1 asks the central to allow. A lost transmission (loss, a
//   marginal signal, the peripheral out of range) is resent at each later event the peripheral
//   listens to, up to the instant.
// - At the instant the central moves to the new parameters whatever happened, and its host gets
//   LE Connection Update Complete. A peripheral that has the PDU moves too (and its host gets
//   the event). One that has not stays on the old timing: the two are out of step. The central
//   keeps resending the PDU on its new timing; the peripheral, on its old one, can receive it
//   only at an anchor both timings share (with the same interval, its next listening event).
//   There it finds the instant in the past ((Instant − connEventCounter) mod 65536 ≥ 32767) and
//   leaves with Instant Passed (0x28); the central, which no longer hears it, times out (0x08).
//   If no shared anchor is heard before its own (old) supervision timeout, it times out too.
// - The peripheral's LE Connection Update (7.8.18) sends LL_CONNECTION_PARAM_REQ. The central's
//   link layer asks its host with LE Remote Connection Parameter Request (Vol 4, Part E,
//   7.7.65.6) and waits for LE Remote Connection Parameter Request Reply (7.8.31), answered with
//   LL_CONNECTION_UPDATE_IND, or Negative Reply (7.8.32), answered with LL_REJECT_EXT_IND. A
//   host that masked the event has its link layer reject the request with Unsupported Remote
//   Feature (0x1A). A rejection reaches the peripheral's host as LE Connection Update Complete
//   with the reason as its status. The peripheral's procedure response timer (40 s) runs from its
//   command to the central's answer; when it runs out the peripheral leaves with 0x22.

extension SimLink {
    /// The next event while the peripheral does not hear the central: only the central's side of
    /// a connection update moves on (its first LL_CONNECTION_UPDATE_IND, lost, and the instant).
    func unheardEventCounter() -> Int64? {
        guard desync == nil, centralAttached else { return nil }
        let earliest = max(lastProcessedCounter + 1, firstEventCounter(atOrAfter: loop.now))
        switch update {
        case .indicationPending?: return peripheralListens(atOrAfter: earliest)
        case let .waitingForInstant(_, instant, _)?: return max(instant, earliest)
        default: return nil
        }
    }

    /// The procedures' part of connection event `k`: the instant, then the LL control PDU of each
    /// side that waits. Returns false when the event ends the connection as it was (the ends went
    /// out of step): nothing else happens in it.
    @discardableResult
    func runProcedures(at k: Int64, heard: Bool) -> Bool {
        var budgets = (central: 1, peripheral: 1)
        return runProcedures(at: k, heard: heard, budgets: &budgets)
    }

    @discardableResult
    func runProcedures(at k: Int64, heard: Bool, budgets: inout (central: Int, peripheral: Int)) -> Bool {
        switch update {
        case let .waitingForInstant(parameters, instant, delivered)? where instant <= k:
            update = nil
            let oldPeriod = intervalNanoseconds * (Int64(latency) + 1)
            let oldTimeout = TimeSpan.milliseconds(Int64(timeoutUnits) * 10)
            apply(parameters, at: k)
            central.sendLEMeta(.connectionUpdateComplete(updateComplete(handle: centralHandle)), bit: EventMask.leConnectionUpdateComplete)
            guard delivered else {
                enterDesync(parameters, heard: heard, peripheralPeriod: oldPeriod, peripheralTimeout: oldTimeout)
                return false
            }
            peripheral.sendLEMeta(.connectionUpdateComplete(updateComplete(handle: peripheralHandle)),
                                  bit: EventMask.leConnectionUpdateComplete)
            // The new timeout counts for a link that is silent now.
            if !heard, supervisionTimer != nil { armSupervision() }
        case let .waitingForInstant(parameters, instant, false)?:
            // A resend of LL_CONNECTION_UPDATE_IND (events with work are ones the peripheral listens to).
            guard heard else { break }
            budgets.central -= 1
            let arrives = controlPDUArrives(fromCentral: true)
            observeUpdate(parameters, instant: instant, acknowledged: arrives, at: k)
            if arrives { update = .waitingForInstant(parameters, instant: instant, delivered: true) }
        case let .indicationPending(parameters)?:
            budgets.central -= 1
            let instant = k + air.model.connectionUpdateInstantOffset * (Int64(latency) + 1)
            let delivered = heard && controlPDUArrives(fromCentral: true)
            observeUpdate(parameters, instant: instant, acknowledged: delivered, at: k)
            update = .waitingForInstant(parameters, instant: instant, delivered: delivered)
            if delivered {
                procedureTimer?.cancel()
                procedureTimer = nil
            }
        case let .requestPending(parameters)? where heard:
            budgets.peripheral -= 1
            let arrives = controlPDUArrives(fromCentral: false)
            air.observe(.control(link: airNumber, fromCentral: false, pdu: .connectionParameters(
                response: false, intervalMin: parameters.intervalUnits, intervalMax: parameters.intervalMaxUnits,
                latency: parameters.latency, timeout: parameters.timeoutUnits, rest: []), acknowledged: arrives, event: k,
                rssi: air.sniffedRSSI(peripheral)))
            if arrives { centralReceivesParameterRequest(parameters) }
        case let .rejectionPending(reason)? where heard:
            budgets.central -= 1
            let arrives = controlPDUArrives(fromCentral: true)
            air.observe(.control(link: airNumber, fromCentral: true, pdu: .rejectExtended(rejectOpcode: 0x0F, errorCode: reason.rawValue),
                                 acknowledged: arrives, event: k, rssi: air.sniffedRSSI(central)))
            guard arrives else { break }
            update = nil
            procedureTimer?.cancel()
            procedureTimer = nil
            var event = updateComplete(handle: peripheralHandle)
            event.status = reason
            peripheral.sendLEMeta(.connectionUpdateComplete(event), bit: EventMask.leConnectionUpdateComplete)
        default:
            break
        }
        return true
    }

    /// The central's LL_CONNECTION_UPDATE_IND, for the air's observer: WinSize 1, WinOffset 0 (the
    /// new timing starts at the instant's anchor).
    private func observeUpdate(_ p: Parameters, instant: Int64, acknowledged: Bool, at k: Int64) {
        air.observe(.control(link: airNumber, fromCentral: true, pdu: .connectionUpdate(
            windowSize: 1, windowOffset: 0, interval: p.intervalUnits, latency: p.latency, timeout: p.timeoutUnits,
            instant: UInt16(truncatingIfNeeded: instant)), acknowledged: acknowledged, event: k, rssi: air.sniffedRSSI(central)))
    }

    private func updateComplete(handle: UInt16) -> LEConnectionUpdateComplete {
        LEConnectionUpdateComplete(handle: handle, connectionInterval: intervalUnits, peripheralLatency: latency,
                                   supervisionTimeout: timeoutUnits)
    }

    // MARK: Connection Parameters Request (5.1.7)

    /// The peripheral's host asked for new parameters (LE Connection Update on the peripheral):
    /// LL_CONNECTION_PARAM_REQ goes at the next event, and the procedure response timer starts.
    func peripheralRequests(_ parameters: Parameters) {
        update = .requestPending(parameters)
        procedureTimer?.cancel()
        procedureTimer = loop.schedule(after: air.model.procedureResponseTimeout) { [weak self] in
            guard let self else { return }
            self.procedureTimer = nil
            self.update = nil
            self.leave(central: false, reason: .llResponseTimeout)
        }
        scheduleNextEvent()
    }

    /// LL_CONNECTION_PARAM_REQ reached the central: its host decides, unless it masked the event.
    private func centralReceivesParameterRequest(_ p: Parameters) {
        guard central.hostHearsRemoteConnectionParameterRequests else {
            // Vol 6, Part B, 5.1.7.1 and Vol 4, Part E, 7.8.1: the link layer rejects by itself.
            update = .rejectionPending(.unsupportedRemoteFeature)
            return
        }
        update = .awaitingCentralHost(p)
        central.sendLEMeta(.remoteConnectionParameterRequest(LERemoteConnectionParameterRequest(
            handle: centralHandle, intervalMin: p.intervalUnits, intervalMax: p.intervalMaxUnits, maxLatency: p.latency,
            timeout: p.timeoutUnits)), bit: EventMask.leRemoteConnectionParameterRequest)
    }

    /// Whether the central's host has a request to answer.
    var isAwaitingCentralHost: Bool {
        if case .awaitingCentralHost? = update { return true }
        return false
    }

    /// The central's host accepted (7.8.31): LL_CONNECTION_UPDATE_IND with its parameters goes at
    /// the next event the peripheral listens to.
    func centralHostAccepts(_ p: Parameters) {
        update = .indicationPending(p)
        scheduleNextEvent()
    }

    /// The central's host rejected (7.8.32): LL_REJECT_EXT_IND with `reason`.
    func centralHostRejects(_ reason: HCIStatus) {
        update = .rejectionPending(reason)
        scheduleNextEvent()
    }

    // MARK: Loss of control PDUs

    /// One transmission attempt of a PDU from one side, while the link is reachable: lost under
    /// `LinkFaults.lossRate`, or when the sender's reading falls below the sensitivity.
    func transmissionLost(fromCentral: Bool) -> Bool {
        if isLossy, drawLoss() { return true }
        return !air.signalReaches(fromCentral ? central : peripheral)
    }

    /// Whether an LL control PDU sent now arrives; a lost one counts as a lost transmission.
    func controlPDUArrives(fromCentral: Bool) -> Bool {
        guard physicallyReachable else { return false }
        guard isLossy || air.signalIsMarginal(fromCentral ? central : peripheral) else { return true }
        if transmissionLost(fromCentral: fromCentral) {
            lostTransmissions += 1
            air.faultRecord.lostTransmissions += 1
            return false
        }
        return true
    }

    // MARK: A missed instant

    /// The central moved to `parameters` at the instant just applied; the peripheral did not.
    /// From now on nothing is exchanged; each end's supervision timer runs with its own timeout
    /// from the last event heard, and the central's resent LL_CONNECTION_UPDATE_IND may reach the
    /// peripheral at an anchor the two timings share.
    private func enterDesync(_ parameters: Parameters, heard: Bool, peripheralPeriod: Int64, peripheralTimeout: TimeSpan) {
        cancelPendingEvent()
        desync = Desync(parameters: parameters, base: anchorBase, peripheralPeriod: peripheralPeriod,
                        peripheralTimeout: peripheralTimeout)
        if heard {
            lastHeard = anchorBase   // this very event (the instant's anchor) was the last one heard
            wasReachable = false
        }
        supervisionTimer?.cancel()
        supervisionTimer = nil
        guard let lastHeard else {
            armSupervision()
            return
        }
        supervisionTimer = loop.schedule(at: lastHeard + .milliseconds(Int64(timeoutUnits) * 10)) { [weak self] in
            guard let self else { return }
            self.supervisionTimer = nil
            self.leave(central: true, reason: .connectionTimeout)
        }
        peripheralSupervisionTimer = loop.schedule(at: lastHeard + peripheralTimeout) { [weak self] in
            guard let self else { return }
            self.peripheralSupervisionTimer = nil
            self.leave(central: false, reason: .connectionTimeout)
        }
        scheduleResync()
    }

    /// Schedules the central's next chance to reach the desynchronized peripheral: the first
    /// anchor after now that both timings share (base + m × lcm(old listening period, new
    /// interval)), if it comes before the peripheral's supervision timeout.
    func scheduleResync() {
        guard let d = desync, resyncTimer == nil, centralAttached, peripheralAttached, let lastHeard else { return }
        let unit: Int64 = 1_250_000
        let shared = Self.lcm(d.peripheralPeriod / unit, intervalNanoseconds / unit) * unit
        guard shared > 0 else { return }
        let m = max(0, (loop.now - d.base).nanoseconds) / shared + 1
        let t = Instant(nanoseconds: d.base.nanoseconds + m * shared)
        guard t < lastHeard + d.peripheralTimeout else { return }
        resyncTimer = loop.schedule(at: t) { [weak self] in
            guard let self else { return }
            self.resyncTimer = nil
            guard self.desync != nil, self.centralAttached, self.peripheralAttached else { return }
            if self.controlPDUArrives(fromCentral: true) {
                // (Instant − connEventCounter) mod 65536 ≥ 32767: the instant is in the past.
                self.leave(central: false, reason: .instantPassed)
            } else {
                self.scheduleResync()
            }
        }
    }

    static func lcm(_ a: Int64, _ b: Int64) -> Int64 {
        guard a > 0, b > 0 else { return 0 }
        var (x, y) = (a, b)
        while y != 0 { (x, y) = (y, x % y) }
        return a / x * b
    }
}

extension SimController {
    /// Whether LE Remote Connection Parameter Request reaches this controller's host: LE Meta
    /// (7.3.1) and bit 5 of the LE event mask (7.8.1) are both set.
    var hostHearsRemoteConnectionParameterRequests: Bool {
        eventMask & EventMask.leMeta != 0 && leEventMask & EventMask.leRemoteConnectionParameterRequest != 0
    }
}

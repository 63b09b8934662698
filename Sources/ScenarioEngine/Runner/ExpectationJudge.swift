import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

/// Judges a run's `expect:` steps on what the session observed: what the central saw (its seat's
/// account), the ATT PDUs that crossed the link, what the peripherals received and did. Writes and
/// notifications are judged on the ATT PDUs that crossed the link.
final class ExpectationJudge {
    unowned let session: ScenarioSession

    init(session: ScenarioSession) {
        self.session = session
    }

    /// " since step N (K before it)" when step N set the mark counting starts from (an expectation
    /// that took what had arrived, a subscription that started the count), else "".
    func since(_ step: Int?, accounted: Int, what: String) -> String {
        guard let step else { return "" }
        guard accounted > 0 else { return " since step \(step)" }
        return " since step \(step) (\(accounted) \(what)\(accounted == 1 ? "" : "s") before it)"
    }

    func check(_ expectation: Expectation, step: CentralStep) throws {
        func fail(_ seen: String) -> StepFailure { StepFailure(kind: .expectation, expected: expectation.summary, seen: seen) }
        switch expectation {
        case let .discovered(id), let .notDiscovered(id):
            guard let scan = session.lastScan else { throw fail("no scan has run") }
            let wanted: Bool
            if case .discovered = expectation { wanted = true } else { wanted = false }
            let found = scan.found[id] != nil
            let summary = scan.found.isEmpty ? "nothing" : session.describeScan(scan.found)
            guard found == wanted else {
                throw fail("the last scan (step \(scan.step)) discovered \(summary)\(scan.others > 0 ? " and \(scan.others) other device(s)" : "")")
            }
            session.note = "the last scan discovered \(summary)"
        case let .onlyDiscovered(ids):
            // Any other device, even one the scan's filters kept, is one the scenario did not make:
            // on real controllers, another scenario's (`blelab run --jobs`), or a stranger's.
            guard let scan = session.lastScan else { throw fail("no scan has run") }
            let summary = scan.found.isEmpty ? "nothing" : session.describeScan(scan.found)
            let others = scan.others > 0 ? " and \(scan.others) other device(s)" : ""
            guard Set(scan.found.keys) == Set(ids), scan.others == 0 else {
                throw fail("the last scan (step \(scan.step)) discovered \(summary)\(others)")
            }
            session.note = "the last scan discovered \(summary) and nothing else"
        case let .connected(id):
            do { _ = try session.linked(id) } catch let f as StepFailure { throw fail(f.seen) }
        case let .services(list, id):
            guard session.everConnected.contains(id), let address = session.address(of: id) else { throw fail("never connected to \(id)") }
            let found = session.central.services(on: address).map(\.uuid)
            let missing = list.filter { !found.contains($0) }
            guard missing.isEmpty else {
                throw fail(found.isEmpty ? "no services discovered" : "services \(found.map(\.description).joined(separator: ", ")) (no \(missing.map(\.description).joined(separator: ", ")))")
            }
        case let .characteristic(ref, properties, id):
            guard session.everConnected.contains(id), let address = session.address(of: id) else { throw fail("never connected to \(id)") }
            let c: SeatCharacteristic
            do { c = try session.characteristic(ref, on: id, at: address) } catch let f as StepFailure { throw fail(f.seen) }
            guard c.properties == properties else { throw fail("\(ref) has properties \(c.properties)") }
        case let .value(expected):
            guard let read = session.lastRead else { throw fail("no read has returned a value") }
            guard read.value == expected else { throw fail("the read in step \(read.step) returned \(ValueText.describe(read.value))") }
        case let .writeSentAs(method):
            try checkWriteMethod(method, fail: fail)
        case let .error(code):
            guard let last = session.lastOperation else { throw fail("no operation has run") }
            guard let error = last.error else { throw fail("step \(last.step.index) (\(last.step.text)) succeeded") }
            guard error.attErrorCode == code else { throw fail("step \(last.step.index) (\(last.step.text)) got \(error)") }
            session.note = "step \(last.step.index) got \(code)"
        case let .peripheralReceived(e):
            try checkReceived(e, fail: fail)
        case let .notification(e):
            try checkNotifications(e, fail: fail)
        case let .noNotification(id, ref, duration):
            guard let handle = session.valueHandle(ref, on: id) else { throw fail("\(id) has no characteristic \(ref)") }
            let key = LinkObservations.Key(peripheral: id, handle: handle)
            try session.pass(duration, doing: "the end of no-notification (for: \(duration))")
            let arrived = session.observations.arrivals(id, handle, since: session.notificationMarks[key] ?? 0)
            session.notificationMarks[key] = session.observations.arrivalCount(id, handle)
            guard arrived.count == 0 else { throw fail(describe(arrived, of: ref)) }
        case let .disconnected(id, reason, within):
            guard session.everConnected.contains(id), let address = session.address(of: id) else { throw fail("never connected to \(id)") }
            let ended = try session.waitFor("the disconnection of \(id) (within: \(within))", within: within) { !self.session.central.isConnected(address) }
            guard ended else { throw fail("still connected after \(within)") }
            if let connection = session.connections[id] {
                let actual = connection.disconnectReason
                if let reason, actual != reason { throw fail("disconnected with reason \(actual.map { "\($0)" } ?? "?")") }
                session.note = "disconnected: \(actual.map { "\($0)" } ?? "?")"
                return
            }
            // Another stack does not tell the reason: it is read from the peripheral's side of the link.
            if let reason {
                // The peripheral's end may hear of it a moment after the central's stack.
                if session.peripherals[id] != nil { try session.waitFor("\(id)'s host to hear the link end", within: within) { !self.session.peripheralHasLink(id) } }
                let seen = centralSideReason(id)
                guard seen == reason else { throw fail("disconnected with reason \(seen.map { "\($0)" } ?? "unknown (\(id) saw none)")") }
            }
            session.note = "disconnected"
        case let .flaw(e):
            try checkFlaw(e, fail: fail)
        case let .fault(f):
            try check(f, fail: fail)
        case let .interruption(e):
            try checkInterruption(e, fail: fail)
        case let .security(e):
            try checkSecurity(e, fail: fail)
        case let .rssi(e):
            try checkRSSI(e, fail: fail)
        }
    }

    /// Judged on the central's HCI when the lab sees it (BLELab's host), else where the write
    /// arrived: the peripheral's HCI (its stack decoded the PDU).
    private func checkWriteMethod(_ method: WriteMethod, fail: (String) -> StepFailure) throws {
        guard let write = session.lastWrite else { throw fail("no write has run") }
        if let centralDevice = session.centralDevice {
            let writes = centralDevice.traffic.records.dropFirst(write.centralTraffic).filter { r in
                r.wasSent && r.connectionHandle == write.connectionHandle
                    && [ATTOpcode.writeRequest, .writeCommand, .signedWriteCommand, .prepareWriteRequest].contains { $0 == r.opcode }
            }
            guard let first = writes.first else { throw fail("no write PDU crossed the central's HCI after step \(write.step.index)") }
            let seen: WriteMethod = first.opcode == .writeCommand || first.opcode == .signedWriteCommand ? .command : .request
            guard seen == method else { throw fail("ATT \(first.pdu?.description ?? ATTPDU.describe(first.bytes))") }
            session.note = "ATT \(first.pdu?.description ?? ATTPDU.describe(first.bytes))"
            return
        }
        guard case let .write(w) = write.step.action, let handle = session.valueHandle(w.characteristic, on: write.peripheral) else {
            throw fail("\(write.peripheral) has no such characteristic")
        }
        try session.waitFor("the write to reach \(write.peripheral)", within: Expectation.defaultWithin) {
            self.session.observations.writeCount(write.peripheral, handle) > write.received
        }
        guard let first = session.observations.write(write.peripheral, handle, at: write.received) else {
            throw fail("no write PDU reached \(write.peripheral) after step \(write.step.index)")
        }
        guard let seen = first.method else { throw fail("\(first.description): the stack does not say which PDU it was") }
        guard seen == method else { throw fail(first.description) }
        session.note = "\(write.peripheral) received \(first.description)"
    }

    private func checkReceived(_ e: PeripheralReceivedExpectation, fail: (String) -> StepFailure) throws {
        guard let handle = session.valueHandle(e.characteristic, on: e.peripheral) else { throw fail("\(e.peripheral) has no characteristic \(e.characteristic)") }
        let key = LinkObservations.Key(peripheral: e.peripheral, handle: handle)
        let mark = session.writeMarks[key] ?? 0
        let markStep = session.writeMarkSteps[key]
        let filter = WriteFilter(value: e.value, via: e.via)
        func matching() -> ReceivedWriteMatch? {
            session.observations.latestWrite(e.peripheral, handle, matching: filter, since: mark).map { ReceivedWriteMatch(write: $0) }
        }
        try session.waitFor("a write of \(e.characteristic) to reach \(e.peripheral) (within: \(e.within))", within: e.within) { matching() != nil }
        let received = session.observations.writes(e.peripheral, handle, since: mark)
        let match = matching()
        session.writeMarks[key] = session.observations.writeCount(e.peripheral, handle)
        guard let match else {
            let since = self.since(markStep, accounted: mark, what: "write")
            if received.count == 0 { throw fail("no write of \(e.characteristic) reached \(e.peripheral)\(since)") }
            let more = received.count - received.kept.count
            throw fail((since.isEmpty ? "" : "\(since.dropFirst()): ") + received.kept.map { "\($0.time) \($0.description)" }.joined(separator: "; ")
                + (more > 0 ? "; and \(more) more" : ""))
        }
        session.note = "\(match.write.time) \(match.write.description)"
    }

    private struct ReceivedWriteMatch { var write: LinkObservations.ReceivedWrite }

    private func checkNotifications(_ e: NotificationExpectation, fail: (String) -> StepFailure) throws {
        guard let handle = session.valueHandle(e.characteristic, on: e.peripheral) else { throw fail("\(e.peripheral) has no characteristic \(e.characteristic)") }
        let key = LinkObservations.Key(peripheral: e.peripheral, handle: handle)
        let mark = session.notificationMarks[key] ?? 0
        let markStep = session.notificationMarkSteps[key]
        let (count, exact) = e.awaited
        // Counted after every task of the wait: a count, never a copy of what arrived.
        func arrivedCount() -> Int { session.observations.arrivalCount(e.peripheral, handle) - mark }
        try session.waitFor("\(count) notification\(count == 1 ? "" : "s") of \(e.characteristic) from \(e.peripheral) (\(arrivedCount()) arrived, within: \(e.within))",
                    within: e.within) { arrivedCount() >= count }
        let got = session.observations.arrivals(e.peripheral, handle, since: mark)
        session.notificationMarks[key] = mark + got.count
        guard got.count >= count else {
            let since = self.since(markStep, accounted: mark, what: "notification")
            throw fail(got.count == 0 ? "no notification of \(e.characteristic) arrived\(since)" : describe(got, of: e.characteristic) + since)
        }
        if exact && got.count > count { throw fail(describe(got, of: e.characteristic)) }
        // More than the log keeps in full is more than any in-order list of the scenario.
        if let inOrder = e.inOrder, got.values.map({ $0 != inOrder }) ?? true { throw fail(describe(got, of: e.characteristic)) }
        if let value = e.value, let last = got.last, last.value != value {
            throw fail("the last of \(got.count) was \(ValueText.describe(last.value)) (\(describe(got, of: e.characteristic)))")
        }
        session.note = describe(got, of: e.characteristic)
    }

    /// "2 notifications of FFE1: text:a at 1.2s, text:b at 2.2s" (at most 10 listed).
    func describe(_ arrivals: ArrivalsSince, of ref: CharacteristicRef) -> String {
        let kind = arrivals.indications == arrivals.count && arrivals.count > 0 ? "indication" : "notification"
        var s = "\(arrivals.count) \(kind)\(arrivals.count == 1 ? "" : "s") of \(ref)"
        guard arrivals.count > 0 else { return s }
        let listed = arrivals.listed.prefix(10).map { "\(ValueText.describe($0.value)) at \($0.time)" }
        s += ": " + listed.joined(separator: ", ") + (arrivals.count > listed.count ? ", …" : "")
        return s
    }

    /// The reason the central got for the end of its link to `id`, as BLELab's peripheral saw it
    /// (another stack in the central's seat does not say). Disconnection Complete gives each end
    /// its own view (Core Vol 4 Part E 7.7.5): the end that asked gets Connection Terminated By
    /// Local Host and the other the reason HCI Disconnect gave, so when the peripheral got 0x16 the
    /// central got the reason in the peripheral's last HCI Disconnect, and when the peripheral got
    /// the central's reason the central got 0x16; a timeout is both ends' own.
    func centralSideReason(_ id: String) -> HCIStatus? {
        guard let peripheral = session.peripherals[id] else { return nil }
        let seen = peripheral.activity.lazy.reversed().compactMap { entry -> HCIStatus? in
            if case let .disconnected(_, r) = entry.kind { return r }
            return nil
        }.first
        guard let seen else { return nil }
        if seen == .connectionTerminatedByLocalHost {
            // The reason of its host's latest HCI_Disconnect (watched as it went out: the log
            // keeps only recent packets).
            return session.lastDisconnectAsked[id]
        }
        // A reason HCI Disconnect allows (Vol 4 Part E 7.1.6) came from the central's own Disconnect.
        return [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B].contains(seen.rawValue) ? .connectionTerminatedByLocalHost : seen
    }
}

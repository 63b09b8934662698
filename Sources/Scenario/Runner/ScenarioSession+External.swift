import ATT
import BLELab
import BLERuntime
import BLEWire
import GATT
import HCI
import ScenarioFormat

/// Steps and expectations when another stack plays a seat (ExternalRoles.swift). With an
/// external central, what crossed the link is judged on the HCI of BLELab's peripherals: the
/// writes they received (and by which ATT PDU), and the values the central's stack delivered
/// to its application.
extension ScenarioSession {
    // MARK: Set-up and end

    func addExternalPeripheral(_ spec: PeripheralSpec, provider: ExternalPeripheralProvider) throws {
        let peripheral: ExternalPeripheral
        do { peripheral = try provider.makePeripheral(spec, lab: lab) } catch {
            throw StepFailure(kind: .setup, expected: "\(spec.id) served by \(provider.description)", seen: "\(error)")
        }
        externalPeripherals[spec.id] = peripheral
        let id = spec.id
        peripheral.onActivity = { [unowned self] activity in
            self.record(TimelineEvent(time: activity.time, device: id, kind: .peripheral, text: Self.describe(activity)))
        }
        peripheral.onWrite = { [unowned self] write in
            guard let handle = self.valueHandle(write.characteristic, on: id) else { return }
            // bluetoothd 5.66 does not tell a GATT application which PDU carried a write: take it
            // from the central's side of the link, the last write PDU it sent for the handle.
            let sent = write.method == nil ? self.lastWriteSent(to: handle) : nil
            let method = write.method ?? sent?.method
            let how = sent.map { "\($0.description) from the central" }
                ?? method.map { $0 == .request ? "a request" : "a command" } ?? "a write of unstated type"
            self.observations.received(id, handle: handle, time: self.now, value: write.value, method: method,
                                       description: "\(provider.description) handed the application \(write.value.count) octets (\(how))")
        }
    }

    /// The last write PDU BLELab's central sent for `handle`: how it went, in spec terms.
    func lastWriteSent(to handle: UInt16) -> (method: WriteMethod, description: String)? {
        guard let central else { return nil }
        for record in central.traffic.records.reversed() where record.wasSent {
            switch record.pdu {
            case let .writeRequest(w)? where w.handle == handle: return (.request, "Write Request")
            case let .writeCommand(w)? where w.handle == handle: return (.command, "Write Command")
            case let .prepareWriteRequest(p)? where p.handle == handle: return (.request, "Prepare Write Requests")
            default: continue
            }
        }
        return nil
    }

    func beginExternalCentral() throws {
        guard let external = externalCentral else { return }
        external.onValue = { [unowned self] address, ref, value in
            guard let id = self.peripheralID(at: address), let handle = self.valueHandle(ref, on: id) else { return }
            self.observations.delivered(id, handle: handle, time: self.now, value: value)
            self.record(TimelineEvent(time: self.now, device: "central", kind: .att, text: "\(external.description) delivered \(ref) = \(ValueText.describe(value))",
                                      direction: "received", bytes: value))
        }
        external.onDisconnected = { [unowned self] address in
            guard let id = self.peripheralID(at: address) else { return }
            self.externalConnections.remove(id)
            self.record(TimelineEvent(time: self.now, device: "central", kind: .peripheral, text: "\(external.description): \(id) disconnected"))
        }
        if external is UnoccupiedCentral { keepAnnouncing() }
        let result = try operate("\(external.description) to start", limit: .seconds(20)) { done in external.begin(lab: lab, completion: done) }
        if case let .failure(error) = result {
            throw StepFailure(kind: .setup, expected: "the central played by \(external.description)", seen: "\(error)")
        }
    }

    /// Lets the external roles disconnect and unregister (bounded), also after failures.
    func endExternalRoles() {
        guard let lab else { return }
        var pending = 0
        if let external = externalCentral {
            pending += 1
            external.end { pending -= 1 }
        }
        for (_, peripheral) in externalPeripherals.sorted(by: { $0.key < $1.key }) {
            pending += 1
            peripheral.stop { pending -= 1 }
        }
        if pending > 0 { lab.run(within: .seconds(10)) { pending == 0 } }
    }

    // MARK: Central steps

    /// Runs `step` with the external central; false when the step is not the central's to do.
    func executeExternal(_ step: CentralStep, position: Int) throws -> Bool {
        guard let external = externalCentral else { return false }
        switch step.action {
        case let .scan(scan):
            let started = try operate("the scan to start") { done in external.startScan(scan, completion: done) }
            if case let .failure(error) = started { throw StepFailure(kind: .operation, expected: "the scan to start", seen: "\(error)") }
            reannounceAdvertising()
            try pass(scan.duration, doing: "the end of the scan (for: \(scan.duration))")
            let stopped = try operate("the scan to stop") { done in external.stopScan(completion: done) }
            let reports: [ExternalScanReport]
            switch stopped {
            case let .success(r): reports = r
            case let .failure(error): throw StepFailure(kind: .operation, expected: "the scan to stop", seen: "\(error)")
            }
            var found: [String: ExternalScanReport] = [:]
            var others = 0
            // min-rssi: the stack's RSSI of the report (one it did not give cannot pass).
            let strongEnough = { (r: ExternalScanReport) in scan.minRSSI.map { floor in r.rssi.map { $0 >= floor } ?? false } ?? true }
            for report in reports where (scan.names.isEmpty || report.names.contains(where: scan.names.contains)) && strongEnough(report) {
                if let id = peripheralID(at: report.address) { found[id] = report } else { others += 1 }
            }
            externalScan = ExternalScan(step: step.index, found: found, others: others)
            everFound.formUnion(found.keys)
            note = found.isEmpty ? "discovered nothing" : "discovered " + describeExternalScan(found)
        case let .connect(id, within):
            let remembered = expectsInterruption(after: position, linkLost: false, of: id)
            guard everFound.contains(id) || remembered, let address = address(of: id) else {
                throw StepFailure(kind: .operation, expected: "\(id) discovered by a scan before connecting",
                                  seen: externalScan == nil ? "no scan has run" : "no scan discovered \(id)")
            }
            // The role bounds Connect by `within`; the rest covers its wait for Connected after
            // the call returned (bluetoothd may send the reply before the property change).
            let result = try operate("the connection to \(id) (within: \(within))", limit: within + .seconds(12)) { done in
                external.connect(to: address, within: within, completion: done)
            }
            if case let .failure(error) = result {
                var reason: ConnectFailureReason?
                if case .timeout = error { reason = .timeout }
                try connectFailed(id, step: step, position: position, reason: reason, seen: "\(error)", within: within)
                return true
            }
            lastConnect = ConnectAttempt(step: step, peripheral: id, time: now, outcome: .connected(nil))
            externalConnections.insert(id)
            everConnected.insert(id)
            note = "connected to \(id) at \(address)"
        case let .disconnect(id, within):
            let address = try externalLive(id)
            let result = try operate("the disconnection from \(id)", limit: within ?? Self.operationLimit) { done in
                external.disconnect(from: address, completion: done)
            }
            if case let .failure(error) = result {
                throw StepFailure(kind: .operation, expected: "the connection to \(id) to end", seen: "\(error)")
            }
            externalConnections.remove(id)
            note = "disconnected from \(id)"
        case let .discover(id, services):
            let address = try externalTarget(id)
            let result = try operate("discovery on \(id)") { done in external.discover(on: address, services: services, completion: done) }
            if let found = try settleExternal(result, "discovery on \(id)", step: step, position: position) {
                externalServices[id] = found
                note = "services " + found.map { s in "\(s.uuid) [\(s.characteristics.map(\.uuid.description).joined(separator: ", "))]" }.joined(separator: ", ")
            }
        case let .exchangeMTU(id, mtu):
            // bluetoothd exchanges the MTU itself when it connects; there is no call for it.
            let address = try externalLive(id)
            lastExternalOperation = (step, nil)
            note = "\(external.description) negotiates ATT_MTU itself (asked for \(mtu)); ATT_MTU is \(external.mtu(on: address).map(String.init) ?? "not reported")"
        case let .read(id, ref):
            let address = try externalTarget(id)
            try externalCharacteristic(ref, on: id)
            let result = try operate("the read of \(ref)") { done in external.read(ref, on: address, completion: done) }
            if let value = try settleExternal(result, "the read of \(ref)", step: step, position: position) {
                lastRead = (step.index, value)
                note = "read \(ValueText.describe(value))"
            }
        case let .write(w):
            let address = try externalTarget(w.peripheral)
            try externalCharacteristic(w.characteristic, on: w.peripheral)
            let handle = valueHandle(w.characteristic, on: w.peripheral)
            externalWriteMark = ExternalWriteMark(step: step, peripheral: w.peripheral,
                                                  count: handle.map { observations.writes(w.peripheral, $0).count } ?? 0)
            let request = ExternalWrite(value: w.value, type: w.type, acquire: step.acquire)
            let result = try operate("the write to \(w.characteristic)") { done in
                external.write(request, to: w.characteristic, on: address, completion: done)
            }
            if try settleExternal(result, "the write to \(w.characteristic)", step: step, position: position) != nil {
                note = "\(step.acquire ? "AcquireWrite" : "WriteValue") returned"
            }
        case let .subscribe(id, ref), let .unsubscribe(id, ref):
            let enable: Bool
            if case .subscribe = step.action { enable = true } else { enable = false }
            let address = try externalTarget(id)
            try externalCharacteristic(ref, on: id)
            let handle = valueHandle(ref, on: id)
            let before = handle.map { observations.arrivals(id, $0).count }
            let what = "\(enable ? "the subscription to" : "the unsubscription from") \(ref)"
            let acquire = step.acquire
            let result = try operate(what) { done in
                external.setNotifications(enable, for: ref, on: address, acquire: acquire, completion: done)
            }
            if try settleExternal(result, what, step: step, position: position) != nil {
                note = enable ? (acquire ? "AcquireNotify" : "StartNotify") : (acquire ? "AcquireNotify's socket closed" : "StopNotify")
            }
            if let handle {
                let key = LinkObservations.Key(peripheral: id, handle: handle)
                notificationMarks[key] = enable ? before ?? 0 : observations.arrivals(id, handle).count
            }
        default:
            return false
        }
        return true
    }

    /// Has every advertising BLELab peripheral enable its advertising again, now that the
    /// external central scans. A real advertiser sends an advertising event every interval, so a
    /// scan that starts late still hears the next one; Linux's emulated controllers (btvirt)
    /// instead report an advertiser once, when scanning or advertising is enabled, and Linux 6.1
    /// drops a report that arrives before its discovery has reached the finding state (fixed in
    /// later kernels: "Bluetooth: hci_event: Set DISCOVERY_FINDING on SCAN_ENABLED"). Enabling
    /// again stands for the next advertising event.
    private func reannounceAdvertising() {
        for spec in scenario.peripherals {
            guard let host = peripherals[spec.id]?.host, host.isAdvertising, let configuration = host.advertisingConfiguration else { continue }
            host.startAdvertising(configuration)
        }
    }

    /// With the central's seat left to a program outside the lab, nobody says when it scans:
    /// re-announce every second (see `reannounceAdvertising`), as a real advertiser's events keep
    /// coming.
    private func keepAnnouncing() {
        lab.loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self, self.lab != nil, self.current != nil || self.stepRecords.isEmpty else { return }
            self.reannounceAdvertising()
            self.keepAnnouncing()
        }
    }

    private func describeExternalScan(_ found: [String: ExternalScanReport]) -> String {
        scenario.peripherals.compactMap { spec in
            found[spec.id].map { r in r.rssi.map { "\(spec.id) (\($0) dBm)" } ?? spec.id }
        }.joined(separator: ", ")
    }

    /// The address `id` is at: BLELab's device, or what the external peripheral reports.
    func address(of id: String) -> LEAddress? {
        peripherals[id]?.device.address ?? externalPeripherals[id]?.address
    }

    /// The address of a peripheral the central connected to at some point: GATT steps go to the
    /// central's stack even after the link ended, so that what it says then is what is reported.
    private func externalTarget(_ id: String) throws -> LEAddress {
        guard let address = address(of: id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "\(id) has no address")
        }
        guard everConnected.contains(id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "never connected to \(id)")
        }
        return address
    }

    private func externalLive(_ id: String) throws -> LEAddress {
        guard let address = address(of: id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "\(id) has no address")
        }
        guard externalConnections.contains(id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "not connected to \(id)")
        }
        guard externalCentral?.isConnected(address) == true else {
            externalConnections.remove(id)
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "the connection ended")
        }
        return address
    }

    @discardableResult
    private func externalCharacteristic(_ ref: CharacteristicRef, on id: String) throws -> ExternalCharacteristic {
        let services = externalServices[id] ?? []
        for service in services where ref.service == nil || service.uuid == ref.service {
            if let c = service.characteristics.first(where: { $0.uuid == ref.characteristic }) { return c }
        }
        let seen = services.isEmpty ? "nothing discovered yet (add a discover step)"
            : "discovery found \(services.flatMap { s in s.characteristics.map { "\(s.uuid)/\($0.uuid)" } }.joined(separator: ", "))"
        throw StepFailure(kind: .operation, expected: "characteristic \(ref) discovered on \(id)", seen: seen)
    }

    private func settleExternal<T>(_ result: Result<T, ExternalRoleError>, _ what: String, step: CentralStep, position: Int) throws -> T? {
        switch result {
        case let .success(value):
            lastExternalOperation = (step, nil)
            return value
        case let .failure(error):
            lastExternalOperation = (step, error)
            let following = scenario.steps[(position + 1)...].prefix { $0.isExpectation }
            // The link ended under it (the stack says only that the call failed; the link tells).
            if error.attErrorCode == nil, let id = step.action.peripheral, let address = address(of: id),
               externalCentral?.isConnected(address) == false, expectsInterruption(after: position, linkLost: true, of: id) {
                externalConnections.remove(id)
                note = "cut short: the link to \(id) ended (\(error))"
                return nil
            }
            guard let code = error.attErrorCode else {
                throw StepFailure(kind: .operation, expected: "\(what) to complete", seen: "\(error)")
            }
            note = "ATT error \(code)"
            guard following.contains(where: { if case .expect(.error) = $0.action { return true }; return false }) else {
                throw StepFailure(kind: .unexpectedATTError,
                                  expected: "\(what) to succeed, or an 'expect: { error: \(code.name) }' right after the step",
                                  seen: "\(error)")
            }
            return nil
        }
    }

    // MARK: Expectations

    /// Checks `expectation` with the external central; false when the common check applies.
    func checkExternal(_ expectation: Expectation, fail: (String) -> StepFailure) throws -> Bool {
        guard let external = externalCentral else { return false }
        switch expectation {
        case let .discovered(id), let .notDiscovered(id):
            guard let scan = externalScan else { throw fail("no scan has run") }
            var wanted = false
            if case .discovered = expectation { wanted = true }
            let summary = scan.found.isEmpty ? "nothing" : describeExternalScan(scan.found)
            guard (scan.found[id] != nil) == wanted else {
                throw fail("the last scan (step \(scan.step)) discovered \(summary)\(scan.others > 0 ? " and \(scan.others) other device(s)" : "")")
            }
            note = "the last scan discovered \(summary)"
        case let .connected(id):
            guard externalConnections.contains(id), let address = address(of: id), external.isConnected(address) else {
                throw fail(externalConnections.contains(id) ? "the connection ended" : "not connected to \(id)")
            }
        case let .services(list, id):
            let found = (externalServices[id] ?? []).map(\.uuid)
            let missing = list.filter { !found.contains($0) }
            guard missing.isEmpty else {
                throw fail(found.isEmpty ? "no services discovered" : "services \(found.map(\.description).joined(separator: ", ")) (no \(missing.map(\.description).joined(separator: ", ")))")
            }
        case let .characteristic(ref, properties, id):
            let c: ExternalCharacteristic
            do { c = try externalCharacteristic(ref, on: id) } catch let f as StepFailure { throw fail(f.seen) }
            guard c.properties == properties else { throw fail("\(ref) has properties \(c.properties)") }
        case let .writeSentAs(method):
            // Judged where the write arrived: the peripheral's HCI (its stack decoded the PDU).
            guard let mark = externalWriteMark else { throw fail("no write has run") }
            guard let handle = mark.handle(self) else { throw fail("\(mark.peripheral) has no such characteristic") }
            try waitFor("the write to reach \(mark.peripheral)", within: Expectation.defaultWithin) {
                self.observations.writes(mark.peripheral, handle).count > mark.count
            }
            guard let first = observations.writes(mark.peripheral, handle).dropFirst(mark.count).first else {
                throw fail("no write PDU reached \(mark.peripheral) after step \(mark.step.index)")
            }
            guard let seen = first.method else { throw fail("\(first.description): the stack does not say which PDU it was") }
            guard seen == method else { throw fail(first.description) }
            note = "\(mark.peripheral) received \(first.description)"
        case let .error(code):
            guard let last = lastExternalOperation else { throw fail("no operation has run") }
            guard let error = last.error else { throw fail("step \(last.step.index) (\(last.step.text)) succeeded") }
            guard error.attErrorCode == code else { throw fail("step \(last.step.index) (\(last.step.text)) got \(error)") }
            note = "step \(last.step.index) got \(code)"
        case let .disconnected(id, reason, within):
            guard let address = address(of: id) else { throw fail("\(id) has no address") }
            let ended = try waitFor("the disconnection of \(id) (within: \(within))", within: within) { !external.isConnected(address) }
            guard ended else { throw fail("still connected after \(within)") }
            externalConnections.remove(id)
            // bluetoothd does not tell the reason: it is read from the peripheral's side of the link.
            if let reason {
                // The peripheral's end may hear of it a moment after the central's stack.
                if peripherals[id] != nil { try waitFor("\(id)'s host to hear the link end", within: within) { !self.peripheralHasLink(id) } }
                let seen = centralSideReason(id)
                guard seen == reason else { throw fail("disconnected with reason \(seen.map { "\($0)" } ?? "unknown (\(id) saw none)")") }
            }
            note = "disconnected"
        case let .rssi(e):
            try checkExternalRSSI(e, fail: fail)
        default:
            return false
        }
        return true
    }
}

extension ScenarioSession {
    /// The reason the central got for the end of its link to `id`, as BLELab's peripheral saw it
    /// (another stack in the central's seat does not say). Disconnection Complete gives each end
    /// its own view (Core Vol 4 Part E 7.7.5): the end that asked gets Connection Terminated By
    /// Local Host and the other the reason HCI Disconnect gave, so when the peripheral got 0x16 the
    /// central got the reason in the peripheral's last HCI Disconnect, and when the peripheral got
    /// the central's reason the central got 0x16; a timeout is both ends' own.
    func centralSideReason(_ id: String) -> HCIStatus? {
        guard let peripheral = peripherals[id] else { return nil }
        let seen = peripheral.activity.lazy.reversed().compactMap { entry -> HCIStatus? in
            if case let .disconnected(_, r) = entry.kind { return r }
            return nil
        }.first
        guard let seen else { return nil }
        if seen == .connectionTerminatedByLocalHost {
            // HCI_Disconnect: 01 06 04 03 handle(2) reason.
            let asked = peripheral.device.log.packets.last { p in
                p.direction == .hostToController && p.frame.count == 7 && Array(p.frame.prefix(4)) == [0x01, 0x06, 0x04, 0x03]
            }
            return asked.map { HCIStatus(rawValue: $0.frame[6]) }
        }
        // A reason HCI Disconnect allows (Vol 4 Part E 7.1.6) came from the central's own Disconnect.
        return [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B].contains(seen.rawValue) ? .connectionTerminatedByLocalHost : seen
    }
}

/// The external central's last scan.
struct ExternalScan {
    var step: Int
    var found: [String: ExternalScanReport]
    var others: Int
}

/// Where a peripheral's received writes stood when a write step started.
struct ExternalWriteMark {
    var step: CentralStep
    var peripheral: String
    var count: Int

    func handle(_ session: ScenarioSession) -> UInt16? {
        guard case let .write(w) = step.action else { return nil }
        return session.valueHandle(w.characteristic, on: peripheral)
    }
}

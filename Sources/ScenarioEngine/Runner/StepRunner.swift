import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

/// Runs a scenario's steps, one path whoever plays the seats: the central's steps through its
/// `CentralSeat` (docs/scenarios.md section 5), `peripheral:` steps through each `PeripheralSeat`,
/// waits, and hands `expect:` steps to the judge and `fault:` steps to `FaultSteps`. What the
/// steps saw goes into the session's account.
final class StepRunner {
    unowned let session: ScenarioSession

    init(session: ScenarioSession) {
        self.session = session
    }

    func execute(_ step: CentralStep, position: Int) throws {
        if Self.needsTheCentral(step.action), let off = session.centralOff() { throw off }
        if !step.isExpectation, let failed = session.security.unjudgedFailure() { throw failed }
        switch step.action {
        case let .scan(scan): try self.scan(scan, step: step)
        case let .connect(id, within): try connect(id, within: within, step: step, position: position)
        case let .discover(id, services): try discover(id, services: services, step: step, position: position)
        case let .exchangeMTU(id, mtu): try exchangeMTU(id, mtu: mtu, step: step, position: position)
        case let .read(id, ref): try read(ref, on: id, step: step, position: position)
        case let .write(w): try write(w, step: step, position: position)
        case let .readDescriptor(id, d): try readDescriptor(d, on: id, step: step, position: position)
        case let .writeDescriptor(id, d, value): try writeDescriptor(d, value, on: id, step: step, position: position)
        case let .subscribe(id, ref): try subscribe(ref, on: id, enable: true, step: step, position: position)
        case let .unsubscribe(id, ref): try subscribe(ref, on: id, enable: false, step: step, position: position)
        case let .wait(span): try session.pass(span, doing: "the end of wait: \(span)")
        case let .disconnect(id, within): try disconnect(id, within: within)
        case let .peripheralActions(list): try perform(list, step: step)
        case let .expect(expectation): try session.judge.check(expectation, step: step)
        case let .fault(fault): try session.faults.execute(fault, step: step)
        case let .security(security): try self.security(security, step: step, position: position)
        }
    }

    /// Steps that drive the central's controller: after `power-off: central` they fail at once.
    /// Waits, peripheral steps, faults on the air and expectations (which end when they would
    /// wait) do not.
    static func needsTheCentral(_ action: CentralAction) -> Bool {
        switch action {
        case .scan, .connect, .discover, .exchangeMTU, .read, .write, .readDescriptor, .writeDescriptor, .subscribe, .unsubscribe,
             .disconnect, .fault(.centralPowerOff), .fault(.connectionUpdate), .security(.pair), .security(.encrypt):
            return true
        case .wait, .peripheralActions, .expect, .fault, .security:
            return false
        }
    }

    private func scan(_ scan: ScanStep, step: CentralStep) throws {
        let started = try session.operate("the scan to start") { done in session.central.startScan(scan, completion: done) }
        if case let .failure(error) = started { throw StepFailure(kind: .operation, expected: "the scan to start", seen: "\(error)") }
        if session.central.needsAdvertisingReannounced { session.reannounceAdvertising() }
        try session.pass(scan.duration, doing: "the end of the scan (for: \(scan.duration))")
        let reports: [SeatScanReport]
        switch try session.operate("the scan to stop", { done in session.central.stopScan(completion: done) }) {
        case let .success(r): reports = r
        case let .failure(error): throw StepFailure(kind: .operation, expected: "the scan to stop", seen: "\(error)")
        }
        var found: [String: SeatScanReport] = [:]
        var others = 0
        // min-rssi: the report's RSSI (one the stack did not give cannot pass).
        let strongEnough = { (r: SeatScanReport) in scan.minRSSI.map { floor in r.rssi.map { $0 >= floor } ?? false } ?? true }
        for report in reports where (scan.names.isEmpty || report.names.contains(where: scan.names.contains)) && strongEnough(report) {
            if let id = session.peripheralID(at: report.address) {
                found[id] = report
                session.heard(id, at: report.address)
            } else {
                others += 1
            }
        }
        session.followPrivateAddresses(found)
        session.lastScan = (step.index, found, others)
        session.discovered.formUnion(found.keys)
        session.note = found.isEmpty ? "discovered nothing" : "discovered " + session.describeScan(found)
    }

    /// Connects to `id`, which a scan must have found. A connect that a `connect-failed` right
    /// after it expects to fail may also aim at a peripheral no scan found, at its declared
    /// address, as an app reconnects to a device it remembers.
    private func connect(_ id: String, within: TimeSpan, step: CentralStep, position: Int) throws {
        if session.everConnected.contains(id), let address = session.address(of: id), session.central.isConnected(address) {
            throw StepFailure(kind: .operation, expected: "a new connection to \(id)", seen: "already connected to \(id)")
        }
        let remembered = expectsInterruption(after: position, linkLost: false, of: id)
        guard session.discovered.contains(id) || remembered, let address = session.address(of: id) else {
            let scanned = session.lastScan == nil ? "no scan has run" : "no scan discovered \(id)"
            throw StepFailure(kind: .operation, expected: "\(id) discovered by a scan before connecting", seen: scanned)
        }
        var result: Result<Void, SeatError>?
        session.central.connect(to: address, within: within, scan: step.connectScan, parameters: step.connectParameters) { if result == nil { result = $0 } }
        // The seat bounds the attempt by `within`; its completion may follow a little later.
        try session.waitFor("the connection to \(id) (within: \(within))", within: within + session.central.connectGrace) { result != nil }
        switch result {
        case .success?:
            session.everConnected.insert(id)
            let connection = session.central.connection(to: address)
            if let connection { session.connections[id] = connection }
            session.lastConnect = ConnectAttempt(step: step, peripheral: id, time: session.now, outcome: .connected(connection))
            if let connection {
                connection.whenDisconnected { [weak self] _ in
                    // The connection may end after this run is over (a lab's host outlives its runner).
                    guard let self else { return }
                    self.session.linkEnded[id] = self.session.now
                }
                session.observations.connected(id, centralHandle: connection.handle)
            }
            session.note = "connected to \(id) at \(address)" + (connection.map { ", handle \(hex4($0.handle))" } ?? "")
            if step.gattCache { try restoreGATTCache(of: id, on: address) }
        case let .failure(error)?:
            let (reason, seen) = Self.connectFailure(error, within: within)
            try connectFailed(id, step: step, position: position, reason: reason, seen: seen, within: within)
        case nil:
            session.central.abandonConnect()
            throw StepFailure(kind: .operation, expected: "a connection to \(id) within \(within)", seen: "no answer from the controller")
        }
    }

    /// `gatt-cache: true`: the central takes the peripheral's database as known, as an app with
    /// a GATT cache does, from the database the lab serves it with.
    private func restoreGATTCache(of id: String, on address: LEAddress) throws {
        guard let database = session.peripheralSeats[id]?.simulated?.server.database else {
            throw StepFailure(kind: .operation, expected: "\(id)'s GATT database, to take as the central's cache (gatt-cache: true)",
                              seen: "\(id) is served by another stack, whose handles the lab does not know")
        }
        if let why = session.central.restoreGATTCache(database.asDiscovered, on: address) {
            throw StepFailure(kind: .operation, expected: "the central to take \(id)'s database as its GATT cache", seen: why)
        }
        session.note = (session.note ?? "") + "; the central's GATT cache holds \(id)'s \(database.services.count) services"
    }

    /// Why a connect gave no connection, named when it has a name, and in words.
    static func connectFailure(_ error: SeatError, within: TimeSpan) -> (ConnectFailureReason?, String) {
        switch error {
        case .host(.timeout): return (.timeout, "no connection within \(within)")
        case let .host(.command(_, status)): return (.status(status), "\(error)")
        case .timeout: return (.timeout, "\(error)")
        default: return (nil, "\(error)")
        }
    }

    /// Ends the connection and waits for its end: `within`, or by default as long as the link's
    /// termination procedure can take (`Connection.terminationBound`: a slow link's
    /// LL_TERMINATE_IND may wait seconds for the peripheral to listen).
    private func disconnect(_ id: String, within: TimeSpan?) throws {
        let address = try session.linked(id)
        let connection = session.central.connection(to: address)
        let limit = within ?? connection?.terminationBound ?? ScenarioSession.operationLimit
        var result: Result<Void, SeatError>?
        session.central.disconnect(from: address) { if result == nil { result = $0 } }
        let ended = try session.waitFor("the disconnection from \(id) (within: \(limit))", within: limit) { result != nil }
        if case let .failure(error)? = result {
            throw StepFailure(kind: .operation, expected: "the connection to \(id) to end", seen: "\(error)")
        }
        guard ended else {
            throw StepFailure(kind: .operation, expected: "the connection to \(id) to end within \(limit)",
                              seen: "still connected after \(limit)" + (session.central.whyStillConnected(address).map { " (\($0))" } ?? ""))
        }
        session.note = "disconnected from \(id)" + (connection.map { ": \($0.disconnectReason.map { "\($0)" } ?? "?")" } ?? "")
    }

    /// Settles an operation's result: success, or an ATT error that the `expect` steps right
    /// after it must expect, or a failure (`expected`: what the step's failure says it expected).
    private func settle<T>(_ result: Result<T, SeatError>, _ what: String, expected: String? = nil,
                           step: CentralStep, position: Int) throws -> T? {
        switch result {
        case let .success(value):
            session.lastOperation = (step, nil)
            return value
        case let .failure(error):
            session.lastOperation = (step, error)
            if case let .gatt(.linkLost(reason)) = error {
                try cutShort(error, reason: reason, what, step: step, position: position)
                return nil
            }
            let following = session.scenario.steps[(position + 1)...].prefix { $0.isExpectation }
            guard let code = error.attErrorCode else {
                if case let .gatt(failure) = error {
                    if expectsFailure(failure, following: following) {
                        session.note = describe(failure, of: step)
                        return nil
                    }
                    throw StepFailure(kind: .operation, expected: expected ?? "\(what) to complete", seen: describe(failure, of: step))
                }
                // A stack that says only that the call failed: the link tells whether it ended under it.
                if let id = step.action.peripheral, let address = session.address(of: id), !session.central.isConnected(address),
                   expectsInterruption(after: position, linkLost: true, of: id) {
                    session.note = "cut short: the link to \(id) ended (\(error))"
                    return nil
                }
                throw StepFailure(kind: .operation, expected: expected ?? "\(what) to complete", seen: "\(error)")
            }
            session.note = "ATT error \(code)"
            // An auto-pair that failed is judged by the `pairing-failed` (or `encryption-failed`) right after.
            let securityFailed = (code == .insufficientAuthentication || code == .insufficientEncryption) && session.security.autoPair != nil
                && following.contains { if case .expect(.security(.pairingFailed)) = $0.action { return true }
                                        if case .expect(.security(.encryptionFailed)) = $0.action { return true }; return false }
            let expectsAnError = securityFailed || following.contains { if case .expect(.error) = $0.action { return true }; return false }
            guard expectsAnError else {
                var seen = "\(error)"
                if case let .gatt(failure) = error { seen = "ATT Error Response \(code) for handle \(hex4(Self.handle(of: failure)))" }
                if let why = session.security.autoPairFailure { seen += "; auto-pair: \(why)" }
                throw StepFailure(kind: .unexpectedATTError,
                                  expected: "\(what) to succeed, or an 'expect: { error: \(code.name) }' right after the step", seen: seen)
            }
            return nil
        }
    }

    private func discover(_ id: String, services: [BluetoothUUID]?, step: CentralStep, position: Int) throws {
        guard let address = try target(id, step: step, position: position) else { return }
        let result = try session.operate("discovery on \(id)") { done in session.central.discover(on: address, services: services, completion: done) }
        if let found = try settle(result, "discovery on \(id)", step: step, position: position) {
            session.note = "services " + found.map { s in "\(s.uuid) [\(s.characteristics.map(\.uuid.description).joined(separator: ", "))]" }.joined(separator: ", ")
        }
    }

    private func exchangeMTU(_ id: String, mtu: Int, step: CentralStep, position: Int) throws {
        guard let address = try target(id, step: step, position: position) else { return }
        let result = try session.operate("Exchange MTU with \(id)") { done in session.central.exchangeMTU(mtu, on: address, completion: done) }
        if let value = try settle(result, "Exchange MTU with \(id)", step: step, position: position) {
            session.note = session.central.describe(.mtu(asked: mtu, now: value ?? session.central.mtu(on: address)))
        }
    }

    private func read(_ ref: CharacteristicRef, on id: String, step: CentralStep, position: Int) throws {
        guard let address = try target(id, step: step, position: position) else { return }
        try session.characteristic(ref, on: id, at: address)
        let result = try operateSecured(id, "the read of \(ref)") { done in session.central.read(ref, on: address, completion: done) }
        if let value = try settle(result, "the read of \(ref)", step: step, position: position) {
            session.lastRead = (step.index, value)
            session.note = "read \(ValueText.describe(value))"
        }
    }

    private func write(_ w: WriteStep, step: CentralStep, position: Int) throws {
        guard let address = try target(w.peripheral, step: step, position: position) else { return }
        let c = try session.characteristic(w.characteristic, on: w.peripheral, at: address)
        let handle = session.valueHandle(w.characteristic, on: w.peripheral)
        session.lastWrite = WriteMark(step: step, peripheral: w.peripheral, centralTraffic: session.centralDevice?.traffic.records.count ?? 0,
                              connectionHandle: session.connections[w.peripheral]?.handle,
                              handle: handle, received: handle.map { session.observations.writeCount(w.peripheral, $0) } ?? 0)
        let command = w.type.method(for: c.properties) == .command
        let what = command ? "a Write Command of \(w.value.count) octet\(w.value.count == 1 ? "" : "s") to \(w.characteristic)"
            : "the write to \(w.characteristic)"
        let request = SeatWrite(value: w.value, type: w.type, acquire: step.acquire)
        let result = try operateSecured(w.peripheral, what) { done in session.central.write(request, to: w.characteristic, on: address, completion: done) }
        if try settle(result, what, expected: command ? what : nil, step: step, position: position) != nil {
            session.note = session.central.describe(.write(request))
        }
    }

    private func subscribe(_ ref: CharacteristicRef, on id: String, enable: Bool, step: CentralStep, position: Int) throws {
        guard let address = try target(id, step: step, position: position) else { return }
        try session.characteristic(ref, on: id, at: address)
        let what = "\(enable ? "the subscription to" : "the unsubscription from") \(ref)"
        let handle = session.valueHandle(ref, on: id)
        // What a subscription brings (an `on-subscribe` notify can arrive before the Write
        // Response) counts; what was in flight before an unsubscription took effect does not.
        let before = handle.map { session.observations.arrivalCount(id, $0) }
        let acquire = step.acquire, configuration = step.subscription
        let result = try operateSecured(id, what) { done in
            session.central.setNotifications(enable, for: ref, on: address, acquire: acquire, configuration: configuration, completion: done)
        }
        if try settle(result, what, step: step, position: position) != nil {
            session.note = session.central.describe(.notifications(enable: enable, acquire: acquire, configuration: configuration))
        }
        // Notifications count from here ("since subscribing").
        if let handle {
            let key = LinkObservations.Key(peripheral: id, handle: handle)
            session.notificationMarks[key] = enable ? before ?? 0 : session.observations.arrivalCount(id, handle)
        }
    }

    /// The handle of descriptor `d` as discovery found it on `id`.
    private func discovered(_ d: DescriptorRef, on id: String, connection: Connection) throws -> UInt16 {
        guard let address = session.address(of: id) else { throw StepFailure(kind: .operation, expected: "\(d) discovered on \(id)", seen: "\(id) has no address") }
        try session.characteristic(d.characteristic, on: id, at: address)
        let ref = d.characteristic
        let c = connection.client.services.lazy.filter { ref.service == nil || $0.uuid == ref.service }
            .compactMap { $0.characteristic(ref.characteristic) }.first!
        if let found = c.descriptors.first(where: { $0.uuid == d.uuid }) { return found.handle }
        let seen = c.descriptors.isEmpty ? "discovery found no descriptors of \(d.characteristic)"
            : "discovery found \(c.descriptors.map { "\($0.uuid) at \(hex4($0.handle))" }.joined(separator: ", "))"
        throw StepFailure(kind: .operation, expected: "\(d) discovered on \(id)", seen: seen)
    }

    /// Read Characteristic Descriptors (Core Vol 3 Part G 4.12.1, long ones 4.12.2).
    private func readDescriptor(_ d: DescriptorRef, on id: String, step: CentralStep, position: Int) throws {
        let connection = try session.live(id)
        let handle = try discovered(d, on: id, connection: connection)
        let result: Result<[UInt8], SeatError> = try operateSecured(id, "the read of \(d)") { done in connection.client.read(handle: handle) { done($0.mapError { SeatError.gatt($0) }) } }
        if let value = try settle(result, "the read of \(d)", step: step, position: position) {
            session.lastRead = (step.index, value)
            session.note = "read \(ValueText.describe(value)) from \(hex4(handle))"
        }
    }

    /// Write Characteristic Descriptors (Part G 4.12.3, long ones 4.12.4). A write of the CCCD
    /// counts notifications as `subscribe` and `unsubscribe` do.
    private func writeDescriptor(_ d: DescriptorRef, _ value: [UInt8], on id: String, step: CentralStep, position: Int) throws {
        let connection = try session.live(id)
        let handle = try discovered(d, on: id, connection: connection)
        let valueHandle = self.session.valueHandle(d.characteristic, on: id)
        let before = valueHandle.map { session.observations.arrivalCount(id, $0) }
        let result: Result<Void, SeatError> = try operateSecured(id, "the write of \(d)") { done in connection.client.write(value, handle: handle) { done($0.mapError { SeatError.gatt($0) }) } }
        if try settle(result, "the write of \(d)", step: step, position: position) != nil {
            session.note = "Write Request to \(hex4(handle)) accepted"
        }
        if d.uuid == .clientCharacteristicConfiguration, let valueHandle {
            let key = LinkObservations.Key(peripheral: id, handle: valueHandle)
            let enables = value.contains { $0 != 0 }
            session.notificationMarks[key] = enables ? before ?? 0 : session.observations.arrivalCount(id, valueHandle)
        }
    }

    static func handle(of error: GATTError) -> UInt16 {
        if case let .att(_, handle) = error { return handle }
        return 0
    }
}

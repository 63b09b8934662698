import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import Host
import ScenarioFormat

/// The scripted central's steps (docs/scenarios.md section 5).
extension ScenarioSession {
    func execute(_ step: CentralStep, position: Int) throws {
        if try executeExternal(step, position: position) { return }
        switch step.action {
        case let .scan(scan): try self.scan(scan, step: step)
        case let .connect(id, within): try connect(id, within: within, scan: step.connectScan ?? .connectDefault, step: step, position: position)
        case let .discover(id, services): try discover(id, services: services, step: step, position: position)
        case let .exchangeMTU(id, mtu): try exchangeMTU(id, mtu: mtu, step: step, position: position)
        case let .read(id, ref): try read(ref, on: id, step: step, position: position)
        case let .write(w): try write(w, step: step, position: position)
        case let .readDescriptor(id, d): try readDescriptor(d, on: id, step: step, position: position)
        case let .writeDescriptor(id, d, value): try writeDescriptor(d, value, on: id, step: step, position: position)
        case let .subscribe(id, ref): try subscribe(ref, on: id, enable: true, step: step, position: position)
        case let .unsubscribe(id, ref): try subscribe(ref, on: id, enable: false, step: step, position: position)
        case let .wait(span): try pass(span, doing: "the end of wait: \(span)")
        case let .disconnect(id, within): try disconnect(id, within: within)
        case let .peripheralActions(list): try perform(list, step: step)
        case let .expect(expectation): try check(expectation, step: step)
        case let .fault(fault): try execute(fault, step: step)
        }
    }

    // MARK: Scanning and connecting

    private func scan(_ scan: ScanStep, step: CentralStep) throws {
        var reports: [ScanReport] = []
        let timing = scan.timing ?? .scanDefault
        let configuration = ScanConfiguration(services: scan.services.isEmpty ? nil : scan.services, active: true,
                                              allowDuplicates: scan.duplicates, interval: timing.interval, window: timing.window,
                                              minimumRSSI: scan.minRSSI)
        let started = try operate("the scan to start") { done in
            central.host.startScanning(configuration, onReport: { reports.append($0) }, completion: done)
        }
        if case let .failure(error) = started {
            throw StepFailure(kind: .operation, expected: "the scan to start", seen: "\(error)")
        }
        try pass(scan.duration, doing: "the end of the scan (for: \(scan.duration))")
        _ = try operate("the scan to stop") { done in central.host.stopScanning(completion: done) }
        var found: [String: ScanReport] = [:]
        var others = 0
        for report in reports where scan.names.isEmpty || Self.localNames(report).contains(where: scan.names.contains) {
            if let id = peripheralID(at: report.address) {
                found[id] = report
                everDiscovered[id] = report
            } else {
                others += 1
            }
        }
        lastScan = (step.index, found, others)
        note = found.isEmpty ? "discovered nothing" : "discovered " + describeScan(found)
    }

    func describeScan(_ found: [String: ScanReport]) -> String {
        scenario.peripherals.compactMap { spec in found[spec.id].map { "\(spec.id) (\($0.rssi) dBm)" } }.joined(separator: ", ")
    }

    /// Every local name a report advertises, complete and shortened, in the advertising data and
    /// the scan response.
    static func localNames(_ report: ScanReport) -> [String] {
        (report.advertisement.structures + (report.scanResponse?.structures ?? [])).compactMap { s in
            if case let .localName(bytes, _) = s { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }
    }

    func peripheralID(at address: LEAddress) -> String? {
        scenario.peripherals.first { peripherals[$0.id]?.device.address == address }?.id
            ?? scenario.peripherals.first { externalPeripherals[$0.id]?.address == address }?.id
    }

    /// Connects to the address the latest scan that found `id` reported. A connect that a
    /// `connect-failed` right after it expects to fail may also aim at a peripheral no scan found,
    /// at its declared address, as an app reconnects to a device it remembers.
    private func connect(_ id: String, within: TimeSpan, scan: ScanTiming, step: CentralStep, position: Int) throws {
        if let existing = connections[id], existing.isConnected {
            throw StepFailure(kind: .operation, expected: "a new connection to \(id)", seen: "already connected to \(id)")
        }
        let remembered = expectsInterruption(after: position, linkLost: false, of: id) ? address(of: id) : nil
        guard let address = everDiscovered[id]?.address ?? remembered else {
            let scanned = lastScan == nil ? "no scan has run" : "no scan discovered \(id)"
            throw StepFailure(kind: .operation, expected: "\(id) discovered by a scan before connecting", seen: scanned)
        }
        var result: Result<Connection, HostError>?
        central.host.connect(to: address, timeout: within, scanInterval: scan.interval, scanWindow: scan.window) { result = $0 }
        // The host cancels the attempt at `within`; its completion follows the cancel's round trip.
        try waitFor("the connection to \(id) (within: \(within))", within: within + .seconds(1)) { result != nil }
        switch result {
        case let .success(connection)?:
            connections[id] = connection
            lastConnect = ConnectAttempt(step: step, peripheral: id, time: now, outcome: .connected(connection))
            connection.whenDisconnected { [unowned self] _ in self.linkEnded[id] = self.now }
            observations.connected(id, centralHandle: connection.handle)
            watchFlaws(connection, id: id)
            note = "connected to \(id) at \(address), handle \(hex4(connection.handle))"
        case let .failure(error)?:
            switch error {
            case .timeout:
                try connectFailed(id, step: step, position: position, reason: .timeout, seen: "no connection within \(within)", within: within)
            case let .command(_, status):
                try connectFailed(id, step: step, position: position, reason: .status(status), seen: "\(error)", within: within)
            default:
                try connectFailed(id, step: step, position: position, reason: nil, seen: "\(error)", within: within)
            }
        case nil:
            central.host.cancelConnect()
            throw StepFailure(kind: .operation, expected: "a connection to \(id) within \(within)", seen: "no answer from the controller")
        }
    }

    /// HCI Disconnect, then waits for Disconnection Complete: `within`, or by default as long as
    /// the link's termination procedure can take (`Connection.terminationBound`: a slow link's
    /// LL_TERMINATE_IND may wait seconds for the peripheral to listen).
    private func disconnect(_ id: String, within: TimeSpan?) throws {
        let connection = try live(id)
        let limit = within ?? connection.terminationBound
        var refused: HostError?
        connection.disconnect(reason: .remoteUserTerminatedConnection) { result in
            if case let .failure(error) = result { refused = error }
        }
        guard try waitFor("the disconnection from \(id) (within: \(limit))", within: limit, until: { !connection.isConnected }) else {
            let why = refused.map { "the controller refused HCI Disconnect: \($0)" }
                ?? "\(Self.describe(connection)): the termination may take up to \(Self.milliseconds(connection.terminationBound))"
            throw StepFailure(kind: .operation, expected: "the connection to \(id) to end within \(limit)",
                              seen: "still connected after \(limit) (\(why))")
        }
        note = "disconnected from \(id): \(connection.disconnectReason.map { "\($0)" } ?? "?")"
    }

    static func milliseconds(_ span: TimeSpan) -> String {
        ConnectionUpdateRequest.milliseconds(micros: span.nanoseconds / 1000)
    }

    /// The live connection to `id`.
    func live(_ id: String) throws -> Connection {
        guard let connection = connections[id] else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "never connected to \(id)")
        }
        guard connection.isConnected else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)",
                              seen: "the connection ended (\(connection.disconnectReason.map { "\($0)" } ?? "?"))")
        }
        return connection
    }

    /// The characteristic `ref` as discovery found it on `id`.
    func discovered(_ ref: CharacteristicRef, on id: String, connection: Connection) throws -> GATTRemoteCharacteristic {
        let services = connection.client.services
        for service in services where ref.service == nil || service.uuid == ref.service {
            if let c = service.characteristic(ref.characteristic) { return c }
        }
        let seen = services.isEmpty ? "nothing discovered yet (add a discover step)"
            : "discovery found \(services.flatMap { s in s.characteristics.map { "\(s.uuid)/\($0.uuid)" } }.joined(separator: ", "))"
        throw StepFailure(kind: .operation, expected: "characteristic \(ref) discovered on \(id)", seen: seen)
    }

    // MARK: GATT operations

    /// Settles an operation's result: success, or an ATT error that the `expect` steps right
    /// after it must expect, or a failure.
    private func settle<T>(_ result: Result<T, GATTError>, _ what: String, step: CentralStep, position: Int) throws -> T? {
        switch result {
        case let .success(value):
            lastOperation = (step, nil)
            return value
        case let .failure(error):
            lastOperation = (step, error)
            if case let .linkLost(reason) = error {
                try cutShort(error, reason: reason, what, step: step, position: position)
                return nil
            }
            let following = scenario.steps[(position + 1)...].prefix { $0.isExpectation }
            guard let code = error.attErrorCode else {
                if expectsFailure(error, following: following) {
                    note = describe(error, of: step)
                    return nil
                }
                throw StepFailure(kind: .operation, expected: "\(what) to complete", seen: describe(error, of: step))
            }
            note = "ATT error \(code)"
            let expectsAnError = following.contains { if case .expect(.error) = $0.action { return true }; return false }
            guard expectsAnError else {
                throw StepFailure(kind: .unexpectedATTError,
                                  expected: "\(what) to succeed, or an 'expect: { error: \(code.name) }' right after the step",
                                  seen: "ATT Error Response \(code) for handle \(hex4(Self.handle(of: error)))")
            }
            return nil
        }
    }

    static func handle(of error: GATTError) -> UInt16 {
        if case let .att(_, handle) = error { return handle }
        return 0
    }

    private func discover(_ id: String, services: [BluetoothUUID]?, step: CentralStep, position: Int) throws {
        guard let connection = try liveForOperation(id, step: step, position: position) else { return }
        let result = try operate("discovery on \(id)") { done in connection.client.discoverAll(serviceUUIDs: services, completion: done) }
        if let found = try settle(result, "discovery on \(id)", step: step, position: position) {
            note = "services " + found.map { s in "\(s.uuid) [\(s.characteristics.map(\.uuid.description).joined(separator: ", "))]" }.joined(separator: ", ")
        }
    }

    private func exchangeMTU(_ id: String, mtu: Int, step: CentralStep, position: Int) throws {
        guard let connection = try liveForOperation(id, step: step, position: position) else { return }
        connection.bearer.preferredMTU = UInt16(clamping: mtu)
        let result = try operate("Exchange MTU with \(id)") { done in connection.client.exchangeMTU(completion: done) }
        if let value = try settle(result, "Exchange MTU with \(id)", step: step, position: position) { note = "ATT_MTU \(value)" }
    }

    private func read(_ ref: CharacteristicRef, on id: String, step: CentralStep, position: Int) throws {
        guard let connection = try liveForOperation(id, step: step, position: position) else { return }
        let c = try discovered(ref, on: id, connection: connection)
        let result = try operate("the read of \(ref)") { done in connection.client.read(handle: c.valueHandle, completion: done) }
        if let value = try settle(result, "the read of \(ref)", step: step, position: position) {
            lastRead = (step.index, value)
            note = "read \(ValueText.describe(value))"
        }
    }

    private func write(_ w: WriteStep, step: CentralStep, position: Int) throws {
        guard let connection = try liveForOperation(w.peripheral, step: step, position: position) else { return }
        let c = try discovered(w.characteristic, on: w.peripheral, connection: connection)
        let method = w.type.method(for: c.properties)
        let start = central.traffic.records.count
        lastWrite = (step, start, connection.handle)
        switch method {
        case .request:
            let result = try operate("the write to \(w.characteristic)") { done in
                connection.client.write(w.value, handle: c.valueHandle, completion: done)
            }
            if try settle(result, "the write to \(w.characteristic)", step: step, position: position) != nil {
                note = "Write Request accepted"
            }
        case .command:
            lastOperation = (step, nil)
            let what = "a Write Command of \(w.value.count) octet\(w.value.count == 1 ? "" : "s") to \(w.characteristic)"
            guard connection.client.writeWithoutResponse(w.value, handle: c.valueHandle) else {
                if !connection.isConnected {
                    let reason = connection.disconnectReason?.rawValue ?? HCIStatus.connectionTerminatedByLocalHost.rawValue
                    return try cutShort(.linkLost(reason: reason), reason: reason, what, step: step, position: position)
                }
                throw StepFailure(kind: .operation, expected: what,
                                  seen: Self.unsentCommand(w.value.count, mtu: connection.client.mtu, bearer: connection.bearer.state,
                                                           failure: connection.bearer.failure))
            }
            // Like CoreBluetooth's writeWithoutResponse, done once it has left the host.
            let crossed = try waitFor("the Write Command to cross the central's HCI", within: Expectation.defaultWithin) {
                self.central.traffic.records.dropFirst(start).contains { $0.wasSent && $0.opcode == .writeCommand } || !connection.isConnected
            }
            let left = central.traffic.records.dropFirst(start).contains { $0.wasSent && $0.opcode == .writeCommand }
            if !left, !connection.isConnected {
                // The link ended while the command waited for the controller's buffers.
                let reason = connection.disconnectReason?.rawValue ?? HCIStatus.connectionTerminatedByLocalHost.rawValue
                return try cutShort(.linkLost(reason: reason), reason: reason, what, step: step, position: position)
            }
            guard crossed, left else {
                throw StepFailure(kind: .operation, expected: "the Write Command to leave the central within \(Expectation.defaultWithin)",
                                  seen: "it did not cross the central's HCI")
            }
            note = "Write Command sent"
        }
    }

    private func subscribe(_ ref: CharacteristicRef, on id: String, enable: Bool, step: CentralStep, position: Int) throws {
        guard let connection = try liveForOperation(id, step: step, position: position) else { return }
        let c = try discovered(ref, on: id, connection: connection)
        let what = "\(enable ? "the subscription to" : "the unsubscription from") \(ref)"
        let handle = valueHandle(ref, on: id)
        // What a subscription brings (an `on-subscribe` notify can arrive before the Write
        // Response) counts; what was in flight before an unsubscription took effect does not.
        let before = handle.map { observations.arrivals(id, $0).count }
        let result = try operate(what) { done in
            if !enable {
                connection.client.unsubscribe(from: c, completion: done)
            } else if let configuration = step.subscription {
                connection.client.setConfiguration(configuration, for: c, completion: done)
            } else {
                connection.client.subscribe(to: c, completion: done)
            }
        }
        if try settle(result, what, step: step, position: position) != nil {
            note = enable ? "CCCD written" + (step.subscription.map { " (\($0))" } ?? "") : "CCCD cleared"
        }
        // Notifications count from here ("since subscribing").
        if let handle {
            let key = LinkObservations.Key(peripheral: id, handle: handle)
            notificationMarks[key] = enable ? before ?? 0 : observations.arrivals(id, handle).count
        }
    }

    /// Why a Write Command could not be sent, the one reason that applies: the value is longer
    /// than ATT_MTU - 3 (Core Vol 3 Part F 3.4.5.3), or the bearer is closed, or it failed (after a
    /// transaction timeout, Part F 3.3.3, or a protocol violation) and sends nothing more.
    static func unsentCommand(_ octets: Int, mtu: Int, bearer: ATTBearer.State, failure: ATTError? = nil) -> String {
        switch bearer {
        case .closed: return "the link is closed: the ATT bearer to the peripheral is gone"
        case .failed:
            if case .timeout? = failure { return "the ATT bearer sends nothing more after a transaction timeout (Core Vol 3 Part F 3.3.3)" }
            return "the ATT bearer sends nothing more: it failed" + (failure.map { " (\($0))" } ?? "")
        case .open:
            return "\(octets) octets do not fit a Write Command at ATT_MTU \(mtu) (at most ATT_MTU - 3 = \(mtu - 3) octets); "
                + "exchange a larger MTU first (mtu: 247), or write with type: request, which sends a long value in parts"
        }
    }

    /// The value handle of `ref` in `id`'s own database: the handle on the link.
    func valueHandle(_ ref: CharacteristicRef, on id: String) -> UInt16? {
        if let handles = peripherals[id]?.handles(for: ref) { return handles.valueHandle }
        // Served by another stack: the handle the central discovered on the link.
        guard externalPeripherals[id] != nil, let connection = connections[id] else { return nil }
        for service in connection.client.services where ref.service == nil || service.uuid == ref.service {
            if let c = service.characteristic(ref.characteristic) { return c.valueHandle }
        }
        return nil
    }

    // MARK: Descriptors

    /// The handle of descriptor `d` as discovery found it on `id`.
    private func discovered(_ d: DescriptorRef, on id: String, connection: Connection) throws -> UInt16 {
        let c = try discovered(d.characteristic, on: id, connection: connection)
        if let found = c.descriptors.first(where: { $0.uuid == d.uuid }) { return found.handle }
        let seen = c.descriptors.isEmpty ? "discovery found no descriptors of \(d.characteristic)"
            : "discovery found \(c.descriptors.map { "\($0.uuid) at \(hex4($0.handle))" }.joined(separator: ", "))"
        throw StepFailure(kind: .operation, expected: "\(d) discovered on \(id)", seen: seen)
    }

    /// Read Characteristic Descriptors (Core Vol 3 Part G 4.12.1, long ones 4.12.2).
    private func readDescriptor(_ d: DescriptorRef, on id: String, step: CentralStep, position: Int) throws {
        let connection = try live(id)
        let handle = try discovered(d, on: id, connection: connection)
        let result = try operate("the read of \(d)") { done in connection.client.read(handle: handle, completion: done) }
        if let value = try settle(result, "the read of \(d)", step: step, position: position) {
            lastRead = (step.index, value)
            note = "read \(ValueText.describe(value)) from \(hex4(handle))"
        }
    }

    /// Write Characteristic Descriptors (Part G 4.12.3, long ones 4.12.4). A write of the CCCD
    /// counts notifications as `subscribe` and `unsubscribe` do.
    private func writeDescriptor(_ d: DescriptorRef, _ value: [UInt8], on id: String, step: CentralStep, position: Int) throws {
        let connection = try live(id)
        let handle = try discovered(d, on: id, connection: connection)
        let valueHandle = self.valueHandle(d.characteristic, on: id)
        let before = valueHandle.map { observations.arrivals(id, $0).count }
        let result = try operate("the write of \(d)") { done in connection.client.write(value, handle: handle, completion: done) }
        if try settle(result, "the write of \(d)", step: step, position: position) != nil {
            note = "Write Request to \(hex4(handle)) accepted"
        }
        if d.uuid == .clientCharacteristicConfiguration, let valueHandle {
            let key = LinkObservations.Key(peripheral: id, handle: valueHandle)
            let enables = value.contains { $0 != 0 }
            notificationMarks[key] = enables ? before ?? 0 : observations.arrivals(id, valueHandle).count
        }
    }
}

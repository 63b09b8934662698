import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

/// BLELab's own host in the central's seat: a lab device whose HCI the session sees, so that
/// what crossed the link is judged there (the writes it sent, the notifications it received).
final class HostCentral: CentralSeat {
    let lab: Lab
    let labDevice: LabDevice
    /// The latest connection to each address (kept after it ends, for its reason).
    private(set) var connections: [LEAddress: Connection] = [:]
    private var reports: [ScanReport] = []
    /// The method of the latest write (for its note).
    private var lastWriteMethod: WriteMethod?
    /// A Write Command waiting to cross the central's HCI.
    private var pendingCommand: (() -> Void)?
    /// Why the controller refused an HCI Disconnect, per address.
    private var refusals: [LEAddress: HostError] = [:]
    /// What it met on its links to flawed peripherals (`expect: { flaw }` judges it).
    let flaws = FlawObservations()
    /// `parameter-requests` answers by peripheral.
    private var parameterRequestAnswers: [String: Bool] = [:]
    /// The scenario's id of the peripheral at an address.
    private let peripheralID: (LEAddress) -> String?
    /// Puts what it met on the scenario's timeline.
    private let record: (TimelineEvent) -> Void

    var onValue: ((LEAddress, CharacteristicRef, [UInt8]) -> Void)?
    var onDisconnected: ((LEAddress) -> Void)?

    init(lab: Lab, device: LabDevice, recordsTimeline: Bool, peripheralID: @escaping (LEAddress) -> String?,
         record: @escaping (TimelineEvent) -> Void) {
        self.lab = lab
        self.labDevice = device
        self.peripheralID = peripheralID
        self.record = record
        device.traffic.observe { [weak self] _ in self?.pendingCommand?() }
        if recordsTimeline { watchParameterRequests() }
    }

    var description: String { "BLELab's host" }
    /// Set once `power-off: central` powered the controller off: what later steps fail with.
    private(set) var poweredOff: String?
    var failure: String? { nil }
    var device: LabDevice? { labDevice }
    var host: BLEHost { labDevice.host }
    var connectGrace: TimeSpan { .seconds(1) }
    var needsAdvertisingReannounced: Bool { false }

    func unsupported(_ scenario: Scenario) -> String? { nil }
    func begin(lab: Lab, completion: @escaping (Result<Void, SeatError>) -> Void) { completion(.success(())) }
    func end(completion: @escaping () -> Void) { completion() }

    func connection(to address: LEAddress) -> Connection? { connections[address] }

    // MARK: Power

    /// The sim's central controller powers off as a peripheral's does (`LabDevice.powerOff`):
    /// its host loses its connections at once, the peripherals time out. Off the sim (a socket
    /// or VHCI controller) it is refused: the lab cannot cut a real controller's power.
    func powerOff(after: TimeSpan?, completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard labDevice.controller != nil, lab.air != nil else {
            return completion(.failure(.failed("\(LabError.simulatorOnly("power-off: central")) or --central bluez")))
        }
        guard let after else {
            cutPower()
            return completion(.success(()))
        }
        _ = lab.loop.schedule(after: after) { [weak self] in self?.cutPower() }
        completion(.success(()))
    }

    private func cutPower() {
        guard poweredOff == nil else { return }
        let links = host.connections.count
        labDevice.powerOff()
        poweredOff = "the central's controller was powered off at \(lab.loop.now) (power-off: central)"
        record(TimelineEvent(time: lab.loop.now, device: PeripheralSchema.centralID, kind: .central,
                             text: "controller powered off (\(links) connection\(links == 1 ? "" : "s") lost; the peripherals time out)"))
    }

    // MARK: Scanning and connecting

    func startScan(_ scan: ScanStep, completion: @escaping (Result<Void, SeatError>) -> Void) {
        reports = []
        let timing = scan.timing ?? .scanDefault
        let configuration = ScanConfiguration(services: scan.services.isEmpty ? nil : scan.services, active: true,
                                              allowDuplicates: scan.duplicates, interval: timing.interval, window: timing.window,
                                              minimumRSSI: scan.minRSSI)
        host.startScanning(configuration, onReport: { [weak self] in self?.reports.append($0) }) { completion($0.mapError { .host($0) }) }
    }

    func stopScan(completion: @escaping (Result<[SeatScanReport], SeatError>) -> Void) {
        host.stopScanning { [self] _ in
            completion(.success(reports.map { r in
                SeatScanReport(address: r.address, rssi: r.rssi, names: Self.localNames(r), serviceUUIDs: r.serviceUUIDs, identity: r.identity)
            }))
        }
    }

    /// Every local name a report advertises, complete and shortened, in the advertising data and
    /// the scan response.
    static func localNames(_ report: ScanReport) -> [String] {
        (report.advertisement.structures + (report.scanResponse?.structures ?? [])).compactMap { s in
            if case let .localName(bytes, _) = s { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }
    }

    func connect(to address: LEAddress, within: TimeSpan, completion: @escaping (Result<Void, SeatError>) -> Void) {
        connect(to: address, within: within, scan: nil, completion: completion)
    }

    /// The host cancels the attempt at `within`; its completion follows the cancel's round trip.
    func connect(to address: LEAddress, within: TimeSpan, scan: ScanTiming?, completion: @escaping (Result<Void, SeatError>) -> Void) {
        connect(to: address, within: within, scan: scan, parameters: nil, completion: completion)
    }

    func connect(to address: LEAddress, within: TimeSpan, scan: ScanTiming?, parameters: ConnectionUpdateRequest?,
                 completion: @escaping (Result<Void, SeatError>) -> Void) {
        let timing = scan ?? .connectDefault
        let asked = parameters.map { ConnectionParameters(intervalMin: $0.interval, intervalMax: $0.interval, latency: $0.latency,
                                                          supervisionTimeout: $0.timeout) }
        host.connect(to: address, parameters: asked, timeout: within, scanInterval: timing.interval, scanWindow: timing.window) { [self] result in
            switch result {
            case let .success(connection):
                connections[address] = connection
                if let id = peripheralID(address) { watchFlaws(connection, id: id) }
                completion(.success(()))
            case let .failure(error):
                completion(.failure(.host(error)))
            }
        }
    }

    func abandonConnect() { host.cancelConnect() }

    /// HCI Disconnect; completes when Disconnection Complete came. A refusal is kept for
    /// `whyStillConnected`: the link may still end (the peer's own terminate).
    func disconnect(from address: LEAddress, completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let connection = connections[address] else { return completion(.failure(.failed("not connected to \(address)"))) }
        refusals[address] = nil
        connection.disconnect(reason: .remoteUserTerminatedConnection) { [self] result in
            if case let .failure(error) = result { refusals[address] = error }
        }
        connection.whenDisconnected { _ in completion(.success(())) }
    }

    /// Why a disconnect has not ended the link yet.
    func whyStillConnected(_ address: LEAddress) -> String? {
        guard let connection = connections[address] else { return nil }
        return refusals[address].map { "the controller refused HCI Disconnect: \($0)" }
            ?? "\(ScenarioSession.describe(connection)): the termination may take up to \(ScenarioSession.milliseconds(connection.terminationBound))"
    }

    func isConnected(_ address: LEAddress) -> Bool { connections[address]?.isConnected == true }

    // MARK: GATT

    func discover(on address: LEAddress, services: [BluetoothUUID]?,
                  completion: @escaping (Result<[SeatService], SeatError>) -> Void) {
        guard let connection = connections[address] else { return completion(.failure(.failed("not connected to \(address)"))) }
        connection.client.discoverAll(serviceUUIDs: services) { result in
            completion(result.map { $0.map(Self.service) }.mapError { .gatt($0) })
        }
    }

    func services(on address: LEAddress) -> [SeatService] {
        connections[address]?.client.services.map(Self.service) ?? []
    }

    private static func service(_ s: GATTRemoteService) -> SeatService {
        SeatService(uuid: s.uuid, characteristics: s.characteristics.map {
            SeatCharacteristic(uuid: $0.uuid, properties: $0.properties, valueHandle: $0.valueHandle)
        })
    }

    func mtu(on address: LEAddress) -> Int? { connections[address].map { $0.client.mtu } }

    func restoreGATTCache(_ services: [GATTRemoteService], on address: LEAddress) -> String? {
        guard let connection = connections[address] else { return "not connected to \(address)" }
        connection.client.restoreCache(services)
        return nil
    }

    func exchangeMTU(_ mtu: Int, on address: LEAddress, completion: @escaping (Result<Int?, SeatError>) -> Void) {
        guard let connection = connections[address] else { return completion(.failure(.failed("not connected to \(address)"))) }
        connection.bearer.preferredMTU = UInt16(clamping: mtu)
        connection.client.exchangeMTU { completion($0.map { $0 }.mapError { .gatt($0) }) }
    }

    /// The characteristic `ref` as discovery found it (the session looked it up before).
    private func characteristic(_ ref: CharacteristicRef, _ address: LEAddress) -> (Connection, GATTRemoteCharacteristic)? {
        guard let connection = connections[address] else { return nil }
        for service in connection.client.services where ref.service == nil || service.uuid == ref.service {
            if let c = service.characteristic(ref.characteristic) { return (connection, c) }
        }
        return nil
    }

    func read(_ ref: CharacteristicRef, on address: LEAddress, completion: @escaping (Result<[UInt8], SeatError>) -> Void) {
        guard let (connection, c) = characteristic(ref, address) else { return completion(.failure(.failed("no \(ref)"))) }
        connection.client.read(handle: c.valueHandle) { completion($0.mapError { .gatt($0) }) }
    }

    /// A Write Request, or a Write Command: done, like CoreBluetooth's writeWithoutResponse, once
    /// it has left the host (crossed the central's HCI), within `Expectation.defaultWithin`.
    func write(_ write: SeatWrite, to ref: CharacteristicRef, on address: LEAddress,
               completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let (connection, c) = characteristic(ref, address) else { return completion(.failure(.failed("no \(ref)"))) }
        let method = write.type.method(for: c.properties)
        lastWriteMethod = method
        switch method {
        case .request:
            connection.client.write(write.value, handle: c.valueHandle) { completion($0.mapError { .gatt($0) }) }
        case .command:
            let start = labDevice.traffic.records.count
            let linkLost = { SeatError.gatt(.linkLost(reason: connection.disconnectReason?.rawValue ?? HCIStatus.connectionTerminatedByLocalHost.rawValue)) }
            guard connection.client.writeWithoutResponse(write.value, handle: c.valueHandle) else {
                if !connection.isConnected { return completion(.failure(linkLost())) }
                return completion(.failure(.failed(Self.unsentCommand(write.value.count, mtu: connection.client.mtu,
                                                                                  bearer: connection.bearer.state, failure: connection.bearer.failure))))
            }
            var done = false
            let finish = { [weak self] (result: Result<Void, SeatError>) in
                guard !done else { return }
                done = true
                self?.pendingCommand = nil
                completion(result)
            }
            let check = { [weak self] in
                guard let self else { return }
                if self.labDevice.traffic.records.dropFirst(start).contains(where: { $0.wasSent && $0.opcode == .writeCommand }) {
                    finish(.success(()))
                } else if !connection.isConnected {
                    // The link ended while the command waited for the controller's buffers.
                    finish(.failure(linkLost()))
                }
            }
            pendingCommand = check
            connection.whenDisconnected { _ in check() }
            check()
            if !done {
                lab.loop.schedule(after: Expectation.defaultWithin) {
                    finish(.failure(.failed("the Write Command did not cross the central's HCI within \(Expectation.defaultWithin)")))
                }
            }
        }
    }

    func setNotifications(_ enable: Bool, for ref: CharacteristicRef, on address: LEAddress, acquire: Bool,
                          completion: @escaping (Result<Void, SeatError>) -> Void) {
        setNotifications(enable, for: ref, on: address, acquire: acquire, configuration: nil, completion: completion)
    }

    func setNotifications(_ enable: Bool, for ref: CharacteristicRef, on address: LEAddress, acquire: Bool,
                          configuration: GATTClientConfiguration?, completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let (connection, c) = characteristic(ref, address) else { return completion(.failure(.failed("no \(ref)"))) }
        let done: (Result<Void, GATTError>) -> Void = { completion($0.mapError { .gatt($0) }) }
        if !enable {
            connection.client.unsubscribe(from: c, completion: done)
        } else if let configuration {
            connection.client.setConfiguration(configuration, for: c, completion: done)
        } else {
            connection.client.subscribe(to: c, completion: done)
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

    func lastWriteSent(to handle: UInt16) -> (method: WriteMethod, description: String)? {
        for record in labDevice.traffic.records.reversed() where record.wasSent {
            switch record.pdu {
            case let .writeRequest(w)? where w.handle == handle: return (.request, "Write Request")
            case let .writeCommand(w)? where w.handle == handle: return (.command, "Write Command")
            case let .prepareWriteRequest(p)? where p.handle == handle: return (.request, "Prepare Write Requests")
            default: continue
            }
        }
        return nil
    }

    func describe(_ done: SeatOperation) -> String {
        switch done {
        case .write: return lastWriteMethod == .command ? "Write Command sent" : "Write Request accepted"
        case let .notifications(enable, _, configuration):
            return enable ? "CCCD written" + (configuration.map { " (\($0))" } ?? "") : "CCCD cleared"
        case let .mtu(_, now): return "ATT_MTU \(now.map(String.init) ?? "?")"
        }
    }
}

// MARK: - What it meets on its links

extension HostCentral {
    /// Watches a new connection for what flawed peripherals do. A transaction timeout makes the
    /// bearer unusable (Core 5.4 Vol 3 Part F 3.3.3: no more ATT on it), so the central then
    /// disconnects, as phones do; a Service Changed indication makes it re-discover the range
    /// (Part G 7.1), as phones do.
    private func watchFlaws(_ connection: Connection, id: String) {
        let bearer = connection.bearer
        let client = connection.client
        let handle = connection.handle
        let flaws = self.flaws
        // The timeline and the notes get these from the central's host, typed, with the other
        // layers' (ScenarioSession+Violations.swift); here they are kept for the expectations.
        bearer.observeViolations { [weak self] event in
            guard let self else { return }
            flaws.rejected[id, default: []].append(.init(time: self.lab.loop.now, violation: event.violation, bytes: event.pdu))
        }
        bearer.onFailure = { [weak self, weak connection] error in
            guard let self else { return }
            guard case let .timeout(opcode) = error else { return }
            flaws.timeouts[id, default: []].append(.init(time: self.lab.loop.now, request: opcode, connectionHandle: handle))
            self.record(TimelineEvent(time: self.lab.loop.now, device: "central", kind: .protocolViolation,
                                      text: "ATT transaction timeout on \(id): no answer to the \(opcode.name) in 30 s; the bearer takes no more ATT, the central disconnects"))
            connection?.disconnect(reason: .remoteUserTerminatedConnection)
        }
        client.onNotification = { [weak self, weak client] n in
            guard let self else { return }
            guard let client, client.characteristic(valueHandle: n.handle) == nil else { return }
            flaws.ignored[id, default: []].append(.init(time: self.lab.loop.now, handle: n.handle, value: n.value, isIndication: n.isIndication,
                                                        connectionHandle: handle))
            self.record(TimelineEvent(time: self.lab.loop.now, device: "central", kind: .protocolViolation,
                                      text: "ignored \(n.isIndication ? "indication" : "notification") from \(id) for handle \(hex4(n.handle)), which discovery never found"))
        }
        client.onServiceChanged = { [weak self, weak client] range in
            guard let self else { return }
            guard let client else { return }
            let k = flaws.serviceChanges[id, default: []].count
            flaws.serviceChanges[id, default: []].append(.init(time: self.lab.loop.now, range: range, connectionHandle: handle, rediscovery: nil))
            self.record(TimelineEvent(time: self.lab.loop.now, device: "central", kind: .protocolViolation,
                                      text: "Service Changed from \(id) for \(range): re-discovering"))
            client.rediscover(range) { result in
                flaws.serviceChanges[id]?[k].rediscovery = result
            }
        }
    }

    // MARK: Parameter requests

    /// `parameter-requests: accept|reject` for `id`: the central's host answers that peripheral's
    /// requests so from now on (whether over the link layer or L2CAP); accepting still refuses
    /// parameters out of LE Connection Update's ranges.
    func answerParameterRequests(from id: String, accept: Bool) {
        parameterRequestAnswers[id] = accept
        host.acceptsConnectionParameters = { [weak self] connection, p in
            guard let self else { return p.isValid }
            guard let peer = self.peripheralID(connection.peer), let answer = self.parameterRequestAnswers[peer] else { return p.isValid }
            return answer && p.isValid
        }
    }

    /// Puts each request the central answers on the timeline.
    private func watchParameterRequests() {
        host.onConnectionParameterRequest = { [weak self] request in
            guard let self else { return }
            let p = request.parameters
            let asked = "interval \(ConnectionUpdateRequest.milliseconds(micros: Int64(p.intervalMin) * 1250))"
                + (p.intervalMax != p.intervalMin ? "–\(ConnectionUpdateRequest.milliseconds(micros: Int64(p.intervalMax) * 1250))" : "")
                + " latency \(p.latency) timeout \(ConnectionUpdateRequest.milliseconds(micros: Int64(p.supervisionTimeout) * 10_000))"
            let how = request.procedure == .linkLayer ? "LE Remote Connection Parameter Request" : "L2CAP Connection Parameter Update Request"
            let id = self.peripheralID(request.connection.peer) ?? "\(request.connection.peer)"
            self.record(TimelineEvent(time: self.lab.loop.now, device: "central", kind: .peripheral,
                                      text: "\(request.accepted ? "accepted" : "rejected") \(id)'s \(how): \(asked)"))
        }
    }
}

/// What the scripted central met on its links to flawed peripherals: responses its ATT bearer
/// rejected, transaction timeouts, notifications for handles it never discovered, Service Changed
/// indications and the re-discoveries they started. Per peripheral id, in arrival order.
final class FlawObservations {
    struct Rejected {
        var time: Instant
        var violation: ATTProtocolViolation
        /// The PDU's octets as the bearer received them.
        var bytes: [UInt8]
        var opcode: ATTOpcode? { bytes.first.map { ATTOpcode($0) } }
        /// A response that did not decode, did not fit the request, or came unasked (not a
        /// stray confirmation or a bad notification).
        var isAboutAResponse: Bool {
            switch violation {
            case let .malformed(opcode, _): return opcode.method == .response
            case .unsolicitedResponse, .unexpectedResponse: return true
            case .emptyPDU, .unsolicitedConfirmation, .unsupported, .unknownOpcode, .pipelinedRequest, .repeatedMTUExchange,
                 .shrinkingMTU, .unverifiedSignedWrite, .invalidHandle, .exceedsMTU:
                return false
            }
        }
    }

    struct Timeout {
        var time: Instant
        var request: ATTOpcode
        var connectionHandle: UInt16
    }

    struct Ignored {
        var time: Instant
        var handle: UInt16
        var value: [UInt8]
        var isIndication: Bool
        var connectionHandle: UInt16
    }

    struct ServiceChange {
        var time: Instant
        var range: ATTHandleRange
        var connectionHandle: UInt16
        /// Nil while the re-discovery runs.
        var rediscovery: Result<[GATTRemoteService], GATTError>?
    }

    var rejected: [String: [Rejected]] = [:]
    var timeouts: [String: [Timeout]] = [:]
    var ignored: [String: [Ignored]] = [:]
    var serviceChanges: [String: [ServiceChange]] = [:]
    /// How many of each list earlier expectations took, per peripheral.
    var marks: [String: Int] = [:]

    func mark(_ list: String, _ peripheral: String) -> Int { marks["\(list):\(peripheral)"] ?? 0 }
    func setMark(_ list: String, _ peripheral: String, _ n: Int) { marks["\(list):\(peripheral)"] = n }
}

import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink

/// BLELab's host in one role, facing a peer that breaks the rules on purpose (`blelab hostile`,
/// tools/hostile_peer.py): it serves or runs GATT as an application would, and reports, as one
/// JSON object per event, every connection, every protocol violation its host raised (typed:
/// layer, kind, answer, octets) and every GATT procedure's outcome, so a harness can compare
/// what the peer sent with what BLELab saw.
///
/// - `peripheral`: a GATT server (`HostileTarget.serviceUUID`) advertised as connectable under
///   `name`; advertising starts again after each disconnection.
/// - `central`: connects to `peer` again and again; on each connection runs Exchange MTU,
///   discovery of everything, a read of each readable characteristic, a write of each writable
///   one, a subscription to each notifying one, and last a Read Using Characteristic UUID of
///   the Device Name (0x2A00) over the whole range: the peer's sign that the script is done and
///   the client idle. Every procedure's failure is reported and the script goes on.
///
/// In both roles the host's GATT server holds the service, for the peer's requests: among its
/// characteristics one whose reads the application answers `slowReadDelay` later (as an app
/// answering a read itself does), so that a peer's request sent right behind a read of it is
/// certainly pipelined (Core Vol 3 Part F 3.3.2) whatever the transport's timing, and one longer
/// than any ATT_MTU, whose reads show the ATT_MTU in use.
///
/// Notifications and indications for a handle the GATT client never discovered are reported as
/// `gatt/notification-for-unknown-handle` (the client ignores them; an indication is still
/// confirmed, as ATT requires).
public final class HostileTarget {
    public enum Role: String, CaseIterable, Sendable {
        case peripheral, central
    }

    /// The peripheral's service: read, write, write without response, notify.
    public static let serviceUUID = BluetoothUUID(string: "B1E1B0A0-0000-4000-8000-00805F9B34FB")!
    public static let readUUID = BluetoothUUID(string: "B1E1B0A1-0000-4000-8000-00805F9B34FB")!
    public static let writeUUID = BluetoothUUID(string: "B1E1B0A2-0000-4000-8000-00805F9B34FB")!
    public static let writeWithoutResponseUUID = BluetoothUUID(string: "B1E1B0A3-0000-4000-8000-00805F9B34FB")!
    public static let notifyUUID = BluetoothUUID(string: "B1E1B0A4-0000-4000-8000-00805F9B34FB")!
    /// Read, answered by the application `slowReadDelay` after the request.
    public static let slowReadUUID = BluetoothUUID(string: "B1E1B0A5-0000-4000-8000-00805F9B34FB")!
    /// Read, `longValue` (300 octets: more than an ATT PDU carries at any ATT_MTU BLELab offers).
    public static let longUUID = BluetoothUUID(string: "B1E1B0A6-0000-4000-8000-00805F9B34FB")!
    public static let longValue = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
    public static let slowReadDelay = TimeSpan.seconds(1)
    /// The central's last step: Read Using Characteristic UUID of the Device Name.
    public static let doneMarkerUUID = BluetoothUUID(uuid16: 0x2A00)

    public let device: LabDevice
    public let role: Role
    /// The peer a central connects to.
    public let peer: LEAddress?
    public let name: String
    /// How long one connection attempt waits for the peer's advertising before it is retried.
    public var connectAttempt: TimeSpan = .seconds(5)

    /// Connections so far (the first is 1); violations reported so far.
    public private(set) var connectionCount = 0
    public private(set) var violationCount = 0
    public private(set) var failure: String?
    public private(set) var isStopped = false

    private let emit: (JSONValue) -> Void
    private var host: BLEHost { device.host }
    private var loop: EventLoop { device.host.loop }
    /// Connection number by handle, for live connections.
    private var numbers: [UInt16: Int] = [:]
    private var current: Connection?

    /// `emit` gets each event as a JSON object (`{"t": …, "event": …, …}`), in order.
    public init(device: LabDevice, role: Role, peer: LEAddress? = nil, name: String = "BLELabHostile",
                emit: @escaping (JSONValue) -> Void) {
        self.device = device
        self.role = role
        self.peer = peer
        self.name = name
        self.emit = emit
    }

    // MARK: Starting and stopping

    /// Sets up the role (a peripheral's service and advertising; a central's first connection
    /// attempt). `completion` says whether the set-up worked.
    public func start(completion: @escaping (Result<Void, HostError>) -> Void) {
        host.onViolation = { [weak self] violation in self?.violated(violation) }
        host.onConnection = { [weak self] connection in self?.connected(connection) }
        host.onDisconnection = { [weak self] connection, reason in self?.disconnected(connection, reason: reason) }
        do {
            let handles = try host.gattServer.addService(GATTService(uuid: Self.serviceUUID, characteristics: [
                GATTCharacteristic(uuid: Self.readUUID, properties: .read, value: Array("hostile-lab".utf8)),
                GATTCharacteristic(uuid: Self.writeUUID, properties: [.read, .write], value: [0]),
                GATTCharacteristic(uuid: Self.writeWithoutResponseUUID, properties: .writeWithoutResponse, value: [0]),
                GATTCharacteristic(uuid: Self.notifyUUID, properties: .notify, value: [0]),
                GATTCharacteristic(uuid: Self.slowReadUUID, properties: .read, value: Array("slow".utf8)),
                GATTCharacteristic(uuid: Self.longUUID, properties: .read, value: Self.longValue),
            ]))
            if let slow = handles.characteristic(Self.slowReadUUID)?.valueHandle {
                let loop = self.loop
                host.gattServer.setReadHandler({ _, answer in
                    loop.schedule(after: Self.slowReadDelay) { answer(.storedValue) }
                }, forHandle: slow)
            }
        } catch {
            return completion(.failure(.invalidState("the hostile target's GATT service: \(error)")))
        }
        switch role {
        case .peripheral:
            advertise(completion: completion)
        case .central:
            guard peer != nil else { return completion(.failure(.invalidState("a central needs the peer's address"))) }
            completion(.success(()))
            connectAgain()
        }
    }

    /// Ends the run: no new connection; the live one is disconnected. `completion` runs once the
    /// host has nothing left to do (bounded by the caller's loop run).
    public func stop(completion: @escaping () -> Void) {
        isStopped = true
        host.cancelConnect()
        var pending = 1
        let finish = { pending -= 1; if pending == 0 { completion() } }
        if host.isAdvertising {
            pending += 1
            host.stopAdvertising { _ in finish() }
        }
        if let current, current.isConnected {
            pending += 1
            current.whenDisconnected { _ in finish() }
            current.disconnect()
        }
        finish()
    }

    // MARK: Events

    private func record(_ event: String, _ fields: [(key: String, value: JSONValue)]) {
        emit(.object([(key: "t", value: .double(Double(loop.now.nanoseconds) / 1e9)), (key: "event", value: .string(event))] + fields))
    }

    private func violated(_ violation: ProtocolViolation) {
        violationCount += 1
        var fields: [(key: String, value: JSONValue)] = []
        if let handle = violation.handle {
            fields.append((key: "connection", value: numbers[handle].map { .int(Int64($0)) } ?? .null))
            fields.append((key: "handle", value: .int(Int64(handle))))
        } else {
            fields.append((key: "connection", value: .null))
        }
        fields += [
            (key: "layer", value: .string(violation.layer.rawValue)),
            (key: "kind", value: .string(violation.kind.rawValue)),
            (key: "answer", value: .string(violation.answer.token)),
            (key: "detail", value: .string(violation.detail)),
            (key: "octets", value: .string(violation.octets.spacedHex)),
        ]
        record("violation", fields)
    }

    private func connected(_ connection: Connection) {
        connectionCount += 1
        numbers[connection.handle] = connectionCount
        current = connection
        record("connected", [(key: "connection", value: .int(Int64(connectionCount))), (key: "handle", value: .int(Int64(connection.handle))),
                             (key: "role", value: .string(connection.role == .central ? "central" : "peripheral")),
                             (key: "peer", value: .string("\(connection.peer)"))])
        let client = connection.client
        let host = self.host
        client.onNotification = { [weak client, weak host] n in
            guard let client, client.characteristic(valueHandle: n.handle) == nil else { return }
            host?.report(ProtocolViolation(layer: .gatt, kind: .notificationForUnknownHandle, handle: connection.handle,
                                           detail: "\(n.isIndication ? "indication" : "notification") for handle 0x\(String(n.handle, radix: 16)), "
                                               + "which the client never discovered; ignored",
                                           octets: Array(n.value.prefix(ProtocolViolation.octetLimit))))
        }
        if role == .central { runScript(on: connection) }
    }

    private func disconnected(_ connection: Connection, reason: HCIStatus) {
        let number = numbers.removeValue(forKey: connection.handle)
        if current === connection { current = nil }
        record("disconnected", [(key: "connection", value: number.map { .int(Int64($0)) } ?? .null),
                                (key: "reason", value: .string("0x" + String(reason.rawValue, radix: 16)))])
        guard !isStopped else { return }
        switch role {
        case .peripheral: advertise { [weak self] result in
            if case let .failure(error) = result { self?.fail("advertising again after a disconnection: \(error)") }
        }
        case .central: connectAgain()
        }
    }

    private func fail(_ text: String) {
        guard failure == nil else { return }
        failure = text
        record("failure", [(key: "message", value: .string(text))])
    }

    // MARK: Peripheral

    private func advertise(completion: @escaping (Result<Void, HostError>) -> Void) {
        let data = AdvertisingData([.flags(0x06), .localName(Array(name.utf8.prefix(20)), complete: true)])
        host.startAdvertising(AdvertisingConfiguration(data: data, interval: .milliseconds(20))) { [weak self] result in
            if case .success = result { self?.record("advertising", []) }
            completion(result)
        }
    }

    // MARK: Central

    private func connectAgain() {
        guard !isStopped, let peer, current == nil, !host.isConnecting else { return }
        host.connect(to: peer, timeout: connectAttempt) { [weak self] result in
            guard let self, case let .failure(error) = result else { return }
            if case .cancelled = error, self.isStopped { return }
            self.record("connect-failed", [(key: "error", value: .string("\(error)"))])
            // A transport that is gone will not come back; anything else is tried again.
            if self.host.driver.closed != nil { return self.fail("the controller is gone: \(error)") }
            self.loop.schedule(after: .milliseconds(50)) { [weak self] in self?.connectAgain() }
        }
    }

    /// The central's GATT script on `connection`, each step after the previous one completed.
    private func runScript(on connection: Connection) {
        let client = connection.client
        let number = numbers[connection.handle] ?? 0
        var steps: [(String, (@escaping (String?) -> Void) -> Void)] = []
        steps.append(("exchange-mtu", { done in client.exchangeMTU { done($0.failureText) } }))
        steps.append(("discover-all", { done in
            client.discoverAll { result in
                if case let .success(services) = result {
                    // Before `done`: it starts the next step at once.
                    self.addCharacteristicSteps(services, client: client, to: &steps)
                    done(nil)
                } else {
                    done(result.failureText)
                }
            }
        }))
        var k = 0
        func next() {
            guard connection.isConnected else { return }
            guard k < steps.count else {
                client.read(uuid: Self.doneMarkerUUID, in: .all) { [weak self] result in
                    self?.record("gatt", [(key: "connection", value: .int(Int64(number))), (key: "procedure", value: .string("read-device-name")),
                                          (key: "result", value: .string(result.failureText ?? "ok"))])
                    self?.record("script-done", [(key: "connection", value: .int(Int64(number)))])
                }
                return
            }
            let (name, step) = steps[k]
            k += 1
            step { [weak self] failure in
                self?.record("gatt", [(key: "connection", value: .int(Int64(number))), (key: "procedure", value: .string(name)),
                                      (key: "result", value: .string(failure ?? "ok"))])
                next()
            }
        }
        next()
    }

    private func addCharacteristicSteps(_ services: [GATTRemoteService], client: GATTClient,
                                        to steps: inout [(String, (@escaping (String?) -> Void) -> Void)]) {
        for characteristic in services.flatMap(\.characteristics) {
            let handle = characteristic.valueHandle
            let properties = characteristic.properties
            if properties.contains(.read) {
                steps.append(("read 0x\(String(handle, radix: 16))", { done in client.read(handle: handle) { done($0.failureText) } }))
            }
            if properties.contains(.write) {
                steps.append(("write 0x\(String(handle, radix: 16))", { done in
                    client.write(Array("hostile".utf8), handle: handle) { done($0.failureText) }
                }))
            }
            if properties.contains(.writeWithoutResponse) {
                steps.append(("write-command 0x\(String(handle, radix: 16))", { done in
                    done(client.writeWithoutResponse(Array("hostile".utf8), handle: handle) ? nil : "not sent")
                }))
            }
            if !properties.intersection([.notify, .indicate]).isEmpty, characteristic.configurationHandle != nil {
                steps.append(("subscribe 0x\(String(handle, radix: 16))", { done in client.subscribe(to: characteristic) { done($0.failureText) } }))
            }
        }
    }
}

extension Result {
    /// Nil on success; the error's text otherwise.
    var failureText: String? {
        if case let .failure(error) = self { return "\(error)" }
        return nil
    }
}

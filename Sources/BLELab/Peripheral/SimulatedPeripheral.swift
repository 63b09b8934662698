import ATT
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

/// A `PeripheralSpec` brought to life on a lab device: its services in the GATT server, its
/// advertising, and its triggers wired to what centrals do.
///
/// Requests and triggers run their actions through a `PeripheralActionRunner` (the order, the
/// delays, the answer, the value sources); this type says what each action does on BLELab's host.
/// Write Commands are never answered (Core 5.4 Vol 3 Part F 3.4.5.3); their actions run all the
/// same.
public final class SimulatedPeripheral {
    public let spec: PeripheralSpec
    public let device: LabDevice
    public var host: BLEHost { device.host }
    public var server: GATTServer { device.host.gattServer }

    /// What the peripheral did and saw, in order (for reports and timelines).
    public private(set) var activity: [PeripheralActivity] = []
    /// False: the notifications and indications it sent (`.notified`, `.indicated`) are not kept
    /// in `activity` (`onActivity` still sees them), so a long stream does not grow it. A runner
    /// that reads `activity` only for connections and actions sets it.
    public var keepsSentValues = true
    public var onActivity: ((PeripheralActivity) -> Void)?
    /// The ATT_MTU the peripheral answers an Exchange MTU with (a scenario's `mtu:`): its Server
    /// Rx MTU (Vol 3 Part F 3.4.2.2), set on each connection's bearer before any PDU arrives.
    /// Nil: the host's default.
    public var answeredMTU: Int?
    /// The peripheral should be advertising when it has no connection: set by `start()` and the
    /// start-advertising action, cleared by stop-advertising.
    private var advertisingWanted = false

    /// Sequencing, delays, answers and value sources of the actions.
    let runner: PeripheralActionRunner
    var loop: EventLoop { device.lab.loop }
    /// Requests each of `spec.flaws` has matched so far.
    var flawMatches: [Int] = []
    /// Handles added or removed since the last Service Changed.
    var changedRange: ATTHandleRange?

    /// Adds the device to `lab` and lays out its GATT database. Call `start()` once the lab is
    /// powered on.
    public init(spec: PeripheralSpec, in lab: Lab) throws {
        self.spec = spec
        var configuration = HostConfiguration(deviceName: spec.servedDeviceName)
        configuration.security = spec.security.map { $0.settings.securitySettings }
        // `privacy:`: a resolvable private address, new every `rotate`; the IRK from the host's
        // seeded random numbers, given to the centrals it bonds with.
        configuration.privacy = spec.privacy.map { PrivacySettings(rotation: $0.rotate) }
        var publicAddress: BDAddr?
        if let address = spec.address {
            if address.type == .random { configuration.randomAddress = address.address } else { publicAddress = address.address }
        }
        device = try lab.addDevice(spec.id, address: publicAddress, configuration: configuration)
        runner = PeripheralActionRunner(loop: lab.loop, seed: lab.seed, peripheral: spec.id)
        if let rssi = spec.rssi { device.rssi = rssi }
        for service in spec.services {
            _ = try device.host.gattServer.addService(service.gattService)
        }
        runner.execute = { [weak self] action, context, site in self?.execute(action, context: context, site: site) }
        runner.answered = { [weak self] code in self?.record(.answered(code)) }
        installTriggers()
    }

    /// Starts advertising (when the spec advertises). The lab must be powered on.
    public func start(completion: @escaping (Result<Void, HostError>) -> Void = { _ in }) {
        guard let advertising = spec.advertising else { return completion(.success(())) }
        advertisingWanted = true
        host.startAdvertising(advertising.configuration, completion: completion)
    }

    /// The handles of `ref` in this peripheral's database.
    public func handles(for ref: CharacteristicRef) -> GATTCharacteristicHandles? {
        server.database.characteristic(ref.characteristic, inService: ref.service)
    }

    /// The stored value of `ref`.
    public func value(of ref: CharacteristicRef) -> [UInt8]? {
        handles(for: ref).flatMap { server.value(at: $0.valueHandle) }
    }

    /// Runs `actions` now, as a scenario's `peripheral:` step does.
    public func perform(_ actions: [PeripheralAction], site: String = "step") {
        runner.run(actions[...], context: ActionContext(site: site))
    }

    /// Runs `actions` now and reports what those before the first `delay` did, once each has
    /// taken effect or failed (an HCI command's status, advertising started or stopped); what
    /// follows the delay runs later and shows only in `activity`. A scenario's `peripheral:` step
    /// uses this so that it never says ok for an action that did nothing.
    public func perform(_ actions: [PeripheralAction], site: String = "step", report: @escaping (ActionReport) -> Void) {
        let reporter = ActionReporter(completion: report)
        runner.run(actions[...], context: ActionContext(site: site, written: nil, answer: nil, reporter: reporter))
    }

    // MARK: Triggers

    private func installTriggers() {
        for (service, characteristic) in spec.characteristics {
            let ref = CharacteristicRef(characteristic.uuid, in: service)
            guard let handles = handles(for: ref) else { continue }
            let site = "\(ref)"
            if !characteristic.onWrite.isEmpty {
                server.setWriteHandler({ [weak self] request, respond in
                    guard let self else { return respond(.accept) }
                    self.runner.run(characteristic.onWrite[...], context: ActionContext(site: site + ".on-write", written: request.value, answer: { error in
                        respond(error.map(GATTWriteResult.error) ?? .accept)
                    }))
                }, forHandle: handles.valueHandle)
            }
            if !characteristic.onRead.isEmpty {
                server.setReadHandler({ [weak self] _, respond in
                    guard let self else { return respond(.storedValue) }
                    self.runner.run(characteristic.onRead[...], context: ActionContext(site: site + ".on-read", written: nil, answer: { error in
                        respond(error.map(GATTReadResult.error) ?? .storedValue)
                    }))
                }, forHandle: handles.valueHandle)
            }
        }
        server.onSubscriptionChange = { [weak self] event in self?.subscriptionChanged(event) }
        flawMatches = [Int](repeating: 0, count: spec.flaws.count)
        host.onConnection = { [weak self] connection in
            guard let self, connection.role == .peripheral else { return }
            if let mtu = self.answeredMTU { connection.bearer.preferredMTU = UInt16(clamping: mtu) }
            self.installFlaws(on: connection.bearer)
            self.record(.connected(connection.peer))
            let peer = connection.peer
            connection.bearer.observeViolations { [weak self] event in self?.record(.protocolViolation(peer, event)) }
            connection.whenDisconnected { [weak self] reason in
                guard let self else { return }
                self.record(.disconnected(connection.peer, reason))
                self.resumeAdvertisingAfterDisconnection()
                self.perform(self.spec.onDisconnect, site: "on-disconnect")
            }
            if self.spec.security?.requestsSecurityOnConnect == true {
                self.record(.note("sent Security Request (request-security: on-connect)"))
                connection.pair()
            }
            self.perform(self.spec.onConnect, site: "on-connect")
        }
    }

    /// A connection ended: advertise again as before it, as most firmware does
    /// (`resume-after-disconnect:`, on by default). Not when the file says what to do
    /// (`on-disconnect:` starts or stops advertising), when a stop-advertising action turned it
    /// off, or when the peripheral is still advertising (a non-connectable advertiser, or another
    /// central's link ended).
    ///
    /// Decided once the disconnection has been dealt with, at the same instant: a controller that
    /// powered off or was reset ends its host's links before the host is off, and nothing should
    /// be sent to it then.
    private func resumeAdvertisingAfterDisconnection() {
        guard let advertising = spec.advertising, advertising.resumeAfterDisconnect,
              !spec.onDisconnect.contains(where: { $0 == .startAdvertising || $0 == .stopAdvertising }) else { return }
        loop.execute { [weak self] in
            guard let self, self.advertisingWanted, !self.host.isAdvertising, !self.host.isChangingAdvertising,
                  self.host.state == .ready else { return }
            self.host.startAdvertising(advertising.configuration) { [weak self] result in
                if case let .failure(error) = result {
                    self?.record(.note("advertising did not resume after the disconnection: \(error)"))
                }
            }
        }
    }

    private func subscriptionChanged(_ event: GATTSubscriptionEvent) {
        guard let (service, characteristic) = spec.characteristics.first(where: { entry in
            handles(for: CharacteristicRef(entry.characteristic.uuid, in: entry.service))?.valueHandle == event.valueHandle
        }) else { return }
        let ref = CharacteristicRef(characteristic.uuid, in: service)
        if event.isSubscribe {
            record(.subscribed(ref, indications: event.new.contains(.indication)))
            perform(characteristic.onSubscribe, site: "\(ref).on-subscribe")
        } else if event.isUnsubscribe {
            record(.unsubscribed(ref))
            perform(characteristic.onUnsubscribe, site: "\(ref).on-unsubscribe")
        }
    }

    // MARK: Running actions

    typealias ActionContext = PeripheralActionRunner.Context

    private func execute(_ action: PeripheralAction, context: ActionContext, site: String) {
        switch action {
        case let .notify(ref, source):
            guard let (value, sent) = notify(ref, source, context: context, site: site) else { return }
            did(action, Self.reach("notify \(ref) \(value.spacedHex)", sent), context)
        case let .indicate(ref, source):
            guard let handles = handles(for: ref), let value = resolve(source, for: handles, context: context, site: site) else {
                return failed(action, "\(spec.id) has no characteristic \(ref)", context)
            }
            _ = server.setValue(value, at: handles.valueHandle)
            var sent = 0
            for connection in host.connections.values.sorted(by: { $0.handle < $1.handle }) {
                if server.indicate(value, handle: handles.valueHandle, to: connection.serverConnection, completion: { [weak self] result in
                    self?.record(.indicationConfirmed(ref, (try? result.get()) != nil))
                }) { sent += 1 }
            }
            record(.indicated(ref, value, centrals: sent))
            did(action, Self.reach("indicate \(ref) \(value.spacedHex)", sent), context)
        case let .notifyEvery(ref, interval, source, count):
            runner.startRepeating(ref, interval: interval, count: count, site: site) { [weak self] context in
                self?.notify(ref, source, context: context, site: site)
                return true
            }
            did(action, action.description, context)
        case let .stopNotifying(ref):
            guard runner.stopRepeating(ref) else {
                return failed(action, "no notify-every is running on \(ref)", context)
            }
            did(action, action.description, context)
        case let .setValue(ref, source):
            guard let handles = handles(for: ref), let value = resolve(source, for: handles, context: context, site: site) else {
                return failed(action, "\(spec.id) has no characteristic \(ref)", context)
            }
            _ = server.setValue(value, at: handles.valueHandle)
            record(.valueSet(ref, value))
            did(action, "set \(ref) = \(value.spacedHex)", context)
        case let .respondError(code):
            failed(action, "respond-error \(code.name) with no request to answer", context)
        case .delay:
            break // handled by `run`
        case .powerOff, .requestConnectionUpdate, .burst:
            executeFault(action, context: context, site: site)
        case .forgetBonds:
            let count = host.bonds.bonds.count
            host.bonds.forgetAll()
            record(.action(action))
            did(action, "forgot \(count) bond\(count == 1 ? "" : "s")", context)
        case let .disconnect(reason):
            disconnectAll(action, reason: reason ?? .remoteUserTerminatedConnection, context: context)
        case .stopAdvertising:
            advertisingWanted = false
            context.reporter?.begin()
            host.stopAdvertising { [weak self] result in
                if case let .failure(error) = result { self?.failed(action, "LE Set Advertising Enable failed: \(error)", context) }
                context.reporter?.end()
            }
            record(.action(action))
            did(action, action.description, context)
        case .startAdvertising:
            guard let advertising = spec.advertising else {
                return failed(action, "\(spec.id) declares no advertise: there is nothing to advertise", context)
            }
            advertisingWanted = true
            context.reporter?.begin()
            host.startAdvertising(advertising.configuration) { [weak self] result in
                if case let .failure(error) = result { self?.failed(action, "advertising did not start: \(error)", context) }
                context.reporter?.end()
            }
            record(.action(action))
            did(action, action.description, context)
        case .notifyHandle, .indicateHandle, .sendPDU, .addService, .removeService, .serviceChanged:
            executeFlawed(action, context: context, site: site)
        }
    }

    /// HCI Disconnect on every connection (Vol 4 Part E 7.1.6); the action is done once the
    /// controller has accepted each (Command Status), and fails when there is no connection or a
    /// controller refuses.
    private func disconnectAll(_ action: PeripheralAction, reason: HCIStatus, context: ActionContext) {
        let connections = host.connections.values.sorted(by: { $0.handle < $1.handle })
        guard !connections.isEmpty else { return failed(action, "\(spec.id) has no connection", context) }
        record(.action(action))
        for connection in connections {
            context.reporter?.begin()
            connection.disconnect(reason: reason) { [weak self] result in
                if case let .failure(error) = result {
                    self?.failed(action, "the controller refused HCI Disconnect on connection \(hex4(connection.handle)): \(error)", context)
                }
                context.reporter?.end()
            }
        }
        // Said only when every controller accepted (a refusal fails the step instead).
        did(action, "\(action.description) (HCI Disconnect accepted on \(connections.count) connection\(connections.count == 1 ? "" : "s"))", context)
    }

    /// "notify FFE1 01 to 1 subscribed central", "notify FFE1 01: no central subscribed, value stored".
    static func reach(_ what: String, _ centrals: Int) -> String {
        centrals == 0 ? "\(what): no central subscribed, value stored" : "\(what) to \(centrals) subscribed central\(centrals == 1 ? "" : "s")"
    }

    /// Records what `action` did, for the step that runs it.
    func did(_ action: PeripheralAction, _ text: String, _ context: ActionContext) {
        context.reporter?.report.done.append(text)
    }

    /// `action` could not do what it says: noted in `activity`, and a failure of the step that
    /// runs it.
    func failed(_ action: PeripheralAction, _ reason: String, _ context: ActionContext) {
        record(.note("\(action): \(reason)"))
        context.reporter?.report.failures.append(ActionReport.Failure(action: action, reason: reason))
    }

    /// Stores the value and notifies every subscribed central; nil when there is no such
    /// characteristic.
    @discardableResult
    func notify(_ ref: CharacteristicRef, _ source: ValueSource?, context: ActionContext, site: String) -> (value: [UInt8], sent: Int)? {
        guard let handles = handles(for: ref), let value = resolve(source, for: handles, context: context, site: site) else {
            record(.note("notify \(ref): no such characteristic"))
            context.reporter?.report.failures.append(ActionReport.Failure(action: .notify(ref, source), reason: "\(spec.id) has no characteristic \(ref)"))
            return nil
        }
        _ = server.setValue(value, at: handles.valueHandle)
        let sent = server.notifyAll(value, handle: handles.valueHandle)
        record(.notified(ref, value, centrals: sent))
        return (value, sent)
    }

    /// The bytes of `source`; nil source: the stored value.
    func resolve(_ source: ValueSource?, for handles: GATTCharacteristicHandles, context: ActionContext, site: String) -> [UInt8]? {
        runner.resolve(source, stored: { server.value(at: handles.valueHandle) ?? [] }, context: context, site: site)
    }

    func resolve(_ source: ValueSource, context: ActionContext, site: String, part: inout Int) -> [UInt8] {
        runner.resolve(source, context: context, site: site, part: &part)
    }

    func record(_ kind: PeripheralActivity.Kind) {
        let entry = PeripheralActivity(time: loop.now, kind: kind)
        switch kind {
        case .notified, .indicated: if keepsSentValues { activity.append(entry) }
        default: activity.append(entry)
        }
        onActivity?(entry)
    }
}

/// One thing a simulated peripheral did or saw.
public struct PeripheralActivity: CustomStringConvertible {
    public enum Kind {
        case connected(LEAddress)
        case disconnected(LEAddress, HCIStatus)
        case subscribed(CharacteristicRef, indications: Bool)
        case unsubscribed(CharacteristicRef)
        case notified(CharacteristicRef, [UInt8], centrals: Int)
        case indicated(CharacteristicRef, [UInt8], centrals: Int)
        case indicationConfirmed(CharacteristicRef, Bool)
        case valueSet(CharacteristicRef, [UInt8])
        case answered(ATTErrorCode)
        /// The central broke the Attribute Protocol (what, the octets, what the bearer did).
        case protocolViolation(LEAddress, ATTViolationEvent)
        case action(PeripheralAction)
        case note(String)
    }

    public let time: Instant
    public let kind: Kind

    public init(time: Instant, kind: Kind) {
        self.time = time
        self.kind = kind
    }

    public var description: String {
        let what: String
        switch kind {
        case let .connected(peer): what = "connected to \(peer)"
        case let .disconnected(peer, reason): what = "disconnected from \(peer): \(reason)"
        case let .subscribed(ref, indications): what = "\(ref) subscribed (\(indications ? "indications" : "notifications"))"
        case let .unsubscribed(ref): what = "\(ref) unsubscribed"
        case let .notified(ref, value, n): what = "notify \(ref) \(value.spacedHex) → \(n) central(s)"
        case let .indicated(ref, value, n): what = "indicate \(ref) \(value.spacedHex) → \(n) central(s)"
        case let .indicationConfirmed(ref, ok): what = "indication of \(ref) \(ok ? "confirmed" : "failed")"
        case let .valueSet(ref, value): what = "set \(ref) = \(value.spacedHex)"
        case let .answered(code): what = "answered the request with \(code.name)"
        case let .protocolViolation(peer, event):
            what = "protocol violation by \(peer): \(event)" + (event.consequence == .linkDropped ? "; the peripheral drops the link" : "")
        case let .action(action): what = action.description
        case let .note(note): what = note
        }
        return "\(time) \(what)"
    }
}

extension Lab {
    /// Adds a simulated peripheral built from `spec`; call `start()` on it after `powerOn()`.
    @discardableResult
    public func addPeripheral(_ spec: PeripheralSpec) throws -> SimulatedPeripheral {
        try SimulatedPeripheral(spec: spec, in: self)
    }
}

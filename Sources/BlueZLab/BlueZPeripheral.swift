import ATT
import BLELab
import BLERuntime
import BLEWire
import DBus
import GATT
import HCI
import ScenarioEngine
import ScenarioFormat

/// A scenario's peripheral served by bluetoothd: its services exported as a GATT application
/// (GattManager1.RegisterApplication), its `advertise:` block as an LEAdvertisement1
/// (LEAdvertisingManager1.RegisterAdvertisement), and its triggers run from the methods
/// bluetoothd calls — the semantics of `SimulatedPeripheral`, as far as bluetoothd's D-Bus API
/// lets an application have them (`BlueZPeripheralProvider.unsupported` says where it does not).
///
/// - ReadValue runs `on-read` and answers with the stored value from the `offset` option;
///   WriteValue stores the value at its offset, runs `on-write` and reports the write. Leading
///   `delay`s postpone the answer; `respond-error` answers with the D-Bus error bluetoothd turns
///   into that ATT code (`BlueZServerErrors`).
/// - `notify`/`indicate` set Value and emit PropertiesChanged of Value: that is how a GATT
///   application notifies. bluetoothd sends each central what its CCCD enabled (an indication
///   when it enabled indications, else a notification). `set-value` changes Value without a
///   signal, so nothing is sent.
/// - StartNotify/StopNotify (bluetoothd calls them for the first CCCD enable and the last
///   disable) set Notifying and run `on-subscribe`/`on-unsubscribe`.
/// - Connections are Device1 objects under the adapter whose Connected turns true or false.
///   `disconnect` ends them at once through Device1.Blocked, lifted again when the link is down
///   (`endLink`: Device1.Disconnect waits 2 s in bluetoothd 5.66).
///
/// Everything runs on the lab's `SystemEventLoop`. The actions run through the simulated
/// peripheral's `PeripheralActionRunner` (sequencing, delays, answers, and values drawn from the
/// same seeded stream, "peripheral:ID").
public final class BlueZPeripheral: ProvidedPeripheralSeat {
    public let spec: PeripheralSpec
    public let adapterPath: DBusObjectPath
    public let connection: DBusConnection
    public let client: BlueZClient
    public var onActivity: ((PeripheralActivity) -> Void)?
    public var onWrite: ((SeatReceivedWrite) -> Void)?
    /// The adapter's address (Adapter1.Address/AddressType), once started. With Privacy on,
    /// bluetoothd advertises from resolvable private addresses instead.
    public private(set) var address: LEAddress?
    /// What it did and saw, in order.
    public private(set) var activity: [PeripheralActivity] = []
    /// The application's root (the ObjectManager given to RegisterApplication).
    public let applicationPath: DBusObjectPath
    public let advertisementPath: DBusObjectPath
    public let agentPath: DBusObjectPath
    /// Whether MinInterval/MaxInterval are offered (false after bluetoothd refused them once).
    public private(set) var advertisesIntervals = true

    let loop: SystemEventLoop
    let busDescription: String
    var characteristics: [ExportedCharacteristic] = []
    var descriptors: [ExportedDescriptor] = []
    private var exportedPaths: [DBusObjectPath] = []
    /// Sequencing, delays, answers and value sources of the actions: the simulated peripheral's.
    private let runner: PeripheralActionRunner
    /// Connected centrals: Device1 path → address.
    private(set) var connectedDevices: [DBusObjectPath: LEAddress] = [:]
    /// Every device that connected (removed with RemoveDevice at the end).
    private(set) var seenDevices: Set<DBusObjectPath> = []
    private var deviceAddresses: [DBusObjectPath: LEAddress] = [:]
    /// Devices this side asked to disconnect.
    private var disconnecting: Set<DBusObjectPath> = []
    /// Devices set Blocked to end their link (`endLink`), unblocked once Connected turns false.
    private(set) var blocked: Set<DBusObjectPath> = []
    private var subscriptions: [DBusSubscription] = []
    private(set) var applicationRegistered = false
    private(set) var advertisementRegistered = false
    private var advertisementExported = false
    private var stopped = false
    private var originalAlias: String?
    /// Answers bluetoothd's questions during pairings (`security:`).
    public private(set) var agent: BlueZAgent?

    final class ExportedCharacteristic {
        let ref: CharacteristicRef
        let spec: CharacteristicSpec
        let path: DBusObjectPath
        var value: [UInt8]
        var notifying = false

        init(ref: CharacteristicRef, spec: CharacteristicSpec, path: DBusObjectPath) {
            self.ref = ref
            self.spec = spec
            self.path = path
            value = spec.value
        }
    }

    final class ExportedDescriptor {
        let spec: GATTDescriptor
        let path: DBusObjectPath
        var value: [UInt8]

        init(spec: GATTDescriptor, path: DBusObjectPath) {
            self.spec = spec
            self.path = path
            value = spec.value
        }
    }

    /// A peripheral on an open connection. `seed` is the lab's: values drawn match the
    /// simulated peripheral's.
    public init(spec: PeripheralSpec, connection: DBusConnection, seed: UInt64, adapter: DBusObjectPath = "/org/bluez/hci0",
                busDescription: String = "system bus") {
        self.spec = spec
        self.connection = connection
        loop = connection.loop
        adapterPath = adapter
        self.busDescription = busDescription
        client = BlueZClient(connection: connection, timeout: .seconds(10))
        runner = PeripheralActionRunner(loop: connection.loop, seed: seed, peripheral: spec.id)
        let root: DBusObjectPath = (try? DBusObjectPath("/org/blelab/peripheral").appending(BlueZGattLayout.pathElement(spec.id)))
            ?? "/org/blelab/peripheral/p"
        applicationPath = (try? root.appending("app")) ?? root
        advertisementPath = (try? root.appending("advertisement0")) ?? root
        agentPath = (try? root.appending("agent")) ?? root
        runner.execute = { [weak self] action, context, site in self?.execute(action, context: context, site: site) }
        runner.answered = { [weak self] code in self?.record(.answered(code)) }
    }

    // MARK: Start

    public func start(completion: @escaping (Result<Void, SeatError>) -> Void) {
        var steps: [(@escaping (SeatError?) -> Void) -> Void] = [checkBluetoothd, checkAdapter, watchDevices, powerOn, setAlias,
                                                                 registerAgent]
        if spec.services.isEmpty {
            // bluetoothd refuses an application without a service ("No object received"); the
            // adapter's own GAP/GATT services are served all the same.
            steps.append { [self] done in
                record(.note("no GATT services: no application registered (GattManager1.RegisterApplication refuses an empty one)"))
                done(nil)
            }
        } else {
            steps += [exportApplication, registerApplication]
        }
        if spec.advertising != nil { steps.append { self.registerAdvertisement(completion: $0) } }
        steps.append(readAddress)
        run(steps[...]) { error in completion(error.map { .failure($0) } ?? .success(())) }
    }

    private func run(_ steps: ArraySlice<(@escaping (SeatError?) -> Void) -> Void>, completion: @escaping (SeatError?) -> Void) {
        guard let first = steps.first else { return completion(nil) }
        first { [weak self] error in
            guard self != nil else { return completion(.failed("the BlueZ peripheral was released while starting")) }
            if let error { return completion(error) }
            self?.run(steps.dropFirst(), completion: completion)
        }
    }

    private func failure(_ what: String, _ error: DBusError) -> SeatError {
        if case .timeout = error { return .timeout("\(what): \(error)") }
        return .failed("\(what): \(error)")
    }

    private func checkBluetoothd(_ done: @escaping (SeatError?) -> Void) {
        client.serviceIsRunning { result in
            switch result {
            case .success(true): done(nil)
            case .success(false): done(.failed("bluetoothd is not running (\(BlueZName.service) has no owner on the \(self.busDescription))"))
            case .failure(let error): done(self.failure("cannot ask the \(self.busDescription) whether bluetoothd runs", error))
            }
        }
    }

    private func checkAdapter(_ done: @escaping (SeatError?) -> Void) {
        client.managedObjects { result in
            switch result {
            case .failure(let error): done(self.failure("bluetoothd's GetManagedObjects", error))
            case .success(let objects):
                guard objects.objects[self.adapterPath]?[BlueZName.adapter] != nil else {
                    let names = objects.adapters.map(\.rawValue)
                    return done(.failed("no adapter \(self.adapterPath); bluetoothd has: \(names.isEmpty ? "none" : names.joined(separator: ", "))"))
                }
                for path in objects.devices(on: self.adapterPath) {
                    guard let properties = objects.objects[path]?[BlueZName.device] else { continue }
                    self.learn(path, properties)
                    // Already connected before the scenario: known, but not a connection of this run.
                    if (try? properties["Connected"]?.asBool()) == true, let address = self.deviceAddresses[path] {
                        self.connectedDevices[path] = address
                    }
                }
                done(nil)
            }
        }
    }

    /// Device1 objects under the adapter: Connected turning true or false is a connection.
    private func watchDevices(_ done: @escaping (SeatError?) -> Void) {
        var waiting = 4
        var failed: DBusError?
        let ready: (DBusError?) -> Void = { error in
            if let error, failed == nil { failed = error }
            waiting -= 1
            guard waiting == 0 else { return }
            done(failed.map { self.failure("watching \(self.adapterPath)'s devices (AddMatch)", $0) })
        }
        subscriptions.append(connection.onPropertiesChanged(sender: BlueZName.service, namespace: adapterPath, interface: BlueZName.device,
                                                           ready: ready) { [weak self] result in
            guard let self, case .success(let change) = result else { return }
            if let connected = try? change.changed["Connected"]?.asBool() {
                self.deviceConnection(change.path, connected: connected)
            }
        })
        subscriptions.append(connection.onInterfacesAdded(sender: BlueZName.service, namespace: adapterPath, ready: ready) { [weak self] result in
            guard let self, case .success(let added) = result, let properties = added.interfaces[BlueZName.device] else { return }
            self.learn(added.path, properties)
            if (try? properties["Connected"]?.asBool()) == true { self.deviceConnection(added.path, connected: true) }
        })
        // What ends a run from outside: the adapter powered off, bluetoothd gone, the bus gone.
        subscriptions.append(connection.onPropertiesChanged(sender: BlueZName.service, namespace: adapterPath, interface: BlueZName.adapter,
                                                           ready: ready) { [weak self] result in
            guard let self, !self.stopped, case .success(let change) = result, change.path == self.adapterPath,
                  (try? change.changed["Powered"]?.asBool()) == false else { return }
            self.record(.note("\(self.adapterPath) was powered off: bluetoothd ends every connection and advertisement"))
        })
        let ownerChanged = DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                         arg0: BlueZName.service)
        subscriptions.append(connection.subscribe(ownerChanged, ready: ready) { [weak self] message in
            guard let self, !self.stopped, let arguments = try? message.arguments(expecting: "sss"),
                  (try? arguments[2].asString()) == "" else { return }
            self.applicationRegistered = false
            self.advertisementRegistered = false
            self.record(.note("bluetoothd left the bus (\(BlueZName.service) has no owner): the GATT application and advertisement are gone"))
        })
        connection.onDisconnect = { [weak self] error in self?.record(.note("the D-Bus connection closed: \(error)")) }
    }

    private func learn(_ path: DBusObjectPath, _ properties: [String: DBusValue]) {
        guard let text = try? properties["Address"]?.asString() else { return }
        let type = try? properties["AddressType"]?.asString()
        if let address = BlueZMapping.address(text, type: type) { deviceAddresses[path] = address }
    }

    /// The address of a device object: what bluetoothd said, else the one in its path
    /// (dev_AA_BB_CC_DD_EE_FF, type unknown: public).
    private func address(of path: DBusObjectPath) -> LEAddress? {
        if let known = deviceAddresses[path] { return known }
        guard let last = path.rawValue.split(separator: "/").last, last.hasPrefix("dev_") else { return nil }
        return BlueZMapping.address(last.dropFirst(4).replacingUnderscores(), type: nil)
    }

    private func powerOn(_ done: @escaping (SeatError?) -> Void) {
        // bluetoothd in the lab runs with AutoEnable=false: the adapter starts powered off.
        client.adapter(adapterPath).setPowered(true) { result in
            done(result.failureValue.map { self.failure("powering \(self.adapterPath) on (Adapter1.Powered)", $0) })
        }
    }

    /// The GAP Device Name bluetoothd serves is the adapter's alias.
    private func setAlias(_ done: @escaping (SeatError?) -> Void) {
        let name = spec.servedDeviceName
        client.allProperties(of: adapterPath, interface: BlueZName.adapter) { result in
            let current = (try? result.get()["Alias"]?.asString()) ?? nil
            guard current != name else { return done(nil) }
            self.client.setProperty("Alias", of: BlueZName.adapter, at: self.adapterPath, .string(name)) { result in
                if case .failure(let error) = result {
                    self.record(.note("the adapter's Alias (GAP Device Name) stays \(current ?? "unset"): \(error)"))
                } else {
                    self.originalAlias = current
                }
                done(nil)
            }
        }
    }

    /// The user at the peripheral: an Agent1 with `security:`'s IO capability and answers, the
    /// default agent, so the pairings centrals start reach it.
    private func registerAgent(_ done: @escaping (SeatError?) -> Void) {
        let settings = spec.security?.settings ?? SecuritySpec()
        let agent = BlueZAgent(connection: connection, path: agentPath,
                               capability: BlueZAgent.Capability(settings.io ?? .noInputNoOutput), answers: BlueZAgent.Answers(settings))
        agent.onRequest = { [weak self] request in self?.record(.note("agent: bluetoothd called \(request)")) }
        self.agent = agent
        agent.register { result in
            done(result.failureValue.map { self.failure("registering the agent (AgentManager1.RegisterAgent, RequestDefaultAgent)", $0) })
        }
    }

    private func readAddress(_ done: @escaping (SeatError?) -> Void) {
        client.allProperties(of: adapterPath, interface: BlueZName.adapter) { result in
            switch result {
            case .failure(let error): done(self.failure("reading \(self.adapterPath)'s Address", error))
            case .success(let properties):
                guard let text = try? properties["Address"]?.asString(),
                      let address = BlueZMapping.address(text, type: try? properties["AddressType"]?.asString()) else {
                    return done(.failed("\(self.adapterPath) has no valid Address property"))
                }
                self.address = address
                done(nil)
            }
        }
    }

    // MARK: The GATT application

    private func exportApplication(_ done: @escaping (SeatError?) -> Void) {
        do {
            try buildApplication()
            done(nil)
        } catch {
            done(.failed("exporting the GATT application at \(applicationPath): \(error)"))
        }
    }

    func buildApplication() throws {
        connection.exportObjectManager(at: applicationPath)
        for (s, service) in spec.services.enumerated() {
            let servicePath = try applicationPath.appending("service\(s)")
            try export(DBusExportedObject(path: servicePath, interfaces: [
                DBusInterface(BlueZName.gattService, properties: [
                    DBusProperty("UUID", .string, get: { .string(BlueZMapping.uuidString(service.uuid)) }),
                    DBusProperty("Primary", .boolean, get: { .boolean(service.isPrimary) }),
                ]),
            ]))
            for (c, characteristic) in service.characteristics.enumerated() {
                let path = try servicePath.appending("char\(c)")
                let exported = ExportedCharacteristic(ref: CharacteristicRef(characteristic.uuid, in: service.uuid), spec: characteristic, path: path)
                characteristics.append(exported)
                try export(DBusExportedObject(path: path, interfaces: [characteristicInterface(exported, service: servicePath)]))
                for (d, descriptor) in characteristic.descriptors.enumerated() where BlueZGattLayout.exportsDescriptor(descriptor) {
                    let exportedDescriptor = ExportedDescriptor(spec: descriptor, path: try path.appending("desc\(d)"))
                    descriptors.append(exportedDescriptor)
                    try export(DBusExportedObject(path: exportedDescriptor.path, interfaces: [descriptorInterface(exportedDescriptor, characteristic: path)]))
                }
            }
        }
    }

    private func export(_ object: DBusExportedObject) throws {
        try connection.export(object)
        exportedPaths.append(object.path)
    }

    private func characteristicInterface(_ c: ExportedCharacteristic, service: DBusObjectPath) -> DBusInterface {
        DBusInterface(BlueZName.gattCharacteristic, methods: [
            DBusMethod("ReadValue", inputs: [DBusArgument("options", .propertyMap)], outputs: [DBusArgument("value", .bytes)]) { [weak self] call in
                self?.readValue(c, call)
            },
            DBusMethod("WriteValue", inputs: [DBusArgument("value", .bytes), DBusArgument("options", .propertyMap)]) { [weak self] call in
                self?.writeValue(c, call)
            },
            DBusMethod("StartNotify") { [weak self] call in self?.setNotifying(c, true, call) },
            DBusMethod("StopNotify") { [weak self] call in self?.setNotifying(c, false, call) },
            // bluetoothd calls Confirm when a central confirms an indication (Part F 3.4.7.3).
            DBusMethod("Confirm") { [weak self] call in
                call.reply()
                self?.record(.indicationConfirmed(c.ref, true))
            },
        ], properties: [
            DBusProperty("UUID", .string, get: { .string(BlueZMapping.uuidString(c.spec.uuid)) }),
            DBusProperty("Service", .objectPath, get: { .objectPath(service) }),
            DBusProperty("Flags", .array(.string), get: {
                .strings(BlueZMapping.flags(c.spec.properties)
                    + BlueZSecurity.permissionFlags(value: c.spec.permissions, configuration: c.spec.configurationPermissions,
                                                    properties: c.spec.properties))
            }),
            DBusProperty("Value", .bytes, get: { .bytes(c.value) }),
            DBusProperty("Notifying", .boolean, get: { .boolean(c.notifying) }),
        ])
    }

    private func descriptorInterface(_ d: ExportedDescriptor, characteristic: DBusObjectPath) -> DBusInterface {
        DBusInterface(BlueZName.gattDescriptor, methods: [
            DBusMethod("ReadValue", inputs: [DBusArgument("options", .propertyMap)], outputs: [DBusArgument("value", .bytes)]) { call in
                let offset = Self.offset(call.arguments.last)
                guard offset <= d.value.count else { call.fail(.invalidOffset, "Invalid offset"); return }
                call.reply([.bytes(Array(d.value[offset...]))])
            },
            DBusMethod("WriteValue", inputs: [DBusArgument("value", .bytes), DBusArgument("options", .propertyMap)]) { call in
                guard d.spec.isWritable else { call.fail(.notPermitted, "Write not permitted"); return }
                let offset = Self.offset(call.arguments.last)
                guard offset <= d.value.count, let value = try? call.arguments[0].asBytes() else {
                    call.fail(.invalidOffset, "Invalid offset")
                    return
                }
                d.value = Array(d.value.prefix(offset)) + value
                call.reply()
            },
        ], properties: [
            DBusProperty("UUID", .string, get: { .string(BlueZMapping.uuidString(d.spec.uuid)) }),
            DBusProperty("Characteristic", .objectPath, get: { .objectPath(characteristic) }),
            DBusProperty("Flags", .array(.string), get: { .strings(BlueZGattLayout.descriptorFlags(d.spec)) }),
            DBusProperty("Value", .bytes, get: { .bytes(d.value) }),
        ])
    }

    /// The "offset" option of ReadValue/WriteValue (0 when absent).
    static func offset(_ options: DBusValue?) -> Int {
        guard let map = try? options?.asPropertyMap(), let offset = try? map["offset"]?.asUInt16() else { return 0 }
        return Int(offset)
    }

    private func registerApplication(_ done: @escaping (SeatError?) -> Void) {
        client.gattManager(adapterPath).registerApplication(applicationPath) { result in
            switch result {
            case .success:
                self.applicationRegistered = true
                done(nil)
            case .failure(let error):
                done(self.failure("GattManager1.RegisterApplication(\(self.applicationPath)) on \(self.adapterPath)", error))
            }
        }
    }

    // MARK: Advertising

    private func registerAdvertisement(completion: @escaping (SeatError?) -> Void) {
        guard let advertising = spec.advertising else { return completion(nil) }
        if !advertisementExported {
            let content = BlueZAdvertisementContent(advertising)
            let object = DBusExportedObject(path: advertisementPath, interfaces: [
                content.interface(intervals: { [weak self] in self?.advertisesIntervals ?? false }, release: { [weak self] in
                    self?.advertisementRegistered = false
                    self?.record(.note("bluetoothd released the advertisement"))
                }),
            ])
            do { try export(object) } catch {
                return completion(.failed("exporting the advertisement at \(advertisementPath): \(error)"))
            }
            advertisementExported = true
        }
        client.advertisingManager(adapterPath).registerAdvertisement(advertisementPath) { result in
            switch result {
            case .success:
                self.advertisementRegistered = true
                completion(nil)
            case .failure(let error):
                if self.advertisesIntervals, case .remote = error {
                    // Older bluetoothd, or a kernel without advertising parameters (MGMT Add
                    // Extended Advertising Parameters), refuses MinInterval/MaxInterval.
                    self.advertisesIntervals = false
                    self.record(.note("bluetoothd refused MinInterval/MaxInterval (\(error)); advertising at its default interval"))
                    return self.registerAdvertisement(completion: completion)
                }
                completion(self.failure("LEAdvertisingManager1.RegisterAdvertisement(\(self.advertisementPath)) on \(self.adapterPath)", error))
            }
        }
    }

    private func unregisterAdvertisement(completion: @escaping (DBusError?) -> Void) {
        guard advertisementRegistered else { return completion(nil) }
        advertisementRegistered = false
        client.advertisingManager(adapterPath).unregisterAdvertisement(advertisementPath) { completion($0.failureValue) }
    }

    // MARK: Requests from bluetoothd

    private func readValue(_ c: ExportedCharacteristic, _ call: DBusMethodInvocation) {
        let offset = Self.offset(call.arguments.last)
        let answer: (ATTErrorCode?) -> Void = { [weak self] error in
            if let error {
                call.fail(self?.errorReply(error, .read) ?? DBusErrorReply(.failed, message: "0x80"))
                return
            }
            guard offset <= c.value.count else { call.fail(.invalidOffset, "Invalid offset"); return }
            call.reply([.bytes(Array(c.value[offset...]))])
        }
        guard !c.spec.onRead.isEmpty else { return answer(nil) }
        runner.run(c.spec.onRead[...], context: ActionContext(site: "\(c.ref).on-read", answer: answer))
    }

    private func writeValue(_ c: ExportedCharacteristic, _ call: DBusMethodInvocation) {
        guard let value = try? call.arguments[0].asBytes() else { call.fail(.invalidArguments, "Invalid arguments"); return }
        let options = (try? call.arguments[1].asPropertyMap()) ?? [:]
        let method: WriteMethod?
        switch try? options["type"]?.asString() {
        case "request", "reliable": method = .request
        case "command": method = .command
        default: method = nil // bluetoothd 5.66 does not say (bluez/bluez#308)
        }
        let offset = Self.offset(call.arguments.last)
        onWrite?(SeatReceivedWrite(characteristic: c.ref, value: value, method: method))
        let answer: (ATTErrorCode?) -> Void = { [weak self] error in
            if let error {
                call.fail(self?.errorReply(error, .write) ?? DBusErrorReply(.failed, message: "0x80"))
                return
            }
            guard offset <= c.value.count else { call.fail(.invalidOffset, "Invalid offset"); return }
            c.value = Array(c.value.prefix(offset)) + value
            call.reply()
        }
        guard !c.spec.onWrite.isEmpty else { return answer(nil) }
        runner.run(c.spec.onWrite[...], context: ActionContext(site: "\(c.ref).on-write", written: value, answer: answer))
    }

    private func errorReply(_ code: ATTErrorCode, _ operation: BlueZServerErrors.Operation) -> DBusErrorReply {
        if let reply = BlueZServerErrors.reply(for: code, in: operation) { return reply }
        record(.note(BlueZServerErrors.unsendable(code, in: operation) ?? "respond-error \(code.name) cannot be sent"))
        return DBusErrorReply(.failed, message: "0x80")
    }

    private func setNotifying(_ c: ExportedCharacteristic, _ on: Bool, _ call: DBusMethodInvocation) {
        call.reply()
        guard c.notifying != on else { return }
        c.notifying = on
        try? connection.propertiesChanged(path: c.path, interface: BlueZName.gattCharacteristic, ["Notifying"])
        if on {
            // StartNotify does not say which the central enabled: indications only when the
            // characteristic offers nothing else.
            let indications = c.spec.properties.contains(.indicate) && !c.spec.properties.contains(.notify)
            record(.subscribed(c.ref, indications: indications))
            perform(c.spec.onSubscribe, site: "\(c.ref).on-subscribe")
        } else {
            record(.unsubscribed(c.ref))
            perform(c.spec.onUnsubscribe, site: "\(c.ref).on-unsubscribe")
        }
    }

    /// Ends the link with the central at `path` now. Device1.Disconnect does not: bluetoothd
    /// 5.66 (src/device.c, device_request_disconnect) first tells its profiles and only sends
    /// MGMT Disconnect after DISCONNECT_TIMER, 2 s. Setting Device1.Blocked sends it at once
    /// (device_block → disconnect_all, reason Remote User Terminated Connection, Vol 4 Part E
    /// 7.1.6) and puts the address on the kernel's reject list; the block is lifted as soon as
    /// Connected turns false, so the central may connect again.
    private func endLink(_ path: DBusObjectPath) {
        disconnecting.insert(path)
        blocked.insert(path)
        client.setProperty("Blocked", of: BlueZName.device, at: path, .boolean(true)) { [weak self] result in
            guard let self, case .failure(let error) = result else { return }
            blocked.remove(path)
            record(.note("disconnect \(path): Device1.Blocked not set (\(error)); Device1.Disconnect instead, which bluetoothd carries out after 2 s"))
            client.device(path).disconnect { [weak self] result in
                if case .failure(let error) = result { self?.record(.note("disconnect \(path): \(error)")) }
            }
        }
    }

    /// Lifts the block `endLink` set, once the link has ended.
    private func unblock(_ path: DBusObjectPath, client: BlueZClient? = nil, completion: (() -> Void)? = nil) {
        guard blocked.remove(path) != nil else { completion?(); return }
        (client ?? self.client).setProperty("Blocked", of: BlueZName.device, at: path, .boolean(false)) { [weak self] result in
            if case .failure(let error) = result {
                self?.record(.note("\(path) stays blocked (Device1.Blocked false refused: \(error)); it cannot connect again until RemoveDevice"))
            }
            completion?()
        }
    }

    private func deviceConnection(_ path: DBusObjectPath, connected: Bool) {
        if !connected, blocked.contains(path) { unblock(path) }
        guard !stopped else { return }
        if connected {
            guard connectedDevices[path] == nil, let address = address(of: path) else { return }
            connectedDevices[path] = address
            seenDevices.insert(path)
            record(.connected(address))
            perform(spec.onConnect, site: "on-connect")
        } else {
            guard let address = connectedDevices.removeValue(forKey: path) else { return }
            // Device1 does not carry the reason in 5.66: this side's own disconnect is "local
            // host", anything else is taken as the central's.
            let reason: HCIStatus = disconnecting.remove(path) != nil ? .connectionTerminatedByLocalHost : .remoteUserTerminatedConnection
            record(.disconnected(address, reason))
            keepSilentAfterDisconnection()
            perform(spec.onDisconnect, site: "on-disconnect")
        }
    }

    /// `resume-after-disconnect: false`. Linux re-enables an advertisement that a connection
    /// stopped as soon as the link ends (hci_disconn_complete_evt), as the default asks; to stay
    /// silent the advertisement is unregistered, unless `on-disconnect:` itself starts or stops
    /// advertising. A scanner may hear the advertising the kernel resumed in the moment between.
    private func keepSilentAfterDisconnection() {
        guard let advertising = spec.advertising, !advertising.resumeAfterDisconnect, connectedDevices.isEmpty,
              !spec.onDisconnect.contains(where: { $0 == .startAdvertising || $0 == .stopAdvertising }) else { return }
        unregisterAdvertisement { [weak self] error in
            if let error { self?.record(.note("resume-after-disconnect: false: \(error)")) }
        }
    }

    // MARK: Actions

    public var connectedCentrals: [LEAddress] { connectedDevices.keys.sorted().compactMap { connectedDevices[$0] } }

    public func perform(_ actions: [PeripheralAction], site: String) {
        runner.run(actions[...], context: ActionContext(site: site))
    }

    typealias ActionContext = PeripheralActionRunner.Context

    private func execute(_ action: PeripheralAction, context: ActionContext, site: String) {
        guard !stopped else { return }
        switch action {
        case let .notify(ref, source):
            send(ref, source, indication: false, context: context, site: site)
        case let .indicate(ref, source):
            send(ref, source, indication: true, context: context, site: site)
        case let .notifyEvery(ref, interval, source, count):
            runner.startRepeating(ref, interval: interval, count: count, site: site) { [weak self] context in
                guard let self, !self.stopped else { return false }
                self.send(ref, source, indication: false, context: context, site: site)
                return true
            }
        case let .stopNotifying(ref):
            runner.stopRepeating(ref)
        case let .setValue(ref, source):
            guard let c = characteristic(ref), let value = resolve(source, for: c, context: context, site: site) else {
                return record(.note("set-value \(ref): no such characteristic"))
            }
            c.value = value // no PropertiesChanged: bluetoothd would send it
            record(.valueSet(ref, value))
        case let .respondError(code):
            record(.note("respond-error \(code.name) with no request to answer"))
        case .delay:
            break
        case let .burst(ref, source, count):
            // Every PropertiesChanged at once: bluetoothd queues the notifications on the bearer.
            for _ in 0..<count { send(ref, source, indication: false, context: context, site: site) }
        case let .disconnect(reason):
            if let reason, reason != .remoteUserTerminatedConnection {
                record(.note("disconnect: bluetoothd (MGMT Disconnect) always sends Remote User Terminated Connection, not \(reason.name)"))
            }
            for path in connectedDevices.keys.sorted() { endLink(path) }
            record(.action(action))
        case .stopAdvertising:
            unregisterAdvertisement { [weak self] error in
                if let error { self?.record(.note("stop-advertising: \(error)")) }
            }
            record(.action(action))
        case .startAdvertising:
            guard spec.advertising != nil else { return record(.note("start-advertising: nothing to advertise")) }
            // Registering again restarts advertising (the kernel may have stopped it on connecting).
            unregisterAdvertisement { [weak self] _ in
                self?.registerAdvertisement { error in
                    if let error { self?.record(.note("start-advertising: \(error)")) }
                }
            }
            record(.action(action))
        case .powerOff, .requestConnectionUpdate, .notifyHandle, .indicateHandle, .sendPDU, .addService, .removeService, .serviceChanged,
             .forgetBonds:
            record(.note("\(action): \(BlueZPeripheralSupport.reason(for: action) ?? "not possible through bluetoothd's D-Bus API")"))
        }
    }

    /// Value changes and PropertiesChanged of Value: bluetoothd notifies or indicates each
    /// central by its CCCD.
    private func send(_ ref: CharacteristicRef, _ source: ValueSource?, indication: Bool, context: ActionContext, site: String) {
        guard let c = characteristic(ref), let value = resolve(source, for: c, context: context, site: site) else {
            return record(.note("\(indication ? "indicate" : "notify") \(ref): no such characteristic"))
        }
        c.value = value
        do {
            try connection.propertiesChanged(path: c.path, interface: BlueZName.gattCharacteristic, ["Value"])
        } catch {
            return record(.note("\(indication ? "indicate" : "notify") \(ref): PropertiesChanged not sent: \(error)"))
        }
        // As far as the application knows: bluetoothd calls StartNotify once, for the first central.
        let centrals = c.notifying ? max(connectedDevices.count, 1) : 0
        record(indication ? .indicated(ref, value, centrals: centrals) : .notified(ref, value, centrals: centrals))
    }

    /// The characteristic `ref` names: the first with its UUID (in its service, when given).
    func characteristic(_ ref: CharacteristicRef) -> ExportedCharacteristic? {
        characteristics.first { $0.spec.uuid == ref.characteristic && (ref.service == nil || $0.ref.service == ref.service) }
    }

    /// The stored value of `ref`.
    public func value(of ref: CharacteristicRef) -> [UInt8]? { characteristic(ref)?.value }

    /// The bytes of `source` (nil: the stored value), drawn by the runner as the simulated peripheral's are.
    private func resolve(_ source: ValueSource?, for c: ExportedCharacteristic, context: ActionContext, site: String) -> [UInt8]? {
        runner.resolve(source, stored: { c.value }, context: context, site: site)
    }

    func record(_ kind: PeripheralActivity.Kind) {
        let entry = PeripheralActivity(time: loop.now, kind: kind)
        activity.append(entry)
        onActivity?(entry)
    }

    // MARK: Stop

    /// Unregisters the advertisement and the application, disconnects and forgets the centrals
    /// it saw, restores the alias and powers the adapter off — each call bounded, the whole at
    /// most `limit` — then removes its objects and closes the connection.
    public func stop(completion: @escaping () -> Void) {
        stop(limit: .seconds(5), completion: completion)
    }

    public func stop(limit: TimeSpan, completion: @escaping () -> Void) {
        guard !stopped else { return loop.execute(completion) }
        stopped = true
        runner.stopAllRepeating()
        for subscription in subscriptions { subscription.cancel() }
        subscriptions.removeAll()

        var finished = false
        var deadline: LoopTimer?
        let finish = { [self] in
            guard !finished else { return }
            finished = true
            deadline?.cancel()
            agent?.close()
            for path in exportedPaths.reversed() { connection.unexport(path) }
            exportedPaths.removeAll()
            connection.removeObjectManager(at: applicationPath)
            connection.close()
            completion()
        }
        deadline = loop.schedule(after: limit) { [weak self] in
            self?.record(.note("stopping took longer than \(limit); bluetoothd did not answer"))
            finish()
        }
        guard connection.isConnected else { return loop.execute(finish) }

        let quick = BlueZClient(connection: connection, timeout: .seconds(2))
        let note: (String, Result<Void, DBusError>) -> Void = { [weak self] what, result in
            if case .failure(let error) = result { self?.record(.note("\(what): \(error)")) }
        }
        var steps: [(@escaping () -> Void) -> Void] = []
        if let agent, agent.registered {
            steps.append { next in
                agent.timeout = .seconds(2)
                agent.unregister { note("AgentManager1.UnregisterAgent", $0); next() }
            }
        }
        if advertisementRegistered {
            steps.append { [self] next in
                advertisementRegistered = false
                quick.advertisingManager(adapterPath).unregisterAdvertisement(advertisementPath) { note("UnregisterAdvertisement", $0); next() }
            }
        }
        if applicationRegistered {
            steps.append { [self] next in
                applicationRegistered = false
                quick.gattManager(adapterPath).unregisterApplication(applicationPath) { note("UnregisterApplication", $0); next() }
            }
        }
        // Blocked ends each link at once (Device1.Disconnect would wait 2 s, see `endLink`); the
        // block is lifted before the device is removed, so the kernel's reject list is left empty.
        let stillConnected = connectedDevices.keys.sorted()
        for path in stillConnected where !blocked.contains(path) {
            steps.append { [self] next in
                blocked.insert(path)
                quick.setProperty("Blocked", of: BlueZName.device, at: path, .boolean(true)) { [self] result in
                    if case let .failure(error) = result {
                        blocked.remove(path)
                        note("Device1.Blocked \(path)", .failure(error))
                        return quick.device(path).disconnect { note("Device1.Disconnect \(path)", $0); next() }
                    }
                    next()
                }
            }
        }
        steps.append { [self] next in
            func lift(_ rest: ArraySlice<DBusObjectPath>) {
                guard let path = rest.first else { return next() }
                unblock(path, client: quick) { lift(rest.dropFirst()) }
            }
            lift(blocked.sorted()[...])
        }
        for path in seenDevices.sorted() {
            steps.append { [self] next in quick.adapter(adapterPath).removeDevice(path) { note("Adapter1.RemoveDevice \(path)", $0); next() } }
        }
        if let alias = originalAlias {
            steps.append { [self] next in
                quick.setProperty("Alias", of: BlueZName.adapter, at: adapterPath, .string(alias)) { note("restoring Alias", $0); next() }
            }
        }
        steps.append { [self] next in quick.adapter(adapterPath).setPowered(false) { note("powering \(self.adapterPath) off", $0); next() } }
        connectedDevices.removeAll()
        func go(_ rest: ArraySlice<(@escaping () -> Void) -> Void>) {
            guard let first = rest.first else { return finish() }
            first { go(rest.dropFirst()) }
        }
        go(steps[...])
    }
}

private extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

private extension Substring {
    /// "AA_BB_CC_DD_EE_FF" → "AA:BB:CC:DD:EE:FF".
    func replacingUnderscores() -> String { String(map { $0 == "_" ? ":" : $0 }) }
}

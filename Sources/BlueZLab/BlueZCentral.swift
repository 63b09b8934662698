#if canImport(Glibc)
import Glibc
#endif
import ATT
import BLELab
import BLERuntime
import BLEWire
import DBus
import GATT
import ScenarioEngine
import ScenarioFormat

/// bluetoothd in the scenario central's seat (`blelab run --central bluez[:hciN]`): each step
/// becomes the org.bluez call a Linux application would make, on the adapter given.
///
/// - scan: Adapter1.SetDiscoveryFilter (UUIDs, Transport "le", DuplicateData) + StartDiscovery;
///   a device counts as discovered when bluetoothd announces it during the scan
///   (ObjectManager.InterfacesAdded of a Device1, or a PropertiesChanged of its advertisement
///   properties). Devices not connected are removed before each scan so that every scan starts
///   from what the air says, not from bluetoothd's memory.
/// - connect: Device1.Connect, bounded by the step's `within` (then Disconnect cancels it);
///   then Connected, announced or read (`confirmConnected`), bounded by `within` again.
/// - discover: waits for Device1.ServicesResolved and reads the GATT objects bluetoothd made.
/// - read/write: GattCharacteristic1.ReadValue/WriteValue ("type" from the step, none for
///   `type: default`: bluetoothd's own choice), or AcquireWrite's socket.
/// - subscribe: StartNotify, values from PropertiesChanged(Value); or AcquireNotify's socket.
///
/// Everything runs on the lab's `SystemEventLoop`; a bluetoothd that leaves the bus, an adapter
/// powered off or removed, or a lost bus connection ends the role (`failure`).
public final class BlueZCentral: CentralSeat {
    public let adapterPath: DBusObjectPath
    public let bus: DBusConnection.Bus
    public let service: String
    public var callTimeout: TimeSpan = .seconds(10)

    public var onValue: ((LEAddress, CharacteristicRef, [UInt8]) -> Void)?
    public var onDisconnected: ((LEAddress) -> Void)?
    /// What each discovery resolved, by address.
    private var resolved: [LEAddress: [SeatService]] = [:]
    public private(set) var failure: String?

    private var loop: SystemEventLoop?
    private var connection: DBusConnection?
    private var client: BlueZClient?
    private var subscriptions: [DBusSubscription] = []
    /// bluetoothd's objects as signals have told them (paths → interfaces → properties).
    private var tree: [DBusObjectPath: [String: [String: DBusValue]]] = [:]
    private var waiters: [Waiter] = []
    private var scanning: [DBusObjectPath: Int]?
    private var scanOrder = 0
    private var discoveryStarted = false
    /// Characteristics with a ReadValue in flight: bluetoothd emits PropertiesChanged(Value) for
    /// the value read (src/gatt-client.c stores it and flushes the change), which is not a
    /// notification.
    private var readsInFlight: Set<DBusObjectPath> = []
    private var acquired: [DBusObjectPath: (fd: Int32, watch: FDWatch)] = [:]
    /// Connections a `disconnect` step asked for (their end is not news).
    private var disconnecting: Set<DBusObjectPath> = []
    /// Characteristics with StartNotify in force.
    private var subscribed: Set<DBusObjectPath> = []
    /// Devices whose services were resolved by a discover step.
    private var resolvedOnce: Set<DBusObjectPath> = []
    /// A delayed `power-off: central` still to come (cancelled when the scenario ends first).
    private var powerOffTimer: LoopTimer?
    /// The user at the central: bluetoothd asks it for passkeys and confirmations (`pair`,
    /// `auto-pair` settings). Registered as the default agent, so the pairings the kernel starts
    /// (on an ATT security error, on a peripheral's Security Request) reach it too.
    public private(set) var agent: BlueZAgent?
    /// Where the agent is exported on the central's connection.
    public var agentPath: DBusObjectPath = "/org/blelab/central/agent"

    /// `adapter`: the controller's name, "hci0".
    public init(adapter: String = "hci0", bus: DBusConnection.Bus = .system, service: String = BlueZName.service) throws {
        guard !adapter.isEmpty, adapter.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw SeatError.failed("'\(adapter)' is not an adapter name (hci0, hci1, …)")
        }
        adapterPath = try DBusObjectPath("/org/bluez/\(adapter)")
        self.bus = bus
        self.service = service
    }

    public var description: String { "BlueZ (bluetoothd over D-Bus) on \(adapterPath.rawValue.split(separator: "/").last.map(String.init) ?? "?")" }

    // MARK: What it cannot do

    public func unsupported(_ scenario: Scenario) -> String? {
        if let why = BlueZSecurity.centralUnsupported(scenario) { return why }
        for step in scenario.steps {
            switch step.action {
            case .fault(.centralPowerOff):
                continue   // Adapter1.Powered = false
            case .fault:
                return "step \(step.index) (\(step.text)) changes the air, which only the sim can do; bluetoothd runs on a real controller"
            case .readDescriptor, .writeDescriptor:
                return "step \(step.index) (\(step.text)) reads or writes a descriptor, which this central's BlueZ mapping does not do yet"
            case .subscribe where step.subscription != nil:
                return "step \(step.index) (\(step.text)) picks what the CCCD enables; StartNotify chooses by itself"
            case let .expect(e):
                if case .flaw = e {
                    return "step \(step.index) (\(step.text)) checks how BLELab's own central handled a flawed peer; bluetoothd's handling is not observable that way"
                }
                if case .fault = e {
                    return "step \(step.index) (\(step.text)) checks link parameters that BLELab's own central negotiated"
                }
            default:
                continue
            }
        }
        return nil
    }

    // MARK: Power

    /// `power-off: central`: sets Adapter1.Powered to false, as an administrator or rfkill would.
    /// bluetoothd announces Powered=false, which ends the role (`failure`, "was powered off"): the
    /// step waiting then fails at once. Delayed (`after`), the call goes out that much later and
    /// this completes at once; a refused call then ends the role with bluetoothd's answer.
    public func powerOff(after: TimeSpan?, completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let client, let loop, failure == nil else { return completion(.failure(.failed(failure ?? "not begun"))) }
        let adapter = client.adapter(adapterPath)
        guard let after else {
            return adapter.setPowered(false) { [self] result in
                if case let .failure(error) = result { return completion(.failure(describe(error, doing: "Set Adapter1.Powered false"))) }
                completion(.success(()))
            }
        }
        powerOffTimer?.cancel()
        powerOffTimer = loop.schedule(after: after) { [weak self] in
            self?.powerOffTimer = nil
            adapter.setPowered(false) { result in
                guard let self, case let .failure(error) = result else { return }
                self.fail("could not power \(self.adapterPath) off: \(self.describe(error, doing: "Set Adapter1.Powered false"))")
            }
        }
        completion(.success(()))
    }

    // MARK: Begin and end

    public func begin(lab: Lab, completion: @escaping (Result<Void, SeatError>) -> Void) {
        resolved = [:]
        guard let loop = lab.loop as? SystemEventLoop else {
            return completion(.failure(.failed("--central bluez needs a real-time transport (hci-user, h4, rootcanal, bumble), not the sim: bluetoothd runs in real time")))
        }
        self.loop = loop
        failure = nil
        tree = [:]
        scanning = nil
        discoveryStarted = false
        readsInFlight = []
        disconnecting = []
        resolvedOnce = []
        subscribed = []
        DBusConnection.connect(bus: bus, loop: loop, timeout: .seconds(5)) { [self] result in
            switch result {
            case let .failure(error):
                completion(.failure(.failed("cannot reach the D-Bus system bus, where bluetoothd lives: \(error)")))
            case let .success(connection):
                self.connection = connection
                self.client = BlueZClient(connection: connection, service: service, timeout: callTimeout)
                connection.onDisconnect = { [weak self] error in self?.fail("the D-Bus connection to bluetoothd closed: \(error)") }
                subscribe { [self] error in
                    if let error { return completion(.failure(.failed("cannot watch bluetoothd's signals: \(error)"))) }
                    loadTree { [self] result in
                        guard case .success = result else { return completion(result) }
                        registerAgent(completion)
                    }
                }
            }
        }
    }

    private func subscribe(ready: @escaping (DBusError?) -> Void) {
        guard let connection, let client else { return }
        var pending = 4
        var firstError: DBusError?
        let one: (DBusError?) -> Void = { error in
            if firstError == nil { firstError = error }
            pending -= 1
            if pending == 0 { ready(firstError) }
        }
        subscriptions.append(client.onInterfacesAdded(under: "/org/bluez", ready: one) { [weak self] result in
            guard let self, case let .success(added) = result else { return }
            self.tree[added.path, default: [:]].merge(added.interfaces) { $1 }
            if added.interfaces[BlueZName.device] != nil { self.sawAdvertisement(added.path) }
            self.signalled()
        })
        subscriptions.append(client.onInterfacesRemoved(under: "/org/bluez", ready: one) { [weak self] result in
            guard let self, case let .success(removed) = result else { return }
            for name in removed.interfaces { self.tree[removed.path]?[name] = nil }
            if self.tree[removed.path]?.isEmpty == true { self.tree[removed.path] = nil }
            if removed.path == self.adapterPath, removed.interfaces.contains(BlueZName.adapter) {
                self.fail("bluetoothd removed the adapter \(self.adapterPath) (the controller went away)")
            }
            self.signalled()
        })
        subscriptions.append(connection.onPropertiesChanged(sender: service, namespace: "/org/bluez", ready: one) { [weak self] result in
            guard let self, case let .success(change) = result else { return }
            self.changed(change)
            self.signalled()
        })
        let owner = DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                  arg0: service)
        subscriptions.append(connection.subscribe(owner, ready: one) { [weak self] message in
            guard let self, let args = try? message.arguments(), args.count == 3, case .string("")? = args.last else { return }
            self.fail("bluetoothd left the system bus (it stopped or crashed)")
        })
    }

    private func loadTree(_ completion: @escaping (Result<Void, SeatError>) -> Void) {
        refreshTree { [self] result in
            if case let .failure(error) = result { return completion(.failure(error)) }
            guard let adapter = tree[adapterPath]?[BlueZName.adapter] else {
                let have = tree.filter { $0.value[BlueZName.adapter] != nil }.keys.map(\.rawValue).sorted()
                return completion(.failure(.failed("bluetoothd has no adapter \(adapterPath); it has \(have.isEmpty ? "none" : have.joined(separator: ", "))")))
            }
            let forget = { [self] in
                // Start from nothing bluetoothd remembers: every device of this adapter goes.
                forgetDevices(connectedToo: true) { completion(.success(())) }
            }
            if (try? adapter["Powered"]?.asBool()) == true { return forget() }
            client!.adapter(adapterPath).setPowered(true) { result in
                if case let .failure(error) = result {
                    return completion(.failure(.failed("cannot power on \(self.adapterPath): \(error)")))
                }
                self.until("\(self.adapterPath) to be powered", within: self.callTimeout, { self.adapterPowered }) { ok in
                    ok ? forget() : completion(.failure(.failed("\(self.adapterPath) did not power on within \(self.callTimeout)")))
                }
            }
        }
    }

    private func registerAgent(_ completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let connection else { return completion(.failure(.failed(failure ?? "not begun"))) }
        let agent = BlueZAgent(connection: connection, path: agentPath, service: service, timeout: callTimeout)
        self.agent = agent
        agent.register { [self] result in
            if case let .failure(error) = result {
                return completion(.failure(describe(error, doing: "AgentManager1.RegisterAgent/RequestDefaultAgent")))
            }
            completion(.success(()))
        }
    }

    // MARK: Security

    /// `pair`: the agent takes the step's IO capability and answers, then Device1.Pair — which
    /// bluetoothd runs through the caller's agent — until the keys are distributed or it fails.
    public func pair(with address: LEAddress, settings: SecuritySpec, completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let client, let agent, failure == nil else { return completion(.failure(.failed(failure ?? "not begun"))) }
        guard let path = devicePath(address) else { return completion(.failure(.failed("bluetoothd has no device \(address)"))) }
        // bluetoothd 5.66 answers Pair only after it has resolved the services; called while the
        // discovery it starts on connecting still runs, Pair paired (the log says "Proceeding
        // with service discovery") and never answered. An application waits for
        // ServicesResolved first, and so does this.
        until("ServicesResolved of \(path) before Pair", within: .seconds(30), {
            (try? self.tree[path]?[BlueZName.device]?["ServicesResolved"]?.asBool()) == true || !self.isConnected(path: path)
        }) { [self] _ in
            guard isConnected(path: path) else { return completion(.failure(.failed(failure ?? "not connected to \(address)"))) }
            pairResolved(path, settings: settings, client: client, agent: agent, completion: completion)
        }
    }

    private func pairResolved(_ path: DBusObjectPath, settings: SecuritySpec, client: BlueZClient, agent: BlueZAgent,
                              completion: @escaping (Result<Void, SeatError>) -> Void) {
        agent.use(BlueZAgent.Capability(settings.io ?? .noInputNoOutput), answers: BlueZAgent.Answers(settings)) { [self] result in
            if case let .failure(error) = result { return completion(.failure(describe(error, doing: "AgentManager1.RegisterAgent"))) }
            // Past SMP's 30 s timeout (Vol 3 Part H 3.4): bluetoothd answers by then.
            client.device(path).pair(timeout: .seconds(35)) { [self] result in
                switch result {
                case .success: completion(.success(()))
                case let .failure(error): completion(.failure(describe(error, doing: "Device1.Pair")))
                }
            }
        }
    }

    /// `auto-pair`: bluetoothd always pairs on Insufficient Authentication or Encryption (the
    /// kernel with the default agent's IO capability); the settings go to the agent.
    public func autoPair(_ settings: SecuritySpec?, completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let agent, let settings else { return completion(.success(())) }
        agent.use(BlueZAgent.Capability(settings.io ?? .noInputNoOutput), answers: BlueZAgent.Answers(settings)) { [self] result in
            completion(result.mapError { describe($0, doing: "AgentManager1.RegisterAgent") })
        }
    }

    private func refreshTree(_ completion: @escaping (Result<Void, SeatError>) -> Void) {
        client!.managedObjects { [self] result in
            switch result {
            case let .success(objects):
                tree = objects.objects
                completion(.success(()))
            case let .failure(error):
                completion(.failure(self.describe(error, doing: "GetManagedObjects")))
            }
        }
    }

    private var adapterPowered: Bool { (try? tree[adapterPath]?[BlueZName.adapter]?["Powered"]?.asBool()) == true }

    public func end(completion: @escaping () -> Void) {
        powerOffTimer?.cancel()
        powerOffTimer = nil
        // Each clean-up call gets a few seconds: the session waits 10 s for the whole.
        client?.timeout = .seconds(3)
        guard let client, connection?.isConnected == true, failure == nil || adapterStillThere else {
            close()
            return completion()
        }
        let finish = { [self] in
            forgetDevices(connectedToo: true) { [self] in
                close()
                completion()
            }
        }
        if discoveryStarted {
            discoveryStarted = false
            client.adapter(adapterPath).stopDiscovery { _ in finish() }
        } else {
            finish()
        }
    }

    private var adapterStillThere: Bool { tree[adapterPath]?[BlueZName.adapter] != nil }

    private func close() {
        agent?.close()
        agent = nil
        for s in subscriptions { s.cancel() }
        subscriptions = []
        for (_, a) in acquired { a.watch.cancel(); _ = Glibc.close(a.fd) }
        acquired = [:]
        for w in waiters { w.timer?.cancel() }
        waiters = []
        connection?.close()
        connection = nil
    }

    /// Disconnects (when asked) and removes every device of the adapter; completes when done or
    /// after `callTimeout`.
    private func forgetDevices(connectedToo: Bool, completion: @escaping () -> Void) {
        guard let client else { return completion() }
        // Before a scan, a device bluetoothd is bonded with stays (RemoveDevice would erase its
        // keys, which a later connection encrypts with).
        let devices = devicePaths.filter { connectedToo || (!isConnected(path: $0) && !isPaired(path: $0)) }
        guard !devices.isEmpty else { return completion() }
        var pending = devices.count
        var finished = false
        let one = {
            pending -= 1
            if pending == 0, !finished { finished = true; completion() }
        }
        for path in devices {
            if isConnected(path: path) { disconnecting.insert(path) }
            client.adapter(adapterPath).removeDevice(path) { _ in one() }
        }
    }

    // MARK: Signals

    private func changed(_ change: DBusPropertiesChanged) {
        guard tree[change.path] != nil || change.interface == BlueZName.adapter else { return }
        var props = tree[change.path]?[change.interface] ?? [:]
        let wasConnected = change.interface == BlueZName.device && isConnected(path: change.path)
        props.merge(change.changed) { $1 }
        for name in change.invalidated { props[name] = nil }
        tree[change.path, default: [:]][change.interface] = props
        switch change.interface {
        case BlueZName.adapter where change.path == adapterPath:
            if case .boolean(false)? = change.changed["Powered"] {
                fail("BlueZ's adapter \(adapterPath) was powered off")
            }
        case BlueZName.device:
            let advertised = ["RSSI", "ManufacturerData", "ServiceData", "UUIDs", "TxPower", "Name", "AdvertisingFlags", "AdvertisingData"]
            if advertised.contains(where: { change.changed[$0] != nil }) { sawAdvertisement(change.path) }
            if wasConnected, case .boolean(false)? = change.changed["Connected"] {
                if disconnecting.remove(change.path) == nil, let address = address(ofDevice: change.path) {
                    onDisconnected?(address)
                }
            }
        case BlueZName.gattCharacteristic:
            guard let value = change.changed["Value"], let bytes = try? value.asBytes() else { return }
            if readsInFlight.remove(change.path) != nil { return }
            // Only what this central subscribed to: another client's read changes Value too.
            guard subscribed.contains(change.path), acquired[change.path] == nil, let (address, ref) = locate(change.path) else { return }
            onValue?(address, ref, bytes)
        default:
            break
        }
    }

    private func sawAdvertisement(_ path: DBusObjectPath) {
        guard scanning != nil, path.isDescendant(of: adapterPath, strictly: true), scanning?[path] == nil else { return }
        scanOrder += 1
        scanning?[path] = scanOrder
    }

    private func fail(_ why: String) {
        guard failure == nil else { return }
        failure = why
        signalled()
    }

    /// Re-checks every pending condition after a signal.
    private func signalled() {
        for waiter in waiters where waiter.check() || failure != nil {
            finish(waiter, failure == nil)
        }
    }

    private func finish(_ waiter: Waiter, _ ok: Bool) {
        guard let i = waiters.firstIndex(where: { $0 === waiter }) else { return }
        waiters.remove(at: i)
        waiter.timer?.cancel()
        waiter.done(ok)
    }

    /// Calls `done(true)` once `check` holds (tested now and after each signal), `done(false)`
    /// after `within` or when the role fails.
    private func until(_ what: String, within: TimeSpan, _ check: @escaping () -> Bool, done: @escaping (Bool) -> Void) {
        if check() { return done(true) }
        guard failure == nil, let loop else { return done(false) }
        let waiter = Waiter(check: check, done: done)
        waiters.append(waiter)
        waiter.timer = loop.schedule(after: within) { [weak self, weak waiter] in
            guard let self, let waiter else { return }
            self.finish(waiter, false)
        }
    }

    private final class Waiter {
        let check: () -> Bool
        let done: (Bool) -> Void
        var timer: LoopTimer?
        init(check: @escaping () -> Bool, done: @escaping (Bool) -> Void) {
            self.check = check
            self.done = done
        }
    }

    // MARK: Objects

    private var devicePaths: [DBusObjectPath] {
        tree.filter { $0.value[BlueZName.device] != nil && $0.key.isDescendant(of: adapterPath, strictly: true) }.keys.sorted()
    }

    private func isPaired(path: DBusObjectPath) -> Bool {
        (try? tree[path]?[BlueZName.device]?["Paired"]?.asBool()) == true
    }

    private func isConnected(path: DBusObjectPath) -> Bool {
        (try? tree[path]?[BlueZName.device]?["Connected"]?.asBool()) == true
    }

    private func address(ofDevice path: DBusObjectPath) -> LEAddress? {
        guard let d = tree[path]?[BlueZName.device], let a = try? d["Address"]?.asString() else { return nil }
        return BlueZMapping.address(a, type: try? d["AddressType"]?.asString())
    }

    private func devicePath(_ address: LEAddress) -> DBusObjectPath? {
        devicePaths.first { self.address(ofDevice: $0) == address }
    }

    /// The device and characteristic reference of a characteristic object.
    private func locate(_ path: DBusObjectPath) -> (LEAddress, CharacteristicRef)? {
        guard let c = tree[path]?[BlueZName.gattCharacteristic], let uuid = (try? c["UUID"]?.asString()).flatMap(BlueZMapping.uuid),
              let servicePath = try? c["Service"]?.asObjectPath(), let s = tree[servicePath]?[BlueZName.gattService],
              let serviceUUID = (try? s["UUID"]?.asString()).flatMap(BlueZMapping.uuid),
              let device = try? s["Device"]?.asObjectPath(), let address = address(ofDevice: device) else { return nil }
        return (address, CharacteristicRef(uuid, in: serviceUUID))
    }

    private func services(of device: DBusObjectPath) -> [(path: DBusObjectPath, uuid: BluetoothUUID)] {
        tree.compactMap { path, interfaces -> (DBusObjectPath, BluetoothUUID)? in
            guard let s = interfaces[BlueZName.gattService], (try? s["Device"]?.asObjectPath()) == device,
                  let uuid = (try? s["UUID"]?.asString()).flatMap(BlueZMapping.uuid) else { return nil }
            return (path, uuid)
        }.sorted { $0.0 < $1.0 }
    }

    private func characteristics(of service: DBusObjectPath) -> [(path: DBusObjectPath, properties: [String: DBusValue])] {
        tree.compactMap { path, interfaces -> (DBusObjectPath, [String: DBusValue])? in
            guard let c = interfaces[BlueZName.gattCharacteristic], (try? c["Service"]?.asObjectPath()) == service else { return nil }
            return (path, c)
        }.sorted { $0.0 < $1.0 }
    }

    /// The characteristic object for `ref` on the device at `address`.
    private func characteristicPath(_ ref: CharacteristicRef, on address: LEAddress) throws -> DBusObjectPath {
        guard let device = devicePath(address) else {
            throw SeatError.failed("bluetoothd has no device \(address) (it was removed, or no scan found it)")
        }
        for service in services(of: device) where ref.service == nil || ref.service == service.uuid {
            for c in characteristics(of: service.path) where (try? c.properties["UUID"]?.asString()).flatMap(BlueZMapping.uuid) == ref.characteristic {
                return c.path
            }
        }
        // Once the link ended bluetoothd removes the GATT objects one InterfacesRemoved at a
        // time: a call between two of them finds the services still there without their
        // characteristics. They vanished all the same.
        if resolvedOnce.contains(device), services(of: device).isEmpty || !isConnected(path: device) {
            throw SeatError.failed("bluetoothd has no GATT object for \(ref) under \(device) any more: the objects it made at "
                + "discovery vanished\(isConnected(path: device) ? "" : " when the link ended (Device1.Connected is false)")")
        }
        throw SeatError.failed(services(of: device).isEmpty
            ? "bluetoothd has not resolved \(address)'s services (add a discover step)"
            : "bluetoothd has no GATT object for \(ref) under \(device)")
    }

    /// "char000b" → 0x000b + 1: bluetoothd names a characteristic object after its declaration's
    /// handle, and the value follows it (Core 5.4 Vol 3 Part G 3.3).
    static func valueHandle(ofCharacteristic path: DBusObjectPath) -> UInt16? {
        guard let last = path.rawValue.split(separator: "/").last, last.hasPrefix("char"),
              let declaration = UInt16(last.dropFirst(4), radix: 16), declaration < 0xFFFF else { return nil }
        return declaration + 1
    }

    // MARK: Scanning

    public func startScan(_ scan: ScanStep, completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let client, failure == nil else { return completion(.failure(.failed(failure ?? "not begun"))) }
        let adapter = client.adapter(adapterPath)
        let filter = BlueZDiscoveryFilter(uuids: scan.services.map(BlueZMapping.uuidString), transport: .le, duplicateData: scan.duplicates)
        forgetDevices(connectedToo: false) { [self] in
            adapter.setDiscoveryFilter(filter) { [self] result in
                if case let .failure(error) = result { return completion(.failure(self.describe(error, doing: "SetDiscoveryFilter"))) }
                scanning = [:]
                adapter.startDiscovery { [self] result in
                    if case let .failure(error) = result {
                        scanning = nil
                        return completion(.failure(self.describe(error, doing: "StartDiscovery")))
                    }
                    discoveryStarted = true
                    // Discovering turns true once the kernel reports what it finds (mgmt
                    // Discovering event); advertising reports before that are dropped.
                    until("Discovering on \(adapterPath)", within: callTimeout, {
                        (try? self.tree[self.adapterPath]?[BlueZName.adapter]?["Discovering"]?.asBool()) == true
                    }) { ok in
                        completion(ok ? .success(()) : .failure(.failed(self.failure ?? "\(self.adapterPath) did not start discovering within \(self.callTimeout)")))
                    }
                }
            }
        }
    }

    public func stopScan(completion: @escaping (Result<[SeatScanReport], SeatError>) -> Void) {
        guard let client else { return completion(.failure(.failed(failure ?? "not begun"))) }
        let seen = (scanning ?? [:]).sorted { $0.value < $1.value }.map(\.key)
        scanning = nil
        let reports: [SeatScanReport] = seen.compactMap { path in
            guard let d = tree[path]?[BlueZName.device], let address = address(ofDevice: path) else { return nil }
            let rssi = (try? d["RSSI"]?.asInt16()).flatMap { Int8(exactly: $0) }
            let names = [try? d["Name"]?.asString()].compactMap { $0 }
            let uuids = ((try? d["UUIDs"]?.asStrings()) ?? []).compactMap(BlueZMapping.uuid)
            return SeatScanReport(address: address, rssi: rssi, names: names, serviceUUIDs: uuids)
        }
        guard discoveryStarted else { return completion(.success(reports)) }
        discoveryStarted = false
        client.adapter(adapterPath).stopDiscovery { result in
            if case let .failure(error) = result { return completion(.failure(self.describe(error, doing: "StopDiscovery"))) }
            completion(.success(reports))
        }
    }

    // MARK: Connecting

    public func connect(to address: LEAddress, within: TimeSpan, completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let client, failure == nil else { return completion(.failure(.failed(failure ?? "not begun"))) }
        guard let path = devicePath(address) else {
            return completion(.failure(.failed("bluetoothd has no device \(address) to connect to (no scan found it)")))
        }
        let device = client.device(path)
        device.connect(timeout: within) { [self] result in
            switch result {
            case .success:
                disconnecting.remove(path)
                confirmConnected(path, within: within, completion: completion)
            case .failure(.timeout):
                // Disconnect cancels a pending LE connection in bluetoothd.
                disconnecting.insert(path)
                device.disconnect { _ in }
                completion(.failure(.timeout("no connection within \(within) (Device1.Connect had not returned; cancelled with Disconnect)")))
            case let .failure(error):
                completion(.failure(self.describe(error, doing: "Device1.Connect")))
            }
        }
    }

    /// Device1.Connect has returned: bluetoothd holds the link (for LE it answers once the ATT
    /// channel is up, src/device.c att_connect_cb). Connected has usually been announced by then,
    /// but not always: when the ATT channel comes up before the kernel's mgmt Device Connected
    /// event, bluetoothd replies to Connect first, and then device_add_connection finds the LE
    /// bearer already connected ("Device … is already connected") and returns without emitting
    /// PropertiesChanged(Connected), so no signal may ever say so (a CI run's bluetoothd log). The property is therefore read
    /// (GetAll: one sender's messages arrive in order, so the reply follows every signal sent
    /// before it and agrees with bluetoothd's state); only when it reads false is the signal
    /// waited for. Confirming gets as long again as the connect had (`within`, the read and the
    /// wait together; at most `callTimeout`, so the seat answers inside its `connectGrace`), not
    /// a fixed 10 s: a connect step completes or fails on its own bound.
    private func confirmConnected(_ path: DBusObjectPath, within: TimeSpan,
                                  completion: @escaping (Result<Void, SeatError>) -> Void) {
        if isConnected(path: path) { return completion(.success(())) }
        guard let client, let loop else { return completion(.failure(.failed(failure ?? "the role ended during Connect"))) }
        let bound = min(within, callTimeout)
        let deadline = loop.now + bound
        client.allProperties(of: path, interface: BlueZName.device, timeout: bound) { [self] result in
            switch result {
            case let .failure(error):
                completion(.failure(describe(error, doing: "Device1.Connect returned; reading Connected (GetAll)")))
            case let .success(properties):
                // An object removed meanwhile (InterfacesRemoved came first) stays removed.
                if tree[path]?[BlueZName.device] != nil {
                    tree[path]?[BlueZName.device]?.merge(properties) { $1 }
                }
                until("\(path) Connected", within: max(.zero, deadline - loop.now), { self.isConnected(path: path) }) { ok in
                    completion(ok ? .success(()) : .failure(.failed(self.failure
                        ?? "Device1.Connect returned, but Connected stayed false (read with GetAll, then no PropertiesChanged turned it true within \(bound))")))
                }
            }
        }
    }

    public func disconnect(from address: LEAddress, completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let client, let path = devicePath(address) else {
            return completion(.failure(.failed(failure ?? "bluetoothd has no device \(address)")))
        }
        disconnecting.insert(path)
        client.device(path).disconnect { [self] result in
            if case let .failure(error) = result { return completion(.failure(self.describe(error, doing: "Device1.Disconnect"))) }
            until("\(path) disconnected", within: callTimeout, { !self.isConnected(path: path) }) { ok in
                completion(ok ? .success(()) : .failure(.failed(self.failure ?? "still connected \(self.callTimeout) after Disconnect returned")))
            }
        }
    }

    public func isConnected(_ address: LEAddress) -> Bool {
        devicePath(address).map { isConnected(path: $0) } ?? false
    }

    // MARK: GATT

    public func discover(on address: LEAddress, services wanted: [BluetoothUUID]?,
                         completion: @escaping (Result<[SeatService], SeatError>) -> Void) {
        guard let path = devicePath(address) else {
            return completion(.failure(.failed(failure ?? "bluetoothd has no device \(address)")))
        }
        // bluetoothd discovers every service itself once connected (the filter only selects).
        until("ServicesResolved of \(path)", within: .seconds(30), {
            (try? self.tree[path]?[BlueZName.device]?["ServicesResolved"]?.asBool()) == true || !self.isConnected(path: path)
        }) { [self] ok in
            if ok, !isConnected(path: path) {
                return completion(.failure(.failed("the connection to \(address) ended before bluetoothd resolved its services")))
            }
            guard ok else {
                return completion(.failure(.failed(failure ?? "bluetoothd did not resolve \(address)'s services within 30 s (ServicesResolved stayed false)")))
            }
            refreshTree { [self] result in
                if case let .failure(error) = result { return completion(.failure(error)) }
                resolvedOnce.insert(path)
                let found: [SeatService] = services(of: path).compactMap { service in
                    guard wanted == nil || wanted!.contains(service.uuid) else { return nil }
                    let chars = characteristics(of: service.path).compactMap { c -> SeatCharacteristic? in
                        guard let uuid = (try? c.properties["UUID"]?.asString()).flatMap(BlueZMapping.uuid) else { return nil }
                        let flags = (try? c.properties["Flags"]?.asStrings()) ?? []
                        return SeatCharacteristic(uuid: uuid, properties: BlueZMapping.properties(flags),
                                                      valueHandle: Self.valueHandle(ofCharacteristic: c.path))
                    }
                    return SeatService(uuid: service.uuid, characteristics: chars)
                }
                resolved[address] = found
                completion(.success(found))
            }
        }
    }

    /// What the latest discovery on `address` resolved.
    public func services(on address: LEAddress) -> [SeatService] { resolved[address] ?? [] }

    public func mtu(on address: LEAddress) -> Int? {
        guard let device = devicePath(address) else { return nil }
        for service in services(of: device) {
            for c in characteristics(of: service.path) {
                if let mtu = try? c.properties["MTU"]?.asUInt16() { return Int(mtu) }
            }
        }
        return nil
    }

    public func read(_ ref: CharacteristicRef, on address: LEAddress, completion: @escaping (Result<[UInt8], SeatError>) -> Void) {
        guard let client else { return completion(.failure(.failed(failure ?? "not begun"))) }
        let path: DBusObjectPath
        do { path = try characteristicPath(ref, on: address) } catch { return completion(.failure(error as! SeatError)) }
        readsInFlight.insert(path)
        client.characteristic(path).readValue { [self] result in
            readsInFlight.remove(path)
            completion(result.mapError { self.gattCallFailed($0, doing: "ReadValue of \(ref)", path: path, ref: ref, address: address) })
        }
    }

    public func write(_ write: SeatWrite, to ref: CharacteristicRef, on address: LEAddress,
                      completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let client else { return completion(.failure(.failed(failure ?? "not begun"))) }
        let path: DBusObjectPath
        do { path = try characteristicPath(ref, on: address) } catch { return completion(.failure(error as! SeatError)) }
        if write.acquire { return acquireWrite(write.value, path: path, ref: ref, address: address, completion: completion) }
        let flags = (try? tree[path]?[BlueZName.gattCharacteristic]?["Flags"]?.asStrings()) ?? []
        let type: BlueZGattCharacteristic.WriteType?
        switch write.type {
        case .request: type = .request
        case .command: type = .command
        case .preferRequest, .preferCommand: type = write.type.method(for: BlueZMapping.properties(flags)) == .request ? .request : .command
        case .default: type = nil
        }
        client.characteristic(path).writeValue(write.value, type: type) { result in
            completion(result.mapError { self.gattCallFailed($0, doing: "WriteValue of \(ref)", path: path, ref: ref, address: address) })
        }
    }

    /// AcquireWrite: a SOCK_SEQPACKET whose every datagram bluetoothd sends as a Write Command.
    private func acquireWrite(_ value: [UInt8], path: DBusObjectPath, ref: CharacteristicRef, address: LEAddress,
                              completion: @escaping (Result<Void, SeatError>) -> Void) {
        client!.connection.call(destination: service, path: path, interface: BlueZName.gattCharacteristic, member: "AcquireWrite",
                                arguments: [.propertyMap([:])], replySignature: "hq", timeout: callTimeout) { result in
            switch result {
            case let .failure(error):
                completion(.failure(self.gattCallFailed(error, doing: "AcquireWrite of \(ref)", path: path, ref: ref, address: address)))
            case let .success(values):
                guard let fd = try? values[0].asUnixFD(), let mtu = try? values[1].asUInt16() else {
                    return completion(.failure(.failed("AcquireWrite of \(ref) answered without a descriptor")))
                }
                defer { _ = Glibc.close(fd) }
                guard value.count <= Int(mtu) - 3 else {
                    // The MTU AcquireWrite gives is ATT_MTU; a Write Command carries ATT_MTU - 3
                    // (Core 5.4 Vol 3 Part F 3.4.5.3), and bluetoothd drops a longer datagram silently.
                    return completion(.failure(.failed("\(value.count) octets do not fit a Write Command through AcquireWrite (ATT_MTU \(mtu): at most \(Int(mtu) - 3))")))
                }
                let sent = value.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                completion(sent == value.count ? .success(()) : .failure(.failed("writing to AcquireWrite's socket failed (errno \(errno))")))
            }
        }
    }

    public func setNotifications(_ enable: Bool, for ref: CharacteristicRef, on address: LEAddress, acquire: Bool,
                                 completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let client else { return completion(.failure(.failed(failure ?? "not begun"))) }
        let path: DBusObjectPath
        do { path = try characteristicPath(ref, on: address) } catch { return completion(.failure(error as! SeatError)) }
        if let held = acquired[path], !enable {
            // Closing AcquireNotify's socket is how an application stops (bluetoothd then clears the CCCD).
            held.watch.cancel()
            _ = Glibc.close(held.fd)
            acquired[path] = nil
            return completion(.success(()))
        }
        let characteristic = client.characteristic(path)
        if enable && acquire {
            characteristic.acquireNotify { [self] result in
                switch result {
                case let .failure(error):
                    completion(.failure(self.gattCallFailed(error, doing: "AcquireNotify of \(ref)", path: path, ref: ref, address: address)))
                case let .success((fd, _)):
                    watchAcquired(fd: fd, path: path, address: address, ref: ref)
                    completion(.success(()))
                }
            }
            return
        }
        // Values count from the call on; after StopNotify, none.
        if enable { subscribed.insert(path) } else { subscribed.remove(path) }
        let call = enable ? characteristic.startNotify : characteristic.stopNotify
        call { [self] result in
            if case .failure = result, enable { subscribed.remove(path) }
            completion(result.mapError {
                self.gattCallFailed($0, doing: "\(enable ? "StartNotify" : "StopNotify") of \(ref)", path: path, ref: ref, address: address)
            })
        }
    }

    /// Each datagram on AcquireNotify's socket is one value.
    private func watchAcquired(fd: Int32, path: DBusObjectPath, address: LEAddress, ref: CharacteristicRef) {
        guard let loop else { return }
        let watch = loop.watchReadable(fd: fd) { [weak self] in
            guard let self else { return }
            var buffer = [UInt8](repeating: 0, count: 1024)
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                self.onValue?(address, ref, Array(buffer[..<n]))
            } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
                // bluetoothd closed it: the link or the subscription ended.
                if let held = self.acquired.removeValue(forKey: path) {
                    held.watch.cancel()
                    _ = Glibc.close(held.fd)
                }
            }
        }
        acquired[path] = (fd, watch)
    }

    // MARK: Errors

    /// What a failed call on the characteristic object at `path` tells the step. A call can
    /// reach bluetoothd just after it removed the object: the link ended, Connected false has
    /// been seen here, and the InterfacesRemoved of the GATT objects were still on their way
    /// when the step called. bluetoothd then answers UnknownObject. D-Bus delivers one sender's
    /// messages in order, and bluetoothd emits InterfacesRemoved as it unregisters an object
    /// (gdbus flushes them in object_path_unref), so by the time that answer arrives the
    /// removal is known here: the step is told what it is told when the removal came first
    /// (`characteristicPath`), whichever won the race.
    private func gattCallFailed(_ error: DBusError, doing what: String, path: DBusObjectPath, ref: CharacteristicRef,
                                address: LEAddress) -> SeatError {
        if case let .remote(reply) = error,
           reply.name == "org.freedesktop.DBus.Error.UnknownObject" || reply.name == "org.freedesktop.DBus.Error.UnknownMethod",
           tree[path]?[BlueZName.gattCharacteristic] == nil {
            do { _ = try characteristicPath(ref, on: address) } catch let gone as SeatError { return gone } catch {}
        }
        return describe(error, doing: what)
    }

    /// `what` names the call; only ReadValue and WriteValue answers carry an ATT error from the
    /// peer (a refused StartNotify or Acquire* is bluetoothd's own answer, no PDU exchanged).
    func describe(_ error: DBusError, doing what: String) -> SeatError {
        let fromThePeer = what.hasPrefix("ReadValue") || what.hasPrefix("WriteValue")
        switch error {
        case let .remote(reply):
            if reply.name == DBusErrorReply.serviceUnknown || reply.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                let owner = service == BlueZName.service ? "org.bluez on the system bus" : "\(service) on the bus"
                return .failed("bluetoothd is not running: nothing owns \(owner) (\(what): \(reply.name))")
            }
            if reply.name == "org.freedesktop.DBus.Error.UnknownObject" || reply.name == "org.freedesktop.DBus.Error.UnknownMethod" {
                return .failed("\(what): the object is gone from bluetoothd (\(reply.name): \(reply.message))")
            }
            if fromThePeer, let code = BlueZMapping.attError(reply) { return .att(code, "\(what): \(reply.name): \(reply.message)") }
            return .failed("\(what): \(reply.name): \(reply.message)")
        case .timeout:
            return .timeout("\(what): bluetoothd did not answer: \(error)")
        default:
            return .failed("\(what): \(error)")
        }
    }
}

import BLERuntime
import BlueZLab
import DBus
import Foundation
import XCTest

/// A stand-in for bluetoothd 5.66 on the private bus, for the peripheral's side of its API: it
/// owns org.bluez, exports an adapter with GattManager1 and LEAdvertisingManager1, reads back
/// what an application registers (GetManagedObjects, GetAll) and checks it as bluetoothd does,
/// and then acts as bluetoothd does for a central on the link: Device1 objects that connect
/// and disconnect, ReadValue/WriteValue/StartNotify calls into the application, and the
/// PropertiesChanged of Value it would turn into notifications.
final class FakePeripheralBluetoothd {
    /// AgentManager1 at /org/bluez: the seats register their Agent1 there.
    private(set) var agentManager: FakeAgentManager!
    let connection: DBusConnection
    let adapterPath: DBusObjectPath
    let deviceAddress = "C0:FF:EE:00:00:01"
    var devicePath: DBusObjectPath { try! adapterPath.appending("dev_C0_FF_EE_00_00_01") }

    var powered = false
    var alias = "bluez-lab"
    /// When true, every method of the adapter keeps its invocation and never answers.
    var hangs = false
    var kept: [DBusMethodInvocation] = []
    /// Refuse advertisements that carry MinInterval (as a bluetoothd whose kernel lacks
    /// advertising parameters does).
    var refusesIntervals = false
    var refuseApplication: DBusErrorReply?

    var applicationOwner: String?
    var applicationPath: DBusObjectPath?
    var application: [DBusObjectPath: [String: [String: DBusValue]]] = [:]
    var applicationProblems: [String] = []
    var advertisementPath: DBusObjectPath?
    var advertisement: [String: DBusValue]?
    var advertisementRegistrations = 0
    var calls: [String] = []
    var connected = false
    /// PropertiesChanged of GattCharacteristic1 from the application: (path, changed).
    var changes: [(path: DBusObjectPath, changed: [String: DBusValue], time: Instant)] = []
    private var watch: DBusSubscription?

    init(connection: DBusConnection, adapter: DBusObjectPath = "/org/bluez/hci0") throws {
        self.connection = connection
        adapterPath = adapter
        connection.exportObjectManager(at: .root)
        try connection.export(DBusExportedObject(path: adapter, interfaces: [adapterInterface(), gattManager(), advertisingManager()]))
        agentManager = try FakeAgentManager(connection: connection)
    }

    private func keepOr(_ call: DBusMethodInvocation, _ body: () -> Void) {
        if hangs { kept.append(call); return }
        body()
    }

    private func adapterInterface() -> DBusInterface {
        DBusInterface(BlueZName.adapter, methods: [
            DBusMethod("RemoveDevice", inputs: [DBusArgument("device", .objectPath)]) { [unowned self] call in
                keepOr(call) {
                    calls.append("RemoveDevice \((try? call.arguments[0].asObjectPath())?.rawValue ?? "?")")
                    connection.unexport(devicePath)
                    deviceExported = false
                    call.reply()
                }
            },
        ], properties: [
            DBusProperty("Address", .string, get: { .string("00:AA:01:00:00:23") }),
            DBusProperty("AddressType", .string, get: { .string("public") }),
            DBusProperty("Alias", .string, access: .readwrite, get: { [unowned self] in .string(alias) },
                         set: { [unowned self] v in alias = try v.asString() }),
            DBusProperty("Powered", .boolean, access: .readwrite, get: { [unowned self] in .boolean(powered) },
                         set: { [unowned self] v in
                             if hangs { throw DBusErrorReply(name: DBusErrorReply.noReply, message: "hung") }
                             powered = try v.asBool()
                             calls.append("Powered \(powered)")
                         }),
        ])
    }

    private func gattManager() -> DBusInterface {
        DBusInterface(BlueZName.gattManager, methods: [
            DBusMethod("RegisterApplication", inputs: [DBusArgument("application", .objectPath), DBusArgument("options", .propertyMap)]) { [unowned self] call in
                keepOr(call) { registerApplication(call) }
            },
            DBusMethod("UnregisterApplication", inputs: [DBusArgument("application", .objectPath)]) { [unowned self] call in
                keepOr(call) {
                    calls.append("UnregisterApplication")
                    applicationPath = nil
                    call.reply()
                }
            },
        ])
    }

    /// As bluetoothd's manager_register_app/client_ready_cb: GetManagedObjects on the
    /// application root of the caller, then every service, characteristic and descriptor checked.
    private func registerApplication(_ call: DBusMethodInvocation) {
        guard let root = try? call.arguments[0].asObjectPath(), let owner = call.sender else { call.fail(.invalidArguments, "Invalid arguments"); return }
        if let refuse = refuseApplication { call.fail(refuse); return }
        connection.call(destination: owner, path: root, interface: DBusInterfaceName.objectManager, member: "GetManagedObjects",
                        replySignature: "a{oa{sa{sv}}}", timeout: .seconds(5)) { [self] result in
            guard case .success(let values) = result, let objects = try? values[0].asManagedObjects(), !objects.isEmpty else {
                call.fail(.failed, "No object received")
                return
            }
            var problems: [String] = []
            for (path, interfaces) in objects {
                if let s = interfaces[BlueZName.gattService] {
                    if (try? s["UUID"]?.asString()) == nil { problems.append("\(path): service without UUID") }
                    if (try? s["Primary"]?.asBool()) == nil { problems.append("\(path): service without Primary") }
                }
                if let c = interfaces[BlueZName.gattCharacteristic] {
                    guard let service = try? c["Service"]?.asObjectPath(), objects[service]?[BlueZName.gattService] != nil else {
                        problems.append("\(path): characteristic whose Service is not a service of the application"); continue
                    }
                    if (try? c["UUID"]?.asString()) == nil { problems.append("\(path): characteristic without UUID") }
                    if (try? c["Flags"]?.asStrings()) == nil { problems.append("\(path): characteristic without Flags") }
                }
                if let d = interfaces[BlueZName.gattDescriptor] {
                    guard let chrc = try? d["Characteristic"]?.asObjectPath(), objects[chrc]?[BlueZName.gattCharacteristic] != nil else {
                        problems.append("\(path): descriptor of no characteristic"); continue
                    }
                    // bluetoothd adds the CCCD itself.
                    if (try? d["UUID"]?.asString()) == "00002902-0000-1000-8000-00805f9b34fb" { problems.append("\(path): a CCCD") }
                }
            }
            applicationProblems = problems
            guard problems.isEmpty else { call.fail(.failed, "Failed to create entry in database"); return }
            application = objects
            applicationOwner = owner
            applicationPath = root
            calls.append("RegisterApplication")
            watch = connection.onPropertiesChanged(sender: owner, namespace: root, interface: BlueZName.gattCharacteristic) { [weak self] result in
                guard let self, case .success(let change) = result else { return }
                changes.append((change.path, change.changed, connection.loop.now))
            }
            call.reply()
        }
    }

    private func advertisingManager() -> DBusInterface {
        DBusInterface(BlueZName.advertisingManager, methods: [
            DBusMethod("RegisterAdvertisement", inputs: [DBusArgument("advertisement", .objectPath), DBusArgument("options", .propertyMap)]) { [unowned self] call in
                keepOr(call) {
                    guard let path = try? call.arguments[0].asObjectPath(), let owner = call.sender else { call.fail(.invalidArguments, "Invalid arguments"); return }
                    connection.call(destination: owner, path: path, interface: DBusInterfaceName.properties, member: "GetAll",
                                    arguments: [.string(BlueZName.advertisement)], replySignature: "a{sv}", timeout: .seconds(5)) { [self] result in
                        guard case .success(let values) = result, let properties = try? values[0].asPropertyMap() else {
                            call.fail(.failed, "Failed to parse advertisement."); return
                        }
                        if refusesIntervals, properties["MinInterval"] != nil { call.fail(.failed, "Failed to parse advertisement."); return }
                        advertisement = properties
                        advertisementPath = path
                        advertisementRegistrations += 1
                        calls.append("RegisterAdvertisement")
                        call.reply()
                    }
                }
            },
            DBusMethod("UnregisterAdvertisement", inputs: [DBusArgument("advertisement", .objectPath)]) { [unowned self] call in
                keepOr(call) {
                    guard advertisementPath != nil else { call.fail(.doesNotExist, "Does Not Exist"); return }
                    advertisementPath = nil
                    calls.append("UnregisterAdvertisement")
                    call.reply()
                }
            },
        ])
    }

    // MARK: A central on the link

    /// Device1.Blocked: while true, the kernel refuses the central (its address is on the reject list).
    var blocked = false
    /// Refuse Device1.Blocked (as a kernel without MGMT Block Device would).
    var refusesBlocking = false

    struct Refused: Error {}

    /// A central connects: its Device1 object appears (Connected false), then Connected turns true.
    /// A blocked central cannot.
    func centralConnects() throws {
        guard !blocked else { throw Refused() }
        if !deviceExported { try exportDevice() }
        connected = true
        try connection.propertiesChanged(path: devicePath, interface: BlueZName.device, ["Connected"])
    }

    private var deviceExported = false

    private func exportDevice() throws {
        deviceExported = true
        try connection.export(DBusExportedObject(path: devicePath, interfaces: [
            DBusInterface(BlueZName.device, methods: [
                // As bluetoothd 5.66's device_request_disconnect: the link ends DISCONNECT_TIMER
                // (2 s) later, and the call is answered then.
                DBusMethod("Disconnect") { [unowned self] call in
                    keepOr(call) {
                        calls.append("Disconnect")
                        connection.loop.schedule(after: .seconds(2)) { [weak self] in
                            self?.centralDisconnects()
                            call.reply()
                        }
                    }
                },
            ], properties: [
                DBusProperty("Address", .string, get: { [unowned self] in .string(deviceAddress) }),
                DBusProperty("AddressType", .string, get: { .string("random") }),
                DBusProperty("Connected", .boolean, get: { [unowned self] in .boolean(connected) }),
                // As device_block/device_unblock: blocking ends the link at once (MGMT Disconnect
                // before the reply; Connected turns false when the kernel reports it, after).
                DBusProperty("Blocked", .boolean, access: .readwrite, get: { [unowned self] in .boolean(blocked) },
                             set: { [unowned self] v in
                                 if hangs { throw DBusErrorReply(name: DBusErrorReply.noReply, message: "hung") }
                                 if refusesBlocking { throw DBusErrorReply(.failed, message: "Kernel lacks reject list support") }
                                 let value = try v.asBool()
                                 calls.append("Blocked \(value)")
                                 guard value != blocked else { return }
                                 blocked = value
                                 if value { connection.loop.execute { [weak self] in self?.centralDisconnects() } }
                             }),
            ]),
        ]))
    }

    func centralDisconnects() {
        guard connected else { return }
        connected = false
        try? connection.propertiesChanged(path: devicePath, interface: BlueZName.device, ["Connected"])
    }

    /// The application's object with `interface` whose UUID is `uuid` (128-bit form).
    func object(_ interface: String, uuid: String) -> DBusObjectPath? {
        application.first { (try? $0.value[interface]?["UUID"]?.asString()) == uuid }?.key
    }

    func call(_ path: DBusObjectPath, _ member: String, _ arguments: [DBusValue] = [], interface: String = BlueZName.gattCharacteristic,
              reply: String? = nil, completion: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        connection.call(destination: applicationOwner, path: path, interface: interface, member: member, arguments: arguments,
                        replySignature: reply, timeout: .seconds(5), completion: completion)
    }

    /// ReadValue as bluetoothd sends it for an ATT Read (Blob) Request.
    func readValue(_ path: DBusObjectPath, offset: UInt16? = nil, completion: @escaping (Result<[UInt8], DBusError>) -> Void) {
        var options: [String: DBusValue] = ["device": .objectPath(devicePath), "link": .string("LE"), "mtu": .uint16(247)]
        if let offset { options["offset"] = .uint16(offset) }
        call(path, "ReadValue", [.propertyMap(options)], reply: "ay") { result in
            completion(result.flatMap { values in Result { try values[0].asBytes() }.mapError { $0 as? DBusError ?? .malformedMessage("\($0)") } })
        }
    }

    func writeValue(_ path: DBusObjectPath, _ value: [UInt8], type: String?, completion: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        var options: [String: DBusValue] = ["device": .objectPath(devicePath), "link": .string("LE"), "mtu": .uint16(247)]
        if let type { options["type"] = .string(type) }
        call(path, "WriteValue", [.bytes(value), .propertyMap(options)], reply: "", completion: completion)
    }

    /// The values the application sent as PropertiesChanged of Value on `path`, in order.
    func notifiedValues(_ path: DBusObjectPath) -> [[UInt8]] {
        changes.filter { $0.path == path }.compactMap { try? $0.changed["Value"]?.asBytes() }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import BLERuntime
import BlueZLab
import DBus
import Foundation
import XCTest

/// A stand-in for bluetoothd 5.66 on a private bus, for the central's side of its API (what
/// BlueZCentral calls): it owns a name, serves ObjectManager at "/" with an Adapter1 and the
/// Device1/GattService1/GattCharacteristic1 objects a scan and a connection make, emits
/// InterfacesAdded/InterfacesRemoved/PropertiesChanged as bluetoothd does, records every call,
/// and can hang or refuse one. AcquireNotify and AcquireWrite hand out one end of a real
/// socketpair(AF_UNIX, SOCK_SEQPACKET), as src/gatt-client.c does; the fake keeps the other.
final class FakeCentralBluetoothd {
    /// AgentManager1 at /org/bluez: the seats register their Agent1 there.
    private(set) var agentManager: FakeAgentManager!
    /// What each Pair got from the caller's agent, and the capability it was registered with.
    var typedPasskeys: [UInt32] = []
    var pairedWith: [String] = []
    /// A characteristic bluetoothd found: its object is named after its declaration's handle
    /// ("char000b"), as src/gatt-client.c names it.
    final class Characteristic {
        let declaration: UInt16
        let uuid: String
        var flags: [String]
        var value: [UInt8]
        var notifying = false
        var path: DBusObjectPath = "/"

        init(_ declaration: UInt16, _ uuid: String, flags: [String], value: [UInt8] = []) {
            self.declaration = declaration
            self.uuid = uuid
            self.flags = flags
            self.value = value
        }
    }

    struct Service {
        var handle: UInt16
        var uuid: String
        var characteristics: [Characteristic]
    }

    final class Device {
        let path: DBusObjectPath
        let address: String
        let addressType: String
        var name: String?
        var rssi: Int16?
        var uuids: [String]
        var services: [Service]
        var connected = false
        var servicesResolved = false
        var exported = false
        var mtu: UInt16 = 23

        init(address: String, addressType: String, name: String?, rssi: Int16?, uuids: [String], services: [Service], adapter: DBusObjectPath) {
            self.address = address
            self.addressType = addressType
            self.name = name
            self.rssi = rssi
            self.uuids = uuids
            self.services = services
            path = try! adapter.appending("dev_" + address.replacingOccurrences(of: ":", with: "_"))
        }
    }

    /// How a call is answered.
    enum Answer {
        case reply
        /// Kept unanswered (until `close()`).
        case hang
        case fail(DBusErrorReply)
    }

    let connection: DBusConnection
    let service: String
    let adapterPath: DBusObjectPath
    var powered: Bool
    var discovering = false
    var devices: [Device] = []
    /// Every call, in order: "Powered true", "SetDiscoveryFilter", "StartDiscovery", "StopDiscovery",
    /// "RemoveDevice <path>", "Connect <path>", "Disconnect <path>", "ReadValue <path>",
    /// "WriteValue <path>", "StartNotify <path>", "StopNotify <path>", "AcquireNotify <path>",
    /// "AcquireWrite <path>".
    var calls: [String] = []
    var filters: [[String: DBusValue]] = []
    var writes: [(path: DBusObjectPath, value: [UInt8], options: [String: DBusValue])] = []
    /// The unique name of the last caller (the central's connection).
    var lastCaller: String?

    var connectAnswer: Answer = .reply
    /// How Set(Powered) is answered (`.hang` answers NoReply: a property Set cannot be kept).
    var powerAnswer: Answer = .reply
    var removeAnswer: Answer = .reply
    var stopDiscoveryAnswer: Answer = .reply
    /// Whether Connect returns before Connected turns true (else after).
    var connectedAfterReply = false
    /// Whether Connected turning true is announced (PropertiesChanged). bluetoothd (5.66, as a CI
    /// run's log showed) may not announce it when the ATT channel comes up before mgmt's Device
    /// Connected event: the
    /// Connect reply goes out from att_connect_cb, then device_add_connection finds the LE bearer
    /// connected ("Device … is already connected") and returns before emitting Connected; a
    /// Get or GetAll still reads true.
    var announcesConnected = true
    /// Whether the link is up when Connect is answered (else Connected turns true only with
    /// `linkUp`, or never).
    var linkUpOnConnect = true
    /// Whether services resolve right after a connection (else: `resolveServices`).
    var resolvesOnConnect = true
    /// Whether Discovering turns true as StartDiscovery returns (else: `reportDiscovering`),
    /// as bluetoothd does once the kernel's mgmt Discovering event comes.
    var discoveringAtOnce = true
    var readAnswer: Answer = .reply
    var writeAnswer: Answer = .reply
    /// Called when discovery starts (devices advertise then).
    var onStartDiscovery: (() -> Void)?
    /// Called as StopDiscovery is answered (before the reply).
    var onStopDiscovery: (() -> Void)?
    var kept: [DBusMethodInvocation] = []
    private var pendingConnects: [DBusObjectPath: DBusMethodInvocation] = [:]
    /// The fake's ends of AcquireNotify/AcquireWrite sockets.
    var notifySockets: [DBusObjectPath: Int32] = [:]
    var writeSockets: [DBusObjectPath: Int32] = [:]

    init(connection: DBusConnection, service: String, adapter: DBusObjectPath = "/org/bluez/hci0", powered: Bool = true) throws {
        self.connection = connection
        self.service = service
        adapterPath = adapter
        self.powered = powered
        connection.exportObjectManager(at: .root)
        try connection.export(DBusExportedObject(path: adapter, interfaces: [adapterInterface()]))
        agentManager = try FakeAgentManager(connection: connection)
    }

    /// Closes the sockets and answers what was kept (the caller may be gone).
    func close() {
        for fd in Array(notifySockets.values) + Array(writeSockets.values) { _ = Glibc.close(fd) }
        notifySockets = [:]
        writeSockets = [:]
        kept.removeAll()
        pendingConnects.removeAll()
    }

    private func note(_ call: DBusMethodInvocation, _ text: String) {
        calls.append(text)
        lastCaller = call.sender ?? lastCaller
    }

    /// Answers `call` as `answer` says, running `body` (which replies) for `.reply`.
    private func answer(_ call: DBusMethodInvocation, _ answer: Answer, _ body: () -> Void) {
        switch answer {
        case .reply: body()
        case .hang: kept.append(call)
        case let .fail(error): call.fail(error)
        }
    }

    private func changed(_ path: DBusObjectPath, _ interface: String, _ names: [String]) {
        try? connection.propertiesChanged(path: path, interface: interface, names)
    }

    private static func missing(_ name: String) -> DBusErrorReply {
        DBusErrorReply(name: DBusErrorReply.failed, message: "no \(name)")
    }

    // MARK: Adapter1

    private func adapterInterface() -> DBusInterface {
        DBusInterface(BlueZName.adapter, methods: [
            DBusMethod("SetDiscoveryFilter", inputs: [DBusArgument("filter", .propertyMap)]) { [unowned self] call in
                note(call, "SetDiscoveryFilter")
                filters.append((try? call.arguments[0].asPropertyMap()) ?? [:])
                call.reply()
            },
            DBusMethod("StartDiscovery") { [unowned self] call in
                note(call, "StartDiscovery")
                guard powered else { call.fail(.notReady, "Resource Not Ready"); return }
                call.reply()
                // Devices heard are announced before Discovering here, so that a central has
                // taken them by the time its scan has started (tests stop it right away).
                onStartDiscovery?()
                if discoveringAtOnce { reportDiscovering() }
            },
            DBusMethod("StopDiscovery") { [unowned self] call in
                note(call, "StopDiscovery")
                answer(call, stopDiscoveryAnswer) {
                    onStopDiscovery?()
                    call.reply()
                    discovering = false
                    changed(adapterPath, BlueZName.adapter, ["Discovering"])
                }
            },
            DBusMethod("RemoveDevice", inputs: [DBusArgument("device", .objectPath)]) { [unowned self] call in
                let path = (try? call.arguments[0].asObjectPath()) ?? "/"
                note(call, "RemoveDevice \(path)")
                answer(call, removeAnswer) {
                    guard let device = devices.first(where: { $0.path == path && $0.exported }) else {
                        call.fail(.doesNotExist, "Does Not Exist"); return
                    }
                    // bluetoothd disconnects a connected device before removing it (device_remove).
                    if device.connected { dropConnection(device) }
                    connection.unexport(device.path)
                    device.exported = false
                    call.reply()
                }
            },
        ], properties: [
            DBusProperty("Address", .string, get: { .string("00:AA:01:00:00:23") }),
            DBusProperty("AddressType", .string, get: { .string("public") }),
            DBusProperty("Powered", .boolean, access: .readwrite, get: { [unowned self] in .boolean(powered) },
                         set: { [unowned self] v in
                             calls.append("Powered \(try v.asBool())")
                             switch powerAnswer {
                             case .reply: powered = try v.asBool()
                             case .hang: throw DBusErrorReply(name: DBusErrorReply.noReply, message: "hung")
                             case let .fail(error): throw error
                             }
                         }),
            DBusProperty("Discovering", .boolean, get: { [unowned self] in .boolean(discovering) }),
        ])
    }

    /// Discovering turns true (the kernel's mgmt Discovering event).
    func reportDiscovering() {
        discovering = true
        changed(adapterPath, BlueZName.adapter, ["Discovering"])
    }

    /// The adapter goes off (rfkill, the controller reset): Powered false.
    func powerOff() {
        powered = false
        changed(adapterPath, BlueZName.adapter, ["Powered"])
    }

    /// The controller went away: its adapter object is removed.
    func removeAdapter() {
        connection.unexport(adapterPath)
    }

    /// bluetoothd leaves the bus (it stopped): ReleaseName, which the bus announces with
    /// NameOwnerChanged(name, old owner, "").
    func leaveBus(completion: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                        member: "ReleaseName", arguments: [.string(service)], replySignature: "u", timeout: .seconds(5),
                        completion: completion)
    }

    /// Whether the bus still knows `name` (a connection's unique name).
    func nameHasOwner(_ name: String, completion: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                        member: "NameHasOwner", arguments: [.string(name)], replySignature: "b", timeout: .seconds(5),
                        completion: completion)
    }

    // MARK: Devices

    @discardableResult
    func addDevice(_ address: String, type: String = "random", name: String? = nil, rssi: Int16? = -50, uuids: [String] = [],
                   services: [Service] = []) -> Device {
        let device = Device(address: address, addressType: type, name: name, rssi: rssi, uuids: uuids, services: services, adapter: adapterPath)
        devices.append(device)
        return device
    }

    /// An advertisement heard: the device object appears (InterfacesAdded), or, when bluetoothd
    /// has it already, its RSSI changes (PropertiesChanged), as src/adapter.c's device_found does.
    func advertise(_ device: Device, rssi: Int16? = nil) throws {
        if let rssi { device.rssi = rssi }
        guard device.exported else { return try export(device) }
        changed(device.path, BlueZName.device, ["RSSI"])
    }

    /// The device object appears (InterfacesAdded) without being announced as new otherwise.
    func export(_ device: Device) throws {
        device.exported = true
        try connection.export(DBusExportedObject(path: device.path, interfaces: [deviceInterface(device)]))
    }

    private func deviceInterface(_ d: Device) -> DBusInterface {
        DBusInterface(BlueZName.device, methods: [
            DBusMethod("Connect") { [unowned self, unowned d] call in
                note(call, "Connect \(d.path)")
                switch connectAnswer {
                case .reply where connectedAfterReply || !linkUpOnConnect:
                    call.reply()
                    guard linkUpOnConnect else { return }
                    d.connected = true
                    if announcesConnected { changed(d.path, BlueZName.device, ["Connected"]) }
                    if resolvesOnConnect { try? resolveServices(d) }
                case .reply:
                    d.connected = true
                    if announcesConnected { changed(d.path, BlueZName.device, ["Connected"]) }
                    call.reply()
                    if resolvesOnConnect { try? resolveServices(d) }
                case .hang:
                    pendingConnects[d.path] = call
                case let .fail(error):
                    call.fail(error)
                }
            },
            // As bluetoothd: the caller's agent is asked (here RequestPasskey, a KeyboardOnly
            // user's part of Passkey Entry); its refusal fails the pairing.
            DBusMethod("Pair") { [unowned self, unowned d] call in
                note(call, "Pair \(d.path)")
                guard let agent = agentManager.registered.first(where: { $0.sender == call.sender }), let owner = agent.sender else {
                    call.fail(.authenticationFailed, "Authentication Failed"); return
                }
                connection.call(destination: owner, path: agent.path, interface: BlueZAgent.interface, member: "RequestPasskey",
                                arguments: [.objectPath(d.path)], replySignature: "u", timeout: .seconds(5)) { [unowned self] result in
                    switch result {
                    case let .success(values):
                        typedPasskeys.append((try? values[0].asUInt32()) ?? 0)
                        pairedWith.append(agent.capability)
                        call.reply()
                    case .failure:
                        call.fail(.authenticationFailed, "Authentication Failed")
                    }
                }
            },
            DBusMethod("Disconnect") { [unowned self, unowned d] call in
                note(call, "Disconnect \(d.path)")
                // Disconnect cancels a pending Connect (which then fails).
                pendingConnects.removeValue(forKey: d.path)?.fail(.failed, "Operation was aborted")
                call.reply()
                if d.connected { dropConnection(d) }
            },
        ], properties: [
            DBusProperty("Address", .string, get: { [unowned d] in .string(d.address) }),
            DBusProperty("AddressType", .string, get: { [unowned d] in .string(d.addressType) }),
            DBusProperty("Name", .string, get: { [unowned d] in
                guard let name = d.name else { throw Self.missing("Name") }
                return .string(name)
            }),
            DBusProperty("RSSI", .int16, get: { [unowned d] in
                guard let rssi = d.rssi else { throw Self.missing("RSSI") }
                return .int16(rssi)
            }),
            DBusProperty("UUIDs", .array(.string), get: { [unowned d] in .strings(d.uuids) }),
            DBusProperty("Connected", .boolean, get: { [unowned d] in .boolean(d.connected) }),
            DBusProperty("ServicesResolved", .boolean, get: { [unowned d] in .boolean(d.servicesResolved) }),
            DBusProperty("Adapter", .objectPath, get: { [unowned self] in .objectPath(adapterPath) }),
        ])
    }

    /// bluetoothd has discovered the device's GATT database: the objects appear, then
    /// ServicesResolved turns true.
    func resolveServices(_ d: Device) throws {
        for s in d.services {
            let servicePath = try d.path.appending(String(format: "service%04x", s.handle))
            try connection.export(DBusExportedObject(path: servicePath, interfaces: [
                DBusInterface(BlueZName.gattService, properties: [
                    DBusProperty("UUID", .string, get: { .string(s.uuid) }),
                    DBusProperty("Primary", .boolean, get: { .boolean(true) }),
                    DBusProperty("Device", .objectPath, get: { [unowned d] in .objectPath(d.path) }),
                ]),
            ]))
            for c in s.characteristics {
                c.path = try servicePath.appending(String(format: "char%04x", c.declaration))
                try connection.export(DBusExportedObject(path: c.path, interfaces: [characteristicInterface(c, servicePath: servicePath, device: d)]))
            }
        }
        d.servicesResolved = true
        changed(d.path, BlueZName.device, ["ServicesResolved"])
    }

    /// The link comes up late (after a Connect answered with `linkUpOnConnect` false).
    func linkUp(_ d: Device) {
        d.connected = true
        changed(d.path, BlueZName.device, ["Connected"])
    }

    /// The link drops: Connected and ServicesResolved turn false and the GATT objects go.
    func dropConnection(_ d: Device) {
        dropLink(d)
        removeGATTObjects(d)
    }

    /// The first half of `dropConnection`: Connected and ServicesResolved turn false.
    func dropLink(_ d: Device) {
        d.connected = false
        let resolved = d.servicesResolved
        d.servicesResolved = false
        changed(d.path, BlueZName.device, resolved ? ["Connected", "ServicesResolved"] : ["Connected"])
    }

    /// The second half: the GATT objects go (InterfacesRemoved, emitted as each is unexported,
    /// so before any error reply to a call on them, as gdbus's object_path_unref flushes them).
    func removeGATTObjects(_ d: Device, servicesToo: Bool = true) {
        for s in d.services {
            for c in s.characteristics where c.path != "/" { connection.unexport(c.path) }
            if servicesToo, let servicePath = try? d.path.appending(String(format: "service%04x", s.handle)) { connection.unexport(servicePath) }
        }
    }

    // MARK: GATT

    private func characteristicInterface(_ c: Characteristic, servicePath: DBusObjectPath, device: Device) -> DBusInterface {
        DBusInterface(BlueZName.gattCharacteristic, methods: [
            DBusMethod("ReadValue", inputs: [DBusArgument("options", .propertyMap)], outputs: [DBusArgument("value", .bytes)]) { [unowned self, unowned c] call in
                note(call, "ReadValue \(c.path)")
                answer(call, readAnswer) {
                    // As chrc_read_cb: the value read is stored and PropertiesChanged(Value)
                    // flushed (G_DBUS_PROPERTY_CHANGED_FLAG_FLUSH) before the reply is sent.
                    changed(c.path, BlueZName.gattCharacteristic, ["Value"])
                    call.reply([.bytes(c.value)])
                }
            },
            DBusMethod("WriteValue", inputs: [DBusArgument("value", .bytes), DBusArgument("options", .propertyMap)]) { [unowned self, unowned c] call in
                note(call, "WriteValue \(c.path)")
                writes.append((c.path, (try? call.arguments[0].asBytes()) ?? [], (try? call.arguments[1].asPropertyMap()) ?? [:]))
                answer(call, writeAnswer) { call.reply() }
            },
            DBusMethod("StartNotify") { [unowned self, unowned c] call in
                note(call, "StartNotify \(c.path)")
                c.notifying = true
                changed(c.path, BlueZName.gattCharacteristic, ["Notifying"])
                call.reply()
            },
            DBusMethod("StopNotify") { [unowned self, unowned c] call in
                note(call, "StopNotify \(c.path)")
                guard c.notifying else { call.fail(.failed, "No notify session started"); return }
                c.notifying = false
                changed(c.path, BlueZName.gattCharacteristic, ["Notifying"])
                call.reply()
            },
            DBusMethod("AcquireNotify", inputs: [DBusArgument("options", .propertyMap)],
                       outputs: [DBusArgument("fd", .unixFD), DBusArgument("mtu", .uint16)]) { [unowned self, unowned c, unowned device] call in
                note(call, "AcquireNotify \(c.path)")
                guard c.flags.contains("notify") else { call.fail(.notSupported, "Operation is not supported"); return }
                guard let fd = socketPair(call, keeping: &notifySockets, for: c.path) else { return }
                call.reply([.unixFD(fd), .uint16(device.mtu)])
                _ = Glibc.close(fd)   // libdbus sent a duplicate
            },
            DBusMethod("AcquireWrite", inputs: [DBusArgument("options", .propertyMap)],
                       outputs: [DBusArgument("fd", .unixFD), DBusArgument("mtu", .uint16)]) { [unowned self, unowned c, unowned device] call in
                note(call, "AcquireWrite \(c.path)")
                guard c.flags.contains("write-without-response") else { call.fail(.notSupported, "Operation is not supported"); return }
                guard let fd = socketPair(call, keeping: &writeSockets, for: c.path) else { return }
                call.reply([.unixFD(fd), .uint16(device.mtu)])
                _ = Glibc.close(fd)
            },
        ], properties: [
            DBusProperty("UUID", .string, get: { [unowned c] in .string(c.uuid) }),
            DBusProperty("Service", .objectPath, get: { .objectPath(servicePath) }),
            DBusProperty("Flags", .array(.string), get: { [unowned c] in .strings(c.flags) }),
            DBusProperty("Value", .bytes, get: { [unowned c] in .bytes(c.value) }),
            DBusProperty("Notifying", .boolean, get: { [unowned c] in .boolean(c.notifying) }),
            DBusProperty("MTU", .uint16, get: { [unowned device] in .uint16(device.mtu) }),
        ])
    }

    /// A SOCK_SEQPACKET pair: the fake keeps one end, returns the other (to be sent).
    private func socketPair(_ call: DBusMethodInvocation, keeping sockets: inout [DBusObjectPath: Int32], for path: DBusObjectPath) -> Int32? {
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0 else {
            call.fail(.failed, "socketpair: errno \(errno)")
            return nil
        }
        if let old = sockets[path] { _ = Glibc.close(old) }
        sockets[path] = pair[0]
        return pair[1]
    }

    /// A notification bluetoothd received and passes on as PropertiesChanged(Value) (notify_cb).
    func notify(_ c: Characteristic, _ value: [UInt8]) {
        c.value = value
        changed(c.path, BlueZName.gattCharacteristic, ["Value"])
    }

    /// A notification passed on through AcquireNotify's socket (notify_io_cb): one datagram.
    func notifyAcquired(_ c: Characteristic, _ value: [UInt8]) -> Bool {
        guard let fd = notifySockets[c.path] else { return false }
        return value.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == value.count
    }

    /// What is waiting on the fake's end of an acquired socket: each datagram, and whether the
    /// other end has closed (end of file).
    static func drain(_ fd: Int32) -> (datagrams: [[UInt8]], closed: Bool) {
        var datagrams: [[UInt8]] = []
        while true {
            var buffer = [UInt8](repeating: 0, count: 2048)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { datagrams.append(Array(buffer[..<n])); continue }
            return (datagrams, n == 0)
        }
    }

    func device(_ address: String) -> Device? { devices.first { $0.address == address } }
}

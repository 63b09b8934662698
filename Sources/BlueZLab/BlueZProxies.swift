import BLERuntime
import DBus

/// bluetoothd on a connection: the object tree and typed proxies for its objects. `service` is
/// org.bluez on the system bus (tests give a fake's name on a private bus). Every call completes
/// on the loop, with an org.bluez.Error.* reply as `DBusError.remote` (`.bluez` names it).
public struct BlueZClient {
    public let connection: DBusConnection
    public let service: String
    /// The timeout for each call (Connect may take a while: pass more to `BlueZDevice.connect`).
    public var timeout: TimeSpan

    public init(connection: DBusConnection, service: String = BlueZName.service, timeout: TimeSpan = .seconds(25)) {
        self.connection = connection
        self.service = service
        self.timeout = timeout
    }

    /// GetManagedObjects on "/": every adapter, device, service and characteristic.
    public func managedObjects(completion: @escaping (Result<BlueZObjects, DBusError>) -> Void) {
        call(path: .root, interface: DBusInterfaceName.objectManager, member: "GetManagedObjects", replySignature: "a{oa{sa{sv}}}") { result in
            completion(result.flatMap { values in Result { BlueZObjects(try values[0].asManagedObjects()) }.mapDBusError() })
        }
    }

    public func adapter(_ path: DBusObjectPath) -> BlueZAdapter { BlueZAdapter(client: self, path: path) }
    public func device(_ path: DBusObjectPath) -> BlueZDevice { BlueZDevice(client: self, path: path) }
    public func characteristic(_ path: DBusObjectPath) -> BlueZGattCharacteristic { BlueZGattCharacteristic(client: self, path: path) }

    /// A device (or any object) appearing: InterfacesAdded from bluetoothd under `namespace`.
    @discardableResult
    public func onInterfacesAdded(under namespace: DBusObjectPath = "/org/bluez", ready: ((DBusError?) -> Void)? = nil,
                                  _ handler: @escaping (Result<DBusInterfacesAdded, DBusError>) -> Void) -> DBusSubscription {
        connection.onInterfacesAdded(sender: service, namespace: namespace, ready: ready, handler)
    }

    @discardableResult
    public func onInterfacesRemoved(under namespace: DBusObjectPath = "/org/bluez", ready: ((DBusError?) -> Void)? = nil,
                                    _ handler: @escaping (Result<DBusInterfacesRemoved, DBusError>) -> Void) -> DBusSubscription {
        connection.onInterfacesRemoved(sender: service, namespace: namespace, ready: ready, handler)
    }

    func call(path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue] = [], replySignature: String,
              timeout: TimeSpan? = nil, completion: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        connection.call(destination: service, path: path, interface: interface, member: member, arguments: arguments,
                        replySignature: replySignature, timeout: timeout ?? self.timeout, completion: completion)
    }

    func callVoid(path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue] = [], timeout: TimeSpan? = nil,
                  completion: @escaping (Result<Void, DBusError>) -> Void) {
        call(path: path, interface: interface, member: member, arguments: arguments, replySignature: "", timeout: timeout) {
            completion($0.map { _ in () })
        }
    }

    func getAll(path: DBusObjectPath, interface: String, completion: @escaping (Result<[String: DBusValue], DBusError>) -> Void) {
        call(path: path, interface: DBusInterfaceName.properties, member: "GetAll", arguments: [.string(interface)], replySignature: "a{sv}") {
            completion($0.flatMap { values in Result { try values[0].asPropertyMap() }.mapDBusError() })
        }
    }

    func set(path: DBusObjectPath, interface: String, property: String, _ value: DBusValue,
             completion: @escaping (Result<Void, DBusError>) -> Void) {
        callVoid(path: path, interface: DBusInterfaceName.properties, member: "Set",
                 arguments: [.string(interface), .string(property), .variant(value)], completion: completion)
    }
}

extension Result where Failure == Error {
    func mapDBusError() -> Result<Success, DBusError> {
        mapError { $0 as? DBusError ?? .malformedMessage("\($0)") }
    }
}

/// Adapter1.SetDiscoveryFilter's filter (BlueZ doc/org.bluez.Adapter.rst).
public struct BlueZDiscoveryFilter: Equatable, Sendable {
    public enum Transport: String, Sendable { case auto, bredr, le }

    /// Service UUIDs: devices advertising any of them (empty: all).
    public var uuids: [String]
    public var transport: Transport?
    /// Report every advertisement, not only changes (PropertiesChanged of RSSI each time).
    public var duplicateData: Bool?
    public var rssi: Int16?
    public var pattern: String?

    public init(uuids: [String] = [], transport: Transport? = .le, duplicateData: Bool? = nil, rssi: Int16? = nil, pattern: String? = nil) {
        self.uuids = uuids
        self.transport = transport
        self.duplicateData = duplicateData
        self.rssi = rssi
        self.pattern = pattern
    }

    public var dictionary: DBusValue {
        var d: [String: DBusValue] = [:]
        if !uuids.isEmpty { d["UUIDs"] = .strings(uuids) }
        if let transport { d["Transport"] = .string(transport.rawValue) }
        if let duplicateData { d["DuplicateData"] = .boolean(duplicateData) }
        if let rssi { d["RSSI"] = .int16(rssi) }
        if let pattern { d["Pattern"] = .string(pattern) }
        return .propertyMap(d)
    }
}

/// org.bluez.Adapter1 at `path` (e.g. /org/bluez/hci0).
public struct BlueZAdapter {
    public let client: BlueZClient
    public let path: DBusObjectPath

    public func properties(completion: @escaping (Result<BlueZAdapterProperties, DBusError>) -> Void) {
        client.getAll(path: path, interface: BlueZName.adapter) { result in
            completion(result.flatMap { p in Result { try BlueZAdapterProperties(p) }.mapDBusError() })
        }
    }

    public func setPowered(_ on: Bool, completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.set(path: path, interface: BlueZName.adapter, property: "Powered", .boolean(on), completion: completion)
    }

    public func setDiscoveryFilter(_ filter: BlueZDiscoveryFilter, completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.adapter, member: "SetDiscoveryFilter", arguments: [filter.dictionary], completion: completion)
    }

    public func startDiscovery(completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.adapter, member: "StartDiscovery", completion: completion)
    }

    public func stopDiscovery(completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.adapter, member: "StopDiscovery", completion: completion)
    }

    public func removeDevice(_ device: DBusObjectPath, completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.adapter, member: "RemoveDevice", arguments: [.objectPath(device)], completion: completion)
    }
}

/// org.bluez.Device1 at `path` (e.g. /org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF).
public struct BlueZDevice {
    public let client: BlueZClient
    public let path: DBusObjectPath

    public func properties(completion: @escaping (Result<BlueZDeviceProperties, DBusError>) -> Void) {
        client.getAll(path: path, interface: BlueZName.device) { result in
            completion(result.flatMap { p in Result { try BlueZDeviceProperties(p) }.mapDBusError() })
        }
    }

    public func connect(timeout: TimeSpan? = nil, completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.device, member: "Connect", timeout: timeout, completion: completion)
    }

    public func disconnect(completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.device, member: "Disconnect", completion: completion)
    }

    /// Device1.Pair: bluetoothd pairs (mgmt Pair Device) through the caller's agent, or the
    /// default one, and answers once the keys are distributed or the pairing failed
    /// (org.bluez.Error.AuthenticationFailed, AuthenticationRejected, AuthenticationCanceled,
    /// AuthenticationTimeout, AlreadyExists when already paired, InProgress).
    public func pair(timeout: TimeSpan? = nil, completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.device, member: "Pair", timeout: timeout, completion: completion)
    }

    /// Device1's PropertiesChanged (Connected, ServicesResolved, RSSI…), the changed values only.
    @discardableResult
    public func onPropertiesChanged(ready: ((DBusError?) -> Void)? = nil,
                                    _ handler: @escaping (Result<[String: DBusValue], DBusError>) -> Void) -> DBusSubscription {
        let path = self.path
        return client.connection.onPropertiesChanged(sender: client.service, namespace: path, interface: BlueZName.device, ready: ready) { result in
            switch result {
            case .success(let change) where change.path == path: handler(.success(change.changed))
            case .success: break
            case .failure(let error): handler(.failure(error))
            }
        }
    }
}

/// org.bluez.GattCharacteristic1 at `path`.
public struct BlueZGattCharacteristic {
    public let client: BlueZClient
    public let path: DBusObjectPath

    /// WriteValue's "type" option: which ATT write BlueZ is told to use.
    public enum WriteType: String, Sendable {
        /// ATT Write Request (a response comes back).
        case request
        /// ATT Write Command (no response).
        case command
        /// Prepare/Execute Write.
        case reliable
    }

    public func properties(completion: @escaping (Result<BlueZCharacteristicProperties, DBusError>) -> Void) {
        client.getAll(path: path, interface: BlueZName.gattCharacteristic) { result in
            completion(result.flatMap { p in Result { try BlueZCharacteristicProperties(p) }.mapDBusError() })
        }
    }

    public func readValue(offset: UInt16? = nil, completion: @escaping (Result<[UInt8], DBusError>) -> Void) {
        var options: [String: DBusValue] = [:]
        if let offset { options["offset"] = .uint16(offset) }
        client.call(path: path, interface: BlueZName.gattCharacteristic, member: "ReadValue", arguments: [.propertyMap(options)],
                    replySignature: "ay") { result in
            completion(result.flatMap { values in Result { try values[0].asBytes() }.mapDBusError() })
        }
    }

    /// WriteValue with `type` (nil: no "type" option, BlueZ chooses from the characteristic's flags).
    public func writeValue(_ value: [UInt8], type: WriteType?, offset: UInt16? = nil,
                           completion: @escaping (Result<Void, DBusError>) -> Void) {
        var options: [String: DBusValue] = [:]
        if let type { options["type"] = .string(type.rawValue) }
        if let offset { options["offset"] = .uint16(offset) }
        client.callVoid(path: path, interface: BlueZName.gattCharacteristic, member: "WriteValue",
                        arguments: [.bytes(value), .propertyMap(options)], completion: completion)
    }

    public func startNotify(completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.gattCharacteristic, member: "StartNotify", completion: completion)
    }

    public func stopNotify(completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.gattCharacteristic, member: "StopNotify", completion: completion)
    }

    /// AcquireNotify: a descriptor that delivers each notification as one datagram, and the MTU.
    /// The caller owns the descriptor.
    public func acquireNotify(completion: @escaping (Result<(fd: Int32, mtu: UInt16), DBusError>) -> Void) {
        client.call(path: path, interface: BlueZName.gattCharacteristic, member: "AcquireNotify", arguments: [.propertyMap([:])],
                    replySignature: "hq") { result in
            completion(result.flatMap { values in Result { (try values[0].asUnixFD(), try values[1].asUInt16()) }.mapDBusError() })
        }
    }

    /// Notified values: PropertiesChanged of Value on this characteristic, after StartNotify.
    @discardableResult
    public func onValue(ready: ((DBusError?) -> Void)? = nil,
                        _ handler: @escaping (Result<[UInt8], DBusError>) -> Void) -> DBusSubscription {
        let path = self.path
        return client.connection.onPropertiesChanged(sender: client.service, namespace: path, interface: BlueZName.gattCharacteristic,
                                                     ready: ready) { result in
            switch result {
            case .success(let change) where change.path == path:
                guard let value = change.changed["Value"] else { return }
                handler(Result { try value.asBytes() }.mapDBusError())
            case .success: break
            case .failure(let error): handler(.failure(error))
            }
        }
    }
}

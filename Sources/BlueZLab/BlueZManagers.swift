import BLERuntime
import DBus

/// org.bluez.GattManager1 on an adapter: registers a GATT application (an ObjectManager root
/// whose objects are GattService1/GattCharacteristic1/GattDescriptor1) with bluetoothd's local
/// GATT database (BlueZ doc/org.bluez.GattManager.rst).
public struct BlueZGattManager {
    public let client: BlueZClient
    public let path: DBusObjectPath

    public init(client: BlueZClient, path: DBusObjectPath) {
        self.client = client
        self.path = path
    }

    /// RegisterApplication(application, options). bluetoothd answers once it has read the
    /// application's objects with GetManagedObjects (and refused them, or added them).
    public func registerApplication(_ root: DBusObjectPath, options: [String: DBusValue] = [:], timeout: TimeSpan? = nil,
                                    completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.gattManager, member: "RegisterApplication",
                        arguments: [.objectPath(root), .propertyMap(options)], timeout: timeout, completion: completion)
    }

    public func unregisterApplication(_ root: DBusObjectPath, timeout: TimeSpan? = nil,
                                      completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.gattManager, member: "UnregisterApplication",
                        arguments: [.objectPath(root)], timeout: timeout, completion: completion)
    }
}

/// org.bluez.LEAdvertisingManager1 on an adapter: advertises what an exported
/// org.bluez.LEAdvertisement1 object describes (BlueZ doc/org.bluez.LEAdvertisingManager.rst).
public struct BlueZAdvertisingManager {
    public let client: BlueZClient
    public let path: DBusObjectPath

    public init(client: BlueZClient, path: DBusObjectPath) {
        self.client = client
        self.path = path
    }

    public func registerAdvertisement(_ advertisement: DBusObjectPath, options: [String: DBusValue] = [:], timeout: TimeSpan? = nil,
                                      completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.advertisingManager, member: "RegisterAdvertisement",
                        arguments: [.objectPath(advertisement), .propertyMap(options)], timeout: timeout, completion: completion)
    }

    public func unregisterAdvertisement(_ advertisement: DBusObjectPath, timeout: TimeSpan? = nil,
                                        completion: @escaping (Result<Void, DBusError>) -> Void) {
        client.callVoid(path: path, interface: BlueZName.advertisingManager, member: "UnregisterAdvertisement",
                        arguments: [.objectPath(advertisement)], timeout: timeout, completion: completion)
    }
}

extension BlueZClient {
    public func gattManager(_ adapter: DBusObjectPath) -> BlueZGattManager { BlueZGattManager(client: self, path: adapter) }
    public func advertisingManager(_ adapter: DBusObjectPath) -> BlueZAdvertisingManager { BlueZAdvertisingManager(client: self, path: adapter) }

    /// Whether `service` (bluetoothd's name) has an owner on the bus: org.freedesktop.DBus.NameHasOwner.
    public func serviceIsRunning(completion: @escaping (Result<Bool, DBusError>) -> Void) {
        connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                        member: "NameHasOwner", arguments: [.string(service)], replySignature: "b", timeout: timeout) { result in
            completion(result.flatMap { values in Result { try values[0].asBool() }.mapDBusError() })
        }
    }

    /// Every property of `interface` on the object at `path` (Properties.GetAll), untyped.
    public func allProperties(of path: DBusObjectPath, interface: String, timeout: TimeSpan? = nil,
                              completion: @escaping (Result<[String: DBusValue], DBusError>) -> Void) {
        call(path: path, interface: DBusInterfaceName.properties, member: "GetAll", arguments: [.string(interface)],
             replySignature: "a{sv}", timeout: timeout) {
            completion($0.flatMap { values in Result { try values[0].asPropertyMap() }.mapDBusError() })
        }
    }

    /// Properties.Set of one property.
    public func setProperty(_ property: String, of interface: String, at path: DBusObjectPath, _ value: DBusValue,
                            timeout: TimeSpan? = nil, completion: @escaping (Result<Void, DBusError>) -> Void) {
        callVoid(path: path, interface: DBusInterfaceName.properties, member: "Set",
                 arguments: [.string(interface), .string(property), .variant(value)], timeout: timeout, completion: completion)
    }
}

import DBus

/// BlueZ's D-Bus names (BlueZ's doc/org.bluez.*.rst).
public enum BlueZName {
    /// bluetoothd's well-known name on the system bus.
    public static let service = "org.bluez"
    public static let adapter = "org.bluez.Adapter1"
    public static let device = "org.bluez.Device1"
    public static let gattService = "org.bluez.GattService1"
    public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    public static let gattDescriptor = "org.bluez.GattDescriptor1"
    public static let gattManager = "org.bluez.GattManager1"
    public static let advertisingManager = "org.bluez.LEAdvertisingManager1"
    public static let advertisement = "org.bluez.LEAdvertisement1"
}

/// Reads typed properties out of an a{sv}, naming the property when its type is wrong.
struct BlueZPropertyReader {
    let interface: String
    let properties: [String: DBusValue]

    func optional<T>(_ name: String, _ read: (DBusValue) throws -> T) throws -> T? {
        guard let value = properties[name] else { return nil }
        do { return try read(value) } catch DBusError.unexpectedType(let expected, let actual) {
            throw DBusError.unexpectedSignature(expected: expected, actual: actual, in: "\(interface).\(name)")
        }
    }

    func required<T>(_ name: String, _ read: (DBusValue) throws -> T) throws -> T {
        guard let value = try optional(name, read) else {
            throw DBusError.malformedMessage("\(interface) has no \(name) property")
        }
        return value
    }
}

/// org.bluez.Adapter1's properties that the lab uses.
public struct BlueZAdapterProperties: Equatable, Sendable {
    public var address: String
    public var name: String?
    public var powered: Bool
    public var discovering: Bool
    public var uuids: [String]

    public init(_ properties: [String: DBusValue]) throws {
        let r = BlueZPropertyReader(interface: BlueZName.adapter, properties: properties)
        address = try r.required("Address") { try $0.asString() }
        name = try r.optional("Name") { try $0.asString() }
        powered = try r.optional("Powered") { try $0.asBool() } ?? false
        discovering = try r.optional("Discovering") { try $0.asBool() } ?? false
        uuids = try r.optional("UUIDs") { try $0.asStrings() } ?? []
    }
}

/// org.bluez.Device1's properties: its address, what it advertised, its connection state.
public struct BlueZDeviceProperties: Equatable, Sendable {
    public var address: String
    public var addressType: String?
    public var name: String?
    public var alias: String?
    public var rssi: Int16?
    public var txPower: Int16?
    public var uuids: [String]
    /// Company identifier → data.
    public var manufacturerData: [UInt16: [UInt8]]
    /// Service UUID → data.
    public var serviceData: [String: [UInt8]]
    public var connected: Bool
    public var servicesResolved: Bool
    public var adapter: DBusObjectPath?

    public init(_ properties: [String: DBusValue]) throws {
        let r = BlueZPropertyReader(interface: BlueZName.device, properties: properties)
        address = try r.required("Address") { try $0.asString() }
        addressType = try r.optional("AddressType") { try $0.asString() }
        name = try r.optional("Name") { try $0.asString() }
        alias = try r.optional("Alias") { try $0.asString() }
        rssi = try r.optional("RSSI") { try $0.asInt16() }
        txPower = try r.optional("TxPower") { try $0.asInt16() }
        uuids = try r.optional("UUIDs") { try $0.asStrings() } ?? []
        manufacturerData = try r.optional("ManufacturerData") { value in
            guard case .dictionary(.uint16, .variant, let entries) = value else {
                throw DBusError.unexpectedType(expected: "a{qv}", actual: value.signature)
            }
            var result: [UInt16: [UInt8]] = [:]
            for e in entries { result[try e.key.asUInt16()] = try e.value.unwrapVariant().asBytes() }
            return result
        } ?? [:]
        serviceData = try r.optional("ServiceData") { value in
            try value.asPropertyMap().mapValues { try $0.asBytes() }
        } ?? [:]
        connected = try r.optional("Connected") { try $0.asBool() } ?? false
        servicesResolved = try r.optional("ServicesResolved") { try $0.asBool() } ?? false
        adapter = try r.optional("Adapter") { try $0.asObjectPath() }
    }
}

/// org.bluez.GattCharacteristic1's properties.
public struct BlueZCharacteristicProperties: Equatable, Sendable {
    public var uuid: String
    public var service: DBusObjectPath
    /// "read", "write", "write-without-response", "notify", "indicate"…
    public var flags: [String]
    public var value: [UInt8]?
    public var notifying: Bool

    public init(_ properties: [String: DBusValue]) throws {
        let r = BlueZPropertyReader(interface: BlueZName.gattCharacteristic, properties: properties)
        uuid = try r.required("UUID") { try $0.asString() }
        service = try r.required("Service") { try $0.asObjectPath() }
        flags = try r.optional("Flags") { try $0.asStrings() } ?? []
        value = try r.optional("Value") { try $0.asBytes() }
        notifying = try r.optional("Notifying") { try $0.asBool() } ?? false
    }
}

/// bluetoothd's object tree at one moment (ObjectManager.GetManagedObjects on "/"), with typed
/// views of its adapters, devices and characteristics.
public struct BlueZObjects: Equatable {
    public var objects: [DBusObjectPath: [String: [String: DBusValue]]]

    public init(_ objects: [DBusObjectPath: [String: [String: DBusValue]]]) {
        self.objects = objects
    }

    private func paths(with interface: String, under parent: DBusObjectPath? = nil) -> [DBusObjectPath] {
        objects.filter { entry in
            entry.value[interface] != nil && (parent.map { entry.key.isDescendant(of: $0, strictly: true) } ?? true)
        }.keys.sorted()
    }

    public var adapters: [DBusObjectPath] { paths(with: BlueZName.adapter) }

    public func adapter(_ path: DBusObjectPath) throws -> BlueZAdapterProperties? {
        try objects[path]?[BlueZName.adapter].map(BlueZAdapterProperties.init)
    }

    /// Devices below `adapter` (all when nil), in path order.
    public func devices(on adapter: DBusObjectPath? = nil) -> [DBusObjectPath] { paths(with: BlueZName.device, under: adapter) }

    public func device(_ path: DBusObjectPath) throws -> BlueZDeviceProperties? {
        try objects[path]?[BlueZName.device].map(BlueZDeviceProperties.init)
    }

    /// The device with this address (case-insensitive), if bluetoothd knows it.
    public func device(address: String) throws -> DBusObjectPath? {
        for path in devices() {
            if let d = try device(path), d.address.uppercased() == address.uppercased() { return path }
        }
        return nil
    }

    /// Characteristics below `device`, in path order.
    public func characteristics(of device: DBusObjectPath) -> [DBusObjectPath] {
        paths(with: BlueZName.gattCharacteristic, under: device)
    }

    public func characteristic(_ path: DBusObjectPath) throws -> BlueZCharacteristicProperties? {
        try objects[path]?[BlueZName.gattCharacteristic].map(BlueZCharacteristicProperties.init)
    }

    /// The first characteristic of `device` whose UUID is `uuid` (full 128-bit form, any case).
    public func characteristic(uuid: String, of device: DBusObjectPath) throws -> DBusObjectPath? {
        for path in characteristics(of: device) {
            if let c = try characteristic(path), c.uuid.lowercased() == uuid.lowercased() { return path }
        }
        return nil
    }
}

import ATT
import BLERuntime
import BLEWire
import GATT
import HCI

/// A simulated peripheral, described as data: what it advertises, its GATT database, and how it
/// reacts. Scenario files and the CoreBluetooth look-alike's Lab both build these, so the two
/// share one vocabulary (`notify`, `on-write`, `respond-error`…).
public struct PeripheralSpec: Hashable {
    /// The id scenario steps use; also the device's name in logs and captures.
    public var id: String
    /// The address peers see. Nil: a public address derived from the id and the lab's seed.
    public var address: LEAddress?
    /// What scanners report for this device, in dBm (nil: the air's default).
    public var rssi: Int8?
    /// Nil: the peripheral does not advertise until an action starts it.
    public var advertising: AdvertisingSpec?
    public var services: [ServiceSpec]
    /// GAP Device Name (0x2A00); nil: see `servedDeviceName`.
    public var deviceName: String?
    public var onConnect: [PeripheralAction]
    public var onDisconnect: [PeripheralAction]
    /// How it misanswers ATT requests, tried in order (scenario key `flaws:`).
    public var flaws: [ATTFlaw] = []
    /// How it pairs (scenario key `security:`, Security.swift); nil: it refuses pairing.
    public var security: PeripheralSecurity?
    /// Its resolvable private address and how often it changes (scenario key `privacy:`,
    /// Security.swift); nil: it advertises from its identity address.
    public var privacy: PeripheralPrivacy?

    public init(id: String, address: LEAddress? = nil, rssi: Int8? = nil, advertising: AdvertisingSpec? = nil,
                services: [ServiceSpec] = [], deviceName: String? = nil,
                onConnect: [PeripheralAction] = [], onDisconnect: [PeripheralAction] = []) {
        self.id = id
        self.address = address
        self.rssi = rssi
        self.advertising = advertising
        self.services = services
        self.deviceName = deviceName
        self.onConnect = onConnect
        self.onDisconnect = onDisconnect
    }

    /// The value of its Device Name characteristic (0x2A00): `deviceName`, else the complete local
    /// name it advertises (advertising data, then scan response), else a shortened one, else the
    /// id. A Local Name AD is the device's name or a shortening of it (Core Specification
    /// Supplement Part A 1.2), so a complete one wherever it is sent is the name.
    public var servedDeviceName: String {
        if let deviceName { return deviceName }
        let contents = [advertising?.content, advertising?.scanResponse].compactMap { $0 }
        return contents.first { $0.name != nil && !$0.nameIsShortened }?.name
            ?? contents.first { $0.name != nil }?.name
            ?? id
    }

    /// Every characteristic with where it lives, in declaration order.
    public var characteristics: [(service: BluetoothUUID, characteristic: CharacteristicSpec)] {
        services.flatMap { s in s.characteristics.map { (s.uuid, $0) } }
    }
}

/// Advertising data as a scenario's `advertise:` block writes it.
public struct AdvertisingSpec: Hashable {
    public var name: String?
    /// Put the name in a Shortened Local Name AD instead of Complete Local Name.
    public var nameIsShortened: Bool
    /// Complete lists of service UUIDs (grouped by width).
    public var services: [BluetoothUUID]
    public var interval: TimeSpan
    public var connectable: Bool
    public var flags: UInt8?
    public var txPower: Int8?
    /// Company identifier and data.
    public var manufacturerData: ManufacturerData?
    public var serviceData: [ServiceData]
    /// Scan response content (its `interval`/`connectable`/`flags` are ignored).
    public var scanResponse: AdvertisingContent?
    /// Advertise again when a connection ends, as most firmware does (`resume-after-disconnect:`,
    /// default true). A connectable legacy advertiser stops when a central connects (Vol 6 Part B
    /// 4.4.2); without this the peripheral stays silent until an action starts it again.
    public var resumeAfterDisconnect: Bool

    public struct ManufacturerData: Hashable {
        public var companyID: UInt16
        public var data: [UInt8]
        public init(companyID: UInt16, data: [UInt8]) {
            self.companyID = companyID
            self.data = data
        }
    }

    public struct ServiceData: Hashable {
        public var uuid: BluetoothUUID
        public var data: [UInt8]
        public init(uuid: BluetoothUUID, data: [UInt8]) {
            self.uuid = uuid
            self.data = data
        }
    }

    public init(name: String? = nil, nameIsShortened: Bool = false, services: [BluetoothUUID] = [],
                interval: TimeSpan = .milliseconds(100), connectable: Bool = true, flags: UInt8? = 0x06,
                txPower: Int8? = nil, manufacturerData: ManufacturerData? = nil, serviceData: [ServiceData] = [],
                scanResponse: AdvertisingContent? = nil, resumeAfterDisconnect: Bool = true) {
        self.name = name
        self.nameIsShortened = nameIsShortened
        self.services = services
        self.interval = interval
        self.connectable = connectable
        self.flags = flags
        self.txPower = txPower
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.scanResponse = scanResponse
        self.resumeAfterDisconnect = resumeAfterDisconnect
    }

    public var content: AdvertisingContent {
        AdvertisingContent(name: name, nameIsShortened: nameIsShortened, services: services, flags: flags, txPower: txPower,
                           manufacturerData: manufacturerData, serviceData: serviceData)
    }
}

/// The AD structures of advertising or scan response data.
public struct AdvertisingContent: Hashable {
    public var name: String?
    public var nameIsShortened: Bool
    public var services: [BluetoothUUID]
    public var flags: UInt8?
    public var txPower: Int8?
    public var manufacturerData: AdvertisingSpec.ManufacturerData?
    public var serviceData: [AdvertisingSpec.ServiceData]

    public init(name: String? = nil, nameIsShortened: Bool = false, services: [BluetoothUUID] = [], flags: UInt8? = nil,
                txPower: Int8? = nil, manufacturerData: AdvertisingSpec.ManufacturerData? = nil,
                serviceData: [AdvertisingSpec.ServiceData] = []) {
        self.name = name
        self.nameIsShortened = nameIsShortened
        self.services = services
        self.flags = flags
        self.txPower = txPower
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
    }

    public var data: AdvertisingData {
        var s: [ADStructure] = []
        if let flags { s.append(.flags(flags)) }
        let groups: [(Int, ([BluetoothUUID], Bool) -> ADStructure)] = [
            (2, { .serviceUUIDs16($0, complete: $1) }), (4, { .serviceUUIDs32($0, complete: $1) }), (16, { .serviceUUIDs128($0, complete: $1) }),
        ]
        for (width, make) in groups {
            let list = services.filter { $0.width == width }
            if !list.isEmpty { s.append(make(list, true)) }
        }
        if let name { s.append(.localName(Array(name.utf8), complete: !nameIsShortened)) }
        if let txPower { s.append(.txPowerLevel(txPower)) }
        if let m = manufacturerData { s.append(.manufacturerData(companyID: m.companyID, data: m.data)) }
        for d in serviceData { s.append(.serviceData(d.uuid, data: d.data, width: d.uuid.width)) }
        return AdvertisingData(s)
    }
}

public struct ServiceSpec: Hashable {
    public var uuid: BluetoothUUID
    public var isPrimary: Bool
    public var characteristics: [CharacteristicSpec]
    /// `handle:`: its declaration's handle (nil: right after the handles before it).
    public var handle: UInt16?

    public init(uuid: BluetoothUUID, isPrimary: Bool = true, characteristics: [CharacteristicSpec] = [], handle: UInt16? = nil) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.characteristics = characteristics
        self.handle = handle
    }
}

public struct CharacteristicSpec: Hashable {
    public var uuid: BluetoothUUID
    public var properties: CharacteristicProperties
    public var value: [UInt8]
    /// Declared descriptors, laid out after the ones the properties require (the CCCD for
    /// notify/indicate, 0x2900 for extended-properties, 0x2903 for broadcast), in order.
    public var descriptors: [GATTDescriptor]
    /// The value of the Characteristic Extended Properties descriptor (0x2900), which the
    /// database lays out when `properties` has `extended-properties` (Core 5.4 Vol 3 Part G 3.3.3.1).
    public var extendedProperties: CharacteristicExtendedProperties
    public var onWrite: [PeripheralAction]
    public var onRead: [PeripheralAction]
    public var onSubscribe: [PeripheralAction]
    public var onUnsubscribe: [PeripheralAction]
    /// `handle:`: its value's handle, the declaration one before (nil: right after the handles before it).
    public var handle: UInt16?
    /// `permissions:`: what the link must have to read or write the value (Security.swift).
    public var permissions = AttributePermissions.open
    /// `permissions: [encrypted-subscribe]`…: what the link must have to write its CCCD.
    public var configurationPermissions = AttributePermissions.open

    public init(uuid: BluetoothUUID, properties: CharacteristicProperties, value: [UInt8] = [], descriptors: [GATTDescriptor] = [],
                extendedProperties: CharacteristicExtendedProperties = [],
                onWrite: [PeripheralAction] = [], onRead: [PeripheralAction] = [],
                onSubscribe: [PeripheralAction] = [], onUnsubscribe: [PeripheralAction] = []) {
        self.uuid = uuid
        self.properties = properties
        self.value = value
        self.descriptors = descriptors
        self.extendedProperties = extendedProperties
        self.onWrite = onWrite
        self.onRead = onRead
        self.onSubscribe = onSubscribe
        self.onUnsubscribe = onUnsubscribe
    }

    /// The characteristic as the GATT database takes it.
    public var gattCharacteristic: GATTCharacteristic {
        var c = GATTCharacteristic(uuid: uuid, properties: properties, value: value, descriptors: descriptors, extendedProperties: extendedProperties,
                                   valueHandle: handle)
        c.permissions = permissions
        c.configurationPermissions = configurationPermissions
        return c
    }

    /// The UUIDs of every descriptor the database gives it, in handle order: those its properties
    /// require, then the declared ones.
    public var descriptorUUIDs: [BluetoothUUID] {
        var uuids: [BluetoothUUID] = []
        if !properties.isDisjoint(with: [.notify, .indicate]) { uuids.append(.clientCharacteristicConfiguration) }
        if properties.contains(.extendedProperties) { uuids.append(.characteristicExtendedProperties) }
        if properties.contains(.broadcast) { uuids.append(.serverCharacteristicConfiguration) }
        return uuids + descriptors.map(\.uuid).filter { !uuids.contains($0) && $0 != .clientCharacteristicConfiguration }
    }
}

extension ServiceSpec {
    /// The service as the GATT database takes it.
    public var gattService: GATTService {
        GATTService(uuid: uuid, isPrimary: isPrimary, characteristics: characteristics.map(\.gattCharacteristic), handle: handle)
    }
}

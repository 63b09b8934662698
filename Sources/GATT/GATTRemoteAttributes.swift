import BLEWire
import ATT

/// A service found on a peer's server (Core 5.4, Vol 3, Part G, 4.4).
public struct GATTRemoteService: Hashable, Sendable, CustomStringConvertible {
    public let uuid: BluetoothUUID
    public let isPrimary: Bool
    /// Service declaration handle to End Group Handle.
    public let range: ATTHandleRange
    /// Filled by characteristic discovery.
    public var characteristics: [GATTRemoteCharacteristic]

    public init(uuid: BluetoothUUID, isPrimary: Bool = true, range: ATTHandleRange, characteristics: [GATTRemoteCharacteristic] = []) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.range = range
        self.characteristics = characteristics
    }

    public func characteristic(_ uuid: BluetoothUUID) -> GATTRemoteCharacteristic? {
        characteristics.first { $0.uuid == uuid }
    }

    public var description: String { "service \(uuid) \(range)" }
}

/// A characteristic found on a peer's server (Part G, 4.6): from its declaration (Part G, 3.3.1).
public struct GATTRemoteCharacteristic: Hashable, Sendable, CustomStringConvertible {
    public let uuid: BluetoothUUID
    public let properties: CharacteristicProperties
    public let declarationHandle: UInt16
    public let valueHandle: UInt16
    /// The last handle of the characteristic: before the next declaration, or the service's end.
    public internal(set) var endHandle: UInt16
    /// Filled by descriptor discovery.
    public var descriptors: [GATTRemoteDescriptor]

    public init(uuid: BluetoothUUID, properties: CharacteristicProperties, declarationHandle: UInt16, valueHandle: UInt16,
                endHandle: UInt16, descriptors: [GATTRemoteDescriptor] = []) {
        self.uuid = uuid
        self.properties = properties
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.endHandle = endHandle
        self.descriptors = descriptors
    }

    /// The Client Characteristic Configuration descriptor, once descriptors are discovered.
    public var configurationHandle: UInt16? {
        descriptors.first { $0.uuid == .clientCharacteristicConfiguration }?.handle
    }

    public var description: String {
        "characteristic \(uuid) \(properties) declaration \(hex4(declarationHandle)) value \(hex4(valueHandle)) end \(hex4(endHandle))"
    }
}

/// A descriptor found on a peer's server (Part G, 4.7).
public struct GATTRemoteDescriptor: Hashable, Sendable {
    public let handle: UInt16
    public let uuid: BluetoothUUID

    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// A notification or indication delivered to a client.
public struct GATTNotification: Hashable, Sendable {
    public let handle: UInt16
    public let value: [UInt8]
    public let isIndication: Bool

    public init(handle: UInt16, value: [UInt8], isIndication: Bool) {
        self.handle = handle
        self.value = value
        self.isIndication = isIndication
    }
}

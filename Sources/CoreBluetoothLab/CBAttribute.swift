import Foundation
import GATT

/// An abstract base class: the UUID of a service, characteristic or descriptor.
public class CBAttribute: NSObject {
    /// The Bluetooth-specific UUID of the attribute.
    public var uuid: CBUUID { attributeUUID }
    var attributeUUID: CBUUID

    init(uuid: CBUUID) {
        attributeUUID = uuid
        super.init()
    }
}

/// A collection of data and associated behaviors that accomplish a function or feature of a device.
public class CBService: CBAttribute {
    /// The peripheral to which this service belongs (nil for a local service).
    public internal(set) weak var peripheral: CBPeripheral?
    /// A Boolean value that indicates whether the type of service is primary or secondary.
    public var isPrimary: Bool { primary }
    /// A list of characteristics discovered in this service (nil before any discovery).
    public var characteristics: [CBCharacteristic]? { locked { storedCharacteristics } }
    /// A list of included services discovered in this service. Included services are not
    /// supported by the lab's GATT layer yet: always nil for a remote service.
    public var includedServices: [CBService]? { locked { storedIncludedServices } }

    var primary: Bool
    var storedCharacteristics: [CBCharacteristic]?
    var storedIncludedServices: [CBService]?
    /// For a remote service: where it lives on the peer's server.
    var remote: GATTRemoteService?

    init(uuid: CBUUID, isPrimary: Bool, remote: GATTRemoteService?, peripheral: CBPeripheral?) {
        primary = isPrimary
        self.remote = remote
        self.peripheral = peripheral
        super.init(uuid: uuid)
    }

    public override var description: String {
        "<CBService: isPrimary = \(isPrimary ? "YES" : "NO"), UUID = \(uuid)>"
    }
}

/// A characteristic of a remote peripheral's service (or, as `CBMutableCharacteristic`, of a
/// local one).
public class CBCharacteristic: CBAttribute {
    /// The service to which this characteristic belongs.
    public internal(set) weak var service: CBService?
    /// The properties of the characteristic.
    public var properties: CBCharacteristicProperties { storedProperties }
    /// The latest value read or notified (nil before the first).
    public var value: Data? { locked { storedValue } }
    /// A list of the descriptors discovered in this characteristic.
    public var descriptors: [CBDescriptor]? { locked { storedDescriptors } }
    /// A Boolean value that indicates whether the characteristic is currently notifying a
    /// subscribed central of its value (set when `setNotifyValue(_:for:)` succeeds).
    public internal(set) var isNotifying: Bool { get { locked { _isNotifying } } set { locked { _isNotifying = newValue } } }
    private var _isNotifying: Bool = false
    /// Broadcast is not supported: always false.
    public var isBroadcasted: Bool { false }

    var storedProperties: CBCharacteristicProperties
    var storedValue: Data?
    var storedDescriptors: [CBDescriptor]?
    /// For a remote characteristic: its handles on the peer's server.
    var remote: GATTRemoteCharacteristic?

    init(uuid: CBUUID, properties: CBCharacteristicProperties, value: Data?, remote: GATTRemoteCharacteristic?, service: CBService?) {
        storedProperties = properties
        storedValue = value
        self.remote = remote
        self.service = service
        super.init(uuid: uuid)
    }

    public override var description: String {
        let shown = value.map { "{length = \($0.count), bytes = 0x\($0.map { String(format: "%02x", $0) }.joined())}" } ?? "(null)"
        return "<CBCharacteristic: UUID = \(uuid), properties = 0x\(String(properties.rawValue, radix: 16, uppercase: true)), value = \(shown), notifying = \(isNotifying ? "YES" : "NO")>"
    }
}

/// An object that provides further information about a remote peripheral's characteristic.
///
/// `value` has the type CoreBluetooth gives each descriptor: `NSNumber` for Characteristic
/// Extended Properties (0x2900) and Client/Server Characteristic Configuration (0x2902, 0x2903),
/// `String` for Characteristic User Description (0x2901), `Data` for anything else.
public class CBDescriptor: CBAttribute {
    /// The characteristic to which this descriptor belongs.
    public internal(set) weak var characteristic: CBCharacteristic?
    /// The value of the descriptor (see the type above).
    public var value: Any? { locked { storedValue } }

    var storedValue: Any?
    /// For a remote descriptor: its handle on the peer's server.
    var handle: UInt16?

    init(uuid: CBUUID, value: Any?, handle: UInt16?, characteristic: CBCharacteristic?) {
        storedValue = value
        self.handle = handle
        self.characteristic = characteristic
        super.init(uuid: uuid)
    }

    /// Converts the octets read from the peer into the type CoreBluetooth uses for this descriptor.
    static func typedValue(_ bytes: [UInt8], for uuid: CBUUID) -> Any {
        switch uuid.bluetoothUUID.uuid16 {
        case 0x2900, 0x2902, 0x2903:
            let raw = bytes.prefix(2).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            return NSNumber(value: raw)
        case 0x2901:
            return String(decoding: bytes, as: UTF8.self)
        default:
            return Data(bytes)
        }
    }

    /// The octets to write for a descriptor value given the CoreBluetooth way.
    static func bytes(of value: Any) -> [UInt8]? {
        if let data = value as? Data { return [UInt8](data) }
        if let string = value as? String { return Array(string.utf8) }
        if let number = value as? NSNumber {
            let v = number.uint16Value
            return [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)]
        }
        return nil
    }

    public override var description: String {
        "<CBDescriptor: UUID = \(uuid), value = \(value.map { "\($0)" } ?? "(null)")>"
    }
}

import Foundation

/// A service with mutable properties, for a local peripheral manager's database.
public class CBMutableService: CBService {
    /// Creates a newly initialized mutable service specified by UUID and service type.
    public init(type UUID: CBUUID, primary isPrimary: Bool) {
        super.init(uuid: UUID, isPrimary: isPrimary, remote: nil, peripheral: nil)
    }

    /// The Bluetooth-specific UUID of the service.
    public override var uuid: CBUUID {
        get { attributeUUID }
        set { attributeUUID = newValue }
    }

    /// A list of characteristics of a service.
    public override var characteristics: [CBCharacteristic]? {
        get { storedCharacteristics }
        set { storedCharacteristics = newValue }
    }

    /// A list of included services of a service. Not published by the lab's GATT server yet.
    public override var includedServices: [CBService]? {
        get { storedIncludedServices }
        set { storedIncludedServices = newValue }
    }
}

/// A characteristic of a local peripheral's service.
///
/// A characteristic created with a `value` is static: the server answers reads from it and the
/// peripheral manager's delegate never sees them (CoreBluetooth requires such a characteristic
/// to be read-only). With `value` nil, every read and write goes to the delegate as a `CBATTRequest`.
public class CBMutableCharacteristic: CBCharacteristic {
    /// The permissions of the characteristic value.
    public var permissions: CBAttributePermissions
    /// A list of centrals that are currently subscribed to the characteristic's value.
    public internal(set) var subscribedCentrals: [CBCentral]? = []

    public init(type UUID: CBUUID, properties: CBCharacteristicProperties, value: Data?, permissions: CBAttributePermissions) {
        self.permissions = permissions
        super.init(uuid: UUID, properties: properties, value: value, remote: nil, service: nil)
    }

    public override var uuid: CBUUID {
        get { attributeUUID }
        set { attributeUUID = newValue }
    }

    public override var properties: CBCharacteristicProperties {
        get { storedProperties }
        set { storedProperties = newValue }
    }

    public override var value: Data? {
        get { storedValue }
        set { storedValue = newValue }
    }

    public override var descriptors: [CBDescriptor]? {
        get { storedDescriptors }
        set { storedDescriptors = newValue }
    }
}

/// A descriptor of a local peripheral's characteristic. As in CoreBluetooth, only the
/// Characteristic User Description (0x2901, a `String`) and Characteristic Presentation Format
/// (0x2904, `Data`) descriptors can be created; the Client Characteristic Configuration
/// descriptor is added by the server for characteristics that notify or indicate.
public class CBMutableDescriptor: CBDescriptor {
    public init(type UUID: CBUUID, value: Any?) {
        super.init(uuid: UUID, value: value, handle: nil, characteristic: nil)
    }
}

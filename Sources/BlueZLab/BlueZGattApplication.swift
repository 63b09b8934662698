import BLELab
import BLEWire
import DBus
import GATT

/// The D-Bus objects a `PeripheralSpec` becomes for GattManager1.RegisterApplication and
/// LEAdvertisingManager1.RegisterAdvertisement (BlueZ doc/org.bluez.GattService.rst,
/// GattCharacteristic.rst, GattDescriptor.rst, LEAdvertisement.rst): paths, and the properties
/// that do not change while the peripheral runs.
enum BlueZGattLayout {
    /// A D-Bus path element for an id ("hm-10" → "hm_10"): [A-Za-z0-9_] only, never empty.
    static func pathElement(_ id: String) -> String {
        let mapped = id.unicodeScalars.map { scalar -> Character in
            let v = scalar.value
            let ok = (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A) || v == 0x5F
            return ok ? Character(scalar) : "_"
        }
        return mapped.isEmpty ? "_" : String(mapped)
    }

    /// The descriptors bluetoothd adds itself and so must not be exported: the Client
    /// Characteristic Configuration (0x2902, made for every notify/indicate characteristic).
    static func exportsDescriptor(_ descriptor: GATTDescriptor) -> Bool {
        descriptor.uuid != BluetoothUUID(string: "2902")
    }

    static func descriptorFlags(_ descriptor: GATTDescriptor) -> [String] {
        var flags: [String] = []
        if descriptor.isReadable { flags.append("read") }
        if descriptor.isWritable { flags.append("write") }
        return flags
    }
}

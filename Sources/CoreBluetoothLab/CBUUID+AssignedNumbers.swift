extension CBUUID {
    /// The 16-bit UUIDs CoreBluetooth prints by name (Bluetooth SIG Assigned Numbers, 3.4–3.8).
    ///
    /// Only names seen in CoreBluetooth's own output on iOS and macOS are listed: it names the
    /// Battery, Device Information, Heart Rate and Current Time services and the Device
    /// Information characteristics, but prints others it could name as hex — "2A37" (Heart Rate
    /// Measurement), "2A38", "1802" — and so does this table.
    static let assignedNames: [UInt16: String] = [
        // Services
        0x1800: "Generic Access Profile",
        0x1801: "Generic Attribute Profile",
        0x1805: "Current Time",
        0x180A: "Device Information",
        0x180D: "Heart Rate",
        0x180F: "Battery",
        // Characteristics
        0x2A00: "Device Name",
        0x2A01: "Appearance",
        0x2A05: "Service Changed",
        0x2A0F: "Local Time Information",
        0x2A19: "Battery Level",
        0x2A23: "System ID",
        0x2A24: "Model Number String",
        0x2A25: "Serial Number String",
        0x2A26: "Firmware Revision String",
        0x2A27: "Hardware Revision String",
        0x2A28: "Software Revision String",
        0x2A29: "Manufacturer Name String",
        0x2A2A: "IEEE Regulatory Certification",
        0x2A2B: "Current Time",
        0x2A50: "PnP ID",
        // Descriptors
        0x2900: "Characteristic Extended Properties",
        0x2901: "Characteristic User Description",
        0x2902: "Client Characteristic Configuration",
        0x2903: "Server Characteristic Configuration",
        0x2904: "Characteristic Format",
        0x2905: "Characteristic Aggregate Format",
    ]
}

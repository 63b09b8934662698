import BLELab
import DBus
import ScenarioFormat

/// What the LEAdvertisement1 object says, from the spec's `advertise:` block. bluetoothd builds
/// the AD structures itself: it adds Flags (General Discoverable with Discoverable true), may put
/// LocalName in the scan response, and fills Tx Power with the controller's own level when
/// Includes has "tx-power". There is no way to say what goes in the scan response in 5.66, so
/// the scan response block's content is merged into the advertisement's properties.
struct BlueZAdvertisementContent: Equatable {
    var type: String
    var serviceUUIDs: [String]
    var manufacturerData: [(UInt16, [UInt8])]
    var serviceData: [(String, [UInt8])]
    var localName: String?
    var includes: [String]
    var discoverable: Bool
    /// Milliseconds (MinInterval = MaxInterval).
    var intervalMilliseconds: UInt32

    init(_ spec: AdvertisingSpec) {
        type = spec.connectable ? "peripheral" : "broadcast"
        var services = spec.services
        var manufacturer: [(UInt16, [UInt8])] = spec.manufacturerData.map { [($0.companyID, $0.data)] } ?? []
        var data = spec.serviceData.map { (BlueZMapping.uuidString($0.uuid), $0.data) }
        var name = spec.name
        var txPower = spec.txPower != nil
        if let scan = spec.scanResponse {
            for s in scan.services where !services.contains(s) { services.append(s) }
            if let m = scan.manufacturerData, !manufacturer.contains(where: { $0.0 == m.companyID }) { manufacturer.append((m.companyID, m.data)) }
            for d in scan.serviceData { data.append((BlueZMapping.uuidString(d.uuid), d.data)) }
            if name == nil { name = scan.name }
            if scan.txPower != nil { txPower = true }
        }
        serviceUUIDs = services.map(BlueZMapping.uuidString)
        manufacturerData = manufacturer
        serviceData = data
        localName = name
        includes = txPower ? ["tx-power"] : []
        discoverable = (spec.flags ?? 0) & 0x02 != 0
        let ms = (spec.interval.nanoseconds + 500_000) / 1_000_000
        intervalMilliseconds = UInt32(clamping: max(ms, 20))
    }

    static func == (a: BlueZAdvertisementContent, b: BlueZAdvertisementContent) -> Bool {
        a.type == b.type && a.serviceUUIDs == b.serviceUUIDs && a.manufacturerData.elementsEqual(b.manufacturerData, by: ==)
            && a.serviceData.elementsEqual(b.serviceData, by: ==) && a.localName == b.localName && a.includes == b.includes
            && a.discoverable == b.discoverable && a.intervalMilliseconds == b.intervalMilliseconds
    }

    /// org.bluez.LEAdvertisement1's properties. `intervals`: whether MinInterval/MaxInterval are
    /// offered. bluetoothd 5.66 (src/advertising.c, parse_min_interval) reads them only when it
    /// runs with --experimental (-E, or Experimental=true in main.conf) and ignores them
    /// otherwise: the kernel's default interval (1.28 s) is then used. Later releases made them
    /// stable.
    func interface(intervals: @escaping () -> Bool, release: @escaping () -> Void) -> DBusInterface {
        var properties: [DBusProperty] = [
            DBusProperty("Type", .string, get: { [type] in .string(type) }),
            DBusProperty("Discoverable", .boolean, get: { [discoverable] in .boolean(discoverable) }),
        ]
        if !serviceUUIDs.isEmpty {
            properties.append(DBusProperty("ServiceUUIDs", .array(.string), get: { [serviceUUIDs] in .strings(serviceUUIDs) }))
        }
        if !manufacturerData.isEmpty {
            let entries = manufacturerData.map { DBusDictEntry(.uint16($0.0), .variant(.bytes($0.1))) }
            properties.append(DBusProperty("ManufacturerData", .dictionary(key: .uint16, value: .variant),
                                           get: { .dictionary(key: .uint16, value: .variant, entries) }))
        }
        if !serviceData.isEmpty {
            let entries = serviceData.map { DBusDictEntry(.string($0.0), .variant(.bytes($0.1))) }
            properties.append(DBusProperty("ServiceData", .propertyMap, get: { .dictionary(key: .string, value: .variant, entries) }))
        }
        if let localName {
            properties.append(DBusProperty("LocalName", .string, get: { .string(localName) }))
        }
        if !includes.isEmpty {
            properties.append(DBusProperty("Includes", .array(.string), get: { [includes] in .strings(includes) }))
        }
        let ms = intervalMilliseconds
        // A getter that throws leaves the property out of GetAll/GetManagedObjects.
        properties.append(DBusProperty("MinInterval", .uint32, get: {
            guard intervals() else { throw DBusErrorReply(name: DBusErrorReply.unknownProperty, message: "not offered") }
            return .uint32(ms)
        }))
        properties.append(DBusProperty("MaxInterval", .uint32, get: {
            guard intervals() else { throw DBusErrorReply(name: DBusErrorReply.unknownProperty, message: "not offered") }
            return .uint32(ms)
        }))
        return DBusInterface(BlueZName.advertisement, methods: [
            DBusMethod("Release") { call in
                release()
                call.reply()
            },
        ], properties: properties)
    }
}

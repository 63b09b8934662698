import BLEWire
import Foundation
import GAP

/// Advertisement dictionaries: what `didDiscover` reports, and what `startAdvertising` accepts.
enum AdvertisementData {
    /// The dictionary CoreBluetooth hands `centralManager(_:didDiscover:advertisementData:rssi:)`:
    /// the advertising data merged with the scan response, with Apple's keys and value types.
    /// `CBAdvertisementDataIsConnectable` is always present; the others only when advertised.
    static func dictionary(for report: ScanReport) -> [String: Any] {
        let merged = AdvertisingData(report.advertisement.structures + (report.scanResponse?.structures ?? []))
        var result: [String: Any] = [CBAdvertisementDataIsConnectable: NSNumber(value: report.isConnectable)]
        if let name = report.localName { result[CBAdvertisementDataLocalNameKey] = name }
        let services = merged.serviceUUIDs
        if !services.isEmpty { result[CBAdvertisementDataServiceUUIDsKey] = services.map(\.cbUUID) }
        if let tx = merged.txPowerLevel { result[CBAdvertisementDataTxPowerLevelKey] = NSNumber(value: tx) }
        if let manufacturer = merged.manufacturerData { result[CBAdvertisementDataManufacturerDataKey] = Data(manufacturer) }
        let serviceData = merged.serviceData
        if !serviceData.isEmpty {
            var byUUID: [CBUUID: Data] = [:]
            for (uuid, data) in serviceData { byUUID[uuid.cbUUID] = Data(data) }
            result[CBAdvertisementDataServiceDataKey] = byUUID
        }
        return result
    }

    /// The advertising a peripheral manager puts on the air for `startAdvertising(_:)`. As with
    /// CoreBluetooth only the local name and service UUIDs are used: flags and the service UUIDs
    /// in the advertising data, the name after them when it fits in 31 octets, else in the scan
    /// response (shortened when even that is too small).
    static func configuration(from dictionary: [String: Any]?) -> AdvertisingConfiguration {
        let name = dictionary?[CBAdvertisementDataLocalNameKey] as? String
        let services = (dictionary?[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID])?.map(\.bluetoothUUID) ?? []
        // Service UUIDs that do not fit go unadvertised (Apple moves them to an "overflow area"
        // only other Apple devices read); the list is then marked incomplete.
        var data = AdvertisingData([.flags(0x06)])
        let groups: [(Int, ([BluetoothUUID], Bool) -> ADStructure)] = [
            (2, { .serviceUUIDs16($0, complete: $1) }), (4, { .serviceUUIDs32($0, complete: $1) }),
            (16, { .serviceUUIDs128($0, complete: $1) }),
        ]
        for (width, make) in groups {
            let list = services.filter { $0.width == width }
            guard !list.isEmpty else { continue }
            let room = AdvertisingData.legacyMaximumLength - data.encoded.count - 2
            let fitting = Array(list.prefix(max(0, room / width)))
            if !fitting.isEmpty { data.structures.append(make(fitting, fitting.count == list.count)) }
        }
        var scanResponse: AdvertisingData?
        if let name {
            let bytes = Array(name.utf8)
            let room = AdvertisingData.legacyMaximumLength - data.encoded.count - 2
            if bytes.count <= room {
                data.structures.append(.localName(bytes, complete: true))
            } else {
                let fits = bytes.count <= AdvertisingData.legacyMaximumLength - 2
                scanResponse = AdvertisingData([.localName(Array(bytes.prefix(AdvertisingData.legacyMaximumLength - 2)), complete: fits)])
            }
        }
        return AdvertisingConfiguration(data: data, scanResponse: scanResponse, interval: .milliseconds(100), connectable: true)
    }
}

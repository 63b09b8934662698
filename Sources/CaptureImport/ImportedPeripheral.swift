import ATT
import BLEWire
import HCI
import ScenarioFormat

/// One peripheral of the imported scenario: what the capture shows of it (advertising, database,
/// values) and the behaviour the importer gave it (triggers) to reproduce what it sent.
struct ImportedPeripheral {
    var id: String
    var address: LEAddress
    /// What the scenario's `address:` says: the capture's address, made static when it was a
    /// private random address (the lab's peripherals have static ones); nil: leave it out.
    var scenarioAddress: LEAddress?
    var reports: [AdvertisingObservation] = []
    /// The interval its own host set (a capture taken on the peripheral), in microseconds.
    var declaredInterval: Int64?
    var database = DiscoveredDatabase()
    var connections: [Int] = []
    /// Initial values by value handle, from the first read (or first notification).
    var initialValues: [UInt16: [UInt8]] = [:]
    /// Descriptors' values by handle, from the first read of each (`ImportedScenario.planDescriptors`).
    var descriptorReads: [UInt16: [UInt8]] = [:]
    /// Descriptor handles the central wrote successfully, where the lab lets them be written:
    /// declared with write permission (a user description, through writable-auxiliaries).
    var writtenDescriptors: Set<UInt16> = []
    var deviceName: String?
    /// Trigger actions by value handle.
    var onWrite: [UInt16: [PeripheralAction]] = [:]
    var onRead: [UInt16: [PeripheralAction]] = [:]
    var onSubscribe: [UInt16: [PeripheralAction]] = [:]
    /// Comments for a characteristic's triggers (where they came from).
    var triggerNotes: [UInt16: [String]] = [:]
    var notes: [String] = []
    /// Its `flaws:` rules (docs/scenarios.md, Flawed peripherals), each with its comments.
    var flaws: [(comments: [String], flaw: ATTFlaw)] = []
    /// Its receive MTU (`mtu:`), when its Exchange MTU Response gave another than the lab's 247.
    var mtu: Int?
    /// What Service Changed indications changed, in order.
    var databaseChanges: [DatabaseChange] = []
    /// Start handles of services a change added (declared by `add-service`, not in `gatt:`).
    var addedServiceStarts: Set<UInt16> = []

    /// An address as the scenario writes it: random, or public (identity and other types fold into
    /// these by their low bit).
    static func normalized(_ a: LEAddress) -> LEAddress {
        LEAddress(a.address, type: a.type.rawValue & 0x01 == 1 ? .random : .public)
    }

    var advertisement: AdvertisingObservation? { reports.first { !$0.isScanResponse } }
    var scanResponse: AdvertisingObservation? { reports.first { $0.isScanResponse } }

    func content(_ report: AdvertisingObservation?) -> AdvertisingData? {
        guard let report else { return nil }
        return try? AdvertisingData(decoding: report.data)
    }

    /// The services it advertises, in its advertising data and scan response.
    var advertisedServices: [BluetoothUUID] {
        (content(advertisement)?.serviceUUIDs ?? []) + (content(scanResponse)?.serviceUUIDs ?? [])
    }

    var advertisedNames: [String] {
        [content(advertisement)?.localName, content(scanResponse)?.localName].compactMap { $0 }
    }

    /// Services the scenario declares: those discovered, without GAP (1800) and GATT (1801), which
    /// every simulated peripheral serves on its own.
    /// A UUID the database holds twice (two services, or two characteristics of one service) is
    /// declared once, the first time: the scenario format names them by UUID.
    var declaredServices: [DiscoveredDatabase.Service] {
        var out: [DiscoveredDatabase.Service] = []
        for var s in database.services where !Self.labServices.contains(s.uuid) && !out.contains(where: { $0.uuid == s.uuid }) {
            var chars: [DiscoveredDatabase.Characteristic] = []
            for c in s.characteristics where !chars.contains(where: { $0.uuid == c.uuid }) { chars.append(c) }
            s.characteristics = chars
            out.append(s)
        }
        return out
    }

    /// The declared services it has from the start (its `gatt:`): those no Service Changed added.
    var initialServices: [DiscoveredDatabase.Service] {
        declaredServices.filter { !addedServiceStarts.contains($0.start) }
    }

    /// GAP (1800) and GATT (1801): every simulated peripheral serves them itself, with Device
    /// Name (2A00), Appearance (2A01) and Service Changed (2A05).
    static let labServices: [BluetoothUUID] = [BluetoothUUID(uuid16: 0x1800), BluetoothUUID(uuid16: 0x1801)]
    static let labCharacteristics: [BluetoothUUID] = [BluetoothUUID(uuid16: 0x2A00), BluetoothUUID(uuid16: 0x2A01), BluetoothUUID(uuid16: 0x2A05)]

    /// The service in which every simulated peripheral serves `uuid` itself (GAP's Device Name and
    /// Appearance, GATT's Service Changed), or nil.
    static func labService(of uuid: BluetoothUUID) -> BluetoothUUID? {
        guard let i = labCharacteristics.firstIndex(of: uuid) else { return nil }
        return labServices[i < 2 ? 0 : 1]
    }

    /// How steps name the characteristic with this value handle: `UUID`, or `SERVICE/UUID` when
    /// the scenario's peripheral has the UUID in more than one service — two declared services,
    /// or a declared one and the GAP or GATT service the lab serves it in (a device's own 2A00).
    /// Nil when the scenario does not have that characteristic.
    func reference(_ valueHandle: UInt16) -> CharacteristicRef? {
        guard let (service, c) = database.characteristic(valueHandle: valueHandle) else { return nil }
        return reference(c, in: service)
    }

    /// How steps name `c` of `service` (two characteristics may claim one value handle in a
    /// damaged capture: this one, not the first with its value handle).
    func reference(_ c: DiscoveredDatabase.Characteristic, in service: DiscoveredDatabase.Service) -> CharacteristicRef? {
        let declared = declaredServices
        var holders = declared.filter { s in s.characteristics.contains { $0.uuid == c.uuid } }.map(\.uuid)
        if let lab = Self.labService(of: c.uuid) { holders.append(lab) }
        if Self.labServices.contains(service.uuid) {
            // The lab's own characteristic, where the lab serves it.
            guard Self.labService(of: c.uuid) == service.uuid else { return nil }
        } else {
            guard declared.contains(where: { s in s.start == service.start && s.characteristics.contains { $0.declarationHandle == c.declarationHandle } }) else { return nil }
        }
        return CharacteristicRef(c.uuid, in: holders.count > 1 ? service.uuid : nil)
    }

    /// Whether the advertising (and scan response) would pass a scan filter.
    func matches(services: [BluetoothUUID], names: [String]) -> Bool {
        if !services.isEmpty && !advertisedServices.contains(where: services.contains) { return false }
        if !names.isEmpty && !advertisedNames.contains(where: names.contains) { return false }
        return true
    }

    /// The advertising interval: the shortest gap between two advertising reports of one scan
    /// (each event comes one interval plus a 0–10 ms advDelay after the last, Core 5.4, Vol 6,
    /// Part B, 4.4.2.2.1), in whole milliseconds within 20 ms … 10.24 s; nil when unknown.
    var advertisingInterval: Int64? {
        if let us = declaredInterval { return (20...10_240).contains(us / 1000) ? us / 1000 : nil }
        var best: Int64?
        var last: [Int: Int64] = [:]
        for r in reports where !r.isScanResponse {
            guard let scan = r.scan else { continue }
            if let previous = last[scan] {
                let gap = r.mark.time - previous
                if gap > 0 { best = min(best ?? gap, gap) }
            }
            last[scan] = r.mark.time
        }
        guard let us = best else { return nil }
        let ms = us / 1000
        return (20...10_240).contains(ms) ? ms : nil
    }

    /// Its `advertise:` (nil: none) and the comments above it: what it cannot hold.
    func advertising() -> (spec: AdvertisingSpec?, comments: [String], inline: String?) {
        guard let adv = advertisement ?? scanResponse else {
            // Never seen advertising, yet connected: the lab connects only to what a scan finds.
            return connections.isEmpty ? (nil, [], nil) : (AdvertisingSpec(), [], "its advertising is not in the capture")
        }
        var spec = AdvertisingSpec()
        var notes: [String] = []
        let data = content(advertisement)
        if advertisement != nil && data == nil {
            notes.append("its advertising data (\(ScalarText.hex(adv.data))) does not parse as AD structures")
        }
        let advertised = adContent(data, notes: &notes, allowFlags: true)
        spec.name = advertised.name
        spec.nameIsShortened = advertised.nameIsShortened
        spec.services = advertised.services
        spec.txPower = advertised.txPower
        spec.manufacturerData = advertised.manufacturerData
        spec.serviceData = advertised.serviceData
        if let flags = advertised.flags { spec.flags = flags }
        if let ms = advertisingInterval { spec.interval = .milliseconds(ms) }
        if let a = advertisement, !a.connectable { spec.connectable = false }
        if let sr = scanResponse, let content = content(sr) {
            var srNotes: [String] = []
            let response = adContent(content, notes: &srNotes, allowFlags: false)
            if response != AdvertisingContent() { spec.scanResponse = response }
            notes += srNotes.map { "scan response: " + $0 }
        }
        if advertisement == nil { notes.append("only its scan response was seen") }
        return (spec, notes, nil)
    }

    /// The AD structures of one payload the scenario can hold, each AD type once (the first),
    /// within the 31 octets of legacy advertising (the lab adds a Flags structure to advertising
    /// data: 3 of them). `flags` only when not the lab's 0x06.
    private func adContent(_ data: AdvertisingData?, notes: inout [String], allowFlags: Bool) -> AdvertisingContent {
        var c = AdvertisingContent()
        guard let data else { return c }
        var budget = allowFlags ? 31 - 3 : 31
        var taken: Set<String> = []
        func take(_ key: String, size: Int, _ text: String, notes: inout [String], _ apply: () -> Void) {
            guard !taken.contains(key) else {
                notes.append("a second \(key) structure (\(text)) is not reproduced")
                return
            }
            guard size <= budget else {
                notes.append("\(text) does not fit in the 31 octets of legacy advertising and is not reproduced")
                return
            }
            budget -= size
            taken.insert(key)
            apply()
        }
        var services: [BluetoothUUID] = []
        for s in data.structures {
            switch s {
            case let .serviceUUIDs16(list, complete), let .serviceUUIDs32(list, complete), let .serviceUUIDs128(list, complete):
                for u in list where !services.contains(u) { services.append(u) }
                if !complete { notes.append("it advertised an incomplete list of service UUIDs; the lab advertises a complete one") }
            default: break
            }
        }
        if !services.isEmpty {
            var size = 0
            for width in [2, 4, 16] {
                let n = services.filter { $0.width == width }.count
                if n > 0 { size += 2 + n * width }
            }
            take("services", size: size, "services: [\(services.map(\.description).joined(separator: ", "))]", notes: &notes) { c.services = services }
        }
        for s in data.structures {
            switch s {
            case let .flags(f):
                if allowFlags && f != 0x06 { take("flags", size: 0, "flags: 0x\(hex8(f))", notes: &notes) { c.flags = f } }
            case let .localName(bytes, complete):
                let name = String(decoding: bytes, as: UTF8.self)
                take("name", size: 2 + Array(name.utf8).count, "\(complete ? "name" : "short-name"): \(ScalarText.text(name))", notes: &notes) {
                    c.name = name
                    c.nameIsShortened = !complete
                }
            case let .txPowerLevel(p):
                take("tx-power", size: 3, "tx-power: \(p)", notes: &notes) { c.txPower = p }
            case let .manufacturerData(company, bytes):
                take("manufacturer-data", size: 4 + bytes.count,
                     "manufacturer-data: \(ScalarText.hex([UInt8(company & 0xFF), UInt8(company >> 8)] + bytes))", notes: &notes) {
                    c.manufacturerData = .init(companyID: company, data: bytes)
                }
            case let .serviceData(uuid, bytes, _):
                let size = 2 + uuid.width + bytes.count
                if c.serviceData.contains(where: { $0.uuid == uuid }) {
                    notes.append("service data for \(uuid) (\(ScalarText.hex(bytes))) is not reproduced: a second one for that UUID, and a scenario takes one value per service UUID")
                } else if size > budget {
                    notes.append("service data for \(uuid) (\(ScalarText.hex(bytes))) is not reproduced: it takes \(size) octets and \(budget) of the 31 are left")
                } else {
                    budget -= size
                    c.serviceData.append(.init(uuid: uuid, data: bytes))
                }
            case let .other(type, bytes):
                notes.append("AD type 0x\(hex8(type)) (\(ScalarText.hex(bytes))) has no scenario key and is not reproduced")
            case .serviceUUIDs16, .serviceUUIDs32, .serviceUUIDs128:
                break
            }
        }
        return c
    }

    /// The median of the RSSI its reports carried.
    var reportedRSSI: Int? {
        let values = reports.compactMap(\.rssi).map(Int.init).sorted()
        guard !values.isEmpty else { return nil }
        return min(20, max(-127, values[values.count / 2]))
    }

    /// The weakest `rssi:` the lab's receivers always hear: their sensitivity is -100 dBm and the
    /// sim adds ±2 dB of noise to every reading (docs/scenarios.md, "The radio").
    static let weakestHeard = -98

    /// RSSI (`rssi:`): the median of what the reports carried, no weaker than the lab hears.
    var rssi: Int? { reportedRSSI.map { max($0, Self.weakestHeard) } }
}

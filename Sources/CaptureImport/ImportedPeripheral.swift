import ATT
import BLEWire
import HCI

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
    /// Descriptors' values by handle, from the first read of each (`ScenarioWriter.planDescriptors`).
    var descriptorReads: [UInt16: [UInt8]] = [:]
    /// Descriptor handles the central wrote successfully, where the lab lets them be written:
    /// declared with write permission (a user description, through writable-auxiliaries).
    var writtenDescriptors: Set<UInt16> = []
    var deviceName: String?
    /// Trigger actions by value handle, as flow-mapping lines.
    var onWrite: [UInt16: [String]] = [:]
    var onRead: [UInt16: [String]] = [:]
    var onSubscribe: [UInt16: [String]] = [:]
    /// Comments for a characteristic's triggers (where they came from).
    var triggerNotes: [UInt16: [String]] = [:]
    var notes: [String] = []
    /// Its `flaws:` rules, as flow mappings (docs/scenarios.md, Flawed peripherals).
    var flaws: [(comments: [String], text: String)] = []
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
    func reference(_ valueHandle: UInt16) -> String? {
        guard let (service, c) = database.characteristic(valueHandle: valueHandle) else { return nil }
        return reference(c, in: service)
    }

    /// How steps name `c` of `service` (two characteristics may claim one value handle in a
    /// damaged capture: this one, not the first with its value handle).
    func reference(_ c: DiscoveredDatabase.Characteristic, in service: DiscoveredDatabase.Service) -> String? {
        let declared = declaredServices
        var holders = declared.filter { s in s.characteristics.contains { $0.uuid == c.uuid } }.map(\.uuid)
        if let lab = Self.labService(of: c.uuid) { holders.append(lab) }
        if Self.labServices.contains(service.uuid) {
            // The lab's own characteristic, where the lab serves it.
            guard Self.labService(of: c.uuid) == service.uuid else { return nil }
        } else {
            guard declared.contains(where: { s in s.start == service.start && s.characteristics.contains { $0.declarationHandle == c.declarationHandle } }) else { return nil }
        }
        return holders.count > 1 ? "\(YAMLValues.uuid(service.uuid))/\(YAMLValues.uuid(c.uuid))" : YAMLValues.uuid(c.uuid)
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

    /// The `advertise:` block, indented by `indent`, and notes about what it cannot hold.
    func advertiseLines(indent: String) -> [String] {
        guard let adv = advertisement ?? scanResponse else {
            // Never seen advertising, yet connected: the lab connects only to what a scan finds.
            return connections.isEmpty ? [] : ["\(indent)advertise:", "\(indent)  interval: 100ms    # its advertising is not in the capture"]
        }
        var lines: [String] = []
        var notes: [String] = []
        lines.append("\(indent)advertise:")
        let inner = indent + "  "
        let data = content(advertisement)
        if advertisement != nil && data == nil {
            notes.append("its advertising data (\(YAMLValues.hex(adv.data))) does not parse as AD structures")
        }
        lines += adLines(data, indent: inner, notes: &notes, allowFlags: true)
        if let ms = advertisingInterval { lines.append("\(inner)interval: \(YAMLValues.duration(microseconds: ms * 1000))") }
        if let a = advertisement, !a.connectable { lines.append("\(inner)connectable: false") }
        if let sr = scanResponse, let content = content(sr) {
            var srNotes: [String] = []
            let items = adLines(content, indent: "", notes: &srNotes, allowFlags: false).map { $0.trimmingLeadingSpaces() }
            if !items.isEmpty { lines.append("\(inner)scan-response: { \(items.joined(separator: ", ")) }") }
            notes += srNotes.map { "scan response: " + $0 }
        }
        if advertisement == nil { lines.append("\(inner)# only its scan response was seen") }
        if !lines.contains(where: { !$0.hasPrefix(inner + "#") && $0 != "\(indent)advertise:" }) {
            lines.append("\(inner)interval: 100ms")
        }
        return notes.map { "\(indent)# \($0)" } + lines
    }

    /// The keys for one AD payload, each AD type once (the first), within the 31 octets of legacy
    /// advertising (the lab adds a Flags structure to advertising data: 3 of them).
    private func adLines(_ data: AdvertisingData?, indent: String, notes: inout [String], allowFlags: Bool) -> [String] {
        guard let data else { return [] }
        var lines: [String] = []
        var budget = allowFlags ? 31 - 3 : 31
        var taken: Set<String> = []
        func take(_ key: String, size: Int, _ line: String, notes: inout [String]) {
            guard !taken.contains(key) else {
                notes.append("a second \(key) structure (\(line.trimmingLeadingSpaces())) is not reproduced")
                return
            }
            guard size <= budget else {
                notes.append("\(line.trimmingLeadingSpaces()) does not fit in the 31 octets of legacy advertising and is not reproduced")
                return
            }
            budget -= size
            taken.insert(key)
            lines.append(line)
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
            take("services", size: size, "\(indent)services: [\(services.map(YAMLValues.uuid).joined(separator: ", "))]", notes: &notes)
        }
        var serviceData: [(BluetoothUUID, [UInt8])] = []
        for s in data.structures {
            switch s {
            case let .flags(f):
                if allowFlags && f != 0x06 { take("flags", size: 0, "\(indent)flags: 0x\(hex8(f))", notes: &notes) }
            case let .localName(bytes, complete):
                let name = String(decoding: bytes, as: UTF8.self)
                take("name", size: 2 + Array(name.utf8).count, "\(indent)\(complete ? "name" : "short-name"): \(YAMLValues.quoted(name))", notes: &notes)
            case let .txPowerLevel(p):
                take("tx-power", size: 3, "\(indent)tx-power: \(p)", notes: &notes)
            case let .manufacturerData(company, bytes):
                take("manufacturer-data", size: 4 + bytes.count,
                     "\(indent)manufacturer-data: \(YAMLValues.hex([UInt8(company & 0xFF), UInt8(company >> 8)] + bytes))", notes: &notes)
            case let .serviceData(uuid, bytes, _):
                let size = 2 + uuid.width + bytes.count
                if serviceData.contains(where: { $0.0 == uuid }) {
                    notes.append("service data for \(uuid) (\(YAMLValues.hex(bytes))) is not reproduced: a second one for that UUID, and a scenario takes one value per service UUID")
                } else if size > budget {
                    notes.append("service data for \(uuid) (\(YAMLValues.hex(bytes))) is not reproduced: it takes \(size) octets and \(budget) of the 31 are left")
                } else {
                    budget -= size
                    serviceData.append((uuid, bytes))
                }
            case let .other(type, bytes):
                notes.append("AD type 0x\(hex8(type)) (\(YAMLValues.hex(bytes))) has no scenario key and is not reproduced")
            case .serviceUUIDs16, .serviceUUIDs32, .serviceUUIDs128:
                break
            }
        }
        if !serviceData.isEmpty {
            lines.append("\(indent)service-data: { \(serviceData.map { "\(YAMLValues.uuid($0.0)): \(YAMLValues.hex($0.1))" }.joined(separator: ", ")) }")
        }
        return lines
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

extension String {
    func trimmingLeadingSpaces() -> String { String(drop { $0 == " " }) }
}

import BLERuntime
import BLEWire
import GATT
import YAMLSubset

/// Reads `peripherals:` (docs/scenarios.md section 3) into `PeripheralSpec`s and the catalog of
/// what each one serves.
public struct PeripheralSchema {
    let r: SchemaReader
    private(set) var catalog = PeripheralCatalog()
    /// `link:` and `mtu:` by peripheral id (FaultSchema.swift).
    private(set) var faults: [String: PeripheralFaults] = [:]

    static let keys = ["address", "rssi", "advertise", "gatt", "on-connect", "on-disconnect", "device-name", "flaws", "security", "privacy"] + faultKeys
    static let advertiseKeys = ["name", "short-name", "services", "interval", "connectable", "manufacturer-data", "service-data",
                                "tx-power", "flags", "scan-response", "resume-after-disconnect"]
    static let scanResponseKeys = ["name", "short-name", "services", "manufacturer-data", "service-data", "tx-power"]
    static let serviceKeys = ["service", "characteristics", "handle"]
    static let characteristicKeys = ["uuid", "properties", "value", "descriptors", "extended-properties", "handle", "permissions",
                                     "on-write", "on-read", "on-subscribe", "on-unsubscribe"]

    /// The id the scripted central has in logs and captures; a peripheral cannot take it.
    public static let centralID = "central"

    init(reader: SchemaReader) { r = reader }

    mutating func peripherals(_ node: YAMLNode) -> [PeripheralSpec] {
        guard let m = node.mapping else {
            let listed = node.sequence?.items.first?.mapping.map { $0.count == 1 } ?? false
            r.error(node, expected: "a mapping of peripheral ids to peripherals",
                    hint: listed ? "write each id as a key under peripherals:, without '- ' (hm10:)" : nil)
            return []
        }
        if m.isEmpty { r.error(node, expected: "at least one peripheral") }
        var specs: [PeripheralSpec] = []
        var addresses: [LEAddress: String] = [:]
        for (key, value) in m.entries {
            guard let spec = peripheral(id: key, value) else { continue }
            if let address = spec.address {
                if let other = addresses[address] {
                    r.error(at: key.mark, found: "address \(address) of \(spec.id), already the address of \(other)",
                            expected: "a distinct address per peripheral")
                }
                addresses[address] = spec.id
            }
            specs.append(spec)
        }
        return specs
    }

    private mutating func peripheral(id key: YAMLScalar, _ node: YAMLNode) -> PeripheralSpec? {
        let id = key.text
        if !Self.isValidID(id) {
            r.error(at: key.mark, found: "peripheral id \(SchemaReader.quote(id))",
                    expected: "an id of letters, digits, '-', '_' or '.', starting with a letter or digit")
        } else if id == Self.centralID {
            r.error(at: key.mark, found: "peripheral id 'central'", expected: "another id", hint: "'central' names the scripted central")
        }
        guard let m = r.mapping(node, "a peripheral: a mapping with advertise, gatt…") else {
            catalog.add(id, services: [])
            return nil
        }
        r.checkKeys(m, allowed: Self.keys, of: "a peripheral")
        var spec = PeripheralSpec(id: id)
        if let a = m["address"] { spec.address = address(a) }
        if let v = m["rssi"] { spec.rssi = r.integer(v, in: -127...20, "an RSSI in dBm from -127 to 20").map { Int8($0) } }
        if let a = m["advertise"] { spec.advertising = advertising(a, of: id) }
        if let n = m["device-name"], let name = r.scalar(n, "a device name")?.text {
            // Core Vol 3 Part C 12.1: the Device Name characteristic's value is 0 to 248 octets.
            if name.utf8.count > 248 {
                r.error(at: n.mark, found: "a device name of \(name.utf8.count) octets", expected: "a device name of at most 248 octets of UTF-8 (Core Vol 3 Part C 12.1)")
            } else {
                spec.deviceName = name
            }
        }
        if let f = faults(m) { faults[id] = f }
        if let n = m["security"] { spec.security = SecuritySchema(r: r).peripheralSecurity(n) }
        if spec.security?.settings.oob == true { catalog.outOfBand.insert(id) }
        if let n = m["privacy"] { spec.privacy = SecuritySchema(r: r).privacy(n) }
        var triggers: [(Int, Int, YAMLMapping)] = []
        var read = ServicesRead()
        if let g = m["gatt"] { spec.services = services(g, of: id, triggers: &triggers, read: &read) }
        catalog.add(id, services: spec.services)
        if !read.unplaced.isEmpty { catalog.addUnplaced(id, read.unplaced) }
        for (service, characteristic) in read.unknownProperties {
            catalog.forgetProperties(id, service: service, characteristic: characteristic)
        }

        let actions = ActionSchema(r: r, catalog: catalog, peripheral: id)
        for (s, c, cm) in triggers {
            if let n = cm["on-write"] { spec.services[s].characteristics[c].onWrite = actions.actions(n, site: .onWrite) }
            if let n = cm["on-read"] { spec.services[s].characteristics[c].onRead = actions.actions(n, site: .onRead) }
            if let n = cm["on-subscribe"] { spec.services[s].characteristics[c].onSubscribe = actions.actions(n, site: .onSubscribe) }
            if let n = cm["on-unsubscribe"] { spec.services[s].characteristics[c].onUnsubscribe = actions.actions(n, site: .onUnsubscribe) }
        }
        if let n = m["on-connect"] { spec.onConnect = actions.actions(n, site: .onConnect) }
        if let n = m["on-disconnect"] { spec.onDisconnect = actions.actions(n, site: .onDisconnect) }
        if let n = m["flaws"] { spec.flaws = FlawSchema(r: r, catalog: catalog, peripheral: id).flaws(n) }
        return spec
    }

    static func isValidID(_ id: String) -> Bool {
        guard let first = id.unicodeScalars.first, first.properties.isAlphabetic || ("0"..."9").contains(first) else { return false }
        return id.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) }
    }

    private func address(_ node: YAMLNode) -> LEAddress? {
        let expected = "an address such as C0:11:22:33:44:55/random or 00:1A:7D:DA:71:13/public"
        guard let s = r.scalar(node, expected) else { return nil }
        guard let a = LEAddress(string: s.text) else {
            r.error(node, expected: expected, hint: Self.addressHint(s.text))
            return nil
        }
        if a.type == .random && !a.address.isValidRandomStatic {
            r.error(node, expected: "a random static address (its two top bits set, such as C0:…)")
            return nil
        }
        return a
    }

    /// What is wrong with an address that does not parse.
    static func addressHint(_ text: String) -> String? {
        let pieces = text.split(separator: "/", omittingEmptySubsequences: false)
        let octets = pieces[0].split(omittingEmptySubsequences: false, whereSeparator: { $0 == ":" || $0 == "-" })
        if octets.count != 6 { return "an address has 6 octets, not \(octets.count)" }
        if let bad = octets.first(where: { $0.count != 2 || !$0.allSatisfy { $0.isHexDigit && $0.isASCII } }) {
            return "each octet is two hexadecimal digits, not '\(bad)'"
        }
        if pieces.count > 1 { return "the address type after '/' is random or public" }
        return nil
    }

    // MARK: Advertising

    private func advertising(_ node: YAMLNode, of id: String) -> AdvertisingSpec? {
        guard let m = r.mapping(node, "advertising: a mapping with name, services, interval…") else { return nil }
        r.checkKeys(m, allowed: Self.advertiseKeys, of: "an advertise")
        var spec = AdvertisingSpec()
        let content = self.content(m)
        spec.name = content.name
        spec.nameIsShortened = content.nameIsShortened
        spec.services = content.services
        spec.txPower = content.txPower
        spec.manufacturerData = content.manufacturerData
        spec.serviceData = content.serviceData
        if let i = m["interval"], let interval = r.duration(i, "an advertising interval") {
            // Vol 4 Part E 7.8.5: Advertising_Interval from 20 ms to 10.24 s.
            if interval < .milliseconds(20) || interval > .milliseconds(10_240) {
                r.error(i, expected: "an advertising interval from 20ms to 10.24s")
            } else {
                spec.interval = interval
            }
        }
        if let c = m["connectable"], let b = r.boolean(c) { spec.connectable = b }
        if let c = m["resume-after-disconnect"], let b = r.boolean(c) { spec.resumeAfterDisconnect = b }
        if let f = m["flags"] { spec.flags = flags(f) }
        if let s = m["scan-response"], let sm = r.mapping(s, "a scan response: a mapping with name, services…") {
            r.checkKeys(sm, allowed: Self.scanResponseKeys, of: "a scan-response")
            let response = self.content(sm)
            checkSize(response.data, at: sm.mark, what: "scan response data for \(id)")
            spec.scanResponse = response
        }
        checkSize(spec.content.data, at: m.mark, what: "advertising data for \(id)")
        return spec
    }

    private func content(_ m: YAMLMapping) -> AdvertisingContent {
        var c = AdvertisingContent()
        if let n = m["name"] { c.name = r.scalar(n, "a local name")?.text }
        if let n = m["short-name"] {
            if c.name != nil {
                r.error(at: m.entry(for: "short-name")?.key.mark ?? n.mark, found: "both 'name' and 'short-name'",
                        expected: "one local name, complete (name) or shortened (short-name)")
            } else {
                c.name = r.scalar(n, "a shortened local name")?.text
                c.nameIsShortened = true
            }
        }
        if let s = m["services"] { c.services = uniqueServices(s) }
        if let t = m["tx-power"] { c.txPower = r.integer(t, in: -127...127, "a TX power in dBm from -127 to 127").map { Int8($0) } }
        if let d = m["manufacturer-data"], let bytes = r.bytes(d) {
            if bytes.count < 2 {
                r.error(d, expected: "manufacturer data of at least 2 octets: the company identifier (little-endian), then data")
            } else {
                c.manufacturerData = .init(companyID: UInt16(bytes[0]) | UInt16(bytes[1]) << 8, data: Array(bytes.dropFirst(2)))
            }
        }
        if let d = m["service-data"], let dm = r.mapping(d, "service data: a mapping of service UUIDs to values, such as { 180F: u8:100 }") {
            for (key, value) in dm.entries {
                guard let uuid = r.uuid(.scalar(key), "a service UUID"), let bytes = r.bytes(value) else { continue }
                // `180F` and `0000180F` are two keys to YAML but one UUID: two Service Data AD
                // structures for one service leave a scanner to pick one.
                if let first = c.serviceData.first(where: { $0.uuid == uuid }) {
                    r.error(at: key.mark, found: "service data for \(uuid) twice", expected: "one value per service UUID",
                            hint: "\(SchemaReader.quote(key.text)) is the UUID \(first.uuid) of an earlier key")
                    continue
                }
                c.serviceData.append(.init(uuid: uuid, data: bytes))
            }
        }
        return c
    }

    /// An advertised list of service UUIDs, each once (`180F` and `0000180F` are one UUID).
    private func uniqueServices(_ node: YAMLNode) -> [BluetoothUUID] {
        guard let list = r.uuids(node, "service"), let items = r.items(node, "") else { return [] }
        var seen: [BluetoothUUID] = []
        for (uuid, item) in zip(list, items) {
            if seen.contains(uuid) {
                r.error(item, expected: "each service once in the list", hint: "\(uuid) is already listed; a repeated UUID takes octets of the 31 for nothing")
                continue
            }
            seen.append(uuid)
        }
        return seen
    }

    private func flags(_ node: YAMLNode) -> UInt8? {
        if let s = node.scalar, let n = ScalarSyntax.unsigned(s.text) {
            guard n <= 0xFF else {
                r.error(node, expected: "flags from 0 to 0xFF")
                return nil
            }
            return UInt8(n)
        }
        guard let bytes = r.bytes(node) else { return nil }
        guard bytes.count == 1 else {
            r.error(node, expected: "one octet of flags such as 0x06 or hex:06")
            return nil
        }
        return bytes[0]
    }

    private func checkSize(_ data: AdvertisingData, at mark: Mark, what: String) {
        let size = data.encoded.count
        if size > AdvertisingData.legacyMaximumLength {
            let parts = data.structures.map { "\(Self.name(of: $0)) \(2 + $0.data.count)" }.joined(separator: ", ")
            r.error(at: mark, found: "\(size) octets of \(what) (\(parts))", expected: "at most \(AdvertisingData.legacyMaximumLength) octets (legacy advertising)",
                    hint: "move something to scan-response or shorten the name")
        }
    }

    /// An AD structure as scenario files name it, for size reports.
    static func name(of structure: ADStructure) -> String {
        switch structure {
        case .flags: return "flags"
        case let .localName(_, complete): return complete ? "name" : "short-name"
        case .serviceUUIDs16, .serviceUUIDs32, .serviceUUIDs128: return "services"
        case .txPowerLevel: return "tx-power"
        case .manufacturerData: return "manufacturer-data"
        case .serviceData: return "service-data"
        case let .other(type, _): return "AD type 0x" + String(type, radix: 16)
        }
    }

    // MARK: GATT

    /// What reading `gatt:` found besides the services: the characteristics of services whose UUID
    /// is invalid (still checked, and still nameable by steps), and those whose properties did not read.
    struct ServicesRead {
        var unplaced: [CharacteristicSpec] = []
        var unknownProperties: [(BluetoothUUID?, BluetoothUUID)] = []
    }

    /// The services; `triggers` gets (service index, characteristic index, mapping) of every
    /// characteristic, to read its triggers once the whole database is known.
    private func services(_ node: YAMLNode, of id: String, triggers: inout [(Int, Int, YAMLMapping)], read: inout ServicesRead) -> [ServiceSpec] {
        guard let items = r.sequence(node, "a list of services (- service: FFE0)")?.items else { return [] }
        var result: [ServiceSpec] = []
        var seen: Set<BluetoothUUID> = []
        for item in items {
            guard let m = r.mapping(item, "a service: a mapping with service and characteristics") else { continue }
            r.checkKeys(m, allowed: Self.serviceKeys, of: "a service")
            var uuid: BluetoothUUID?
            if let u = r.required(m, "service", in: "a service", expected: "'service: UUID'"), let parsed = r.uuid(u, "a service UUID") {
                if !seen.insert(parsed).inserted {
                    r.error(u, expected: "each service once per peripheral", hint: "put all of \(parsed)'s characteristics under one '- service: \(parsed)'")
                } else if Self.checkServiceUUID(parsed, at: u, r) {
                    uuid = parsed
                }
            }
            // The characteristics of a service that cannot be used are still checked, so that
            // every mistake of the file shows at once.
            var service = ServiceSpec(uuid: uuid ?? BluetoothUUID(uuid16: 0))
            var nodes: [YAMLNode?] = [nil]
            if let h = m["handle"], let handle = r.integer(h, in: 1...0xFFFF, "a handle from 0x0001 to 0xFFFF") {
                service.handle = UInt16(handle)
                nodes[0] = h
            }
            var seenCharacteristics: Set<BluetoothUUID> = []
            if let cs = m["characteristics"], let citems = r.sequence(cs, "a list of characteristics (- uuid: FFE1)")?.items {
                for citem in citems {
                    guard let cm = r.mapping(citem, "a characteristic: a mapping with uuid, properties, value…") else { continue }
                    guard let (c, propertiesRead) = characteristic(cm) else { continue }
                    if !seenCharacteristics.insert(c.uuid).inserted {
                        r.error(cm["uuid"] ?? citem, expected: "each characteristic once per service")
                        continue
                    }
                    if !propertiesRead { read.unknownProperties.append((uuid, c.uuid)) }
                    if uuid != nil { triggers.append((result.count, service.characteristics.count, cm)) }
                    service.characteristics.append(c)
                    nodes.append(c.handle == nil ? nil : cm["handle"])
                }
            }
            if uuid != nil {
                result.append(service)
                checkHandles(result, nodes: nodes)
            } else { read.unplaced += service.characteristics }
        }
        return result
    }

    /// `handle:` of the last service in `services` (`nodes`: the service's, then each
    /// characteristic's `handle:` node, nil where it has none): each must leave room for what comes
    /// before it, the GAP and GATT services first (0x0001–0x0009). Reported where it is written.
    private func checkHandles(_ services: [ServiceSpec], nodes: [YAMLNode?]) {
        guard nodes.contains(where: { $0 != nil }) else { return }
        do {
            _ = try GATTDatabase(services: services.map(\.gattService))
        } catch let GATTDatabaseError.handleTaken(uuid, wanted, next) {
            let service = services[services.count - 1]
            let node: YAMLNode?
            if service.handle == wanted && service.uuid == uuid { node = nodes[0] } else {
                let k = service.characteristics.firstIndex { $0.uuid == uuid && $0.handle == wanted }
                node = k.flatMap { nodes[$0 + 1] }
            }
            guard let node else { return }
            let lowest = String(next, radix: 16, uppercase: true)
            r.error(at: node.mark, found: "handle \(SchemaReader.found(node)), which the attributes laid out before it already reach",
                    expected: "a handle of 0x\(String(repeating: "0", count: max(0, 4 - lowest.count)) + lowest) or more",
                    hint: "handles are laid out in the order written, the GAP and GATT services first (0x0001–0x0009); a characteristic's declaration takes the handle before its value, and its descriptors the ones after")
        } catch {
            return
        }
    }

    /// The services every peripheral serves already, with what a file does instead.
    static let standardServices: [BluetoothUUID: (what: String, fix: String)] = [
        .genericAccessService: ("the GAP service (Device Name 2A00, Appearance 2A01)",
                                "give the Device Name with device-name on the peripheral; steps may read 2A00 and 2A01 as they are"),
        .genericAttributeService: ("the GATT service (Service Changed 2A05)",
                                   "steps may subscribe to 2A05 as it is, and the service-changed action indicates it"),
    ]

    /// A service UUID a file may declare: not 1800 or 1801, which the lab lays out itself (Core
    /// Vol 3 Part G 7: one GATT service; Part C 12: one GAP service), and no attribute type of the
    /// GATT profile (0x2800–0x29FF: declarations and descriptors), which a client would take for
    /// the declaration or descriptor it names. Reports it and returns false otherwise.
    static func checkServiceUUID(_ uuid: BluetoothUUID, at node: YAMLNode, _ r: SchemaReader) -> Bool {
        if let standard = standardServices[uuid] {
            r.error(at: node.mark, found: "service \(SchemaReader.found(node)), \(standard.what), which every peripheral serves already",
                    expected: "a service of your own", hint: standard.fix)
            return false
        }
        if let why = attributeTypeUse(uuid) {
            r.error(at: node.mark, found: "service UUID \(SchemaReader.found(node)), \(why)", expected: "a service UUID (such as 180F, or a 128-bit UUID of your own)")
            return false
        }
        return true
    }

    /// What a UUID of the GATT profile's own attribute types is (Core Vol 3 Part G 3.1–3.3 and
    /// the Assigned Numbers' 0x28xx declarations and 0x29xx descriptors), or nil for other UUIDs.
    static func attributeTypeUse(_ uuid: BluetoothUUID) -> String? {
        guard let short = uuid.uuid16 else { return nil }
        switch short {
        case 0x2800...0x28FF: return "the type of a GATT declaration (2800 primary service, 2801 secondary, 2802 include, 2803 characteristic), which the server writes itself"
        case 0x2902: return "the type of the Client Characteristic Configuration descriptor, which a characteristic with notify or indicate gets by itself"
        case 0x2900...0x29FF: return "the type of a GATT descriptor, not of a characteristic"
        default: return nil
        }
    }

    /// The characteristic, and whether its properties read (nil when its UUID did not).
    private func characteristic(_ m: YAMLMapping) -> (CharacteristicSpec, Bool)? {
        r.checkKeys(m, allowed: Self.characteristicKeys, of: "a characteristic")
        guard let u = r.required(m, "uuid", in: "a characteristic", expected: "'uuid: UUID'"),
              let uuid = r.uuid(u, "a characteristic UUID") else { return nil }
        if let why = Self.attributeTypeUse(uuid) {
            r.error(at: u.mark, found: "characteristic UUID \(SchemaReader.found(u)), \(why)", expected: "a characteristic UUID (such as 2A19, or a 128-bit UUID of your own)")
            return nil
        }
        var properties: CharacteristicProperties = []
        var propertiesRead = false
        if let p = r.required(m, "properties", in: "a characteristic", expected: "'properties: [read, notify…]'") {
            let parsed = r.properties(p)
            properties = parsed ?? []
            propertiesRead = parsed != nil
        }
        var value: [UInt8] = []
        if let v = m["value"], let bytes = r.attributeBytes(v) { value = bytes }
        let descriptors = DescriptorSchema(r: r)
        let extended = descriptors.extendedProperties(m, properties: properties)
        var spec = CharacteristicSpec(uuid: uuid, properties: properties, value: value,
                                      descriptors: descriptors.descriptors(m, properties: properties, extended: extended),
                                      extendedProperties: extended)
        if let h = m["handle"], let handle = r.integer(h, in: 2...0xFFFF, "a value handle from 0x0002 to 0xFFFF (its declaration takes the one before)") {
            spec.handle = UInt16(handle)
        }
        if let p = m["permissions"] {
            SecuritySchema(r: r).permissions(p, properties: properties, into: &spec)
        }
        return (spec, propertiesRead)
    }
}

import BLEWire
import Controller
import GATT

/// Writes a scenario as a scenario file (docs/scenarios.md): the canonical text of the model, which
/// `Scenario.parse` reads back to an equal scenario — for every scenario the reader produces
/// (lists of plain bytes merged, defaults as the reader fills them in).
///
/// Canonical means one text per scenario: keys in a fixed order, defaults left out, values in one
/// form (`ScalarText`), each step and action on one line as a flow mapping, short collections
/// (`advertise`, a characteristic without triggers) in flow style when they fit on a line, the
/// rest in block style. A step names its peripheral when the scenario has several; a keyword
/// whose only field is its main one is written `keyword: value` (`read: FFE1`). Comments come from
/// `ScenarioComments`; the model has none.
public enum ScenarioWriter {
    public static func write(_ scenario: Scenario, comments: ScenarioComments = ScenarioComments()) -> String {
        YAMLEmitter.render(ScenarioDocument(scenario: scenario, comments: comments).document())
    }
}

/// One scenario being laid out as a document.
struct ScenarioDocument {
    let scenario: Scenario
    let comments: ScenarioComments

    /// Steps name their peripheral when there are several.
    var multi: Bool { scenario.peripherals.count > 1 }

    func document() -> YAMLOut {
        var entries: [(key: String, value: YAMLOut)] = []
        entries.append(("scenario", site(.scalar(ScalarText.text(scenario.name)), .file)))
        if !scenario.tags.isEmpty { entries.append(("tags", .sequence(scenario.tags.map { .scalar(ScalarText.text($0)) }, .flow))) }
        if let timeout = scenario.timeout { entries.append(("timeout", .scalar(ScalarText.duration(timeout)))) }
        if let seed = scenario.seed { entries.append(("seed", .scalar(String(seed)))) }
        if let requires = scenario.requires { entries.append(("requires", .sequence(requires.map { .scalar($0.rawValue) }, .flow))) }
        if let text = scenario.expectFailure { entries.append(("expect-failure", .scalar(ScalarText.text(text)))) }
        var peripherals = YAMLOut.mapping(scenario.peripherals.map { ($0.id, peripheral($0)) }, .block)
        peripherals.blankLineBefore = true
        entries.append(("peripherals", peripherals))
        var central = YAMLOut.sequence(scenario.steps.map(step), .block)
        central.trailing = comments[.end].above
        central.blankLineBefore = true
        entries.append(("central", central))
        return .mapping(entries, .block)
    }

    func site(_ node: YAMLOut, _ site: ScenarioComments.Site) -> YAMLOut {
        let c = comments[site]
        return node.commented(above: c.above, inline: c.inline)
    }

    // MARK: Peripherals

    func peripheral(_ p: PeripheralSpec) -> YAMLOut {
        let id = p.id
        var entries: [(key: String, value: YAMLOut)] = []
        if let a = p.address { entries.append(("address", .scalar("\(a.address)/\(a.type == .random ? "random" : "public")"))) }
        if let rssi = p.rssi { entries.append(("rssi", .scalar(String(rssi)))) }
        if let name = p.deviceName { entries.append(("device-name", .scalar(ScalarText.text(name)))) }
        if let a = p.advertising { entries.append(("advertise", site(advertising(a), .advertise(id)))) }
        let faults = scenario.faults[id]
        if let link = faults?.link { entries.append(("link", linkFaults(link, peripheral: nil))) }
        if let mtu = faults?.mtu { entries.append(("mtu", site(.scalar(String(mtu)), .mtu(id)))) }
        if !p.flaws.isEmpty {
            entries.append(("flaws", .sequence(p.flaws.enumerated().map { site(flaw($1), .flaw(id, $0)) }, .block)))
        }
        if let security = p.security { entries.append(("security", peripheralSecurity(security))) }
        if let privacy = p.privacy { entries.append(("privacy", .mapping([("rotate", duration(privacy.rotate))], .flow))) }
        if !p.onConnect.isEmpty { entries.append(("on-connect", actionList(p.onConnect))) }
        if !p.onDisconnect.isEmpty { entries.append(("on-disconnect", actionList(p.onDisconnect))) }
        if !p.services.isEmpty {
            entries.append(("gatt", .sequence(p.services.enumerated().map { site(service($1, of: id, index: $0), .service(id, $0)) }, .block)))
        }
        return site(.mapping(entries, .block), .peripheral(id))
    }

    func advertising(_ a: AdvertisingSpec) -> YAMLOut {
        let ad = content(a.content)
        let named = ["name", "short-name", "services"]
        var entries = ad.filter { named.contains($0.key) }
        // The interval, always: how often it advertises is what scans meet.
        entries.append(("interval", .scalar(ScalarText.duration(a.interval))))
        if !a.connectable { entries.append(("connectable", .scalar("false"))) }
        if let flags = a.flags, flags != 0x06 { entries.append(("flags", .scalar(ScalarText.octet(flags)))) }
        entries += ad.filter { !named.contains($0.key) }
        if let response = a.scanResponse { entries.append(("scan-response", .mapping(content(response)))) }
        if !a.resumeAfterDisconnect { entries.append(("resume-after-disconnect", .scalar("false"))) }
        return .mapping(entries)
    }

    /// The AD keys advertising data and a scan response share (flags apart).
    func content(_ c: AdvertisingContent) -> [(key: String, value: YAMLOut)] {
        var entries: [(key: String, value: YAMLOut)] = []
        if let name = c.name { entries.append((c.nameIsShortened ? "short-name" : "name", .scalar(ScalarText.text(name)))) }
        if !c.services.isEmpty { entries.append(("services", uuids(c.services))) }
        if let tx = c.txPower { entries.append(("tx-power", .scalar(String(tx)))) }
        if let m = c.manufacturerData {
            entries.append(("manufacturer-data", .scalar(ScalarText.hex([UInt8(m.companyID & 0xFF), UInt8(m.companyID >> 8)] + m.data))))
        }
        if !c.serviceData.isEmpty {
            entries.append(("service-data", .mapping(c.serviceData.map { ($0.uuid.description, .scalar(ScalarText.hex($0.data))) }, .flow)))
        }
        return entries
    }

    func uuids(_ list: [BluetoothUUID]) -> YAMLOut { .sequence(list.map { .scalar($0.description) }, .flow) }

    func service(_ s: ServiceSpec, of id: String, index: Int) -> YAMLOut {
        let characteristics = s.characteristics.enumerated().map { c, spec in
            site(characteristic(spec, of: id, service: index, index: c), .characteristic(id, service: index, c))
        }
        var fields: [(key: String, value: YAMLOut)] = [("service", .scalar(s.uuid.description))]
        if let h = s.handle { fields.append(("handle", .scalar(Self.handle(h)))) }
        return .mapping(fields + [("characteristics", .sequence(characteristics, .block))], .block)
    }

    /// `0x0842`.
    static func handle(_ h: UInt16) -> String {
        let digits = String(h, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }

    func characteristic(_ c: CharacteristicSpec, of id: String, service s: Int, index: Int) -> YAMLOut {
        var entries: [(key: String, value: YAMLOut)] = [
            ("uuid", .scalar(c.uuid.description)),
            ("properties", .sequence(c.properties.names.map { .scalar($0) }, .flow)),
        ]
        if let h = c.handle { entries.append(("handle", .scalar(Self.handle(h)))) }
        if !c.value.isEmpty { entries.append(("value", .scalar(ScalarText.value(c.value)))) }
        if !c.extendedProperties.isEmpty {
            entries.append(("extended-properties", .sequence(c.extendedProperties.names.map { .scalar($0) }, .flow)))
        }
        let permissions = PermissionName.names(value: c.permissions, configuration: c.configurationPermissions)
        if !permissions.isEmpty { entries.append(("permissions", .sequence(permissions.map { .scalar($0) }, .flow))) }
        var layout = YAMLOut.Layout.auto
        // Comments about the descriptors stand where `descriptors:` is, or would be.
        var dangling = comments[.descriptors(id, service: s, characteristic: index)].above
        if !c.descriptors.isEmpty {
            let items = c.descriptors.enumerated().map { d, descriptor in
                site(self.descriptor(descriptor, extended: c.extendedProperties), .descriptor(id, service: s, characteristic: index, d))
            }
            entries.append(("descriptors", YAMLOut.sequence(items, .block).commented(above: dangling)))
            dangling = []
            layout = .block
        }
        var triggerComments = dangling + comments[.triggers(id, service: s, characteristic: index)].above
        for (key, actions) in [("on-read", c.onRead), ("on-write", c.onWrite), ("on-subscribe", c.onSubscribe), ("on-unsubscribe", c.onUnsubscribe)]
        where !actions.isEmpty {
            entries.append((key, actionList(actions).commented(above: triggerComments)))
            triggerComments = []
            layout = .block
        }
        var node = YAMLOut.mapping(entries, layout)
        node.trailing = triggerComments
        return node
    }

    func descriptor(_ d: GATTDescriptor, extended: CharacteristicExtendedProperties) -> YAMLOut {
        var entries: [(key: String, value: YAMLOut)] = [("uuid", .scalar(d.uuid.description))]
        if !d.value.isEmpty { entries.append(("value", .scalar(ScalarText.value(d.value)))) }
        // What the reader gives without `permissions:` (docs/scenarios.md "Descriptors").
        let writableAuxiliary = d.uuid == .characteristicUserDescription && extended.contains(.writableAuxiliaries)
        if (d.isReadable, d.isWritable) != (true, writableAuxiliary) {
            let names = (d.isReadable ? ["read"] : []) + (d.isWritable ? ["write"] : [])
            entries.append(("permissions", .sequence(names.map { .scalar($0) }, .flow)))
        }
        return .mapping(entries, .flow)
    }

    // MARK: Flaws and faults

    func flaw(_ f: ATTFlaw) -> YAMLOut {
        var entries: [(key: String, value: YAMLOut)] = []
        switch f.requests.count {
        case 0: entries.append(("request", .scalar("any")))
        case 1: entries.append(("request", .scalar(ATTFlaw.requestName(f.requests[0]))))
        default: entries.append(("request", .sequence(f.requests.map { .scalar(ATTFlaw.requestName($0)) }, .flow)))
        }
        if let c = f.characteristic { entries.append(("characteristic", .scalar(c.description))) }
        if f.skip > 0 { entries.append(("skip", .scalar(String(f.skip)))) }
        if let count = f.count { entries.append(("count", .scalar(String(count)))) }
        if f.delay > .zero { entries.append(("delay", .scalar(ScalarText.duration(f.delay)))) }
        switch f.answer {
        case .normal: break
        case let .error(code): entries.append(("respond-error", .scalar(code.name)))
        case .none: entries.append(("no-response", .scalar("true")))
        case let .malformed(m):
            switch m {
            case let .octets(o): entries.append(("malformed", .scalar(ScalarText.hex(o))))
            default: entries.append(("malformed", .scalar(m.description)))
            }
        }
        return .mapping(entries, .flow)
    }

    /// A `link:` block's fields, with `peripheral` when a step names one.
    func linkFaults(_ l: LinkFaults, peripheral: String?) -> YAMLOut {
        var entries: [(key: String, value: YAMLOut)] = []
        if l.lossRate != 0 { entries.append(("loss", .scalar(ScalarText.percentage(l.lossRate)))) }
        if l.latency != .zero { entries.append(("latency", .scalar(ScalarText.duration(l.latency)))) }
        if l.jitter != .zero { entries.append(("jitter", .scalar(ScalarText.duration(l.jitter)))) }
        if !l.drops.isEmpty {
            let drops = l.drops.map { d in
                YAMLOut.mapping([("att", .scalar(String(d.index))), ("from", .scalar(d.from.rawValue))], .flow)
            }
            entries.append(("drop", drops.count == 1 ? drops[0] : .sequence(drops, .flow)))
        }
        if let k = l.pdusPerEvent { entries.append(("pdus-per-event", .scalar(String(k)))) }
        if let e = l.encryption { entries.append(("encryption", .scalar(e.rawValue))) }
        if let peripheral { entries.append(("peripheral", .scalar(peripheral))) }
        return .mapping(entries, peripheral == nil ? .auto : .flow)
    }
}

import ATT
import BLEWire
import HCI

/// What a capture holds, as a person reads it (`blelab import --summary`): the devices heard,
/// the connections with their parameters, each peer's GATT database as discovery showed it, the
/// operations by type per characteristic, notification rates, ATT errors, disconnect reasons,
/// and what the import would not reproduce or could not read. Built from the same analysis as the
/// import (`HCIStreamAnalysis`, `GATTSession`), without requiring anything importable: a capture
/// the scenario import refuses ("nothing to import") still says what is in it.
public struct CaptureSummary: Sendable {
    /// One advertiser, from its advertising reports.
    public struct Device: Sendable {
        public var address: LEAddress
        /// The first Complete (or Shortened) Local Name in its advertising data or scan responses.
        public var name: String?
        /// The service UUIDs its advertising data and scan responses listed, first seen first.
        public var services: [BluetoothUUID] = []
        public var rssiMin: Int8?
        public var rssiMax: Int8?
        public var connectable: Bool
        public var reports: Int
        public var scanResponses: Int
        public var firstSeen: CaptureMark
    }

    /// What the central did with one characteristic (or handle), counted by ATT PDU.
    public struct Operations: Sendable {
        public var handle: UInt16
        public var reads = 0
        public var writeRequests = 0
        public var writeCommands = 0
        public var signedWrites = 0
        public var preparedWrites = 0
        public var notifications = 0
        public var indications = 0
    }

    /// An ATT Error Response (Core 5.4, Vol 3, Part F, 3.4.1.1).
    public struct ATTErrorSeen: Sendable {
        public var request: ATTOpcode
        public var handle: UInt16
        public var code: ATTErrorCode
        public var count: Int
        public var first: CaptureMark
    }

    /// One link and what crossed it.
    public struct Link: Sendable {
        public var connection: CapturedConnection
        public var session: GATTSession
        public var operations: [Operations]
        /// Handles the ATT traffic used, in order.
        public var handlesUsed: [UInt16]
        public var errors: [ATTErrorSeen]
        /// Attribute Not Found answering a discovery request: how each discovery procedure ends
        /// (Core 5.4, Vol 3, Part G, 4.4.1, 4.6.1, 4.7.1), not an error of the peripheral.
        public var discoveryEnds: Int
        /// Notifications and indications: their times (microseconds).
        public var valueTimes: [Int64]
        public var clientMTU: UInt16?
        public var serverMTU: UInt16?
    }

    public var source: String
    public var format: CaptureFile.Format
    public var recordCount: Int
    public var packetCount: Int
    public var firstTime: Int64
    public var lastTime: Int64
    public var devices: [Device]
    public var scans: [ScanWindow]
    public var failedConnections: [FailedConnection]
    public var links: [Link]
    public var ownAdvertising: OwnAdvertising?
    public var ownAddress: LEAddress?
    /// What the import would list under "Not reproduced" from the capture itself.
    public var notes: [String]
    public var skipped: [SkippedRecord]

    /// Summarises `file` (read with `CaptureFile.decode`); `source` names it.
    public static func make(_ file: CaptureFile, source: String) throws -> CaptureSummary {
        let t = try HCIStreamAnalysis.analyse(file, requiringContent: false)
        var devices: [Device] = []
        var index: [LEAddress: Int] = [:]
        for r in t.reports {
            let i: Int
            if let known = index[r.address] {
                i = known
            } else {
                devices.append(Device(address: r.address, name: nil, rssiMin: nil, rssiMax: nil, connectable: false, reports: 0,
                                      scanResponses: 0, firstSeen: r.mark))
                i = devices.count - 1
                index[r.address] = i
            }
            devices[i].reports += 1
            if r.isScanResponse { devices[i].scanResponses += 1 }
            if r.connectable { devices[i].connectable = true }
            if let rssi = r.rssi {
                devices[i].rssiMin = min(devices[i].rssiMin ?? rssi, rssi)
                devices[i].rssiMax = max(devices[i].rssiMax ?? rssi, rssi)
            }
            if let ad = try? AdvertisingData(decoding: r.data) {
                if devices[i].name == nil, let name = ad.localName, !name.isEmpty { devices[i].name = name }
                for uuid in ad.serviceUUIDs where !devices[i].services.contains(uuid) { devices[i].services.append(uuid) }
            }
        }
        var notes = t.notes
        var links: [Link] = []
        for c in t.connections {
            let session = GATTSession.analyse(c.att)
            links.append(link(c, session))
            notes += c.notes.map { "connection 0x\(hex(c.handle)) to \(c.peer): \($0)" }
            notes += session.notes.map { "connection 0x\(hex(c.handle)) to \(c.peer): \($0)" }
        }
        return CaptureSummary(source: source, format: file.format, recordCount: file.recordCount, packetCount: file.packets.count,
                              firstTime: file.packets.first?.time ?? 0, lastTime: t.endTime, devices: devices, scans: t.scans,
                              failedConnections: t.failedConnections, links: links, ownAdvertising: t.ownAdvertising,
                              ownAddress: t.ownAddress, notes: notes, skipped: file.skipped)
    }

    /// Counts one connection's ATT PDUs by kind and handle.
    static func link(_ c: CapturedConnection, _ session: GATTSession) -> Link {
        var ops: [UInt16: Operations] = [:]
        var used: [UInt16] = []
        var errors: [ATTErrorSeen] = []
        var times: [Int64] = []
        var clientMTU: UInt16?
        var serverMTU: UInt16?
        var discoveryEnds = 0
        var readByTypeDiscovers = false
        func count(_ handle: UInt16, _ body: (inout Operations) -> Void) {
            var o = ops[handle] ?? Operations(handle: handle)
            if ops[handle] == nil { used.append(handle) }
            body(&o)
            ops[handle] = o
        }
        for record in c.att {
            guard let pdu = try? ATTPDU(decoding: record.bytes) else { continue }
            switch pdu {
            case let .readRequest(r): count(r.handle) { $0.reads += 1 }
            case let .readMultipleRequest(r): for h in r.handles { count(h) { $0.reads += 1 } }
            case let .writeRequest(w): count(w.handle) { $0.writeRequests += 1 }
            case let .writeCommand(w): count(w.handle) { $0.writeCommands += 1 }
            case let .signedWriteCommand(w): count(w.handle) { $0.signedWrites += 1 }
            case let .prepareWriteRequest(w): count(w.handle) { $0.preparedWrites += 1 }
            case let .handleValueNotification(n):
                count(n.handle) { $0.notifications += 1 }
                times.append(record.mark.time)
            case let .handleValueIndication(n):
                count(n.handle) { $0.indications += 1 }
                times.append(record.mark.time)
            case let .exchangeMTURequest(r): clientMTU = r.clientRxMTU
            case let .exchangeMTUResponse(r): serverMTU = r.serverRxMTU
            case let .readByTypeRequest(r):
                readByTypeDiscovers = r.attributeType == .characteristic || r.attributeType == .include
            case let .errorResponse(e):
                let discovery = [ATTOpcode.readByGroupTypeRequest, .findByTypeValueRequest, .findInformationRequest].contains(e.requestOpcode)
                    || (e.requestOpcode == .readByTypeRequest && readByTypeDiscovers)
                if discovery && e.error == .attributeNotFound {
                    discoveryEnds += 1
                    continue
                }
                if let i = errors.firstIndex(where: { $0.request == e.requestOpcode && $0.handle == e.handle && $0.code == e.error }) {
                    errors[i].count += 1
                } else {
                    errors.append(ATTErrorSeen(request: e.requestOpcode, handle: e.handle, code: e.error, count: 1, first: record.mark))
                }
            default: break
            }
        }
        return Link(connection: c, session: session, operations: used.compactMap { ops[$0] }, handlesUsed: used, errors: errors,
                    discoveryEnds: discoveryEnds, valueTimes: times, clientMTU: clientMTU, serverMTU: serverMTU)
    }

    /// The most notifications and indications in any one-second window [t, t + 1 s) starting at
    /// one of them, and where that window starts.
    static func peak(_ times: [Int64]) -> (count: Int, start: Int64)? {
        guard !times.isEmpty else { return nil }
        let sorted = times.sorted()
        var best = (count: 0, start: sorted[0])
        var end = 0
        for (i, t) in sorted.enumerated() {
            if end < i { end = i }
            let (limit, overflow) = t.addingReportingOverflow(1_000_000)
            while end < sorted.count && (overflow || sorted[end] < limit) { end += 1 }
            if end - i > best.count { best = (end - i, t) }
        }
        return best
    }
}

// MARK: Text

extension CaptureSummary {
    /// The summary as plain text, one fact per line, indented by what it belongs to.
    public var text: String {
        var out: [String] = []
        let span = lastTime - firstTime
        out.append("Capture \(source): \(format)")
        out.append("  \(recordCount) record\(plural(recordCount)), \(packetCount) HCI packet\(plural(packetCount)) over \(CaptureMark.seconds(span))")
        if let own = ownAddress { out.append("  capturing host's address: \(own)") }

        out.append("")
        out.append("Devices seen: \(devices.count)" + (devices.isEmpty ? " (no advertising reports)" : ""))
        for d in devices {
            var line = "  \(d.name.map(Self.quoted) ?? "(no name)")  \(Self.describe(d.address))"
            if let low = d.rssiMin, let high = d.rssiMax { line += "  RSSI \(low)..\(high) dBm" } else { line += "  RSSI n/a" }
            if !d.services.isEmpty { line += "  services " + d.services.map(\.description).joined(separator: ", ") }
            line += d.connectable ? "  connectable" : "  not connectable"
            line += "  \(d.reports) report\(plural(d.reports))"
            if d.scanResponses > 0 { line += " (\(d.scanResponses) scan response\(plural(d.scanResponses)))" }
            line += ", first at \(d.firstSeen)"
            out.append(line)
        }
        if !scans.isEmpty {
            let passive = scans.filter(\.passive).count
            out.append("  scans: \(scans.count) (\(passive == 0 ? "active" : passive == scans.count ? "passive" : "\(passive) passive")), first at \(scans[0].start)")
        }
        if let own = ownAdvertising {
            let name = (try? AdvertisingData(decoding: own.data))?.localName ?? (own.scanResponse.flatMap { try? AdvertisingData(decoding: $0) })?.localName
            out.append("  the capturing host advertised itself\(name.map { " as \(Self.quoted($0))" } ?? "") from \(own.enabled)"
                       + (own.interval.map { ", every \(Self.milliseconds($0)) ms" } ?? "") + (own.connectable ? ", connectable" : ", not connectable"))
        }

        out.append("")
        out.append("Connections: \(links.count)")
        for f in failedConnections {
            out.append("  attempt to \(f.peer.map(Self.describe) ?? "the Filter Accept List") from \(f.requested) failed at \(f.ended): \(f.status.name)"
                       + (f.cancelled.map { " (cancelled by the host at \($0))" } ?? ""))
        }
        for (n, l) in links.enumerated() { out += linkLines(l, number: n + 1) }

        out.append("")
        if skipped.isEmpty {
            out.append("Skipped: nothing (every record read)")
        } else {
            out.append("Skipped: " + SkippedRecord.counts(skipped))
            out += skipped.map { "  - \($0)" }
        }
        out.append("")
        if notes.isEmpty {
            out.append("Not reproduced: nothing noted")
        } else {
            out.append("Not reproduced (\(notes.count)):")
            out += Self.collapsed(notes).map { "  - \($0)" }
        }
        return out.joined(separator: "\n") + "\n"
    }

    private func linkLines(_ l: CaptureSummary.Link, number: Int) -> [String] {
        let c = l.connection
        var out: [String] = []
        let peerName = devices.first { $0.address == c.peer }?.name
        let role = c.capturedOnPeripheral ? "the capturing host was the peripheral; the peer is the central" : "the capturing host was the central"
        out.append("  #\(number) handle 0x\(hex(c.handle)) with \(Self.describe(c.peer))\(peerName.map { " " + Self.quoted($0) } ?? ""): \(role)")
        if c.startedBeforeCapture {
            out.append("     already open when the capture starts: its first ATT PDU at \(c.established); the peer's address and the parameters are not in the capture")
        } else {
            out.append("     established \(c.established)" + (c.requested.map { " (asked at \($0))" } ?? ""))
            out.append("     parameters: \(Self.parameters(c.interval, c.latency, c.supervisionTimeout))")
        }
        for u in c.parameterUpdates {
            out.append("     update at \(u.mark): " + (u.status == .success ? Self.parameters(u.interval, u.latency, u.supervisionTimeout) : "failed, \(u.status.name)"))
        }
        for r in c.parameterRequests {
            let who = r.byCentral ? "the central" : "the peripheral"
            let how: String
            switch r.kind {
            case .hciCommand: how = "HCI LE Connection Update"
            case .l2cap: how = "L2CAP Connection Parameter Update Request"
            case .remoteLinkLayer: how = "its link layer (LE Remote Connection Parameter Request)"
            }
            let answer: String
            switch r.accepted {
            case true?: answer = "accepted"
            case false?: answer = "rejected" + (r.rejection.map { " (\($0.name))" } ?? "")
            case nil:
                // The capturing host's own LE Connection Update ends with the next LE Connection
                // Update Complete (Core 5.4, Vol 4, Part E, 7.8.18).
                if r.kind == .hciCommand, let done = c.parameterUpdates.first(where: { r.mark < $0.mark }) {
                    answer = done.status == .success ? "completed at \(done.mark)" : "failed at \(done.mark), \(done.status.name)"
                } else {
                    answer = "no answer seen"
                }
            }
            out.append("     \(who) asked at \(r.mark) via \(how): interval \(Self.milliseconds(Int64(r.intervalMin) * 1250))"
                       + "..\(Self.milliseconds(Int64(r.intervalMax) * 1250)) ms, latency \(r.latency), timeout \(Int(r.supervisionTimeout) * 10) ms: \(answer)")
        }
        if l.clientMTU != nil || l.serverMTU != nil {
            out.append("     ATT MTU exchanged: client \(l.clientMTU.map(String.init) ?? "?"), server \(l.serverMTU.map(String.init) ?? "?")")
        }
        if let end = c.disconnected {
            if c.endedByReset {
                out.append("     ended at \(end) by the capturing host's HCI Reset")
            } else {
                let reason = c.reason.map { "\($0.name) (0x\(hex8($0.rawValue)))" } ?? "no reason"
                let by = c.disconnectRequested.map { "the capturing host asked at \($0)" + (c.requestedReason.map { " with \($0.name)" } ?? "") }
                    ?? "the capturing host did not ask"
                out.append("     disconnected at \(end): \(reason); \(by)")
            }
        } else {
            out.append("     still connected when the capture ends")
        }

        let db = l.session.database
        if db.services.isEmpty {
            let handles = l.handlesUsed.sorted().map { "0x" + hex($0) }
            let used = handles.isEmpty ? "" : ": handles used \(handles.joined(separator: ", "))"
            // An app that connects again usually keeps the database it discovered before.
            if let earlier = links.prefix(number - 1).lastIndex(where: { $0.connection.peer == c.peer && !$0.session.database.services.isEmpty }) {
                out.append("     GATT database: not discovered again on this connection (as on #\(earlier + 1))" + used)
            } else {
                out.append("     GATT database: not discovered in the capture" + used)
            }
        } else {
            let rebuilt = db.services.contains { $0.inferred || $0.characteristics.contains(where: \.inferred) }
            out.append(rebuilt ? "     GATT database (as discovery showed it; * rebuilt from the traffic, placeholder UUIDs):" : "     GATT database (as discovery showed it):")
            for s in db.services {
                out.append("       \(s.inferred ? "*" : "")service \(s.uuid) (handles 0x\(hex(s.start))..0x\(hex(s.end)))")
                for ch in s.characteristics {
                    var line = "         \(ch.inferred ? "*" : "")characteristic \(ch.uuid) value handle 0x\(hex(ch.valueHandle)) [\(Self.properties(ch.properties))]"
                    if !ch.descriptors.isEmpty {
                        line += " descriptors " + ch.descriptors.map { "\($0.uuid) 0x\(hex($0.handle))" }.joined(separator: ", ")
                    }
                    out.append(line)
                }
            }
        }
        if !l.operations.isEmpty {
            out.append("     operations:")
            for o in l.operations {
                var counts: [String] = []
                func add(_ n: Int, _ what: String) { if n > 0 { counts.append("\(n) \(what)\(n == 1 ? "" : "s")") } }
                add(o.reads, "read")
                add(o.writeRequests, "write request")
                add(o.writeCommands, "write command")
                add(o.signedWrites, "signed write")
                add(o.preparedWrites, "prepared write")
                add(o.notifications, "notification")
                add(o.indications, "indication")
                out.append("       \(name(ofHandle: o.handle, in: db)): " + counts.joined(separator: ", "))
            }
        }
        if let peak = Self.peak(l.valueTimes), let first = l.valueTimes.min(), let last = l.valueTimes.max() {
            let n = l.valueTimes.count
            // n values over [first, last]: n - 1 intervals; in tenths of a value per second.
            let tenths = last > first ? Int64(n - 1) * 10_000_000 / (last - first) : nil
            let mean = tenths.map { "\($0 / 10).\($0 % 10)/s" } ?? "all at once"
            out.append("     notifications and indications: \(n) from \(CaptureMark.seconds(first)) to \(CaptureMark.seconds(last)), "
                       + "mean \(mean), peak \(peak.count) in 1 s (from \(CaptureMark.seconds(peak.start)))")
        }
        if l.discoveryEnds > 0 {
            out.append("     discovery ended with Attribute Not Found \(l.discoveryEnds) time\(l.discoveryEnds == 1 ? "" : "s") (as the procedures end)")
        }
        for e in l.errors {
            out.append("     ATT error: \(e.request.name) handle 0x\(hex(e.handle)): \(e.code)" + (e.count > 1 ? " ×\(e.count)" : "") + ", first at \(e.first)")
        }
        return out
    }

    /// Notes that differ only in their record numbers and times (one per ACL packet of a
    /// connection the capture never showed being made…) as the first of them and a count.
    static func collapsed(_ notes: [String]) -> [String] {
        func key(_ note: String) -> String {
            note.split(separator: " ", omittingEmptySubsequences: false).map { word -> String in
                let punctuation: Set<Character> = [",", ";", ":", "(", ")"]
                var core = Substring(word)
                while let c = core.first, punctuation.contains(c) { core.removeFirst() }
                while let c = core.last, punctuation.contains(c) { core.removeLast() }
                let digits = core.hasSuffix("s") ? core.dropLast() : core
                let isNumber = !digits.isEmpty && digits.allSatisfy { $0.isNumber || $0 == "." } && digits.first?.isNumber == true
                return isNumber ? "#" : String(word)
            }.joined(separator: " ")
        }
        var order: [String] = []
        var groups: [String: (first: String, count: Int)] = [:]
        for note in notes {
            let k = key(note)
            if let g = groups[k] {
                groups[k] = (g.first, g.count + 1)
            } else {
                groups[k] = (note, 1)
                order.append(k)
            }
        }
        return order.compactMap { groups[$0] }.map { $0.count == 1 ? $0.first : "\($0.first) (and \($0.count - 1) more like it)" }
    }

    /// `2A37 (0x0012)` for a value handle discovery found, `2902 of 2A37 (0x0013)` for a
    /// descriptor, `handle 0x0012` otherwise.
    private func name(ofHandle handle: UInt16, in db: DiscoveredDatabase) -> String {
        for s in db.services {
            for c in s.characteristics {
                if c.valueHandle == handle { return "\(c.uuid) (0x\(hex(handle)))" }
                if let d = c.descriptors.first(where: { $0.handle == handle }) { return "\(d.uuid) of \(c.uuid) (0x\(hex(handle)))" }
            }
        }
        return "handle 0x\(hex(handle))"
    }

    /// A name a device advertised, in quotes, with control characters escaped (`"a\nb"`): one
    /// line, whatever the device sent.
    static func quoted(_ name: String) -> String { String(reflecting: name) }

    /// `C0:11:22:33:44:55/random (static)`.
    static func describe(_ address: LEAddress) -> String {
        guard address.type.rawValue & 0x01 == 1 else { return "\(address)" }
        // The two most significant bits of a random address (Core 5.4, Vol 6, Part B, 1.3.2).
        switch address.address.rawValue >> 46 & 0x3 {
        case 0b11: return "\(address) (static)"
        case 0b01: return "\(address) (resolvable private)"
        case 0b00: return "\(address) (non-resolvable private)"
        default: return "\(address)"
        }
    }

    /// Interval (1.25 ms units), latency, supervision timeout (10 ms units).
    static func parameters(_ interval: UInt16, _ latency: UInt16, _ timeout: UInt16) -> String {
        "interval \(milliseconds(Int64(interval) * 1250)) ms, latency \(latency), supervision timeout \(Int(timeout) * 10) ms"
    }

    /// `7.5`, `30`: microseconds as milliseconds, without a zero fraction.
    static func milliseconds(_ us: Int64) -> String {
        let sign = us < 0 ? "-" : ""
        let v = us.magnitude
        guard v % 1000 != 0 else { return "\(sign)\(v / 1000)" }
        var fraction = String(v % 1000)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(sign)\(v / 1000).\(fraction)"
    }

    /// Characteristic Properties (Core 5.4, Vol 3, Part G, 3.3.1.1), in the scenario format's words.
    static func properties(_ p: UInt8) -> String {
        let names: [(UInt8, String)] = [(0x01, "broadcast"), (0x02, "read"), (0x04, "write-without-response"), (0x08, "write"),
                                        (0x10, "notify"), (0x20, "indicate"), (0x40, "authenticated-signed-writes"), (0x80, "extended-properties")]
        return names.filter { p & $0.0 != 0 }.map(\.1).joined(separator: ", ")
    }

    private func plural(_ n: Int) -> String { n == 1 ? "" : "s" }
}

import BLEWire
import Controller
import HCI
import Transport

/// Turns an air capture (pcap/pcapng of link type 251, 256 or 272: `AirLinkHeader`) into the HCI
/// traffic its central's host would have seen, so that the importer reads both sides of every
/// connection from the link-layer packets (docs/import.md, "Air captures").
///
/// The central is the initiator of the first CONNECT_IND (else the scanner of the first SCAN_REQ).
/// What becomes what (Core 5.4, Vol 6, Part B, 2.3 and 2.4; Vol 4, Part E, 7):
/// - ADV_IND, ADV_NONCONN_IND, ADV_SCAN_IND, SCAN_RSP, and ADV_DIRECT_IND addressed to the
///   central: LE Advertising Report, RSSI from the capture (127, "not available", when it has
///   none). The central scans (LE Set Scan Parameters, active when it sent SCAN_REQs, and LE Set
///   Scan Enable) from the first advertising packet until its first CONNECT_IND, and again from
///   each later SCAN_REQ it sends.
/// - the central's CONNECT_IND: LE Create Connection and LE Connection Complete (role central) with
///   its interval, latency and timeout. Connections of other initiators are left out (noted).
/// - data PDUs: an ACL packet per L2CAP start (LLID 0b10) or continuation (0b01) PDU, the
///   central's host → controller, the peripheral's controller → host; empty PDUs are skipped. The
///   direction comes from the pseudo-header (256) or the Nordic header (272); without one (251, or
///   256 without it) a packet more than 3 ms after the previous one on its access address starts a
///   connection event, so it is the central's, and the packets of an event alternate.
/// - a retransmission (same SN and the same LLID and payload as the previous PDU the same way,
///   4.5.9) is read once.
/// - LL_CONNECTION_UPDATE_IND: LE Connection Update Complete at the instant, whose time is
///   reckoned from the connection's anchors (CONNECT_IND's end + 1.25 ms + WinOffset, then each
///   event the central opens) or the sniffer's event counter (272). LL_CONNECTION_PARAM_REQ from
///   the peripheral: LE Remote Connection Parameter Request, answered by the central's Reply when an
///   LL_CONNECTION_UPDATE_IND follows and its Negative Reply on LL_REJECT_EXT_IND.
/// - LL_TERMINATE_IND: from the central, HCI Disconnect with its reason and Disconnection
///   Complete (Connection Terminated By Local Host); from the peripheral, Disconnection Complete
///   with its reason.
/// - a packet whose CRC the capture checked and found wrong, or (251, 256 without the check) whose
///   CRC-24 (Vol 6, Part B, 3.1.1) is wrong for an access address whose CRCInit is known, is
///   skipped and noted; encrypted links (LL_START_ENC_REQ) are noted, their later traffic not
///   reproduced; data on an access address without CONNECT_IND in the capture (the sniffer joined
///   mid-connection) gets a connection handle of its own but no LE Connection Complete.
public enum AirCaptureHCI {
    public static func captureFile(_ file: PcapFile) throws -> CaptureFile {
        var airPackets: [AirPacket] = []
        let origin = file.packets.first { $0.unixMicroseconds != nil }?.unixMicroseconds ?? 0
        var lastTime: Int64?
        for packet in file.packets {
            guard packet.linkType.isAir else {
                throw CaptureError.malformedPacket(record: packet.number, offset: packet.offset,
                                                   detail: "link type \(packet.linkType) in an air capture: a file is imported either as HCI or as link-layer packets, not both")
            }
            let absolute = packet.unixMicroseconds ?? lastTime ?? origin
            lastTime = absolute
            let (time, overflow) = absolute.subtractingReportingOverflow(origin)
            // Within ±2^50 µs (35 years) of the first packet, so that the timing arithmetic below never overflows.
            let bounded = overflow ? 0 : min(max(time, -(1 << 50)), 1 << 50)
            if let air = try AirLinkHeader.read(packet, time: bounded) { airPackets.append(air) }
        }
        var synthesis = Synthesis(packets: airPackets)
        try synthesis.run()
        let format: CaptureFile.Format
        switch file.kind {
        case let .pcap(_, nanoseconds): format = .pcap(linkType: file.linkTypes.first ?? .bluetoothLELL, nanoseconds: nanoseconds)
        case .pcapng: format = .pcapng(linkTypes: file.linkTypes)
        }
        var capture = CaptureFile(format: format, recordCount: file.packets.count, packets: synthesis.out)
        capture.airNotes = synthesis.notes
        capture.smoothClock()
        return capture
    }

    /// One connection on the air, by access address.
    struct Link {
        var handle: UInt16
        /// Made by the capture's central (its CONNECT_IND is in the capture, or the capture shows no CONNECT_IND for it).
        var ours: Bool
        var peripheral: LEAddress?
        var crcInit: UInt32?
        /// Microseconds.
        var interval: Int64
        /// The supervision timeout, microseconds.
        var timeout: Int64 = 32_000_000
        var anchorBase: Int64
        var counterBase: Int64
        var pendingUpdate: (instantTime: Int64, counter: Int64, interval: UInt16, latency: UInt16, timeout: UInt16, windowOffset: UInt16)?
        /// The last PDU each way (key: from the central): SN, LLID and payload.
        var last: [Bool: (sn: Bool, llid: UInt8, payload: [UInt8])] = [:]
        var lastTime: Int64?
        var lastFromCentral = false
        var encryptedFrom: Int?
        var remoteRequestPending = false
        var established: Bool
    }

    struct Synthesis {
        let packets: [AirPacket]
        var out: [CaptureFile.Packet] = []
        var notes: [String] = []
        var central: LEAddress?
        var activeScan = false
        var scanning = false
        var scanParametersSent = false
        /// The central made a connection: it scans again only when its SCAN_REQs show it (from
        /// the packets in `scanOpens` to those in `scanCloses`, indices in `packets`).
        var connectedOnce = false
        var scanOpens: Set<Int> = []
        var scanCloses: Set<Int> = []
        var links: [UInt32: Link] = [:]
        var nextHandle: UInt16 = 0x0040
        var badCRC: [Int] = []
        var retransmissions = 0
        var foreignConnections: [(record: Int, initiator: LEAddress, advertiser: LEAddress)] = []
        var noted: Set<String> = []

        init(packets: [AirPacket]) { self.packets = packets }

        mutating func note(_ text: String) { if noted.insert(text).inserted { notes.append(text) } }

        mutating func emit(_ packet: HCIPacket, _ direction: HCIDirection, _ a: AirPacket, time: Int64? = nil) {
            out.append(CaptureFile.Packet(record: a.record, offset: a.offset, time: time ?? a.time, direction: direction,
                                          frame: packet.h4, missingOctets: 0))
        }

        mutating func run() throws {
            findCentral()
            for (i, a) in packets.enumerated() {
                applyDueUpdates(before: a)
                if a.isAdvertising, a.advertisingCRCHolds,
                   let pdu = try? AdvertisingChannelPDU(decoding: a.pdu),
                   pdu.pduType == .advInd || pdu.pduType == .advDirectInd, let advertiser = pdu.address(at: 0, random: pdu.txAdd) {
                    peripheralAdvertisesAgain(advertiser, a)
                }
                if scanOpens.contains(i) { startScan(a) }
                defer {
                    if scanCloses.contains(i), scanning {
                        emit(.command(.leSetScanEnable(enable: false, filterDuplicates: false)), .hostToController, a)
                        scanning = false
                    }
                }
                if a.crcFailed {
                    badCRC.append(a.record)
                    continue
                }
                if a.isAdvertising {
                    if !a.advertisingCRCHolds {
                        badCRC.append(a.record)
                        continue
                    }
                    try advertising(a)
                } else {
                    try data(a)
                }
            }
            if let first = badCRC.first {
                notes.append("\(badCRC.count) link-layer packet\(badCRC.count == 1 ? "" : "s") (first record \(first)) failed the CRC check: skipped")
            }
            if retransmissions > 0 {
                notes.append("\(retransmissions) retransmitted data PDU\(retransmissions == 1 ? "" : "s") (the same SN and payload again) \(retransmissions == 1 ? "was" : "were") read once")
            }
            if let f = foreignConnections.first {
                notes.append("\(foreignConnections.count) connection\(foreignConnections.count == 1 ? "" : "s") of another central (first \(f.initiator.address) to \(f.advertiser.address) at record \(f.record)) left out: the scenario is \(central.map { "\($0.address)" } ?? "the first central")'s side")
            }
            for link in links.values.sorted(by: { $0.handle < $1.handle }) where link.pendingUpdate != nil {
                notes.append("the capture ends before the instant of a connection update on connection 0x\(String(link.handle, radix: 16)); not reproduced")
            }
        }

        /// The initiator of the first CONNECT_IND, else the scanner of the first SCAN_REQ; and whether it scanned actively.
        mutating func findCentral() {
            var scanner: LEAddress?
            for a in packets where a.isAdvertising && a.advertisingCRCHolds {
                guard let pdu = try? AdvertisingChannelPDU(decoding: a.pdu) else { continue }
                if pdu.pduType == .connectInd, let c = try? ConnectIndication(decoding: pdu) {
                    central = c.initiator
                    break
                }
                if pdu.pduType == .scanReq, scanner == nil { scanner = pdu.address(at: 0, random: pdu.txAdd) }
            }
            if central == nil { central = scanner }
            // The central's SCAN_REQs after its first CONNECT_IND, in stretches (no gap over 1.5 s, no
            // CONNECT_IND of its own between): each is a scan, from the advertising PDU the first one
            // answers to the SCAN_RSP after the last.
            var connected = false
            var stretch: (first: Int, last: Int)?
            func closeStretch() {
                guard let s = stretch else { return }
                let open = s.first > 0 && packets[s.first - 1].isAdvertising ? s.first - 1 : s.first
                scanOpens.insert(open)
                let next = s.last + 1
                let isResponse = next < packets.count && packets[next].isAdvertising
                    && (try? AdvertisingChannelPDU(decoding: packets[next].pdu))?.pduType == .scanRsp
                scanCloses.insert(isResponse ? next : s.last)
                stretch = nil
            }
            for (i, a) in packets.enumerated() where a.isAdvertising && a.advertisingCRCHolds {
                guard let pdu = try? AdvertisingChannelPDU(decoding: a.pdu) else { continue }
                if pdu.pduType == .connectInd, pdu.address(at: 0, random: pdu.txAdd) == central {
                    closeStretch()
                    connected = true
                } else if pdu.pduType == .scanReq, pdu.address(at: 0, random: pdu.txAdd) == central {
                    activeScan = true
                    guard connected else { continue }
                    if let s = stretch, a.time - packets[s.last].time > 1_500_000 { closeStretch() }
                    stretch = (stretch?.first ?? i, i)
                }
            }
            closeStretch()
        }

        mutating func startScan(_ a: AirPacket) {
            guard !scanning else { return }
            if !scanParametersSent {
                emit(.command(.leSetScanParameters(LEScanParameters(active: activeScan))), .hostToController, a)
                scanParametersSent = true
            }
            emit(.command(.leSetScanEnable(enable: true, filterDuplicates: false)), .hostToController, a)
            scanning = true
        }

        mutating func advertising(_ a: AirPacket) throws {
            let pdu: AdvertisingChannelPDU
            do { pdu = try AdvertisingChannelPDU(decoding: a.pdu) } catch {
                throw CaptureError.malformedPacket(record: a.record, offset: a.offset, detail: "advertising PDU: \(error)")
            }
            func short(_ name: String, _ needed: Int) -> CaptureError {
                .malformedPacket(record: a.record, offset: a.offset, detail: "\(name) with \(pdu.payload.count) payload octets (needs \(needed))")
            }
            let rssi = a.rssi ?? 127
            guard let type = pdu.pduType else { return }
            switch type {
            case .advInd, .advNonconnInd, .advScanInd, .scanRsp, .advDirectInd:
                guard let advertiser = pdu.address(at: 0, random: pdu.txAdd) else { throw short("\(type)", 6) }
                let reportType: AdvertisingReportType
                var data = Array(pdu.payload.dropFirst(6))
                switch type {
                case .advInd: reportType = .advInd
                case .advNonconnInd: reportType = .advNonconnInd
                case .advScanInd: reportType = .advScanInd
                case .scanRsp: reportType = .scanRsp
                default:
                    guard let target = pdu.address(at: 6, random: pdu.rxAdd) else { throw short("ADV_DIRECT_IND", 12) }
                    guard central == nil || target == central else { return }
                    reportType = .advDirectInd
                    data = []
                }
                guard data.count <= 31 else {
                    note("advertising PDUs with more than 31 octets of data (first at record \(a.record)) were left out")
                    return
                }
                if !connectedOnce { startScan(a) }
                emit(.event(.leMeta(.advertisingReport([LEAdvertisingReport(eventType: reportType, address: advertiser, data: data, rssi: rssi)]))),
                     .controllerToHost, a)
            case .scanReq:
                guard pdu.payload.count >= 12 else { throw short("SCAN_REQ", 12) }
            case .connectInd:
                let c: ConnectIndication
                do { c = try ConnectIndication(decoding: pdu) } catch {
                    throw CaptureError.malformedPacket(record: a.record, offset: a.offset, detail: "\(error)")
                }
                try connect(c, a)
            case .advExtInd:
                note("extended advertising (ADV_EXT_IND, first at record \(a.record)) is not read: its AUX packets are on secondary channels")
            }
        }

        mutating func connect(_ c: ConnectIndication, _ a: AirPacket) throws {
            let airtime = Int64(1 + 4 + 2 + ConnectIndication.payloadLength + 3) * 8
            let anchor = a.time + airtime + 1250 + Int64(c.windowOffset) * 1250
            guard c.initiator == central else {
                foreignConnections.append((a.record, c.initiator, c.advertiser))
                links[c.accessAddress] = Link(handle: 0, ours: false, crcInit: c.crcInit, interval: max(1, Int64(c.interval)) * 1250,
                                              anchorBase: anchor, counterBase: 0, established: true)
                return
            }
            for aa in links.keys.sorted() where links[aa]!.ours && links[aa]!.established && links[aa]!.peripheral == c.advertiser {
                lost(aa, a)
            }
            if scanning {
                emit(.command(.leSetScanEnable(enable: false, filterDuplicates: false)), .hostToController, a)
                scanning = false
            }
            connectedOnce = true
            let handle = nextHandle
            nextHandle += 1
            emit(.command(.leCreateConnection(LECreateConnectionParameters(
                peer: c.advertiser, ownAddressType: c.initiator.type, connectionIntervalMin: c.interval, connectionIntervalMax: c.interval,
                maxLatency: c.latency, supervisionTimeout: c.timeout))), .hostToController, a)
            emit(.event(.leMeta(.connectionComplete(LEConnectionComplete(
                handle: handle, role: .central, peer: c.advertiser, connectionInterval: c.interval, peripheralLatency: c.latency,
                supervisionTimeout: c.timeout, centralClockAccuracy: c.sca)))), .controllerToHost, a)
            links[c.accessAddress] = Link(handle: handle, ours: true, peripheral: c.advertiser, crcInit: c.crcInit,
                                          interval: max(1, Int64(c.interval)) * 1250, timeout: Int64(c.timeout) * 10_000,
                                          anchorBase: anchor, counterBase: 0, established: true)
        }

        /// A connectable advertising PDU from a peripheral the central is connected to, more than the
        /// supervision timeout after the link's last packet: the link was lost (a legacy advertiser
        /// stops advertising while connected, Vol 6, Part B, 4.4.2).
        mutating func peripheralAdvertisesAgain(_ advertiser: LEAddress, _ a: AirPacket) {
            for aa in links.keys.sorted() {
                guard let link = links[aa], link.ours, link.established, link.peripheral == advertiser else { continue }
                if a.time - (link.lastTime ?? link.anchorBase) >= link.timeout { lost(aa, a) }
            }
        }

        /// The link ended without LL_TERMINATE_IND (the air shows none: its supervision timer ran
        /// out, Vol 6, Part B, 4.5.2): Disconnection Complete with Connection Timeout (0x08), at the
        /// packet that shows it.
        mutating func lost(_ aa: UInt32, _ a: AirPacket) {
            guard var link = links[aa] else { return }
            // When its supervision timeout ran out, if that was before this packet; never before what came earlier.
            let due = (link.lastTime ?? link.anchorBase) + link.timeout
            let time = max(out.last?.time ?? 0, min(a.time - 1, due))
            emit(.event(.disconnectionComplete(DisconnectionComplete(handle: link.handle, reason: .connectionTimeout))), .controllerToHost, a,
                 time: time)
            link.ours = false
            link.pendingUpdate = nil
            links[aa] = link
            note("the capture shows no LL_TERMINATE_IND for the link to \(link.peripheral.map { "\($0.address)" } ?? "?") (connection 0x\(String(link.handle, radix: 16))): it was taken to have timed out (0x08) at record \(a.record), where the peripheral advertised or was connected again")
        }

        /// The connection event of a packet at `t` on `link` (the sniffer's counter when it gives one).
        func eventCounter(_ link: Link, _ a: AirPacket) -> Int64 {
            let estimate = link.counterBase + ((a.time - link.anchorBase) * 2 + link.interval) / (2 * link.interval)
            guard let counter = a.eventCounter else { return max(link.counterBase, estimate) }
            // Unwrap the sniffer's 16-bit counter near the estimate.
            let low = Int64(counter)
            let base = estimate - (estimate & 0xFFFF)
            let candidates = [base - 65536 + low, base + low, base + 65536 + low]
            return candidates.min { abs($0 - estimate) < abs($1 - estimate) } ?? estimate
        }

        /// LE Connection Update Complete for every update whose instant came before `a`.
        mutating func applyDueUpdates(before a: AirPacket) {
            for aa in links.keys.sorted() {
                guard var link = links[aa], let u = link.pendingUpdate, u.instantTime <= a.time else { continue }
                link.pendingUpdate = nil
                link.anchorBase = u.instantTime + Int64(u.windowOffset) * 1250
                link.counterBase = u.counter
                link.interval = max(1, Int64(u.interval)) * 1250
                link.timeout = Int64(u.timeout) * 10_000
                links[aa] = link
                guard link.ours, link.established else { continue }
                emit(.event(.leMeta(.connectionUpdateComplete(LEConnectionUpdateComplete(
                    handle: link.handle, connectionInterval: u.interval, peripheralLatency: u.latency, supervisionTimeout: u.timeout)))),
                     .controllerToHost, a, time: u.instantTime)
            }
        }

        mutating func data(_ a: AirPacket) throws {
            var link: Link
            if let known = links[a.accessAddress] {
                link = known
            } else {
                // The sniffer joined mid-connection: no CONNECT_IND, so no CRCInit, parameters or addresses.
                link = Link(handle: nextHandle, ours: true, interval: 30_000, anchorBase: a.time, counterBase: 0, established: false)
                nextHandle += 1
                note("data on access address 0x\(String(a.accessAddress, radix: 16)) from record \(a.record) without its CONNECT_IND in the capture (the sniffer joined mid-connection): read as connection 0x\(String(link.handle, radix: 16)), whose parameters and peer address the capture does not give")
            }
            if !a.crcChecked, let crcInit = link.crcInit, !LinkLayer.crcMatches(a.pdu, crc: a.crc, initial: crcInit) {
                badCRC.append(a.record)
                return
            }
            let pdu: DataChannelPDU
            do { pdu = try DataChannelPDU(decoding: a.pdu) } catch {
                throw CaptureError.malformedPacket(record: a.record, offset: a.offset, detail: "data PDU: \(error)")
            }
            // Direction: the capture's, else a new connection event is the central's and the packets alternate.
            let fromCentral: Bool
            if let said = a.fromCentral {
                fromCentral = said
            } else if let last = link.lastTime, a.time - last <= 3_000 {
                fromCentral = !link.lastFromCentral
            } else {
                fromCentral = true
            }
            if fromCentral, a.eventCounter == nil, link.lastTime.map({ a.time - $0 > 3_000 }) ?? true, link.established {
                // The central opens each connection event: re-anchor on it.
                let k = eventCounter(link, a)
                link.anchorBase = a.time
                link.counterBase = k
            }
            link.lastTime = a.time
            link.lastFromCentral = fromCentral
            defer { links[a.accessAddress] = link }
            guard link.ours else { return }
            if let previous = link.last[fromCentral], previous.sn == pdu.sn, previous.llid == pdu.llid, previous.payload == pdu.payload,
               !(pdu.llid == DataChannelPDU.llidContinuation && pdu.payload.isEmpty) {
                retransmissions += 1
                return
            }
            link.last[fromCentral] = (pdu.sn, pdu.llid, pdu.payload)
            if pdu.llid == DataChannelPDU.llidContinuation && pdu.payload.isEmpty { return }   // empty PDU
            if link.encryptedFrom != nil || a.encrypted {
                note("connection 0x\(String(link.handle, radix: 16)) is encrypted from record \(link.encryptedFrom ?? a.record): what it carried from there is not reproduced (the lab's links are not encrypted)")
                return
            }
            switch pdu.llid {
            case DataChannelPDU.llidStart, DataChannelPDU.llidContinuation:
                let boundary: PacketBoundary = pdu.llid == DataChannelPDU.llidContinuation ? .continuing
                    : (fromCentral ? .firstNonFlushable : .firstFlushable)
                emit(.acl(HCIACLData(handle: link.handle, boundary: boundary, data: pdu.payload)),
                     fromCentral ? .hostToController : .controllerToHost, a)
            case DataChannelPDU.llidControl:
                let control: LLControlPDU
                do { control = try LLControlPDU(decoding: pdu.payload) } catch {
                    throw CaptureError.malformedPacket(record: a.record, offset: a.offset, detail: "LL control PDU: \(error)")
                }
                handleControl(control, fromCentral: fromCentral, link: &link, a)
            default:
                note("data PDUs with the reserved LLID 0b00 (first at record \(a.record)) were left out")
            }
        }

        mutating func handleControl(_ pdu: LLControlPDU, fromCentral: Bool, link: inout Link, _ a: AirPacket) {
            switch pdu {
            case let .connectionUpdate(_, windowOffset, interval, latency, timeout, instant):
                let k = eventCounter(link, a)
                let delta = (Int64(instant) - k) & 0xFFFF
                guard delta < 32767 else {
                    note("an LL_CONNECTION_UPDATE_IND at record \(a.record) names an instant already past; not reproduced")
                    return
                }
                if link.remoteRequestPending, link.established {
                    link.remoteRequestPending = false
                    emit(.command(.leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters(
                        handle: link.handle, intervalMin: interval, intervalMax: interval, maxLatency: latency, supervisionTimeout: timeout))),
                         .hostToController, a)
                }
                let instantTime = link.anchorBase + (k + delta - link.counterBase) * link.interval
                link.pendingUpdate = (instantTime, k + delta, interval, latency, timeout, windowOffset)
            case let .connectionParameters(false, intervalMin, intervalMax, latency, timeout, _) where !fromCentral:
                guard link.established else { return }
                link.remoteRequestPending = true
                emit(.event(.leMeta(.remoteConnectionParameterRequest(LERemoteConnectionParameterRequest(
                    handle: link.handle, intervalMin: intervalMin, intervalMax: intervalMax, maxLatency: latency, timeout: timeout)))),
                     .controllerToHost, a)
            case let .rejectExtended(_, errorCode) where fromCentral:
                guard link.remoteRequestPending, link.established else { return }
                link.remoteRequestPending = false
                emit(.command(.leRemoteConnectionParameterRequestNegativeReply(handle: link.handle, reason: HCIStatus(rawValue: errorCode))),
                     .hostToController, a)
            case let .terminate(errorCode):
                if link.established {
                    if fromCentral {
                        emit(.command(.disconnect(handle: link.handle, reason: HCIStatus(rawValue: errorCode))), .hostToController, a)
                    }
                    emit(.event(.disconnectionComplete(DisconnectionComplete(
                        handle: link.handle, reason: fromCentral ? .connectionTerminatedByLocalHost : HCIStatus(rawValue: errorCode)))),
                         .controllerToHost, a)
                }
                link.ours = false   // nothing more on this access address is read
                link.pendingUpdate = nil
            case .encryptionRequest:
                note("connection 0x\(String(link.handle, radix: 16)) started encryption (LL_ENC_REQ at record \(a.record)): the lab's links are not encrypted, and what the link carried once encrypted is not reproduced")
            case .startEncryptionRequest:
                link.encryptedFrom = a.record
            case .connectionParameters, .rejectExtended:
                break   // the other direction's: not part of a procedure the central's host sees
            default:
                // LL_LENGTH_REQ/RSP, LL_VERSION_IND, feature and PHY exchanges…: the lab's link layer has its own.
                let name = "\(pdu)"
                if !noted.contains(where: { $0.hasPrefix(name + " ") }) {
                    note("\(name) (first at record \(a.record)) is a link-layer exchange the lab's controllers make their own way: not reproduced")
                }
            }
        }
    }
}

import BLEWire
import HCI

/// Where something was seen in the capture: its record number and time (microseconds since the
/// first record), for the comments of the imported scenario.
public struct CaptureMark: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var record: Int
    public var time: Int64

    public static func < (a: CaptureMark, b: CaptureMark) -> Bool { (a.time, a.record) < (b.time, b.record) }

    public var description: String { "record \(record) at \(CaptureMark.seconds(time))" }

    /// `1.234567s`.
    static func seconds(_ us: Int64) -> String {
        let sign = us < 0 ? "-" : ""
        let v = us < 0 ? -us : us
        let frac = String(v % 1_000_000)
        return "\(sign)\(v / 1_000_000).\(String(repeating: "0", count: 6 - frac.count) + frac)s"
    }
}

/// One advertising report as the central's controller delivered it (legacy or extended).
public struct AdvertisingObservation: Hashable, Sendable {
    public var mark: CaptureMark
    public var address: LEAddress
    public var connectable: Bool
    public var isScanResponse: Bool
    public var data: [UInt8]
    /// dBm; nil when the controller said "not available" (127).
    public var rssi: Int8?
    /// Index into `HCITranscript.scans` of the scan it arrived in (nil: outside any scan).
    public var scan: Int?
}

/// A stretch of scanning: LE Set (Extended) Scan Enable on, then off (or a connection attempt).
public struct ScanWindow: Hashable, Sendable {
    public var start: CaptureMark
    /// Nil while still scanning at the end of the capture.
    public var end: CaptureMark?
    /// LE_Scan_Interval and LE_Scan_Window (units of 0.625 ms) of the LE Set (Extended) Scan
    /// Parameters before it (Core 5.4, Vol 4, Part E, 7.8.10, 7.8.64); nil when the capture
    /// does not have them.
    public var interval: UInt16?
    public var window: UInt16?
    /// Passive scanning (LE_Scan_Type 0x00): no scan requests.
    public var passive = false
    /// The capture started while the host was scanning: advertising reports came before any LE
    /// Set (Extended) Scan Enable; `start` is the first report.
    public var startedBeforeCapture = false
}

/// A connection attempt that gave no connection: LE (Extended) Create Connection, then an error
/// in its Command Status or its LE Connection Complete (after LE Create Connection Cancel, Unknown
/// Connection Identifier, 7.8.13).
public struct FailedConnection: Hashable, Sendable {
    /// Peer_Address; nil when the initiator used its Filter Accept List.
    public var peer: LEAddress?
    public var requested: CaptureMark
    public var ended: CaptureMark
    public var status: HCIStatus
    /// When the host gave up (LE Create Connection Cancel), if it did.
    public var cancelled: CaptureMark?
    /// The initiator's LE_Scan_Interval and LE_Scan_Window (units of 0.625 ms).
    public var scanInterval: UInt16
    public var scanWindow: UInt16
}

/// An RSSI the capturing host read on a connection (HCI Read RSSI, Vol 4, Part E, 7.5.4).
public struct RSSIRead: Hashable, Sendable {
    public var mark: CaptureMark
    public var rssi: Int8
}

/// One ATT PDU on a connection, whole (L2CAP reassembled).
public struct ATTRecord: Hashable, Sendable {
    public var mark: CaptureMark
    /// Sent by the central (the capturing host); false: received from the peripheral.
    public var fromCentral: Bool
    public var bytes: [UInt8]
}

/// A connection the central made.
public struct CapturedConnection: Sendable {
    public var handle: UInt16
    public var peer: LEAddress
    /// LE (Extended) Create Connection, when the capture has it.
    public var requested: CaptureMark?
    /// Its LE_Scan_Interval and LE_Scan_Window (units of 0.625 ms): how the initiator listened.
    public var scanInterval: UInt16?
    public var scanWindow: UInt16?
    /// HCI Read RSSI on this connection by the capturing host, in order.
    public var rssiReads: [RSSIRead] = []
    public var established: CaptureMark
    /// Units of 1.25 ms, as LE Connection Complete set it.
    public var interval: UInt16
    /// Peripheral latency (connection events) and supervision timeout (units of 10 ms), as LE
    /// Connection Complete set them.
    public var latency: UInt16 = 0
    public var supervisionTimeout: UInt16 = 500
    /// LE Connection Update Complete events, in order (Core 5.4, Vol 4, Part E, 7.7.65.3).
    public var parameterUpdates: [ParameterUpdate] = []
    /// Requests for new parameters: the capturing host's LE Connection Update commands, L2CAP
    /// Connection Parameter Update Requests either side sent, LE Remote Connection Parameter
    /// Request events, in order.
    public var parameterRequests: [ParameterRequest] = []
    /// HCI Disconnect sent by the central.
    public var disconnectRequested: CaptureMark?
    public var disconnected: CaptureMark?
    public var reason: HCIStatus?
    /// The capture was taken on this connection's peripheral: the capturing host is the
    /// peripheral, `peer` the central, and `disconnectRequested` the peripheral's own Disconnect.
    public var capturedOnPeripheral = false
    /// The capturing host reset its controller (a power cycle) while connected: the link ended
    /// at `disconnected` without a Disconnection Complete.
    public var endedByReset = false
    /// The capture started in the middle of this connection: its first packet is ATT traffic on a
    /// handle no LE Connection Complete opened (iOS logging started with the app connected, or an
    /// Android log turned on mid-session). `peer` is then a placeholder (`unknownPeer(handle:)`),
    /// `established` the first packet's mark and the parameters the defaults (the capture does not
    /// show them); the role comes from which side sent the ATT requests.
    public var startedBeforeCapture = false
    /// The reason the capturing host's HCI Disconnect gave (what the other side was told).
    public var requestedReason: HCIStatus?
    /// The last ACL packet on this connection, either way (when the peer was last heard or spoken to).
    public var lastTraffic: CaptureMark?
    public var att: [ATTRecord] = []
    /// Other L2CAP traffic worth a comment (SMP pairing, signaling), once per kind.
    public var notes: [String] = []
}

/// New connection parameters in force from `mark` (LE Connection Update Complete).
public struct ParameterUpdate: Hashable, Sendable {
    public var mark: CaptureMark
    public var status: HCIStatus
    /// Units of 1.25 ms, connection events, units of 10 ms.
    public var interval: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16
}

/// A request for new connection parameters seen in the capture.
public struct ParameterRequest: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// HCI LE Connection Update sent by the capturing host (Vol 4, Part E, 7.8.18).
        case hciCommand
        /// L2CAP Connection Parameter Update Request (Vol 3, Part A, 4.20).
        case l2cap
        /// LE Remote Connection Parameter Request event: the peer's link layer asked (7.7.65.6).
        case remoteLinkLayer
    }
    public var mark: CaptureMark
    public var kind: Kind
    /// Asked by the central (else by the peripheral).
    public var byCentral: Bool
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16
    /// The central's answer, when the capture shows it: for an L2CAP request, the Connection
    /// Parameter Update Response (Vol 3, Part A, 4.21); for the link layer's, the central's host's
    /// LE Remote Connection Parameter Request Reply or Negative Reply (Vol 4, Part E, 7.8.31,
    /// 7.8.32) or, on the peripheral's capture, the status of the LE Connection Update Complete
    /// that ended its own LE Connection Update. Nil: no answer seen.
    public var accepted: Bool?
    /// Why it was rejected, when the capture says: the Negative Reply's reason, or the status the
    /// peripheral's LE Connection Update Complete gave.
    public var rejection: HCIStatus?
    /// When that answer crossed the capturing host's HCI.
    public var answered: CaptureMark?

    public init(mark: CaptureMark, kind: Kind, byCentral: Bool, intervalMin: UInt16, intervalMax: UInt16, latency: UInt16,
                supervisionTimeout: UInt16, accepted: Bool? = nil, rejection: HCIStatus? = nil) {
        self.mark = mark
        self.kind = kind
        self.byCentral = byCentral
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
        self.accepted = accepted
        self.rejection = rejection
    }

    /// The peripheral asked through its link layer (LL_CONNECTION_PARAM_REQ, Vol 6, Part B,
    /// 5.1.7), not with an L2CAP request: its own LE Connection Update, or the central's LE Remote
    /// Connection Parameter Request event.
    public var viaLinkLayer: Bool { !byCentral && kind != .l2cap }
}

extension CapturedConnection {
    /// The interval given to a connection whose parameters the capture does not show (it started
    /// inside it): 30 ms, in units of 1.25 ms, a common phone choice.
    public static let unknownInterval: UInt16 = 24

    /// Interval (1.25 ms units), latency and supervision timeout (10 ms units) in force at `mark`.
    public func parameters(at mark: CaptureMark) -> (interval: UInt16, latency: UInt16, timeout: UInt16) {
        var current = (interval, latency, supervisionTimeout)
        for u in parameterUpdates where u.status == .success && u.mark <= mark {
            current = (u.interval, u.latency, u.supervisionTimeout)
        }
        return current
    }
}

/// The HCI stream of a central's capture, decoded: scans, advertising reports, connections and
/// their ATT PDUs.
public struct HCITranscript: Sendable {
    public var scans: [ScanWindow] = []
    public var reports: [AdvertisingObservation] = []
    public var connections: [CapturedConnection] = []
    /// Connection attempts of the capturing host that gave no connection, in order.
    public var failedConnections: [FailedConnection] = []
    /// Things the importer saw but cannot reproduce, for the scenario's header comment.
    public var notes: [String] = []
    public var packetCount = 0
    public var endTime: Int64 = 0
    /// The record of the capture's last HCI packet.
    public var lastRecord = 0
    /// What the capturing host advertised itself (LE Set Advertising Parameters / Data / Scan
    /// Response Data, LE Set Advertising Enable): set when the capture was taken on a peripheral.
    public var ownAdvertising: OwnAdvertising?
    /// The capturing host's address (Read BD_ADDR, or LE Set Random Address when it advertises
    /// with a random one).
    public var ownAddress: LEAddress?

    /// Whether the capture was taken on the peripheral's side (every connection in it).
    public var capturedOnPeripheral: Bool { !connections.isEmpty && connections.allSatisfy(\.capturedOnPeripheral) }
}

/// A peripheral's own advertising, from the commands its host sent.
public struct OwnAdvertising: Hashable, Sendable {
    public var enabled: CaptureMark
    public var data: [UInt8]
    public var scanResponse: [UInt8]?
    /// Microseconds (Advertising_Interval_Min × 0.625 ms).
    public var interval: Int64?
    public var connectable: Bool
}

/// Reads the HCI packets of a capture (the central's, or a peripheral's: see
/// `CapturedConnection.capturedOnPeripheral`). Every packet must decode (the
/// capture's framing is trusted only as far as it checks); ATT PDUs that do not decode are kept as
/// bytes and noted, since a malformed PDU from a peer may be the very bug being imported.
public enum HCIStreamAnalysis {
    /// One direction of one connection, for reassembly.
    struct Stream: Hashable {
        var handle: UInt16
        var fromCentral: Bool
    }

    /// `requiringContent: false` (`blelab import --summary`): a capture with no packets, or
    /// nothing to import, gives what there is instead of `noPackets` or `nothingToImport`.
    public static func analyse(_ file: CaptureFile, requiringContent: Bool = true) throws -> HCITranscript {
        var t = HCITranscript()
        t.packetCount = file.packets.count
        if let first = file.clockAdjustments.first {
            t.notes.append("\(file.clockAdjustments.count) record\(file.clockAdjustments.count == 1 ? "" : "s") (first record \(first)) had a timestamp before the previous record's or more than a day after it; each was taken at the previous record's time")
        }
        if let first = file.undirectedRecords.first {
            let n = file.undirectedRecords.count
            t.notes.append("\(n) ACL/SCO/ISO packet\(n == 1 ? "" : "s") (first record \(first)) of an H4 capture without direction (link type 187) could not be placed host → controller or controller → host (not an ATT PDU): left out")
        }
        if !file.assumedClientHandles.isEmpty {
            t.notes.append("the H4 capture (link type 187) has no direction and shows no connection event for handle\(file.assumedClientHandles.count == 1 ? "" : "s") " + file.assumedClientHandles.map { "0x" + String($0, radix: 16) }.joined(separator: ", ") + ": its ATT traffic was placed taking the capturing host as the GATT client")
        }
        t.notes += file.airNotes
        guard !file.packets.isEmpty || !requiringContent else { throw CaptureError.noPackets(records: file.recordCount) }
        var scanning: Int?                                   // index of the open scan window
        // The connection attempt in progress: LE (Extended) Create Connection's mark, peer and
        // initiator duty cycle, and the host's LE Create Connection Cancel.
        var pendingCreate: (mark: CaptureMark, peer: LEAddress?, interval: UInt16, window: UInt16, cancelled: CaptureMark?)?
        var scanParameters: (interval: UInt16, window: UInt16, passive: Bool)?
        var open: [UInt16: Int] = [:]                        // handle → index in t.connections
        var reassembly = L2CAPReassembler<Stream>()
        var frameStarts: [Stream: CaptureMark] = [:]         // where each stream's frame in progress began
        var noted: Set<String> = []
        var advertisedOwn: CaptureMark?
        var advertisingData: [UInt8] = []
        var scanResponseData: [UInt8]?
        var advertisingInterval: Int64?
        var advertisingConnectable = true
        var ownRandomAddress = false
        var ignoredHandles: Set<UInt16> = []
        var scanEnableSeen = false   // any LE Set (Extended) Scan Enable (or a scan taken up at the first report)
        var publicAddress: BDAddr?
        var randomAddress: BDAddr?

        func note(_ text: String) { if noted.insert(text).inserted { t.notes.append(text) } }

        /// Advertising reports before any LE Set (Extended) Scan Enable: the capture started while
        /// the host was scanning (an Android log from its buffer, logging switched on mid-scan).
        /// The scan is taken up at the first report; the next Scan Enable off ends it.
        func resumeScan(at mark: CaptureMark) {
            guard scanning == nil, !scanEnableSeen, t.connections.isEmpty, pendingCreate == nil else { return }
            var window = ScanWindow(start: mark, end: nil, interval: scanParameters?.interval, window: scanParameters?.window,
                                    passive: scanParameters?.passive ?? false)
            window.startedBeforeCapture = true
            t.scans.append(window)
            scanning = t.scans.count - 1
            scanEnableSeen = true
        }

        /// LE Set (Extended) Scan Enable: a scan window opens or closes.
        func scanEnable(_ enable: Bool, at mark: CaptureMark) {
            scanEnableSeen = true
            if enable, scanning == nil {
                t.scans.append(ScanWindow(start: mark, end: nil, interval: scanParameters?.interval, window: scanParameters?.window,
                                          passive: scanParameters?.passive ?? false))
                scanning = t.scans.count - 1
            } else if !enable, let open = scanning {
                t.scans[open].end = mark
                scanning = nil
            }
        }

        /// The capturing host's LE Remote Connection Parameter Request (Negative) Reply: the answer
        /// to the peer's latest request on that connection.
        func answerRemoteRequest(handle: UInt16, accepted: Bool, reason: HCIStatus?, at mark: CaptureMark) {
            guard let i = open[handle & 0x0FFF],
                  let k = t.connections[i].parameterRequests.lastIndex(where: { $0.kind == .remoteLinkLayer && $0.accepted == nil }) else { return }
            t.connections[i].parameterRequests[k].accepted = accepted
            t.connections[i].parameterRequests[k].rejection = reason
            t.connections[i].parameterRequests[k].answered = mark
        }

        /// The connection attempt in progress gave no connection.
        func failed(_ status: HCIStatus, at mark: CaptureMark) {
            guard let create = pendingCreate else {
                note("LE Connection Complete with \(status.name) without an LE Create Connection before it (\(mark))")
                return
            }
            t.failedConnections.append(FailedConnection(peer: create.peer, requested: create.mark, ended: mark, status: status,
                                                        cancelled: create.cancelled, scanInterval: create.interval, scanWindow: create.window))
            pendingCreate = nil
        }

        func connected(handle: UInt16, status: HCIStatus, role: ConnectionRole, peer: LEAddress, interval: UInt16,
                       latency: UInt16, timeout: UInt16, mark: CaptureMark, packet: CaptureFile.Packet) throws {
            guard status == .success else {
                failed(status, at: mark)
                return
            }
            // A connection ends scanning on controllers that cannot do both (and ours stop it
            // before connecting); an open scan window closes at the connection request.
            let create = role == .peripheral ? nil : pendingCreate
            var connection = CapturedConnection(handle: handle, peer: peer, requested: create?.mark, established: mark, interval: interval)
            connection.scanInterval = create?.interval
            connection.scanWindow = create?.window
            connection.capturedOnPeripheral = role == .peripheral
            connection.latency = latency
            connection.supervisionTimeout = timeout
            t.connections.append(connection)
            open[handle] = t.connections.count - 1
            pendingCreate = nil
        }

        for p in file.packets {
            let mark = CaptureMark(record: p.record, time: p.time)
            t.endTime = max(t.endTime, p.time)
            t.lastRecord = max(t.lastRecord, p.record)
            if p.missingOctets > 0 {
                throw CaptureError.truncatedPacket(record: p.record, offset: p.offset, kept: p.frame.count - 1,
                                                   original: p.frame.count - 1 + p.missingOctets)
            }
            let packet: HCIPacket
            do { packet = try HCIPacket(h4: p.frame) } catch {
                throw CaptureError.malformedPacket(record: p.record, offset: p.offset, detail: "\(error)")
            }
            do {
                switch packet {
                case let .command(command):
                    switch command {
                    case let .leSetScanEnable(enable, _):
                        scanEnable(enable, at: mark)
                    case let .leSetExtendedScanEnable(e):
                        scanEnable(e.enable, at: mark)
                    case .reset:
                        // A controller reset (a power cycle) ends every link without a Disconnection
                        // Complete, and any scan (Core 5.4, Vol 4, Part E, 7.3.2).
                        for (_, i) in open {
                            t.connections[i].disconnected = mark
                            t.connections[i].endedByReset = true
                        }
                        reassembly.discardAll { open[$0.handle] != nil }
                        open = [:]
                        if let i = scanning {
                            t.scans[i].end = mark
                            scanning = nil
                        }
                    case let .leSetScanParameters(p):
                        scanParameters = (p.interval, p.window, p.scanType == 0x00)
                    case let .leSetExtendedScanParameters(p):
                        // The first PHY's (LE 1M when the host scans on it).
                        let first = p.perPHY[0]
                        scanParameters = (first.interval, first.window, first.scanType == 0x00)
                    case let .leCreateConnection(p):
                        pendingCreate = (mark, p.initiatorFilterPolicy == 0 ? LEAddress(p.peerAddress, type: p.peerAddressType.identity) : nil,
                                         p.scanInterval, p.scanWindow, nil)
                    case let .leExtendedCreateConnection(p):
                        let first = p.perPHY[0]
                        pendingCreate = (mark, p.initiatorFilterPolicy == 0 ? LEAddress(p.peerAddress, type: p.peerAddressType.identity) : nil,
                                         first.scanInterval, first.scanWindow, nil)
                    case .leCreateConnectionCancel:
                        if pendingCreate != nil, pendingCreate?.cancelled == nil { pendingCreate?.cancelled = mark }
                    case let .leConnectionUpdate(p):
                        if let i = open[p.handle & 0x0FFF] {
                            t.connections[i].parameterRequests.append(ParameterRequest(
                                mark: mark, kind: .hciCommand, byCentral: !t.connections[i].capturedOnPeripheral,
                                intervalMin: p.intervalMin, intervalMax: p.intervalMax, latency: p.maxLatency,
                                supervisionTimeout: p.supervisionTimeout, accepted: nil))
                        }
                    case let .leRemoteConnectionParameterRequestReply(p):
                        // 7.8.31: the answer to the peer's latest request.
                        answerRemoteRequest(handle: p.handle, accepted: true, reason: nil, at: mark)
                    case let .leRemoteConnectionParameterRequestNegativeReply(handle, reason):
                        // 7.8.32
                        answerRemoteRequest(handle: handle, accepted: false, reason: reason, at: mark)
                    case let .disconnect(handle, reason):
                        if let i = open[handle & 0x0FFF] {
                            t.connections[i].disconnectRequested = mark
                            t.connections[i].requestedReason = reason
                        }
                    case let .leSetAdvertisingEnable(enable):
                        if enable, advertisedOwn == nil { advertisedOwn = mark }
                    case let .leSetExtendedAdvertisingEnable(e):
                        if e.enable, advertisedOwn == nil { advertisedOwn = mark }
                    case let .leSetAdvertisingParameters(p):
                        advertisingInterval = Int64(p.intervalMin) * 625
                        advertisingConnectable = p.advertisingType.isConnectable
                        ownRandomAddress = p.ownAddressType.rawValue & 0x01 == 1
                    case let .leSetAdvertisingData(data):
                        advertisingData = data
                    case let .leSetScanResponseData(data):
                        scanResponseData = data
                    case let .leSetRandomAddress(address):
                        randomAddress = address
                    case let .leSetAdvertisingSetRandomAddress(_, address):
                        // One advertising set is assumed.
                        randomAddress = address
                    case let .leSetExtendedAdvertisingParameters(p):
                        advertisingConnectable = p.eventProperties.contains(.connectable)
                        advertisingInterval = Int64(p.intervalMin) * 625
                        ownRandomAddress = p.ownAddressType.rawValue & 0x01 == 1
                    case let .leSetExtendedAdvertisingData(d):
                        // 7.8.54: a complete set of data or its first fragment replaces; the others append.
                        switch d.operation {
                        case .firstFragment, .complete: advertisingData = d.data
                        case .intermediateFragment, .lastFragment: advertisingData += d.data
                        default: break
                        }
                    case let .leSetExtendedScanResponseData(d):
                        switch d.operation {
                        case .firstFragment, .complete: scanResponseData = d.data
                        case .intermediateFragment, .lastFragment: scanResponseData = (scanResponseData ?? []) + d.data
                        default: break
                        }
                    default: break
                    }
                case let .event(event):
                    if case .leMeta(.advertisingReport) = event { resumeScan(at: mark) }
                    if case .leMeta(.extendedAdvertisingReport) = event { resumeScan(at: mark) }
                    switch event {
                    case let .leMeta(.advertisingReport(list)):
                        for r in list {
                            t.reports.append(AdvertisingObservation(
                                mark: mark, address: r.sender, connectable: r.eventType.isConnectable,
                                isScanResponse: r.eventType == .scanRsp, data: r.data, rssi: r.rssi == 127 ? nil : r.rssi, scan: scanning))
                        }
                    case let .leMeta(.extendedAdvertisingReport(list)):
                        for r in list {
                            t.reports.append(AdvertisingObservation(
                                mark: mark, address: r.senderIdentity, connectable: r.eventType.isConnectable,
                                isScanResponse: r.eventType.isScanResponse, data: r.data, rssi: r.rssi == 127 ? nil : r.rssi, scan: scanning))
                        }
                    case let .leMeta(.connectionComplete(c)):
                        try connected(handle: c.handle, status: c.status, role: c.role, peer: c.peer, interval: c.connectionInterval,
                                      latency: c.peripheralLatency, timeout: c.supervisionTimeout, mark: mark, packet: p)
                    case let .leMeta(.connectionUpdateComplete(u)):
                        if let i = open[u.handle] {
                            t.connections[i].parameterUpdates.append(ParameterUpdate(
                                mark: mark, status: u.status, interval: u.connectionInterval, latency: u.peripheralLatency,
                                supervisionTimeout: u.supervisionTimeout))
                            // On a peripheral's capture, the end of its own LE Connection Update: its link
                            // layer asked the central (LL_CONNECTION_PARAM_REQ), whose answer this is.
                            if t.connections[i].capturedOnPeripheral,
                               let k = t.connections[i].parameterRequests.lastIndex(where: { $0.kind == .hciCommand && !$0.byCentral }),
                               t.connections[i].parameterRequests[k].accepted == nil {
                                t.connections[i].parameterRequests[k].accepted = u.status == .success
                                t.connections[i].parameterRequests[k].rejection = u.status == .success ? nil : u.status
                                t.connections[i].parameterRequests[k].answered = mark
                            }
                        }
                    case let .leMeta(.remoteConnectionParameterRequest(e)):
                        // LE Remote Connection Parameter Request (7.7.65.6): the peer's link layer asks
                        // (LL_CONNECTION_PARAM_REQ); on a central's capture, the peripheral.
                        if let i = open[e.handle] {
                            t.connections[i].parameterRequests.append(ParameterRequest(
                                mark: mark, kind: .remoteLinkLayer, byCentral: t.connections[i].capturedOnPeripheral,
                                intervalMin: e.intervalMin, intervalMax: e.intervalMax, latency: e.maxLatency, supervisionTimeout: e.timeout))
                        }
                    case let .leMeta(.enhancedConnectionComplete(c)):
                        try connected(handle: c.handle, status: c.status, role: c.role, peer: c.peerIdentity, interval: c.connectionInterval,
                                      latency: c.peripheralLatency, timeout: c.supervisionTimeout, mark: mark, packet: p)
                    case let .commandStatus(c) where (c.opcode == .leCreateConnection || c.opcode == .leExtendedCreateConnection) && c.status != .success:
                        // The controller refused the attempt (7.7.15).
                        failed(c.status, at: mark)
                    case let .commandComplete(c) where c.opcode == .readRSSI:
                        if let read = try? ReadRSSIReturn(decoding: c.returnParameters), read.status == .success,
                           let i = open[read.handle & 0x0FFF], read.rssi != 127 {
                            t.connections[i].rssiReads.append(RSSIRead(mark: mark, rssi: read.rssi))
                        }
                    case let .commandComplete(c) where c.opcode == .readBDAddr:
                        if let read = try? ReadBDAddrReturn(decoding: c.returnParameters), read.status == .success {
                            publicAddress = read.address
                        }
                    case let .disconnectionComplete(d):
                        if let i = open[d.handle], d.status == .success {
                            t.connections[i].disconnected = mark
                            t.connections[i].reason = d.reason
                            open[d.handle] = nil
                            reassembly.discard(Stream(handle: d.handle, fromCentral: true))
                            reassembly.discard(Stream(handle: d.handle, fromCentral: false))
                        }
                    default: break
                    }
                case let .acl(acl):
                    if open[acl.handle] == nil, adoptable(acl) {
                        // The capture starts inside this connection: take it up at its first ATT frame.
                        var connection = CapturedConnection(handle: acl.handle, peer: unknownPeer(handle: acl.handle), requested: nil,
                                                            established: mark, interval: CapturedConnection.unknownInterval)
                        connection.startedBeforeCapture = true
                        t.connections.append(connection)
                        open[acl.handle] = t.connections.count - 1
                    }
                    guard let i = open[acl.handle] else {
                        let handle = "0x" + String(acl.handle, radix: 16)
                        if ignoredHandles.insert(acl.handle).inserted {
                            note("ACL data on connection \(handle) that the capture never showed being made, and that does not start with an ATT frame (first at \(mark)), was ignored")
                        }
                        continue
                    }
                    // On a peripheral's capture the central is the other side.
                    let sentHere = p.direction == .hostToController
                    let fromCentral = t.connections[i].capturedOnPeripheral ? !sentHere : sentHere
                    t.connections[i].lastTraffic = mark
                    let stream = Stream(handle: acl.handle, fromCentral: fromCentral)
                    if acl.boundary.isStart { frameStarts[stream] = mark }
                    let outcome = reassembly.feed(acl.data, boundary: acl.boundary, stream: stream)
                    if let unfinished = outcome.droppedUnfinished, !unfinished.isEmpty {
                        t.connections[i].notes.append("an L2CAP frame left incomplete before \(mark) was dropped")
                    }
                    switch outcome.problem {
                    case nil: break
                    case .continuationWithoutStart:
                        t.connections[i].notes.append("a continuing ACL fragment without a start at \(mark) was dropped")
                    case .invalidBoundary:
                        t.connections[i].notes.append("an ACL packet with boundary flag 'complete' (BR/EDR) at \(mark) was dropped")
                    case let .longerThanLength(octets, expected):
                        t.connections[i].notes.append("an L2CAP frame at \(frameStarts[stream] ?? mark) carried \(octets.count - expected) octets past its length; they were dropped")
                    }
                    guard let frame = outcome.frame else { continue }
                    let start = frameStarts[stream] ?? mark
                    switch frame.channel {
                    case L2CAPChannelID.att:
                        t.connections[i].att.append(ATTRecord(mark: start, fromCentral: fromCentral, bytes: frame.payload))
                    case L2CAPChannelID.leSignaling:
                        signaling(frame.payload, fromCentral: fromCentral, mark: start, connection: &t.connections[i])
                    case L2CAPChannelID.smp:
                        let text = "the link was paired or encrypted (SMP, from \(start)); the lab's links are not encrypted, so this is not reproduced"
                        if !t.connections[i].notes.contains(where: { $0.hasPrefix("the link was paired") }) { t.connections[i].notes.append(text) }
                    default: break
                    }
                case .other: break
                }
            } catch let error as CaptureError {
                throw error
            } catch {
                throw CaptureError.malformedPacket(record: p.record, offset: p.offset, detail: "\(error)")
            }
        }

        for i in t.connections.indices where t.connections[i].startedBeforeCapture {
            settleRole(of: &t.connections[i])
        }
        if let mark = advertisedOwn {
            t.ownAdvertising = OwnAdvertising(enabled: mark, data: advertisingData, scanResponse: scanResponseData,
                                              interval: advertisingInterval, connectable: advertisingConnectable)
        }
        if ownRandomAddress, let random = randomAddress {
            t.ownAddress = LEAddress(random, type: .random)
        } else if let address = publicAddress {
            t.ownAddress = LEAddress(address, type: .public)
        }
        // A host that was central on some links and peripheral on others: import its central side.
        if t.connections.contains(where: { !$0.capturedOnPeripheral }) || !t.scans.isEmpty {
            let dropped = t.connections.filter(\.capturedOnPeripheral)
            if !dropped.isEmpty {
                t.notes.append("\(dropped.count) connection\(dropped.count == 1 ? "" : "s") in which the capturing host was the peripheral (first at \(dropped[0].established)) are left out: the scenario is the central's side")
                t.connections.removeAll(where: \.capturedOnPeripheral)
            }
        } else if requiringContent && t.ownAdvertising == nil && t.connections.isEmpty {
            throw CaptureError.nothingToImport(packets: file.packets.count)
        }
        return t
    }

    /// An ACL packet that can open a connection the capture never showed being made: the start of
    /// an L2CAP frame on the ATT channel (CID 0x0004, Core 5.4, Vol 3, Part A, 2.1). Other traffic
    /// on an unknown handle (BR/EDR profiles on iOS, a fragment whose start was before the capture)
    /// is not LE ATT as far as the capture can tell.
    static func adoptable(_ acl: HCIACLData) -> Bool {
        acl.boundary.isStart && acl.data.count >= 5 && acl.data[2] == 0x04 && acl.data[3] == 0x00
    }

    /// The address given to the peer of a connection the capture started inside of, which the
    /// capture never names: a static random address (two top bits set, Core 5.4, Vol 6, Part B,
    /// 1.3.2.1) spelling the handle, C0:00:00:00:HH:HH.
    public static func unknownPeer(handle: UInt16) -> LEAddress {
        LEAddress(BDAddr(rawValue: 0xC000_0000_0000 | UInt64(handle)), type: .random)
    }

    /// Client-to-server ATT opcodes (requests, commands, the Handle Value Confirmation): the side
    /// that sends them is the GATT client (Core 5.4, Vol 3, Part F, 3.4).
    static func isClientOpcode(_ opcode: UInt8) -> Bool {
        switch opcode {
        case 0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x1E, 0x20, 0x52, 0xD2: return true
        default: return false
        }
    }

    /// A connection the capture started inside of was first read as the capturing host's central
    /// side; when the ATT traffic shows the other side was the client (it sent the requests, the
    /// capturing host the notifications), the capture was taken on the peripheral.
    static func settleRole(of connection: inout CapturedConnection) {
        var byHost = 0, byPeer = 0
        for r in connection.att where !r.bytes.isEmpty && isClientOpcode(r.bytes[0]) {
            if r.fromCentral { byHost += 1 } else { byPeer += 1 }
        }
        guard byPeer > byHost else { return }
        connection.capturedOnPeripheral = true
        for k in connection.att.indices { connection.att[k].fromCentral.toggle() }
    }

    /// LE signaling (Core 5.4, Vol 3, Part A, 4), read with HCI's `LESignalingPDU`. Only the
    /// Connection Parameter Update Request (4.20) and its Response (4.21) matter here; one
    /// signaling frame may carry several commands. A command that does not decode is noted and
    /// not reproduced.
    static func signaling(_ payload: [UInt8], fromCentral: Bool, mark: CaptureMark, connection: inout CapturedConnection) {
        var r = ByteReader(payload)
        while true {
            let command: [UInt8]
            do {
                guard let next = try LESignalingPDU.nextCommand(from: &r) else { return }
                command = next
            } catch {
                connection.notes.append("an LE signaling frame at \(mark) does not decode; it is not reproduced")
                return
            }
            let pdu: LESignalingPDU
            do { pdu = try LESignalingPDU(decoding: command) } catch {
                connection.notes.append("an LE signaling command (code 0x\(hex8(command[0]))) at \(mark) does not decode (\(error)); it is not reproduced")
                continue
            }
            switch pdu {
            case let .connectionParameterUpdateRequest(_, p):
                connection.parameterRequests.append(ParameterRequest(mark: mark, kind: .l2cap, byCentral: fromCentral, intervalMin: p.intervalMin,
                                                                     intervalMax: p.intervalMax, latency: p.latency, supervisionTimeout: p.timeout))
            case let .connectionParameterUpdateResponse(_, accepted):
                guard let i = connection.parameterRequests.lastIndex(where: { $0.kind == .l2cap && $0.byCentral != fromCentral }) else { continue }
                connection.parameterRequests[i].accepted = accepted
                connection.parameterRequests[i].answered = mark
            case .commandReject, .other, .disconnectionRequest, .disconnectionResponse, .leCreditBasedConnectionRequest,
                 .leCreditBasedConnectionResponse, .flowControlCreditIndication:
                continue
            }
        }
    }
}

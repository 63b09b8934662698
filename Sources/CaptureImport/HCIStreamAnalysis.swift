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
    private enum Opcode {
        static let disconnect: UInt16 = 0x0406
        static let reset: UInt16 = 0x0C03
        static let leSetRandomAddress: UInt16 = 0x2005
        static let leSetAdvertisingParameters: UInt16 = 0x2006
        static let leSetAdvertisingData: UInt16 = 0x2008
        static let leSetScanResponseData: UInt16 = 0x2009
        static let leSetAdvertisingEnable: UInt16 = 0x200A
        static let readRSSI: UInt16 = 0x1405
        static let leSetScanParameters: UInt16 = 0x200B
        static let leSetScanEnable: UInt16 = 0x200C
        static let leCreateConnection: UInt16 = 0x200D
        static let leCreateConnectionCancel: UInt16 = 0x200E
        static let leSetExtendedScanParameters: UInt16 = 0x2041
        static let leConnectionUpdate: UInt16 = 0x2013
        static let leRemoteConnectionParameterRequestReply: UInt16 = 0x2020
        static let leRemoteConnectionParameterRequestNegativeReply: UInt16 = 0x2021
        static let leSetAdvertisingSetRandomAddress: UInt16 = 0x2035
        static let leSetExtendedAdvertisingParameters: UInt16 = 0x2036
        static let leSetExtendedAdvertisingData: UInt16 = 0x2037
        static let leSetExtendedScanResponseData: UInt16 = 0x2038
        static let leSetExtendedAdvertisingEnable: UInt16 = 0x2039
        static let leSetExtendedScanEnable: UInt16 = 0x2042
        static let leExtendedCreateConnection: UInt16 = 0x2043
    }

    /// Reassembles L2CAP basic frames (Core 5.4, Vol 3, Part A, 3.1: Length (2), CID (2), payload)
    /// from ACL fragments of one direction of one connection.
    struct Reassembly {
        var buffer: [UInt8] = []
        var start: CaptureMark?

        /// Feeds one ACL packet; returns a whole frame (CID, payload) when one completes.
        mutating func feed(_ data: [UInt8], boundary: PacketBoundary, mark: CaptureMark, notes: inout [String])
            -> (cid: UInt16, payload: [UInt8], start: CaptureMark)? {
            if boundary.isStart {
                if !buffer.isEmpty { notes.append("an L2CAP frame left incomplete before \(mark) was dropped") }
                buffer = data
                start = mark
            } else if boundary == .continuing {
                guard start != nil else {
                    notes.append("a continuing ACL fragment without a start at \(mark) was dropped")
                    return nil
                }
                buffer += data
            } else {
                notes.append("an ACL packet with boundary flag 'complete' (BR/EDR) at \(mark) was dropped")
                return nil
            }
            guard buffer.count >= 4, let first = start else { return nil }
            let length = Int(buffer[0]) | Int(buffer[1]) << 8
            guard buffer.count >= 4 + length else { return nil }
            let cid = UInt16(buffer[2]) | UInt16(buffer[3]) << 8
            if buffer.count > 4 + length {
                notes.append("an L2CAP frame at \(first) carried \(buffer.count - 4 - length) octets past its length; they were dropped")
            }
            let payload = Array(buffer[4..<4 + length])
            buffer = []
            start = nil
            return (cid, payload, first)
        }
    }

    public static func analyse(_ file: CaptureFile) throws -> HCITranscript {
        var t = HCITranscript()
        t.packetCount = file.packets.count
        if let first = file.clockAdjustments.first {
            t.notes.append("\(file.clockAdjustments.count) record\(file.clockAdjustments.count == 1 ? "" : "s") (first record \(first)) had a timestamp before the previous record's or more than a day after it; each was taken at the previous record's time")
        }
        guard !file.packets.isEmpty else { throw CaptureError.noPackets(records: file.recordCount) }
        var scanning: Int?                                   // index of the open scan window
        // The connection attempt in progress: LE (Extended) Create Connection's mark, peer and
        // initiator duty cycle, and the host's LE Create Connection Cancel.
        var pendingCreate: (mark: CaptureMark, peer: LEAddress?, interval: UInt16, window: UInt16, cancelled: CaptureMark?)?
        var scanParameters: (interval: UInt16, window: UInt16, passive: Bool)?
        var open: [UInt16: Int] = [:]                        // handle → index in t.connections
        var reassembly: [UInt16: [Bool: Reassembly]] = [:]   // handle → fromCentral → state
        var noted: Set<String> = []
        var advertisedOwn: CaptureMark?
        var advertisingData: [UInt8] = []
        var scanResponseData: [UInt8]?
        var advertisingInterval: Int64?
        var advertisingConnectable = true
        var ownRandomAddress = false
        var publicAddress: BDAddr?
        var randomAddress: BDAddr?

        func note(_ text: String) { if noted.insert(text).inserted { t.notes.append(text) } }

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
                    let opcode = command.opcode.rawValue
                    let params = Array(p.frame.dropFirst(4))
                    switch opcode {
                    case Opcode.leSetScanEnable, Opcode.leSetExtendedScanEnable:
                        guard let enable = params.first else { break }
                        if enable != 0, scanning == nil {
                            t.scans.append(ScanWindow(start: mark, end: nil, interval: scanParameters?.interval, window: scanParameters?.window,
                                                      passive: scanParameters?.passive ?? false))
                            scanning = t.scans.count - 1
                        } else if enable == 0, let open = scanning {
                            t.scans[open].end = mark
                            scanning = nil
                        }
                    case Opcode.reset:
                        // A controller reset (a power cycle) ends every link without a Disconnection
                        // Complete, and any scan (Core 5.4, Vol 4, Part E, 7.3.2).
                        for (handle, i) in open {
                            t.connections[i].disconnected = mark
                            t.connections[i].endedByReset = true
                            reassembly[handle] = nil
                        }
                        open = [:]
                        if let i = scanning {
                            t.scans[i].end = mark
                            scanning = nil
                        }
                    case Opcode.leSetScanParameters:
                        // 7.8.10: LE_Scan_Type (1), LE_Scan_Interval (2), LE_Scan_Window (2), Own_Address_Type (1), Filter_Policy (1).
                        var r = ByteReader(params)
                        let type = try r.readUInt8()
                        scanParameters = (try r.readUInt16LE(), try r.readUInt16LE(), type == 0x00)
                    case Opcode.leSetExtendedScanParameters:
                        // 7.8.64: Own_Address_Type (1), Scanning_Filter_Policy (1), Scanning_PHYs (1), then for
                        // each PHY: Scan_Type (1), Scan_Interval (2), Scan_Window (2). The first PHY's.
                        var r = ByteReader(params)
                        try r.skip(3)
                        let type = try r.readUInt8()
                        scanParameters = (try r.readUInt16LE(), try r.readUInt16LE(), type == 0x00)
                    case Opcode.leCreateConnection:
                        // 7.8.12: LE_Scan_Interval (2), LE_Scan_Window (2), Initiator_Filter_Policy (1),
                        // Peer_Address_Type (1), Peer_Address (6), …
                        var r = ByteReader(params)
                        let interval = try r.readUInt16LE(), window = try r.readUInt16LE()
                        let filter = try r.readUInt8()
                        var type = try r.readUInt8()
                        if type >= 2 && type <= 3 { type -= 2 }   // public / random identity address
                        let address = try r.readAddress()
                        pendingCreate = (mark, filter == 0 ? LEAddress(address, type: AddressType(rawValue: type)) : nil, interval, window, nil)
                    case Opcode.leExtendedCreateConnection:
                        // 7.8.66: Initiator_Filter_Policy (1), Own_Address_Type (1), Peer_Address_Type (1),
                        // Peer_Address (6), Initiating_PHYs (1), then for each PHY: Scan_Interval (2), Scan_Window (2), …
                        var r = ByteReader(params)
                        let filter = try r.readUInt8()
                        try r.skip(1)
                        var type = try r.readUInt8()
                        if type >= 2 && type <= 3 { type -= 2 }
                        let address = try r.readAddress()
                        try r.skip(1)
                        pendingCreate = (mark, filter == 0 ? LEAddress(address, type: AddressType(rawValue: type)) : nil,
                                         try r.readUInt16LE(), try r.readUInt16LE(), nil)
                    case Opcode.leCreateConnectionCancel:
                        if pendingCreate != nil, pendingCreate?.cancelled == nil { pendingCreate?.cancelled = mark }
                    case Opcode.leConnectionUpdate:
                        // 7.8.18: Connection_Handle (2), Interval_Min (2), Interval_Max (2), Max_Latency (2),
                        // Supervision_Timeout (2), Min_CE_Length (2), Max_CE_Length (2).
                        var r = ByteReader(params)
                        let handle = try r.readUInt16LE() & 0x0FFF
                        if let i = open[handle] {
                            t.connections[i].parameterRequests.append(ParameterRequest(
                                mark: mark, kind: .hciCommand, byCentral: !t.connections[i].capturedOnPeripheral,
                                intervalMin: try r.readUInt16LE(), intervalMax: try r.readUInt16LE(), latency: try r.readUInt16LE(),
                                supervisionTimeout: try r.readUInt16LE(), accepted: nil))
                        }
                    case Opcode.leRemoteConnectionParameterRequestReply, Opcode.leRemoteConnectionParameterRequestNegativeReply:
                        // 7.8.31: Connection_Handle (2) and the parameters the host accepts; 7.8.32:
                        // Connection_Handle (2), Reason (1). The answer to the peer's latest request.
                        var r = ByteReader(params)
                        let handle = try r.readUInt16LE() & 0x0FFF
                        let accepted = opcode == Opcode.leRemoteConnectionParameterRequestReply
                        let reason = accepted ? nil : HCIStatus(rawValue: try r.readUInt8())
                        if let i = open[handle],
                           let k = t.connections[i].parameterRequests.lastIndex(where: { $0.kind == .remoteLinkLayer && $0.accepted == nil }) {
                            t.connections[i].parameterRequests[k].accepted = accepted
                            t.connections[i].parameterRequests[k].rejection = reason
                            t.connections[i].parameterRequests[k].answered = mark
                        }
                    case Opcode.disconnect:
                        var r = ByteReader(params)
                        let handle = try r.readUInt16LE() & 0x0FFF
                        let reason = HCIStatus(rawValue: try r.readUInt8())
                        if let i = open[handle] {
                            t.connections[i].disconnectRequested = mark
                            t.connections[i].requestedReason = reason
                        }
                    case Opcode.leSetAdvertisingEnable, Opcode.leSetExtendedAdvertisingEnable:
                        if params.first == 1, advertisedOwn == nil { advertisedOwn = mark }
                    case Opcode.leSetAdvertisingParameters:
                        // Core 5.4, Vol 4, Part E, 7.8.5: Interval_Min (2), Interval_Max (2), Type (1), Own_Address_Type (1), …
                        var r = ByteReader(params)
                        advertisingInterval = Int64(try r.readUInt16LE()) * 625
                        _ = try r.readUInt16LE()
                        let type = try r.readUInt8()
                        advertisingConnectable = type == 0x00 || type == 0x01 || type == 0x04
                        ownRandomAddress = try r.readUInt8() & 0x01 == 1
                    case Opcode.leSetAdvertisingData, Opcode.leSetScanResponseData:
                        // 7.8.7, 7.8.8: Data_Length (1), Data (31, only the first Data_Length significant).
                        var r = ByteReader(params)
                        let length = min(Int(try r.readUInt8()), 31)
                        let data = try r.readBytes(count: min(length, r.remaining))
                        if opcode == Opcode.leSetAdvertisingData { advertisingData = data } else { scanResponseData = data }
                    case Opcode.leSetRandomAddress:
                        var r = ByteReader(params)
                        randomAddress = try r.readAddress()
                    case Opcode.leSetAdvertisingSetRandomAddress:
                        // 7.8.52: Advertising_Handle (1), Random_Address (6). One advertising set is assumed.
                        var r = ByteReader(params)
                        try r.skip(1)
                        randomAddress = try r.readAddress()
                    case Opcode.leSetExtendedAdvertisingParameters:
                        // 7.8.53: Advertising_Handle (1), Advertising_Event_Properties (2: bit 0 connectable),
                        // Primary_Advertising_Interval_Min (3), _Max (3), Channel_Map (1), Own_Address_Type (1), …
                        var r = ByteReader(params)
                        try r.skip(1)
                        advertisingConnectable = try r.readUInt16LE() & 0x0001 != 0
                        advertisingInterval = Int64(try r.readUInt24LE()) * 625
                        try r.skip(4)
                        ownRandomAddress = try r.readUInt8() & 0x01 == 1
                    case Opcode.leSetExtendedAdvertisingData, Opcode.leSetExtendedScanResponseData:
                        // 7.8.54, 7.8.55: Advertising_Handle (1), Operation (1: 0 intermediate, 1 first,
                        // 2 last, 3 complete, 4 unchanged), Fragment_Preference (1), Data_Length (1), Data.
                        var r = ByteReader(params)
                        try r.skip(1)
                        let operation = try r.readUInt8()
                        try r.skip(1)
                        let data = try r.readBytes(count: Int(try r.readUInt8()))
                        let isData = opcode == Opcode.leSetExtendedAdvertisingData
                        switch operation {
                        case 0x01, 0x03: if isData { advertisingData = data } else { scanResponseData = data }
                        case 0x00, 0x02: if isData { advertisingData += data } else { scanResponseData = (scanResponseData ?? []) + data }
                        default: break
                        }
                    default: break
                    }
                case let .event(event):
                    switch event {
                    case let .leMeta(.advertisingReport(list)):
                        for r in list {
                            t.reports.append(AdvertisingObservation(
                                mark: mark, address: r.sender, connectable: r.eventType.isConnectable,
                                isScanResponse: r.eventType == .scanRsp, data: r.data, rssi: r.rssi == 127 ? nil : r.rssi, scan: scanning))
                        }
                    case let .leMeta(.unknown(subevent, params)) where subevent == 0x0D:
                        t.reports += try extendedReports(params, mark: mark, scan: scanning)
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
                    case let .leMeta(.unknown(subevent, params)) where subevent == 0x0A || subevent == 0x29:
                        // LE Enhanced Connection Complete (v1 0x0A, v2 0x29; 7.7.65.10): the same fields
                        // with the local and peer resolvable private addresses after the peer's.
                        var r = ByteReader(params)
                        let status = HCIStatus(rawValue: try r.readUInt8())
                        let handle = try r.readUInt16LE()
                        let role = ConnectionRole(rawValue: try r.readUInt8())
                        var type = try r.readUInt8()
                        if type >= 2 && type <= 3 { type -= 2 }   // public / random identity address
                        let address = try r.readAddress()
                        try r.skip(12)
                        let interval = try r.readUInt16LE()
                        let latency = try r.readUInt16LE()
                        let timeout = try r.readUInt16LE()
                        try connected(handle: handle, status: status, role: role, peer: LEAddress(address, type: AddressType(rawValue: type)),
                                      interval: interval, latency: latency, timeout: timeout, mark: mark, packet: p)
                    case let .commandStatus(c) where (c.opcode.rawValue == Opcode.leCreateConnection || c.opcode.rawValue == Opcode.leExtendedCreateConnection)
                        && c.status != .success:
                        // The controller refused the attempt (7.7.15).
                        failed(c.status, at: mark)
                    case let .commandComplete(c) where c.opcode.rawValue == Opcode.readRSSI && c.returnParameters.count == 4 && c.returnParameters[0] == 0:
                        // 7.5.4: Status (1), Handle (2), RSSI (1, signed dBm).
                        var r = ByteReader(c.returnParameters, from: 1)
                        let handle = try r.readUInt16LE() & 0x0FFF
                        let rssi = try r.readInt8()
                        if let i = open[handle], rssi != 127 { t.connections[i].rssiReads.append(RSSIRead(mark: mark, rssi: rssi)) }
                    case let .commandComplete(c) where c.opcode.rawValue == 0x1009 && c.returnParameters.count == 7 && c.returnParameters[0] == 0:
                        var r = ByteReader(c.returnParameters, from: 1)
                        publicAddress = try r.readAddress()
                    case let .disconnectionComplete(d):
                        if let i = open[d.handle], d.status == .success {
                            t.connections[i].disconnected = mark
                            t.connections[i].reason = d.reason
                            open[d.handle] = nil
                            reassembly[d.handle] = nil
                        }
                    default: break
                    }
                case let .acl(acl):
                    guard let i = open[acl.handle] else {
                        note("ACL data on connection 0x\(String(acl.handle, radix: 16)) that the capture never showed being made (first at \(mark)) was ignored")
                        continue
                    }
                    // On a peripheral's capture the central is the other side.
                    let sentHere = p.direction == .hostToController
                    let fromCentral = t.connections[i].capturedOnPeripheral ? !sentHere : sentHere
                    t.connections[i].lastTraffic = mark
                    var state = reassembly[acl.handle]?[fromCentral] ?? Reassembly()
                    var notes = t.connections[i].notes
                    let frame = state.feed(acl.data, boundary: acl.boundary, mark: mark, notes: &notes)
                    t.connections[i].notes = notes
                    reassembly[acl.handle, default: [:]][fromCentral] = state
                    guard let frame else { continue }
                    switch frame.cid {
                    case 0x0004:
                        t.connections[i].att.append(ATTRecord(mark: frame.start, fromCentral: fromCentral, bytes: frame.payload))
                    case 0x0005:
                        signaling(frame.payload, fromCentral: fromCentral, mark: frame.start, connection: &t.connections[i])
                    case 0x0006:
                        let text = "the link was paired or encrypted (SMP, from \(frame.start)); the lab's links are not encrypted, so this is not reproduced"
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
        } else if t.ownAdvertising == nil && t.connections.isEmpty {
            throw CaptureError.nothingToImport(packets: file.packets.count)
        }
        return t
    }

    /// LE signaling (Core 5.4, Vol 3, Part A, 4): Code (1), Identifier (1), Length (2), Data. Only
    /// the Connection Parameter Update Request (0x12: Interval_Min, Interval_Max, Latency, Timeout,
    /// 2 octets each) and its Response (0x13: Result, 0 accepted) matter here; one signaling frame
    /// may carry several commands.
    static func signaling(_ payload: [UInt8], fromCentral: Bool, mark: CaptureMark, connection: inout CapturedConnection) {
        var r = ByteReader(payload)
        while r.remaining >= 4 {
            guard let code = try? r.readUInt8(), (try? r.readUInt8()) != nil, let length = try? r.readUInt16LE(),
                  let data = try? r.readBytes(count: Int(length)) else {
                connection.notes.append("an LE signaling frame at \(mark) does not decode; it is not reproduced")
                return
            }
            var d = ByteReader(data)
            switch code {
            case 0x12:
                guard let min = try? d.readUInt16LE(), let max = try? d.readUInt16LE(), let latency = try? d.readUInt16LE(),
                      let timeout = try? d.readUInt16LE() else { continue }
                connection.parameterRequests.append(ParameterRequest(mark: mark, kind: .l2cap, byCentral: fromCentral, intervalMin: min,
                                                                     intervalMax: max, latency: latency, supervisionTimeout: timeout))
            case 0x13:
                guard let result = try? d.readUInt16LE(),
                      let i = connection.parameterRequests.lastIndex(where: { $0.kind == .l2cap && $0.byCentral != fromCentral }) else { continue }
                connection.parameterRequests[i].accepted = result == 0
                connection.parameterRequests[i].answered = mark
            default:
                continue
            }
        }
    }

    /// LE Extended Advertising Report (Core 5.4, Vol 4, Part E, 7.7.65.13): Num_Reports, then per
    /// report Event_Type (2), Address_Type, Address (6), Primary_PHY, Secondary_PHY,
    /// Advertising_SID, TX_Power, RSSI, Periodic_Advertising_Interval (2), Direct_Address_Type,
    /// Direct_Address (6), Data_Length, Data.
    static func extendedReports(_ params: [UInt8], mark: CaptureMark, scan: Int?) throws -> [AdvertisingObservation] {
        var r = ByteReader(params)
        let n = Int(try r.readUInt8())
        var out: [AdvertisingObservation] = []
        for _ in 0..<n {
            let eventType = try r.readUInt16LE()
            var type = try r.readUInt8()
            if type >= 2 && type <= 3 { type -= 2 }
            let address = try r.readAddress()
            try r.skip(4)                                   // PHYs, SID, TX power
            let rssi = try r.readInt8()
            try r.skip(9)                                   // periodic interval, direct address
            let length = Int(try r.readUInt8())
            let data = try r.readBytes(count: length)
            out.append(AdvertisingObservation(mark: mark, address: LEAddress(address, type: AddressType(rawValue: type)),
                                              connectable: eventType & 0x01 != 0, isScanResponse: eventType & 0x08 != 0,
                                              data: data, rssi: rssi == 127 ? nil : rssi, scan: scan))
        }
        try r.expectEnd()
        return out
    }
}

import BLEWire

/// LE Meta event subevents (Core 5.4, Vol 4, Part E, 7.7.65): Subevent_Code (1) then parameters.
public enum LEMetaEvent: Hashable, Sendable {
    case connectionComplete(LEConnectionComplete)
    case advertisingReport([LEAdvertisingReport])
    case connectionUpdateComplete(LEConnectionUpdateComplete)
    case remoteConnectionParameterRequest(LERemoteConnectionParameterRequest)
    /// 7.7.65.5: Connection_Handle (2), Random_Number (8), Encrypted_Diversifier (2): the central
    /// started encryption; the peripheral's host answers with the key (or a negative reply).
    case longTermKeyRequest(handle: UInt16, random: [UInt8], ediv: UInt16)
    /// [v1] 0x0A or [v2] 0x29, by `version2` (LEExtendedEvents.swift).
    case enhancedConnectionComplete(LEEnhancedConnectionComplete)
    /// 0x0D: Num_Reports (1), then the reports (LEExtendedEvents.swift).
    case extendedAdvertisingReport([LEExtendedAdvertisingReport])
    case unknown(subevent: UInt8, parameters: [UInt8])

    public enum Subevent {
        public static let connectionComplete: UInt8 = 0x01
        public static let advertisingReport: UInt8 = 0x02
        public static let connectionUpdateComplete: UInt8 = 0x03
        public static let longTermKeyRequest: UInt8 = 0x05
        public static let remoteConnectionParameterRequest: UInt8 = 0x06
        public static let enhancedConnectionComplete: UInt8 = 0x0A
        public static let extendedAdvertisingReport: UInt8 = 0x0D
        public static let enhancedConnectionCompleteV2: UInt8 = 0x29
    }

    public var subevent: UInt8 {
        switch self {
        case .connectionComplete: return Subevent.connectionComplete
        case .advertisingReport: return Subevent.advertisingReport
        case .connectionUpdateComplete: return Subevent.connectionUpdateComplete
        case .remoteConnectionParameterRequest: return Subevent.remoteConnectionParameterRequest
        case .longTermKeyRequest: return Subevent.longTermKeyRequest
        case let .enhancedConnectionComplete(e):
            return e.version2 == nil ? Subevent.enhancedConnectionComplete : Subevent.enhancedConnectionCompleteV2
        case .extendedAdvertisingReport: return Subevent.extendedAdvertisingReport
        case let .unknown(code, _): return code
        }
    }

    init(from r: inout ByteReader) throws {
        let sub = try r.readUInt8()
        switch sub {
        case Subevent.connectionComplete:
            self = .connectionComplete(try LEConnectionComplete(from: &r))
        case Subevent.advertisingReport:
            let at = r.offset
            let n = Int(try r.readUInt8())
            guard n >= 1 else { throw DecodeError.invalidValue(field: "Num_Reports", value: 0, at: at) }
            var reports: [LEAdvertisingReport] = []
            for _ in 0..<n { reports.append(try LEAdvertisingReport(from: &r)) }
            self = .advertisingReport(reports)
        case Subevent.connectionUpdateComplete:
            self = .connectionUpdateComplete(try LEConnectionUpdateComplete(from: &r))
        case Subevent.remoteConnectionParameterRequest:
            self = .remoteConnectionParameterRequest(try LERemoteConnectionParameterRequest(from: &r))
        case Subevent.longTermKeyRequest:
            self = .longTermKeyRequest(handle: try r.readUInt16LE(), random: try r.readBytes(count: 8), ediv: try r.readUInt16LE())
        case Subevent.enhancedConnectionComplete, Subevent.enhancedConnectionCompleteV2:
            self = .enhancedConnectionComplete(try LEEnhancedConnectionComplete(from: &r, version2: sub == Subevent.enhancedConnectionCompleteV2))
        case Subevent.extendedAdvertisingReport:
            // Num_Reports 0 is not meaningful but harmless: kept as an empty list.
            let n = Int(try r.readUInt8())
            var reports: [LEExtendedAdvertisingReport] = []
            for _ in 0..<n { reports.append(try LEExtendedAdvertisingReport(from: &r)) }
            self = .extendedAdvertisingReport(reports)
        default:
            self = .unknown(subevent: sub, parameters: r.readRemaining())
        }
    }

    func encode(into w: inout ByteWriter) {
        w.write(subevent)
        switch self {
        case let .connectionComplete(e): e.encode(into: &w)
        case let .advertisingReport(list):
            w.write(UInt8(truncatingIfNeeded: list.count))
            for report in list { report.encode(into: &w) }
        case let .connectionUpdateComplete(e): e.encode(into: &w)
        case let .remoteConnectionParameterRequest(e): e.encode(into: &w)
        case let .longTermKeyRequest(handle, random, ediv):
            w.writeUInt16LE(handle)
            w.write(bytes: random)
            w.writeUInt16LE(ediv)
        case let .enhancedConnectionComplete(e): e.encode(into: &w)
        case let .extendedAdvertisingReport(list):
            w.write(UInt8(truncatingIfNeeded: list.count))
            for report in list { report.encode(into: &w) }
        case let .unknown(_, params): w.write(bytes: params)
        }
    }
}

/// The role a device has in a connection (7.7.65.1 Role).
public struct ConnectionRole: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let central = ConnectionRole(rawValue: 0x00)
    public static let peripheral = ConnectionRole(rawValue: 0x01)
    public var description: String { rawValue == 0 ? "central" : (rawValue == 1 ? "peripheral" : "role 0x\(hex2(rawValue))") }
}

/// 7.7.65.1
///
///     | Status (1) | Connection_Handle (2) | Role (1) | Peer_Address_Type (1) | Peer_Address (6) |
///     | Connection_Interval (2) | Peripheral_Latency (2) | Supervision_Timeout (2) | Central_Clock_Accuracy (1) |
public struct LEConnectionComplete: Hashable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    public var role: ConnectionRole
    public var peerAddressType: AddressType
    public var peerAddress: BDAddr
    /// Units of 1.25 ms.
    public var connectionInterval: UInt16
    public var peripheralLatency: UInt16
    /// Units of 10 ms.
    public var supervisionTimeout: UInt16
    public var centralClockAccuracy: UInt8

    public init(status: HCIStatus = .success, handle: UInt16, role: ConnectionRole, peer: LEAddress,
                connectionInterval: UInt16, peripheralLatency: UInt16 = 0, supervisionTimeout: UInt16,
                centralClockAccuracy: UInt8 = 0) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peer.type
        self.peerAddress = peer.address
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
    }

    public var peer: LEAddress { LEAddress(peerAddress, type: peerAddressType) }

    init(from r: inout ByteReader) throws {
        status = HCIStatus(rawValue: try r.readUInt8())
        // All 16 bits kept (0x0000–0x0EFF is valid): masking would re-encode a different packet.
        handle = try r.readUInt16LE()
        role = ConnectionRole(rawValue: try r.readUInt8())
        peerAddressType = AddressType(rawValue: try r.readUInt8())
        peerAddress = try r.readAddress()
        connectionInterval = try r.readUInt16LE()
        peripheralLatency = try r.readUInt16LE()
        supervisionTimeout = try r.readUInt16LE()
        centralClockAccuracy = try r.readUInt8()
    }

    func encode(into w: inout ByteWriter) {
        w.write(status.rawValue)
        w.writeUInt16LE(handle)
        w.write(role.rawValue)
        w.write(peerAddressType.rawValue)
        w.write(address: peerAddress)
        w.writeUInt16LE(connectionInterval)
        w.writeUInt16LE(peripheralLatency)
        w.writeUInt16LE(supervisionTimeout)
        w.write(centralClockAccuracy)
    }
}

/// Event_Type of an advertising report (7.7.65.2).
public struct AdvertisingReportType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let advInd = AdvertisingReportType(rawValue: 0x00)
    public static let advDirectInd = AdvertisingReportType(rawValue: 0x01)
    public static let advScanInd = AdvertisingReportType(rawValue: 0x02)
    public static let advNonconnInd = AdvertisingReportType(rawValue: 0x03)
    public static let scanRsp = AdvertisingReportType(rawValue: 0x04)

    public var isConnectable: Bool { rawValue == 0x00 || rawValue == 0x01 }
    public var description: String {
        ["ADV_IND", "ADV_DIRECT_IND", "ADV_SCAN_IND", "ADV_NONCONN_IND", "SCAN_RSP"].indices.contains(Int(rawValue))
            ? ["ADV_IND", "ADV_DIRECT_IND", "ADV_SCAN_IND", "ADV_NONCONN_IND", "SCAN_RSP"][Int(rawValue)]
            : "Event_Type 0x\(hex2(rawValue))"
    }
}

/// One report of LE Advertising Report (7.7.65.2). Reports are laid out one after another
/// (Event_Type, Address_Type, Address, Data_Length, Data, RSSI), as controllers send them.
public struct LEAdvertisingReport: Hashable, Sendable {
    public var eventType: AdvertisingReportType
    public var addressType: AddressType
    public var address: BDAddr
    /// The AD structures as octets (≤ 31); GAP parses them.
    public var data: [UInt8]
    /// dBm; 127 means not available.
    public var rssi: Int8

    public init(eventType: AdvertisingReportType, address: LEAddress, data: [UInt8], rssi: Int8) {
        self.eventType = eventType
        self.addressType = address.type
        self.address = address.address
        self.data = data
        self.rssi = rssi
    }

    public var sender: LEAddress { LEAddress(address, type: addressType) }

    init(from r: inout ByteReader) throws {
        eventType = AdvertisingReportType(rawValue: try r.readUInt8())
        addressType = AddressType(rawValue: try r.readUInt8())
        address = try r.readAddress()
        let at = r.offset
        let length = Int(try r.readUInt8())
        guard length <= 31 else { throw DecodeError.invalidValue(field: "Data_Length", value: UInt64(length), at: at) }
        data = try r.readBytes(count: length)
        rssi = try r.readInt8()
    }

    func encode(into w: inout ByteWriter) {
        w.write(eventType.rawValue)
        w.write(addressType.rawValue)
        w.write(address: address)
        w.write(UInt8(truncatingIfNeeded: data.count))
        w.write(bytes: data)
        w.write(rssi)
    }
}

/// 7.7.65.3: Status (1), Connection_Handle (2), Connection_Interval (2), Peripheral_Latency (2),
/// Supervision_Timeout (2).
public struct LEConnectionUpdateComplete: Hashable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    public var connectionInterval: UInt16
    public var peripheralLatency: UInt16
    public var supervisionTimeout: UInt16

    public init(status: HCIStatus = .success, handle: UInt16, connectionInterval: UInt16,
                peripheralLatency: UInt16, supervisionTimeout: UInt16) {
        self.status = status
        self.handle = handle
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
    }

    init(from r: inout ByteReader) throws {
        status = HCIStatus(rawValue: try r.readUInt8())
        // All 16 bits kept (0x0000–0x0EFF is valid): masking would re-encode a different packet.
        handle = try r.readUInt16LE()
        connectionInterval = try r.readUInt16LE()
        peripheralLatency = try r.readUInt16LE()
        supervisionTimeout = try r.readUInt16LE()
    }

    func encode(into w: inout ByteWriter) {
        w.write(status.rawValue)
        w.writeUInt16LE(handle)
        w.writeUInt16LE(connectionInterval)
        w.writeUInt16LE(peripheralLatency)
        w.writeUInt16LE(supervisionTimeout)
    }
}

/// 7.7.65.6: Connection_Handle (2), Interval_Min (2), Interval_Max (2), Max_Latency (2), Timeout (2).
/// The peer's link layer asks for new connection parameters (LL_CONNECTION_PARAM_REQ, Vol 6,
/// Part B, 5.1.7); the host answers with LE Remote Connection Parameter Request Reply or
/// Negative Reply (7.8.31, 7.8.32).
public struct LERemoteConnectionParameterRequest: Hashable, Sendable {
    public var handle: UInt16
    /// Units of 1.25 ms.
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var maxLatency: UInt16
    /// Units of 10 ms.
    public var timeout: UInt16

    public init(handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16, timeout: UInt16) {
        self.handle = handle
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.timeout = timeout
    }

    init(from r: inout ByteReader) throws {
        handle = try r.readUInt16LE()
        intervalMin = try r.readUInt16LE()
        intervalMax = try r.readUInt16LE()
        maxLatency = try r.readUInt16LE()
        timeout = try r.readUInt16LE()
    }

    func encode(into w: inout ByteWriter) {
        w.writeUInt16LE(handle)
        w.writeUInt16LE(intervalMin)
        w.writeUInt16LE(intervalMax)
        w.writeUInt16LE(maxLatency)
        w.writeUInt16LE(timeout)
    }
}

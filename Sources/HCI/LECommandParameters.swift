import BLEWire

/// LE Set Advertising Parameters (Core 5.4, Vol 4, Part E, 7.8.5).
///
///     | Adv_Interval_Min (2) | Adv_Interval_Max (2) | Adv_Type (1) | Own_Address_Type (1) |
///     | Peer_Address_Type (1) | Peer_Address (6) | Adv_Channel_Map (1) | Adv_Filter_Policy (1) |
///
/// Intervals are in units of 0.625 ms (0x0020–0x4000).
public struct LEAdvertisingParameters: Hashable, Sendable {
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var advertisingType: AdvertisingType
    public var ownAddressType: AddressType
    public var peerAddressType: AddressType
    public var peerAddress: BDAddr
    public var channelMap: UInt8
    public var filterPolicy: UInt8

    public init(intervalMin: UInt16 = 0x0800, intervalMax: UInt16 = 0x0800, advertisingType: AdvertisingType = .connectableUndirected,
                ownAddressType: AddressType = .public, peerAddressType: AddressType = .public,
                peerAddress: BDAddr = BDAddr(rawValue: 0), channelMap: UInt8 = 0x07, filterPolicy: UInt8 = 0) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.advertisingType = advertisingType
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.channelMap = channelMap
        self.filterPolicy = filterPolicy
    }

    static let size = 15

    init(from r: inout ByteReader) throws {
        intervalMin = try r.readUInt16LE()
        intervalMax = try r.readUInt16LE()
        advertisingType = AdvertisingType(rawValue: try r.readUInt8())
        ownAddressType = AddressType(rawValue: try r.readUInt8())
        peerAddressType = AddressType(rawValue: try r.readUInt8())
        peerAddress = try r.readAddress()
        channelMap = try r.readUInt8()
        filterPolicy = try r.readUInt8()
    }

    func encode(into w: inout ByteWriter) {
        w.writeUInt16LE(intervalMin)
        w.writeUInt16LE(intervalMax)
        w.write(advertisingType.rawValue)
        w.write(ownAddressType.rawValue)
        w.write(peerAddressType.rawValue)
        w.write(address: peerAddress)
        w.write(channelMap)
        w.write(filterPolicy)
    }
}

/// Advertising_Type of LE Set Advertising Parameters (7.8.5).
public struct AdvertisingType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// ADV_IND
    public static let connectableUndirected = AdvertisingType(rawValue: 0x00)
    /// ADV_DIRECT_IND, high duty cycle
    public static let connectableDirectedHighDuty = AdvertisingType(rawValue: 0x01)
    /// ADV_SCAN_IND
    public static let scannableUndirected = AdvertisingType(rawValue: 0x02)
    /// ADV_NONCONN_IND
    public static let nonConnectableUndirected = AdvertisingType(rawValue: 0x03)
    /// ADV_DIRECT_IND, low duty cycle
    public static let connectableDirectedLowDuty = AdvertisingType(rawValue: 0x04)

    public var isConnectable: Bool { rawValue == 0x00 || rawValue == 0x01 || rawValue == 0x04 }
    public var isScannable: Bool { rawValue == 0x00 || rawValue == 0x02 }
    public var isDirected: Bool { rawValue == 0x01 || rawValue == 0x04 }

    public var description: String {
        switch rawValue {
        case 0x00: return "ADV_IND"
        case 0x01: return "ADV_DIRECT_IND (high duty)"
        case 0x02: return "ADV_SCAN_IND"
        case 0x03: return "ADV_NONCONN_IND"
        case 0x04: return "ADV_DIRECT_IND (low duty)"
        default: return "Advertising_Type 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// LE Set Scan Parameters (7.8.10).
///
///     | LE_Scan_Type (1) | LE_Scan_Interval (2) | LE_Scan_Window (2) | Own_Address_Type (1) | Scanning_Filter_Policy (1) |
///
/// Interval and window in units of 0.625 ms (0x0004–0x4000), window ≤ interval.
public struct LEScanParameters: Hashable, Sendable {
    /// 0x00 passive, 0x01 active (sends SCAN_REQ for scan responses).
    public var scanType: UInt8
    public var interval: UInt16
    public var window: UInt16
    public var ownAddressType: AddressType
    public var filterPolicy: UInt8

    public init(active: Bool = true, interval: UInt16 = 0x0010, window: UInt16 = 0x0010,
                ownAddressType: AddressType = .public, filterPolicy: UInt8 = 0) {
        self.scanType = active ? 1 : 0
        self.interval = interval
        self.window = window
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
    }

    public var isActive: Bool { scanType == 1 }

    static let size = 7

    init(from r: inout ByteReader) throws {
        scanType = try r.readUInt8()
        interval = try r.readUInt16LE()
        window = try r.readUInt16LE()
        ownAddressType = AddressType(rawValue: try r.readUInt8())
        filterPolicy = try r.readUInt8()
    }

    func encode(into w: inout ByteWriter) {
        w.write(scanType)
        w.writeUInt16LE(interval)
        w.writeUInt16LE(window)
        w.write(ownAddressType.rawValue)
        w.write(filterPolicy)
    }
}

/// LE Create Connection (7.8.12).
///
///     | LE_Scan_Interval (2) | LE_Scan_Window (2) | Initiator_Filter_Policy (1) | Peer_Address_Type (1) |
///     | Peer_Address (6) | Own_Address_Type (1) | Connection_Interval_Min (2) | Connection_Interval_Max (2) |
///     | Max_Latency (2) | Supervision_Timeout (2) | Min_CE_Length (2) | Max_CE_Length (2) |
///
/// Connection intervals in units of 1.25 ms (0x0006–0x0C80), supervision timeout in 10 ms units
/// (0x000A–0x0C80), which must exceed (1 + latency) × interval × 2.
public struct LECreateConnectionParameters: Hashable, Sendable {
    public var scanInterval: UInt16
    public var scanWindow: UInt16
    public var initiatorFilterPolicy: UInt8
    public var peerAddressType: AddressType
    public var peerAddress: BDAddr
    public var ownAddressType: AddressType
    public var connectionIntervalMin: UInt16
    public var connectionIntervalMax: UInt16
    public var maxLatency: UInt16
    public var supervisionTimeout: UInt16
    public var minCELength: UInt16
    public var maxCELength: UInt16

    public init(peer: LEAddress, ownAddressType: AddressType = .public, scanInterval: UInt16 = 0x0060,
                scanWindow: UInt16 = 0x0060, connectionIntervalMin: UInt16 = 0x0018, connectionIntervalMax: UInt16 = 0x0028,
                maxLatency: UInt16 = 0, supervisionTimeout: UInt16 = 0x01F4, minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.initiatorFilterPolicy = 0
        self.peerAddressType = peer.type
        self.peerAddress = peer.address
        self.ownAddressType = ownAddressType
        self.connectionIntervalMin = connectionIntervalMin
        self.connectionIntervalMax = connectionIntervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }

    public var peer: LEAddress { LEAddress(peerAddress, type: peerAddressType) }

    static let size = 25

    init(from r: inout ByteReader) throws {
        scanInterval = try r.readUInt16LE()
        scanWindow = try r.readUInt16LE()
        initiatorFilterPolicy = try r.readUInt8()
        peerAddressType = AddressType(rawValue: try r.readUInt8())
        peerAddress = try r.readAddress()
        ownAddressType = AddressType(rawValue: try r.readUInt8())
        connectionIntervalMin = try r.readUInt16LE()
        connectionIntervalMax = try r.readUInt16LE()
        maxLatency = try r.readUInt16LE()
        supervisionTimeout = try r.readUInt16LE()
        minCELength = try r.readUInt16LE()
        maxCELength = try r.readUInt16LE()
    }

    func encode(into w: inout ByteWriter) {
        w.writeUInt16LE(scanInterval)
        w.writeUInt16LE(scanWindow)
        w.write(initiatorFilterPolicy)
        w.write(peerAddressType.rawValue)
        w.write(address: peerAddress)
        w.write(ownAddressType.rawValue)
        w.writeUInt16LE(connectionIntervalMin)
        w.writeUInt16LE(connectionIntervalMax)
        w.writeUInt16LE(maxLatency)
        w.writeUInt16LE(supervisionTimeout)
        w.writeUInt16LE(minCELength)
        w.writeUInt16LE(maxCELength)
    }
}

/// LE Connection Update (7.8.18).
///
///     | Connection_Handle (2) | Connection_Interval_Min (2) | Connection_Interval_Max (2) |
///     | Max_Latency (2) | Supervision_Timeout (2) | Min_CE_Length (2) | Max_CE_Length (2) |
public struct LEConnectionUpdateParameters: Hashable, Sendable {
    public var handle: UInt16
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var maxLatency: UInt16
    public var supervisionTimeout: UInt16
    public var minCELength: UInt16
    public var maxCELength: UInt16

    public init(handle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16,
                supervisionTimeout: UInt16, minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.handle = handle
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }

    static let size = 14

    init(from r: inout ByteReader) throws {
        handle = try r.readUInt16LE()
        intervalMin = try r.readUInt16LE()
        intervalMax = try r.readUInt16LE()
        maxLatency = try r.readUInt16LE()
        supervisionTimeout = try r.readUInt16LE()
        minCELength = try r.readUInt16LE()
        maxCELength = try r.readUInt16LE()
    }

    func encode(into w: inout ByteWriter) {
        w.writeUInt16LE(handle)
        w.writeUInt16LE(intervalMin)
        w.writeUInt16LE(intervalMax)
        w.writeUInt16LE(maxLatency)
        w.writeUInt16LE(supervisionTimeout)
        w.writeUInt16LE(minCELength)
        w.writeUInt16LE(maxCELength)
    }
}

/// Checks shared by the controller and the host on connection parameters (7.8.12, 7.8.18):
/// interval 0x0006–0x0C80, min ≤ max, latency ≤ 0x01F3, timeout 0x000A–0x0C80 and
/// timeout × 10 ms > (1 + latency) × interval_max × 1.25 ms × 2.
public func connectionParametersAreValid(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16) -> Bool {
    guard (0x0006...0x0C80).contains(intervalMin), (0x0006...0x0C80).contains(intervalMax), intervalMin <= intervalMax,
          latency <= 0x01F3, (0x000A...0x0C80).contains(timeout) else { return false }
    // Compare in units of 0.25 ms: timeout*10ms = timeout*40; (1+lat)*max*1.25ms*2 = (1+lat)*max*10.
    return UInt32(timeout) * 40 > (1 + UInt32(latency)) * UInt32(intervalMax) * 10
}

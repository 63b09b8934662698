import BLEWire

// Parameters of the LE extended advertising, scanning and initiating commands (Core 5.4, Vol 4,
// Part E, 7.8.52–7.8.66): what hosts on Bluetooth 5 controllers send instead of the legacy
// commands. BLELab's sim does not implement them (it answers Unknown HCI Command); the codecs
// serve captures of other stacks (`blelab import`) and descriptions of their traffic.

/// Advertising_Event_Properties of LE Set Extended Advertising Parameters (7.8.53).
public struct AdvertisingEventProperties: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let connectable = AdvertisingEventProperties(rawValue: 1 << 0)
    public static let scannable = AdvertisingEventProperties(rawValue: 1 << 1)
    public static let directed = AdvertisingEventProperties(rawValue: 1 << 2)
    public static let highDutyCycleDirected = AdvertisingEventProperties(rawValue: 1 << 3)
    /// Use legacy advertising PDUs.
    public static let legacy = AdvertisingEventProperties(rawValue: 1 << 4)
    public static let anonymous = AdvertisingEventProperties(rawValue: 1 << 5)
    public static let includeTxPower = AdvertisingEventProperties(rawValue: 1 << 6)

    public func contains(_ p: AdvertisingEventProperties) -> Bool { rawValue & p.rawValue == p.rawValue }
}

/// LE Set Extended Advertising Parameters [v1] (7.8.53), 25 octets:
///
///     | Advertising_Handle (1) | Advertising_Event_Properties (2) |
///     | Primary_Advertising_Interval_Min (3) | Primary_Advertising_Interval_Max (3) |
///     | Primary_Advertising_Channel_Map (1) | Own_Address_Type (1) | Peer_Address_Type (1) |
///     | Peer_Address (6) | Advertising_Filter_Policy (1) | Advertising_TX_Power (1) |
///     | Primary_Advertising_PHY (1) | Secondary_Advertising_Max_Skip (1) |
///     | Secondary_Advertising_PHY (1) | Advertising_SID (1) | Scan_Request_Notification_Enable (1) |
///
/// Intervals in units of 0.625 ms (0x000020–0xFFFFFF).
public struct LEExtendedAdvertisingParameters: Hashable, Sendable {
    public var advertisingHandle: UInt8
    public var eventProperties: AdvertisingEventProperties
    public var intervalMin: UInt32
    public var intervalMax: UInt32
    public var channelMap: UInt8
    public var ownAddressType: AddressType
    public var peerAddressType: AddressType
    public var peerAddress: BDAddr
    public var filterPolicy: UInt8
    /// dBm; 127 (0x7F): the host has no preference.
    public var txPower: Int8
    public var primaryPHY: UInt8
    public var secondaryMaxSkip: UInt8
    public var secondaryPHY: UInt8
    public var advertisingSID: UInt8
    public var scanRequestNotificationEnable: Bool

    public init(advertisingHandle: UInt8 = 0, eventProperties: AdvertisingEventProperties, intervalMin: UInt32, intervalMax: UInt32,
                channelMap: UInt8 = 0x07, ownAddressType: AddressType = .public, peerAddressType: AddressType = .public,
                peerAddress: BDAddr = BDAddr(rawValue: 0), filterPolicy: UInt8 = 0, txPower: Int8 = 127, primaryPHY: UInt8 = 1,
                secondaryMaxSkip: UInt8 = 0, secondaryPHY: UInt8 = 1, advertisingSID: UInt8 = 0, scanRequestNotificationEnable: Bool = false) {
        self.advertisingHandle = advertisingHandle
        self.eventProperties = eventProperties
        self.intervalMin = intervalMin & 0xFF_FFFF
        self.intervalMax = intervalMax & 0xFF_FFFF
        self.channelMap = channelMap
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.filterPolicy = filterPolicy
        self.txPower = txPower
        self.primaryPHY = primaryPHY
        self.secondaryMaxSkip = secondaryMaxSkip
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.scanRequestNotificationEnable = scanRequestNotificationEnable
    }

    static let size = 25

    init(from r: inout ByteReader) throws {
        advertisingHandle = try r.readUInt8()
        eventProperties = AdvertisingEventProperties(rawValue: try r.readUInt16LE())
        intervalMin = try r.readUInt24LE()
        intervalMax = try r.readUInt24LE()
        channelMap = try r.readUInt8()
        ownAddressType = AddressType(rawValue: try r.readUInt8())
        peerAddressType = AddressType(rawValue: try r.readUInt8())
        peerAddress = try r.readAddress()
        filterPolicy = try r.readUInt8()
        txPower = try r.readInt8()
        primaryPHY = try r.readUInt8()
        secondaryMaxSkip = try r.readUInt8()
        secondaryPHY = try r.readUInt8()
        advertisingSID = try r.readUInt8()
        scanRequestNotificationEnable = try readFlag(&r, "Scan_Request_Notification_Enable")
    }

    func encode(into w: inout ByteWriter) {
        w.write(advertisingHandle)
        w.writeUInt16LE(eventProperties.rawValue)
        w.writeUInt24LE(intervalMin)
        w.writeUInt24LE(intervalMax)
        w.write(channelMap)
        w.write(ownAddressType.rawValue)
        w.write(peerAddressType.rawValue)
        w.write(address: peerAddress)
        w.write(filterPolicy)
        w.write(txPower)
        w.write(primaryPHY)
        w.write(secondaryMaxSkip)
        w.write(secondaryPHY)
        w.write(advertisingSID)
        w.write(UInt8(scanRequestNotificationEnable ? 1 : 0))
    }
}

/// Operation of LE Set Extended Advertising Data / Scan Response Data (7.8.54, 7.8.55).
public struct AdvertisingDataOperation: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let intermediateFragment = AdvertisingDataOperation(rawValue: 0x00)
    public static let firstFragment = AdvertisingDataOperation(rawValue: 0x01)
    public static let lastFragment = AdvertisingDataOperation(rawValue: 0x02)
    public static let complete = AdvertisingDataOperation(rawValue: 0x03)
    /// Advertising data only: keep the data, change the Advertising DID.
    public static let unchanged = AdvertisingDataOperation(rawValue: 0x04)

    public var description: String {
        switch rawValue {
        case 0x00: return "intermediate fragment"
        case 0x01: return "first fragment"
        case 0x02: return "last fragment"
        case 0x03: return "complete"
        case 0x04: return "unchanged"
        default: return "Operation 0x\(hex2(rawValue))"
        }
    }
}

/// LE Set Extended Advertising Data (7.8.54) and LE Set Extended Scan Response Data (7.8.55):
///
///     | Advertising_Handle (1) | Operation (1) | Fragment_Preference (1) | Data_Length (1) | Data (Data_Length ≤ 251) |
public struct LEExtendedAdvertisingData: Hashable, Sendable {
    public var advertisingHandle: UInt8
    public var operation: AdvertisingDataOperation
    /// 0x00: the controller may fragment; 0x01: it should not.
    public var fragmentPreference: UInt8
    public var data: [UInt8]

    public init(advertisingHandle: UInt8 = 0, operation: AdvertisingDataOperation = .complete, fragmentPreference: UInt8 = 0x01, data: [UInt8]) {
        self.advertisingHandle = advertisingHandle
        self.operation = operation
        self.fragmentPreference = fragmentPreference
        self.data = data
    }

    init(from r: inout ByteReader) throws {
        advertisingHandle = try r.readUInt8()
        operation = AdvertisingDataOperation(rawValue: try r.readUInt8())
        fragmentPreference = try r.readUInt8()
        let at = r.offset
        let length = Int(try r.readUInt8())
        guard length <= 251 else { throw DecodeError.invalidValue(field: "Advertising_Data_Length", value: UInt64(length), at: at) }
        guard length == r.remaining else {
            throw DecodeError.lengthMismatch(field: "Advertising_Data_Length", declared: length, actual: r.remaining)
        }
        data = try r.readBytes(count: length)
    }

    func encode(into w: inout ByteWriter) {
        w.write(advertisingHandle)
        w.write(operation.rawValue)
        w.write(fragmentPreference)
        w.write(UInt8(truncatingIfNeeded: data.count))
        w.write(bytes: data)
    }
}

/// One advertising set of LE Set Extended Advertising Enable (7.8.56): Advertising_Handle (1),
/// Duration (2, units of 10 ms, 0: until disabled), Max_Extended_Advertising_Events (1, 0: no limit).
public struct AdvertisingSetEnable: Hashable, Sendable {
    public var advertisingHandle: UInt8
    public var duration: UInt16
    public var maxExtendedAdvertisingEvents: UInt8

    public init(advertisingHandle: UInt8 = 0, duration: UInt16 = 0, maxExtendedAdvertisingEvents: UInt8 = 0) {
        self.advertisingHandle = advertisingHandle
        self.duration = duration
        self.maxExtendedAdvertisingEvents = maxExtendedAdvertisingEvents
    }
}

/// LE Set Extended Advertising Enable (7.8.56):
///
///     | Enable (1) | Num_Sets (1) | per set: Advertising_Handle (1), Duration (2), Max_Extended_Advertising_Events (1) |
///
/// The sets are laid out one after another, as hosts send them. Num_Sets 0 with Enable 0
/// disables every set.
public struct LEExtendedAdvertisingEnable: Hashable, Sendable {
    public var enable: Bool
    public var sets: [AdvertisingSetEnable]

    public init(enable: Bool, sets: [AdvertisingSetEnable]) {
        self.enable = enable
        self.sets = sets
    }

    init(from r: inout ByteReader) throws {
        enable = try readFlag(&r, "Enable")
        let n = Int(try r.readUInt8())
        guard r.remaining == n * 4 else {
            throw DecodeError.lengthMismatch(field: "LE Set Extended Advertising Enable (Num_Sets \(n))", declared: n * 4, actual: r.remaining)
        }
        var sets: [AdvertisingSetEnable] = []
        for _ in 0..<n {
            sets.append(AdvertisingSetEnable(advertisingHandle: try r.readUInt8(), duration: try r.readUInt16LE(),
                                             maxExtendedAdvertisingEvents: try r.readUInt8()))
        }
        self.sets = sets
    }

    func encode(into w: inout ByteWriter) {
        w.write(UInt8(enable ? 1 : 0))
        w.write(UInt8(truncatingIfNeeded: sets.count))
        for set in sets {
            w.write(set.advertisingHandle)
            w.writeUInt16LE(set.duration)
            w.write(set.maxExtendedAdvertisingEvents)
        }
    }
}

/// The PHYs of LE Set Extended Scan Parameters (Scanning_PHYs, 7.8.64) and LE Extended Create
/// Connection (Initiating_PHYs, 7.8.66): one bit per PHY; one parameter block follows per bit
/// set, lowest bit first; at least one bit is set.
public struct LEPHYs: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let le1M = LEPHYs(rawValue: 1 << 0)
    /// Initiating only.
    public static let le2M = LEPHYs(rawValue: 1 << 1)
    public static let leCoded = LEPHYs(rawValue: 1 << 2)

    /// How many parameter blocks follow.
    public var count: Int { rawValue.nonzeroBitCount }
}

/// One PHY's block of LE Set Extended Scan Parameters (7.8.64): Scan_Type (1), Scan_Interval (2),
/// Scan_Window (2), intervals in units of 0.625 ms.
public struct ExtendedScanPHYParameters: Hashable, Sendable {
    /// 0x00 passive, 0x01 active.
    public var scanType: UInt8
    public var interval: UInt16
    public var window: UInt16

    public init(active: Bool, interval: UInt16, window: UInt16) {
        self.scanType = active ? 1 : 0
        self.interval = interval
        self.window = window
    }

    public var isActive: Bool { scanType == 1 }
}

/// LE Set Extended Scan Parameters (7.8.64):
///
///     | Own_Address_Type (1) | Scanning_Filter_Policy (1) | Scanning_PHYs (1) |
///     | per PHY: Scan_Type (1), Scan_Interval (2), Scan_Window (2) |
public struct LEExtendedScanParameters: Hashable, Sendable {
    public var ownAddressType: AddressType
    public var filterPolicy: UInt8
    public var phys: LEPHYs
    /// One per bit of `phys`, lowest bit first.
    public var perPHY: [ExtendedScanPHYParameters]

    public init(ownAddressType: AddressType = .public, filterPolicy: UInt8 = 0, phys: LEPHYs = .le1M, perPHY: [ExtendedScanPHYParameters]) {
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
        self.phys = phys
        self.perPHY = perPHY
    }

    init(from r: inout ByteReader) throws {
        ownAddressType = AddressType(rawValue: try r.readUInt8())
        filterPolicy = try r.readUInt8()
        let at = r.offset
        phys = LEPHYs(rawValue: try r.readUInt8())
        // "The Host shall set at least one bit in this parameter."
        guard phys.count > 0 else { throw DecodeError.invalidValue(field: "Scanning_PHYs", value: 0, at: at) }
        guard r.remaining == phys.count * 5 else {
            throw DecodeError.lengthMismatch(field: "LE Set Extended Scan Parameters (Scanning_PHYs 0x\(hex2(phys.rawValue)))",
                                             declared: phys.count * 5, actual: r.remaining)
        }
        var blocks: [ExtendedScanPHYParameters] = []
        for _ in 0..<phys.count {
            let type = try r.readUInt8()
            var block = ExtendedScanPHYParameters(active: false, interval: try r.readUInt16LE(), window: try r.readUInt16LE())
            block.scanType = type
            blocks.append(block)
        }
        perPHY = blocks
    }

    func encode(into w: inout ByteWriter) {
        w.write(ownAddressType.rawValue)
        w.write(filterPolicy)
        w.write(phys.rawValue)
        for block in perPHY {
            w.write(block.scanType)
            w.writeUInt16LE(block.interval)
            w.writeUInt16LE(block.window)
        }
    }
}

/// LE Set Extended Scan Enable (7.8.65):
///
///     | Enable (1) | Filter_Duplicates (1) | Duration (2, units of 10 ms) | Period (2, units of 1.28 s) |
public struct LEExtendedScanEnable: Hashable, Sendable {
    public var enable: Bool
    /// 0x00 off, 0x01 on, 0x02 on and reset each scan period.
    public var filterDuplicates: UInt8
    public var duration: UInt16
    public var period: UInt16

    public init(enable: Bool, filterDuplicates: UInt8 = 0, duration: UInt16 = 0, period: UInt16 = 0) {
        self.enable = enable
        self.filterDuplicates = filterDuplicates
        self.duration = duration
        self.period = period
    }

    static let size = 6

    init(from r: inout ByteReader) throws {
        enable = try readFlag(&r, "Enable")
        filterDuplicates = try r.readUInt8()
        duration = try r.readUInt16LE()
        period = try r.readUInt16LE()
    }

    func encode(into w: inout ByteWriter) {
        w.write(UInt8(enable ? 1 : 0))
        w.write(filterDuplicates)
        w.writeUInt16LE(duration)
        w.writeUInt16LE(period)
    }
}

/// One PHY's block of LE Extended Create Connection (7.8.66), 16 octets: Scan_Interval (2),
/// Scan_Window (2), Connection_Interval_Min (2), Connection_Interval_Max (2), Max_Latency (2),
/// Supervision_Timeout (2), Min_CE_Length (2), Max_CE_Length (2). Units as LE Create Connection's.
public struct ExtendedInitiatingPHYParameters: Hashable, Sendable {
    public var scanInterval: UInt16
    public var scanWindow: UInt16
    public var connectionIntervalMin: UInt16
    public var connectionIntervalMax: UInt16
    public var maxLatency: UInt16
    public var supervisionTimeout: UInt16
    public var minCELength: UInt16
    public var maxCELength: UInt16

    public init(scanInterval: UInt16, scanWindow: UInt16, connectionIntervalMin: UInt16, connectionIntervalMax: UInt16,
                maxLatency: UInt16 = 0, supervisionTimeout: UInt16, minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.connectionIntervalMin = connectionIntervalMin
        self.connectionIntervalMax = connectionIntervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }
}

/// LE Extended Create Connection [v1] (7.8.66):
///
///     | Initiator_Filter_Policy (1) | Own_Address_Type (1) | Peer_Address_Type (1) | Peer_Address (6) |
///     | Initiating_PHYs (1) | per PHY: the 16 octets of `ExtendedInitiatingPHYParameters` |
public struct LEExtendedCreateConnectionParameters: Hashable, Sendable {
    /// 0x00: connect to `peerAddress`; 0x01: to any device on the Filter Accept List.
    public var initiatorFilterPolicy: UInt8
    public var ownAddressType: AddressType
    public var peerAddressType: AddressType
    public var peerAddress: BDAddr
    public var phys: LEPHYs
    /// One per bit of `phys`, lowest bit first.
    public var perPHY: [ExtendedInitiatingPHYParameters]

    public init(initiatorFilterPolicy: UInt8 = 0, ownAddressType: AddressType = .public, peer: LEAddress,
                phys: LEPHYs = .le1M, perPHY: [ExtendedInitiatingPHYParameters]) {
        self.initiatorFilterPolicy = initiatorFilterPolicy
        self.ownAddressType = ownAddressType
        self.peerAddressType = peer.type
        self.peerAddress = peer.address
        self.phys = phys
        self.perPHY = perPHY
    }

    public var peer: LEAddress { LEAddress(peerAddress, type: peerAddressType) }

    init(from r: inout ByteReader) throws {
        initiatorFilterPolicy = try r.readUInt8()
        ownAddressType = AddressType(rawValue: try r.readUInt8())
        peerAddressType = AddressType(rawValue: try r.readUInt8())
        peerAddress = try r.readAddress()
        let at = r.offset
        phys = LEPHYs(rawValue: try r.readUInt8())
        // "The Host shall set at least one bit in this parameter."
        guard phys.count > 0 else { throw DecodeError.invalidValue(field: "Initiating_PHYs", value: 0, at: at) }
        guard r.remaining == phys.count * 16 else {
            throw DecodeError.lengthMismatch(field: "LE Extended Create Connection (Initiating_PHYs 0x\(hex2(phys.rawValue)))",
                                             declared: phys.count * 16, actual: r.remaining)
        }
        var blocks: [ExtendedInitiatingPHYParameters] = []
        for _ in 0..<phys.count {
            blocks.append(ExtendedInitiatingPHYParameters(
                scanInterval: try r.readUInt16LE(), scanWindow: try r.readUInt16LE(),
                connectionIntervalMin: try r.readUInt16LE(), connectionIntervalMax: try r.readUInt16LE(),
                maxLatency: try r.readUInt16LE(), supervisionTimeout: try r.readUInt16LE(),
                minCELength: try r.readUInt16LE(), maxCELength: try r.readUInt16LE()))
        }
        perPHY = blocks
    }

    func encode(into w: inout ByteWriter) {
        w.write(initiatorFilterPolicy)
        w.write(ownAddressType.rawValue)
        w.write(peerAddressType.rawValue)
        w.write(address: peerAddress)
        w.write(phys.rawValue)
        for b in perPHY {
            w.writeUInt16LE(b.scanInterval)
            w.writeUInt16LE(b.scanWindow)
            w.writeUInt16LE(b.connectionIntervalMin)
            w.writeUInt16LE(b.connectionIntervalMax)
            w.writeUInt16LE(b.maxLatency)
            w.writeUInt16LE(b.supervisionTimeout)
            w.writeUInt16LE(b.minCELength)
            w.writeUInt16LE(b.maxCELength)
        }
    }
}

/// A one-octet boolean field (0x00 or 0x01; anything else is invalid).
func readFlag(_ r: inout ByteReader, _ field: String) throws -> Bool {
    let at = r.offset
    let v = try r.readUInt8()
    guard v <= 1 else { throw DecodeError.invalidValue(field: field, value: UInt64(v), at: at) }
    return v == 1
}

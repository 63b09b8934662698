import BLEWire

// The LE Meta subevents of Bluetooth 5 controllers (Core 5.4, Vol 4, Part E, 7.7.65): LE Enhanced
// Connection Complete and LE Extended Advertising Report. BLELab's sim does not raise them; other
// controllers do once their host unmasks them, and captures of such hosts carry them.

/// LE Enhanced Connection Complete, [v1] subevent 0x0A and [v2] subevent 0x29 (7.7.65.10):
///
///     | Status (1) | Connection_Handle (2) | Role (1) | Peer_Address_Type (1) | Peer_Address (6) |
///     | Local_Resolvable_Private_Address (6) | Peer_Resolvable_Private_Address (6) |
///     | Connection_Interval (2) | Peripheral_Latency (2) | Supervision_Timeout (2) | Central_Clock_Accuracy (1) |
///     [v2 only: | Advertising_Handle (1) | Sync_Handle (2) |]
///
/// Peer_Address_Type 0x02 and 0x03 say the controller resolved the peer's private address to
/// its public or random (static) identity address (`peerIdentity`).
public struct LEEnhancedConnectionComplete: Hashable, Sendable {
    /// The fields [v2] adds: which advertising set (or periodic advertising train) the
    /// connection came from; 0xFF / 0x0FFF when none.
    public struct Version2Fields: Hashable, Sendable {
        public var advertisingHandle: UInt8
        public var syncHandle: UInt16
        public init(advertisingHandle: UInt8 = 0xFF, syncHandle: UInt16 = 0x0FFF) {
            self.advertisingHandle = advertisingHandle
            self.syncHandle = syncHandle
        }
    }

    public var status: HCIStatus
    public var handle: UInt16
    public var role: ConnectionRole
    public var peerAddressType: AddressType
    public var peerAddress: BDAddr
    public var localResolvablePrivateAddress: BDAddr
    public var peerResolvablePrivateAddress: BDAddr
    /// Units of 1.25 ms.
    public var connectionInterval: UInt16
    public var peripheralLatency: UInt16
    /// Units of 10 ms.
    public var supervisionTimeout: UInt16
    public var centralClockAccuracy: UInt8
    /// Present in [v2] (subevent 0x29), nil in [v1] (0x0A).
    public var version2: Version2Fields?

    public init(status: HCIStatus = .success, handle: UInt16, role: ConnectionRole, peerAddressType: AddressType, peerAddress: BDAddr,
                localResolvablePrivateAddress: BDAddr = BDAddr(rawValue: 0), peerResolvablePrivateAddress: BDAddr = BDAddr(rawValue: 0),
                connectionInterval: UInt16, peripheralLatency: UInt16 = 0, supervisionTimeout: UInt16,
                centralClockAccuracy: UInt8 = 0, version2: Version2Fields? = nil) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.localResolvablePrivateAddress = localResolvablePrivateAddress
        self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
        self.version2 = version2
    }

    /// The peer by its identity: a resolved address (type 0x02 / 0x03) as the public or random
    /// address it stands for.
    public var peerIdentity: LEAddress { LEAddress(peerAddress, type: peerAddressType.identity) }

    static let sizeV1 = 30
    static let sizeV2 = 33

    init(from r: inout ByteReader, version2 isV2: Bool) throws {
        let expected = isV2 ? Self.sizeV2 : Self.sizeV1
        guard r.remaining == expected else {
            throw DecodeError.lengthMismatch(field: "LE Enhanced Connection Complete [v\(isV2 ? 2 : 1)]", declared: expected, actual: r.remaining)
        }
        status = HCIStatus(rawValue: try r.readUInt8())
        handle = try r.readUInt16LE()
        role = ConnectionRole(rawValue: try r.readUInt8())
        peerAddressType = AddressType(rawValue: try r.readUInt8())
        peerAddress = try r.readAddress()
        localResolvablePrivateAddress = try r.readAddress()
        peerResolvablePrivateAddress = try r.readAddress()
        connectionInterval = try r.readUInt16LE()
        peripheralLatency = try r.readUInt16LE()
        supervisionTimeout = try r.readUInt16LE()
        centralClockAccuracy = try r.readUInt8()
        version2 = isV2 ? Version2Fields(advertisingHandle: try r.readUInt8(), syncHandle: try r.readUInt16LE()) : nil
    }

    func encode(into w: inout ByteWriter) {
        w.write(status.rawValue)
        w.writeUInt16LE(handle)
        w.write(role.rawValue)
        w.write(peerAddressType.rawValue)
        w.write(address: peerAddress)
        w.write(address: localResolvablePrivateAddress)
        w.write(address: peerResolvablePrivateAddress)
        w.writeUInt16LE(connectionInterval)
        w.writeUInt16LE(peripheralLatency)
        w.writeUInt16LE(supervisionTimeout)
        w.write(centralClockAccuracy)
        if let v2 = version2 {
            w.write(v2.advertisingHandle)
            w.writeUInt16LE(v2.syncHandle)
        }
    }
}

extension AddressType {
    /// The address type an identity address stands for: Public Identity Address (0x02) is
    /// public, Random (static) Identity Address (0x03) random (7.7.65.10, 7.7.65.13); others as they are.
    public var identity: AddressType {
        rawValue == 0x02 || rawValue == 0x03 ? AddressType(rawValue: rawValue - 2) : self
    }
}

/// Event_Type of LE Extended Advertising Report (7.7.65.13): bits 0–4 say connectable,
/// scannable, directed, scan response, legacy PDU; bits 5–6 the data status.
public struct ExtendedAdvertisingEventType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let connectable = ExtendedAdvertisingEventType(rawValue: 1 << 0)
    public static let scannable = ExtendedAdvertisingEventType(rawValue: 1 << 1)
    public static let directed = ExtendedAdvertisingEventType(rawValue: 1 << 2)
    public static let scanResponse = ExtendedAdvertisingEventType(rawValue: 1 << 3)
    public static let legacy = ExtendedAdvertisingEventType(rawValue: 1 << 4)

    public var isConnectable: Bool { rawValue & Self.connectable.rawValue != 0 }
    public var isScanResponse: Bool { rawValue & Self.scanResponse.rawValue != 0 }
    /// Data_Status (bits 5–6): 0 complete, 1 incomplete with more to come, 2 incomplete and truncated.
    public var dataStatus: UInt8 { UInt8(rawValue >> 5 & 0x3) }

    public var description: String {
        var parts: [String] = []
        if rawValue & 0x01 != 0 { parts.append("connectable") }
        if rawValue & 0x02 != 0 { parts.append("scannable") }
        if rawValue & 0x04 != 0 { parts.append("directed") }
        if rawValue & 0x08 != 0 { parts.append("scan response") }
        if rawValue & 0x10 != 0 { parts.append("legacy") }
        switch dataStatus {
        case 1: parts.append("incomplete")
        case 2: parts.append("truncated")
        default: break
        }
        return parts.isEmpty ? "non-connectable" : parts.joined(separator: " ")
    }
}

/// One report of LE Extended Advertising Report (7.7.65.13), 24 octets and the data:
///
///     | Event_Type (2) | Address_Type (1) | Address (6) | Primary_PHY (1) | Secondary_PHY (1) |
///     | Advertising_SID (1) | TX_Power (1) | RSSI (1) | Periodic_Advertising_Interval (2) |
///     | Direct_Address_Type (1) | Direct_Address (6) | Data_Length (1) | Data (Data_Length) |
///
/// Reports follow one another after Num_Reports, as controllers send them.
public struct LEExtendedAdvertisingReport: Hashable, Sendable {
    public var eventType: ExtendedAdvertisingEventType
    /// 0x00–0x03 as in LE Enhanced Connection Complete; 0xFF: anonymous.
    public var addressType: AddressType
    public var address: BDAddr
    public var primaryPHY: UInt8
    /// 0x00: no packets on the secondary channel.
    public var secondaryPHY: UInt8
    /// 0xFF: no ADI field.
    public var advertisingSID: UInt8
    /// dBm; 127: not available.
    public var txPower: Int8
    /// dBm; 127: not available.
    public var rssi: Int8
    /// Units of 1.25 ms; 0: no periodic advertising.
    public var periodicAdvertisingInterval: UInt16
    public var directAddressType: AddressType
    public var directAddress: BDAddr
    /// The AD structures as octets (≤ 229 in one report); GAP parses them.
    public var data: [UInt8]

    public init(eventType: ExtendedAdvertisingEventType, address: LEAddress, primaryPHY: UInt8 = 1, secondaryPHY: UInt8 = 0,
                advertisingSID: UInt8 = 0xFF, txPower: Int8 = 127, rssi: Int8, periodicAdvertisingInterval: UInt16 = 0,
                directAddress: LEAddress = LEAddress(BDAddr(rawValue: 0), type: .public), data: [UInt8]) {
        self.eventType = eventType
        self.addressType = address.type
        self.address = address.address
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.txPower = txPower
        self.rssi = rssi
        self.periodicAdvertisingInterval = periodicAdvertisingInterval
        self.directAddressType = directAddress.type
        self.directAddress = directAddress.address
        self.data = data
    }

    /// The advertiser by its identity (see `AddressType.identity`).
    public var senderIdentity: LEAddress { LEAddress(address, type: addressType.identity) }

    init(from r: inout ByteReader) throws {
        eventType = ExtendedAdvertisingEventType(rawValue: try r.readUInt16LE())
        addressType = AddressType(rawValue: try r.readUInt8())
        address = try r.readAddress()
        primaryPHY = try r.readUInt8()
        secondaryPHY = try r.readUInt8()
        advertisingSID = try r.readUInt8()
        txPower = try r.readInt8()
        rssi = try r.readInt8()
        periodicAdvertisingInterval = try r.readUInt16LE()
        directAddressType = AddressType(rawValue: try r.readUInt8())
        directAddress = try r.readAddress()
        let length = Int(try r.readUInt8())
        data = try r.readBytes(count: length)
    }

    func encode(into w: inout ByteWriter) {
        w.writeUInt16LE(eventType.rawValue)
        w.write(addressType.rawValue)
        w.write(address: address)
        w.write(primaryPHY)
        w.write(secondaryPHY)
        w.write(advertisingSID)
        w.write(txPower)
        w.write(rssi)
        w.writeUInt16LE(periodicAdvertisingInterval)
        w.write(directAddressType.rawValue)
        w.write(address: directAddress)
        w.write(UInt8(truncatingIfNeeded: data.count))
        w.write(bytes: data)
    }
}

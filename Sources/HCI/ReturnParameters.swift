import BLEWire

/// Typed return parameters of Command Complete for the commands that return more than a status.
/// Each begins with Status (1). A controller encodes them; a host decodes them.
public protocol ReturnParameters {
    init(decoding bytes: [UInt8]) throws
    var encoded: [UInt8] { get }
}

/// 7.4.1: Status, HCI_Version (1), HCI_Subversion (2), LMP_Version (1), Company_Identifier (2), LMP_Subversion (2).
public struct ReadLocalVersionInformationReturn: ReturnParameters, Hashable, Sendable {
    public var status: HCIStatus
    public var hciVersion: UInt8
    public var hciSubversion: UInt16
    public var lmpVersion: UInt8
    public var companyIdentifier: UInt16
    public var lmpSubversion: UInt16

    public init(status: HCIStatus = .success, hciVersion: UInt8, hciSubversion: UInt16, lmpVersion: UInt8,
                companyIdentifier: UInt16, lmpSubversion: UInt16) {
        self.status = status
        self.hciVersion = hciVersion
        self.hciSubversion = hciSubversion
        self.lmpVersion = lmpVersion
        self.companyIdentifier = companyIdentifier
        self.lmpSubversion = lmpSubversion
    }

    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        status = HCIStatus(rawValue: try r.readUInt8())
        hciVersion = try r.readUInt8()
        hciSubversion = try r.readUInt16LE()
        lmpVersion = try r.readUInt8()
        companyIdentifier = try r.readUInt16LE()
        lmpSubversion = try r.readUInt16LE()
        try r.expectEnd()
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 9)
        w.write(status.rawValue)
        w.write(hciVersion)
        w.writeUInt16LE(hciSubversion)
        w.write(lmpVersion)
        w.writeUInt16LE(companyIdentifier)
        w.writeUInt16LE(lmpSubversion)
        return w.bytes
    }
}

/// 7.4.6: Status, BD_ADDR (6).
public struct ReadBDAddrReturn: ReturnParameters, Hashable, Sendable {
    public var status: HCIStatus
    public var address: BDAddr

    public init(status: HCIStatus = .success, address: BDAddr) {
        self.status = status
        self.address = address
    }

    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        status = HCIStatus(rawValue: try r.readUInt8())
        address = try r.readAddress()
        try r.expectEnd()
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 7)
        w.write(status.rawValue)
        w.write(address: address)
        return w.bytes
    }
}

/// 7.4.2 (Supported_Commands, 64 octets) and 7.4.3 / 7.8.3 (LE_Features or LMP_Features, 8 octets):
/// Status followed by a fixed-size bit field.
public struct BitFieldReturn: ReturnParameters, Hashable, Sendable {
    public var status: HCIStatus
    public var bits: [UInt8]

    public init(status: HCIStatus = .success, bits: [UInt8]) {
        self.status = status
        self.bits = bits
    }

    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        status = HCIStatus(rawValue: try r.readUInt8())
        bits = r.readRemaining()
    }

    public var encoded: [UInt8] { [status.rawValue] + bits }

    /// Whether bit `bit` of octet `octet` is set.
    public func isSet(octet: Int, bit: Int) -> Bool {
        octet < bits.count && bits[octet] & (1 << UInt8(bit)) != 0
    }
}

/// 7.8.2: Status, LE_ACL_Data_Packet_Length (2), Total_Num_LE_ACL_Data_Packets (1).
public struct LEReadBufferSizeReturn: ReturnParameters, Hashable, Sendable {
    public var status: HCIStatus
    public var aclDataPacketLength: UInt16
    public var totalNumACLDataPackets: UInt8

    public init(status: HCIStatus = .success, aclDataPacketLength: UInt16, totalNumACLDataPackets: UInt8) {
        self.status = status
        self.aclDataPacketLength = aclDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
    }

    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        status = HCIStatus(rawValue: try r.readUInt8())
        aclDataPacketLength = try r.readUInt16LE()
        totalNumACLDataPackets = try r.readUInt8()
        try r.expectEnd()
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 4)
        w.write(status.rawValue)
        w.writeUInt16LE(aclDataPacketLength)
        w.write(totalNumACLDataPackets)
        return w.bytes
    }
}

/// 7.4.5: Status, ACL_Data_Packet_Length (2), Synchronous_Data_Packet_Length (1),
/// Total_Num_ACL_Data_Packets (2), Total_Num_Synchronous_Data_Packets (2).
public struct ReadBufferSizeReturn: ReturnParameters, Hashable, Sendable {
    public var status: HCIStatus
    public var aclDataPacketLength: UInt16
    public var synchronousDataPacketLength: UInt8
    public var totalNumACLDataPackets: UInt16
    public var totalNumSynchronousDataPackets: UInt16

    public init(status: HCIStatus = .success, aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8,
                totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16) {
        self.status = status
        self.aclDataPacketLength = aclDataPacketLength
        self.synchronousDataPacketLength = synchronousDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
        self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
    }

    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        status = HCIStatus(rawValue: try r.readUInt8())
        aclDataPacketLength = try r.readUInt16LE()
        synchronousDataPacketLength = try r.readUInt8()
        totalNumACLDataPackets = try r.readUInt16LE()
        totalNumSynchronousDataPackets = try r.readUInt16LE()
        try r.expectEnd()
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 8)
        w.write(status.rawValue)
        w.writeUInt16LE(aclDataPacketLength)
        w.write(synchronousDataPacketLength)
        w.writeUInt16LE(totalNumACLDataPackets)
        w.writeUInt16LE(totalNumSynchronousDataPackets)
        return w.bytes
    }
}

/// 7.5.4: Status, Handle (2), RSSI (1, signed dBm).
public struct ReadRSSIReturn: ReturnParameters, Hashable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    public var rssi: Int8

    public init(status: HCIStatus = .success, handle: UInt16, rssi: Int8) {
        self.status = status
        self.handle = handle
        self.rssi = rssi
    }

    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        status = HCIStatus(rawValue: try r.readUInt8())
        handle = try r.readUInt16LE()
        rssi = try r.readInt8()
        try r.expectEnd()
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 4)
        w.write(status.rawValue)
        w.writeUInt16LE(handle)
        w.write(rssi)
        return w.bytes
    }
}

/// 7.8.6: Status, TX_Power_Level (1, signed dBm).
public struct LEReadAdvertisingPhysicalChannelTxPowerReturn: ReturnParameters, Hashable, Sendable {
    public var status: HCIStatus
    public var txPowerLevel: Int8

    public init(status: HCIStatus = .success, txPowerLevel: Int8) {
        self.status = status
        self.txPowerLevel = txPowerLevel
    }

    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        status = HCIStatus(rawValue: try r.readUInt8())
        txPowerLevel = try r.readInt8()
        try r.expectEnd()
    }

    public var encoded: [UInt8] { [status.rawValue, UInt8(bitPattern: txPowerLevel)] }
}

/// Status and Connection_Handle (2): the return parameters of LE Remote Connection Parameter
/// Request Reply and Negative Reply (7.8.31, 7.8.32).
public struct ConnectionHandleReturn: ReturnParameters, Hashable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16

    public init(status: HCIStatus = .success, handle: UInt16) {
        self.status = status
        self.handle = handle
    }

    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        status = HCIStatus(rawValue: try r.readUInt8())
        handle = try r.readUInt16LE()
        try r.expectEnd()
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 3)
        w.write(status.rawValue)
        w.writeUInt16LE(handle)
        return w.bytes
    }
}

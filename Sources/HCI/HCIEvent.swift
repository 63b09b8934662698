import BLEWire

/// The HCI events of BLELab's LE subset (Core 5.4, Vol 4, Part E, 7.7). An event packet is
/// `| Event_Code (1) | Parameter_Total_Length (1) | Parameters |` (5.4.4).
public enum HCIEvent: Hashable, Sendable {
    case disconnectionComplete(DisconnectionComplete)
    case commandComplete(CommandComplete)
    case commandStatus(CommandStatus)
    /// 7.7.8: Status (1), Connection_Handle (2), Encryption_Enabled (1).
    case encryptionChange(EncryptionChange)
    /// 7.7.39: Status (1), Connection_Handle (2).
    case encryptionKeyRefreshComplete(status: HCIStatus, handle: UInt16)
    /// 7.7.16: Hardware_Code (1).
    case hardwareError(UInt8)
    /// 7.7.19
    case numberOfCompletedPackets([CompletedPackets])
    case leMeta(LEMetaEvent)
    case unknown(code: UInt8, parameters: [UInt8])

    public enum Code {
        public static let disconnectionComplete: UInt8 = 0x05
        public static let commandComplete: UInt8 = 0x0E
        public static let commandStatus: UInt8 = 0x0F
        public static let encryptionChange: UInt8 = 0x08
        public static let hardwareError: UInt8 = 0x10
        public static let encryptionKeyRefreshComplete: UInt8 = 0x30
        public static let numberOfCompletedPackets: UInt8 = 0x13
        public static let leMeta: UInt8 = 0x3E
    }

    public var code: UInt8 {
        switch self {
        case .disconnectionComplete: return Code.disconnectionComplete
        case .commandComplete: return Code.commandComplete
        case .commandStatus: return Code.commandStatus
        case .hardwareError: return Code.hardwareError
        case .encryptionChange: return Code.encryptionChange
        case .encryptionKeyRefreshComplete: return Code.encryptionKeyRefreshComplete
        case .numberOfCompletedPackets: return Code.numberOfCompletedPackets
        case .leMeta: return Code.leMeta
        case let .unknown(code, _): return code
        }
    }

    public var parameters: [UInt8] {
        var w = ByteWriter(capacity: 32)
        encodeParameters(into: &w)
        return w.bytes
    }

    /// Writes the parameters after what `w` holds.
    private func encodeParameters(into w: inout ByteWriter) {
        switch self {
        case let .disconnectionComplete(e): e.encode(into: &w)
        case let .commandComplete(e): e.encode(into: &w)
        case let .commandStatus(e): e.encode(into: &w)
        case let .hardwareError(code): w.write(code)
        case let .encryptionChange(e):
            w.write(e.status.rawValue)
            w.writeUInt16LE(e.handle)
            w.write(e.encryptionEnabled)
        case let .encryptionKeyRefreshComplete(status, handle):
            w.write(status.rawValue)
            w.writeUInt16LE(handle)
        case let .numberOfCompletedPackets(list):
            w.write(UInt8(truncatingIfNeeded: list.count))
            for item in list {
                w.writeUInt16LE(item.handle)
                w.writeUInt16LE(item.count)
            }
        case let .leMeta(e): e.encode(into: &w)
        case let .unknown(_, params): w.write(bytes: params)
        }
    }

    /// The event packet without the H4 indicator.
    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 48)
        encode(into: &w)
        return w.bytes
    }

    /// The H4 frame of the event: the indicator (0x04), then `encoded`. Built in one buffer: a
    /// controller sends one per event (a crowded air, hundreds of thousands).
    public var h4Frame: [UInt8] {
        var w = ByteWriter(capacity: 48)
        w.write(H4PacketType.event.rawValue)
        encode(into: &w)
        return w.bytes
    }

    /// Event_Code, Parameter_Total_Length, then the parameters, after what `w` holds.
    private func encode(into w: inout ByteWriter) {
        w.write(code)
        let lengthIndex = w.count
        w.write(UInt8(0))
        encodeParameters(into: &w)
        w.set(UInt8(truncatingIfNeeded: w.count - lengthIndex - 1), at: lengthIndex)
    }

    /// Decodes an event packet (without the H4 indicator). Unknown event codes decode to
    /// `.unknown`; a known event whose parameters don't fit its layout throws.
    public init(decoding bytes: [UInt8], from start: Int = 0) throws {
        var r = ByteReader(bytes, from: start)
        let code = try r.readUInt8()
        let length = Int(try r.readUInt8())
        guard length == r.remaining else {
            throw DecodeError.lengthMismatch(field: "event 0x\(hex2(code)) Parameter_Total_Length", declared: length, actual: r.remaining)
        }
        switch code {
        case Code.disconnectionComplete:
            self = .disconnectionComplete(try DisconnectionComplete(from: &r))
        case Code.commandComplete:
            self = .commandComplete(try CommandComplete(from: &r))
        case Code.commandStatus:
            self = .commandStatus(try CommandStatus(from: &r))
        case Code.hardwareError:
            self = .hardwareError(try r.readUInt8())
        case Code.encryptionChange:
            self = .encryptionChange(EncryptionChange(status: HCIStatus(rawValue: try r.readUInt8()), handle: try r.readUInt16LE(),
                                                      encryptionEnabled: try r.readUInt8()))
        case Code.encryptionKeyRefreshComplete:
            self = .encryptionKeyRefreshComplete(status: HCIStatus(rawValue: try r.readUInt8()), handle: try r.readUInt16LE())
        case Code.numberOfCompletedPackets:
            let n = Int(try r.readUInt8())
            guard r.remaining == n * 4 else {
                // Num_Handles declares n × 4 octets of handles and counts; `remaining` is what is there.
                throw DecodeError.lengthMismatch(field: "Number Of Completed Packets (Num_Handles \(n))", declared: n * 4, actual: r.remaining)
            }
            var list: [CompletedPackets] = []
            list.reserveCapacity(n)
            for _ in 0..<n { list.append(CompletedPackets(handle: try r.readUInt16LE(), count: try r.readUInt16LE())) }
            self = .numberOfCompletedPackets(list)
        case Code.leMeta:
            self = .leMeta(try LEMetaEvent(from: &r))
        default:
            self = .unknown(code: code, parameters: r.readRemaining())
        }
        try r.expectEnd()
    }
}

/// 7.7.5: Status (1), Connection_Handle (2), Reason (1).
public struct DisconnectionComplete: Hashable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    public var reason: HCIStatus

    public init(status: HCIStatus = .success, handle: UInt16, reason: HCIStatus) {
        self.status = status
        self.handle = handle
        self.reason = reason
    }

    init(from r: inout ByteReader) throws {
        status = HCIStatus(rawValue: try r.readUInt8())
        // All 16 bits kept (0x0000–0x0EFF is valid): masking would re-encode a different packet.
        handle = try r.readUInt16LE()
        reason = HCIStatus(rawValue: try r.readUInt8())
    }

    func encode(into w: inout ByteWriter) {
        w.write(status.rawValue)
        w.writeUInt16LE(handle)
        w.write(reason.rawValue)
    }
}

/// 7.7.8 Encryption Change (v1): on LE, Encryption_Enabled is 0x00 (off) or 0x01 (on, AES-CCM).
public struct EncryptionChange: Hashable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    public var encryptionEnabled: UInt8
    public init(status: HCIStatus = .success, handle: UInt16, encryptionEnabled: UInt8) {
        self.status = status
        self.handle = handle
        self.encryptionEnabled = encryptionEnabled
    }
}

/// 7.7.14: Num_HCI_Command_Packets (1), Command_Opcode (2), Return_Parameters (rest). The return
/// parameters are kept as octets; `ReturnParameters.swift` types them per command.
public struct CommandComplete: Hashable, Sendable {
    public var numHCICommandPackets: UInt8
    public var opcode: HCIOpcode
    public var returnParameters: [UInt8]

    public init(numHCICommandPackets: UInt8 = 1, opcode: HCIOpcode, returnParameters: [UInt8]) {
        self.numHCICommandPackets = numHCICommandPackets
        self.opcode = opcode
        self.returnParameters = returnParameters
    }

    /// The Status octet that begins the return parameters of every command in BLELab's subset.
    public var status: HCIStatus? { returnParameters.first.map(HCIStatus.init(rawValue:)) }

    init(from r: inout ByteReader) throws {
        numHCICommandPackets = try r.readUInt8()
        opcode = HCIOpcode(rawValue: try r.readUInt16LE())
        returnParameters = r.readRemaining()
    }

    func encode(into w: inout ByteWriter) {
        w.write(numHCICommandPackets)
        w.writeUInt16LE(opcode.rawValue)
        w.write(bytes: returnParameters)
    }
}

/// 7.7.15: Status (1), Num_HCI_Command_Packets (1), Command_Opcode (2).
public struct CommandStatus: Hashable, Sendable {
    public var status: HCIStatus
    public var numHCICommandPackets: UInt8
    public var opcode: HCIOpcode

    public init(status: HCIStatus, numHCICommandPackets: UInt8 = 1, opcode: HCIOpcode) {
        self.status = status
        self.numHCICommandPackets = numHCICommandPackets
        self.opcode = opcode
    }

    init(from r: inout ByteReader) throws {
        status = HCIStatus(rawValue: try r.readUInt8())
        numHCICommandPackets = try r.readUInt8()
        opcode = HCIOpcode(rawValue: try r.readUInt16LE())
    }

    func encode(into w: inout ByteWriter) {
        w.write(status.rawValue)
        w.write(numHCICommandPackets)
        w.writeUInt16LE(opcode.rawValue)
    }
}

/// One entry of Number Of Completed Packets (7.7.19): Connection_Handle (2), Num_Completed_Packets (2).
/// Entries are laid out handle, count, handle, count… as controllers send them.
public struct CompletedPackets: Hashable, Sendable {
    public var handle: UInt16
    public var count: UInt16
    public init(handle: UInt16, count: UInt16) {
        self.handle = handle
        self.count = count
    }
}

/// Bits of Set Event Mask (7.3.1) and LE Set Event Mask (7.8.1) that BLELab uses.
public enum EventMask {
    public static let disconnectionComplete: UInt64 = 1 << 4
    public static let encryptionChange: UInt64 = 1 << 7
    public static let hardwareError: UInt64 = 1 << 15
    public static let encryptionKeyRefreshComplete: UInt64 = 1 << 47
    public static let leMeta: UInt64 = 1 << 61
    /// The mask a controller starts with after Reset (7.3.1): bits 0–44 set; LE Meta is off.
    public static let defaultMask: UInt64 = 0x0000_1FFF_FFFF_FFFF

    public static let leConnectionComplete: UInt64 = 1 << 0
    public static let leAdvertisingReport: UInt64 = 1 << 1
    public static let leConnectionUpdateComplete: UInt64 = 1 << 2
    /// Bit 5: LE Remote Connection Parameter Request (7.7.65.6). Not in the default mask: a host
    /// that leaves it masked has its controller reject a peer's request by itself, with
    /// Unsupported Remote Feature (0x1A).
    public static let leLongTermKeyRequest: UInt64 = 1 << 4
    public static let leRemoteConnectionParameterRequest: UInt64 = 1 << 5
    /// The LE mask a controller starts with (7.8.1): the first five LE events.
    public static let leDefaultMask: UInt64 = 0x1F
}

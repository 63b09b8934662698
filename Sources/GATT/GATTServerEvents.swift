import BLEWire
import ATT

/// Which ATT procedure carried a write to the server (Core 5.4, Vol 3, Part G, 4.9).
public enum GATTWriteMethod: String, Hashable, Sendable, CustomStringConvertible {
    /// Write Request (Part F, 3.4.5.1), answered by a Write Response.
    case request
    /// Write Command (Part F, 3.4.5.3), never answered.
    case command
    /// Prepare Write Requests applied by an Execute Write Request (Part F, 3.4.6).
    case executeWrite = "execute-write"

    public var description: String { rawValue }
}

/// A value (characteristic value or descriptor) was written and stored.
public struct GATTWriteEvent {
    public let connection: GATTServerConnection
    public let handle: UInt16
    /// The attribute type: the characteristic UUID for a characteristic value.
    public let uuid: BluetoothUUID
    public let value: [UInt8]
    public let method: GATTWriteMethod
}

/// A value (characteristic value or descriptor other than a CCCD) was read.
public struct GATTReadEvent {
    public let connection: GATTServerConnection
    public let handle: UInt16
    public let uuid: BluetoothUUID
    /// The request that read it (Read, Read Blob, Read By Type, Read Multiple).
    public let opcode: ATTOpcode
    public let offset: Int
}

/// A client changed its Client Characteristic Configuration (Part G, 3.3.3.3).
public struct GATTSubscriptionEvent {
    public let connection: GATTServerConnection
    /// The characteristic value handle the configuration belongs to.
    public let valueHandle: UInt16
    public let characteristic: BluetoothUUID
    public let old: GATTClientConfiguration
    public let new: GATTClientConfiguration

    /// True when notifications or indications were off and now one is on.
    public var isSubscribe: Bool { old.isEmpty && !new.isEmpty }
    public var isUnsubscribe: Bool { !old.isEmpty && new.isEmpty }
}

/// A read the owner answers itself, perhaps later.
public struct GATTReadRequest {
    public let connection: GATTServerConnection
    public let handle: UInt16
    public let uuid: BluetoothUUID
    /// The Value Offset of a Read Blob Request (0 otherwise). The answer is still the whole value:
    /// the server takes the part at the offset.
    public let offset: Int
    public let opcode: ATTOpcode
}

public enum GATTReadResult: Equatable {
    /// Answer with this whole value (the server applies the offset and ATT_MTU).
    case value([UInt8])
    /// Answer with the value stored in the database.
    case storedValue
    /// Answer with an Error Response carrying this code.
    case error(ATTErrorCode)
}

/// A write the owner answers itself, perhaps later. Permissions (properties) were checked already.
public struct GATTWriteRequest {
    public let connection: GATTServerConnection
    public let handle: UInt16
    public let uuid: BluetoothUUID
    /// The whole new value (for an Execute Write, the prepared parts put together).
    public let value: [UInt8]
    public let method: GATTWriteMethod
}

public enum GATTWriteResult: Equatable {
    /// Store the value and answer success (no answer at all for a Write Command).
    case accept
    /// Answer with an Error Response carrying this code (nothing is sent for a Write Command).
    case error(ATTErrorCode)
}

/// Receives a read and a callback to answer it, now or later; only the first answer counts.
public typealias GATTReadHandler = (GATTReadRequest, @escaping (GATTReadResult) -> Void) -> Void
/// Receives a write and a callback to answer it, now or later; only the first answer counts.
public typealias GATTWriteHandler = (GATTWriteRequest, @escaping (GATTWriteResult) -> Void) -> Void

import BLEWire
import BLERuntime
import ATT

/// A GATT server (Core 5.4, Vol 3, Part G): one database served to any number of connections.
///
/// Attach each connection's bearer with `attach(_:)`. The server answers discovery, reads and
/// writes from the database, enforcing characteristic properties as the specification says:
/// - Write Request or Prepare Write to a value without `write`: Error Response Write Not Permitted;
/// - Write Command to a value without `write-without-response`: dropped, nothing is sent back;
/// - read of a value without `read`: Read Not Permitted; declarations are read-only;
/// - notifications and indications go only to a client whose CCCD enables them.
///
/// The owner hears what happened through `onWrite`, `onRead` and `onSubscriptionChange`, and may
/// answer reads and writes itself (later, or with an error) through read and write handlers.
public final class GATTServer {
    public internal(set) var database: GATTDatabase
    public private(set) var connections: [GATTServerConnection] = []

    /// Most Prepare Write Requests queued per connection before Prepare Queue Full (Part F, 3.4.6.1).
    public var prepareQueueLimit: Int = 64

    /// A value or descriptor was written (after it was stored), with the ATT method used.
    public var onWrite: ((GATTWriteEvent) -> Void)?
    /// A value or descriptor was read.
    public var onRead: ((GATTReadEvent) -> Void)?
    /// A client changed a Client Characteristic Configuration descriptor.
    public var onSubscriptionChange: ((GATTSubscriptionEvent) -> Void)?

    /// Answers every read of a characteristic value or descriptor (CCCDs excepted) that has no
    /// handler of its own. Unset: the stored value is used.
    public var readHandler: GATTReadHandler?
    /// Answers every write of a characteristic value or descriptor (CCCDs excepted) that has no
    /// handler of its own. Unset: the value is stored.
    public var writeHandler: GATTWriteHandler?
    /// Decides each access to an attribute that asks for authorization (AttributePermissions);
    /// nil, or false: Insufficient Authorization (0x08).
    public var authorizes: ((GATTAuthorizationRequest) -> Bool)?
    var readHandlers: [UInt16: GATTReadHandler] = [:]
    var writeHandlers: [UInt16: GATTWriteHandler] = [:]

    public init(database: GATTDatabase) {
        self.database = database
    }

    // MARK: Connections

    /// Serves the database on `bearer` (becoming its server delegate). The connection goes away
    /// when the bearer is closed.
    @discardableResult
    public func attach(_ bearer: ATTBearer) -> GATTServerConnection {
        if let existing = connection(for: bearer) { return existing }
        let connection = GATTServerConnection(bearer: bearer, server: self, slots: database.configurationHandles.count)
        connections.append(connection)
        bearer.server = connection
        return connection
    }

    /// Forgets `bearer`'s connection and its configuration.
    public func detach(_ bearer: ATTBearer) {
        guard let i = connections.firstIndex(where: { $0.bearer === bearer }) else { return }
        let connection = connections.remove(at: i)
        if bearer.server === connection { bearer.server = nil }
        connection.server = nil
    }

    /// The connection served on `bearer` (a linear search over the few connections).
    public func connection(for bearer: ATTBearer) -> GATTServerConnection? {
        for connection in connections where connection.bearer === bearer { return connection }
        return nil
    }

    // MARK: Values and handlers

    /// The stored value at `handle`.
    public func value(at handle: UInt16) -> [UInt8]? {
        database.attribute(handle)?.value
    }

    /// Stores a value without telling any client; false for a missing handle or a declaration.
    @discardableResult
    public func setValue(_ value: [UInt8], at handle: UInt16) -> Bool {
        database.setValue(value, at: handle)
    }

    /// Answers reads of the attribute at `handle` (a characteristic value or descriptor); nil removes.
    public func setReadHandler(_ handler: GATTReadHandler?, forHandle handle: UInt16) {
        readHandlers[handle] = handler
    }

    /// Answers writes of the attribute at `handle` (a characteristic value or descriptor); nil removes.
    public func setWriteHandler(_ handler: GATTWriteHandler?, forHandle handle: UInt16) {
        writeHandlers[handle] = handler
    }

    // MARK: Changing the database

    /// Adds a service after the last handle; connected clients are not told (see Service Changed).
    @discardableResult
    public func addService(_ service: GATTService) throws -> GATTServiceHandles {
        let before = database.configurationHandles
        let handles = try database.add(service)
        remapConfigurations(from: before)
        return handles
    }

    /// Removes the service declared at `handle`, its handlers and the clients' configurations for it.
    @discardableResult
    public func removeService(at handle: UInt16) -> GATTServiceHandles? {
        let before = database.configurationHandles
        guard let removed = database.removeService(at: handle) else { return nil }
        let range = removed.range.start...removed.range.end
        readHandlers = readHandlers.filter { !range.contains($0.key) }
        writeHandlers = writeHandlers.filter { !range.contains($0.key) }
        remapConfigurations(from: before)
        return removed
    }

    /// Configuration slots are renumbered when the database changes; values follow their handles.
    private func remapConfigurations(from oldHandles: [UInt16]) {
        let newHandles = database.configurationHandles
        for connection in connections {
            var byHandle: [UInt16: UInt16] = [:]
            for (slot, handle) in oldHandles.enumerated() where slot < connection.configurations.count {
                byHandle[handle] = connection.configurations[slot]
            }
            connection.configurations = newHandles.map { byHandle[$0] ?? 0 }
        }
    }

    // MARK: Notifications and indications

    /// Sends a Handle Value Notification of the characteristic value at `handle` to `connection`
    /// if, and only if, that client enabled notifications in its CCCD. The value is truncated to
    /// ATT_MTU - 3 octets (Part F, 3.4.7.1). Returns whether it was sent.
    @discardableResult
    public func notify(_ value: [UInt8], handle: UInt16, to connection: GATTServerConnection) -> Bool {
        guard let i = database.index(of: handle) else { return false }
        let slot = database.attributes[i].configurationSlot
        guard slot >= 0, slot < connection.configurations.count,
              connection.configurations[slot] & GATTClientConfiguration.notification.rawValue != 0 else { return false }
        return connection.bearer.sendNotification(handle: handle, value: value)
    }

    /// `notify(_:handle:to:)` for the connection served on `bearer`.
    @discardableResult
    public func notify(_ value: [UInt8], handle: UInt16, to bearer: ATTBearer) -> Bool {
        guard let connection = connection(for: bearer) else { return false }
        return notify(value, handle: handle, to: connection)
    }

    /// `notify(_:handle:to:)` for the first characteristic with `characteristic` (in `service` when
    /// given). The UUID lookup is linear in the number of services; keep the handle for hot paths.
    @discardableResult
    public func notify(_ value: [UInt8], characteristic: BluetoothUUID, inService service: BluetoothUUID? = nil,
                       to connection: GATTServerConnection) -> Bool {
        guard let handle = database.characteristic(characteristic, inService: service)?.valueHandle else { return false }
        return notify(value, handle: handle, to: connection)
    }

    /// Notifies every connection that enabled it; returns how many were sent.
    @discardableResult
    public func notifyAll(_ value: [UInt8], handle: UInt16) -> Int {
        var sent = 0
        for connection in connections where notify(value, handle: handle, to: connection) { sent += 1 }
        return sent
    }

    /// Queues a Handle Value Indication to `connection` if that client enabled indications; the
    /// completion runs when its Handle Value Confirmation arrives, or fails on timeout or link loss.
    /// Returns false, without calling `completion`, when the client has not enabled indications.
    @discardableResult
    public func indicate(_ value: [UInt8], handle: UInt16, to connection: GATTServerConnection,
                         completion: ((Result<Void, GATTError>) -> Void)? = nil) -> Bool {
        guard let i = database.index(of: handle) else { return false }
        let slot = database.attributes[i].configurationSlot
        guard slot >= 0, slot < connection.configurations.count,
              connection.configurations[slot] & GATTClientConfiguration.indication.rawValue != 0,
              connection.bearer.isOpen else { return false }
        connection.bearer.sendIndication(handle: handle, value: value) { result in
            completion?(result.mapError(GATTError.init))
        }
        return true
    }

    /// `indicate(_:handle:to:completion:)` for the first characteristic with `characteristic`.
    @discardableResult
    public func indicate(_ value: [UInt8], characteristic: BluetoothUUID, inService service: BluetoothUUID? = nil,
                         to connection: GATTServerConnection, completion: ((Result<Void, GATTError>) -> Void)? = nil) -> Bool {
        guard let handle = database.characteristic(characteristic, inService: service)?.valueHandle else { return false }
        return indicate(value, handle: handle, to: connection, completion: completion)
    }

    /// Indicates Service Changed (Part G, 7.1) for `range` to every client that enabled it.
    @discardableResult
    public func indicateServiceChanged(_ range: ATTHandleRange) -> Int {
        guard let handle = database.serviceChangedHandle else { return 0 }
        let value = [UInt8(truncatingIfNeeded: range.start), UInt8(truncatingIfNeeded: range.start >> 8),
                     UInt8(truncatingIfNeeded: range.end), UInt8(truncatingIfNeeded: range.end >> 8)]
        var sent = 0
        for connection in connections where indicate(value, handle: handle, to: connection) { sent += 1 }
        return sent
    }
}

import BLEWire
import ATT

/// A GATT server's state for one connected client (one bearer): its Client Characteristic
/// Configuration values (Core 5.4, Vol 3, Part G, 3.3.3.3), its prepare-write queue (Part F,
/// 3.4.6) and, through the bearer, its ATT_MTU.
public final class GATTServerConnection: ATTServerDelegate {
    public let bearer: ATTBearer
    weak var server: GATTServer?
    /// CCCD value per configuration slot of the database.
    var configurations: [UInt16]
    struct PreparedWrite {
        let handle: UInt16
        let offset: Int
        let value: [UInt8]
    }
    var preparedWrites: [PreparedWrite] = []
    /// What protects this client's link; its owner (GAP) keeps it current.
    public var security = LinkSecurity()
    /// Whether the server's device holds a key for this client (it bonded with it): an
    /// unencrypted access to a protected attribute is then Insufficient Encryption, not
    /// Insufficient Authentication (Vol 3 Part C 10.3.1). Asked at each such access.
    public var peerIsBonded: () -> Bool = { false }

    init(bearer: ATTBearer, server: GATTServer, slots: Int) {
        self.bearer = bearer
        self.server = server
        self.configurations = [UInt16](repeating: 0, count: slots)
    }

    public var mtu: Int { bearer.mtu }
    /// Prepared writes waiting for an Execute Write Request.
    public var preparedWriteCount: Int { preparedWrites.count }

    /// What this client enabled for the characteristic whose value is at `valueHandle`.
    public func configuration(forValueHandle valueHandle: UInt16) -> GATTClientConfiguration {
        guard let server, let i = server.database.index(of: valueHandle) else { return [] }
        let slot = server.database.attributes[i].configurationSlot
        return slot >= 0 && slot < configurations.count ? GATTClientConfiguration(rawValue: configurations[slot]) : []
    }

    public func attBearer(_ bearer: ATTBearer, didReceiveRequest request: ATTPDU, responder: ATTResponder) {
        guard let server else { return responder.fail(.unlikelyError, handle: 0x0000) }
        server.handle(request, from: self, responder: responder)
    }

    public func attBearer(_ bearer: ATTBearer, didReceiveCommand command: ATTPDU) {
        server?.handle(command: command, from: self)
    }

    public func attBearerDidClose(_ bearer: ATTBearer, error: ATTError) {
        server?.detach(bearer)
    }
}

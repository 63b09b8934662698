import BLERuntime
import HCI
import HostLink

/// LE credit based channels (L2CAP connection-oriented channels, Core 5.4, Vol 3, Part A, 4.22
/// and 10.1) as the host offers them: a server publishes an SPSM once and every connection,
/// present or future, accepts channels to it; a client opens one on a `Connection`. The
/// channels themselves are HostLink's `L2CAPCreditBasedChannel`.
struct L2CAPServerEntry {
    let parameters: L2CAPChannelParameters
    let requiresEncryption: Bool
    let onChannel: (Connection, L2CAPCreditBasedChannel) -> Void
}

extension BLEHost {
    /// Serves credit based channels on `psm` (nil: the lowest free dynamic SPSM, 0x0080–0x00FF,
    /// as iOS allocates them), with our end's `parameters`. With `requiresEncryption`, a request
    /// on an unencrypted link is refused with "insufficient authentication" (0x0005), or, from a
    /// bonded peer, "insufficient encryption" (0x0008): the central then pairs or encrypts and
    /// asks again. Each accepted channel goes to `onChannel` with its connection. Returns the SPSM.
    @discardableResult
    public func publishL2CAPChannel(psm: UInt16? = nil, parameters: L2CAPChannelParameters = .init(), requiresEncryption: Bool = false,
                                    onChannel: @escaping (Connection, L2CAPCreditBasedChannel) -> Void) throws(L2CAPChannelError) -> UInt16 {
        guard parameters.areValid else {
            throw .invalidRequest("MTU \(parameters.mtu) / MPS \(parameters.mps) out of range (MTU ≥ 23, MPS 23–65533)")
        }
        let chosen: UInt16
        if let psm {
            guard LEPSM.isValid(psm) else { throw .invalidRequest("SPSM 0x\(String(psm, radix: 16)) is reserved") }
            guard l2capServers[psm] == nil else { throw .invalidRequest("SPSM 0x\(String(psm, radix: 16)) is already published") }
            chosen = psm
        } else {
            guard let free = LEPSM.dynamicRange.first(where: { l2capServers[$0] == nil }) else {
                throw .invalidRequest("every dynamic SPSM (0x0080–0x00FF) is published")
            }
            chosen = free
        }
        l2capServers[chosen] = L2CAPServerEntry(parameters: parameters, requiresEncryption: requiresEncryption, onChannel: onChannel)
        return chosen
    }

    /// Stops serving `psm`: later requests are refused ("SPSM not supported"); open channels stay.
    public func unpublishL2CAPChannel(_ psm: UInt16) {
        l2capServers[psm] = nil
    }

    /// The SPSMs this host serves.
    public var publishedL2CAPChannels: [UInt16] { l2capServers.keys.sorted() }

    func l2capDecision(psm: UInt16, on connection: Connection) -> L2CAPServerDecision {
        guard let server = l2capServers[psm] else { return .refuse(.spsmNotSupported) }
        if server.requiresEncryption, !connection.security.encrypted {
            return .refuse(bonds.bond(for: connection.peer) != nil ? .insufficientEncryption : .insufficientAuthentication)
        }
        return .accept(server.parameters)
    }

    func l2capChannelAccepted(_ channel: L2CAPCreditBasedChannel, on connection: Connection) {
        l2capServers[channel.psm]?.onChannel(connection, channel)
    }
}

extension Connection {
    /// Opens a credit based channel to the peer's `psm` (LE Credit Based Connection Request,
    /// 4.22) with our end's `parameters`; the completion gets the open channel or why not.
    public func openL2CAPChannel(psm: UInt16, parameters: L2CAPChannelParameters = .init(),
                                 completion: @escaping (Result<L2CAPCreditBasedChannel, L2CAPChannelError>) -> Void) {
        guard isConnected else { return completion(.failure(.linkClosed(disconnectReason ?? .connectionTerminatedByLocalHost))) }
        link.openCreditBasedChannel(psm: psm, parameters: parameters, completion: completion)
    }

    /// The credit based channels open (or disconnecting) on this connection, by our CID.
    public var l2capChannels: [L2CAPCreditBasedChannel] { link.channels.keys.sorted().compactMap { link.channels[$0] } }
}

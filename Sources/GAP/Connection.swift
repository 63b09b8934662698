import ATT
import BLERuntime
import BLEWire
import GATT
import HCI
import HostLink

/// One LE connection as the host sees it: the L2CAP link, the ATT bearer on it, this host's GATT
/// server attached to that bearer, and a GATT client for the peer's server.
public final class Connection {
    public private(set) weak var host: BLEHost?
    public let handle: UInt16
    public let role: ConnectionRole
    public let peer: LEAddress
    /// This host's address on this link (its RPA then, when it uses privacy).
    public let localAddress: LEAddress
    /// Connection interval (1.25 ms units), peripheral latency, supervision timeout (10 ms units).
    public private(set) var interval: UInt16
    public private(set) var latency: UInt16
    public private(set) var supervisionTimeout: UInt16
    public let link: L2CAPLink
    public let bearer: ATTBearer
    public let client: GATTClient
    /// This host's GATT server as this connection's peer sees it (its CCCDs, prepared writes).
    public let serverConnection: GATTServerConnection
    public private(set) var isConnected = true
    /// Why the connection ended, once it has.
    public private(set) var disconnectReason: HCIStatus?

    /// Pairing and encryption on this link (Connection+Security.swift).
    let securityState = ConnectionSecurityState()
    private var disconnectObservers: [(HCIStatus) -> Void] = []
    private var parameterObservers: [(Connection) -> Void] = []
    /// A peripheral's LE Connection Update waiting for LE Connection Update Complete.
    private var pendingLinkLayerRequest: ((Result<Void, HostError>) -> Void)?

    init(host: BLEHost, event e: LEConnectionComplete) {
        self.host = host
        handle = e.handle
        role = e.role
        peer = e.peer
        localAddress = host.address
        interval = e.connectionInterval
        latency = e.peripheralLatency
        supervisionTimeout = e.supervisionTimeout
        let link = L2CAPLink(handle: e.handle, role: e.role, driver: host.driver)
        self.link = link
        bearer = ATTBearer(loop: host.loop, preferredMTU: UInt16(clamping: host.configuration.attMTU),
                           // Strong: the link holds neither the bearer nor this connection (no
                           // cycle), and each PDU sent then costs no unowned-reference check.
                           send: { [link] pdu in link.sendATT(pdu) })
        client = GATTClient(bearer: bearer)
        serverConnection = host.gattServer.attach(bearer)
        // Taken back in `deinit` (the link may outlive the connection), so never run after it:
        // no reference check per PDU.
        link.onATT = { [unowned(unsafe) self] pdu in self.bearer.receive(pdu) }
        // A peer that breaks ATT in a way real stacks answer by dropping the bearer (a pipelined
        // request, Vol 3 Part F 3.3.2) loses the link, as with BlueZ, whose att.c shuts the
        // channel down; the peer sees Remote User Terminated Connection.
        bearer.onDropLink = { [weak self] _ in self?.disconnect(reason: Connection.attDropReason) }
        // Every layer's violations reach the host's one `onViolation` (ATTViolations.swift is
        // the join for ATT's own event); ATT's also reach `observeATTViolations`.
        link.onViolation = { [weak host] violation in host?.report(violation) }
        let handle = e.handle
        bearer.observeViolations { [weak self, weak host] event in
            guard let self, let host else { return }
            for observer in host.attViolationObservers { observer(self, event) }
            host.report(ProtocolViolation(att: event, handle: handle))
        }
        link.acceptsConnectionParameters = { [weak self, weak host] p in
            guard let self, let host else { return false }
            let parameters = ConnectionParameters(intervalMin: p.intervalMin, intervalMax: p.intervalMax, latency: p.latency,
                                                  supervisionTimeout: p.timeout)
            let accepted = host.acceptsConnectionParameters(self, parameters)
            host.onConnectionParameterRequest?(ConnectionParameterRequest(connection: self, parameters: parameters, accepted: accepted,
                                                                          procedure: .l2cap))
            return accepted
        }
        // Credit based channels (BLEHost+L2CAP.swift): requests answered from the host's
        // published SPSMs, accepted channels handed to their server.
        link.creditBasedServer = { [weak self, weak host] psm in
            guard let self, let host else { return .refuse(.spsmNotSupported) }
            return host.l2capDecision(psm: psm, on: self)
        }
        link.onCreditBasedChannel = { [weak self, weak host] channel in
            guard let self, let host else { return }
            host.l2capChannelAccepted(channel, on: self)
        }
        if host.configuration.security != nil {
            link.onSMP = { [unowned self] payload in self.receiveSMP(payload) }
        }
        let peer = e.peer
        serverConnection.peerIsBonded = { [weak host] in host?.bonds.bond(for: peer) != nil }
        link.onConnectionParametersAccepted = { [weak self] p in
            self?.updateParameters(ConnectionParameters(intervalMin: p.intervalMin, intervalMax: p.intervalMax,
                                                         latency: p.latency, supervisionTimeout: p.timeout))
        }
    }

    deinit {
        link.onATT = nil
    }

    /// The reason the link ends with when the ATT bearer gives up on a peer that broke the protocol.
    static let attDropReason = HCIStatus.remoteUserTerminatedConnection

    public var intervalTime: TimeSpan { .microseconds(Int64(interval) * 1250) }
    public var supervisionTimeoutTime: TimeSpan { .milliseconds(Int64(supervisionTimeout) * 10) }

    /// The longest the ACL termination procedure can take once a host has asked for it (Core 5.4
    /// Vol 6 Part B 5.1.3): the link layer queues LL_TERMINATE_IND and starts T_Terminate, set to
    /// connSupervisionTimeout; it sends the PDU until the peer acknowledges it or T_Terminate runs
    /// out, and either way the connection ends. A link layer may queue the PDU only at its next
    /// connection event, one interval later. On a slow link this is seconds: with peripheral
    /// latency the peripheral listens only every (latency + 1) events (4.5.1), and the supervision
    /// timeout exceeds (1 + latency) × interval × 2 (4.5.2), which bounds it.
    public var terminationBound: TimeSpan { supervisionTimeoutTime + intervalTime }

    /// Calls `observer` once when the connection ends, with the reason.
    public func whenDisconnected(_ observer: @escaping (HCIStatus) -> Void) {
        if let reason = disconnectReason { return observer(reason) }
        disconnectObservers.append(observer)
    }

    /// Calls `observer` after each LE Connection Update Complete.
    public func whenParametersUpdated(_ observer: @escaping (Connection) -> Void) {
        parameterObservers.append(observer)
    }

    /// Ends the connection (HCI Disconnect, Vol 4 Part E 7.1.6). The peer is told `reason`;
    /// locally the controller reports Connection Terminated By Local Host (0x16).
    public func disconnect(reason: HCIStatus = .remoteUserTerminatedConnection,
                           completion: @escaping (Result<Void, HostError>) -> Void = { _ in }) {
        guard isConnected, let host else { return completion(.failure(.unknownConnection(handle))) }
        host.driver.send(.disconnect(handle: handle, reason: reason)) { result in
            completion(result.map { _ in () })
        }
    }

    /// Reads the RSSI of this link (Read RSSI, 7.5.4).
    public func readRSSI(completion: @escaping (Result<Int8, HostError>) -> Void) {
        guard isConnected, let host else { return completion(.failure(.unknownConnection(handle))) }
        host.driver.send(.readRSSI(handle: handle)) { result in
            completion(result.flatMap { r in
                do { return .success(try r.decode(ReadRSSIReturn.self).rssi) } catch {
                    return .failure(.malformed("Read RSSI return parameters: \(error)"))
                }
            })
        }
    }

    /// Asks for new connection parameters: a central runs LE Connection Update. A peripheral asks
    /// its central over L2CAP (Connection Parameter Update Request, Vol 3 Part A 4.20; the
    /// completion says whether the central accepted), or, `via: .linkLayer`, with LE Connection
    /// Update on its own controller, whose link layer sends LL_CONNECTION_PARAM_REQ (Vol 6
    /// Part B 5.1.7; the completion comes with LE Connection Update Complete: success, or the
    /// central's reason as a `.command` error).
    public func updateParameters(_ p: ConnectionParameters, via procedure: ParameterUpdateProcedure = .l2cap,
                                 completion: @escaping (Result<Void, HostError>) -> Void = { _ in }) {
        guard isConnected, let host else { return completion(.failure(.unknownConnection(handle))) }
        if role == .peripheral, procedure == .linkLayer {
            guard pendingLinkLayerRequest == nil else {
                return completion(.failure(.invalidState("a connection parameter request is already in progress")))
            }
            let params = LEConnectionUpdateParameters(handle: handle, intervalMin: p.intervalMin, intervalMax: p.intervalMax,
                                                      maxLatency: p.latency, supervisionTimeout: p.supervisionTimeout)
            pendingLinkLayerRequest = completion
            host.driver.send(.leConnectionUpdate(params)) { [weak self] result in
                guard case let .failure(error) = result, let self else { return }
                let pending = self.pendingLinkLayerRequest
                self.pendingLinkLayerRequest = nil
                pending?(.failure(error))
            }
            return
        }
        if role == .central {
            let params = LEConnectionUpdateParameters(handle: handle, intervalMin: p.intervalMin, intervalMax: p.intervalMax,
                                                      maxLatency: p.latency, supervisionTimeout: p.supervisionTimeout)
            host.driver.send(.leConnectionUpdate(params)) { completion($0.map { _ in () }) }
        } else {
            link.requestConnectionParameterUpdate(ConnectionParameterUpdate(intervalMin: p.intervalMin, intervalMax: p.intervalMax,
                                                                            latency: p.latency, timeout: p.supervisionTimeout)) { result in
                completion(result.flatMap { accepted in
                    accepted ? .success(()) : .failure(.invalidState("the central rejected the connection parameters"))
                })
            }
        }
    }

    func parametersUpdated(_ e: LEConnectionUpdateComplete) {
        let pending = pendingLinkLayerRequest
        pendingLinkLayerRequest = nil
        guard e.status.isSuccess else {
            pending?(.failure(.command(.leConnectionUpdate, e.status)))
            return
        }
        defer { pending?(.success(())) }
        interval = e.connectionInterval
        latency = e.peripheralLatency
        supervisionTimeout = e.supervisionTimeout
        for observer in parameterObservers { observer(self) }
    }

    func closed(reason: HCIStatus) {
        guard isConnected else { return }
        isConnected = false
        disconnectReason = reason
        let pending = pendingLinkLayerRequest
        pendingLinkLayerRequest = nil
        pending?(.failure(.unknownConnection(handle)))
        securityEnded(reason: reason)
        link.close(reason: reason)
        bearer.close(reason: reason.rawValue)
        host?.gattServer.detach(bearer)
        let observers = disconnectObservers
        disconnectObservers.removeAll()
        for observer in observers { observer(reason) }
    }
}

/// How a peripheral asks for new connection parameters.
public enum ParameterUpdateProcedure: String, Hashable, Sendable {
    /// L2CAP Connection Parameter Update Request (Vol 3 Part A 4.20), answered by the central's host.
    case l2cap
    /// LE Connection Update on the peripheral: LL_CONNECTION_PARAM_REQ (Vol 6 Part B 5.1.7),
    /// which the central's controller hands its host (LE Remote Connection Parameter Request).
    case linkLayer = "link-layer"
}

/// A peripheral's request for new parameters, as the central's host answered it.
public struct ConnectionParameterRequest {
    public let connection: Connection
    public let parameters: ConnectionParameters
    public let accepted: Bool
    public let procedure: ParameterUpdateProcedure
}

extension Connection: CustomStringConvertible {
    public var description: String {
        "connection 0x\(String(handle, radix: 16)) (\(role)) with \(peer)"
    }
}

extension BLEHost {
    /// Calls `observer` with every ATT protocol violation a peer commits on any of this host's
    /// connections, present or future, before the bearer acts on it (`ATTViolationEvent` says
    /// what it does). The hook for counting what a hostile peer does (docs/architecture.md).
    public func observeATTViolations(_ observer: @escaping (Connection, ATTViolationEvent) -> Void) {
        attViolationObservers.append(observer)
    }
}

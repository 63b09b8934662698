import BLERuntime
import BLEWire
import HCI
import HostLink

final class InitiatorState {
    let peer: LEAddress
    let completion: (Result<Connection, HostError>) -> Void
    var timer: LoopTimer?
    /// Why the attempt is being cancelled, once LE Create Connection Cancel was sent.
    var cancellation: HostError?

    init(peer: LEAddress, completion: @escaping (Result<Connection, HostError>) -> Void) {
        self.peer = peer
        self.completion = completion
    }
}

extension BLEHost {
    public var isConnecting: Bool { initiator != nil }

    /// Connects to `peer` as central (LE Create Connection, Vol 4 Part E 7.8.12). The controller
    /// waits for the peer's next connectable advertisement its scan catches: `scanInterval` and
    /// `scanWindow` are the initiator's duty cycle (default 60 ms and 60 ms: always listening;
    /// 0.625 ms units on the wire, as `ScanConfiguration`). After `timeout` (default: the
    /// configuration's) the attempt is cancelled with LE Create Connection Cancel and fails.
    public func connect(to peer: LEAddress, parameters: ConnectionParameters? = nil, timeout: TimeSpan? = nil,
                        scanInterval: TimeSpan = .milliseconds(60), scanWindow: TimeSpan = .milliseconds(60),
                        completion: @escaping (Result<Connection, HostError>) -> Void) {
        initiate([peer], parameters: parameters, timeout: timeout, scanInterval: scanInterval, scanWindow: scanWindow,
                 completion: completion)
    }

    /// Connects to whichever of `peers` the initiator hears first, as a phone waits for any of
    /// several devices at once: the controller's Filter Accept List is set to exactly `peers`
    /// (LE Clear Filter Accept List, then LE Add Device To Filter Accept List for each, Vol 4
    /// Part E 7.8.15–7.8.16) and LE Create Connection uses it (Initiator_Filter_Policy 0x01, Vol 6
    /// Part B 4.3.5: the peer address parameters are then ignored). One peer: `connect(to:)`, the
    /// list untouched. The connection's `peer` tells which one it was. A controller whose list is
    /// too small answers Memory Capacity Exceeded, and the attempt fails with that.
    public func connect(toAnyOf peers: [LEAddress], parameters: ConnectionParameters? = nil, timeout: TimeSpan? = nil,
                        scanInterval: TimeSpan = .milliseconds(60), scanWindow: TimeSpan = .milliseconds(60),
                        completion: @escaping (Result<Connection, HostError>) -> Void) {
        initiate(peers, parameters: parameters, timeout: timeout, scanInterval: scanInterval, scanWindow: scanWindow,
                 completion: completion)
    }

    private func initiate(_ peers: [LEAddress], parameters: ConnectionParameters?, timeout: TimeSpan?,
                          scanInterval: TimeSpan, scanWindow: TimeSpan,
                          completion: @escaping (Result<Connection, HostError>) -> Void) {
        if let error = requireReady() { return completion(.failure(error)) }
        guard let peer = peers.first else { return completion(.failure(.invalidState("no peer to connect to"))) }
        if let pending = initiator {
            return completion(.failure(.invalidState("a connection attempt to \(pending.peer) is already in progress")))
        }
        let p = parameters ?? configuration.connectionParameters
        guard p.isValid else {
            return completion(.failure(.invalidState("invalid connection parameters \(p)")))
        }
        let state = InitiatorState(peer: peer, completion: completion)
        initiator = state
        let interval = ScanConfiguration.scanUnits(scanInterval)
        var command = LECreateConnectionParameters(peer: peer, ownAddressType: ownAddressType, scanInterval: interval,
                                                   scanWindow: min(ScanConfiguration.scanUnits(scanWindow), interval),
                                                   connectionIntervalMin: p.intervalMin, connectionIntervalMax: p.intervalMax,
                                                   maxLatency: p.latency, supervisionTimeout: p.supervisionTimeout)
        var setUp: [HCICommand] = []
        if peers.count > 1 {
            command.initiatorFilterPolicy = 0x01
            setUp = [.leClearFilterAcceptList] + Self.distinct(peers).map {
                .leAddDeviceToFilterAcceptList(addressType: $0.type.rawValue, address: $0.address)
            }
        }
        func failed(_ error: HostError) {
            if initiator === state { initiator = nil }
            state.timer?.cancel()
            completion(.failure(error))
        }
        send(setUp) { [weak self] result in
            guard let self, self.initiator === state else { return }
            if case let .failure(error) = result { return failed(error) }
            // Cancelled while the list was being written: nothing was started.
            if let cancellation = state.cancellation { return failed(cancellation) }
            self.driver.send(.leCreateConnection(command)) { result in
                if case let .failure(error) = result { failed(error) }
            }
        }
        if let limit = timeout ?? configuration.connectTimeout {
            state.timer = loop.schedule(after: limit) { [weak self] in
                self?.cancelInitiation(state, because: .timeout("connection to \(peer)"))
            }
        }
    }

    private static func distinct(_ peers: [LEAddress]) -> [LEAddress] {
        var seen = Set<LEAddress>()
        return peers.filter { seen.insert($0).inserted }
    }

    /// Gives up a pending `connect`; its completion gets `.cancelled`.
    public func cancelConnect() {
        guard let state = initiator else { return }
        cancelInitiation(state, because: .cancelled("connection to \(state.peer)"))
    }

    private func cancelInitiation(_ state: InitiatorState, because error: HostError) {
        guard initiator === state, state.cancellation == nil else { return }
        state.cancellation = error
        state.timer?.cancel()
        // 7.8.13: Command Complete, then LE Connection Complete with Unknown Connection Identifier.
        driver.send(.leCreateConnectionCancel) { [weak self] result in
            // Command Disallowed after the connection completed is settled by that event (which
            // came first); if we are still initiating, the controller lost track: give up.
            if case .failure = result, let self, self.initiator === state {
                self.initiator = nil
                state.completion(.failure(error))
            }
        }
    }

    func connectionComplete(_ e: LEConnectionComplete) {
        if e.role == .central {
            guard let state = initiator else {
                if e.status.isSuccess { onProtocolError?(.invalidState("unexpected LE Connection Complete as central for \(e.peer)")) }
                return
            }
            initiator = nil
            state.timer?.cancel()
            guard e.status.isSuccess else {
                return state.completion(.failure(state.cancellation ?? .command(.leCreateConnection, e.status)))
            }
            if let violation = handleInUse(e) {
                report(violation)
                return state.completion(.failure(.violation(violation)))
            }
            let connection = makeConnection(e)
            // A cancel that lost the race: the connection exists; honour the caller's wish.
            if let cancellation = state.cancellation {
                state.completion(.failure(cancellation))
                connection.disconnect()
                return
            }
            state.completion(.success(connection))
        } else {
            guard e.status.isSuccess else { return }
            if let violation = handleInUse(e) { return report(violation) }
            advertisingEndedByConnection()
            _ = makeConnection(e)
        }
    }

    /// A connection handle names one connection from its LE Connection Complete until its
    /// Disconnection Complete (Vol 4 Part E 5.3, 7.7.65.1). A new connection on a handle still in
    /// use is the controller's mistake: it is reported (`hci/connection-handle-in-use`) and the
    /// connection the host has is kept. Replacing it would leave the old link, bearer and GATT
    /// server attachment alive and unreachable, never closed (found by the host fuzzer,
    /// docs/fuzzing.md).
    private func handleInUse(_ e: LEConnectionComplete) -> ProtocolViolation? {
        guard let existing = connections[e.handle] else { return nil }
        return ProtocolViolation(layer: .hci, kind: .connectionHandleInUse, handle: e.handle,
                                 detail: "LE Connection Complete (\(e.role), peer \(e.peer)) for connection handle 0x\(String(e.handle, radix: 16)), "
                                     + "which the connection to \(existing.peer) still has; ignored",
                                 octets: Array(HCIEvent.leMeta(.connectionComplete(e)).encoded.prefix(ProtocolViolation.octetLimit)))
    }

    private func makeConnection(_ e: LEConnectionComplete) -> Connection {
        let connection = Connection(host: self, event: e)
        connections[e.handle] = connection
        onConnection?(connection)
        return connection
    }
}

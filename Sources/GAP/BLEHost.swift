import ATT
import BLERuntime
import BLEWire
import GATT
import HCI
import HostLink
import SMP
import Transport

/// A BLE host: one HCI driver to one controller, with GAP roles (advertiser, scanner, central,
/// peripheral), L2CAP links, and a GATT server and client per connection. All work happens on
/// `loop`; completions are called there.
public final class BLEHost {
    public enum State: Equatable {
        case off
        case poweringOn
        case ready
        case failed(HostError)
    }

    public let loop: EventLoop
    public let driver: HCIDriver
    public let configuration: HostConfiguration
    public private(set) var state: State = .off {
        didSet { if state != oldValue { onStateChange?(state) } }
    }

    /// The controller's BD_ADDR (Read BD_ADDR), known after power-on.
    public private(set) var publicAddress: BDAddr?
    /// What peers see: the random static address when configured, else the public one.
    public var address: LEAddress {
        if let rpa = privacyState.address { return LEAddress(rpa, type: .random) }
        if let random = configuration.randomAddress { return LEAddress(random, type: .random) }
        return LEAddress(publicAddress ?? BDAddr(rawValue: 0), type: .public)
    }
    var ownAddressType: AddressType { configuration.randomAddress == nil && configuration.privacy == nil ? .public : .random }

    public private(set) var localVersion: ReadLocalVersionInformationReturn?
    public private(set) var supportedCommands: BitFieldReturn?

    /// This host's GATT server: one attribute database served on every connection. Add services
    /// with `gattServer.addService(_:)`.
    public let gattServer: GATTServer

    /// The keys of every peer this host bonded with; they outlive connections and power cycles.
    public let bonds = BondStore()
    /// Each pairing's end on any connection, in either role (a peripheral pairs when asked).
    public var onPairing: ((Connection, Result<PairingResult, PairingFailure>) -> Void)?
    /// Each change of a link's encryption (Encryption Change, Key Refresh), or its failure.
    public var onEncryptionChange: ((Connection, HCIStatus) -> Void)?
    /// How a central answers a peripheral's Security Request: encrypt with the bond, else pair
    /// (as phones do); false: ignore it.
    public var answersSecurityRequests = true
    let privacyState = PrivacyState()
    /// `outOfBandData` (BLEHost+OutOfBand.swift).
    var oobData: OOBData?
    /// How long a peer whose authentication failed waits before its next Pairing Request is
    /// taken, doubled at each further failure (Vol 3 Part H 2.3.6; the specification leaves the
    /// value to the implementation).
    public var repeatedAttemptsInterval = TimeSpan.seconds(2)
    var repeatedAttempts: [LEAddress: RepeatedAttempts] = [:]
    lazy var securityRandom = SeededRandom(seed: configuration.randomSeed ?? (publicAddress?.rawValue ?? 0), stream: "smp")

    /// SPSMs served for LE credit based channels (BLEHost+L2CAP.swift).
    var l2capServers: [UInt16: L2CAPServerEntry] = [:]

    /// Live connections by handle.
    public internal(set) var connections: [UInt16: Connection] = [:]

    /// Every new connection, in either role, once it is ready for L2CAP/ATT traffic.
    public var onConnection: ((Connection) -> Void)?
    /// A connection ended, with the controller's reason.
    public var onDisconnection: ((Connection, HCIStatus) -> Void)?
    /// What went wrong that is no peer's protocol violation (a controller's hardware error, an
    /// event for a procedure not running). Violations go to `onViolation`.
    public var onProtocolError: ((HostError) -> Void)?
    /// Observers of every ATT protocol violation a peer commits on any connection (each
    /// connection's `ATTBearer.observeViolations`), in the order added.
    var attViolationObservers: [(Connection, ATTViolationEvent) -> Void] = []
    /// Every protocol violation the controller or a peer committed, typed, from every layer of
    /// every connection (HCI, L2CAP, LE signaling, SMP, ATT), with what the host answered.
    public var onViolation: ((ProtocolViolation) -> Void)?
    /// How this host answers its peer's request for new connection parameters: over the link
    /// layer (LE Remote Connection Parameter Request, Vol 4 Part E 7.7.65.6, which a controller
    /// may raise in either role: a central's too may use LL_CONNECTION_PARAM_REQ, and Linux's
    /// emulated controllers do for every LE Connection Update) or, as central, over L2CAP
    /// (Connection Parameter Update Request, Vol 3 Part A 4.20): true accepts. The default
    /// accepts parameters in the ranges of LE Connection Update (Vol 4 Part E 7.8.18).
    public var acceptsConnectionParameters: (Connection, ConnectionParameters) -> Bool = { _, p in p.isValid }
    /// Each such request and the answer given (after the answer went to the controller or peer).
    public var onConnectionParameterRequest: ((ConnectionParameterRequest) -> Void)?
    public var onStateChange: ((State) -> Void)?

    // Role state lives in the extensions' files.
    var advertiser = AdvertiserState()
    var scanner: ScannerState?
    var initiator: InitiatorState?

    public init(loop: EventLoop, transport: HCITransport, configuration: HostConfiguration = .init()) {
        self.loop = loop
        self.configuration = configuration
        self.driver = HCIDriver(loop: loop, transport: transport)
        // The standard GAP and GATT services always fit an empty database.
        let database = try! GATTDatabase(deviceName: configuration.deviceName)
        gattServer = GATTServer(database: database)
        // Weak, or taken back in `deinit`: a Connection kept after its host is gone keeps the
        // driver (through its L2CAP link), and the driver may still hear from its transport (a
        // close reported through the loop, frames already queued). Without a host there is
        // nothing to tell. The per-frame closure is unowned and taken back (no load per frame).
        driver.onEvent = { [weak self] event in self?.handle(event) }
        driver.onL2CAPFrame = { [unowned(unsafe) self] handle, frame in self.receiveL2CAP(handle: handle, frame: frame) }
        driver.onProtocolError = { [weak self] error in
            guard let self else { return }
            if case let .violation(violation) = error { self.report(violation) } else { self.onProtocolError?(error) }
        }
        driver.onTransportClosed = { [weak self] error in self?.transportClosed(error) }
    }

    deinit {
        driver.onL2CAPFrame = nil
    }

    // MARK: Power on

    /// Resets and configures the controller (Vol 4 Part E 7.3.2 onward): Reset, Read Local
    /// Version, Read Local Supported Commands, Read BD_ADDR, Set Event Mask, LE Set Event Mask,
    /// LE Read Buffer Size (falling back to Read Buffer Size when it reports 0), and LE Set
    /// Random Address when one is configured. The LE event mask takes LE Remote Connection
    /// Parameter Request (bit 5): the host, not the controller, decides on a peer's request.
    public func powerOn(completion: @escaping (Result<Void, HostError>) -> Void = { _ in }) {
        guard state != .poweringOn else { return completion(.failure(.invalidState("power-on already in progress"))) }
        state = .poweringOn
        // Encryption Change is in the default mask; Key Refresh Complete (bit 47) is not. The host
        // answers LE Long Term Key Request (LE bit 4) itself, with a key or a negative reply.
        let eventMask = EventMask.defaultMask | EventMask.leMeta | EventMask.encryptionKeyRefreshComplete
        let leMask = EventMask.leConnectionComplete | EventMask.leAdvertisingReport | EventMask.leConnectionUpdateComplete
            | EventMask.leLongTermKeyRequest | EventMask.leRemoteConnectionParameterRequest
        var steps: [(HCICommand, (CommandResult) throws -> Void)] = [
            (.reset, { _ in }),
            (.readLocalVersionInformation, { [unowned self] r in self.localVersion = try r.decode(ReadLocalVersionInformationReturn.self) }),
            (.readLocalSupportedCommands, { [unowned self] r in self.supportedCommands = try r.decode(BitFieldReturn.self) }),
            (.readBDAddr, { [unowned self] r in self.publicAddress = try r.decode(ReadBDAddrReturn.self).address }),
            (.setEventMask(eventMask), { _ in }),
            (.leSetEventMask(leMask), { _ in }),
            (.leReadBufferSize, { [unowned self] r in
                let sizes = try r.decode(LEReadBufferSizeReturn.self)
                if sizes.aclDataPacketLength > 0 {
                    self.driver.setLEBuffers(packetLength: Int(sizes.aclDataPacketLength), count: Int(sizes.totalNumACLDataPackets))
                }
            }),
        ]
        if let random = configuration.randomAddress {
            steps.append((.leSetRandomAddress(random), { _ in }))
        }
        runSteps(steps[...]) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.readSharedBuffersIfNeeded { result in
                    switch result {
                    case .success:
                        self.startPrivacy { result in
                            switch result {
                            case .success:
                                self.state = .ready
                                completion(.success(()))
                            case let .failure(error):
                                self.state = .failed(error)
                                completion(.failure(error))
                            }
                        }
                    case let .failure(error):
                        self.state = .failed(error)
                        completion(.failure(error))
                    }
                }
            case let .failure(error):
                self.state = .failed(error)
                completion(.failure(error))
            }
        }
    }

    /// Vol 4 Part E 7.8.2: a controller without dedicated LE buffers reports length 0, and LE
    /// data then shares the buffers of Read Buffer Size.
    private func readSharedBuffersIfNeeded(completion: @escaping (Result<Void, HostError>) -> Void) {
        guard driver.aclBufferCount == 0 else { return completion(.success(())) }
        runSteps([(HCICommand.readBufferSize, { [unowned self] r in
            let sizes = try r.decode(ReadBufferSizeReturn.self)
            guard sizes.aclDataPacketLength > 0, sizes.totalNumACLDataPackets > 0 else {
                throw HostError.invalidState("the controller reports no ACL buffers")
            }
            self.driver.setLEBuffers(packetLength: Int(sizes.aclDataPacketLength), count: Int(sizes.totalNumACLDataPackets))
        })][...], completion: completion)
    }

    /// Sends commands one after another, stopping at the first failure.
    func runSteps(_ steps: ArraySlice<(HCICommand, (CommandResult) throws -> Void)>,
                  completion: @escaping (Result<Void, HostError>) -> Void) {
        guard let (command, handler) = steps.first else { return completion(.success(())) }
        driver.send(command) { [weak self] result in
            switch result {
            case let .success(r):
                do {
                    try handler(r)
                } catch let error as HostError {
                    return completion(.failure(error))
                } catch {
                    return completion(.failure(.malformed("\(command.opcode) return parameters: \(error)")))
                }
                self?.runSteps(steps.dropFirst(), completion: completion)
            case let .failure(error):
                completion(.failure(error))
            }
        }
    }

    /// Sends a sequence of commands whose results need no handling.
    func send(_ commands: [HCICommand], completion: @escaping (Result<Void, HostError>) -> Void) {
        runSteps(commands.map { ($0, { _ in }) }[...], completion: completion)
    }

    func requireReady() -> HostError? {
        state == .ready ? nil : .notReady
    }

    // MARK: Violations

    /// Reports `violation` (from any layer) through `onViolation`.
    public func report(_ violation: ProtocolViolation) {
        onViolation?(violation)
    }

    private func receiveL2CAP(handle: UInt16, frame: L2CAPBasicFrame) {
        guard let connection = connections[handle] else {
            // Vol 4 Part E 5.4.2: ACL data belongs to a connection the controller announced.
            return report(ProtocolViolation(layer: .hci, kind: .unknownConnectionHandle, handle: handle,
                                            detail: "L2CAP PDU for connection handle 0x\(String(handle, radix: 16)), which this host does not have; dropped",
                                            octets: Array(frame.encoded.prefix(ProtocolViolation.octetLimit))))
        }
        connection.link.receive(frame: frame)
    }

    // MARK: Events

    private func handle(_ event: HCIEvent) {
        switch event {
        case let .leMeta(.advertisingReport(reports)):
            for report in reports { receiveAdvertisingReport(report) }
        case let .leMeta(.connectionComplete(e)):
            connectionComplete(e)
        case let .leMeta(.connectionUpdateComplete(e)):
            connections[e.handle]?.parametersUpdated(e)
        case let .leMeta(.remoteConnectionParameterRequest(e)):
            remoteConnectionParameterRequest(e)
        case let .leMeta(.longTermKeyRequest(handle, random, ediv)):
            longTermKeyRequest(handle: handle, random: random, ediv: ediv)
        case let .encryptionChange(e):
            connections[e.handle]?.encryptionChanged(status: e.status, enabled: e.encryptionEnabled != 0)
        case let .encryptionKeyRefreshComplete(status, handle):
            connections[handle]?.encryptionChanged(status: status, enabled: status.isSuccess)
        case let .disconnectionComplete(e):
            disconnectionComplete(e)
        case let .hardwareError(code):
            onProtocolError?(.invalidState("controller hardware error 0x\(String(code, radix: 16))"))
        default:
            break
        }
    }

    /// Vol 4 Part E 7.7.65.6: the peer's link layer asks for new parameters and the controller
    /// waits for this host's answer (Vol 6 Part B 5.1.7), so one always goes at once: LE Remote
    /// Connection Parameter Request Reply with the parameters asked for (7.8.31), or a Negative
    /// Reply with Unacceptable Connection Parameters (0x3B, 7.8.32), also for a handle the host
    /// does not know.
    private func remoteConnectionParameterRequest(_ e: LERemoteConnectionParameterRequest) {
        let p = ConnectionParameters(intervalMin: e.intervalMin, intervalMax: e.intervalMax, latency: e.maxLatency,
                                     supervisionTimeout: e.timeout)
        let connection = connections[e.handle]
        let accepted = connection.map { acceptsConnectionParameters($0, p) } ?? false
        let answer: HCICommand = accepted
            ? .leRemoteConnectionParameterRequestReply(LEConnectionUpdateParameters(
                handle: e.handle, intervalMin: e.intervalMin, intervalMax: e.intervalMax, maxLatency: e.maxLatency,
                supervisionTimeout: e.timeout))
            : .leRemoteConnectionParameterRequestNegativeReply(handle: e.handle, reason: .unacceptableConnectionParameters)
        driver.send(answer) { [weak self] result in
            if case let .failure(error) = result { self?.onProtocolError?(error) }
        }
        if let connection {
            onConnectionParameterRequest?(ConnectionParameterRequest(connection: connection, parameters: p, accepted: accepted,
                                                                     procedure: .linkLayer))
        }
    }

    private func disconnectionComplete(_ e: DisconnectionComplete) {
        guard e.status.isSuccess, let connection = connections.removeValue(forKey: e.handle) else { return }
        driver.connectionClosed(handle: e.handle)
        connection.closed(reason: e.reason)
        onDisconnection?(connection, e.reason)
    }

    private func transportClosed(_ error: TransportError) {
        state = .failed(.transport(error))
        let live = connections.values.sorted { $0.handle < $1.handle }
        connections.removeAll()
        for connection in live {
            connection.closed(reason: .hardwareFailure)
            onDisconnection?(connection, .hardwareFailure)
        }
        failRoleStates(with: .transport(error))
    }

    /// The controller lost all its state behind the host's back (a lab powered it off or reset it,
    /// as when a user turns Bluetooth off): every connection ends with `reason`, advertising,
    /// scanning and connecting stop, and the host is `.off` until `powerOn` configures the
    /// controller again. Nothing is sent to the controller.
    public func controllerDidReset(reason: HCIStatus = .hardwareFailure) {
        let live = connections.values.sorted { $0.handle < $1.handle }
        connections.removeAll()
        for connection in live {
            driver.connectionClosed(handle: connection.handle)
            connection.closed(reason: reason)
            onDisconnection?(connection, reason)
        }
        failRoleStates(with: .notReady)
        stopPrivacy()
        privacyState.address = nil
        state = .off
    }

    /// The controller is gone: nothing is advertising, scanning or connecting any more.
    private func failRoleStates(with error: HostError) {
        advertiser.isEnabled = false
        if let scanner {
            scanner.isEnabled = false
            self.scanner = nil
        }
        if let state = initiator {
            initiator = nil
            state.timer?.cancel()
            state.completion(.failure(error))
        }
    }
}

import BLERuntime
import BLEWire
import GATT
import HCI
import HostLink
import SMP

/// A connection's pairing and encryption state.
final class ConnectionSecurityState {
    var security = LinkSecurity()
    var pairing: PairingSession?
    var pairingCompletions: [(Result<PairingResult, PairingFailure>) -> Void] = []
    var encryptCompletions: [(Result<LinkSecurity, EncryptionFailure>) -> Void] = []
    /// What the key being switched to will give once Encryption Change confirms it.
    var pendingSecurity: LinkSecurity?
    /// The Security Manager Timer (Vol 3 Part H 3.4).
    var timer: LoopTimer?
    /// Set when the timer ran out: no SMP on this link any more.
    var timedOut = false
}

/// Pairing (the Security Manager, Vol 3 Part H) and encryption (Vol 4 Part E 7.8.24–7.8.26) on
/// one connection. A host pairs only when its configuration has `security`; without it the link
/// answers SMP as a host that does not pair (L2CAPLink+SMP.swift).
extension Connection {
    /// The 30 s of 3.4: from the start of a pairing, reset whenever an SMP command is sent.
    static let smpTimeout = TimeSpan.seconds(30)

    /// What protects the link now.
    public var security: LinkSecurity { securityState.security }

    /// The pairing running or last run on this link.
    public var pairing: PairingSession? { securityState.pairing }

    /// A central pairs (Pairing Request), with the host's settings or `settings`; the completion
    /// comes when the keys are distributed, or with the failure. A peripheral asks its central to
    /// (Security Request, 3.6.7) and completes when the central's pairing ends.
    public func pair(_ settings: SecuritySettings? = nil, completion: @escaping (Result<PairingResult, PairingFailure>) -> Void = { _ in }) {
        guard isConnected, let host, let settings = settings ?? host.configuration.security else {
            return completion(.failure(.sent(.pairingNotSupported)))
        }
        if let running = securityState.pairing, !running.isFinished {
            securityState.pairingCompletions.append(completion)
            return
        }
        guard !securityState.timedOut else { return completion(.failure(.timeout)) }
        securityState.pairingCompletions.append(completion)
        if role == .peripheral {
            var auth: AuthRequirements = settings.bonding ? [.bonding] : []
            if settings.mitm { auth.insert(.mitm) }
            if settings.secureConnections { auth.insert(.secureConnections) }
            sendSMP(.securityRequest(auth))
            return
        }
        startPairing(role: .initiator, settings: settings).start()
    }

    /// A central encrypts the link with the bond it has with this peer (LE Enable Encryption);
    /// the completion comes with Encryption Change.
    public func encrypt(completion: @escaping (Result<LinkSecurity, EncryptionFailure>) -> Void = { _ in }) {
        guard isConnected, let host else { return completion(.failure(.status(disconnectReason ?? .unknownConnectionIdentifier))) }
        guard role == .central else { return completion(.failure(.notCentral)) }
        guard let bond = host.bonds.bond(for: peer) else { return completion(.failure(.noBond)) }
        startEncryption(key: bond.longTermKey, ediv: bond.ediv, rand: bond.rand,
                        giving: Self.security(keySize: bond.keySize, authenticated: bond.authenticated, secureConnections: bond.secureConnections),
                        completion: completion)
    }

    static func security(keySize: UInt8, authenticated: Bool, secureConnections: Bool) -> LinkSecurity {
        var s = LinkSecurity()
        s.encrypted = true
        s.keySize = keySize
        s.authenticated = authenticated
        s.secureConnections = secureConnections
        return s
    }

    /// LE Enable Encryption with `key` (most significant octet first; HCI takes it least
    /// significant first, as it does Rand).
    private func startEncryption(key: [UInt8], ediv: UInt16, rand: [UInt8], giving security: LinkSecurity,
                                 completion: ((Result<LinkSecurity, EncryptionFailure>) -> Void)?) {
        guard let host else { return }
        if let completion { securityState.encryptCompletions.append(completion) }
        securityState.pendingSecurity = security
        host.driver.send(.leEnableEncryption(handle: handle, random: rand.reversed(), ediv: ediv, longTermKey: key.reversed())) {
            [weak self] result in
            guard case let .failure(error) = result, let self else { return }
            let status: HCIStatus
            if case let .command(_, s) = error { status = s } else { status = .unspecifiedError }
            self.finishEncryption(.failure(.status(status)))
            self.securityState.pairing?.encryptionChanged(status: status.rawValue)
        }
    }

    private func finishEncryption(_ result: Result<LinkSecurity, EncryptionFailure>) {
        let completions = securityState.encryptCompletions
        securityState.encryptCompletions.removeAll()
        for completion in completions { completion(result) }
    }

    // MARK: From the host's events

    /// Encryption Change or Key Refresh Complete for this link.
    func encryptionChanged(status: HCIStatus, enabled: Bool) {
        if status.isSuccess, enabled, let pending = securityState.pendingSecurity {
            securityState.security = pending
        } else if !status.isSuccess || !enabled {
            securityState.security = LinkSecurity()
        }
        securityState.pendingSecurity = nil
        serverConnection.security = securityState.security
        host?.onEncryptionChange?(self, status)
        finishEncryption(status.isSuccess ? .success(securityState.security) : .failure(.status(status)))
        if let session = securityState.pairing, !session.isFinished { session.encryptionChanged(status: status.rawValue) }
    }

    /// LE Long Term Key Request (a peripheral's controller asks for the key the central named):
    /// during a pairing the STK or new LTK (EDIV and Rand 0); else the bond's key when EDIV and
    /// Rand are the bond's; else a negative reply (the central's host then sees PIN or Key Missing).
    func keyRequested(random: [UInt8], ediv: UInt16) -> HCICommand {
        let rand = Array(random.reversed())
        let zero = rand.allSatisfy { $0 == 0 } && ediv == 0
        if zero, let session = securityState.pairing, let key = session.encryptionKey {
            securityState.pendingSecurity = Self.security(keySize: session.negotiatedKeySize,
                                                          authenticated: session.method.map { $0 != .justWorks } ?? false,
                                                          secureConnections: session.isSecureConnections)
            return .leLongTermKeyRequestReply(handle: handle, longTermKey: key.reversed())
        }
        if let bond = host?.bonds.bond(for: peer), bond.ediv == ediv, bond.rand == rand {
            securityState.pendingSecurity = Self.security(keySize: bond.keySize, authenticated: bond.authenticated,
                                                          secureConnections: bond.secureConnections)
            return .leLongTermKeyRequestReply(handle: handle, longTermKey: bond.longTermKey.reversed())
        }
        return .leLongTermKeyRequestNegativeReply(handle: handle)
    }

    // MARK: SMP

    /// Each SMP PDU received; false leaves it to the link (no pairing in progress).
    func receiveSMP(_ payload: [UInt8]) -> Bool {
        guard let host, let settings = host.configuration.security else { return false }
        if securityState.timedOut { return true }   // 3.4: no further SMP on this link
        if let session = securityState.pairing, !session.isFinished {
            session.receive(payload)
            return true
        }
        switch (payload.first, role) {
        case (SMPCode.pairingRequest.rawValue?, .peripheral) where payload.count == 7:
            // 2.3.6: after a failed authentication, a peer must wait before it tries again.
            if let until = host.repeatedAttempts[peer]?.until, host.loop.now < until {
                securityState.pairing = nil
                link.sendSMP(SMPPDU.pairingFailed(.repeatedAttempts).encoded)
                host.onPairing?(self, .failure(.sent(.repeatedAttempts)))
                return true
            }
            startPairing(role: .responder, settings: settings).receive(payload)
            return true
        case (SMPCode.securityRequest.rawValue?, .central) where payload.count == 2:
            securityRequested()
            return true
        default:
            return false
        }
    }

    /// A peripheral asked for security: encrypt with the bond, else pair.
    private func securityRequested() {
        guard let host, host.answersSecurityRequests else { return }
        if host.bonds.bond(for: peer) != nil {
            encrypt()
        } else {
            pair()
        }
    }

    private func sendSMP(_ pdu: SMPPDU) {
        link.sendSMP(pdu.encoded)
        restartSMPTimer()
    }

    private func restartSMPTimer() {
        guard let host else { return }
        securityState.timer?.cancel()
        securityState.timer = host.loop.schedule(after: Self.smpTimeout) { [weak self] in self?.smpTimerExpired() }
    }

    private func smpTimerExpired() {
        securityState.timer = nil
        guard let session = securityState.pairing, !session.isFinished else { return }
        securityState.timedOut = true
        session.timedOut()
    }

    @discardableResult
    private func startPairing(role pairingRole: PairingRole, settings given: SecuritySettings) -> PairingSession {
        let host = self.host!
        var settings = given
        // A host with privacy gives its IRK and identity address to the peers it bonds with.
        if settings.identity == nil, let identity = host.privacyIdentity { settings.identity = identity }
        // OOB data the host holds (handed over before the pairing, as an NFC tap does).
        if settings.oob == nil, let oob = host.outOfBandData { settings.oob = oob }
        let local = Self.smpAddress(localAddress), remote = Self.smpAddress(peer)
        let session = PairingSession(role: pairingRole, settings: settings,
                                     initiator: pairingRole == .initiator ? local : remote,
                                     responder: pairingRole == .initiator ? remote : local,
                                     random: { [unowned host] in UInt8(truncatingIfNeeded: host.securityRandom.next()) })
        securityState.pairing = session
        session.send = { [weak self] pdu in self?.sendSMP(pdu) }
        session.startEncryption = { [weak self, unowned session] key, ediv, rand in
            self?.startEncryption(key: key, ediv: ediv, rand: rand,
                                  giving: Self.security(keySize: session.negotiatedKeySize,
                                                        authenticated: session.method.map { $0 != .justWorks } ?? false,
                                                        secureConnections: session.isSecureConnections),
                                  completion: nil)
        }
        session.onViolation = { [weak self, weak host] detail in
            guard let self else { return }
            host?.report(ProtocolViolation(layer: .smp, kind: .unexpectedCommand, handle: self.handle, detail: detail, octets: []))
        }
        session.onComplete = { [weak self] result in self?.pairingEnded(result) }
        restartSMPTimer()
        return session
    }

    private func pairingEnded(_ result: Result<PairingResult, PairingFailure>) {
        securityState.timer?.cancel()
        securityState.timer = nil
        host?.noteAttempt(by: peer, result)
        if case let .success(outcome) = result, outcome.bonded, let key = outcome.longTermKey, let host {
            host.bonds.store(Bond(peer: peer, peerIdentity: outcome.peerIdentity, longTermKey: key, ediv: outcome.ediv, rand: outcome.rand,
                                  keySize: outcome.keySize, authenticated: outcome.authenticated,
                                  secureConnections: outcome.secureConnections))
        }
        host?.onPairing?(self, result)
        let completions = securityState.pairingCompletions
        securityState.pairingCompletions.removeAll()
        for completion in completions { completion(result) }
    }

    /// The link ended: pending pairings and encryptions fail.
    func securityEnded(reason: HCIStatus) {
        securityState.timer?.cancel()
        securityState.timer = nil
        if let session = securityState.pairing, !session.isFinished { session.timedOut() }
        finishEncryption(.failure(.status(reason)))
    }

    /// An address as SMP's functions take it.
    static func smpAddress(_ address: LEAddress) -> SMPAddress {
        let raw = address.address.rawValue
        return SMPAddress(isRandom: address.type != .public, octets: (0..<6).reversed().map { UInt8(truncatingIfNeeded: raw >> (8 * UInt64($0))) })
    }
}

/// The repeated attempts rule's state for one peer (Vol 3 Part H 2.3.6).
struct RepeatedAttempts {
    var failures: Int
    var until: Instant
}

extension BLEHost {
    /// Records how a pairing with `peer` ended. An authentication this device found wrong (a
    /// confirm value, a DHKey check, a refused comparison) makes the peer wait before its next
    /// Pairing Request is taken: `repeatedAttemptsInterval`, doubled at each further failure (at
    /// most 64 times); until then it is answered Pairing Failed "Repeated Attempts" (0x09). A
    /// pairing that succeeds forgets the failures.
    func noteAttempt(by peer: LEAddress, _ result: Result<PairingResult, PairingFailure>) {
        switch result {
        case .success:
            repeatedAttempts[peer] = nil
        case let .failure(.sent(reason)) where [.confirmValueFailed, .dhKeyCheckFailed, .numericComparisonFailed].contains(reason):
            let failures = (repeatedAttempts[peer]?.failures ?? 0) + 1
            let wait = TimeSpan(nanoseconds: repeatedAttemptsInterval.nanoseconds << Int64(min(failures - 1, 6)))
            repeatedAttempts[peer] = RepeatedAttempts(failures: failures, until: loop.now + wait)
        case .failure:
            break
        }
    }

    /// LE Long Term Key Request: the connection picks the answer; an unknown handle gets a
    /// negative reply.
    func longTermKeyRequest(handle: UInt16, random: [UInt8], ediv: UInt16) {
        let answer = connections[handle]?.keyRequested(random: random, ediv: ediv) ?? .leLongTermKeyRequestNegativeReply(handle: handle)
        driver.send(answer) { [weak self] result in
            if case let .failure(error) = result { self?.onProtocolError?(error) }
        }
    }
}

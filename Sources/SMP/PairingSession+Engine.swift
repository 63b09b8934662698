import BLECrypto
import HostLink

/// One pairing on one link, as initiator or responder (Core Vol 3 Part H 2.3, C.1–C.4 for the
/// message sequences): Pairing Feature Exchange, then LE legacy pairing (Just Works, Passkey
/// Entry, OOB: c1/s1, the STK) or LE Secure Connections (Just Works, Numeric Comparison, Passkey
/// Entry, OOB: P-256, f4/f5/f6/g2, the LTK), encryption, and key distribution.
///
/// A pure state machine: commands in through `receive`, out through `send`; encryption through
/// `startEncryption` (initiator) and `encryptionKey` (responder, for the controller's LTK
/// Request), completed by `encryptionChanged`. Random numbers come from `random`, the lab's
/// seeded generator, so a scenario pairs the same way every run. Time is the owner's: it calls
/// `timedOut()` when 30 s pass without progress (3.4).
///
/// A command out of sequence, or one that cannot be decoded, fails the pairing with Pairing
/// Failed: Invalid Parameters for a bad length or field (3.5.5), Unspecified Reason for a command
/// this state does not expect. A reserved code is ignored (3.3).
public final class PairingSession {
    public let role: PairingRole
    public let settings: SecuritySettings
    public let initiatorAddress: SMPAddress
    public let responderAddress: SMPAddress

    /// Each command to send to the peer (SMP, CID 0x0006).
    public var send: (SMPPDU) -> Void = { _ in }
    /// Initiator: encrypt the link with this key (LE Start Encryption, Vol 4 Part E 7.8.24);
    /// keys in the specification's order (most significant octet first).
    public var startEncryption: (_ key: [UInt8], _ ediv: UInt16, _ rand: [UInt8]) -> Void = { _, _, _ in }
    /// The passkey this device shows its user (Passkey Entry, displaying side).
    public var onDisplayPasskey: ((UInt32) -> Void)?
    /// The six digits this device shows for Numeric Comparison.
    public var onNumericComparison: ((UInt32) -> Void)?
    /// The end, once: the result or why it failed.
    public var onComplete: ((Result<PairingResult, PairingFailure>) -> Void)?
    /// Each command received that broke a rule, with what was done about it.
    public var onViolation: ((String) -> Void)?

    /// Responder: the key to answer the controller's LE Long Term Key Request with during this
    /// pairing (the STK, or Secure Connections' LTK; EDIV and Rand are 0). Nil until generated.
    public private(set) var encryptionKey: [UInt8]?
    public private(set) var method: PairingMethod?
    /// The negotiated encryption key size, once the features are exchanged.
    public var negotiatedKeySize: UInt8 { keySize }
    /// Whether this pairing is LE Secure Connections (known once the features are exchanged).
    public var isSecureConnections: Bool { secureConnections }
    /// The six digits Numeric Comparison showed, once it did.
    public private(set) var lastNumericComparison: UInt32?
    public private(set) var isFinished = false
    /// The outcome once finished.
    public private(set) var outcome: Result<PairingResult, PairingFailure>?

    let random: () -> UInt8

    enum Stage: Equatable {
        case idle, awaitingResponse, awaitingRequest, awaitingPublicKey, awaitingConfirm, awaitingRandom, awaitingDHKeyCheck,
             awaitingEncryption, receivingKeys, done
    }
    var stage: Stage
    var preq: PairingFeatures?
    var pres: PairingFeatures?
    var keySize: UInt8 = 16
    var secureConnections = false
    // Legacy
    var tk = [UInt8](repeating: 0, count: 16)
    var localRandom = [UInt8](repeating: 0, count: 16)   // Mrand/Srand; Na/Nb (per round for passkey)
    var peerConfirm: [UInt8] = []
    // Secure Connections
    var keyPair: P256KeyPair?
    var peerPublicKey: (x: [UInt8], y: [UInt8])?
    var dhKey: [UInt8] = []
    var passkey: UInt32 = 0
    var passkeyRound = 0
    var na: [UInt8] = []
    var nb: [UInt8] = []
    var ra = [UInt8](repeating: 0, count: 16)
    var rb = [UInt8](repeating: 0, count: 16)
    var macKey: [UInt8] = []
    var ltk: [UInt8] = []
    // Key distribution
    var expectedKeys: [SMPCode] = []
    var receivedKeys = PairingResult(method: .justWorks, secureConnections: false, authenticated: false, bonded: false, keySize: 16,
                                     longTermKey: nil, ediv: 0, rand: [UInt8](repeating: 0, count: 8))
    var distributedLTK: (ltk: [UInt8], ediv: UInt16, rand: [UInt8])?
    var peerIRK: [UInt8]?

    public init(role: PairingRole, settings: SecuritySettings, initiator: SMPAddress, responder: SMPAddress, random: @escaping () -> UInt8) {
        self.role = role
        self.settings = settings
        self.initiatorAddress = initiator
        self.responderAddress = responder
        self.random = random
        stage = role == .initiator ? .idle : .awaitingRequest
    }

    /// The features this device sends: its IO, OOB flag, AuthReq and the keys it offers and asks.
    func localFeatures(request: PairingFeatures?) -> PairingFeatures {
        var auth: AuthRequirements = [.ct2]
        if settings.bonding { auth.insert(.bonding) }
        if settings.mitm { auth.insert(.mitm) }
        if settings.secureConnections { auth.insert(.secureConnections) }
        var offered: KeyDistribution = [.encryptionKey]
        if settings.identity != nil { offered.insert(.identityKey) }
        if settings.csrk != nil { offered.insert(.signingKey) }
        let oob = settings.secureConnections ? settings.oob?.peer != nil || settings.oob?.legacyTK != nil : settings.oob?.legacyTK != nil
        guard let request else {
            return PairingFeatures(io: settings.io, oobDataPresent: oob, authRequirements: auth, maxKeySize: settings.maxKeySize,
                                   initiatorKeys: offered, responderKeys: settings.keysToRequest)
        }
        // The responder may only clear bits the initiator set (3.6.1).
        return PairingFeatures(io: settings.io, oobDataPresent: oob, authRequirements: auth, maxKeySize: settings.maxKeySize,
                               initiatorKeys: request.initiatorKeys.intersection(settings.keysToRequest).subtracting(.linkKey),
                               responderKeys: request.responderKeys.intersection(offered))
    }

    // MARK: Starting

    /// Initiator: sends Pairing Request.
    public func start() {
        guard role == .initiator, stage == .idle else { return }
        let features = localFeatures(request: nil)
        preq = features
        stage = .awaitingResponse
        send(.pairingRequest(features))
    }

    /// 30 s without the next command (3.4): the pairing fails, and no Pairing Failed is sent.
    public func timedOut() {
        guard !isFinished else { return }
        finish(.failure(.timeout))
    }

    /// The link's encryption changed (Encryption Change, or Key Refresh Complete): with status
    /// 0 the keys are distributed; else the pairing fails.
    public func encryptionChanged(status: UInt8) {
        guard stage == .awaitingEncryption else { return }
        guard status == 0 else {
            finish(.failure(.encryptionFailed(status: status)))
            return
        }
        guard let pres else { return }
        // The responder distributes first, then the initiator (3.6.1, Figure 3.12).
        if role == .responder {
            distribute(effective(pres.responderKeys))
            expect(effective(pres.initiatorKeys))
        } else {
            expect(effective(pres.responderKeys))
        }
    }

    /// Keys that are really exchanged: in Secure Connections the LTK comes from f5, so the
    /// EncKey bit is ignored (3.6.1); LinkKey concerns BR/EDR only.
    func effective(_ keys: KeyDistribution) -> KeyDistribution {
        var keys = keys.subtracting(.linkKey)
        if secureConnections { keys.remove(.encryptionKey) }
        return keys
    }

    // MARK: Receiving

    public func receive(_ octets: [UInt8]) {
        guard !isFinished || stage == .idle || stage == .awaitingRequest else { return }
        let pdu: SMPPDU
        do { pdu = try SMPPDU.decode(octets) } catch let error as SMPDecodingError {
            onViolation?("\(error)")
            if let answer = error.answer { fail(answer) }
            return
        } catch { return }
        do { try handle(pdu) } catch let error as CryptoError {
            onViolation?("\(error)")
            fail(.unspecifiedReason)
        } catch {}
    }

    func handle(_ pdu: SMPPDU) throws {
        switch (pdu, stage) {
        case let (.pairingFailed(reason), _):
            finish(.failure(.received(reason)))
        case (.keypressNotification, _):
            break   // progress of the peer's user: nothing to do here
        case let (.pairingRequest(request), .awaitingRequest) where role == .responder:
            try receiveRequest(request)
        case let (.pairingResponse(response), .awaitingResponse) where role == .initiator:
            try receiveResponse(response)
        case let (.pairingPublicKey(x, y), .awaitingPublicKey) where secureConnections:
            try receivePublicKey(x: x, y: y)
        case let (.pairingConfirm(value), .awaitingConfirm):
            try receiveConfirm(value)
        case let (.pairingRandom(value), .awaitingRandom):
            try receiveRandom(value)
        case let (.pairingDHKeyCheck(value), .awaitingDHKeyCheck) where secureConnections:
            try receiveDHKeyCheck(value)
        case (_, .receivingKeys) where expectedKeys.first == pdu.code:
            receiveKey(pdu)
        default:
            onViolation?("\(pdu.code) out of sequence")
            fail(.unspecifiedReason)
        }
    }

    // MARK: Feature exchange (2.3.5.1)

    func receiveRequest(_ request: PairingFeatures) throws {
        guard settings.pairable else { return fail(.pairingNotSupported) }
        let response = localFeatures(request: request)
        preq = request
        pres = response
        guard try negotiate() else { return }
        send(.pairingResponse(response))
        try beginAuthentication()
    }

    func receiveResponse(_ response: PairingFeatures) throws {
        guard let preq else { return }
        // The responder may clear key bits, never set them (3.6.1).
        guard response.initiatorKeys.isSubset(of: preq.initiatorKeys), response.responderKeys.isSubset(of: preq.responderKeys) else {
            onViolation?("Pairing Response sets key distribution bits the request did not")
            return fail(.invalidParameters)
        }
        pres = response
        guard try negotiate() else { return }
        try beginAuthentication()
    }

    /// Key size, method and requirements; false when it failed the pairing.
    func negotiate() throws -> Bool {
        guard let preq, let pres else { return false }
        keySize = min(preq.maxKeySize, pres.maxKeySize)
        guard keySize >= settings.minKeySize else {
            fail(.encryptionKeySize)
            return false
        }
        secureConnections = preq.authRequirements.contains(.secureConnections) && pres.authRequirements.contains(.secureConnections)
        if settings.secureConnectionsOnly && !secureConnections {
            fail(.authenticationRequirements)
            return false
        }
        let chosen = Self.method(initiator: preq, responder: pres, secureConnections: secureConnections)
        method = chosen
        if settings.mitm && chosen == .justWorks {
            fail(.authenticationRequirements)
            return false
        }
        if chosen == .oob && !secureConnections && settings.oob?.legacyTK == nil {
            fail(.oobNotAvailable)
            return false
        }
        return true
    }

    /// The pairing method (2.3.5.1, Tables 2.6–2.8).
    public static func method(initiator: PairingFeatures, responder: PairingFeatures, secureConnections: Bool) -> PairingMethod {
        if secureConnections {
            if initiator.oobDataPresent || responder.oobDataPresent { return .oob }
        } else if initiator.oobDataPresent && responder.oobDataPresent {
            return .oob
        }
        let mitm = initiator.authRequirements.contains(.mitm) || responder.authRequirements.contains(.mitm)
        guard mitm else { return .justWorks }
        return ioMethod(initiator: initiator.io, responder: responder.io, secureConnections: secureConnections)
    }

    /// Table 2.8: the method from both IO capabilities, when MITM protection is asked for.
    static func ioMethod(initiator: IOCapability, responder: IOCapability, secureConnections sc: Bool) -> PairingMethod {
        switch (responder, initiator) {
        case (.noInputNoOutput, _), (_, .noInputNoOutput): return .justWorks
        case (.displayOnly, .displayOnly), (.displayOnly, .displayYesNo), (.displayYesNo, .displayOnly): return .justWorks
        case (.displayYesNo, .displayYesNo): return sc ? .numericComparison : .justWorks
        case (.displayYesNo, .keyboardDisplay), (.keyboardDisplay, .displayYesNo), (.keyboardDisplay, .keyboardDisplay):
            return sc ? .numericComparison : .passkeyEntry
        default: return .passkeyEntry
        }
    }

    /// Passkey Entry: whether this device shows the passkey (the other types it) (Table 2.8).
    /// The responder displays when it has a display and no keyboard, or when the initiator has
    /// only a keyboard; two keyboards both type the same passkey, and neither displays.
    var displaysPasskey: Bool {
        guard let preq, let pres else { return false }
        let (i, r) = (preq.io, pres.io)
        if i == .keyboardOnly && r == .keyboardOnly { return false }
        let responderDisplays = r == .displayOnly || r == .displayYesNo || (r == .keyboardDisplay && i == .keyboardOnly)
        return (role == .responder) == responderDisplays
    }

    /// The passkey this side uses: shown (the setting or a random one) or typed (the setting,
    /// nil when the user gives none).
    func obtainPasskey() -> UInt32? {
        if displaysPasskey {
            let shown = settings.passkey.map { $0 % 1_000_000 } ?? randomPasskey()
            onDisplayPasskey?(shown)
            return shown
        }
        return settings.passkey.map { $0 % 1_000_000 }
    }

    func randomPasskey() -> UInt32 {
        let value = (0..<4).reduce(UInt32(0)) { acc, _ in acc << 8 | UInt32(random()) }
        return value % 1_000_000
    }

    func randomOctets(_ count: Int) -> [UInt8] { (0..<count).map { _ in random() } }

    // MARK: Authentication, phase 2

    func beginAuthentication() throws {
        if secureConnections {
            keyPair = try settings.debugKey ? .debug : settings.oob?.localKeyPair ?? P256KeyPair(random: random)
            stage = .awaitingPublicKey
            if role == .initiator { sendPublicKey() }
            return
        }
        // LE legacy pairing: the TK (2.3.5.2–2.3.5.4).
        switch method {
        case .passkeyEntry?:
            guard let key = obtainPasskey() else { return fail(.passkeyEntryFailed) }
            tk = [UInt8](repeating: 0, count: 12) + [UInt8(key >> 24 & 0xFF), UInt8(key >> 16 & 0xFF), UInt8(key >> 8 & 0xFF), UInt8(key & 0xFF)]
        case .oob?:
            tk = settings.oob?.legacyTK ?? tk
        default:
            tk = [UInt8](repeating: 0, count: 16)
        }
        localRandom = randomOctets(16)
        stage = .awaitingConfirm
        if role == .initiator { send(.pairingConfirm(try legacyConfirm(localRandom))) }
    }

    func legacyConfirm(_ r: [UInt8]) throws -> [UInt8] {
        guard let preq, let pres else { return [] }
        // c1's preq/pres: the commands as numbers whose least significant octet is the code.
        let request = Array(SMPPDU.pairingRequest(preq).encoded.reversed())
        let response = Array(SMPPDU.pairingResponse(pres).encoded.reversed())
        return try SecurityToolbox.c1(k: tk, r: r, preq: request, pres: response, iat: initiatorAddress.isRandom ? 1 : 0,
                                      ia: initiatorAddress.octets, rat: responderAddress.isRandom ? 1 : 0, ra: responderAddress.octets)
    }

    func sendPublicKey() {
        guard let keyPair else { return }
        send(.pairingPublicKey(x: keyPair.x, y: keyPair.y))
    }

    var localX: [UInt8] { keyPair?.x ?? [] }
    var peerX: [UInt8] { peerPublicKey?.x ?? [] }
    /// PKax and PKbx.
    var pkax: [UInt8] { role == .initiator ? localX : peerX }
    var pkbx: [UInt8] { role == .initiator ? peerX : localX }

    func receivePublicKey(x: [UInt8], y: [UInt8]) throws {
        guard let keyPair else { return }
        if x == keyPair.x && y == keyPair.y && !settings.debugKey {
            // The peer reflected this device's own key (a known attack): refuse it.
            onViolation?("the peer's public key is this device's own")
            return fail(.dhKeyCheckFailed)
        }
        do { dhKey = try keyPair.dhKey(peerX: x, peerY: y) } catch CryptoError.invalidKey(let why) {
            onViolation?(why)
            return fail(.dhKeyCheckFailed)
        }
        peerPublicKey = (x, y)
        if role == .responder { sendPublicKey() }
        switch method {
        case .passkeyEntry?:
            guard let key = obtainPasskey() else { return fail(.passkeyEntryFailed) }
            passkey = key
            passkeyRound = 0
            let r = passkeyR
            ra = r; rb = r
            stage = .awaitingConfirm
            if role == .initiator { try sendPasskeyConfirm() }
        case .oob?:
            // 2.3.5.6.4: check the peer's OOB confirm value against its public key; r is 0 for
            // a side whose data the other did not receive.
            if let peerOOB = settings.oob?.peer {
                guard try OOBData.confirm(publicKeyX: x, random: peerOOB.random) == peerOOB.confirm else { return fail(.confirmValueFailed) }
            }
            let zero = [UInt8](repeating: 0, count: 16)
            let peerRandom = settings.oob?.peer?.random ?? zero
            let peerHasOurs = (role == .initiator ? pres : preq)?.oobDataPresent ?? false
            let ownRandom = peerHasOurs ? settings.oob?.localRandom ?? zero : zero
            if role == .initiator { ra = ownRandom; rb = peerRandom } else { rb = ownRandom; ra = peerRandom }
            localRandom = randomOctets(16)
            stage = .awaitingRandom
            if role == .initiator { na = localRandom; send(.pairingRandom(na)) }
        default:
            // Just Works and Numeric Comparison (2.3.5.6.2): the responder commits to Nb.
            localRandom = randomOctets(16)
            if role == .responder {
                nb = localRandom
                send(.pairingConfirm(try SecurityToolbox.f4(u: pkbx, v: pkax, x: nb, z: 0)))
                stage = .awaitingRandom
            } else {
                stage = .awaitingConfirm
            }
        }
    }

    /// Passkey Entry round i's rai/rbi (2.3.5.6.3): 0x80 | bit i of the passkey.
    var passkeyBit: UInt8 { 0x80 | UInt8((passkey >> UInt32(passkeyRound)) & 1) }
    var passkeyR: [UInt8] {
        [UInt8](repeating: 0, count: 12) + [UInt8(passkey >> 24 & 0xFF), UInt8(passkey >> 16 & 0xFF), UInt8(passkey >> 8 & 0xFF), UInt8(passkey & 0xFF)]
    }

    func sendPasskeyConfirm() throws {
        localRandom = randomOctets(16)
        let commitment = role == .initiator
            ? try SecurityToolbox.f4(u: pkax, v: pkbx, x: localRandom, z: passkeyBit)
            : try SecurityToolbox.f4(u: pkbx, v: pkax, x: localRandom, z: passkeyBit)
        send(.pairingConfirm(commitment))
    }

    func receiveConfirm(_ value: [UInt8]) throws {
        peerConfirm = value
        if !secureConnections {
            if role == .responder {
                send(.pairingConfirm(try legacyConfirm(localRandom)))
                stage = .awaitingRandom
            } else {
                stage = .awaitingRandom
                send(.pairingRandom(localRandom))
            }
            return
        }
        if method == .passkeyEntry {
            if role == .responder { try sendPasskeyConfirm() } else { send(.pairingRandom(localRandom)) }
            stage = .awaitingRandom
            return
        }
        // Just Works / Numeric Comparison: the initiator got Cb; now Na.
        na = localRandom
        stage = .awaitingRandom
        send(.pairingRandom(na))
    }

    func receiveRandom(_ value: [UInt8]) throws {
        if !secureConnections { return try receiveLegacyRandom(value) }
        switch method {
        case .passkeyEntry?:
            let expected = role == .initiator
                ? try SecurityToolbox.f4(u: pkbx, v: pkax, x: value, z: passkeyBit)
                : try SecurityToolbox.f4(u: pkax, v: pkbx, x: value, z: passkeyBit)
            guard expected == peerConfirm else { return fail(.confirmValueFailed) }
            if role == .responder { send(.pairingRandom(localRandom)) }
            if role == .initiator { na = localRandom; nb = value } else { na = value; nb = localRandom }
            passkeyRound += 1
            if passkeyRound < 20 {
                stage = .awaitingConfirm
                if role == .initiator { try sendPasskeyConfirm() }
            } else {
                try beginDHKeyCheck()
            }
        case .oob?:
            if role == .initiator {
                nb = value
            } else {
                na = value
                nb = localRandom
                send(.pairingRandom(nb))
            }
            try beginDHKeyCheck()
        default:
            if role == .initiator {
                nb = value
                guard try SecurityToolbox.f4(u: pkbx, v: pkax, x: nb, z: 0) == peerConfirm else { return fail(.confirmValueFailed) }
            } else {
                na = value
                send(.pairingRandom(nb))
            }
            if method == .numericComparison {
                let number = try SecurityToolbox.g2(u: pkax, v: pkbx, x: na, y: nb) % 1_000_000
                lastNumericComparison = number
                onNumericComparison?(number)
                guard settings.confirmsNumericComparison else { return fail(.numericComparisonFailed) }
            }
            try beginDHKeyCheck()
        }
    }

    func receiveLegacyRandom(_ value: [UInt8]) throws {
        guard try legacyConfirm(value) == peerConfirm else { return fail(.confirmValueFailed) }
        let (srand, mrand) = role == .initiator ? (value, localRandom) : (localRandom, value)
        let stk = masked(try SecurityToolbox.s1(k: tk, r1: srand, r2: mrand))
        stage = .awaitingEncryption
        if role == .responder {
            encryptionKey = stk
            send(.pairingRandom(localRandom))
        } else {
            startEncryption(stk, 0, [UInt8](repeating: 0, count: 8))
        }
    }

    /// A key reduced to the negotiated size (3.5.1): its most significant octets zeroed.
    func masked(_ key: [UInt8]) -> [UInt8] {
        let drop = 16 - Int(keySize)
        return [UInt8](repeating: 0, count: drop) + key.dropFirst(drop)
    }

    // MARK: Authentication stage 2 (2.3.5.6.5)

    func beginDHKeyCheck() throws {
        guard let preq else { return }
        let a = initiatorAddress.typed, b = responderAddress.typed
        (macKey, ltk) = try SecurityToolbox.f5(w: dhKey, n1: na, n2: nb, a1: a, a2: b)
        stage = .awaitingDHKeyCheck
        if role == .initiator {
            send(.pairingDHKeyCheck(try SecurityToolbox.f6(w: macKey, n1: na, n2: nb, r: rb, ioCap: preq.ioCap, a1: a, a2: b)))
        }
    }

    func receiveDHKeyCheck(_ value: [UInt8]) throws {
        guard let preq, let pres else { return }
        let a = initiatorAddress.typed, b = responderAddress.typed
        if role == .responder {
            guard try SecurityToolbox.f6(w: macKey, n1: na, n2: nb, r: rb, ioCap: preq.ioCap, a1: a, a2: b) == value else {
                return fail(.dhKeyCheckFailed)
            }
            send(.pairingDHKeyCheck(try SecurityToolbox.f6(w: macKey, n1: nb, n2: na, r: ra, ioCap: pres.ioCap, a1: b, a2: a)))
            encryptionKey = masked(ltk)
            stage = .awaitingEncryption
        } else {
            guard try SecurityToolbox.f6(w: macKey, n1: nb, n2: na, r: ra, ioCap: pres.ioCap, a1: b, a2: a) == value else {
                return fail(.dhKeyCheckFailed)
            }
            stage = .awaitingEncryption
            startEncryption(masked(ltk), 0, [UInt8](repeating: 0, count: 8))
        }
    }

    // MARK: Key distribution (3.6.1)

    func distribute(_ keys: KeyDistribution) {
        if keys.contains(.encryptionKey) {
            let key = masked(randomOctets(16))
            let ediv = UInt16(random()) << 8 | UInt16(random())
            let rand = randomOctets(8)
            distributedLTK = (key, ediv, rand)
            send(.encryptionInformation(ltk: key))
            send(.centralIdentification(ediv: ediv, rand: rand))
        }
        if keys.contains(.identityKey), let identity = settings.identity {
            send(.identityInformation(irk: identity.irk))
            send(.identityAddressInformation(identity.address))
        }
        if keys.contains(.signingKey), let csrk = settings.csrk {
            send(.signingInformation(csrk: csrk))
        }
    }

    func expect(_ keys: KeyDistribution) {
        expectedKeys = []
        if keys.contains(.encryptionKey) { expectedKeys += [.encryptionInformation, .centralIdentification] }
        if keys.contains(.identityKey) { expectedKeys += [.identityInformation, .identityAddressInformation] }
        if keys.contains(.signingKey) { expectedKeys.append(.signingInformation) }
        stage = .receivingKeys
        keysReceived()
    }

    func receiveKey(_ pdu: SMPPDU) {
        expectedKeys.removeFirst()
        switch pdu {
        case let .encryptionInformation(key): receivedKeys.longTermKey = key
        case let .centralIdentification(ediv, rand): receivedKeys.ediv = ediv; receivedKeys.rand = rand
        case let .identityInformation(irk): peerIRK = irk
        case let .identityAddressInformation(address):
            receivedKeys.peerIdentity = SecurityIdentity(irk: peerIRK ?? [], address: address)
        case let .signingInformation(csrk): receivedKeys.peerCSRK = csrk
        default: break
        }
        keysReceived()
    }

    /// All the peer's keys are in: the initiator now sends its own; then the pairing is done.
    func keysReceived() {
        guard expectedKeys.isEmpty, let preq, let pres else { return }
        if role == .initiator { distribute(effective(pres.initiatorKeys)) }
        let bonded = preq.authRequirements.contains(.bonding) && pres.authRequirements.contains(.bonding)
        var result = PairingResult(method: method ?? .justWorks, secureConnections: secureConnections,
                                   authenticated: method != .justWorks, bonded: bonded, keySize: keySize,
                                   longTermKey: nil, ediv: 0, rand: [UInt8](repeating: 0, count: 8))
        if secureConnections {
            result.longTermKey = masked(ltk)
        } else if role == .initiator, let key = receivedKeys.longTermKey {
            // The peripheral's LTK, EDIV and Rand: what the central sends to encrypt next time.
            result.longTermKey = key
            result.ediv = receivedKeys.ediv
            result.rand = receivedKeys.rand
        } else if role == .responder, let own = distributedLTK {
            result.longTermKey = own.ltk
            result.ediv = own.ediv
            result.rand = own.rand
        }
        result.peerIdentity = receivedKeys.peerIdentity
        result.peerCSRK = receivedKeys.peerCSRK
        finish(.success(result))
    }

    // MARK: Ending

    /// Sends Pairing Failed with `reason` and ends the pairing.
    func fail(_ reason: SMPPairingFailedReason) {
        guard !isFinished else { return }
        send(.pairingFailed(reason))
        finish(.failure(.sent(reason)))
    }

    func finish(_ result: Result<PairingResult, PairingFailure>) {
        guard !isFinished else { return }
        isFinished = true
        stage = .done
        outcome = result
        onComplete?(result)
    }
}

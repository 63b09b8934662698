import BLECrypto
import BLERuntime
import BLEWire
import HCI
import HostLink
import SMP

/// LE privacy in the host (Core Vol 3 Part C 10.7; Vol 6 Part B 1.3.2.2): a device that
/// advertises from a resolvable private address (RPA) it changes every `rotation`, and gives its
/// IRK and identity address to the devices it bonds with; those resolve its RPAs back to it.
public struct PrivacySettings: Equatable, Sendable {
    /// The Identity Resolving Key (16 octets, most significant first); nil: drawn from the
    /// host's seeded random numbers at power-on.
    public var irk: [UInt8]?
    /// How often the address changes (T_GAP(private_addr_int), 15 minutes recommended).
    public var rotation: TimeSpan

    public init(irk: [UInt8]? = nil, rotation: TimeSpan = .seconds(900)) {
        self.irk = irk
        self.rotation = rotation
    }
}

/// What a host with privacy keeps: its IRK, the current RPA and the rotation timer.
final class PrivacyState {
    var irk: [UInt8] = []
    var address: BDAddr?
    var timer: LoopTimer?
    /// Addresses used so far, in order (for tests and reports).
    var history: [BDAddr] = []
    /// Which bond's IRK resolves each address heard (`resolvedIdentity`), valid for the bonds
    /// as they were at `resolutionGeneration`.
    var resolution = RPAResolutionCache()
    var resolutionGeneration = -1
}

/// Resolvable private addresses with GAP's address types: the form, making and resolving live in
/// BLECrypto (`ResolvablePrivateAddress`, shared with the sim's controller); these add the
/// address type, which only a random address can have the form of.
extension ResolvablePrivateAddress {
    /// Whether `address` has the form of an RPA (random, top bits 0b01).
    public static func isResolvable(_ address: LEAddress) -> Bool {
        address.type != .public && hasResolvableForm(address.address.rawValue)
    }

    /// An RPA for `irk` from 22 random bits (three octets of `random`; not all 0, not all 1, 1.3.2.2).
    public static func make(irk: [UInt8], random: () -> UInt8) throws -> BDAddr {
        BDAddr(rawValue: try make(irk: irk, draw: { (0..<3).reduce(UInt64(0)) { acc, _ in acc << 8 | UInt64(random()) } }))
    }

    /// Whether `address` was made with `irk` (1.3.2.3: recompute the hash from its prand).
    public static func resolves(_ address: LEAddress, with irk: [UInt8]) -> Bool {
        address.type != .public && resolves(address.address.rawValue, with: irk)
    }
}

extension BLEHost {
    /// The RPA this host advertises from now (nil without privacy, or before power-on).
    public var resolvablePrivateAddress: BDAddr? { privacyState.address }
    /// Every RPA this host has used, in order.
    public var privateAddressHistory: [BDAddr] { privacyState.history }
    /// The IRK, once powered on with privacy.
    public var identityResolvingKey: [UInt8]? { configuration.privacy == nil ? nil : privacyState.irk }

    /// The identity this host distributes when it bonds with privacy: its IRK and identity
    /// address (the public address, or the static random one).
    var privacyIdentity: SecurityIdentity? {
        guard configuration.privacy != nil, !privacyState.irk.isEmpty else { return nil }
        let identity = configuration.randomAddress.map { LEAddress($0, type: .random) } ?? LEAddress(publicAddress ?? BDAddr(rawValue: 0), type: .public)
        return SecurityIdentity(irk: privacyState.irk, address: Connection.smpAddress(identity))
    }

    /// At power-on: the IRK, the first RPA (LE Set Random Address), and the rotation timer.
    func startPrivacy(completion: @escaping (Result<Void, HostError>) -> Void) {
        guard let privacy = configuration.privacy else { return completion(.success(())) }
        if privacyState.irk.isEmpty {
            privacyState.irk = privacy.irk ?? (0..<16).map { _ in UInt8(truncatingIfNeeded: securityRandom.next()) }
        }
        setNextPrivateAddress { [weak self] result in
            if case .success = result { self?.scheduleRotation() }
            completion(result)
        }
    }

    private func setNextPrivateAddress(completion: @escaping (Result<Void, HostError>) -> Void) {
        let address: BDAddr
        do {
            address = try ResolvablePrivateAddress.make(irk: privacyState.irk) { UInt8(truncatingIfNeeded: securityRandom.next()) }
        } catch {
            return completion(.failure(.invalidState("cannot make a resolvable private address: \(error)")))
        }
        send([.leSetRandomAddress(address)]) { [weak self] result in
            if case .success = result, let self {
                self.privacyState.address = address
                self.privacyState.history.append(address)
            }
            completion(result)
        }
    }

    private func scheduleRotation() {
        guard let privacy = configuration.privacy else { return }
        privacyState.timer?.cancel()
        privacyState.timer = loop.schedule(after: privacy.rotation) { [weak self] in self?.rotatePrivateAddress() }
    }

    /// A new RPA: advertising stops for the change (LE Set Random Address is refused while it
    /// runs, Vol 4 Part E 7.8.4) and starts again from the new address. While scanning or
    /// connecting the change waits for the next rotation.
    private func rotatePrivateAddress() {
        guard state == .ready else { return }
        guard !isScanning, initiator == nil, !advertiser.busy else { return scheduleRotation() }
        let readvertise = advertiser.isEnabled ? advertiser.configuration : nil
        let restart: () -> Void = { [weak self] in
            guard let self else { return }
            self.setNextPrivateAddress { [weak self] result in
                guard let self else { return }
                if case let .failure(error) = result { self.onProtocolError?(error) }
                if let readvertise { self.startAdvertising(readvertise) }
                self.scheduleRotation()
            }
        }
        if readvertise != nil {
            stopAdvertising { _ in restart() }
        } else {
            restart()
        }
    }

    func stopPrivacy() {
        privacyState.timer?.cancel()
        privacyState.timer = nil
    }

    /// The identity a bonded peer's RPA resolves to (with the IRK it gave), if any. Each address
    /// is resolved once while the bonds stay the same (`RPAResolutionCache`): a scan hears the
    /// same RPA in every advertising event, and each report would otherwise cost an AES per bond.
    public func resolvedIdentity(of address: LEAddress) -> LEAddress? {
        guard ResolvablePrivateAddress.isResolvable(address) else { return nil }
        if privacyState.resolutionGeneration != bonds.generation {
            privacyState.resolution.invalidate()
            privacyState.resolutionGeneration = bonds.generation
        }
        let stored = bonds.bonds
        // A bond without the peer's identity has no IRK: it resolves nothing.
        guard let k = privacyState.resolution.index(resolving: address.address.rawValue, irks: { stored.map { $0.peerIdentity?.irk ?? [] } }),
              let identity = stored[k].peerIdentity else { return nil }
        let raw = identity.address.octets.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return LEAddress(BDAddr(rawValue: raw), type: identity.address.isRandom ? .random : .public)
    }

    /// How many of `resolvedIdentity`'s look-ups the cache answered, and how many ran ah.
    public var resolutionCounts: (hits: Int, misses: Int) { (privacyState.resolution.hits, privacyState.resolution.misses) }
}

import BLECrypto
import BLEWire
import GATT
import HCI
import SMP

/// The keys kept after a pairing with bonding: what encrypts the next link with that peer.
public struct Bond: Equatable, Sendable {
    /// The peer's address at pairing time.
    public var peer: LEAddress
    /// The peer's identity, when it distributed one (IRK and identity address).
    public var peerIdentity: SecurityIdentity?
    /// The LTK (most significant octet first), with the EDIV and Rand the central sends.
    public var longTermKey: [UInt8]
    public var ediv: UInt16
    public var rand: [UInt8]
    public var keySize: UInt8
    public var authenticated: Bool
    public var secureConnections: Bool

    /// Whether `address` is this bond's peer: its address at pairing, its identity address, or
    /// a resolvable private address its IRK resolves (Vol 6 Part B 1.3.2.3).
    public func matches(_ address: LEAddress) -> Bool {
        if address == peer { return true }
        guard let identity = peerIdentity else { return false }
        if address.address.rawValue == Self.raw(identity.address.octets) && (address.type == .random) == identity.address.isRandom {
            return true
        }
        return ResolvablePrivateAddress.resolves(address, with: identity.irk)
    }

    static func raw(_ octets: [UInt8]) -> UInt64 { octets.reduce(0) { $0 << 8 | UInt64($1) } }
}

/// A host's bonds: they outlive connections and power cycles of the controller (the host keeps
/// them, as a phone keeps its paired devices); `forgetAll` is a factory reset.
public final class BondStore {
    public private(set) var bonds: [Bond] = [] {
        didSet { generation += 1 }
    }
    /// Counts the changes to `bonds` (what caches of its IRKs check).
    public private(set) var generation = 0
    public init() {}

    public func bond(for peer: LEAddress) -> Bond? { bonds.last { $0.matches(peer) } }

    /// Stores `bond`, replacing any earlier one with the same peer.
    public func store(_ bond: Bond) {
        bonds.removeAll { $0.matches(bond.peer) || (bond.peerIdentity != nil && $0.peerIdentity?.address == bond.peerIdentity?.address) }
        bonds.append(bond)
    }

    public func forget(_ peer: LEAddress) { bonds.removeAll { $0.matches(peer) } }
    public func forgetAll() { bonds.removeAll() }
}

/// Why encrypting a link failed.
public enum EncryptionFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// No bond with this peer: nothing to encrypt with.
    case noBond
    /// Only a central starts encryption (LE Enable Encryption).
    case notCentral
    /// The controller or the peer refused: Encryption Change's status (PIN or Key Missing when the
    /// peer lost its bond), or the link ended (its reason).
    case status(HCIStatus)

    public var description: String {
        switch self {
        case .noBond: return "no bond with this peer"
        case .notCentral: return "only the central starts encryption"
        case let .status(status): return "encryption failed: \(status)"
        }
    }
}

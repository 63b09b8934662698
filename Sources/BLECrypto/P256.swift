import CCrypto

/// A P-256 key pair for LE Secure Connections (Core Vol 3 Part H 2.3.5.6). The private key comes
/// from the caller (the lab's seeded random numbers), never from libcrypto's generator, so that a
/// scenario and seed pair the same way every run.
public struct P256KeyPair: Equatable, Sendable {
    /// The private scalar, 32 octets, most significant first; 0 < d < n.
    public let privateKey: [UInt8]
    /// The public key's coordinates, 32 octets each, most significant first. SMP's Pairing Public
    /// Key carries each least significant octet first (3.5.6).
    public let x: [UInt8]
    public let y: [UInt8]

    /// The key pair of `privateKey`; throws `invalidKey` unless 0 < d < n.
    public init(privateKey: [UInt8]) throws {
        try SecurityToolbox.require(privateKey, 32, "P-256 private key")
        var x = [UInt8](repeating: 0, count: 32), y = [UInt8](repeating: 0, count: 32)
        switch blelab_p256_public_key(privateKey, &x, &y) {
        case 1: break
        case -1: throw CryptoError.invalidKey("a P-256 private key must lie between 1 and the group order minus 1")
        default: throw CryptoError.library("P-256 public key")
        }
        self.privateKey = privateKey
        self.x = x
        self.y = y
    }

    /// A key pair from `next`, a source of random octets: 32 octets at a time until they make a
    /// valid scalar (all but about 2⁻³² of draws do at once).
    public init(random next: () -> UInt8) throws {
        while true {
            let candidate = (0..<32).map { _ in next() }
            do { try self.init(privateKey: candidate); return } catch CryptoError.invalidKey { continue }
        }
    }

    /// The debug key pair (2.3.5.6.1): with it, a sniffer can decrypt the link. A device uses it
    /// only in debug mode, and a peer may refuse it.
    public static let debug = try! P256KeyPair(privateKey: [
        0x3F, 0x49, 0xF6, 0xD4, 0xA3, 0xC5, 0x5F, 0x38, 0x74, 0xC9, 0xB3, 0xE3, 0xD2, 0x10, 0x3F, 0x50,
        0x4A, 0xFF, 0x60, 0x7B, 0xEB, 0x40, 0xB7, 0x99, 0x58, 0x99, 0xB8, 0xA6, 0xCD, 0x3C, 0x1A, 0xBD,
    ])

    /// The DHKey (2.3.5.6.1): the x coordinate of d × (peerX, peerY). Throws `invalidKey` when the
    /// peer's key is not on the curve: the pairing then fails with DHKey Check Failed, the
    /// defence against the invalid-curve attack.
    public func dhKey(peerX: [UInt8], peerY: [UInt8]) throws -> [UInt8] {
        try SecurityToolbox.require(peerX, 32, "P-256 public key x"); try SecurityToolbox.require(peerY, 32, "P-256 public key y")
        var out = [UInt8](repeating: 0, count: 32)
        switch blelab_p256_dh_key(privateKey, peerX, peerY, &out) {
        case 1: return out
        case -1: throw CryptoError.invalidKey("the peer's public key is not a point on P-256")
        default: throw CryptoError.library("P-256 Diffie-Hellman")
        }
    }
}

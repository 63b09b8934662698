import BLECrypto
import SMP

/// Out-of-band data (Core Vol 3 Part H 2.3.5.4 for LE legacy pairing, 2.3.5.6.4 for LE Secure
/// Connections): what two devices exchange over another channel (an NFC tap, a QR code) before
/// they pair, so that the pairing is protected against a man in the middle without a passkey.
extension BLEHost {
    /// The OOB data this host holds for its next pairings: its own key pair and r (Secure
    /// Connections), what it received from its peer (r and confirm value), and the TK both hold
    /// (legacy). Nil: none, as without an OOB channel.
    public var outOfBandData: OOBData? {
        get { oobData }
        set { oobData = newValue }
    }

    /// Hands OOB data between two hosts of the lab both ways, as a phone tapping a device's NFC
    /// tag does: each draws (from its seeded random numbers) a P-256 key pair and a 16-octet r,
    /// and gives the other r with its confirm value f4(PKx, PKx, r, 0) (2.3.5.6.4); the
    /// peripheral also draws the 16-octet TK of LE legacy pairing, which both then hold.
    public static func exchangeOutOfBandData(central: BLEHost, peripheral: BLEHost) throws {
        let c = try central.drawOutOfBand(), p = try peripheral.drawOutOfBand()
        let tk = (0..<16).map { _ in UInt8(truncatingIfNeeded: peripheral.securityRandom.next()) }
        central.oobData = OOBData(legacyTK: tk, localRandom: c.random, peer: (p.random, p.confirm), localKeyPair: c.keyPair)
        peripheral.oobData = OOBData(legacyTK: tk, localRandom: p.random, peer: (c.random, c.confirm), localKeyPair: p.keyPair)
    }

    /// A key pair, r and the confirm value, from this host's random numbers.
    private func drawOutOfBand() throws -> (keyPair: P256KeyPair, random: [UInt8], confirm: [UInt8]) {
        let keyPair = try P256KeyPair(random: { UInt8(truncatingIfNeeded: securityRandom.next()) })
        let random = (0..<16).map { _ in UInt8(truncatingIfNeeded: securityRandom.next()) }
        return (keyPair, random, try OOBData.confirm(publicKeyX: keyPair.x, random: random))
    }
}

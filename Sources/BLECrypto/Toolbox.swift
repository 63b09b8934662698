import CCrypto

/// The Security Manager's cryptographic toolbox (Core Vol 3 Part H 2.2), on OpenSSL's libcrypto
/// for AES-128, AES-CMAC and P-256.
///
/// **Byte order.** Every value here is written as the specification writes it: the most
/// significant octet first (`[0x1e, 0x1e, 0x3f, …]` is 0x1e1e3f…), so the sample data of Vol 3
/// Part H Appendix D reads straight into tests. SMP and HCI carry the same values least
/// significant octet first: reverse them at that boundary (`Array(wire.reversed())`).
public enum SecurityToolbox {
    /// Security function e (2.2.1): one AES-128 block, `key` and `plaintext` 16 octets each.
    public static func e(_ key: [UInt8], _ plaintext: [UInt8]) throws -> [UInt8] {
        try require(key, 16, "e: key"); try require(plaintext, 16, "e: plaintext")
        var out = [UInt8](repeating: 0, count: 16)
        guard blelab_aes128_encrypt(key, plaintext, &out) == 1 else { throw CryptoError.library("AES-128") }
        return out
    }

    /// AES-CMAC with a 128-bit key (2.2.5, RFC 4493): a 16-octet MAC of `message`, any length.
    public static func aesCMAC(key: [UInt8], _ message: [UInt8]) throws -> [UInt8] {
        try require(key, 16, "AES-CMAC: key")
        var out = [UInt8](repeating: 0, count: 16)
        guard blelab_aes_cmac(key, message, message.count, &out) == 1 else { throw CryptoError.library("AES-CMAC") }
        return out
    }

    /// Random address hash ah (2.2.2): the 24-bit hash of the 24-bit `prand` under the IRK `k`,
    /// the hash half of a resolvable private address (Vol 6 Part B 1.3.2.2).
    public static func ah(_ k: [UInt8], _ prand: [UInt8]) throws -> [UInt8] {
        try require(prand, 3, "ah: prand")
        return Array(try e(k, [UInt8](repeating: 0, count: 13) + prand).suffix(3))
    }

    /// LE legacy pairing's confirm value generation function c1 (2.2.3). `preq` and `pres` are
    /// the 7-octet Pairing Request and Response as numbers whose least significant octet is the
    /// command code; `iat`/`rat` are the initiator's and responder's address types (0 public,
    /// 1 random); `ia`/`ra` their 6-octet addresses.
    public static func c1(k: [UInt8], r: [UInt8], preq: [UInt8], pres: [UInt8], iat: UInt8, ia: [UInt8],
                          rat: UInt8, ra: [UInt8]) throws -> [UInt8] {
        try require(r, 16, "c1: r"); try require(preq, 7, "c1: preq"); try require(pres, 7, "c1: pres")
        try require(ia, 6, "c1: ia"); try require(ra, 6, "c1: ra")
        let p1 = pres + preq + [rat & 1, iat & 1]
        let p2 = [UInt8](repeating: 0, count: 4) + ia + ra
        return try e(k, xor(try e(k, xor(r, p1)), p2))
    }

    /// LE legacy pairing's key generation function s1 (2.2.4): the STK from the TK `k` and the
    /// responder's and initiator's random values (`r1` = Srand, `r2` = Mrand).
    public static func s1(k: [UInt8], r1: [UInt8], r2: [UInt8]) throws -> [UInt8] {
        try require(r1, 16, "s1: r1"); try require(r2, 16, "s1: r2")
        return try e(k, Array(r1.suffix(8)) + Array(r2.suffix(8)))
    }

    /// LE Secure Connections confirm value generation function f4 (2.2.6): AES-CMAC_X(U ‖ V ‖ Z),
    /// U and V 256-bit public key x coordinates, X a 128-bit nonce, Z one octet (0, or 0x80 | bit
    /// for Passkey Entry).
    public static func f4(u: [UInt8], v: [UInt8], x: [UInt8], z: UInt8) throws -> [UInt8] {
        try require(u, 32, "f4: U"); try require(v, 32, "f4: V")
        return try aesCMAC(key: x, u + v + [z])
    }

    /// The SALT of f5 (2.2.7).
    static let f5Salt: [UInt8] = [0x6C, 0x88, 0x83, 0x91, 0xAA, 0xF5, 0xA5, 0x38, 0x60, 0x37, 0x0B, 0xDB, 0x5A, 0x60, 0x83, 0xBE]

    /// LE Secure Connections key generation function f5 (2.2.7): the MacKey and the LTK from the
    /// DHKey `w`, both nonces and both devices' 56-bit addresses (type octet first, then the
    /// 48-bit address).
    public static func f5(w: [UInt8], n1: [UInt8], n2: [UInt8], a1: [UInt8], a2: [UInt8]) throws -> (macKey: [UInt8], ltk: [UInt8]) {
        try require(w, 32, "f5: W"); try require(n1, 16, "f5: N1"); try require(n2, 16, "f5: N2")
        try require(a1, 7, "f5: A1"); try require(a2, 7, "f5: A2")
        let t = try aesCMAC(key: f5Salt, w)
        let keyID: [UInt8] = [0x62, 0x74, 0x6C, 0x65]   // "btle"
        let body = keyID + n1 + n2 + a1 + a2 + [0x01, 0x00]   // Length = 256
        return (try aesCMAC(key: t, [0x00] + body), try aesCMAC(key: t, [0x01] + body))
    }

    /// LE Secure Connections check value generation function f6 (2.2.8): the DHKey check value,
    /// `r` the passkey, OOB value or zero, `ioCap` the 3 octets AuthReq ‖ OOB data flag ‖ IO
    /// capability.
    public static func f6(w: [UInt8], n1: [UInt8], n2: [UInt8], r: [UInt8], ioCap: [UInt8], a1: [UInt8], a2: [UInt8]) throws -> [UInt8] {
        try require(n1, 16, "f6: N1"); try require(n2, 16, "f6: N2"); try require(r, 16, "f6: R")
        try require(ioCap, 3, "f6: IOcap"); try require(a1, 7, "f6: A1"); try require(a2, 7, "f6: A2")
        return try aesCMAC(key: w, n1 + n2 + r + ioCap + a1 + a2)
    }

    /// LE Secure Connections numeric comparison value generation function g2 (2.2.9): a 32-bit
    /// value; the six digits both users compare are `g2 % 1_000_000`.
    public static func g2(u: [UInt8], v: [UInt8], x: [UInt8], y: [UInt8]) throws -> UInt32 {
        try require(u, 32, "g2: U"); try require(v, 32, "g2: V"); try require(y, 16, "g2: Y")
        return try aesCMAC(key: x, u + v + y).suffix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Link key conversion function h6 (2.2.10): AES-CMAC_W(keyID), keyID 4 octets.
    public static func h6(w: [UInt8], keyID: [UInt8]) throws -> [UInt8] {
        try require(keyID, 4, "h6: keyID")
        return try aesCMAC(key: w, keyID)
    }

    /// Link key conversion function h7 (2.2.11): AES-CMAC_SALT(W).
    public static func h7(salt: [UInt8], w: [UInt8]) throws -> [UInt8] {
        try require(w, 16, "h7: W")
        return try aesCMAC(key: salt, w)
    }

    static func xor(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        zip(a, b).map { $0 ^ $1 }
    }

    static func require(_ value: [UInt8], _ count: Int, _ what: String) throws {
        guard value.count == count else { throw CryptoError.length(what, expected: count, got: value.count) }
    }
}

/// What the toolbox refuses.
public enum CryptoError: Error, Equatable, CustomStringConvertible {
    /// An input of the wrong size (a programming error in the caller, or a malformed PDU field).
    case length(String, expected: Int, got: Int)
    /// A public key that is not a point on P-256 (Vol 3 Part H 2.3.5.6.1), or a private key out
    /// of range.
    case invalidKey(String)
    /// libcrypto itself failed (out of memory, a provider missing).
    case library(String)

    public var description: String {
        switch self {
        case let .length(what, expected, got): return "\(what) must be \(expected) octets, not \(got)"
        case let .invalidKey(why): return why
        case let .library(what): return "libcrypto failed in \(what)"
        }
    }
}

import BLECrypto
import XCTest

/// The toolbox against the specification's sample data: Core Vol 3 Part H Appendix D (D.1 AES-CMAC,
/// D.2 f4, D.3 f5, D.4 f6, D.5 g2, D.6 h6, D.7 ah, D.8 h7), 2.2.3 and 2.2.4 (c1 and s1 examples),
/// 2.3.5.6.1 (the P-256 debug key and DHKey sample), and FIPS-197 Appendix C.1 for e.
final class SecurityToolboxTests: XCTestCase {
    /// Spec-style hex (spaces allowed), most significant octet first.
    func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    func testEIsAES128AsFIPS197Gives() throws {
        XCTAssertEqual(try SecurityToolbox.e(hex("00010203 04050607 08090a0b 0c0d0e0f"), hex("00112233 44556677 8899aabb ccddeeff")),
                       hex("69c4e0d8 6a7b0430 d8cdb780 70b4c55a"))
    }

    func testAESCMACMatchesD1ForEachMessageLength() throws {
        let key = hex("2b7e1516 28aed2a6 abf71588 09cf4f3c")
        let m = hex("""
            6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51
            30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710
            """)
        XCTAssertEqual(try SecurityToolbox.aesCMAC(key: key, []), hex("bb1d6929 e9593728 7fa37d12 9b756746"))
        XCTAssertEqual(try SecurityToolbox.aesCMAC(key: key, Array(m[..<16])), hex("070a16b4 6b4d4144 f79bdd9d d04a287c"))
        XCTAssertEqual(try SecurityToolbox.aesCMAC(key: key, Array(m[..<40])), hex("dfa66747 de9ae630 30ca3261 1497c827"))
        XCTAssertEqual(try SecurityToolbox.aesCMAC(key: key, m), hex("51f0bebf 7e3b9d92 fc497417 79363cfe"))
    }

    func testC1MatchesTheLegacyConfirmExample() throws {
        let confirm = try SecurityToolbox.c1(k: [UInt8](repeating: 0, count: 16), r: hex("5783D52156AD6F0E6388274EC6702EE0"),
                                             preq: hex("07071000000101"), pres: hex("05000800000302"),
                                             iat: 1, ia: hex("A1A2A3A4A5A6"), rat: 0, ra: hex("B1B2B3B4B5B6"))
        XCTAssertEqual(confirm, hex("1e1e3fef878988ead2a74dc5bef13b86"))
    }

    func testS1MatchesTheLegacySTKExample() throws {
        XCTAssertEqual(try SecurityToolbox.s1(k: [UInt8](repeating: 0, count: 16), r1: hex("000F0E0D0C0B0A091122334455667788"),
                                              r2: hex("010203040506070899AABBCCDDEEFF00")),
                       hex("9a1fe1f0e8b0f49b5b4216ae796da062"))
    }

    let u = "20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6"
    let v = "55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd"
    let n1 = "d5cb8454 d177733e ffffb2ec 712baeab"
    let n2 = "a6e8e7cc 25a75f6e 216583f7 ff3dc4cf"
    let dhKey = "ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698"

    func testF4MatchesD2() throws {
        XCTAssertEqual(try SecurityToolbox.f4(u: hex(u), v: hex(v), x: hex(n1), z: 0), hex("f2c916f1 07a9bd1c f1eda1be a974872d"))
    }

    func testF5MatchesD3() throws {
        let keys = try SecurityToolbox.f5(w: hex(dhKey), n1: hex(n1), n2: hex(n2), a1: hex("00561237 37bfce"), a2: hex("00a71370 2dcfc1"))
        XCTAssertEqual(keys.macKey, hex("2965f176 a1084a02 fd3f6a20 ce636e20"))
        XCTAssertEqual(keys.ltk, hex("69867911 69d7cd23 980522b5 94750a38"))
    }

    func testF6MatchesD4() throws {
        let check = try SecurityToolbox.f6(w: hex("2965f176 a1084a02 fd3f6a20 ce636e20"), n1: hex(n1), n2: hex(n2),
                                           r: hex("12a3343b b453bb54 08da42d2 0c2d0fc8"), ioCap: hex("010102"),
                                           a1: hex("00561237 37bfce"), a2: hex("00a71370 2dcfc1"))
        XCTAssertEqual(check, hex("e3c47398 9cd0e8c5 d26c0b09 da958f61"))
    }

    func testG2MatchesD5() throws {
        XCTAssertEqual(try SecurityToolbox.g2(u: hex(u), v: hex(v), x: hex(n1), y: hex(n2)), 0x2F9E_D5BA)
    }

    func testH6MatchesD6() throws {
        XCTAssertEqual(try SecurityToolbox.h6(w: hex("ec0234a3 57c8ad05 341010a6 0a397d9b"), keyID: hex("6c656272")),
                       hex("2d9ae102 e76dc91c e8d3a9e2 80b16399"))
    }

    func testAhMatchesD7() throws {
        XCTAssertEqual(try SecurityToolbox.ah(hex("ec0234a3 57c8ad05 341010a6 0a397d9b"), hex("708194")), hex("0dfbaa"))
    }

    func testH7MatchesD8() throws {
        XCTAssertEqual(try SecurityToolbox.h7(salt: hex("00000000 00000000 00000000 746D7031"), w: hex("ec0234a3 57c8ad05 341010a6 0a397d9b")),
                       hex("fb173597 c6a3c0ec d2998c2a 75a57011"))
    }

    func testTheDebugKeyAndTheSampleDHKey() throws {
        let a = P256KeyPair.debug
        XCTAssertEqual(a.x, hex(u))
        XCTAssertEqual(a.y, hex("dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b"))
        let b = try P256KeyPair(privateKey: hex(v))
        XCTAssertEqual(b.x, hex("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190"))
        XCTAssertEqual(b.y, hex("4c55f33e 429dad37 7356703a 9ab85160 472d1130 e28e3676 5f89aff9 15b1214a"))
        XCTAssertEqual(try a.dhKey(peerX: b.x, peerY: b.y), hex(dhKey))
        XCTAssertEqual(try b.dhKey(peerX: a.x, peerY: a.y), hex(dhKey))
    }

    func testAPublicKeyOffTheCurveIsRefused() throws {
        let b = try P256KeyPair(privateKey: hex(v))
        var y = P256KeyPair.debug.y
        y[31] ^= 1
        XCTAssertThrowsError(try b.dhKey(peerX: P256KeyPair.debug.x, peerY: y)) { error in
            XCTAssertEqual(error as? CryptoError, .invalidKey("the peer's public key is not a point on P-256"))
        }
        // The point at (0, 0) is not on P-256 either (a classic invalid-curve probe).
        XCTAssertThrowsError(try b.dhKey(peerX: [UInt8](repeating: 0, count: 32), peerY: [UInt8](repeating: 0, count: 32)))
    }

    func testPrivateKeysOutOfRangeAreRefusedAndRandomOnesRedrawn() throws {
        XCTAssertThrowsError(try P256KeyPair(privateKey: [UInt8](repeating: 0, count: 32)))
        XCTAssertThrowsError(try P256KeyPair(privateKey: [UInt8](repeating: 0xFF, count: 32)))   // above the order n
        // A source that first gives an all-0xFF draw, then the debug key's octets: the first is redrawn.
        let debug = P256KeyPair.debug.privateKey
        var octets = [UInt8](repeating: 0xFF, count: 32) + debug
        let pair = try P256KeyPair { octets.removeFirst() }
        XCTAssertEqual(pair, P256KeyPair.debug)
    }

    func testWrongLengthsAreTypedErrors() {
        XCTAssertThrowsError(try SecurityToolbox.e([1, 2, 3], [UInt8](repeating: 0, count: 16))) { error in
            XCTAssertEqual("\(error)", "e: key must be 16 octets, not 3")
        }
        XCTAssertThrowsError(try SecurityToolbox.f4(u: [], v: [], x: [], z: 0))
    }
}

import BLECrypto
import HostLink
import SMP
import XCTest

/// Whole pairings between two sessions (PairingHarness), one per method and per failure a user
/// meets, with the commands on the wire checked against the message sequences of Core Vol 3
/// Part H Appendix C.
final class PairingSessionTests: XCTestCase {
    let zeroRand = [UInt8](repeating: 0, count: 8)

    func testLegacyJustWorksEncryptsWithTheSTKAndDistributesTheLTK() throws {
        let h = PairingHarness(central: .make(io: .noInputNoOutput, sc: false), peripheral: .make(io: .noInputNoOutput, sc: false))
        h.run()
        let results = try XCTUnwrap(h.bothSucceeded)
        XCTAssertEqual(results.central.method, .justWorks)
        XCTAssertFalse(results.central.secureConnections)
        XCTAssertFalse(results.central.authenticated)
        XCTAssertTrue(results.central.bonded)
        // Request, Response, Mconfirm, Sconfirm, Mrand, Srand, then (encrypted) the peripheral's
        // LTK and EDIV/Rand, and the central's.
        XCTAssertEqual(h.codes, ["C>P 0x01", "P>C 0x02", "C>P 0x03", "P>C 0x03", "C>P 0x04", "P>C 0x04",
                                 "P>C 0x06", "P>C 0x07", "C>P 0x06", "C>P 0x07"])
        // The link was encrypted with the STK = s1(TK = 0, Srand, Mrand), as the wire's randoms give.
        let mrand = try randomValue(h, fromCentral: true), srand = try randomValue(h, fromCentral: false)
        XCTAssertEqual(h.encryptedWith, try SecurityToolbox.s1(k: [UInt8](repeating: 0, count: 16), r1: srand, r2: mrand))
        // Both keep the peripheral's LTK with its EDIV and Rand: what the central sends next time.
        XCTAssertEqual(results.central.longTermKey, results.peripheral.longTermKey)
        XCTAssertEqual(results.central.ediv, results.peripheral.ediv)
        XCTAssertEqual(results.central.rand, results.peripheral.rand)
        XCTAssertNotNil(results.central.longTermKey)
    }

    func testLegacyConfirmOnTheWireIsC1OfTheRequestAndResponse() throws {
        let h = PairingHarness(central: .make(io: .noInputNoOutput, sc: false), peripheral: .make(io: .noInputNoOutput, sc: false))
        h.run()
        let preq = h.wire[0].octets, pres = h.wire[1].octets
        let mconfirm = Array(h.wire[2].octets.dropFirst().reversed()), mrand = try randomValue(h, fromCentral: true)
        let expected = try SecurityToolbox.c1(k: [UInt8](repeating: 0, count: 16), r: mrand, preq: preq.reversed(), pres: pres.reversed(),
                                              iat: 1, ia: PairingHarness.centralAddress.octets, rat: 0, ra: PairingHarness.peripheralAddress.octets)
        XCTAssertEqual(mconfirm, expected)
    }

    func testLegacyPasskeyEntryWithTheRightPasskey() throws {
        let h = PairingHarness(central: .make(io: .keyboardOnly, mitm: true, sc: false, passkey: 123_456),
                               peripheral: .make(io: .displayOnly, mitm: true, sc: false, passkey: 123_456))
        h.run()
        let results = try XCTUnwrap(h.bothSucceeded)
        XCTAssertEqual(results.central.method, .passkeyEntry)
        XCTAssertTrue(results.peripheral.authenticated)
        XCTAssertEqual(h.shown["peripheral passkey"], 123_456)
        XCTAssertNil(h.shown["central passkey"])
    }

    func testLegacyPasskeyTypedWrongFailsWithConfirmValueFailed() {
        let h = PairingHarness(central: .make(io: .keyboardOnly, mitm: true, sc: false, passkey: 123_457),
                               peripheral: .make(io: .displayOnly, mitm: true, sc: false, passkey: 123_456))
        h.run()
        // The peripheral checks Mconfirm against Mrand (it gets Mrand first) and refuses.
        XCTAssertEqual(h.peripheralOutcome.failure, .sent(.confirmValueFailed))
        XCTAssertEqual(h.centralOutcome.failure, .received(.confirmValueFailed))
        XCTAssertEqual(h.codes.last, "P>C 0x05")
        XCTAssertNil(h.encryptedWith)
    }

    func testAPasskeyTheUserNeverTypesFailsWithPasskeyEntryFailed() {
        let h = PairingHarness(central: .make(io: .keyboardOnly, mitm: true, passkey: nil),
                               peripheral: .make(io: .displayOnly, mitm: true, passkey: 654_321))
        h.run()
        XCTAssertEqual(h.centralOutcome.failure, .sent(.passkeyEntryFailed))
        XCTAssertEqual(h.peripheralOutcome.failure, .received(.passkeyEntryFailed))
    }

    func testLegacyOOBWithTheSameTKAndWithAnother() throws {
        let tk: [UInt8] = Array(100..<116)
        let good = PairingHarness(central: .make(io: .noInputNoOutput, sc: false) { $0.oob = OOBData(legacyTK: tk) },
                                  peripheral: .make(io: .noInputNoOutput, sc: false) { $0.oob = OOBData(legacyTK: tk) })
        good.run()
        XCTAssertEqual(try XCTUnwrap(good.bothSucceeded).central.method, .oob)
        let bad = PairingHarness(central: .make(io: .noInputNoOutput, sc: false) { $0.oob = OOBData(legacyTK: tk) },
                                 peripheral: .make(io: .noInputNoOutput, sc: false) { $0.oob = OOBData(legacyTK: tk.reversed()) })
        bad.run()
        XCTAssertEqual(bad.peripheralOutcome.failure, .sent(.confirmValueFailed))
    }

    func testSecureConnectionsJustWorks() throws {
        let h = PairingHarness(central: .make(io: .noInputNoOutput), peripheral: .make(io: .noInputNoOutput))
        h.run()
        let results = try XCTUnwrap(h.bothSucceeded)
        XCTAssertEqual(results.central.method, .justWorks)
        XCTAssertTrue(results.central.secureConnections)
        // Request, Response, both public keys, Cb, Na, Nb, Ea, Eb; the LTK (from f5) is not
        // distributed, so no key follows unless asked.
        XCTAssertEqual(Array(h.codes.prefix(9)), ["C>P 0x01", "P>C 0x02", "C>P 0x0c", "P>C 0x0c", "P>C 0x03", "C>P 0x04", "P>C 0x04",
                                                  "C>P 0x0d", "P>C 0x0d"])
        XCTAssertFalse(h.codes.contains("P>C 0x06"), "Secure Connections distributes no LTK (3.6.1)")
        XCTAssertEqual(results.central.longTermKey, results.peripheral.longTermKey)
        XCTAssertEqual(h.encryptedWith, results.central.longTermKey)
        XCTAssertEqual(results.central.ediv, 0)
        XCTAssertEqual(results.central.rand, zeroRand)
    }

    func testSecureConnectionsLTKIsF5OfTheDHKeyAndTheNonces() throws {
        let h = PairingHarness(central: .make(io: .noInputNoOutput) { $0.debugKey = true }, peripheral: .make(io: .noInputNoOutput))
        h.run()
        let results = try XCTUnwrap(h.bothSucceeded)
        // The central used the debug key: the DHKey is then computable from the wire alone.
        guard case let .pairingPublicKey(px, py) = try SMPPDU.decode(h.wire[3].octets) else { return XCTFail("no public key") }
        let dhKey = try P256KeyPair.debug.dhKey(peerX: px, peerY: py)
        let na = try randomValue(h, fromCentral: true), nb = try randomValue(h, fromCentral: false)
        let a = [1] + PairingHarness.centralAddress.octets, b = [0] + PairingHarness.peripheralAddress.octets
        XCTAssertEqual(results.central.longTermKey, try SecurityToolbox.f5(w: dhKey, n1: na, n2: nb, a1: a, a2: b).ltk)
    }

    func testNumericComparisonShowsTheSameNumberOnBothAndARefusalFails() throws {
        let h = PairingHarness(central: .make(io: .displayYesNo, mitm: true), peripheral: .make(io: .displayYesNo, mitm: true))
        h.run()
        XCTAssertEqual(try XCTUnwrap(h.bothSucceeded).central.method, .numericComparison)
        XCTAssertNotNil(h.shown["central number"])
        XCTAssertEqual(h.shown["central number"], h.shown["peripheral number"])
        XCTAssertLessThan(h.shown["central number"] ?? 1_000_000, 1_000_000)

        let refused = PairingHarness(central: .make(io: .displayYesNo, mitm: true),
                                     peripheral: .make(io: .displayYesNo, mitm: true) { $0.confirmsNumericComparison = false })
        refused.run()
        XCTAssertEqual(refused.peripheralOutcome.failure, .sent(.numericComparisonFailed))
        XCTAssertEqual(refused.centralOutcome.failure, .received(.numericComparisonFailed))
    }

    func testSecureConnectionsPasskeyEntryTakesTwentyRounds() throws {
        let h = PairingHarness(central: .make(io: .keyboardOnly, mitm: true, passkey: 999_999),
                               peripheral: .make(io: .keyboardDisplay, mitm: true, passkey: 999_999))
        h.run()
        let results = try XCTUnwrap(h.bothSucceeded)
        XCTAssertEqual(results.central.method, .passkeyEntry)
        XCTAssertTrue(results.central.authenticated)
        XCTAssertEqual(h.codes.filter { $0.hasSuffix("0x03") }.count, 40, "20 rounds of Cai and Cbi (2.3.5.6.3)")
        XCTAssertEqual(h.codes.filter { $0.hasSuffix("0x04") }.count, 40)
    }

    func testSecureConnectionsWrongPasskeyFailsAtTheFirstDifferentBit() {
        // 999_999 and 999_998 differ in bit 0: the first round already fails.
        let h = PairingHarness(central: .make(io: .keyboardOnly, mitm: true, passkey: 999_998),
                               peripheral: .make(io: .keyboardDisplay, mitm: true, passkey: 999_999))
        h.run()
        XCTAssertEqual(h.peripheralOutcome.failure, .sent(.confirmValueFailed))
        XCTAssertEqual(h.codes.filter { $0.hasSuffix("0x03") }.count, 2)
    }

    func testSecureConnectionsOOB() throws {
        // Each side's r and confirm value went out of band to the other before pairing; the
        // confirm values depend on the public keys, so both use fixed keys here.
        let rA: [UInt8] = Array(1...16), rB: [UInt8] = Array(17...32)
        let keyB = try P256KeyPair(privateKey: [UInt8](repeating: 0, count: 31) + [7])
        let cA = try OOBData.confirm(publicKeyX: P256KeyPair.debug.x, random: rA)
        let cB = try OOBData.confirm(publicKeyX: keyB.x, random: rB)
        _ = cB
        // Only the peripheral received the central's data (one-way OOB, as from a QR code).
        let h = PairingHarness(central: .make(io: .noInputNoOutput) { $0.debugKey = true; $0.oob = OOBData(localRandom: rA) },
                               peripheral: .make(io: .noInputNoOutput) { $0.oob = OOBData(peer: (rA, cA)) })
        h.run()
        let results = try XCTUnwrap(h.bothSucceeded)
        XCTAssertEqual(results.central.method, .oob)
        XCTAssertTrue(results.central.authenticated)

        let forged = PairingHarness(central: .make(io: .noInputNoOutput) { $0.debugKey = true; $0.oob = OOBData(localRandom: rA) },
                                    peripheral: .make(io: .noInputNoOutput) { $0.oob = OOBData(peer: (rA, cA.reversed())) })
        forged.run()
        XCTAssertEqual(forged.peripheralOutcome.failure, .sent(.confirmValueFailed))
    }

    /// Two-way OOB (an NFC tap): each side made its confirm value with a key pair drawn before
    /// the pairing (`OOBData.localKeyPair`), and the pairing uses that key pair; a side that
    /// pairs with another key than the one its confirm value names fails the peer's check.
    func testTwoWayOOBUsesTheKeyPairsTheConfirmValuesWereMadeWith() throws {
        let keyA = try P256KeyPair(privateKey: [UInt8](repeating: 0, count: 31) + [5])
        let keyB = try P256KeyPair(privateKey: [UInt8](repeating: 0, count: 31) + [7])
        let rA: [UInt8] = Array(1...16), rB: [UInt8] = Array(17...32)
        let cA = try OOBData.confirm(publicKeyX: keyA.x, random: rA), cB = try OOBData.confirm(publicKeyX: keyB.x, random: rB)
        let h = PairingHarness(central: .make(io: .noInputNoOutput) { $0.oob = OOBData(localRandom: rA, peer: (rB, cB), localKeyPair: keyA) },
                               peripheral: .make(io: .noInputNoOutput) { $0.oob = OOBData(localRandom: rB, peer: (rA, cA), localKeyPair: keyB) })
        h.run()
        let results = try XCTUnwrap(h.bothSucceeded)
        XCTAssertEqual(results.central.method, .oob)
        XCTAssertTrue(results.peripheral.authenticated)
        XCTAssertEqual(results.central.longTermKey, results.peripheral.longTermKey)

        // The central's confirm value names keyA, but it pairs with a key drawn anew.
        let stale = PairingHarness(central: .make(io: .noInputNoOutput) { $0.oob = OOBData(localRandom: rA, peer: (rB, cB)) },
                                   peripheral: .make(io: .noInputNoOutput) { $0.oob = OOBData(localRandom: rB, peer: (rA, cA), localKeyPair: keyB) })
        stale.run()
        XCTAssertEqual(stale.peripheralOutcome.failure, .sent(.confirmValueFailed))
    }

    func testAnAlteredCommitmentOrCheckValueIsCaught() {
        // Just Works: the central checks Cb against Nb (Confirm Value Failed).
        let commitment = PairingHarness(central: .make(io: .noInputNoOutput), peripheral: .make(io: .noInputNoOutput))
        commitment.tamper = { toCentral, octets in toCentral && octets[0] == 0x03 ? [0x03] + octets.dropFirst().map { $0 ^ 1 } : octets }
        commitment.run()
        XCTAssertEqual(commitment.centralOutcome.failure, .sent(.confirmValueFailed))
        // The DHKey check value Ea, altered: the peripheral refuses (DHKey Check Failed).
        let check = PairingHarness(central: .make(io: .noInputNoOutput), peripheral: .make(io: .noInputNoOutput))
        check.tamper = { toCentral, octets in !toCentral && octets[0] == 0x0D ? [0x0D] + octets.dropFirst().map { $0 ^ 1 } : octets }
        check.run()
        XCTAssertEqual(check.peripheralOutcome.failure, .sent(.dhKeyCheckFailed))
        // Legacy: an altered Sconfirm is caught by the central when Srand arrives.
        let legacy = PairingHarness(central: .make(io: .noInputNoOutput, sc: false), peripheral: .make(io: .noInputNoOutput, sc: false))
        legacy.tamper = { toCentral, octets in toCentral && octets[0] == 0x03 ? [0x03] + octets.dropFirst().map { $0 ^ 1 } : octets }
        legacy.run()
        XCTAssertEqual(legacy.centralOutcome.failure, .sent(.confirmValueFailed))
        XCTAssertNil(legacy.encryptedWith)
    }

    func testPairingNotSupported() {
        let h = PairingHarness(central: .make(io: .noInputNoOutput), peripheral: .make(io: .noInputNoOutput) { $0.pairable = false })
        h.run()
        XCTAssertEqual(h.codes, ["C>P 0x01", "P>C 0x05"])
        XCTAssertEqual(h.wire[1].octets, [0x05, 0x05])
        XCTAssertEqual(h.centralOutcome.failure, .received(.pairingNotSupported))
    }

    func testAuthenticationRequirementsWhenMITMCannotBeHad() {
        let h = PairingHarness(central: .make(io: .noInputNoOutput), peripheral: .make(io: .displayOnly, mitm: true))
        h.run()
        XCTAssertEqual(h.peripheralOutcome.failure, .sent(.authenticationRequirements))
        let scOnly = PairingHarness(central: .make(io: .noInputNoOutput, sc: false),
                                    peripheral: .make(io: .noInputNoOutput) { $0.secureConnectionsOnly = true })
        scOnly.run()
        XCTAssertEqual(scOnly.peripheralOutcome.failure, .sent(.authenticationRequirements))
    }

    func testEncryptionKeySizeIsNegotiatedAndKeysAreMasked() throws {
        let h = PairingHarness(central: .make(io: .noInputNoOutput, sc: false), peripheral: .make(io: .noInputNoOutput, sc: false) { $0.maxKeySize = 7 })
        h.run()
        let results = try XCTUnwrap(h.bothSucceeded)
        XCTAssertEqual(results.central.keySize, 7)
        XCTAssertEqual(h.encryptedWith?.prefix(9), [UInt8](repeating: 0, count: 9)[...])
        XCTAssertEqual(results.central.longTermKey?.prefix(9), [UInt8](repeating: 0, count: 9)[...])

        let tooSmall = PairingHarness(central: .make(io: .noInputNoOutput) { $0.minKeySize = 16 },
                                      peripheral: .make(io: .noInputNoOutput) { $0.maxKeySize = 10 })
        tooSmall.run()
        XCTAssertEqual(tooSmall.centralOutcome.failure, .sent(.encryptionKeySize))
    }

    func testIdentityAndSigningKeysAreDistributed() throws {
        let identity = SecurityIdentity(irk: Array(0x40..<0x50), address: PairingHarness.peripheralAddress)
        let h = PairingHarness(central: .make(io: .noInputNoOutput),
                               peripheral: .make(io: .noInputNoOutput) { $0.identity = identity; $0.csrk = Array(0x60..<0x70) })
        h.run()
        let results = try XCTUnwrap(h.bothSucceeded)
        XCTAssertEqual(results.central.peerIdentity, identity)
        XCTAssertEqual(results.central.peerCSRK, Array(0x60..<0x70))
        XCTAssertNil(results.peripheral.peerIdentity, "the central has no identity to give")
    }

    func testAPublicKeyOffTheCurveFailsWithDHKeyCheckFailed() throws {
        let peripheral = PairingSession(role: .responder, settings: .make(io: .noInputNoOutput),
                                        initiator: PairingHarness.centralAddress, responder: PairingHarness.peripheralAddress,
                                        random: PairingHarness.generator(seed: 5))
        var sent: [SMPPDU] = []
        peripheral.send = { sent.append($0) }
        peripheral.receive(SMPPDU.pairingRequest(PairingFeatures(io: .noInputNoOutput, authRequirements: [.secureConnections],
                                                                 initiatorKeys: [], responderKeys: [])).encoded)
        var y = P256KeyPair.debug.y
        y[0] ^= 0x80
        peripheral.receive(SMPPDU.pairingPublicKey(x: P256KeyPair.debug.x, y: y).encoded)
        XCTAssertEqual(sent.last, .pairingFailed(.dhKeyCheckFailed))
        XCTAssertEqual(peripheral.outcome.failure, .sent(.dhKeyCheckFailed))
    }

    func testCommandsOutOfSequenceAndMalformedOnesFailThePairing() {
        let make = { () -> (PairingSession, () -> [SMPPDU]) in
            let session = PairingSession(role: .responder, settings: .make(io: .noInputNoOutput),
                                         initiator: PairingHarness.centralAddress, responder: PairingHarness.peripheralAddress,
                                         random: PairingHarness.generator(seed: 9))
            var sent: [SMPPDU] = []
            session.send = { sent.append($0) }
            return (session, { sent })
        }
        let (early, earlySent) = make()
        early.receive(SMPPDU.pairingRandom(Array(0..<16)).encoded)
        XCTAssertEqual(earlySent(), [.pairingFailed(.unspecifiedReason)])

        let (short, shortSent) = make()
        short.receive([0x01, 0x03, 0x00])
        XCTAssertEqual(shortSent(), [.pairingFailed(.invalidParameters)])

        let (reserved, reservedSent) = make()
        reserved.receive([0x1F, 0x00])
        XCTAssertEqual(reservedSent(), [], "a reserved code is ignored (3.3)")
        XCTAssertFalse(reserved.isFinished)
    }

    func testATimeoutEndsThePairingSilently() {
        let h = PairingHarness(central: .make(io: .noInputNoOutput), peripheral: .make(io: .noInputNoOutput))
        h.central.start()   // the Pairing Request is queued, never delivered: the peripheral is silent
        h.central.timedOut()
        XCTAssertEqual(h.centralOutcome.failure, .timeout)
        h.drain()
        XCTAssertEqual(h.codes.filter { $0.hasPrefix("C>P") }, ["C>P 0x01"], "no Pairing Failed after a timeout (3.4)")
    }

    func testTheSameSeedsPairTheSameWayByteForByte() {
        func transcript(seed: UInt64) -> [[UInt8]] {
            let h = PairingHarness(central: .make(io: .displayYesNo, mitm: true), peripheral: .make(io: .displayYesNo, mitm: true), seed: seed)
            h.run()
            return h.wire.map(\.octets)
        }
        XCTAssertEqual(transcript(seed: 3), transcript(seed: 3))
        XCTAssertNotEqual(transcript(seed: 3), transcript(seed: 4))
    }

    /// The random value (Pairing Random) the central or the peripheral sent first.
    func randomValue(_ h: PairingHarness, fromCentral: Bool) throws -> [UInt8] {
        let octets = try XCTUnwrap(h.wire.first { $0.fromCentral == fromCentral && $0.octets[0] == 0x04 }).octets
        return Array(octets.dropFirst().reversed())
    }
}

extension Optional where Wrapped == Result<PairingResult, PairingFailure> {
    var failure: PairingFailure? {
        if case let .failure(failure)? = self { return failure }
        return nil
    }
}

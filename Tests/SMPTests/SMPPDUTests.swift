import HostLink
import SMP
import XCTest

/// SMP commands on the wire (Core Vol 3 Part H 3.5, 3.6): fields in order, multi-octet values
/// least significant octet first.
final class SMPPDUTests: XCTestCase {
    func testThePairingRequestOfTheC1ExampleDecodesFieldByField() throws {
        // 2.2.3's example: preq = 0x07071000000101 as a number, so on the wire 01 01 00 00 10 07 07.
        guard case let .pairingRequest(features) = try SMPPDU.decode([0x01, 0x01, 0x00, 0x00, 0x10, 0x07, 0x07]) else {
            return XCTFail("not a Pairing Request")
        }
        XCTAssertEqual(features.io, .displayYesNo)
        XCTAssertFalse(features.oobDataPresent)
        XCTAssertEqual(features.authRequirements, [])
        XCTAssertEqual(features.maxKeySize, 16)
        XCTAssertEqual(features.initiatorKeys, [.encryptionKey, .identityKey, .signingKey])
        XCTAssertEqual(SMPPDU.pairingRequest(features).encoded, [0x01, 0x01, 0x00, 0x00, 0x10, 0x07, 0x07])
    }

    func testValuesTravelLeastSignificantOctetFirst() throws {
        let value: [UInt8] = Array(1...16)
        XCTAssertEqual(SMPPDU.pairingConfirm(value).encoded, [0x03] + value.reversed())
        XCTAssertEqual(try SMPPDU.decode([0x04] + value.reversed()), .pairingRandom(value))
        XCTAssertEqual(SMPPDU.centralIdentification(ediv: 0x1234, rand: [1, 2, 3, 4, 5, 6, 7, 8]).encoded,
                       [0x07, 0x34, 0x12, 8, 7, 6, 5, 4, 3, 2, 1])
        let address = SMPAddress(isRandom: true, octets: [0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6])
        XCTAssertEqual(SMPPDU.identityAddressInformation(address).encoded, [0x09, 0x01, 0xC6, 0xC5, 0xC4, 0xC3, 0xC2, 0xC1])
        let x = [UInt8](repeating: 0xAA, count: 31) + [0x01], y = [UInt8](repeating: 0xBB, count: 31) + [0x02]
        let key = SMPPDU.pairingPublicKey(x: x, y: y).encoded
        XCTAssertEqual(key.count, 65)
        XCTAssertEqual(key[1], 0x01)
        XCTAssertEqual(key[33], 0x02)
        XCTAssertEqual(try SMPPDU.decode(key), .pairingPublicKey(x: x, y: y))
        XCTAssertEqual(SMPPDU.securityRequest([.bonding, .mitm, .secureConnections]).encoded, [0x0B, 0x0D])
        XCTAssertEqual(SMPPDU.pairingFailed(.confirmValueFailed).encoded, [0x05, 0x04])
    }

    func testMalformedCommandsAreTypedErrorsWithTheirAnswer() {
        func error(_ octets: [UInt8]) -> SMPDecodingError? {
            do { _ = try SMPPDU.decode(octets); return nil } catch { return error as? SMPDecodingError }
        }
        XCTAssertEqual(error([]), .empty)
        XCTAssertEqual(error([0x0F, 0x00])?.answer, nil)                                    // reserved: ignored
        XCTAssertEqual(error([0x01, 0x03, 0x00, 0x01, 0x10, 0x00]), .length(.pairingRequest, expected: 7, got: 6))
        XCTAssertEqual(error([0x01, 0x05, 0x00, 0x01, 0x10, 0x00, 0x00])?.answer, .invalidParameters)   // IO 0x05
        XCTAssertEqual(error([0x01, 0x03, 0x02, 0x01, 0x10, 0x00, 0x00])?.answer, .invalidParameters)   // OOB flag 2
        XCTAssertEqual(error([0x02, 0x03, 0x00, 0x01, 0x06, 0x00, 0x00])?.answer, .invalidParameters)   // key size 6
        XCTAssertEqual(error([0x09, 0x02, 1, 2, 3, 4, 5, 6])?.answer, .invalidParameters)              // address type 2
    }

    /// Table 2.8 with MITM asked for, rows the responder's IO, columns the initiator's.
    func testTheMethodFollowsTable2_8() {
        func method(_ initiator: IOCapability, _ responder: IOCapability, sc: Bool) -> PairingMethod {
            let auth: AuthRequirements = sc ? [.mitm, .secureConnections] : [.mitm]
            return PairingSession.method(initiator: PairingFeatures(io: initiator, authRequirements: auth, initiatorKeys: [], responderKeys: []),
                                         responder: PairingFeatures(io: responder, authRequirements: auth, initiatorKeys: [], responderKeys: []),
                                         secureConnections: sc)
        }
        XCTAssertEqual(method(.displayYesNo, .displayYesNo, sc: false), .justWorks)
        XCTAssertEqual(method(.displayYesNo, .displayYesNo, sc: true), .numericComparison)
        XCTAssertEqual(method(.keyboardOnly, .displayOnly, sc: false), .passkeyEntry)
        XCTAssertEqual(method(.keyboardOnly, .keyboardOnly, sc: true), .passkeyEntry)
        XCTAssertEqual(method(.keyboardDisplay, .keyboardDisplay, sc: false), .passkeyEntry)
        XCTAssertEqual(method(.keyboardDisplay, .keyboardDisplay, sc: true), .numericComparison)
        XCTAssertEqual(method(.keyboardDisplay, .displayYesNo, sc: true), .numericComparison)
        XCTAssertEqual(method(.displayOnly, .displayOnly, sc: true), .justWorks)
        XCTAssertEqual(method(.keyboardDisplay, .noInputNoOutput, sc: true), .justWorks)
        XCTAssertEqual(method(.noInputNoOutput, .keyboardDisplay, sc: false), .justWorks)
        // Without MITM on either side, IO does not matter.
        let none = PairingFeatures(io: .keyboardDisplay, authRequirements: [.secureConnections], initiatorKeys: [], responderKeys: [])
        XCTAssertEqual(PairingSession.method(initiator: none, responder: none, secureConnections: true), .justWorks)
        // OOB: Secure Connections when either side has the peer's data; legacy only when both do.
        var oob = none
        oob.oobDataPresent = true
        XCTAssertEqual(PairingSession.method(initiator: oob, responder: none, secureConnections: true), .oob)
        XCTAssertEqual(PairingSession.method(initiator: oob, responder: none, secureConnections: false), .justWorks)
        XCTAssertEqual(PairingSession.method(initiator: oob, responder: oob, secureConnections: false), .oob)
    }
}

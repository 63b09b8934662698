import GATT
import HCI
import ScenarioFormat
import XCTest

/// The security keys (docs/scenarios.md section 19): read into the model, refused with the fix
/// when wrong, and written back to the same scenario.
final class SecurityFormatTests: XCTestCase {
    static let text = """
        scenario: every security key
        peripherals:
          lock:
            advertise: { name: Lock, services: [FFF0] }
            security: { io: display-only, secure-connections: false, bonding: false, mitm: true, passkey: 000123, confirm: false, request-security: on-connect }
            gatt:
              - service: FFF0
                characteristics:
                  - { uuid: FFF1, properties: [read, write, notify], permissions: [read, encrypted-read, authenticated-write, encrypted-subscribe] }
                  - { uuid: FFF2, properties: [indicate], permissions: [authenticated-subscribe] }
          band:
            advertise: { name: Band }
        central:
          - auto-pair: { enabled: true, io: keyboard-only, passkey: 000123 }
          - scan: { for: 1s }
          - connect: lock
          - pair: { io: keyboard-display, passkey: 123456, secure-connections: true, bonding: true, mitm: false, confirm: true }
          - expect: { paired: { method: passkey-entry, secure-connections: true, bonded: false, within: 2s } }
          - expect: { paired: lock }
          - expect: { encrypted: true, within: 3s }
          - expect: { pairing-failed: confirm-value-failed }
          - expect: { pairing-failed: {}, peripheral: lock }
          - encrypt: lock
          - expect: { encryption-failed: pin-or-key-missing }
          - expect: { encryption-failed: {}, within: 100ms }
          - peripheral: { lock: [forget-bonds] }
          - auto-pair: false
          - pair
          - encrypt
        """

    func testEveryKeyReadsIntoTheModel() throws {
        let scenario = try Scenario.parse(Self.text, file: "test.yaml")
        let lock = try XCTUnwrap(scenario.peripheral("lock"))
        XCTAssertEqual(lock.security, PeripheralSecurity(settings: SecuritySpec(io: .displayOnly, secureConnections: false, bonding: false, mitm: true,
                                                                                 passkey: 123, confirm: false),
                                                         requestsSecurityOnConnect: true))
        XCTAssertNil(scenario.peripheral("band")?.security)
        let fff1 = lock.services[0].characteristics[0], fff2 = lock.services[0].characteristics[1]
        XCTAssertEqual(fff1.permissions, AttributePermissions(read: .encrypted, write: .authenticated))
        XCTAssertEqual(fff1.configurationPermissions, AttributePermissions(write: .encrypted))
        XCTAssertEqual(fff2.permissions, .open)
        XCTAssertEqual(fff2.configurationPermissions, AttributePermissions(write: .authenticated))
        XCTAssertEqual(fff1.gattCharacteristic.permissions, fff1.permissions)
        XCTAssertEqual(fff1.gattCharacteristic.configurationPermissions, fff1.configurationPermissions)
        let actions = scenario.steps.map(\.action)
        XCTAssertEqual(actions[0], .security(.autoPair(true, settings: SecuritySpec(io: .keyboardOnly, passkey: 123))))
        XCTAssertEqual(actions[3], .security(.pair(peripheral: "lock", settings: SecuritySpec(io: .keyboardDisplay, secureConnections: true, bonding: true,
                                                                                             mitm: false, passkey: 123456, confirm: true))))
        XCTAssertEqual(actions[4], .expect(.security(.paired(peripheral: "lock", method: .passkeyEntry, secureConnections: true, bonded: false, within: .seconds(2)))))
        XCTAssertEqual(actions[5], .expect(.security(.paired(peripheral: "lock", method: nil, secureConnections: nil, bonded: nil, within: .seconds(5)))))
        XCTAssertEqual(actions[6], .expect(.security(.encrypted(peripheral: "lock", true, within: .seconds(3)))))
        XCTAssertEqual(actions[7], .expect(.security(.pairingFailed(peripheral: "lock", reason: PairingFailureName(rawValue: 0x04), within: .seconds(5)))))
        XCTAssertEqual(actions[8], .expect(.security(.pairingFailed(peripheral: "lock", reason: nil, within: .seconds(5)))))
        XCTAssertEqual(actions[9], .security(.encrypt(peripheral: "lock")))
        XCTAssertEqual(actions[10], .expect(.security(.encryptionFailed(peripheral: "lock", reason: .pinOrKeyMissing, within: .seconds(5)))))
        XCTAssertEqual(actions[11], .expect(.security(.encryptionFailed(peripheral: "lock", reason: nil, within: .milliseconds(100)))))
        XCTAssertEqual(actions[12], .peripheralActions([PeripheralActions(peripheral: "lock", actions: [.forgetBonds])]))
        XCTAssertEqual(actions[13], .security(.autoPair(false, settings: SecuritySpec())))
        XCTAssertEqual(actions[14], .security(.pair(peripheral: "lock", settings: SecuritySpec())))
        XCTAssertEqual(actions[15], .security(.encrypt(peripheral: "lock")))
        XCTAssertEqual(scenario.securityUse, "lock declares security: (pairing)")
    }

    func testEveryKeyIsWrittenBackToTheSameScenario() throws {
        let scenario = try Scenario.parse(Self.text, file: "test.yaml")
        let text = ScenarioWriter.write(scenario)
        XCTAssertEqual(try Scenario.parse(text, file: "written.yaml"), scenario, text)
        XCTAssertTrue(text.contains("security: { io: display-only, secure-connections: false, bonding: false, mitm: true, passkey: 000123, confirm: false, request-security: on-connect }"), text)
        XCTAssertTrue(text.contains("permissions: [encrypted-read, authenticated-write, encrypted-subscribe]"), text)
        XCTAssertTrue(text.contains("- auto-pair: { enabled: true, io: keyboard-only, passkey: 000123 }"), text)
        XCTAssertTrue(text.contains("- expect: { encryption-failed: {}, peripheral: lock, within: 100ms }"), text)
        XCTAssertTrue(text.contains("- peripheral: { lock: [forget-bonds] }"), text)
    }

    func testWhatNeedsSecurityIsNamedForSeatsThatCannotPair() throws {
        func use(_ peripheral: String, _ central: String) throws -> String? {
            try Scenario.parse("""
                scenario: s
                peripherals:
                  p:
                    advertise: { name: P, services: [FFF0] }
                \(peripheral)
                central:
                  - scan: { for: 1s }
                \(central)
                """, file: "t.yaml").securityUse
        }
        XCTAssertNil(try use("", "  - connect: p"))
        XCTAssertEqual(try use("    gatt: [ { service: FFF0, characteristics: [ { uuid: FFF1, properties: [notify], permissions: [encrypted-subscribe] } ] } ]", ""),
                       "p's FFF1 has permissions: that need an encrypted link")
        XCTAssertEqual(try use("", "  - connect: p\n  - encrypt"), "step 3 (encrypt) pairs or encrypts")
        XCTAssertEqual(try use("", "  - connect: p\n  - expect: { encrypted: false }"), "step 3 (expect: { encrypted: false }) checks pairing or encryption")
        XCTAssertEqual(try use("", "  - peripheral: { p: [forget-bonds] }"), "step 2 (peripheral: { p: [forget-bonds] }) makes a peripheral forget its bonds")
    }

    func testMistakesAreNamedWithTheFix() {
        func errors(_ peripheral: String, _ central: String = "") -> [String] { Self.errors(peripheral, central) }
        XCTAssertEqual(errors("    gatt: [ { service: FFF0, characteristics: [ { uuid: FFF1, properties: [read], permissions: [encrypted-subscribe] } ] } ]"),
                       ["t.yaml:5:97: error: found encrypted-subscribe on a characteristic with neither notify nor indicate, expected a characteristic with a CCCD (notify or indicate) to protect; add notify to its properties, or remove encrypted-subscribe"])
        XCTAssertEqual(errors("    security: { io: none }"),
                       ["t.yaml:5:21: error: found IO capability 'none', expected one of no-input-no-output, display-only, display-yes-no, keyboard-only, keyboard-display; a device with neither display nor keyboard is no-input-no-output"])
        XCTAssertEqual(errors("    security: { passkey: 1234567 }"),
                       ["t.yaml:5:26: error: found passkey '1234567', expected a passkey of six digits, 000000 to 999999 (Core Vol 3 Part H 2.3.5.3)"])
        XCTAssertEqual(errors("    security: { mitm: yes }").count, 1)
        XCTAssertEqual(errors("    security: { pin: 123456 }"),
                       ["t.yaml:5:17: error: found unknown key 'pin', expected a security key (io, secure-connections, bonding, mitm, passkey, confirm, oob, request-security)"])
        XCTAssertEqual(errors("", "  - auto-pair"),
                       ["t.yaml:9:5: error: found 'auto-pair', expected a step (scan, connect, discover, mtu, read, write, subscribe, unsubscribe, wait, disconnect, peripheral, expect, link-loss, out-of-range, in-range, power-off, power-on, connection-update, link, parameter-requests, pair, encrypt, auto-pair); 'auto-pair' needs a value, e.g. auto-pair: true"])
        XCTAssertEqual(errors("", "  - expect: { encrypted: maybe }").count, 1)
        XCTAssertEqual(errors("", "  - expect: { paired: { method: passkey } }"),
                       ["t.yaml:9:33: error: found pairing method 'passkey', expected one of just-works, passkey-entry, numeric-comparison, oob; did you mean 'passkey-entry'?"])
    }

    /// The errors of a scenario whose peripheral `p` (advertising FFF0) has the lines
    /// `peripheral` and whose central scans, connects to p, then runs `central`.
    static func errors(_ peripheral: String, _ central: String = "") -> [String] {
        do {
            _ = try Scenario.parse("""
                scenario: s
                peripherals:
                  p:
                    advertise: { name: P, services: [FFF0] }
                \(peripheral)
                central:
                  - scan: { for: 1s }
                  - connect: p
                \(central)
                """, file: "t.yaml")
            return []
        } catch let e as ScenarioErrors { return e.errors.map(\.description) } catch { return ["\(error)"] }
    }
}

import BLELabTestSupport
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// The security steps and expectations (docs/scenarios.md section 19) on the sim: each
/// expectation passes when what it says happened and fails, saying what did, when it did not; a
/// pairing or encryption that fails fails its step unless the failure is expected.
final class SecurityScenarioTests: XCTestCase {
    /// `lock` displays passkey 123456 and requires MITM; `band` pairs by Just Works; `beacon` does
    /// not pair. Step 1 is a scan, step 2 the connect.
    private func run(_ peripheral: String, _ central: String) throws -> ScenarioResult {
        try ScenarioText.run("""
            scenario: security
            timeout: 30s
            seed: 16
            peripherals:
              dev:
                advertise: { name: Dev, services: [AAA0] }
                on-disconnect: [start-advertising]
            \(peripheral)
                gatt:
                  - service: AAA0
                    characteristics:
                      - { uuid: AAA1, properties: [read, notify], value: u8:7, permissions: [encrypted-read, encrypted-subscribe] }
                      - { uuid: AAA2, properties: [write], permissions: [authenticated-write] }
            central:
              - scan: { for: 1s }
              - connect: dev
            \(central)
            """)
    }

    private let justWorks = "    security: { io: no-input-no-output }"
    private let display = "    security: { io: display-only, mitm: true, passkey: 123456 }"

    func testEachMethodIsRecognised() throws {
        XCTAssertEqual(try run(justWorks, """
              - pair
              - expect: { paired: { method: just-works, secure-connections: true, bonded: true } }
              - expect: { encrypted: true }
            """).verdict, "passed")
        XCTAssertEqual(try run("    security: { io: no-input-no-output, secure-connections: false, bonding: false }", """
              - pair
              - expect: { paired: { method: just-works, secure-connections: false, bonded: false } }
            """).verdict, "passed")
        XCTAssertEqual(try run(display, """
              - pair: { io: keyboard-only, passkey: 123456 }
              - expect: { paired: { method: passkey-entry } }
              - discover: all
              - write: { characteristic: AAA2, value: u8:1 }
            """).verdict, "passed")
        XCTAssertEqual(try run("    security: { io: display-yes-no, mitm: true }", """
              - pair: { io: keyboard-display }
              - expect: { paired: { method: numeric-comparison } }
            """).verdict, "passed")
    }

    func testPairedFailsSayingWhatHappened() throws {
        XCTAssertEqual(try run(justWorks, "  - pair\n  - expect: { paired: { method: passkey-entry, bonded: false } }").verdict,
                       "step 4 (test.yaml:18): expect: { paired: { method: passkey-entry, bonded: false } }: expected paired with dev by passkey-entry, not bonded within 5s; seen paired by just-works, Secure Connections, bonded, 16-octet key (by just-works, not passkey-entry; bonded)")
        XCTAssertEqual(try run(justWorks, "  - expect: { paired: { within: 1s } }").verdict,
                       "step 3 (test.yaml:17): expect: { paired: { within: 1s } }: expected paired with dev within 1s; seen no pairing with dev (nothing started one: a pair step, auto-pair, or the peripheral's request-security)")
        XCTAssertEqual(try run("", "  - pair\n  - expect: { paired: dev }").verdict,
                       "step 3 (test.yaml:17): pair: expected the pairing with dev to succeed, or an 'expect: { pairing-failed: pairing-not-supported }' right after the step; seen pairing failed: pairing-not-supported (peer sent Pairing Failed 0x05 (Pairing Not Supported))")
    }

    func testAFailedPairingFailsItsStepUnlessExpected() throws {
        XCTAssertEqual(try run(display, "  - pair: { io: keyboard-only, passkey: 123465 }\n  - expect: { connected: dev }").verdict,
                       "step 3 (test.yaml:17): pair: { io: keyboard-only, passkey: 123465 }: expected the pairing with dev to succeed, or an 'expect: { pairing-failed: confirm-value-failed }' right after the step; seen pairing failed: confirm-value-failed (peer sent Pairing Failed 0x04 (Confirm Value Failed))")
        XCTAssertEqual(try run(display, "  - pair: { io: keyboard-only, passkey: 123465 }\n  - expect: { pairing-failed: confirm-value-failed }").verdict,
                       "passed")
        XCTAssertEqual(try run(display, "  - pair: { io: keyboard-only, passkey: 123465 }\n  - expect: { pairing-failed: passkey-entry-failed }").verdict,
                       "step 4 (test.yaml:18): expect: { pairing-failed: passkey-entry-failed }: expected the pairing with dev to fail with passkey-entry-failed within 5s; seen pairing failed: confirm-value-failed (peer sent Pairing Failed 0x04 (Confirm Value Failed))")
        XCTAssertEqual(try run(justWorks, "  - pair\n  - expect: { pairing-failed: {} }").verdict,
                       "step 4 (test.yaml:18): expect: { pairing-failed: {  } }: expected the pairing with dev to fail within 5s; seen paired by just-works, Secure Connections, bonded, 16-octet key")
    }

    func testEncryptedChecksTheLink() throws {
        XCTAssertEqual(try run(justWorks, "  - expect: { encrypted: true, within: 500ms }").verdict,
                       "step 3 (test.yaml:17): expect: { encrypted: true, within: 500ms }: expected the link to dev encrypted within 500ms; seen the link to dev is not encrypted")
        XCTAssertEqual(try run(justWorks, "  - pair\n  - expect: { encrypted: false }").verdict,
                       "step 4 (test.yaml:18): expect: { encrypted: false }: expected the link to dev unencrypted; seen the link to dev is encrypted (16-octet key, Secure Connections)")
    }

    func testEncryptNeedsABondAndAForgottenBondFailsIt() throws {
        XCTAssertEqual(try run(justWorks, "  - encrypt").verdict,
                       "step 3 (test.yaml:17): encrypt: expected the link to dev encrypted with the central's bond, or an 'expect: { encryption-failed: REASON }' right after the step; seen the central has no bond with dev: pair first")
        let forgotten = """
              - pair
              - disconnect
              - peripheral: { dev: [forget-bonds] }
              - connect: dev
              - encrypt
            """
        XCTAssertEqual(try run(justWorks, forgotten + "\n  - expect: { encryption-failed: pin-or-key-missing }").verdict, "passed")
        XCTAssertEqual(try run(justWorks, forgotten).verdict,
                       "step 7 (test.yaml:21): encrypt: expected the link to dev encrypted with the central's bond, or an 'expect: { encryption-failed: pin-or-key-missing }' right after the step; seen encryption failed: pin-or-key-missing (0x06)")
        XCTAssertEqual(try run(justWorks, "  - pair\n  - disconnect\n  - connect: dev\n  - encrypt\n  - expect: { encryption-failed: {} }").verdict,
                       "step 7 (test.yaml:21): expect: { encryption-failed: {  } }: expected the encryption of the link to dev to fail within 5s; seen the link to dev was encrypted (16-octet key, Secure Connections)")
    }

    func testWithoutAutoPairTheAnswerIsAnATTError() throws {
        XCTAssertEqual(try run(justWorks, "  - discover: all\n  - subscribe: AAA1").verdict,
                       "step 4 (test.yaml:18): subscribe: AAA1: expected the subscription to AAA1 to succeed, or an 'expect: { error: insufficient-authentication }' right after the step; seen ATT Error Response insufficient-authentication (0x05) for handle 0x000d")
        XCTAssertEqual(try run(justWorks, "  - discover: all\n  - read: AAA1\n  - expect: { error: insufficient-authentication }").verdict, "passed")
    }

    func testAutoPairPairsOrEncryptsAndRetries() throws {
        let result = try run(justWorks, """
              - auto-pair: true
              - discover: all
              - read: AAA1
              - expect: { value: u8:7 }
              - expect: { paired: { method: just-works } }
              - write: { characteristic: AAA2, value: u8:1 }
              - expect: { error: insufficient-authentication }
              - disconnect
              - connect: dev
              - discover: all
              - subscribe: AAA1
              - expect: { encrypted: true }
            """)
        XCTAssertEqual(result.verdict, "passed")
        // Step 5's read got Insufficient Authentication, paired and read again.
        XCTAssertEqual(result.steps[4].note, "read u8:7")
        XCTAssertEqual(result.steps[6].note, "paired by just-works, Secure Connections, bonded, 16-octet key")
        // After reconnecting, the bonded central got Insufficient Encryption and encrypted with its bond.
        XCTAssertEqual(result.steps[13].note, "the link to dev is encrypted (16-octet key, Secure Connections)")
    }

    func testAnAutoPairThatFailsIsJudgedByPairingFailed() throws {
        let mitm = "    security: { io: no-input-no-output, mitm: true }"
        XCTAssertEqual(try run(mitm, "  - auto-pair: true\n  - discover: all\n  - read: AAA1\n  - expect: { pairing-failed: authentication-requirements }").verdict,
                       "passed")
        XCTAssertEqual(try run(mitm, "  - auto-pair: true\n  - discover: all\n  - read: AAA1").verdict,
                       "step 5 (test.yaml:19): read: AAA1: expected the read of AAA1 to succeed, or an 'expect: { error: insufficient-authentication }' right after the step; seen ATT Error Response insufficient-authentication (0x05) for handle 0x000c; auto-pair: pairing failed: authentication-requirements (peer sent Pairing Failed 0x03 (Authentication Requirements))")
    }

    /// A pairing the peripheral's Security Request started, which no step waits for: its failure
    /// fails the scenario unless a `pairing-failed` takes it up.
    func testAFailedPairingNobodyWaitedForIsNotPassedOver() throws {
        let asks = "    security: { io: no-input-no-output, mitm: true, request-security: on-connect }"
        XCTAssertEqual(try run(asks, "  - wait: 1s\n  - expect: { pairing-failed: authentication-requirements }\n  - wait: 1s").verdict, "passed")
        XCTAssertEqual(try run(asks, "  - wait: 1s\n  - wait: 1s").verdict,
                       "step 4 (test.yaml:18): wait: 1s: expected every pairing and encryption with dev to succeed, or an 'expect: { pairing-failed: authentication-requirements }' once it has failed; seen the pairing that dev's Security Request started: pairing failed: authentication-requirements (peer sent Pairing Failed 0x03 (Authentication Requirements))")
        XCTAssertEqual(try run(asks, "  - wait: 1s").verdict,
                       "step 3 (test.yaml:17): wait: 1s: expected every pairing and encryption with dev to succeed, or an 'expect: { pairing-failed: authentication-requirements }' once it has failed; seen the pairing that dev's Security Request started: pairing failed: authentication-requirements (peer sent Pairing Failed 0x03 (Authentication Requirements))")
    }
}

import BLELabTestSupport
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// A peripheral with `privacy:` (its address rotates), `addresses-seen`, OOB pairing and the
/// encryption faults (docs/scenarios.md sections 18 and 19), on the sim: each expectation passes
/// when what it says happened, and fails saying what did when it did not.
final class PrivacyScenarioTests: XCTestCase {
    /// `tag` rotates its resolvable private address every 5 s and pairs by Just Works (or by OOB
    /// with `oob: true`). Step 1 is a scan.
    private func run(_ central: String, security: String = "{ io: no-input-no-output, oob: true }", requires: String = "") throws -> ScenarioResult {
        try ScenarioText.run("""
            scenario: privacy
            timeout: 60s
            seed: 21
            \(requires)
            peripherals:
              tag:
                advertise: { name: Tag, services: [AAA0] }
                security: \(security)
                privacy: { rotate: 5s }
                on-disconnect: [start-advertising]
                gatt:
                  - service: AAA0
                    characteristics:
                      - { uuid: AAA1, properties: [read], value: u8:7, permissions: [authenticated-read] }
            central:
              - scan: { for: 1s }
            \(central)
            """)
    }

    /// Pairs and bonds, disconnects, waits past a rotation and scans again (steps 2–6).
    private let bondThenRotate = """
          - connect: tag
          - pair: tag
          - disconnect
          - wait: 5s
          - scan: { for: 1s }
        """

    func testABondedCentralResolvesEveryAddressToOneIdentity() throws {
        let passed = try run(bondThenRotate + """

              - expect: { addresses-seen: { count: 2, resolved: true } }
              - connect: tag
              - encrypt: tag
              - expect: { encrypted: true }
            """)
        XCTAssertEqual(passed.verdict, "passed")
        // The scans' notes say what the central's host made of each address (ScanReport.identity).
        let scans = passed.steps.filter { $0.step.text.hasPrefix("scan") }.compactMap(\.note)
        XCTAssertEqual(scans.count, 2)
        XCTAssertTrue(scans[0].hasSuffix(", not resolved)"), scans[0])
        XCTAssertTrue(scans[1].hasSuffix(", resolved to identity 36:1E:3D:DA:F3:B8/public)"), scans[1])
        let wrong = try run(bondThenRotate + "\n  - expect: { addresses-seen: { count: 2, resolved: false } }").verdict
        XCTAssertTrue(wrong.hasPrefix("step 7 (test.yaml:22): expect: { addresses-seen: { count: 2, resolved: false } }: expected the central's scans heard tag at 2 addresses, none resolved to its identity; seen tag at 2 addresses ("), wrong)
        XCTAssertTrue(wrong.hasSuffix("; the central's host resolves both to tag's identity 36:1E:3D:DA:F3:B8/public: one device"), wrong)
        let count = try run(bondThenRotate + "\n  - expect: { addresses-seen: 3 }").verdict
        XCTAssertTrue(count.hasPrefix("step 7 (test.yaml:22): expect: { addresses-seen: 3 }: expected the central's scans heard tag at 3 addresses; seen tag at 2 addresses ("), count)
    }

    func testAnUnbondedCentralResolvesNone() throws {
        XCTAssertEqual(try run("""
              - expect: { addresses-seen: { count: 1, resolved: false } }
              - wait: 5s
              - scan: { for: 1s }
              - expect: { addresses-seen: { count: 2, resolved: false } }
            """).verdict, "passed")
        let wrong = try run("  - wait: 5s\n  - scan: { for: 1s }\n  - expect: { addresses-seen: { resolved: true } }").verdict
        XCTAssertTrue(wrong.hasPrefix("step 4 (test.yaml:19): expect: { addresses-seen: { resolved: true } }: expected the central's scans heard tag, all resolved to its identity; seen tag at 2 addresses ("), wrong)
        XCTAssertTrue(wrong.hasSuffix("; the central's host resolves none to tag's identity 36:1E:3D:DA:F3:B8/public: 2 devices to the app"), wrong)
        XCTAssertEqual(try run("", security: "{ io: no-input-no-output }").verdict, "passed")
    }

    func testAddressesSeenNeedsAScanThatHeardThePeripheral() throws {
        XCTAssertEqual(try run("  - expect: { addresses-seen: { count: 1, peripheral: tag } }").verdict, "passed")
        let none = try ScenarioText.run("""
            scenario: privacy
            peripherals:
              tag: { advertise: { name: Tag }, privacy: { rotate: 5s } }
            central:
              - expect: { addresses-seen: 1 }
            """).verdict
        XCTAssertEqual(none, "step 1 (test.yaml:5): expect: { addresses-seen: 1 }: expected the central's scans heard tag at 1 address; seen no scan has run")
    }

    /// The field bug: an app that connects to the address its scan reported before the rotation
    /// finds nobody there.
    func testAConnectionToTheAddressBeforeTheRotationFindsNobody() throws {
        let verdict = try run("  - wait: 5s\n  - connect: { peripheral: tag, within: 2s }").verdict
        XCTAssertEqual(verdict, "step 3 (test.yaml:18): connect: { peripheral: tag, within: 2s }: expected a connection to tag within 2s; seen no connection within 2s")
    }

    func testOOBPairingIsObservedAsOOB() throws {
        XCTAssertEqual(try run("""
              - connect: tag
              - pair: { oob: true }
              - expect: { paired: { method: oob, secure-connections: true } }
              - discover: all
              - read: AAA1
              - expect: { value: u8:7 }
            """).verdict, "passed")
        XCTAssertEqual(try run("  - connect: tag\n  - pair: { oob: true, secure-connections: false }\n  - expect: { paired: { method: oob, secure-connections: false } }").verdict,
                       "passed")
        XCTAssertEqual(try run("  - connect: tag\n  - pair\n  - expect: { paired: { method: oob } }").verdict,
                       "step 4 (test.yaml:19): expect: { paired: { method: oob } }: expected paired with tag by oob within 5s; seen paired by just-works, Secure Connections, bonded, 16-octet key (by just-works, not oob)")
    }

    func testEncryptionFaultsFailTheEncryptionWithTheirReason() throws {
        let sim = "requires: [sim]"
        XCTAssertEqual(try run(bondThenRotate + """

              - link: { encryption: key-missing }
              - connect: tag
              - encrypt: tag
              - expect: { encryption-failed: pin-or-key-missing }
            """, requires: sim).verdict, "passed")
        XCTAssertEqual(try run(bondThenRotate + """

              - link: { encryption: key-missing }
              - connect: tag
              - encrypt: tag
            """, requires: sim).verdict,
                       "step 9 (test.yaml:24): encrypt: tag: expected the link to tag encrypted with the central's bond, or an 'expect: { encryption-failed: pin-or-key-missing }' right after the step; seen encryption failed: pin-or-key-missing (0x06)")
        XCTAssertEqual(try run(bondThenRotate + """

              - link: { encryption: mic-failure }
              - connect: tag
              - encrypt: tag
              - expect: { encryption-failed: pin-or-key-missing }
            """, requires: sim).verdict,
                       "step 10 (test.yaml:25): expect: { encryption-failed: pin-or-key-missing }: expected the encryption of the link to tag to fail with pin-or-key-missing within 5s; seen encryption failed: encryption failed: connection-timeout (0x08); the peripheral's end of the link: connection-terminated-mic-failure (0x3d)")
        XCTAssertEqual(try run(bondThenRotate + """

              - link: { encryption: mic-failure }
              - connect: tag
              - encrypt: tag
              - expect: { encryption-failed: connection-terminated-mic-failure }
            """, requires: sim).verdict, "passed")
    }
}

import BLERuntime
import Controller
import ScenarioFormat
import XCTest

/// `privacy:`, `addresses-seen`, `oob: true` and the encryption faults of `link:`
/// (docs/scenarios.md sections 18 and 19): read into the model, refused with the fix when wrong,
/// and written back to the same scenario.
final class PrivacyFormatTests: XCTestCase {
    static let text = """
        scenario: privacy, OOB and encryption faults
        requires: [sim]
        peripherals:
          lock:
            advertise: { name: Lock, services: [FFF0] }
            security: { io: no-input-no-output, oob: true }
            privacy: { rotate: 15m }
            link: { encryption: key-missing }
          tag:
            advertise: { name: Tag }
            privacy: { rotate: 1s }
        central:
          - scan: { for: 1s }
          - expect: { addresses-seen: { count: 2, resolved: true, peripheral: lock } }
          - expect: { addresses-seen: 1, peripheral: tag }
          - expect: { addresses-seen: { resolved: false, peripheral: tag } }
          - connect: lock
          - pair: { oob: true }
          - auto-pair: { enabled: true, oob: true }
          - link: { encryption: mic-failure }
        """

    func testEveryKeyReadsIntoTheModel() throws {
        let scenario = try Scenario.parse(Self.text, file: "test.yaml")
        XCTAssertEqual(scenario.peripheral("lock")?.privacy, PeripheralPrivacy(rotate: .seconds(900)))
        XCTAssertEqual(scenario.peripheral("tag")?.privacy, PeripheralPrivacy(rotate: .seconds(1)))
        XCTAssertEqual(scenario.peripheral("lock")?.security?.settings, SecuritySpec(io: .noInputNoOutput, oob: true))
        XCTAssertEqual(scenario.faults["lock"]?.link?.encryption, .keyMissing)
        let actions = scenario.steps.map(\.action)
        XCTAssertEqual(actions[1], .expect(.security(.addressesSeen(peripheral: "lock", count: 2, resolved: true))))
        XCTAssertEqual(actions[2], .expect(.security(.addressesSeen(peripheral: "tag", count: 1, resolved: nil))))
        XCTAssertEqual(actions[3], .expect(.security(.addressesSeen(peripheral: "tag", count: nil, resolved: false))))
        XCTAssertEqual(actions[5], .security(.pair(peripheral: "lock", settings: SecuritySpec(oob: true))))
        XCTAssertEqual(actions[6], .security(.autoPair(true, settings: SecuritySpec(oob: true))))
        XCTAssertEqual(actions[7], .fault(.link(peripheral: "lock", LinkFaults(encryption: .micFailure))))
        XCTAssertEqual(scenario.securityUse, "lock declares security: (pairing)")
    }

    func testEveryKeyIsWrittenBackToTheSameScenario() throws {
        let scenario = try Scenario.parse(Self.text, file: "test.yaml")
        let text = ScenarioWriter.write(scenario)
        XCTAssertEqual(try Scenario.parse(text, file: "written.yaml"), scenario, text)
        XCTAssertTrue(text.contains("privacy: { rotate: 900s }"), text)
        XCTAssertTrue(text.contains("security: { io: no-input-no-output, oob: true }"), text)
        XCTAssertTrue(text.contains("- expect: { addresses-seen: { count: 2, resolved: true, peripheral: lock } }"), text)
        XCTAssertTrue(text.contains("- pair: { peripheral: lock, oob: true }"), text)
    }

    func testAPeripheralWithPrivacyAloneIsASecurityUse() throws {
        let scenario = try Scenario.parse("""
            scenario: s
            peripherals:
              tag: { advertise: { name: Tag }, privacy: { rotate: 30s } }
            central:
              - scan: { for: 1s }
            """, file: "t.yaml")
        XCTAssertEqual(scenario.securityUse, "tag declares privacy: (a resolvable private address, resolved with the IRK a bond gives)")
    }

    private func errors(_ peripheral: String, _ central: String = "") -> [String] {
        SecurityFormatTests.errors(peripheral, central)
    }

    func testBadPrivacyIsNamedWithTheFix() {
        XCTAssertEqual(errors("    privacy: { rotate: 500ms }"),
                       ["t.yaml:5:24: error: found '500ms', expected a rotation interval from 1s to 1h (a controller's RPA timeout, Core Vol 4 Part E 7.8.45); an address that changes more often than every second is no device's; Core Vol 3 Part C 10.8.2.2 recommends 15m"])
        XCTAssertEqual(errors("    privacy: { rotate: 2h }"),
                       ["t.yaml:5:24: error: found '2h', expected a rotation interval from 1s to 1h (a controller's RPA timeout, Core Vol 4 Part E 7.8.45); Core Vol 3 Part C 10.8.2.2 recommends 15m"])
        XCTAssertEqual(errors("    privacy: { rotate: 15 }"),
                       ["t.yaml:5:24: error: found '15', expected a rotation interval such as 250ms, 1s, 1.5s or 2m; add a unit: 15ms or 15s"])
        XCTAssertEqual(errors("    privacy: {}"),
                       ["t.yaml:5:14: error: found privacy without 'rotate', expected privacy: { rotate: DURATION }, such as { rotate: 15m }"])
        XCTAssertEqual(errors("    privacy: { rotation: 15m }"),
                       ["t.yaml:5:16: error: found unknown key 'rotation', expected a privacy key (rotate)",
                        "t.yaml:5:14: error: found privacy without 'rotate', expected privacy: { rotate: DURATION }, such as { rotate: 15m }"].sorted())
        XCTAssertEqual(errors("    privacy: true"),
                       ["t.yaml:5:14: error: found 'true', expected privacy settings such as { rotate: 15m } (how often the resolvable private address changes)"])
    }

    func testBadAddressesSeenIsNamedWithTheFix() {
        XCTAssertEqual(errors("", "  - expect: { addresses-seen: {} }"),
                       ["t.yaml:9:15: error: found addresses-seen without count or resolved, expected what to check, such as addresses-seen: { count: 2, resolved: true }"])
        XCTAssertEqual(errors("", "  - expect: { addresses-seen: 0 }"),
                       ["t.yaml:9:31: error: found '0', expected a count of addresses, 1 or more"])
        XCTAssertEqual(errors("", "  - expect: { addresses-seen: { resolved: yes } }").count, 1)
        XCTAssertEqual(errors("", "  - expect: { addresses-seen: { count: 2, identity: true } }"),
                       ["t.yaml:9:43: error: found unknown key 'identity', expected a 'addresses-seen' key (count, resolved, peripheral)"])
    }

    func testOOBAimedAtAPeripheralWithoutItIsRefused() {
        XCTAssertEqual(errors("    security: { io: no-input-no-output }", "  - pair: { oob: true }"),
                       ["t.yaml:9:18: error: found oob: true for p, whose security: has no oob: true, expected a peripheral that can exchange data out of band (an NFC tag, a QR code); add oob: true to p's security:, or leave oob out of this step"])
        XCTAssertEqual(errors("", "  - auto-pair: { enabled: true, oob: true }"),
                       ["t.yaml:9:38: error: found oob: true, while no peripheral's security: has oob: true, expected a peripheral that can exchange data out of band (an NFC tag, a QR code); add oob: true to the peripheral's security:, or leave oob out of this step"])
        XCTAssertEqual(errors("    security: { oob: true }", "  - pair: { oob: true }"), [])
        XCTAssertEqual(errors("    security: { oob: maybe }").count, 1)
    }

    func testBadEncryptionFaultsAreNamedWithTheFix() {
        XCTAssertEqual(errors("    link: { encryption: pin-missing }"),
                       ["t.yaml:5:25: error: found 'pin-missing', expected an encryption fault: key-missing (PIN or Key Missing, 0x06) or mic-failure (Connection Terminated due to MIC Failure, 0x3D); did you mean 'key-missing'?"])
        XCTAssertEqual(errors("", "  - link: { encryption: mic }"),
                       ["t.yaml:9:25: error: found 'mic', expected an encryption fault: key-missing (PIN or Key Missing, 0x06) or mic-failure (Connection Terminated due to MIC Failure, 0x3D); did you mean 'mic-failure'?"])
        XCTAssertEqual(errors("    link: { encryption: key-missng }").count, 1)
    }
}

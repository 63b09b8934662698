import BLELabTestSupport
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// Validation: every error names file:line:column, what was found and what was expected, with a
/// did-you-mean for misspellings; all errors of a file are reported, before anything runs.
final class SchemaErrorTests: XCTestCase {
    private func errors(_ text: String) -> [String] { ScenarioText.errors(text) }

    /// A minimal valid file around one central step (line 10).
    private func withStep(_ step: String) -> String {
        """
        scenario: one step
        peripherals:
          hm10:
            advertise: { name: HMSoft, services: [FFE0] }
            gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [read, write-without-response, notify] }
        central:
          \(step)
        """
    }

    func testMinimalFileIsValid() {
        XCTAssertEqual(errors(withStep("- scan: { for: 1s }")), [])
    }

    func testMisspeltKeyGetsDidYouMean() {
        XCTAssertEqual(errors("""
        scenario: x
        peripherals:
          hm10:
            advertize: { name: A }
        central:
          - scan
        """), [
            "test.yaml:4:5: error: found unknown key 'advertize', expected a peripheral key (address, rssi, advertise, gatt, on-connect, on-disconnect, device-name, flaws, security, privacy, link, mtu); did you mean 'advertise'?",
        ])
        XCTAssertEqual(errors("scenario: x\nperipherals: { a: {} }\ncentral: [scan]\ntimout: 5s\n"), [
            "test.yaml:4:1: error: found unknown key 'timout', expected a scenario key (scenario, tags, timeout, seed, requires, expect-failure, peripherals, central); did you mean 'timeout'?",
        ])
    }

    func testMisspeltStepAndOptionGetDidYouMean() {
        XCTAssertEqual(errors(withStep("- wiat: 2s")), [
            "test.yaml:10:5: error: found unknown step 'wiat', expected a step (scan, connect, discover, mtu, read, write, subscribe, unsubscribe, wait, disconnect, peripheral, expect, link-loss, out-of-range, in-range, power-off, power-on, connection-update, link, parameter-requests, pair, encrypt, auto-pair); did you mean 'wait'?",
        ])
        XCTAssertEqual(errors(withStep("- expect: { notification: FFE1, vaule: text:a }")), [
            "test.yaml:10:35: error: found unknown key 'vaule', expected a 'notification' key (characteristic, value, count, within, in-order, peripheral); did you mean 'value'?",
        ])
        XCTAssertEqual(errors(withStep("- expect: { discoverd: hm10 }")).first,
                       "test.yaml:10:15: error: found unknown expectation 'discoverd', expected an expectation (discovered, not-discovered, only-discovered, connected, services, characteristic, value, write-sent-as, error, peripheral-received, notification, no-notification, disconnected, rssi, malformed-response, att-timeout, response-time, ignored-notification, service-changed, not-services, connection-parameters, mtu, link-lost, connect-failed, paired, encrypted, pairing-failed, encryption-failed, addresses-seen); did you mean 'discovered'?")
    }

    /// `acquire` (BlueZ's AcquireNotify/AcquireWrite) on subscribe and write only; AcquireWrite
    /// sends only Write Commands, so a request type with it is an error.
    func testAcquireAndTheDefaultWriteType() throws {
        let file = withStep("""
        - connect: hm10
          - subscribe: { characteristic: FFE1, acquire: true }
          - write: { characteristic: FFE1, value: text:a, acquire: true }
          - write: { characteristic: FFE1, value: text:b, type: default }
        """)
        XCTAssertEqual(errors(file), [])
        let scenario = try ScenarioText.load(file)
        XCTAssertEqual(scenario.steps.map(\.acquire), [false, true, true, false])
        guard case let .write(w) = scenario.steps[3].action else { return XCTFail("not a write") }
        XCTAssertEqual(w.type, .default)
        XCTAssertEqual(errors(withStep("- write: { characteristic: FFE1, value: text:a, type: request, acquire: true }")), [
            "test.yaml:10:57: error: found 'request', expected type: command (or no type) with acquire: true; AcquireWrite's socket only sends Write Commands (BlueZ doc/org.bluez.GattCharacteristic.rst)",
        ])
        XCTAssertEqual(errors(withStep("- read: { characteristic: FFE1, acquire: true }")).first,
                       "test.yaml:10:35: error: found unknown key 'acquire', expected a 'read' key (characteristic, peripheral, descriptor)")
        XCTAssertEqual(errors(withStep("- subscribe: { characteristic: FFE1, acquire: yes }")).count, 1)
    }

    func testUnknownPeripheral() {
        XCTAssertEqual(errors(withStep("- connect: hm11")), [
            "test.yaml:10:14: error: found peripheral 'hm11', expected a peripheral declared under peripherals: (hm10); did you mean 'hm10'?",
        ])
        XCTAssertEqual(errors(withStep("- peripheral: { curtain: [disconnect] }")), [
            "test.yaml:10:19: error: found peripheral 'curtain', expected a peripheral declared under peripherals: (hm10)",
        ])
    }

    func testUndeclaredCharacteristic() {
        XCTAssertEqual(errors(withStep("- read: FFE9")), [
            "test.yaml:10:11: error: found characteristic 'FFE9', expected a characteristic declared by hm10 (FFE1); did you mean 'FFE1'?",
        ])
        // In a peripheral's own trigger, only its own database counts.
        XCTAssertEqual(errors("""
        scenario: x
        peripherals:
          a:
            gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [write], on-write: [{ notify: FFF1 }] }
          b:
            gatt: [{ service: FFF0, characteristics: [{ uuid: FFF1, properties: [notify] }] }]
        central: [scan]
        """), [
            "test.yaml:7:69: error: found characteristic 'FFF1', expected a characteristic declared by a (FFE1); did you mean 'FFE1'?",
        ])
    }

    func testUndeclaredCharacteristicWithSeveralPeripherals() {
        XCTAssertEqual(errors("""
        scenario: x
        peripherals:
          a:
            gatt: [{ service: FFE0, characteristics: [{ uuid: FFE1, properties: [read] }] }]
          b:
            gatt: [{ service: FFF0, characteristics: [{ uuid: FFF1, properties: [read] }] }]
        central:
          - read: FFF9
        """), [
            "test.yaml:8:11: error: found characteristic 'FFF9', expected a characteristic declared by a peripheral (a: FFE1; b: FFF1); did you mean 'FFF1'?",
        ])
    }

    func testBadDurationValuePropertyAndErrorName() {
        XCTAssertEqual(errors(withStep("- scan: { for: 5 }")), [
            "test.yaml:10:18: error: found '5', expected a duration such as 250ms, 1s, 1.5s or 2m; add a unit: 5ms or 5s",
        ])
        XCTAssertEqual(errors(withStep("- wait: 1.5 s")), [
            "test.yaml:10:11: error: found '1.5 s', expected a duration such as 250ms, 1s, 1.5s or 2m; write the unit right after the number: 1.5s",
        ])
        XCTAssertEqual(errors(withStep("- write: { characteristic: FFE1, value: txt:hi }")), [
            "test.yaml:10:43: error: found 'txt:hi', expected a value such as text:hello, hex:4c000215, u8:7, u16:500, u32:1 or a list of them; did you mean 'text:'?",
        ])
        XCTAssertEqual(errors(withStep("- write: { characteristic: FFE1, value: hex:abc }")), [
            "test.yaml:10:43: error: found 'hex:abc', expected a value such as text:hello, hex:4c000215, u8:7, u16:500, u32:1 or a list of them; hex: needs two digits per byte, and 3 digits is an odd number",
        ])
        XCTAssertEqual(errors(withStep("- write: { characteristic: FFE1, value: u8:256 }")), [
            "test.yaml:10:43: error: found 'u8:256', expected a value such as text:hello, hex:4c000215, u8:7, u16:500, u32:1 or a list of them; u8: takes 0 to 255",
        ])
        XCTAssertEqual(errors(withStep("- expect: { error: write-not-permited }")), [
            "test.yaml:10:22: error: found ATT error 'write-not-permited', expected an ATT error name such as write-not-permitted or insufficient-authentication, or 0xNN; did you mean 'write-not-permitted'?",
        ])
        XCTAssertEqual(errors(withStep("- expect: { disconnected: { reason: remote-user-terminate } }")), [
            "test.yaml:10:39: error: found reason 'remote-user-terminate', expected a disconnect reason such as remote-user-terminated or connection-timeout, or 0xNN; did you mean 'remote-user-terminated'?",
        ])
        XCTAssertEqual(errors("""
        scenario: x
        peripherals:
          a:
            gatt: [{ service: FFE0, characteristics: [{ uuid: FFE1, properties: [read, notfy] }] }]
        central: [scan]
        """), [
            "test.yaml:4:80: error: found property 'notfy', expected one of broadcast, read, write-without-response, write, notify, indicate, authenticated-signed-writes, extended-properties; did you mean 'notify'?",
        ])
    }

    func testBadUUIDAndWrongNodeKinds() {
        XCTAssertEqual(errors(withStep("- scan: { services: [FFE0X] }")), [
            "test.yaml:10:24: error: found 'FFE0X', expected a service UUID (16-bit like 180D, 32-bit, or 128-bit like 6E400001-B5A3-F393-E0A9-E50E24DCCA9E); 'X' is not a hexadecimal digit",
        ])
        XCTAssertEqual(errors("scenario: [a]\nperipherals: []\ncentral: { scan: 1s }\n"), [
            "test.yaml:1:11: error: found a sequence, expected a one-line scenario name",
            "test.yaml:2:14: error: found a sequence, expected a mapping of peripheral ids to peripherals",
            "test.yaml:3:10: error: found a mapping, expected a list of steps (- scan: …, - connect: …)",
        ])
        XCTAssertEqual(errors("- just a list\n"), [
            "test.yaml:1:1: error: found a sequence, expected a scenario: a mapping with scenario, peripherals and central",
        ])
    }

    func testMissingRequiredKeys() {
        XCTAssertEqual(errors("tags: [a]\n"), [
            "test.yaml:1:1: error: found a scenario file without 'scenario', expected 'scenario: what it checks' as its first line",
            "test.yaml:1:1: error: found a scenario file without 'peripherals', expected 'peripherals:' declaring at least one peripheral",
            "test.yaml:1:1: error: found a scenario file without 'central', expected 'central:' with the steps of the scripted central",
        ])
        XCTAssertEqual(errors(withStep("- write: { characteristic: FFE1 }")), [
            "test.yaml:10:5: error: found 'write' without 'value', expected write: { characteristic: FFE1, value: text:hello }",
        ])
    }

    func testAmbiguousCharacteristicNeedsItsService() {
        let file = """
        scenario: two batteries
        peripherals:
          bat:
            gatt:
              - service: 180F
                characteristics: [{ uuid: 2A19, properties: [read] }]
              - service: 1810
                characteristics: [{ uuid: 2A19, properties: [read] }]
        central:
          - read: 2A19
          - read: 180F/2A19
          - read: 180A/2A19
        """
        XCTAssertEqual(errors(file), [
            "test.yaml:10:11: error: found characteristic '2A19' in 2 services of bat (180F, 1810), expected SERVICE/CHARACTERISTIC; write '180F/2A19' or '1810/2A19'",
            "test.yaml:12:11: error: found characteristic '180A/2A19', expected a characteristic declared by bat (2A19, 2A19)",
        ])
    }

    func testSeveralErrorsAreAllReportedInFileOrder() {
        let file = """
        scenario: many mistakes
        peripherals:
          hm10:
            rssi: loud
            advertise: { name: HMSoft, services: [FFE0], interval: 5ms }
            gatt:
              - service: FFE0
                characteristics:
                  - { uuid: FFE1, properties: [read, notify], on-read: [{ notify: FFE1 }, { respond-error: 0x80 }] }
        central:
          - scan: { services: [FFE0], for: 1s, duplicates: no }
          - connect: hm11
          - read: FFE9
          - expect: { error: write-not-permited }
          - wait: soon
        """
        XCTAssertEqual(errors(file), [
            "test.yaml:4:11: error: found 'loud', expected an RSSI in dBm from -127 to 20",
            "test.yaml:5:60: error: found '5ms', expected an advertising interval from 20ms to 10.24s",
            "test.yaml:9:85: error: found respond-error after another action, expected respond-error as the first action (after any delay); the request is answered before the first other action runs",
            "test.yaml:11:52: error: found 'no', expected true or false; write false (YAML 1.2 reads only true and false as booleans)",
            "test.yaml:12:14: error: found peripheral 'hm11', expected a peripheral declared under peripherals: (hm10); did you mean 'hm10'?",
            "test.yaml:13:11: error: found characteristic 'FFE9', expected a characteristic declared by hm10 (FFE1); did you mean 'FFE1'?",
            "test.yaml:14:22: error: found ATT error 'write-not-permited', expected an ATT error name such as write-not-permitted or insufficient-authentication, or 0xNN; did you mean 'write-not-permitted'?",
            "test.yaml:15:11: error: found 'soon', expected a duration such as 250ms, 1s, 1.5s or 2m",
        ])
    }

    func testRespondErrorOnlyAnswersRequests() {
        let file = """
        scenario: x
        peripherals:
          a:
            on-connect: [{ respond-error: 0x80 }]
            gatt:
              - service: FFE0
                characteristics:
                  - uuid: FFE1
                    properties: [write, notify]
                    on-write: [{ delay: 100ms }, { respond-error: insufficient-authorization }, { notify: FFE1, value: written }]
                    on-subscribe: [{ notify: FFE1 }, { set-value: { characteristic: FFE1, value: written } }]
        central: [scan]
        """
        XCTAssertEqual(errors(file), [
            "test.yaml:4:20: error: found respond-error in on-connect, expected respond-error only in on-read or on-write, where there is a request to answer",
            "test.yaml:11:90: error: found 'written', expected a value such as text:hello, hex:4c000215, u8:7, u16:500, u32:1 or a list of them; 'written' stands for the bytes just written, in on-write only",
        ])
    }

    func testSeveralConnectedPeripheralsNeedToBeNamed() {
        let file = """
        scenario: x
        peripherals:
          a:
            advertise: { name: A }
            gatt: [{ service: FFE0, characteristics: [{ uuid: FFE1, properties: [read] }] }]
          b:
            advertise: { name: B }
            gatt: [{ service: FFE0, characteristics: [{ uuid: FFE1, properties: [read] }] }]
        central:
          - scan
          - connect: a
          - connect: b
          - discover: all
          - read: { characteristic: FFE1, peripheral: b }
          - read: FFE1
            peripheral: a
          - disconnect: a
          - read: FFE1
        """
        XCTAssertEqual(errors(file), [
            "test.yaml:13:5: error: found 'discover' while connected to a and b, expected the peripheral it means; add 'peripheral: a' (or another) to the step",
        ])
        let scenario = try? ScenarioText.load(file.replacingOccurrences(of: "  - discover: all", with: "  - discover: all\n    peripheral: a"))
        XCTAssertEqual(scenario?.steps.map { $0.action.peripheral }, [nil, "a", "b", "a", "b", "a", "a", "b"])
    }

    func testBadAddressAndAdvertisingTooLong() {
        XCTAssertEqual(errors("""
        scenario: x
        peripherals:
          a:
            address: 11:22:33:44:55:66/random
            advertise: { name: A-very-long-advertised-name-that-does-not-fit, services: [FFE0] }
        central: [scan]
        """), [
            "test.yaml:4:14: error: found '11:22:33:44:55:66/random', expected a random static address (its two top bits set, such as C0:…)",
            "test.yaml:5:16: error: found 54 octets of advertising data for a (flags 3, services 4, name 47), expected at most 31 octets (legacy advertising); move something to scan-response or shorten the name",
        ])
    }

    func testYAMLOutsideTheSubsetIsRefusedWithItsPosition() {
        let found = errors("scenario: &anchor x\nperipherals: {}\ncentral: []\n")
        XCTAssertEqual(found.count, 1)
        XCTAssertTrue(found.first?.hasPrefix("test.yaml:1:11: error: found ") ?? false, "\(found)")
    }

    func testUnreadableFile() {
        XCTAssertThrowsError(try Scenario.load(path: "/nonexistent/x.yaml")) { error in
            XCTAssertEqual("\(error)", "/nonexistent/x.yaml: error: found cannot read (No such file or directory), expected a readable scenario file")
        }
    }
}

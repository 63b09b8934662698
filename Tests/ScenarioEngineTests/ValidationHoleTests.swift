import BLELabTestSupport
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// Mistakes a new user makes that used to validate and then did nothing, failed late, or read
/// wrong: each is now refused before anything runs, at its line and column, with the fix.
final class ValidationHoleTests: XCTestCase {
    private func errors(_ text: String) -> [String] { ScenarioText.errors(text) }

    /// One peripheral `dev` (AAA1 read/write, AAA2 read/notify, AAA3 read/indicate), `actions` as
    /// AAA1's on-write (line 11), and the central's `steps` after scan, connect and discover (line
    /// 18 when `actions` is one line).
    private func file(actions: String = "- set-value: { characteristic: AAA1, value: u8:1 }", steps: String = "- wait: 1s") -> String {
        """
        scenario: holes
        peripherals:
          dev:
            advertise: { name: Dev, services: [AAA0] }
            gatt:
              - service: AAA0
                characteristics:
                  - uuid: AAA1
                    properties: [read, write]
                    on-write:
                      \(actions)
                  - { uuid: AAA2, properties: [read, notify], value: u8:0 }
                  - { uuid: AAA3, properties: [read, indicate], value: u8:0 }
        central:
          - scan
          - connect: dev
          - discover: all
          \(steps)
        """
    }

    func testTheBaseFileIsValid() {
        XCTAssertEqual(errors(file()), [])
    }

    // MARK: Encoding

    /// A scenario file saved as Latin-1 loaded with its `é` turned into U+FFFD, so the device was
    /// named `Caf\u{FFFD}` and the file "valid".
    func testAFileThatIsNotUTF8IsRefusedWhereItIsNot() throws {
        let dir = try temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/latin1.yaml"
        let bytes = Array("scenario: x\nperipherals:\n  dev:\n    advertise: { name: Caf".utf8) + [0xE9] + Array(" }\ncentral: [scan]\n".utf8)
        try FileText.write(bytes, to: path)
        let expected = "\(path):4:27: error: found byte 0xE9, which is not UTF-8, expected text encoded in UTF-8; scenario files are UTF-8; save the file as UTF-8 (your editor's encoding setting, or iconv -f latin1 -t utf-8 for a Latin-1 file)"
        XCTAssertThrowsError(try Scenario.load(path: path)) { error in
            XCTAssertEqual((error as? ScenarioErrors)?.errors.map(\.description), [expected])
        }
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["validate", path]), .badInput)
        XCTAssertEqual(cli.err, expected + "\nblelab: 1 error in 1 file\n")
    }

    // MARK: Notifications where there is no CCCD

    /// `notify` on a characteristic without `notify` sent nothing (no central can enable it) and
    /// its step said ok.
    func testNotifyAndIndicateNeedTheProperty() {
        XCTAssertEqual(errors(file(actions: "- notify: AAA1")), [
            "test.yaml:11:25: error: found characteristic 'AAA1' without notify (its properties: [read, write]), expected a characteristic with notify, whose CCCD a central can enable; add notify to AAA1's properties, or send to its handle regardless with notify-handle",
        ])
        XCTAssertEqual(errors(file(actions: "- indicate: AAA2")), [
            "test.yaml:11:27: error: found characteristic 'AAA2' without indicate (its properties: [read, notify]), expected a characteristic with indicate, whose CCCD a central can enable; AAA2 offers notify: write 'notify: AAA2', or add indicate to its properties",
        ])
        XCTAssertEqual(errors(file(steps: "- peripheral: { dev: [{ notify: AAA3, value: u8:1 }] }")), [
            "test.yaml:18:35: error: found characteristic 'AAA3' without notify (its properties: [read, indicate]), expected a characteristic with notify, whose CCCD a central can enable; AAA3 offers indicate: write 'indicate: AAA3', or add notify to its properties",
        ])
        XCTAssertEqual(errors(file(steps: "- peripheral: { dev: [{ notify-every: { characteristic: AAA1, interval: 1s } }] }")), [
            "test.yaml:18:59: error: found characteristic 'AAA1' without notify (its properties: [read, write]), expected a characteristic with notify, whose CCCD a central can enable; add notify to AAA1's properties, or send to its handle regardless with notify-handle",
        ])
        XCTAssertEqual(errors(file(steps: "- peripheral: { dev: [{ burst: { characteristic: AAA3, count: 3 } }] }")), [
            "test.yaml:18:52: error: found characteristic 'AAA3' without notify (its properties: [read, indicate]), expected a characteristic with notify, whose CCCD a central can enable; add notify to AAA3's properties (burst sends notifications; AAA3 offers indicate)",
        ])
        // The right property passes, and so do the raw actions of a flawed peripheral.
        XCTAssertEqual(errors(file(steps: """
        - peripheral: { dev: [{ notify: AAA2 }, { indicate: AAA3 }, { notify-handle: { handle: 0x000C, value: u8:1 } }, { indicate: 2A05, value: hex:01000500 }] }
        """)), [])
    }

    /// A subscribe to a characteristic with neither notify nor indicate failed at run time, after
    /// the whole set-up, with "has no CCCD".
    func testSubscribeNeedsNotifyOrIndicate() {
        XCTAssertEqual(errors(file(steps: "- subscribe: AAA1")), [
            "test.yaml:18:16: error: found subscribe to characteristic 'AAA1', which has neither notify nor indicate (its properties: [read, write]), expected a characteristic with notify or indicate, which gives it a CCCD to write; add notify (or indicate) to AAA1's properties in dev",
        ])
        XCTAssertEqual(errors(file(steps: "- unsubscribe: { characteristic: 2A00 }")).count, 1)
        XCTAssertEqual(errors(file(steps: "- subscribe: AAA2\n  - subscribe: AAA3\n  - subscribe: 2A05")), [])
    }

    /// A property list that did not read is one error, not a second one at every step that uses it.
    func testAMisspeltPropertyIsReportedOnce() {
        let text = file(steps: "- subscribe: AAA2").replacingOccurrences(of: "[read, notify]", with: "[read, notfy]")
        XCTAssertEqual(errors(text).count, 1)
        XCTAssertTrue(errors(text)[0].contains("did you mean 'notify'?"), "\(errors(text))")
    }

    // MARK: Services

    /// The characteristics of a service whose UUID is invalid were skipped unchecked, and every
    /// step naming them got a second, misleading error ("none declared").
    func testCharacteristicsUnderAnInvalidServiceAreStillChecked() {
        XCTAssertEqual(errors("""
        scenario: bad service
        peripherals:
          dev:
            advertise: { name: Dev }
            gatt:
              - service: FFG0
                characteristics:
                  - { uuid: FFE1, properties: [read, wrte] }
                  - { uuid: FFE2, properties: [read] }
        central:
          - scan
          - connect: dev
          - discover: all
          - read: FFE1
          - subscribe: FFE2
          - read: FFE9
        """), [
            "test.yaml:6:18: error: found 'FFG0', expected a service UUID (16-bit like 180D, 32-bit, or 128-bit like 6E400001-B5A3-F393-E0A9-E50E24DCCA9E); 'G' is not a hexadecimal digit",
            "test.yaml:8:46: error: found property 'wrte', expected one of broadcast, read, write-without-response, write, notify, indicate, authenticated-signed-writes, extended-properties; did you mean 'write'?",
            "test.yaml:15:16: error: found subscribe to characteristic 'FFE2', which has neither notify nor indicate (its properties: [read]), expected a characteristic with notify or indicate, which gives it a CCCD to write; add notify (or indicate) to FFE2's properties in dev",
        ])
    }

    /// Declaring 1800 or 1801 gave the peripheral two GAP services, and a read of 2A00 the
    /// nonsense fix "write '1800/2A00' or '1800/2A00'".
    func testTheStandardServicesCannotBeDeclaredAgain() {
        let text = """
        scenario: standard services
        peripherals:
          dev:
            advertise: { name: Dev }
            gatt:
              - service: 1800
                characteristics:
                  - { uuid: 2A00, properties: [read], value: text:Mine }
              - service: 00001801-0000-1000-8000-00805F9B34FB
        central:
          - scan
          - connect: dev
          - discover: all
          - read: 2A00
          - peripheral: { dev: [{ add-service: { service: 1801 } }] }
        """
        XCTAssertEqual(errors(text), [
            "test.yaml:6:18: error: found service '1800', the GAP service (Device Name 2A00, Appearance 2A01), which every peripheral serves already, expected a service of your own; give the Device Name with device-name on the peripheral; steps may read 2A00 and 2A01 as they are",
            "test.yaml:9:18: error: found service '00001801-0000-1000-8000-00805F9B34FB', the GATT service (Service Changed 2A05), which every peripheral serves already, expected a service of your own; steps may subscribe to 2A05 as it is, and the service-changed action indicates it",
            "test.yaml:15:51: error: found service '1801', the GATT service (Service Changed 2A05), which every peripheral serves already, expected a service of your own; steps may subscribe to 2A05 as it is, and the service-changed action indicates it",
        ])
    }

    /// The GATT profile's own attribute types as service or characteristic UUIDs: a client's
    /// discovery would take such a value for the declaration or descriptor it names.
    func testDeclarationAndDescriptorTypesAreNotServiceOrCharacteristicUUIDs() {
        XCTAssertEqual(errors("""
        scenario: attribute types
        peripherals:
          dev:
            advertise: { name: Dev }
            gatt:
              - service: 2800
              - service: FFF0
                characteristics:
                  - { uuid: 2803, properties: [read] }
                  - { uuid: 2902, properties: [read] }
                  - { uuid: 2901, properties: [read] }
        central:
          - scan
        """), [
            "test.yaml:6:18: error: found service UUID '2800', the type of a GATT declaration (2800 primary service, 2801 secondary, 2802 include, 2803 characteristic), which the server writes itself, expected a service UUID (such as 180F, or a 128-bit UUID of your own)",
            "test.yaml:9:21: error: found characteristic UUID '2803', the type of a GATT declaration (2800 primary service, 2801 secondary, 2802 include, 2803 characteristic), which the server writes itself, expected a characteristic UUID (such as 2A19, or a 128-bit UUID of your own)",
            "test.yaml:10:21: error: found characteristic UUID '2902', the type of the Client Characteristic Configuration descriptor, which a characteristic with notify or indicate gets by itself, expected a characteristic UUID (such as 2A19, or a 128-bit UUID of your own)",
            "test.yaml:11:21: error: found characteristic UUID '2901', the type of a GATT descriptor, not of a characteristic, expected a characteristic UUID (such as 2A19, or a 128-bit UUID of your own)",
        ])
    }

    // MARK: Duplicates that two spellings hide

    func testOneUUIDSpelledTwiceInAdvertisingIsRefused() {
        XCTAssertEqual(errors("""
        scenario: duplicates
        peripherals:
          dev:
            advertise: { name: Dev, services: [180F, 0000180F], service-data: { 180F: u8:1, 0000180f: u8:2 } }
        central:
          - scan
        """), [
            "test.yaml:4:46: error: found '0000180F', expected each service once in the list; 180F is already listed; a repeated UUID takes octets of the 31 for nothing",
            "test.yaml:4:85: error: found service data for 180F twice, expected one value per service UUID; '0000180f' is the UUID 180F of an earlier key",
        ])
    }

    /// Two keywords in one list item read as one with an unknown option ("unknown key 'connect',
    /// expected a 'scan' key").
    func testTwoStepsOrActionsInOneItemSaySo() {
        XCTAssertEqual(errors(file(steps: "- { wait: 1s, disconnect: dev }")), [
            "test.yaml:18:17: error: found 'wait' and 'disconnect' in one step, expected one step per list item; split them into two items, each starting with '- '",
        ])
        XCTAssertEqual(errors(file(actions: "- { set-value: { characteristic: AAA1, value: u8:1 }, notify: AAA2 }")), [
            "test.yaml:11:69: error: found 'set-value' and 'notify' in one action, expected one action per list item; split them into two items, each starting with '- '",
        ])
        // `peripheral:` beside a step is its option, not a second step.
        XCTAssertEqual(errors(file(steps: "- read: AAA1\n    peripheral: dev")), [])
    }

    // MARK: Values longer than an attribute holds

    func testValuesLongerThanAnAttributeAreRefused() {
        let long = "hex:" + String(repeating: "ab", count: 513)
        let text = file(actions: "- notify: AAA2\n                value: [\(long)]", steps: """
        - write: { characteristic: AAA1, value: \(long) }
          - peripheral: { dev: [{ set-value: { characteristic: AAA1, value: [u8:1, \(long)] } }] }
          - expect: { value: \(long) }
          - expect: { peripheral-received: { characteristic: AAA1, value: \(long) } }
          - expect: { notification: AAA2, value: \(long) }
          - expect: { notification: AAA2, in-order: [u8:1, \(long)] }
        """)
        let found = "'hex:ababababababababababababababababa…', a value of 513 octets"
        let expected = "expected a value of at most 512 octets, the longest an attribute holds (Core Vol 3 Part F 3.2.9)"
        XCTAssertEqual(errors(text), [
            "test.yaml:12:24: error: found a sequence, a value of 513 octets, \(expected)",
            "test.yaml:19:43: error: found \(found), \(expected)",
            "test.yaml:20:69: error: found a sequence, a value of 514 octets, \(expected)",
            "test.yaml:21:22: error: found \(found), \(expected)",
            "test.yaml:22:67: error: found \(found), \(expected)",
            "test.yaml:23:42: error: found \(found), \(expected)",
            "test.yaml:24:52: error: found \(found), \(expected)",
        ])
        // 512 octets is the limit itself.
        XCTAssertEqual(errors(file(steps: "- write: { characteristic: AAA1, value: hex:\(String(repeating: "ab", count: 512)) }")), [])
    }

    /// The Device Name characteristic holds 0 to 248 octets (Core Vol 3 Part C 12.1); a longer
    /// `device-name` was cut silently, possibly inside a character.
    func testADeviceNameLongerThan248OctetsIsRefused() {
        let name = String(repeating: "é", count: 125)   // 250 octets of UTF-8
        XCTAssertEqual(errors("scenario: x\nperipherals:\n  dev:\n    device-name: \(name)\ncentral: [scan]\n"), [
            "test.yaml:4:18: error: found a device name of 250 octets, expected a device name of at most 248 octets of UTF-8 (Core Vol 3 Part C 12.1)",
        ])
        XCTAssertEqual(errors("scenario: x\nperipherals:\n  dev:\n    device-name: \(String(repeating: "é", count: 124))\ncentral: [scan]\n"), [])
    }

    // MARK: Durations and numbers

    /// A duration too large for the clock was blamed on its unit ("the units are us, ms, s, m and
    /// h, such as 9999999999999s").
    func testAnOverflowingDurationSaysTheNumberIsTooLarge() {
        XCTAssertEqual(errors(file(steps: "- wait: 9999999999999s\n  - wait: 9223372036s\n  - wait: 100000000000000000000ms\n  - wait: 5000000h")), [
            "test.yaml:18:11: error: found '9999999999999s', expected a duration such as 250ms, 1s, 1.5s or 2m; 9999999999999 is too large: a duration is at most 9223372036s (about 292 years)",
            "test.yaml:20:11: error: found '100000000000000000000ms', expected a duration such as 250ms, 1s, 1.5s or 2m; 100000000000000000000 is too large: a duration is at most 9223372036854ms (about 292 years)",
            "test.yaml:21:11: error: found '5000000h', expected a duration such as 250ms, 1s, 1.5s or 2m; 5000000 is too large: a duration is at most 2562047h (about 292 years)",
        ])
        XCTAssertEqual(ScalarSyntax.duration("9223372036s")?.nanoseconds, 9_223_372_036_000_000_000)
        // A wrong unit still gets the unit's fix.
        XCTAssertEqual(errors(file(steps: "- wait: 5secs")), [
            "test.yaml:18:11: error: found '5secs', expected a duration such as 250ms, 1s, 1.5s or 2m; write 's' for secs: 5s",
        ])
    }

    /// `u32:99999999999999999999` said "u32: takes a number", as if it were not one.
    func testAnOverflowingIntegerValueSaysItsRange() {
        XCTAssertEqual(errors(file(steps: "- write: { characteristic: AAA1, value: u32:99999999999999999999 }")), [
            "test.yaml:18:43: error: found 'u32:99999999999999999999', expected a value such as text:hello, hex:4c000215, u8:7, u16:500, u32:1 or a list of them; u32: takes 0 to 4294967295",
        ])
        XCTAssertEqual(errors(file(steps: "- write: { characteristic: AAA1, value: u8:0x10000000000000000 }")), [
            "test.yaml:18:43: error: found 'u8:0x10000000000000000', expected a value such as text:hello, hex:4c000215, u8:7, u16:500, u32:1 or a list of them; u8: takes 0 to 255",
        ])
    }

    /// A scan of 0s hears nothing, and a connect within 0s can never connect: both used to run
    /// and fail (or pass a `not-discovered`) for a typo.
    func testZeroLengthScanAndConnectAreRefused() {
        XCTAssertEqual(errors("""
        scenario: zero
        peripherals:
          dev:
            advertise: { name: Dev }
        central:
          - scan: { for: 0s }
          - connect: { peripheral: dev, within: 0ms }
        """), [
            "test.yaml:6:18: error: found '0s', expected a scan longer than 0s; advertisers send every 20ms to 10.24s; scan at least one interval, such as 1s",
            "test.yaml:7:41: error: found '0ms', expected a time longer than 0s to connect within; a connection needs the peripheral's next advertising event; the default is 1s",
        ])
    }
}

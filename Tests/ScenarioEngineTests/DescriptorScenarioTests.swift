import BLELab
import BLELabTestSupport
import BLERuntime
@testable import ScenarioEngine
import XCTest

/// Descriptors in scenario files (docs/scenarios.md "Descriptors"), the central's descriptor
/// reads and writes, and `subscribe`'s `type:` — on the sim, judged on what crossed the link.
final class DescriptorScenarioTests: XCTestCase {
    /// 2A19 at value handle 0x000C: CCCD 0x000D, 2900 0x000E, 2903 0x000F, 2901 0x0010,
    /// 2904 0x0011, a custom 128-bit descriptor 0x0012.
    static func sensor(_ central: String, extended: String = "[writable-auxiliaries]") -> String {
        """
        scenario: descriptors
        peripherals:
          sensor:
            advertise: { name: Sensor, services: [180F] }
            gatt:
              - service: 180F
                characteristics:
                  - uuid: 2A19
                    properties: [read, notify, indicate, broadcast, extended-properties]
                    value: u8:87
                    extended-properties: \(extended)
                    descriptors:
                      - { uuid: 2901, value: text:Battery level }
                      - { uuid: 2904, value: hex:04 00 ad 27 01 00 00 }
                      - { uuid: 6E400009-B5A3-F393-E0A9-E50E24DCCA9E, value: hex:01, permissions: [read, write] }
        central:
          - scan
          - connect: sensor
          - discover: all
        \(central)
        """
    }

    private func run(_ text: String) throws -> ScenarioResult {
        try ScenarioText.run(text, options: RunOptions(recordsTimeline: true))
    }

    /// ATT PDUs the central sent, as spaced hex.
    private func centralSent(_ r: ScenarioResult) -> [String] {
        r.timeline.filter { $0.kind == .att && $0.device == "central" && $0.direction == "sent" }.compactMap { $0.bytes?.spacedHex }
    }

    private func centralReceived(_ r: ScenarioResult) -> [String] {
        r.timeline.filter { $0.kind == .att && $0.device == "central" && $0.direction == "received" }.compactMap { $0.bytes?.spacedHex }
    }

    func testDiscoverFindsEveryDescriptorAndReadsThem() throws {
        let r = try run(Self.sensor("""
          - read: { characteristic: 2A19, descriptor: 2900 }
          - expect: { value: u16:2 }
          - read: { characteristic: 2A19, descriptor: 2903 }
          - expect: { value: u16:0 }
          - read: { characteristic: 2A19, descriptor: 2901 }
          - expect: { value: text:Battery level }
          - read: { characteristic: 2A19, descriptor: 2904 }
          - expect: { value: hex:04 00 ad 27 01 00 00 }
          - read: { characteristic: 2A19, descriptor: 6E400009-B5A3-F393-E0A9-E50E24DCCA9E }
          - expect: { value: hex:01 }
        """))
        XCTAssertEqual(r.verdict, "passed")
        // Find Information over 2A19's descriptors (Core Vol 3 Part G 4.7.1), answered in two
        // responses: the 16-bit UUIDs, then the 128-bit one.
        XCTAssertTrue(centralReceived(r).contains("05 01 0d 00 02 29 0e 00 00 29 0f 00 03 29 10 00 01 29 11 00 04 29"), "\(centralReceived(r))")
        XCTAssertTrue(centralReceived(r).contains("05 02 12 00 9e ca dc 24 0e e5 a9 e0 93 f3 a3 b5 09 00 40 6e"))
        XCTAssertEqual(centralSent(r).suffix(5), ["0a 0e 00", "0a 0f 00", "0a 10 00", "0a 11 00", "0a 12 00"])
    }

    func testWritesToDescriptors() throws {
        let r = try run(Self.sensor("""
          - write: { characteristic: 2A19, descriptor: 2901, value: text:Main battery }
          - read: { characteristic: 2A19, descriptor: 2901 }
          - expect: { value: text:Main battery }
          - write: { characteristic: 2A19, descriptor: 6E400009-B5A3-F393-E0A9-E50E24DCCA9E, value: hex:07 }
          - read: { characteristic: 2A19, descriptor: 6E400009-B5A3-F393-E0A9-E50E24DCCA9E }
          - expect: { value: hex:07 }
          - write: { characteristic: 2A19, descriptor: 2903, value: u16:1 }
          - read: { characteristic: 2A19, descriptor: 2903 }
          - expect: { value: u16:1 }
          - write: { characteristic: 2A19, descriptor: 2904, value: hex:00 }
          - expect: { error: write-not-permitted }
          - write: { characteristic: 2A19, descriptor: 2900, value: u16:3 }
          - expect: { error: write-not-permitted }
        """))
        XCTAssertEqual(r.verdict, "passed")
        XCTAssertTrue(centralSent(r).contains("12 10 00 4d 61 69 6e 20 62 61 74 74 65 72 79"))
        XCTAssertTrue(centralReceived(r).contains("01 12 11 00 03"))
    }

    /// The user description is read-only unless the extended properties say writable-auxiliaries.
    func testUserDescriptionIsReadOnlyWithoutWritableAuxiliaries() throws {
        let r = try run(Self.sensor("""
          - write: { characteristic: 2A19, descriptor: 2901, value: text:Main battery }
          - expect: { error: write-not-permitted }
          - read: { characteristic: 2A19, descriptor: 2900 }
          - expect: { value: u16:1 }
        """, extended: "[reliable-write]"))
        XCTAssertEqual(r.verdict, "passed")
    }

    /// Writing the CCCD directly: 0x0003 enables both, so a notification and an indication arrive
    /// (the indication confirmed); 0x0000 stops them.
    func testWritingTheCCCDDirectly() throws {
        let r = try run(Self.sensor("""
          - write: { characteristic: 2A19, descriptor: 2902, value: u16:3 }
          - peripheral: { sensor: [{ notify: 2A19, value: u8:86 }, { indicate: 2A19, value: u8:85 }] }
          - expect: { notification: 2A19, in-order: [u8:86, u8:85] }
          - write: { characteristic: 2A19, descriptor: 2902, value: u16:0 }
          - peripheral: { sensor: [{ notify: 2A19, value: u8:84 }, { indicate: 2A19, value: u8:83 }] }
          - expect: { no-notification: { characteristic: 2A19, for: 500ms } }
        """))
        XCTAssertEqual(r.verdict, "passed")
        XCTAssertEqual(centralSent(r).filter { $0.hasPrefix("12 0d 00") }, ["12 0d 00 03 00", "12 0d 00 00 00"])
        XCTAssertTrue(centralReceived(r).contains("1b 0c 00 56"))
        XCTAssertTrue(centralReceived(r).contains("1d 0c 00 55"))
        XCTAssertTrue(centralSent(r).contains("1e"))
    }

    /// `subscribe` picks notifications when both are offered; `type: indications` picks those.
    func testSubscribeTypePicksIndicationsWhenBothAreOffered() throws {
        let r = try run(Self.sensor("""
          - subscribe: { characteristic: 2A19, type: indications }
          - peripheral: { sensor: [{ notify: 2A19, value: u8:86 }, { indicate: 2A19, value: u8:85 }] }
          - expect: { notification: 2A19, count: 1, value: u8:85 }
          - subscribe: { characteristic: 2A19, type: both }
          - unsubscribe: 2A19
          - subscribe: 2A19
        """))
        XCTAssertEqual(r.verdict, "passed")
        XCTAssertEqual(centralSent(r).filter { $0.hasPrefix("12 0d 00") },
                       ["12 0d 00 02 00", "12 0d 00 03 00", "12 0d 00 00 00", "12 0d 00 01 00"])
        XCTAssertFalse(centralReceived(r).contains("1b 0c 00 56"), "no notification: only indications were enabled")
    }

    /// A descriptor discovery did not find fails the step, naming what it found.
    func testReadingADescriptorBeforeDiscoveryFails() throws {
        let text = Self.sensor("").replacingOccurrences(of: "  - discover: all\n", with: "") + """
          - read: { characteristic: 2A19, descriptor: 2901 }
        """
        let r = try run(text)
        XCTAssertTrue(r.verdict.contains("nothing discovered yet"), r.verdict)
    }

    /// Exchange MTU is done once per connection (Core Vol 3 Part F 3.4.2.1): a second `mtu` step
    /// fails, and no second request crosses the link.
    func testASecondMTUStepFails() throws {
        let r = try run(Self.sensor("""
          - mtu: 247
          - mtu: 185
        """))
        XCTAssertTrue(r.verdict.contains("step 5"), r.verdict)
        XCTAssertTrue(r.verdict.contains("Exchange MTU was already done on this connection (ATT_MTU 247)"), r.verdict)
        XCTAssertEqual(centralSent(r).filter { $0.hasPrefix("02 ") }, ["02 f7 00"])
    }

    // MARK: Validation

    private func errors(_ characteristic: String, central: String = "  - scan") -> [String] {
        ScenarioText.errors("""
        scenario: x
        peripherals:
          sensor:
            gatt:
              - service: 180F
                characteristics:
        \(characteristic.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        central:
        \(central)
        """)
    }

    func testDescriptorDeclarationsAreChecked() {
        XCTAssertEqual(errors("""
              - uuid: 2A19
                properties: [read]
                extended-properties: [reliable-write]
                descriptors:
                  - { uuid: 2902 }
                  - { uuid: 2901, value: hex:ff fe }
                  - { uuid: 2904, value: hex:04 00 }
                  - { uuid: 2901, value: text:Level, permissions: [read, write] }
                  - { uuid: FFF9, value: hex:01, permissions: [read, wrte] }
                  - { uuid: FFF9 }
        """), [
            "test.yaml:9:13: error: found 'extended-properties:' on a characteristic without the extended-properties property, expected extended-properties in its properties: that bit announces the 0x2900 descriptor (Core Vol 3 Part G 3.3.1.1); add extended-properties to properties",
            "test.yaml:11:25: error: found '2902', expected a descriptor BLELab does not lay out itself; BLELab adds the Client Characteristic Configuration descriptor (2902) to every characteristic with notify or indicate",
            "test.yaml:12:38: error: found 'hex:ff fe', expected UTF-8 text for a Characteristic User Description (Core Vol 3 Part G 3.3.3.2), such as text:Battery level",
            "test.yaml:13:38: error: found 'hex:04 00', expected the 7 octets of a Characteristic Presentation Format (Core Vol 3 Part G 3.3.3.5): format, exponent, unit (2), name space, description (2), such as hex:04 00 ad 27 01 00 00; found 2",
            "test.yaml:14:25: error: found '2901', expected each descriptor once per characteristic (Core Vol 3 Part G 3.3.3)",
            "test.yaml:15:66: error: found 'wrte', expected a permission (read or write); did you mean 'write'?",
            "test.yaml:16:25: error: found 'FFF9', expected each descriptor once per characteristic (Core Vol 3 Part G 3.3.3)",
        ])
        XCTAssertEqual(errors("""
              - uuid: 2A19
                properties: [read, extended-properties]
                extended-properties: [reliable-writes]
                descriptors: [{ uuid: 2901, value: text:Level, permissions: [read, write] }, { uuid: 2900 }, { uuid: 2905 }]
        """).map { String($0.prefix(90)) }, [
            "test.yaml:9:35: error: found 'reliable-writes', expected an extended property (reliable-wr",
            "test.yaml:10:73: error: found 'write' in the permissions of 2901, expected permissions: [r",
            "test.yaml:10:98: error: found '2900', expected a descriptor BLELab does not lay out itself",
            "test.yaml:10:114: error: found '2905', expected a descriptor BLELab does not lay out itsel",
        ])
    }

    func testDescriptorStepsAreChecked() {
        let characteristic = """
              - { uuid: 2A19, properties: [read, notify], descriptors: [{ uuid: 2901, value: text:Level }] }
        """
        XCTAssertEqual(errors(characteristic, central: """
          - read: { characteristic: 2A19, descriptor: 2903 }
          - write: { characteristic: 2A19, descriptor: 2902, value: u16:1, type: command }
          - subscribe: { characteristic: 2A19, type: indications }
          - subscribe: { characteristic: 2A19, type: notification }
        """), [
            "test.yaml:9:47: error: found '2903', expected a descriptor of 2A19 on sensor (it has 2902, 2901); a characteristic has a 2903 when it offers broadcast",
            "test.yaml:10:74: error: found 'command', expected type: request (or no type) when writing a descriptor; descriptors are written with Write Requests (Core Vol 3 Part G 4.12.3)",
            "test.yaml:11:46: error: found 'indications', expected a type 2A19 offers (its properties are [read, notify]); 'indications' needs indicate in the characteristic's properties",
            "test.yaml:12:46: error: found 'notification', expected a subscription type (notifications, indications, both); did you mean 'notifications'?",
        ])
    }
}

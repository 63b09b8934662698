import BLELab
import BLELabTestSupport
import BLERuntime
import BLEWire
@testable import ScenarioEngine
import ScenarioFormat
import XCTest

/// The format's original example (kept verbatim in Fixtures/format-shape.yaml) validates and
/// passes, and a tour of every core construct (Fixtures/format-tour.yaml) validates and passes too.
final class FormatExampleTests: XCTestCase {
    func testTheFormatsExampleValidatesAsDocumented() throws {
        let s = try Scenario.load(path: ScenarioText.fixtures + "/format-shape.yaml")
        XCTAssertEqual(s.name, "HM-10 serial bridge echoes what the app writes")
        XCTAssertEqual(s.tags, ["seed", "serial"])
        XCTAssertEqual(s.timeout, .seconds(10))
        XCTAssertEqual(s.seed, 42)
        XCTAssertEqual(s.requires, [.sim])
        XCTAssertEqual(s.peripherals.map(\.id), ["hm10", "curtain"])
        let hm10 = try XCTUnwrap(s.peripheral("hm10"))
        XCTAssertEqual(hm10.address?.description, "C0:11:22:33:44:55/random")
        XCTAssertEqual(hm10.rssi, -48)
        XCTAssertEqual(hm10.advertising?.name, "HMSoft")
        XCTAssertEqual(hm10.advertising?.services, [0xFFE0])
        XCTAssertEqual(hm10.advertising?.interval, .milliseconds(100))
        XCTAssertEqual(hm10.advertising?.connectable, true)
        XCTAssertEqual(hm10.advertising?.manufacturerData, .init(companyID: 0x004C, data: [0x02, 0x15]))
        XCTAssertEqual(hm10.advertising?.scanResponse?.name, "HMSoft-long-name")
        let ffe1 = try XCTUnwrap(hm10.services.first?.characteristics.first)
        XCTAssertEqual(ffe1.properties, [.read, .writeWithoutResponse, .notify])
        XCTAssertEqual(ffe1.value, Array("ready".utf8))
        XCTAssertEqual(ffe1.onWrite, [.notify(CharacteristicRef(0xFFE1), .written)])
        let curtain = try XCTUnwrap(s.peripheral("curtain"))
        XCTAssertEqual(curtain.advertising?.connectable, true, "connectable defaults to true")
        XCTAssertEqual(curtain.services.first?.characteristics.map(\.value), [[], [0x00]])
        XCTAssertEqual(s.steps.map(\.text), [
            "scan: { services: [FFE0], for: 1s }", "expect: { discovered: hm10 }", "expect: { not-discovered: curtain }",
            "connect: hm10", "discover: all", "subscribe: FFE1", "write: { characteristic: FFE1, value: text:hello }",
            "expect: { write-sent-as: command }", "expect: { notification: FFE1, value: text:hello, within: 500ms }", "disconnect",
        ])
        XCTAssertEqual(s.steps.map(\.location.line), [36, 37, 38, 39, 40, 41, 42, 43, 44, 45])
        guard case let .write(write) = s.steps[6].action else { return XCTFail("step 7 is a write") }
        XCTAssertEqual(write.type, .preferRequest, "type defaults to prefer-request")
        guard case let .connect(_, within) = s.steps[3].action else { return XCTFail("step 4 is a connect") }
        XCTAssertEqual(within, .seconds(1), "within defaults to 1s")
    }

    func testTheFormatsExampleRunsAndPasses() throws {
        let s = try Scenario.load(path: ScenarioText.fixtures + "/format-shape.yaml")
        let result = ScenarioRunner().run(s)
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.seed, 42)
        XCTAssertEqual(result.steps.map(\.outcome), Array(repeating: .passed, count: 10))
        XCTAssertLessThan(result.virtualTime, .seconds(10))
    }

    func testATourOfEveryConstructValidatesAndPasses() throws {
        let s = try Scenario.load(path: ScenarioText.fixtures + "/format-tour.yaml")
        XCTAssertEqual(s.peripherals.map(\.id), ["hm10", "battery", "hr", "nus"])
        let result = ScenarioRunner().run(s)
        XCTAssertEqual(result.verdict, "passed")
        XCTAssertEqual(result.steps.count, s.steps.count)
    }

    func testValuesDurationsAndUUIDsAsTheFormatWritesThem() {
        XCTAssertEqual(try? ScalarSyntax.bytes("text:hello").get(), Array("hello".utf8))
        XCTAssertEqual(try? ScalarSyntax.bytes("hex:4c000215").get(), [0x4C, 0x00, 0x02, 0x15])
        XCTAssertEqual(try? ScalarSyntax.bytes("hex:4c 00 02 15").get(), [0x4C, 0x00, 0x02, 0x15])
        XCTAssertEqual(try? ScalarSyntax.bytes("u8:72").get(), [72])
        XCTAssertEqual(try? ScalarSyntax.bytes("u16:0x1234").get(), [0x34, 0x12])
        XCTAssertEqual(try? ScalarSyntax.bytes("u32:1").get(), [1, 0, 0, 0])
        XCTAssertEqual(try? ScalarSyntax.bytes("text:").get(), [])
        XCTAssertEqual(ScalarSyntax.duration("250ms"), .milliseconds(250))
        XCTAssertEqual(ScalarSyntax.duration("1s"), .seconds(1))
        XCTAssertEqual(ScalarSyntax.duration("1.5s"), .milliseconds(1500))
        XCTAssertEqual(ScalarSyntax.duration("2m"), .seconds(120))
        for bad in ["1", "s", "1.s", ".5s", "-1s", "1 s", "1sec", "1e3ms"] { XCTAssertNil(ScalarSyntax.duration(bad), bad) }
        XCTAssertEqual(ScalarSyntax.boolean("true"), true)
        XCTAssertNil(ScalarSyntax.boolean("no"), "YAML 1.1 booleans are not booleans here")
        XCTAssertEqual(ScalarSyntax.characteristicRef("180F/2A19"), CharacteristicRef(0x2A19, in: 0x180F))
        XCTAssertEqual(ScalarSyntax.characteristicRef("6e400003-b5a3-f393-e0a9-e50e24dcca9e"),
                       ScalarSyntax.characteristicRef("6E400003-B5A3-F393-E0A9-E50E24DCCA9E"))
        XCTAssertEqual(ScalarSyntax.characteristicRef("0000FFE1-0000-1000-8000-00805F9B34FB"), ScalarSyntax.characteristicRef("FFE1"),
                       "compared after expansion with the Bluetooth base UUID")
    }

    func testValueListsAndGeneratorsInActions() throws {
        let s = try ScenarioText.load("""
        scenario: generators
        peripherals:
          p:
            gatt:
              - service: FFE0
                characteristics:
                  - uuid: FFE1
                    properties: [read, write, notify]
                    value: [u8:0, u8:72]
                    on-write:
                      - notify: FFE1
                        value: [hex:00, { random-u8: [59, 61] }]
                      - set-value: { characteristic: FFE1, value: { counter-u8: 0 } }
                      - notify: FFE1
                        value: { sequence: [text:a, text:b] }
                      - notify: FFE1
                        value: [written, text:!]
        central: [scan]
        """)
        let c = try XCTUnwrap(s.peripherals.first?.services.first?.characteristics.first)
        XCTAssertEqual(c.value, [0, 72])
        XCTAssertEqual(c.onWrite, [
            .notify(CharacteristicRef(0xFFE1), .concatenation([.bytes([0]), .randomU8(59...61)])),
            .setValue(CharacteristicRef(0xFFE1), .counterU8(start: 0)),
            .notify(CharacteristicRef(0xFFE1), .sequence([[0x61], [0x62]])),
            .notify(CharacteristicRef(0xFFE1), .concatenation([.written, .bytes([0x21])])),
        ])
    }

    func testValueTextInReports() {
        XCTAssertEqual(ValueText.describe(Array("hello".utf8)), "text:hello")
        XCTAssertEqual(ValueText.describe(Array("IOS_TEST\n".utf8)), "\"text:IOS_TEST\\n\"")
        XCTAssertEqual(ValueText.describe([100]), "u8:100 (text:d)")
        XCTAssertEqual(ValueText.describe([7]), "u8:7")
        XCTAssertEqual(ValueText.describe([0x00, 0x3C]), "hex:003c")
        XCTAssertEqual(ValueText.describe([]), "(empty)")
    }
}

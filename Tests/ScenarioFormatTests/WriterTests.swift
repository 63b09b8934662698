import ATT
import BLERuntime
import BLEWire
import Controller
import GATT
import HCI
import ScenarioFormat
import XCTest

/// What `ScenarioWriter` writes: the canonical forms, the comments, the scalars.
final class WriterTests: XCTestCase {
    /// Reads `text`, writes it, and reads that back: the same scenario; returns what was written.
    private func rewrite(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let scenario = try Scenario.parse(text, file: "given.yaml")
        let written = ScenarioWriter.write(scenario)
        let back = try Scenario.parse(written, file: "written.yaml")
        XCTAssertEqual(back, scenario, written, file: file, line: line)
        XCTAssertEqual(ScenarioWriter.write(back), written, file: file, line: line)
        return written
    }

    /// The constructs no file in the repository happens to use, and values at the edges of their
    /// forms: each comes back as it was read.
    func testConstructsTheRepositoryDoesNotUseComeBack() throws {
        let written = try rewrite("""
            scenario: "Edges: #1, quoted"
            tags: [a, b-c]
            requires: []
            peripherals:
              left:
                address: C0:00:00:00:00:01/random
                advertise: { name: "Left #1", interval: 20ms, connectable: false, flags: 0x04, tx-power: -8 }
                link: { loss: 12.5%, latency: 1.5us, jitter: 7us, drop: [{ att: 1, from: central }, { att: 3, from: peripheral }] }
                flaws:
                  - { request: any, count: 2, respond-error: 0xc0 }
                  - { request: [read, read-blob], skip: 1, delay: 48.75ms }
                  - { request: write, malformed: bad-error-length }
                gatt:
                  - service: FFF0
                    characteristics:
                      - uuid: FFF1
                        properties: [read, notify, indicate, extended-properties]
                        extended-properties: [reliable-write, writable-auxiliaries]
                        descriptors:
                          - { uuid: 2901, value: text:Level, permissions: [] }
                          - { uuid: 2999, value: hex:01, permissions: [read, write] }
                        on-unsubscribe:
                          - { burst: { characteristic: FFF1, count: 3 } }
              right:
                device-name: "a: b"
                gatt:
                  - service: FFF0
                    characteristics: []
            central:
              - scan: { names: ["Left #1"], for: 1.5s, duplicates: true, interval: 11.25ms, window: 10ms, min-rssi: -80 }
              - connect: { peripheral: left, within: 3s, scan-interval: 30ms, scan-window: 30ms }
              - discover: all
                peripheral: left
              - subscribe: { characteristic: FFF1, type: both, peripheral: left }
              - unsubscribe: { characteristic: FFF1, acquire: true, peripheral: left }
              - subscribe: { characteristic: FFF1, type: notifications, peripheral: left }
              - out-of-range: { peripheral: left, rate: 2.5dB/s }
              - expect: { rssi: { peripheral: left, at-most: -20, from: scan } }
              - expect: { connection-parameters: { latency: 0, within: 2s, peripheral: left } }
              - expect: { malformed-response: { peripheral: left } }
              - expect: { att-timeout: { within: 31s, peripheral: left } }
              - disconnect: { peripheral: left, within: 3s }
            """)
        for text in ["scenario: \"Edges: #1, quoted\"", "name: \"Left #1\"", "device-name: \"a: b\"", "request: any", "request: [read, read-blob]",
                     "permissions: []", "loss: 12.5%", "latency: 1.5us", "rate: 2.5dB/s", "type: both", "type: notifications", "requires: []",
                     "- discover: all\n    peripheral: left", "interval: 11.25ms", "- expect: { malformed-response: { opcode: any, peripheral: left } }",
                     "- expect: { att-timeout: { request: any, within: 31s, peripheral: left } }", "characteristics: []"] {
            XCTAssertTrue(written.contains(text), "no \(text) in\n\(written)")
        }
    }

    /// With one peripheral no step names it, and a keyword whose only field is its main one is
    /// written `keyword: value`; with two, every step says which.
    func testStepsNameTheirPeripheralOnlyAmongSeveral() throws {
        let one = try rewrite("""
            scenario: One
            peripherals:
              hm10:
                advertise: { name: HMSoft, services: [FFE0] }
                gatt:
                  - service: FFE0
                    characteristics:
                      - { uuid: FFE1, properties: [read, write-without-response, notify] }
            central:
              - scan: { services: [FFE0], for: 1s }
              - connect: { peripheral: hm10, within: 1s }
              - discover: all
              - read: { characteristic: FFE1, peripheral: hm10 }
              - expect: { disconnected: { within: 1s } }
              - disconnect
            """)
        XCTAssertEqual(one, """
            scenario: One

            peripherals:
              hm10:
                advertise: { name: HMSoft, services: [FFE0], interval: 100ms }
                gatt:
                  - service: FFE0
                    characteristics:
                      - { uuid: FFE1, properties: [read, write-without-response, notify] }

            central:
              - scan: { services: [FFE0], for: 1s }
              - connect: hm10
              - discover: all
              - read: FFE1
              - expect: { disconnected: hm10 }
              - disconnect

            """)
        let two = try rewrite("""
            scenario: Two
            peripherals:
              a: { advertise: { name: A } }
              b: { advertise: { name: B } }
            central:
              - scan: { for: 1s }
              - connect: a
              - mtu: 185
              - disconnect
            """)
        XCTAssertTrue(two.contains("  - mtu: { size: 185, peripheral: a }\n  - disconnect: a\n"), two)
    }

    /// Comments go where `ScenarioComments` says, and reading the file back drops them.
    func testCommentsStandWhereTheyAreAsked() throws {
        var scenario = try Scenario.parse("""
            scenario: Commented
            peripherals:
              hm10:
                mtu: 23
                advertise: { name: HMSoft }
                flaws:
                  - { request: read, no-response: true }
                gatt:
                  - service: FFE0
                    characteristics:
                      - { uuid: FFE1, properties: [read] }
                      - uuid: FFE2
                        properties: [write]
                        on-write: [{ respond-error: write-not-permitted }]
            central:
              - scan: { for: 1s }
              - connect: hm10
            """, file: "c.yaml")
        var comments = ScenarioComments()
        comments.add(["Where it came from", "", "Not reproduced:", "  - nothing"], above: .file)
        comments.add(inline: "first seen at 0.1s", at: .peripheral("hm10"))
        comments.add("its advertising data did not parse", above: .advertise("hm10"))
        comments.add(inline: "its Exchange MTU Response", at: .mtu("hm10"))
        comments.add("record 9: never answered", above: .flaw("hm10", 0))
        comments.add(inline: "handles 0x000a-0x000e", at: .service("hm10", 0))
        comments.add(inline: "value handle 0x000c", at: .characteristic("hm10", service: 0, 0))
        comments.add("a second 2901; not reproduced", above: .descriptors("hm10", service: 0, characteristic: 1))
        comments.add("every write got write-not-permitted", above: .triggers("hm10", service: 0, characteristic: 1))
        comments.add("record 1: scanning", above: .step(1))
        comments.add(inline: "the only one", at: .step(2))
        comments.add("the peripheral acted before any step", above: .end)
        let written = ScenarioWriter.write(scenario, comments: comments)
        XCTAssertEqual(written, """
            # Where it came from
            #
            # Not reproduced:
            #   - nothing
            scenario: Commented

            peripherals:
              hm10:  # first seen at 0.1s
                # its advertising data did not parse
                advertise: { name: HMSoft, interval: 100ms }
                mtu: 23  # its Exchange MTU Response
                flaws:
                  # record 9: never answered
                  - { request: read, no-response: true }
                gatt:
                  - service: FFE0  # handles 0x000a-0x000e
                    characteristics:
                      - { uuid: FFE1, properties: [read] }  # value handle 0x000c
                      - uuid: FFE2
                        properties: [write]
                        # a second 2901; not reproduced
                        # every write got write-not-permitted
                        on-write:
                          - { respond-error: write-not-permitted }

            central:
              # record 1: scanning
              - scan: { for: 1s }
              - connect: hm10  # the only one
              # the peripheral acted before any step

            """)
        XCTAssertEqual(try Scenario.parse(written, file: "w.yaml"), scenario)
        // A comment inside a short characteristic puts it in block style.
        scenario.peripherals[0].services[0].characteristics[0].value = [0x01]
        comments.add("first read at 1s", above: .triggers("hm10", service: 0, characteristic: 0))
        let block = ScenarioWriter.write(scenario, comments: comments)
        XCTAssertTrue(block.contains("""
                      - uuid: FFE1  # value handle 0x000c
                        properties: [read]
                        value: hex:01
                        # first read at 1s

            """), block)
        XCTAssertEqual(try Scenario.parse(block, file: "w.yaml"), scenario)
    }

    /// Durations in their largest exact unit, read back to the same nanoseconds.
    func testDurationsAreExact() {
        let cases: [(TimeSpan, String)] = [(.zero, "0s"), (.seconds(2), "2s"), (.milliseconds(250), "250ms"), (.milliseconds(7995), "7995ms"),
                                           (.microseconds(48_750), "48.75ms"), (.microseconds(10_240_000), "10240ms"), (.microseconds(7), "7us"),
                                           (.nanoseconds(1_500), "1.5us"), (.nanoseconds(1), "0.001us"), (.seconds(3600), "3600s")]
        for (span, text) in cases {
            XCTAssertEqual(ScalarText.duration(span), text)
            XCTAssertEqual(ScalarSyntax.duration(text), span, text)
        }
    }

    /// Names plain when the YAML subset reads them back unchanged, quoted otherwise.
    func testNamesAreQuotedOnlyWhenTheyMustBe() throws {
        let cases: [(String, String)] = [("HMSoft", "HMSoft"), ("Smart_Curtain", "Smart_Curtain"), ("Imported from x.btsnoop", "Imported from x.btsnoop"),
                                         ("a: b", "\"a: b\""), ("#1", "\"#1\""), ("-x", "\"-x\""), ("two  spaces", "\"two  spaces\""),
                                         ("안녕", "\"안녕\""), ("tab\there", "\"tab\\there\""), ("[x]", "\"[x]\""), ("", "\"\""), ("x ", "\"x \"")]
        for (name, text) in cases {
            XCTAssertEqual(ScalarText.text(name), text)
            // As a scenario's name and an advertised name, which flow and block context both hold.
            let written = "scenario: \(text)\nperipherals:\n  p: { advertise: { name: \(text) } }\ncentral:\n  - scan: { names: [\(text)] }\n"
            guard !name.isEmpty, !name.contains("\n") else { continue }
            let scenario = try Scenario.parse(written, file: "n.yaml")
            XCTAssertEqual(scenario.name, name)
            XCTAssertEqual(scenario.peripherals[0].advertising?.name, name)
        }
    }

    /// Values: readable text of two characters or more as `"text:…"`, anything else as hex.
    func testValuesReadBackAsTheSameOctets() throws {
        for bytes: [UInt8] in [[], [0x41], [0x41, 0x42], Array("IOS_TEST\n".utf8), Array("\"quoted\\\"".utf8), [0x00, 0xFF], Array("안녕 hi".utf8), [0x01, 0x02]] {
            let text = ScalarText.value(bytes)
            let scenario = try Scenario.parse("scenario: v\nperipherals:\n  p: {}\ncentral:\n  - expect: { value: \(text) }\n", file: "v.yaml")
            XCTAssertEqual(scenario.steps[0].action, .expect(.value(bytes)), text)
        }
        XCTAssertEqual(ScalarText.value(Array("hello".utf8)), "\"text:hello\"")
        XCTAssertEqual(ScalarText.value([0x00, 0x47]), "hex:00 47")
    }

    /// A loss rate comes back as the same probability (a percentage over 100, as the reader
    /// makes it), and a rate of dB/s as the same number.
    func testRatesReadBackExactly() throws {
        for percent in ["10", "12.5", "33.333333333333336", "0.07", "0.00001", "99.9", "100", "0"] {
            let rate = Double(percent)! / 100
            let text = ScenarioWriter.write(Scenario(name: "l", file: "l.yaml", peripherals: [PeripheralSpec(id: "p")],
                                                     steps: [CentralStep(index: 1, action: .fault(.link(peripheral: "p", LinkFaults(lossRate: rate))))]))
            let back = try Scenario.parse(text, file: "l.yaml")
            XCTAssertEqual(back.steps.first?.action, .fault(.link(peripheral: "p", LinkFaults(lossRate: rate))), text)
        }
        for rate in [2.5, 0.001, 1000, 1.0 / 3.0] {
            let text = ScenarioWriter.write(Scenario(name: "r", file: "r.yaml", peripherals: [PeripheralSpec(id: "p")],
                                                     steps: [CentralStep(index: 1, action: .fault(.outOfRange(peripheral: "p", rate: rate)))]))
            XCTAssertEqual(try Scenario.parse(text, file: "r.yaml").steps.first?.action, .fault(.outOfRange(peripheral: "p", rate: rate)), text)
        }
    }
}

/// `expect-failure:` is written after `requires:` and read back as it was.
final class ExpectFailureWriterTests: XCTestCase {
    func testExpectFailureComesBack() throws {
        let text = """
            scenario: Must fail
            requires: [vhci]
            expect-failure: "no connection within 2s: #1"
            peripherals:
              p:
                advertise: { name: P }
            central:
              - connect: { peripheral: p, within: 2s }

            """
        let scenario = try Scenario.parse(text, file: "given.yaml")
        XCTAssertEqual(scenario.expectFailure, "no connection within 2s: #1")
        let written = ScenarioWriter.write(scenario)
        XCTAssertTrue(written.contains("requires: [vhci]\nexpect-failure: \"no connection within 2s: #1\"\n"), written)
        let back = try Scenario.parse(written, file: "written.yaml")
        XCTAssertEqual(back, scenario)
        XCTAssertEqual(back.expectFailure, scenario.expectFailure)
        var other = scenario
        other.expectFailure = nil
        XCTAssertNotEqual(other, scenario, "expect-failure changes the verdict: part of equality")
        XCTAssertFalse(ScenarioWriter.write(other).contains("expect-failure"))
    }
}

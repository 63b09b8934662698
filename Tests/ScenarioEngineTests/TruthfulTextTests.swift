import ATT
import BLELabTestSupport
@testable import ScenarioEngine
import XCTest

/// Failure texts that offered two explanations, or the wrong one, now say which one applies.
final class TruthfulTextTests: XCTestCase {
    private func failure(_ text: String) throws -> (step: Int, seen: String) {
        let result = try ScenarioText.run(text)
        guard case let .failed(f) = result.outcome else {
            XCTFail("passed: \(text)")
            return (0, "")
        }
        return (f.step?.index ?? 0, f.seen)
    }

    private let band = """
    scenario: band
    timeout: 60s
    peripherals:
      band:
        advertise: { name: Band, services: [FEE0] }
        gatt:
          - service: FEE0
            characteristics:
              - { uuid: FEE1, properties: [read, write-without-response, notify], value: u8:1, on-write: [{ notify: FEE1, value: written }] }
    central:
      - scan
      - connect: band
      - discover: all

    """

    /// "does not fit … or the link is closed" named two causes; a 1-octet command after an ATT
    /// timeout fits, and its link was up: the bearer had failed.
    func testAWriteCommandThatCannotGoSaysWhy() throws {
        let long = try failure(band + "  - write: { characteristic: FEE1, value: text:0123456789012345678901234567, type: command }\n")
        XCTAssertEqual(long.step, 4)
        XCTAssertEqual(long.seen, "28 octets do not fit a Write Command at ATT_MTU 23 (at most ATT_MTU - 3 = 20 octets); exchange a larger MTU first (mtu: 247), or write with type: request, which sends a long value in parts")
        // With ATT_MTU 247, the same value goes.
        XCTAssertEqual(try ScenarioText.run(band + """
          - mtu: 247
          - write: { characteristic: FEE1, value: text:0123456789012345678901234567, type: command }
          - expect: { write-sent-as: command }

        """).verdict, "passed")

        let flawed = band.replacingOccurrences(of: "central:", with: "    flaws: [{ request: read, no-response: true }]\ncentral:")
        let timedOut = flawed + """
          - read: FEE1
          - expect: { att-timeout: read }
          - write: { characteristic: FEE1, value: u8:2, type: command }

        """
        let failed = try failure(timedOut)
        XCTAssertEqual(failed.step, 6)
        XCTAssertEqual(failed.seen, "the ATT bearer sends nothing more after a transaction timeout (Core Vol 3 Part F 3.3.3)")
        //XCTAssertEqual(ScenarioSession.unsentCommand(1, mtu: 23, bearer: .closed), "the link is closed: the ATT bearer to the peripheral is gone")
    }

    /// `peripheral-received` said "no write … reached" when one had, and an earlier expectation
    /// had accounted for it.
    func testPeripheralReceivedSaysSinceWhichStep() throws {
        let f = try failure(band + """
          - write: { characteristic: FEE1, value: text:hello, type: command }
          - expect: { peripheral-received: { characteristic: FEE1 } }
          - expect: { peripheral-received: { characteristic: FEE1, value: text:hello } }

        """)
        XCTAssertEqual(f.step, 6)
        XCTAssertEqual(f.seen, "no write of FEE1 reached band since step 5 (1 write before it)")
        // Before any expectation took one, the plain text stands.
        let none = try failure(band + "  - expect: { peripheral-received: { characteristic: FEE1 } }\n")
        XCTAssertEqual(none.seen, "no write of FEE1 reached band")
        // A write that arrived but does not match is listed, after the step it is counted since.
        let other = try failure(band + """
          - write: { characteristic: FEE1, value: text:a, type: command }
          - expect: { peripheral-received: { characteristic: FEE1 } }
          - write: { characteristic: FEE1, value: text:b, type: command }
          - expect: { peripheral-received: { characteristic: FEE1, value: text:a } }

        """)
        XCTAssertTrue(other.seen.hasPrefix("since step 5 (1 write before it): "), other.seen)
        XCTAssertTrue(other.seen.contains("value 62"), other.seen)
    }

    /// The same for notifications: what a previous expectation took is not "none arrived".
    func testNotificationSaysSinceWhichStep() throws {
        let f = try failure(band + """
          - subscribe: FEE1
          - write: { characteristic: FEE1, value: text:hi, type: command }
          - expect: { notification: FEE1 }
          - expect: { notification: FEE1, value: text:hi }

        """)
        XCTAssertEqual(f.step, 7)
        XCTAssertEqual(f.seen, "no notification of FEE1 arrived since step 6 (1 notification before it)")
        let subscribed = try failure(band + "  - subscribe: FEE1\n  - expect: { notification: FEE1 }\n")
        XCTAssertEqual(subscribed.seen, "no notification of FEE1 arrived since step 4")
    }

    /// A discovery response the central rejects says what is wrong with it, not "out of order or
    /// without a UUID" / "malformed or out of order".
    func testARejectedDiscoveryResponseSaysWhatIsWrong() throws {
        func discoveryNote(_ flaw: String) throws -> String? {
            let text = band.replacingOccurrences(of: "central:", with: "    flaws: [\(flaw)]\ncentral:")
                .replacingOccurrences(of: "  - discover: all\n", with: "  - discover: all\n  - expect: { malformed-response: any }\n")
            let result = try ScenarioText.run(text)
            XCTAssertEqual(result.verdict, "passed")
            return result.steps.first { $0.step.text == "discover: all" }?.note
        }
        let backwards = try XCTUnwrap(discoveryNote("{ request: read-by-group-type, count: 1, malformed: hex:11 06 0a 00 05 00 00 18 }"))
        XCTAssertTrue(backwards.contains("Read By Group Type Response entry 0x000a..0x0005 ends before it starts"), backwards)
        let early = try XCTUnwrap(discoveryNote("{ request: read-by-group-type, count: 1, malformed: hex:11 06 00 00 05 00 00 18 }"))
        XCTAssertTrue(early.contains("Read By Group Type Response entry 0x0000..0x0005 is out of order: it starts before 0x0001"), early)
        let declaration = try XCTUnwrap(discoveryNote("{ request: read-by-type, count: 1, malformed: hex:09 07 02 00 02 01 00 00 2a }"))
        XCTAssertTrue(declaration.contains("characteristic declaration at 0x0002 is malformed: its value handle 0x0001 is not after the declaration"), declaration)
    }
}

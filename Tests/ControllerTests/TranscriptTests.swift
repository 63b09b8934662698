import XCTest
import BLERuntime
import BLEWire
import HCI
@testable import Controller

/// A scripted HCI transcript double for one controller: send these bytes, expect exactly these
/// bytes back at this virtual time, let time pass, expect silence.
struct Transcript {
    enum Step {
        /// An H4 frame from the host (hex, indicator first).
        case send(String)
        /// The next frame to the host, and when it arrives (default: now).
        case expect(String, at: Instant? = nil)
        /// Lets virtual time pass to an absolute time; frames arriving meanwhile must be expected next.
        case runUntil(Instant)
    }

    let steps: [Step]
    init(_ steps: [Step]) { self.steps = steps }

    func run(on host: TestHost, in lab: TestLab, file: StaticString = #filePath, line: UInt = #line) {
        // Frames before this script were checked by an earlier one.
        var next = host.received.count
        for (index, step) in steps.enumerated() {
            switch step {
            case let .send(hexFrame):
                host.sendRaw(hexFrame)
                lab.settle()
            case let .runUntil(t):
                lab.run(until: t)
            case let .expect(hexFrame, at):
                guard next < host.received.count else {
                    XCTFail("step \(index): expected [\(hexFrame)] but nothing more arrived", file: file, line: line)
                    return
                }
                let (time, frame) = host.received[next]
                next += 1
                XCTAssertEqual(frame.spacedHex, hex(hexFrame).spacedHex, "step \(index)", file: file, line: line)
                XCTAssertEqual(time, at ?? lab.loop.now, "step \(index): arrival time", file: file, line: line)
            }
            // Nothing may arrive that the script does not expect before the next send or wait ends.
            if case .expect = step { continue }
            if index + 1 < steps.count, case .expect = steps[index + 1] { continue }
            if next < host.received.count {
                XCTFail("step \(index): unexpected [\(host.received[next].frame.spacedHex)] at \(host.received[next].time)", file: file, line: line)
                return
            }
        }
        XCTAssertEqual(next, host.received.count, "unexpected frames at the end", file: file, line: line)
    }
}

final class TranscriptTests: XCTestCase {
    /// Supported_Commands as 64 octets: Disconnect (0.5), Set Event Mask and Reset (5.6–7), Read
    /// Local Version/Features/Buffer Size (14.3, 14.5, 14.7), Read BD_ADDR and Read RSSI (15.1,
    /// 15.5), the LE commands of octets 25–26, LE Connection Update, LE Encrypt and LE Rand (27.2,
    /// 27.6, 27.7), the Filter Accept List's four (26.6, 26.7, 27.0, 27.1: octet 26 = 0xFF, 27 =
    /// 0xC7), LE Enable Encryption and the Long Term Key Request replies (28.0–2: 0x07).
    /// Octet 33 = 0x30: LE Remote Connection Parameter Request Reply and Negative Reply (bits 4, 5);
    /// octets 34–35: the resolving list, address resolution and RPA timeout (34.3–6: 0x78, 35.1–2: 0x06).
    static let supportedCommands = "20 00 00 00 00 c0 00 00 00 00 00 00 00 00 a8 22 00 00 00 00 00 00 00 00 00 f7 ff c7 07"
        + String(repeating: " 00", count: 4) + " 30 78 06" + String(repeating: " 00", count: 28)

    func testResetAndConfigureSequence() {
        let lab = TestLab()
        let host = lab.device("dut", "C0:FF:EE:00:00:01")
        Transcript([
            // Reset: same bytes as the reference traffic.
            .send("01 03 0c 00"), .expect("04 0e 04 01 03 0c 00"),
            // Read Local Supported Commands: 0x44 = 3 + status + 64 octets.
            .send("01 02 10 00"), .expect("04 0e 44 01 02 10 00 " + Self.supportedCommands),
            // Read Local Version Information: HCI 0x0D rev 0x0001, LMP 0x0D, company 0xFFFF, sub 0x0001.
            .send("01 01 10 00"), .expect("04 0e 0c 01 01 10 00 0d 01 00 0d ff ff 01 00"),
            // LE Read Local Supported Features: LE Encryption, Connection Parameters Request
            // procedure, LL Privacy.
            .send("01 03 20 00"), .expect("04 0e 0c 01 03 20 00 43 00 00 00 00 00 00 00"),
            // Read Local Supported Features: BR/EDR Not Supported, LE Supported (Controller).
            .send("01 03 10 00"), .expect("04 0e 0c 01 03 10 00 00 00 00 00 60 00 00 00"),
            // Set Event Mask with the reference's mask.
            .send("01 01 0c 08 ff 9f ff bf 07 f8 bf 3d"), .expect("04 0e 04 01 01 0c 00"),
            // Set Event Mask Page 2 is not supported: Unknown HCI Command.
            .send("01 63 0c 08 00 00 00 02 00 00 00 00"), .expect("04 0e 04 01 63 0c 01"),
            .send("01 01 20 08 ff ff f7 ff 0f ed 7b 00"), .expect("04 0e 04 01 01 20 00"),
            // Read Buffer Size: no BR/EDR buffers.
            .send("01 05 10 00"), .expect("04 0e 0b 01 05 10 00 00 00 00 00 00 00 00"),
            // LE Read Buffer Size [v2] is unknown; v1 gives 27 octets × 8.
            .send("01 60 20 00"), .expect("04 0e 04 01 60 20 01"),
            .send("01 02 20 00"), .expect("04 0e 07 01 02 20 00 1b 00 08"),
            .send("01 09 10 00"), .expect("04 0e 0a 01 09 10 00 01 00 00 ee ff c0"),
            .send("01 05 20 06 02 00 00 ee ff c0"), .expect("04 0e 04 01 05 20 00"),
            .send("01 07 20 00"), .expect("04 0e 05 01 07 20 00 00"),
        ]).run(on: host, in: lab)
        XCTAssertEqual(host.controller.randomAddress, BDAddr(string: "C0:FF:EE:00:00:02"))
    }

    /// The Supported_Commands bit map lists exactly the commands the controller answers.
    func testSupportedCommandsMatchWhatIsAnswered() {
        let lab = TestLab()
        let host = lab.device("dut", "C0:FF:EE:00:00:01")
        host.send(.readLocalSupportedCommands)
        lab.settle()
        guard case let .commandComplete(cc)? = host.events.last?.event,
              let bits = try? BitFieldReturn(decoding: cc.returnParameters) else { return XCTFail("no answer") }
        XCTAssertEqual(bits.bits.count, 64)
        var listed: [HCIOpcode] = []
        for octet in 0..<64 {
            for bit in 0..<8 where bits.isSet(octet: octet, bit: bit) {
                guard let entry = SupportedCommands.table.first(where: { $0.octet == octet && $0.bit == bit }) else {
                    XCTFail("bit \(octet).\(bit) set for no supported command")
                    continue
                }
                listed.append(entry.opcode)
            }
        }
        XCTAssertEqual(listed.count, 39)
        func status(of opcode: HCIOpcode) -> HCIStatus? {
            host.clear()
            host.controller.receive(fromHost: [0x01, UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), 0x00])
            lab.settle()
            switch host.events.first?.event {
            case let .commandComplete(c)?: return c.status
            case let .commandStatus(s)?: return s.status
            default: return nil
            }
        }
        for opcode in listed + [.readLocalSupportedCommands] {
            XCTAssertNotNil(status(of: opcode), "\(opcode)")
            XCTAssertNotEqual(status(of: opcode), .unknownCommand, "\(opcode)")
        }
        // Not supported, and not listed: Set Event Mask Page 2 (22.2), LE Read Supported States
        // (28.3), LE Set Data Length (33.6).
        for (ogf, ocf, octet, bit) in [(0x03, 0x63, 22, 2), (0x08, 0x1C, 28, 3), (0x08, 0x22, 33, 6)] {
            let opcode = HCIOpcode(ogf: UInt16(ogf), ocf: UInt16(ocf))
            XCTAssertEqual(status(of: opcode), .unknownCommand, "\(opcode)")
            XCTAssertFalse(bits.isSet(octet: octet, bit: bit))
        }
    }

    /// The extended advertising, scanning and initiating commands have HCI codecs but the sim
    /// does not implement them: each is answered with Unknown HCI Command (0x01) in Command
    /// Complete (Part E, 4.5), well-formed or not (never Invalid HCI Command Parameters, which
    /// would claim the command is known), and changes nothing.
    func testExtendedCommandsAreUnknownToTheSim() {
        let lab = TestLab()
        let host = lab.device("dut", "C0:FF:EE:00:00:01")
        Transcript([
            .send("01 03 0c 00"), .expect("04 0e 04 01 03 0c 00"),
            // LE Set Extended Scan Parameters, well formed (1M: active, 60 ms / 60 ms).
            .send("01 41 20 08 01 00 01 01 60 00 60 00"), .expect("04 0e 04 01 41 20 01"),
            // LE Set Extended Scan Enable, one octet short.
            .send("01 42 20 05 01 00 00 00 00"), .expect("04 0e 04 01 42 20 01"),
            // LE Set Extended Advertising Enable with Enable 0x02 (out of range).
            .send("01 39 20 02 02 00"), .expect("04 0e 04 01 39 20 01"),
            // LE Extended Create Connection (Command Status in the spec; unknown, so Command Complete).
            .send("01 43 20 1a 00 00 01 02 00 00 ee ff c0 01 60 00 60 00 18 00 28 00 00 00 48 00 00 00 00 00"),
            .expect("04 0e 04 01 43 20 01"),
        ]).run(on: host, in: lab)
        XCTAssertFalse(host.controller.isScanning)
        XCTAssertNil(host.controller.initiating)
    }

    /// LE Meta is masked after Reset (7.3.1 default); reports flow once the host unmasks it and
    /// stop when the LE mask drops LE Advertising Report. No advDelay, so event times are exact.
    func testEventMasksFilterEvents() {
        var model = AirModel()
        model.advertisingDelayMax = .zero
        let lab = TestLab(model: model)
        let host = lab.device("dut", "C0:FF:EE:00:00:01")
        let advertiser = lab.device("adv", "C0:FF:EE:00:00:02")
        advertiser.bringUp()
        let report = "04 3e 0f 02 01 03 00 02 00 00 ee ff c0 03 02 01 06 c4"   // ADV_NONCONN_IND, rssi -60
        Transcript([
            .send("01 03 0c 00"), .expect("04 0e 04 01 03 0c 00"),
            .send("01 0b 20 07 00 10 00 10 00 00 00"), .expect("04 0e 04 01 0b 20 00"),
            .send("01 0c 20 02 01 00"), .expect("04 0e 04 01 0c 20 00"),
        ]).run(on: host, in: lab)
        advertiser.advertise(type: .nonConnectableUndirected, intervalUnits: 0x0020)   // every 20 ms from t = 0
        Transcript([
            .runUntil(.ms(50)),
            .send("01 01 0c 08 ff ff ff ff ff 1f 00 20"), .expect("04 0e 04 01 01 0c 00", at: .ms(50)),
            .runUntil(.ms(90)),
            .expect(report, at: .ms(60)), .expect(report, at: .ms(80)),
            .send("01 01 20 08 1d 00 00 00 00 00 00 00"), .expect("04 0e 04 01 01 20 00", at: .ms(90)),
            .runUntil(.ms(130)),
            .send("01 01 20 08 1f 00 00 00 00 00 00 00"), .expect("04 0e 04 01 01 20 00", at: .ms(130)),
            .runUntil(.ms(150)),
            .expect(report, at: .ms(140)),
        ]).run(on: host, in: lab)
        // Reports at 0, 20, 40 ms (LE Meta masked) and 100, 120 ms (LE Advertising Report masked).
        XCTAssertEqual(host.controller.counters.eventsMasked, 5)
    }

    func testInvalidParameters() {
        let lab = TestLab()
        let host = lab.device("dut", "C0:FF:EE:00:00:01")
        Transcript([
            // Wrong parameter lengths.
            .send("01 03 0c 01 00"), .expect("04 0e 04 01 03 0c 12"),
            .send("01 0a 20 02 01 00"), .expect("04 0e 04 01 0a 20 12"),
            .send("01 06 04 02 01 00"), .expect("04 0f 04 12 01 06 04"),          // Disconnect: Command Status
            .send("01 13 20 02 01 00"), .expect("04 0f 04 12 01 13 20"),          // LE Connection Update
            .send("01 0d 20 01 00"), .expect("04 0f 04 12 01 0d 20"),             // LE Create Connection
            .send("01 03 0c 02 00"), .expect("04 0e 04 01 03 0c 12"),             // declared 2, carries 1
            // Out-of-range values.
            .send("01 0a 20 01 02"), .expect("04 0e 04 01 0a 20 12"),             // Advertising_Enable 2
            .send("01 0c 20 02 01 02"), .expect("04 0e 04 01 0c 20 12"),          // Filter_Duplicates 2
            .send("01 08 20 20 20" + String(repeating: " 00", count: 31)), .expect("04 0e 04 01 08 20 12"),
            .send("01 06 20 0f 1f 00 a0 00 00 00 00 00 00 00 00 00 00 07 00"), .expect("04 0e 04 01 06 20 12"),  // min < 0x20
            .send("01 06 20 0f a0 00 01 40 00 00 00 00 00 00 00 00 00 07 00"), .expect("04 0e 04 01 06 20 12"),  // max > 0x4000
            .send("01 06 20 0f b0 00 a0 00 00 00 00 00 00 00 00 00 00 07 00"), .expect("04 0e 04 01 06 20 12"),  // min > max
            .send("01 06 20 0f a0 00 a0 00 05 00 00 00 00 00 00 00 00 07 00"), .expect("04 0e 04 01 06 20 12"),  // type 5
            .send("01 06 20 0f a0 00 a0 00 00 00 00 00 00 00 00 00 00 00 00"), .expect("04 0e 04 01 06 20 12"),  // no channel
            .send("01 06 20 0f a0 00 a0 00 00 04 00 00 00 00 00 00 00 07 00"), .expect("04 0e 04 01 06 20 12"),  // own type 4
            .send("01 06 20 0f a0 00 a0 00 00 00 00 00 00 00 00 00 00 07 00"), .expect("04 0e 04 01 06 20 00"),  // valid
            .send("01 0b 20 07 02 10 00 10 00 00 00"), .expect("04 0e 04 01 0b 20 12"),   // scan type 2
            .send("01 0b 20 07 00 10 00 20 00 00 00"), .expect("04 0e 04 01 0b 20 12"),   // window > interval
            .send("01 0b 20 07 00 03 00 03 00 00 00"), .expect("04 0e 04 01 0b 20 12"),   // interval < 4
            // LE Create Connection: timeout 0x000A ≤ (1 + 0) × 0x0028 × 1.25 ms × 2.
            .send("01 0d 20 19 60 00 60 00 00 00 02 00 00 ee ff c0 00 18 00 28 00 00 00 0a 00 00 00 00 00"),
            .expect("04 0f 04 12 01 0d 20"),
            // …interval min above max.
            .send("01 0d 20 19 60 00 60 00 00 00 02 00 00 ee ff c0 00 30 00 28 00 00 00 64 00 00 00 00 00"),
            .expect("04 0f 04 12 01 0d 20"),
            // Own_Address_Type random before LE Set Random Address.
            .send("01 0d 20 19 60 00 60 00 00 00 02 00 00 ee ff c0 01 18 00 28 00 00 00 64 00 00 00 00 00"),
            .expect("04 0f 04 12 01 0d 20"),
            .send("01 06 20 0f a0 00 a0 00 00 01 00 00 00 00 00 00 00 07 00"), .expect("04 0e 04 01 06 20 00"),
            .send("01 0a 20 01 01"), .expect("04 0e 04 01 0a 20 12"),
            // Scanning_Filter_Policy 0x01 (the Filter Accept List) is taken; 0x02 (directed
            // advertisements to a resolvable private address) is Unsupported Feature or Parameter Value.
            .send("01 0b 20 07 00 10 00 10 00 00 01"), .expect("04 0e 04 01 0b 20 00"),
            .send("01 0b 20 07 00 10 00 10 00 00 02"), .expect("04 0e 04 01 0b 20 11"),
        ]).run(on: host, in: lab)
        XCTAssertFalse(host.controller.isAdvertising)
        XCTAssertFalse(host.controller.isInitiating)
    }

    func testUnknownCommands() {
        let lab = TestLab()
        let host = lab.device("dut", "C0:FF:EE:00:00:01")
        Transcript([
            .send("01 01 fc 00"), .expect("04 0e 04 01 01 fc 01"),             // vendor command
            .send("01 00 00 00"), .expect("04 0e 04 01 00 00 01"),             // opcode 0x0000
            .send("01 41 20 0d 01 00 05 01 60 00 60 00 01 60 00 60 00"), .expect("04 0e 04 01 41 20 01"),  // ext scan params
            .send("01 03 0c 00"), .expect("04 0e 04 01 03 0c 00"),
        ]).run(on: host, in: lab)
    }

    func testCommandDisallowed() {
        let lab = TestLab()
        let host = lab.device("dut", "C0:FF:EE:00:00:01")
        Transcript([
            .send("01 03 0c 00"), .expect("04 0e 04 01 03 0c 00"),
            .send("01 01 0c 08 ff ff ff ff ff 1f 00 20"), .expect("04 0e 04 01 01 0c 00"),
            // LE Create Connection Cancel while not initiating.
            .send("01 0e 20 00"), .expect("04 0e 04 01 0e 20 0c"),
            // Advertising: parameters and random address are locked while enabled.
            .send("01 0a 20 01 01"), .expect("04 0e 04 01 0a 20 00"),
            .send("01 06 20 0f a0 00 a0 00 00 00 00 00 00 00 00 00 00 07 00"), .expect("04 0e 04 01 06 20 0c"),
            .send("01 05 20 06 02 00 00 ee ff c0"), .expect("04 0e 04 01 05 20 0c"),
            .send("01 0a 20 01 01"), .expect("04 0e 04 01 0a 20 00"),          // enabling again: no effect
            .send("01 0a 20 01 00"), .expect("04 0e 04 01 0a 20 00"),
            .send("01 0a 20 01 00"), .expect("04 0e 04 01 0a 20 00"),          // disabling again: no effect
            // Scanning: parameters locked while enabled.
            .send("01 0c 20 02 01 00"), .expect("04 0e 04 01 0c 20 00"),
            .send("01 0b 20 07 01 10 00 10 00 00 00"), .expect("04 0e 04 01 0b 20 0c"),
            .send("01 0c 20 02 00 00"), .expect("04 0e 04 01 0c 20 00"),
            // Initiating: one LE Create Connection at a time; Cancel completes, then LE Connection
            // Complete with Unknown Connection Identifier for the target.
            .send("01 0d 20 19 60 00 60 00 00 00 02 00 00 ee ff c0 00 18 00 28 00 00 00 64 00 00 00 00 00"),
            .expect("04 0f 04 00 01 0d 20"),
            .send("01 0d 20 19 60 00 60 00 00 00 02 00 00 ee ff c0 00 18 00 28 00 00 00 64 00 00 00 00 00"),
            .expect("04 0f 04 0c 01 0d 20"),
            .send("01 0e 20 00"), .expect("04 0e 04 01 0e 20 00"),
            .expect("04 3e 13 01 02 00 00 00 00 02 00 00 ee ff c0 00 00 00 00 00 00 00"),
            .send("01 0e 20 00"), .expect("04 0e 04 01 0e 20 0c"),
        ]).run(on: host, in: lab)
    }

    func testUnknownConnectionIdentifier() {
        let lab = TestLab()
        let host = lab.device("dut", "C0:FF:EE:00:00:01")
        Transcript([
            .send("01 06 04 03 01 00 13"), .expect("04 0f 04 02 01 06 04"),                 // Disconnect
            .send("01 05 14 02 01 00"), .expect("04 0e 07 01 05 14 02 01 00 00"),            // Read RSSI
            .send("01 13 20 0e 01 00 18 00 28 00 00 00 64 00 00 00 00 00"), .expect("04 0f 04 02 01 13 20"),
        ]).run(on: host, in: lab)
    }

    /// Frames that cannot be answered are dropped without a reply, and counted.
    func testUnanswerableFramesAreDropped() {
        let lab = TestLab()
        let host = lab.device("dut", "C0:FF:EE:00:00:01")
        Transcript([
            .send("07 01 02 03"),                 // unknown indicator
            .send("04 0e 04 01 03 0c 00"),        // an event from the host
            .send("03 01 00 00"),                 // SCO
            .send(""),                            // nothing
            .send("01 03 0c"),                    // command header cut short
            .send("02 01 00 02 00 aa bb"),        // ACL for a handle that does not exist
            .send("02 01 00"),                    // ACL header cut short
            .send("01 03 0c 00"), .expect("04 0e 04 01 03 0c 00"),
        ]).run(on: host, in: lab)
        let c = host.controller.counters
        XCTAssertEqual(c.framesDroppedBadIndicator, 4)
        XCTAssertEqual(c.commandsDroppedTruncated, 1)
        XCTAssertEqual(c.aclDroppedUnknownHandle, 1)
        XCTAssertEqual(c.aclDroppedMalformed, 1)
    }
}

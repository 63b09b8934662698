import BLEWire
@testable import HCI
import XCTest

/// Every packet of both reference sessions (another stack's real traffic) through `HCIPacket`:
/// decodes without error, re-encodes byte-identically, and describes itself in spec terms.
final class ReferenceTrafficTests: XCTestCase {

    func testEveryPacketDecodesAndReencodesIdentically() throws {
        var kinds: [String: Int] = [:]
        for (file, packet) in ReferenceTraffic.all {
            let label = "\(file) #\(packet.number) \(packet.summary)"
            let decoded: HCIPacket
            do { decoded = try HCIPacket(h4: packet.h4) } catch { XCTFail("\(label): \(error)"); continue }
            XCTAssertEqual(decoded.h4, packet.h4, label)
            XCTAssertEqual(try HCIPacket(h4: decoded.h4), decoded, label)
            XCTAssertEqual(decoded.type.rawValue, packet.h4[0], label)
            switch decoded {
            case .command: XCTAssertTrue(packet.hostToController, "commands go down: \(label)")
            case .event: XCTAssertFalse(packet.hostToController, "events come up: \(label)")
            case .acl: break
            case .other: XCTFail("no SCO or ISO in an LE GATT session: \(label)")
            }
            kinds[String(describing: decoded.type), default: 0] += 1
        }
        XCTAssertEqual(kinds, ["command": 37, "event": 114, "ACL": 140])
    }

    /// `h4Frame`, which builds the indicator, header and parameters in one buffer (Vol 4 Part A
    /// 2: 0x01 command, 0x04 event), gives every reference command and event byte for byte,
    /// with Parameter_Total_Length filled in after the parameters are written.
    func testEveryCommandAndEventBuildsItsH4FrameInOneBuffer() throws {
        var built = 0
        for (file, packet) in ReferenceTraffic.all {
            let label = "\(file) #\(packet.number) \(packet.summary)"
            switch try HCIPacket(h4: packet.h4) {
            case let .command(command):
                XCTAssertEqual(command.h4Frame, packet.h4, label)
                XCTAssertEqual(command.h4Frame, [0x01] + command.encoded, label)
                built += 1
            case let .event(event):
                XCTAssertEqual(event.h4Frame, packet.h4, label)
                XCTAssertEqual(event.h4Frame, [0x04] + event.encoded, label)
                XCTAssertEqual(Int(event.encoded[1]), event.parameters.count, label)
                built += 1
            default: break
            }
        }
        XCTAssertEqual(built, 37 + 114)
    }

    /// Modelled commands and events decode to their own cases, not `.unknown`; the unmodelled
    /// ones (v2 buffer sizes, data length, event mask page 2, advertising set terminated) are exactly these.
    func testWhichReferencePacketsAreOutsideTheSubset() throws {
        var unknown: Set<String> = []
        for (_, packet) in ReferenceTraffic.all {
            switch try HCIPacket(h4: packet.h4) {
            case let .command(.unknown(opcode, _)): unknown.insert("command 0x" + String(opcode.rawValue, radix: 16))
            case let .event(.unknown(code, _)): unknown.insert("event 0x" + String(code, radix: 16))
            case let .event(.leMeta(.unknown(subevent, _))): unknown.insert("LE subevent 0x" + String(subevent, radix: 16))
            default: break
            }
        }
        XCTAssertEqual(unknown, [
            "command 0xc63",   // Set Event Mask Page 2
            "command 0x2060",  // LE Read Buffer Size [v2]
            "command 0x2023",  // LE Read Suggested Default Data Length
            "command 0x2024",  // LE Write Suggested Default Data Length
            "LE subevent 0x12", // LE Advertising Set Terminated
        ])
    }

    /// Where tshark's summary names a command BLELab knows, our description names it too.
    func testDescriptionsNameTheSameCommandsAsTheReferenceSummaries() throws {
        func normalized(_ s: String) -> String { s.replacingOccurrences(of: "_", with: " ") }
        var checked = 0
        for (file, packet) in ReferenceTraffic.all {
            let label = "\(file) #\(packet.number) \(packet.summary)"
            let decoded = try HCIPacket(h4: packet.h4)
            let description = decoded.description
            XCTAssertFalse(description.isEmpty, label)
            switch decoded {
            case let .command(command):
                guard let name = command.opcode.name else { continue }
                XCTAssertTrue(packet.summary.hasSuffix(normalized(name)), label)
                XCTAssertTrue(description.hasPrefix(name), "\(label): \(description)")
                checked += 1
            case let .event(.commandComplete(complete)):
                guard let name = complete.opcode.name else { continue }
                XCTAssertTrue(packet.summary.contains("Command Complete (\(normalized(name)))"), label)
                XCTAssertTrue(description.hasPrefix("Command Complete (\(name)) status success"), "\(label): \(description)")
                checked += 1
            case let .event(.commandStatus(status)):
                XCTAssertTrue(description.hasPrefix("Command Status (\(status.opcode.name ?? "?"))"), "\(label): \(description)")
                checked += 1
            case .acl:
                XCTAssertTrue(description.hasPrefix("ACL handle 0x0001 "), "\(label): \(description)")
                checked += 1
            default:
                break
            }
        }
        XCTAssertEqual(checked, 140 + 29 + 27 + 2)  // ACL, known commands, their Command Complete, Command Status
    }

    func testDescriptionSpotChecks() throws {
        func describe(_ packets: [ReferencePacket], _ number: Int) throws -> String {
            try HCIPacket(h4: packets[number - 1].h4).description
        }
        let central = ReferenceTraffic.central, peripheral = ReferenceTraffic.peripheral
        XCTAssertEqual(try describe(central, 1), "Reset")
        XCTAssertEqual(try describe(central, 2), "Command Complete (Reset) status success")
        XCTAssertEqual(try describe(central, 26), "Command Complete (Read BD_ADDR) status success [01 00 00 ee ff c0]")
        XCTAssertEqual(try describe(central, 27), "LE Set Random Address C0:FF:EE:00:00:01")
        XCTAssertEqual(try describe(central, 29),
                       "LE Set Extended Scan Parameters active interval 60.0 ms window 60.0 ms; active interval 60.0 ms window 60.0 ms")
        XCTAssertEqual(try describe(central, 31), "LE Set Extended Scan Enable on")
        let report = try describe(central, 33)
        XCTAssertTrue(report.hasPrefix("LE Extended Advertising Report connectable C0:FF:EE:00:00:02/random rssi -50 ["), report)
        XCTAssertEqual(try describe(peripheral, 29),
                       "LE Set Extended Advertising Parameters set 0 properties 0x0013 interval 100.0–1000.0 ms own random")
        XCTAssertEqual(try describe(peripheral, 31), "LE Set Advertising Set Random Address set 0 C0:FF:EE:00:00:02")
        let data = try describe(peripheral, 33)
        XCTAssertTrue(data.hasPrefix("LE Set Extended Advertising Data set 0 complete ["), data)
        XCTAssertEqual(try describe(peripheral, 35), "LE Set Extended Advertising Enable on sets 0")
        XCTAssertEqual(try describe(central, 37),
                       "LE Create Connection to C0:FF:EE:00:00:02/random interval 15.0–30.0 ms timeout 720 ms")
        XCTAssertEqual(try describe(central, 38), "Command Status (LE Create Connection) status success")
        XCTAssertEqual(try describe(central, 39),
                       "LE Connection Complete status success handle 0x0001 role central peer C0:FF:EE:00:00:02/random interval 15.0 ms timeout 720 ms")
        XCTAssertEqual(try describe(central, 41), "Number Of Completed Packets handle 0x0001: 1")
        XCTAssertEqual(try describe(central, 103), "ACL handle 0x0001 first (non-flushable) 10 octets [06 00 04 00 12 10 00 72 65 71]")
        XCTAssertEqual(try describe(central, 105), "ACL handle 0x0001 first 5 octets [01 00 04 00 13]")
        XCTAssertEqual(try describe(central, 144), "Disconnect handle 0x0001 reason remote-user-terminated (0x13)")
        XCTAssertEqual(try describe(central, 146),
                       "Disconnection Complete status success handle 0x0001 reason remote-user-terminated (0x13)")
        XCTAssertTrue(try describe(peripheral, 37).contains("role peripheral peer C0:FF:EE:00:00:01/random"))
        XCTAssertEqual(try describe(peripheral, 38), "LE Meta subevent 0x12 [00 00 01 00 00]")
    }
}

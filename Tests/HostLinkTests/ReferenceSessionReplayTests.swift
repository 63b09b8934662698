import BLERuntime
import HCI
import HostLink
import XCTest

/// The whole reference central session played through the driver: the host side issues the
/// captured commands and L2CAP PDUs, the scripted controller answers with the captured events
/// and data. The driver must put the captured octets on the wire, complete every command, hand
/// up every L2CAP PDU unchanged and report nothing as broken.
final class ReferenceSessionReplayTests: XCTestCase {

    func testReplayReproducesTheCaptureOctetForOctet() throws {
        let h = DriverHarness()
        // Packet 20, LE Read Buffer Size [v2]: LE_ACL_Data_Packet_Length 0x001b, Total_Num_LE_ACL_Data_Packets 0x40.
        h.driver.setLEBuffers(packetLength: 27, count: 64)

        var commands: [(packet: Int, outcome: CommandOutcome)] = []
        var expectedPDUs: [ReceivedPDU] = []
        for packet in CentralReferenceTraffic.packets {
            let label = "packet \(packet.number) (\(packet.summary))"
            switch packet.direction {
            case .hostToController where packet.isCommand:
                let command = try HCICommand(decoding: packet.frame, from: 1)
                commands.append((packet.number, h.send(command)))
                XCTAssertEqual(h.controller.takeSent().map(\.spacedHex), [packet.frame.spacedHex], label)
            case .hostToController:
                let acl = try HCIACLData(decoding: packet.frame, from: 1)
                h.driver.sendL2CAP(handle: acl.handle, pdu: acl.data)
                XCTAssertEqual(h.controller.takeSent().map(\.spacedHex), [packet.frame.spacedHex], label)
            case .controllerToHost:
                if packet.isACL { expectedPDUs.append(ReceivedPDU(handle: 0x0001, bytes: Array(packet.frame[5...]))) }
                h.controller.reply(packet.frame)
                XCTAssertEqual(h.protocolErrors, [], label)
            }
        }

        XCTAssertEqual(commands.count, 19)
        for (number, outcome) in commands {
            guard case .returned(_, let parameters)? = outcome.outcomes.first, outcome.outcomes.count == 1 else {
                XCTFail("command of packet \(number): \(outcome.outcomes)")
                continue
            }
            XCTAssertEqual(parameters.first, 0x00, "command of packet \(number) status")
        }
        XCTAssertEqual(h.pdus, expectedPDUs)
        // Two LE Extended Advertising Reports, LE Connection Complete, Disconnection Complete.
        XCTAssertEqual(h.events.map(\.code), [0x3E, 0x3E, 0x3E, 0x05])
        XCTAssertEqual(h.protocolErrors, [])

        // Every ACL packet sent was reported completed: all 64 buffers are free again.
        for n in 0..<65 { h.driver.sendL2CAP(handle: 0x0001, pdu: [0x01, 0x00, 0x04, 0x00, UInt8(n)]) }
        XCTAssertEqual(h.controller.takeSent().count, 64)
        XCTAssertEqual(h.driver.queuedFragments(for: 0x0001), 1)
    }
}

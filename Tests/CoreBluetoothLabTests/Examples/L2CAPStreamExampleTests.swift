import BLELab
import BLERuntime
import CoreBluetoothLab
import Foundation
import HCI
import L2CAPStream
import XCTest

/// The L2CAP example: a central app streams 1 MiB over an L2CAP channel to a peripheral app,
/// which checks every byte; both through CoreBluetoothLab, on two controllers.
final class L2CAPStreamExampleTests: XCTestCase {
    func testOneMebibyteArrivesWholeAndInOrder() throws {
        let lab = CBLab(seed: 900)
        let receiver = lab.attach { StreamReceiver() }
        let sender = lab.attach { StreamSender(totalBytes: 1 << 20) }
        XCTAssertTrue(lab.run(within: .seconds(10)) { sender.channel != nil && receiver.channel != nil }, "channel opened")
        XCTAssertEqual(sender.channel?.psm, receiver.psm)
        XCTAssertEqual(receiver.psm, 0x0080)
        let openedAt = lab.now

        XCTAssertTrue(lab.run(within: .seconds(1200)) { receiver.ended }, "the transfer ended")
        XCTAssertNil(sender.failure)
        XCTAssertNil(receiver.firstMismatch, "every byte matched the pattern")
        XCTAssertEqual(sender.sentBytes, 1 << 20)
        XCTAssertEqual(receiver.verifiedBytes, 1 << 20)
        // It took link time: 1 MiB in 27-octet LL payloads at 4 per connection event.
        XCTAssertGreaterThan(lab.now - openedAt, .seconds(60))

        // What crossed the link: K-frames on the channel's CIDs, none over the receiver's MPS
        // (247) plus the basic header, and LE Flow Control Credits back.
        let senderDevice = try XCTUnwrap(lab.device(of: sender.centralManager))
        var reassembler = L2CAPReassembler<UInt16>()
        var largestKFrame = 0, largestSDU = 0, sduOctets = 0, sdus = 0, left = 0
        for packet in senderDevice.log.packets where packet.direction == .hostToController {
            guard case let .acl(acl)? = try? HCIPacket(h4: packet.frame),
                  let frame = reassembler.feed(acl.data, boundary: acl.boundary, stream: acl.handle).frame,
                  L2CAPChannelID.leDynamicRange.contains(frame.channel) else { continue }
            largestKFrame = max(largestKFrame, frame.payload.count)
            if left == 0 {
                // The first K-frame of an SDU: its SDU Length first (Vol 3 Part A 3.4.3).
                let length = Int(frame.payload[0]) | Int(frame.payload[1]) << 8
                sdus += 1
                sduOctets += length
                largestSDU = max(largestSDU, length)
                left = length - (frame.payload.count - 2)
            } else {
                left -= frame.payload.count
            }
            XCTAssertGreaterThanOrEqual(left, 0)
        }
        XCTAssertEqual(left, 0, "the last SDU is whole")
        XCTAssertEqual(largestKFrame, 247, "K-frames of the receiver's MPS")
        XCTAssertEqual(sduOctets, 1 << 20)
        XCTAssertLessThanOrEqual(largestSDU, 2048, "SDUs of at most the receiver's MTU")
        XCTAssertGreaterThanOrEqual(sdus, 512)
    }
}

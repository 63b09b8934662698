import BLEWire
@testable import HCI
import WireTestSupport
import XCTest

/// ACL data packets (Core 5.4, Vol 4, Part E, 5.4.2):
/// `| Handle (12 bits) | PB_Flag (2 bits) | BC_Flag (2 bits) | Data_Total_Length (2) | Data |`.
final class HCIACLDataTests: XCTestCase {

    func testWriteRequestFromReferenceTraffic() throws {
        // central #103: Write Request, host to controller.
        let packet = ReferenceTraffic.central[102]
        XCTAssertTrue(packet.summary.contains("Write Request"))
        XCTAssertEqual(packet.h4, bytes(
            "02",        // H4 ACL
            "01 00",     // Handle 0x001, PB_Flag 00 (first, non-flushable), BC_Flag 00
            "0a 00",     // Data_Total_Length 10
            "06 00",     // L2CAP PDU Length 6
            "04 00",     // L2CAP Channel ID 0x0004 (ATT)
            "12",        // ATT Write Request
            "10 00",     // Attribute Handle 0x0010
            "72 65 71"   // Attribute Value "req"
        ))
        let acl = HCIACLData(handle: 0x0001, boundary: .firstNonFlushable, data: bytes("06 00 04 00 12 10 00 72 65 71"))
        XCTAssertEqual(try HCIACLData(decoding: packet.h4, from: 1), acl)
        XCTAssertEqual([0x02] + acl.encoded, packet.h4)
        XCTAssertEqual(try HCIPacket(h4: packet.h4), .acl(acl))
        XCTAssertEqual(HCIPacket.acl(acl).h4, packet.h4)
    }

    func testWriteResponseFromReferenceTrafficIsAControllerFirstFragment() throws {
        // central #105: Write Response, controller to host: PB_Flag 10 (first, automatically flushable).
        let packet = ReferenceTraffic.central[104]
        XCTAssertEqual(packet.h4, bytes(
            "02",     // H4 ACL
            "01 20",  // Handle 0x001, PB_Flag 10, BC_Flag 00
            "05 00",  // Data_Total_Length 5
            "01 00",  // L2CAP Length 1
            "04 00",  // CID ATT
            "13"      // ATT Write Response
        ))
        let acl = try HCIACLData(decoding: packet.h4, from: 1)
        XCTAssertEqual(acl, HCIACLData(handle: 1, boundary: .firstFlushable, data: bytes("01 00 04 00 13")))
        XCTAssertTrue(acl.boundary.isStart)
    }

    /// Every ACL packet of both reference files: handle 0x0001, the PB_Flag its direction calls for,
    /// Data_Total_Length equal to the data, one whole L2CAP PDU on the ATT channel, and a byte-identical re-encoding.
    func testEveryACLPacketOfTheReferenceTrafficDecodesAndReencodesIdentically() throws {
        var count = 0
        for (file, packet) in ReferenceTraffic.all where packet.h4.first == 0x02 {
            let label = "\(file) #\(packet.number) \(packet.summary)"
            let acl = try HCIACLData(decoding: packet.h4, from: 1)
            XCTAssertEqual(acl.handle, 0x0001, label)
            XCTAssertEqual(acl.boundary, packet.hostToController ? .firstNonFlushable : .firstFlushable, label)
            XCTAssertEqual(acl.broadcast, 0, label)
            XCTAssertEqual(acl.data.count, Int(packet.h4[3]) | Int(packet.h4[4]) << 8, label)
            XCTAssertEqual(acl.data.count, packet.h4.count - 5, label)
            XCTAssertEqual(Int(acl.data[0]) | Int(acl.data[1]) << 8, acl.data.count - 4, "L2CAP Length: \(label)")
            XCTAssertEqual(Array(acl.data[2...3]), [0x04, 0x00], "ATT channel: \(label)")
            XCTAssertEqual([0x02] + acl.encoded, packet.h4, label)
            var w = ByteWriter()
            acl.encodeH4(into: &w)
            XCTAssertEqual(w.bytes, packet.h4, label)
            count += 1
        }
        XCTAssertEqual(count, 140)  // 70 in each file
    }

    func testPacketBoundaryAndBroadcastFlagBits() throws {
        // Handle 0xABC with every PB_Flag (bits 12–13) and BC_Flag (bits 14–15) combination.
        for pb in UInt8(0)...3 {
            for bc in UInt8(0)...3 {
                let header = UInt16(0x0ABC) | UInt16(pb) << 12 | UInt16(bc) << 14
                let frame: [UInt8] = [UInt8(header & 0xFF), UInt8(header >> 8), 0x01, 0x00, 0xEE]
                let acl = try HCIACLData(decoding: frame)
                XCTAssertEqual(acl.handle, 0x0ABC)
                XCTAssertEqual(acl.boundary.rawValue, pb)
                XCTAssertEqual(acl.broadcast, bc)
                XCTAssertEqual(acl.encoded, frame)
            }
        }
        XCTAssertEqual(HCIACLData(handle: 0x0ABC, boundary: .continuing, broadcast: 1, data: [0xEE]).encoded,
                       bytes("bc 5a",   // 0x5ABC: handle 0xABC, PB_Flag 01, BC_Flag 01
                             "01 00",   // Data_Total_Length 1
                             "ee"))
        XCTAssertEqual(HCIACLData(handle: 0x0EFF, boundary: .complete, broadcast: 2, data: []).encoded,
                       bytes("ff be",   // 0xBEFF: handle 0xEFF, PB_Flag 11, BC_Flag 10
                             "00 00"))  // no data
    }

    func testFieldsWiderThanTheirBitsAreMaskedAtConstruction() {
        let acl = HCIACLData(handle: 0xFABC, boundary: PacketBoundary(rawValue: 0xFE), broadcast: 0xFF, data: [])
        XCTAssertEqual(acl.handle, 0x0ABC)
        XCTAssertEqual(acl.boundary, .firstFlushable)  // 0xFE & 0b11
        XCTAssertEqual(acl.broadcast, 0b11)
        XCTAssertEqual(acl.encoded, bytes("bc ea",   // 0xEABC: handle 0xABC, PB_Flag 10, BC_Flag 11
                                           "00 00"))
    }

    func testPacketBoundaryNames() {
        XCTAssertEqual(PacketBoundary.firstNonFlushable.description, "first (non-flushable)")
        XCTAssertEqual(PacketBoundary.continuing.description, "continuing")
        XCTAssertEqual(PacketBoundary.firstFlushable.description, "first")
        XCTAssertEqual(PacketBoundary.complete.description, "complete")
        XCTAssertFalse(PacketBoundary.continuing.isStart)
        XCTAssertFalse(PacketBoundary.complete.isStart)
    }

    func testLongPacketsUseBothLengthOctets() throws {
        let data = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        let acl = HCIACLData(handle: 0x0040, boundary: .continuing, data: data)
        XCTAssertEqual(Array(acl.encoded.prefix(4)), bytes("40 10",   // handle 0x040, PB_Flag 01
                                                           "2c 01"))  // Data_Total_Length 300
        XCTAssertEqual(try HCIACLData(decoding: acl.encoded), acl)
    }

    func testDataTotalLengthMismatchesAreTypedErrors() {
        XCTAssertThrowsDecodeError(try HCIACLData(decoding: bytes("01 00", "05 00", "01 02")),
                                   .lengthMismatch(field: "ACL Data_Total_Length", declared: 5, actual: 2))
        XCTAssertThrowsDecodeError(try HCIACLData(decoding: bytes("01 00", "01 00", "01 02")),
                                   .lengthMismatch(field: "ACL Data_Total_Length", declared: 1, actual: 2))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("02", "01 20", "ff ff")),
                                   .lengthMismatch(field: "ACL Data_Total_Length", declared: 0xFFFF, actual: 0))
    }

    func testTruncatedHeadersAreTypedErrors() {
        XCTAssertThrowsDecodeError(try HCIACLData(decoding: []), .truncated(needed: 2, available: 0, at: 0))
        XCTAssertThrowsDecodeError(try HCIACLData(decoding: bytes("01")), .truncated(needed: 2, available: 1, at: 0))
        XCTAssertThrowsDecodeError(try HCIACLData(decoding: bytes("01 00")), .truncated(needed: 2, available: 0, at: 2))
        XCTAssertThrowsDecodeError(try HCIPacket(h4: bytes("02 01 00 05")), .truncated(needed: 2, available: 1, at: 3))
    }

    func testDescription() {
        let acl = HCIACLData(handle: 1, boundary: .firstNonFlushable, data: bytes("01 00 04 00 13"))
        XCTAssertEqual(acl.description, "ACL handle 0x0001 first (non-flushable) 5 octets [01 00 04 00 13]")
        let long = HCIACLData(handle: 1, boundary: .firstFlushable, data: [UInt8](repeating: 0xAA, count: 40))
        XCTAssertTrue(long.description.hasSuffix(" …]"), long.description)
        XCTAssertTrue(long.description.contains("40 octets"))
    }
}

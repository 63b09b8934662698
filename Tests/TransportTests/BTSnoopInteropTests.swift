import BLERuntime
import Foundation
import HCI
import Transport
import WireTestSupport
import XCTest

/// Our captures in the tools people open them with: tshark (Wireshark) and btmon (BlueZ). Each test
/// checks the file itself first, so it asserts something on a machine without the tools; where a
/// tool is on PATH (.ci/run installs both: `apt-get install -y tshark bluez`) it must decode the
/// capture as we meant it.
final class BTSnoopInteropTests: XCTestCase {
    private func writeSession() throws -> (path: String, packets: [LoggedPacket]) {
        let path = try scratchFolder(self).appendingPathComponent("session.btsnoop").path
        let packets = HandBuiltSession.packets
        try BTSnoopWriter.write(packets, to: path)
        return (path, packets)
    }

    /// ATT opcodes of the ACL frames on CID 0x0004, read back from the file by our own reader.
    private func attOpcodes(in path: String) throws -> [UInt8] {
        try BTSnoopReader.read(path: path).loggedPackets().compactMap { packet -> UInt8? in
            let f = packet.frame
            guard f.count > 9, f[0] == 0x02, f[7] == 0x04, f[8] == 0x00 else { return nil }
            return f[9]
        }
    }

    func testTsharkDecodesTheATTOpcodesOfOurCapture() throws {
        let (path, packets) = try writeSession()
        // Without tshark: the file is a well-formed capture carrying exactly these ATT PDUs.
        XCTAssertEqual(try BTSnoopReader.read(path: path).loggedPackets(), packets)
        XCTAssertEqual(try attOpcodes(in: path), [0x12, 0x13, 0x52, 0x1b])

        guard let tshark = TestTools.executableOnPath("tshark") else {
            print("BTSnoopInteropTests: tshark is not on PATH; checked the capture with our own reader only")
            return
        }
        let fields = try TestTools.runTool(tshark, ["-r", path, "-T", "fields", "-E", "separator=|",
                                          "-e", "frame.time_epoch", "-e", "hci_h4.direction", "-e", "hci_h4.type",
                                          "-e", "btatt.opcode"])
        XCTAssertEqual(fields.status, 0)
        let rows = fields.output.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
        XCTAssertEqual(rows.count, packets.count, fields.output)
        XCTAssertEqual(rows.compactMap { $0.count == 4 && !$0[3].isEmpty ? $0[3] : nil }, ["0x12", "0x13", "0x52", "0x1b"], fields.output)
        // Directions: tshark's H4 direction 0x00 is sent (host → controller), 0x01 received.
        XCTAssertEqual(rows.map { $0.count > 1 ? $0[1] : "" },
                       packets.map { $0.direction == .hostToController ? "0x00" : "0x01" }, fields.output)
        XCTAssertEqual(rows.map { $0.count > 2 ? $0[2] : "" }, ["0x01", "0x04", "0x04", "0x02", "0x02", "0x02", "0x02"])
        // Lab time zero is 2000-01-01T00:00:00Z (946 684 800 s after 1970), microseconds kept.
        XCTAssertEqual(rows.map { $0.first ?? "" }, [
            "946684800.000000000", "946684800.000250000", "946684800.120000000", "946684800.150000000",
            "946684800.180000000", "946684800.210000000", "946684800.240000000",
        ])

        let verbose = try TestTools.runTool(tshark, ["-r", path, "-V"])
        XCTAssertEqual(verbose.status, 0)
        for expected in ["Write Request (0x12)", "Write Command (0x52)", "Handle Value Notification (0x1b)",
                         "Write Response (0x13)", "LE Connection Complete", "Reset", "CID: Attribute Protocol (0x0004)"] {
            XCTAssertTrue(verbose.output.contains(expected), "tshark -V lacks \(expected)")
        }
        XCTAssertFalse(verbose.output.contains("Malformed"), verbose.output)
    }

    func testTsharkReadsTheReferenceCaptureAsOurReaderDoes() throws {
        let path = BTSnoopFixtures.path("central.btsnoop")
        let file = try BTSnoopReader.read(path: path)
        XCTAssertEqual(file.records.count, try BTSnoopFixtures.listing("central.txt").count)
        guard let tshark = TestTools.executableOnPath("tshark") else {
            print("BTSnoopInteropTests: tshark is not on PATH; reference capture checked against its listing only")
            return
        }
        // Same epoch and same direction bit as Wireshark's wiretap/btsnoop.c, record by record.
        let fields = try TestTools.runTool(tshark, ["-r", path, "-T", "fields", "-E", "separator=|",
                                          "-e", "frame.time_epoch", "-e", "hci_h4.direction"])
        let rows = fields.output.split(separator: "\n").map { $0.split(separator: "|").map(String.init) }
        XCTAssertEqual(rows.count, file.records.count)
        for (row, record) in zip(rows, file.records) {
            let us = BTSnoopTime.unixMicroseconds(of: record.timestamp)
            let seconds = us / 1_000_000, micros = us % 1_000_000
            let fraction = String(micros + 1_000_000).dropFirst()   // six digits, zeros kept
            XCTAssertEqual(row.first, "\(seconds).\(fraction)000")
            XCTAssertEqual(row.last, record.direction == .hostToController ? "0x00" : "0x01")
        }
    }

    func testBtmonDecodesTheATTOpcodesOfOurCapture() throws {
        let (path, _) = try writeSession()
        // Without btmon: btmon's reader takes the original length as the octets to read, and stops at
        // 1 490 (BTSNOOP_MAX_PACKET_SIZE); our records keep both lengths equal and small.
        let records = try BTSnoopReader.read(path: path).records
        XCTAssertTrue(records.allSatisfy { Int($0.originalLength) == $0.data.count && $0.originalLength <= 1_490 })

        guard let btmon = TestTools.executableOnPath("btmon") else {
            print("BTSnoopInteropTests: btmon is not on PATH; checked the record lengths it relies on only")
            return
        }
        let run = try TestTools.runTool(btmon, ["-r", path])
        XCTAssertEqual(run.status, 0)
        for expected in ["HCI Command: Reset", "LE Connection Complete", "ATT: Write Request (0x12)",
                         "ATT: Write Response (0x13)", "ATT: Write Command (0x52)", "ATT: Handle Value Notification (0x1b)"] {
            XCTAssertTrue(run.output.contains(expected), "btmon -r lacks \(expected):\n\(run.output)")
        }
        // btmon marks sent packets "<" and received ones ">".
        XCTAssertTrue(run.output.contains("< ACL Data TX"), run.output)
        XCTAssertTrue(run.output.contains("> ACL Data RX"), run.output)
    }
}

import BLERuntime
import Foundation
import HCI
import Transport
import XCTest

/// The reference captures in `Fixtures/` and their tshark listings.
enum BTSnoopFixtures {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
    }

    /// One entry of a listing: `  37 host->controller  Sent LE Create Connection`, then its H4 bytes.
    struct ListedPacket {
        var number: Int
        var direction: HCIDirection
        var summary: String
        var h4: [UInt8]
    }

    static func listing(_ name: String) throws -> [ListedPacket] {
        let text = try String(contentsOfFile: path(name), encoding: .utf8)
        var packets: [ListedPacket] = []
        var pending: (Int, HCIDirection, String)?
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            if let (number, direction, summary) = pending {
                guard let bytes = hexBytes(String(line)) else { throw FixtureError.badLine(name, String(line)) }
                packets.append(ListedPacket(number: number, direction: direction, summary: summary, h4: bytes))
                pending = nil
                continue
            }
            let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard fields.count == 3, let number = Int(fields[0]),
                  fields[1] == "host->controller" || fields[1] == "controller->host" else {
                throw FixtureError.badLine(name, String(line))
            }
            pending = (number, fields[1] == "host->controller" ? .hostToController : .controllerToHost,
                       fields[2].trimmingCharacters(in: .whitespaces))
        }
        return packets
    }

    enum FixtureError: Error { case badLine(String, String) }
}

/// "01 03 0c 00" → [0x01, 0x03, 0x0c, 0x00]; nil on anything but hex digits and spaces.
func hexBytes(_ text: String) -> [UInt8]? {
    var out: [UInt8] = []
    for token in text.split(separator: " ") {
        guard token.count == 2, let b = UInt8(token, radix: 16) else { return nil }
        out.append(b)
    }
    return out
}

/// A small hand-built session, H4 frames as a host would see them: Reset and its completion, an LE
/// Connection Complete, and ACL frames carrying ATT Write Request, Write Response, Write Command and
/// Handle Value Notification on the ATT fixed channel (L2CAP CID 0x0004) of connection 0x0040.
enum HandBuiltSession {
    static let reset: [UInt8] = [
        0x01,             // H4: command
        0x03, 0x0c,       // opcode 0x0c03 HCI_Reset (OGF 0x03, OCF 0x003)
        0x00,             // parameter total length
    ]
    static let resetComplete: [UInt8] = [
        0x04,             // H4: event
        0x0e, 0x04,       // Command Complete, 4 octets of parameters
        0x01,             // Num_HCI_Command_Packets
        0x03, 0x0c,       // command opcode: Reset
        0x00,             // status: success
    ]
    static let connectionComplete: [UInt8] = [
        0x04,             // H4: event
        0x3e, 0x13,       // LE Meta event, 19 octets
        0x01,             // subevent: LE Connection Complete
        0x00,             // status: success
        0x40, 0x00,       // connection handle 0x0040
        0x00,             // role: central
        0x00,             // peer address type: public
        0x66, 0x55, 0x44, 0x33, 0x22, 0x11,   // peer address 11:22:33:44:55:66
        0x18, 0x00,       // connection interval 24 × 1.25 ms = 30 ms
        0x00, 0x00,       // peripheral latency 0
        0xc8, 0x00,       // supervision timeout 200 × 10 ms = 2 s
        0x00,             // central clock accuracy
    ]
    static let writeRequest: [UInt8] = [
        0x02,             // H4: ACL
        0x40, 0x20,       // handle 0x0040, PB = 0b10 (first automatically flushable)
        0x09, 0x00,       // ACL data length 9
        0x05, 0x00,       // L2CAP length 5
        0x04, 0x00,       // CID 0x0004: ATT
        0x12,             // ATT Write Request
        0x03, 0x00,       // attribute handle 0x0003
        0x01, 0x02,       // value
    ]
    static let writeResponse: [UInt8] = [
        0x02, 0x40, 0x20, 0x05, 0x00,   // ACL, handle 0x0040, 5 octets
        0x01, 0x00, 0x04, 0x00,         // L2CAP length 1, CID ATT
        0x13,                           // ATT Write Response
    ]
    static let writeCommand: [UInt8] = [
        0x02, 0x40, 0x20, 0x09, 0x00,   // ACL, handle 0x0040, 9 octets
        0x05, 0x00, 0x04, 0x00,         // L2CAP length 5, CID ATT
        0x52,                           // ATT Write Command
        0x03, 0x00,                     // attribute handle 0x0003
        0x03, 0x04,                     // value
    ]
    static let notification: [UInt8] = [
        0x02, 0x40, 0x20, 0x09, 0x00,   // ACL, handle 0x0040, 9 octets
        0x05, 0x00, 0x04, 0x00,         // L2CAP length 5, CID ATT
        0x1b,                           // ATT Handle Value Notification
        0x05, 0x00,                     // attribute handle 0x0005
        0x48, 0x49,                     // value "HI"
    ]

    static var packets: [LoggedPacket] {
        let frames: [(TimeSpan, HCIDirection, [UInt8])] = [
            (.zero, .hostToController, reset),
            (.microseconds(250), .controllerToHost, resetComplete),
            (.milliseconds(120), .controllerToHost, connectionComplete),
            (.milliseconds(150), .hostToController, writeRequest),
            (.milliseconds(180), .controllerToHost, writeResponse),
            (.milliseconds(210), .hostToController, writeCommand),
            (.milliseconds(240), .controllerToHost, notification),
        ]
        return frames.map { LoggedPacket(time: .zero + $0.0, direction: $0.1, frame: $0.2) }
    }
}

/// A fresh, empty scratch folder for one test, removed when the test ends.
func scratchFolder(_ test: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("blelab-btsnoop-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}


import BLEWire
import Foundation
import XCTest

/// One packet of a reference-traffic listing (`Fixtures/*.txt`): the line
/// `  37 host->controller  Sent LE Create Connection` followed by its H4 bytes.
struct ReferencePacket {
    var number: Int
    var hostToController: Bool
    var summary: String
    var h4: [UInt8]
}

enum ReferenceTraffic {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static let central = load("central.txt")
    static let peripheral = load("peripheral.txt")

    /// Both listings, each packet tagged with the file it came from (for failure messages).
    static var all: [(file: String, packet: ReferencePacket)] {
        central.map { ("central.txt", $0) } + peripheral.map { ("peripheral.txt", $0) }
    }

    /// The whole H4 stream one side of the transport carried, packets concatenated in order.
    static func stream(_ packets: [ReferencePacket]) -> [UInt8] { packets.flatMap(\.h4) }

    static func load(_ name: String) -> [ReferencePacket] {
        let path = fixtures.appendingPathComponent(name).path
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            XCTFail("cannot read fixture \(path)")
            return []
        }
        var packets: [ReferencePacket] = []
        var header: (Int, Bool, String)?
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("#") { continue }
            if let (number, toController, summary) = header {
                guard let bytes = [UInt8](hex: String(line)) else {
                    XCTFail("\(name) packet \(number): bad hex line \(line)")
                    return []
                }
                packets.append(ReferencePacket(number: number, hostToController: toController, summary: summary, h4: bytes))
                header = nil
                continue
            }
            // "  37 host->controller  Sent LE Create Connection"
            let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard fields.count == 3, let number = Int(fields[0]) else {
                XCTFail("\(name): unexpected line \(line)")
                return []
            }
            header = (number, fields[1] == "host->controller", String(fields[2]))
        }
        return packets
    }
}

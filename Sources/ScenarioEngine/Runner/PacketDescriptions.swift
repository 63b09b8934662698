import ATT
import BLERuntime
import HCI
import Transport

/// HCI packets in spec terms for failure reports: ATT PDUs decoded from ACL data, every other
/// packet by its HCI description.
enum PacketDescriptions {
    /// The last `count` packets of `log`, oldest first, leaving out Number Of Completed Packets
    /// events (flow-control bookkeeping that would crowd out what matters).
    static func recent(_ log: PacketLog, count: Int) -> [String] {
        guard count > 0 else { return [] }
        var picked: [String] = []
        for packet in log.packets.reversed() {
            if isCompletedPackets(packet.frame) { continue }
            picked.append(describe(packet))
            if picked.count == count { break }
        }
        return picked.reversed()
    }

    static func isCompletedPackets(_ frame: [UInt8]) -> Bool {
        frame.count >= 2 && frame[0] == H4PacketType.event.rawValue && frame[1] == HCIEvent.Code.numberOfCompletedPackets
    }

    /// `1.25s → ATT Write Command handle 0x0012 value 68 69` (→ host to controller, ← back).
    static func describe(_ packet: LoggedPacket) -> String {
        let arrow = packet.direction == .hostToController ? "→" : "←"
        return "\(packet.time) \(arrow) \(describe(frame: packet.frame))"
    }

    static func describe(frame: [UInt8]) -> String {
        let packet: HCIPacket
        do { packet = try HCIPacket(h4: frame) } catch {
            return "undecodable HCI frame [\(frame.prefix(16).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " "))] (\(error))"
        }
        if case let .acl(acl) = packet, acl.boundary.isStart, let (length, cid) = L2CAPBasicFrame.header(of: acl.data) {
            if cid == L2CAPChannelID.att {
                let payload = Array(acl.data.dropFirst(L2CAPBasicFrame.headerSize))
                guard payload.count >= length else {
                    let name = payload.first.map { ATTOpcode($0).name } ?? "PDU"
                    return "ATT \(name) (first fragment, \(payload.count) of \(length) octets) on connection \(hex4(acl.handle))"
                }
                return "ATT \(ATTPDU.describe(Array(payload.prefix(length)))) on connection \(hex4(acl.handle))"
            }
        }
        return packet.description
    }
}

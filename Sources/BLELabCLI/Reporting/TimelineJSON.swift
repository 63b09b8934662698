import BLELab
import BLERuntime
import HCI
import Transport

/// A run's timeline as JSON: one event per HCI packet (or any caller-made event), in time order,
/// with lab times in integer nanoseconds so nothing depends on float printing.
public enum TimelineJSON {
    /// `{"time_ns": …, "direction": "sent" | "received", "type": "command" | "event" | "ACL" | …,
    /// "summary": the packet's description in spec terms, "h4": "01 03 0c 00"}`.
    public static func event(for packet: LoggedPacket) -> JSONValue {
        let summary: String
        do {
            summary = try HCIPacket(h4: packet.frame).description
        } catch {
            summary = "malformed: \(error)"
        }
        let type = packet.frame.first.map { H4PacketType(rawValue: $0).description } ?? "empty"
        let hex = packet.frame.map { b -> String in
            let digits = String(b, radix: 16)
            return b < 0x10 ? "0" + digits : digits
        }.joined(separator: " ")
        return .object([
            ("time_ns", .int(packet.time.nanoseconds)),
            ("direction", .string(packet.direction == .hostToController ? "sent" : "received")),
            ("type", .string(type)),
            ("summary", .string(summary)),
            ("h4", .string(hex)),
        ])
    }

    /// `{"name": …, "events": [...]}` for the packets of one host's transport.
    public static func document(name: String, packets: [LoggedPacket]) -> JSONValue {
        .object([("name", .string(name)), ("events", .array(packets.map(event(for:))))])
    }
}

import ATT
import BLERuntime
import BLEWire
import HCI
import Transport

/// The ATT PDUs that actually crossed one host's HCI transport, rebuilt from the ACL packets in
/// its packet log (fragments reassembled by HCI's L2CAPReassembler, Core 5.4 Vol 3 Part A 3.1).
/// This is the evidence behind "the central sent a Write Command", independent of what any layer
/// above HCI believed it did.
public final class ATTTraffic {
    public struct Record: CustomStringConvertible {
        public var time: Instant
        /// `.hostToController`: this host sent it; `.controllerToHost`: this host received it.
        public var direction: HCIDirection
        public var connectionHandle: UInt16
        /// The ATT PDU's octets (the L2CAP payload on channel 0x0004).
        public var bytes: [UInt8]
        /// The decoded PDU, or nil when the octets are not a valid ATT PDU.
        public var pdu: ATTPDU?

        public var opcode: ATTOpcode? { bytes.first.map { ATTOpcode($0) } }
        public var wasSent: Bool { direction == .hostToController }

        public var description: String {
            "\(time) \(wasSent ? "sent" : "received") on 0x\(String(connectionHandle, radix: 16)): \(pdu?.description ?? ATTPDU.describe(bytes))"
        }
    }

    public private(set) var records: [Record] = []
    /// Which records `records` keeps; observers see every one whatever it says.
    public enum Retention: Sendable {
        /// Every record (the default).
        case all
        /// All but the notifications and indications this host received: the bulk of a long
        /// stream, which a runner counts through an observer instead.
        case exceptReceivedValues
        /// None: only observers see the traffic.
        case none
    }

    public var retention = Retention.all
    /// False: what this host sent is not reassembled, kept or shown to observers at all (a
    /// runner that watches only what a peripheral received saves decoding every notification it
    /// sends). Set it before the first packet.
    public var watchesSent = true
    private var reassembly = L2CAPReassembler<PartialKey>()
    private var observers: [(Record) -> Void] = []

    private struct PartialKey: Hashable {
        var direction: HCIDirection
        var handle: UInt16
    }

    public init(log: PacketLog) {
        // Weak: the log lives as long as the transport tap that records into it, which can
        // outlive the device (see LabTeardownTests).
        log.observe { [weak self] packet in self?.consume(packet) }
    }

    /// Calls `observer` for each ATT PDU as it is seen.
    public func observe(_ observer: @escaping (Record) -> Void) { observers.append(observer) }

    public var sent: [Record] { records.filter(\.wasSent) }
    public var received: [Record] { records.filter { !$0.wasSent } }

    /// Records with one of `opcodes`, in order.
    public func records(_ opcodes: ATTOpcode...) -> [Record] {
        records.filter { r in r.opcode.map { opcodes.contains($0) } ?? false }
    }

    /// Broken fragment sequences (a continuation without a start, PB 0b11) are not this record's
    /// to judge: the host's driver reports them; here they are skipped.
    private func consume(_ packet: LoggedPacket) {
        guard packet.frame.first == H4PacketType.acl.rawValue, watchesSent || packet.direction != .hostToController, let acl = try? HCIACLData(decoding: packet.frame, from: 1) else { return }
        let outcome = reassembly.feed(acl.data, boundary: acl.boundary, stream: PartialKey(direction: packet.direction, handle: acl.handle))
        guard let frame = outcome.frame, frame.channel == L2CAPChannelID.att else { return }
        let record = Record(time: packet.time, direction: packet.direction, connectionHandle: acl.handle, bytes: frame.payload,
                            pdu: try? ATTPDU(decoding: frame.payload))
        switch retention {
        case .all: records.append(record)
        case .exceptReceivedValues:
            let method = record.opcode?.method
            if record.wasSent || (method != .notification && method != .indication) { records.append(record) }
        case .none: break
        }
        for o in observers { o(record) }
    }
}

import ATT
import BLERuntime
import BLEWire
import HCI
import Transport

/// The ATT PDUs that actually crossed one host's HCI transport, rebuilt from the ACL packets in
/// its packet log (fragments reassembled by the L2CAP basic header, Core 5.4 Vol 3 Part A 3.1).
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
    private var partial: [PartialKey: [UInt8]] = [:]
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

    private func consume(_ packet: LoggedPacket) {
        let frame = packet.frame
        // H4 ACL: 02 | handle+flags (2) | length (2) | data
        guard frame.count >= 5, frame[0] == H4PacketType.acl.rawValue else { return }
        let header = UInt16(frame[1]) | UInt16(frame[2]) << 8
        let handle = header & 0x0FFF
        let boundary = PacketBoundary(rawValue: UInt8(header >> 12 & 0x3))
        let key = PartialKey(direction: packet.direction, handle: handle)
        var buffer: [UInt8]
        if boundary.isStart {
            buffer = Array(frame[5...])
        } else if boundary == .continuing, let started = partial[key] {
            buffer = started + frame[5...]
        } else {
            return
        }
        guard buffer.count >= 4 else {
            partial[key] = buffer
            return
        }
        let length = Int(buffer[0]) | Int(buffer[1]) << 8
        guard buffer.count >= 4 + length else {
            partial[key] = buffer
            return
        }
        partial[key] = nil
        let cid = UInt16(buffer[2]) | UInt16(buffer[3]) << 8
        guard cid == 0x0004 else { return }
        let bytes = Array(buffer[4..<4 + length])
        let record = Record(time: packet.time, direction: packet.direction, connectionHandle: handle, bytes: bytes,
                            pdu: try? ATTPDU(decoding: bytes))
        records.append(record)
        for o in observers { o(record) }
    }
}

import HCI
import Transport

/// Turns the packets of a pcap or pcapng file into `CaptureFile` packets (H4 frame, direction,
/// time), by link type:
///
/// - 201 BLUETOOTH_HCI_H4_WITH_PHDR: the direction header says it (bit 0 set: received by the host).
/// - 254 BLUETOOTH_LINUX_MONITOR: the monitor opcode says type and direction, as btsnoop 2001;
///   records that carry no HCI packet (new/delete index, notes, management) are skipped. Each
///   packet keeps its controller index; the import reads one controller
///   (`CaptureFile.select(controller:)`, `blelab import --controller N`).
/// - 187 BLUETOOTH_HCI_H4: no direction in the file. Commands are host → controller and events
///   controller → host by their type. ACL packets are placed by what they carry: the first
///   fragment of an ATT PDU (L2CAP channel 0x0004) by its opcode — requests, commands and the
///   confirmation go client → server, responses, notifications and indications server → client
///   (Core Spec Vol 3, Part F, 3.3 and 3.4.8) — with the capturing host as the client on a
///   connection its LE Connection Complete shows as central and as the server where it shows
///   peripheral; where the capture shows no connection event, the host is taken to be the client
///   (a phone's capture; `CaptureFile.assumedClientHandles` lists those handles). A continuation
///   fragment goes the way of the start fragment before it on its handle. Every other ACL packet
///   (L2CAP signaling, SMP, an unknown opcode) and SCO/ISO cannot be placed: it is left out and
///   listed in `CaptureFile.undirectedRecords`, which the import reports under "Not reproduced".
public enum PcapHCI {
    /// `strict: false`: a packet too short for its link type's header is skipped and listed in
    /// `CaptureFile.skipped` instead of ending the import.
    public static func captureFile(_ file: PcapFile, strict: Bool = true) throws -> CaptureFile {
        var skipped: [SkippedRecord] = []
        var packets: [CaptureFile.Packet] = []
        var undirected: [Int] = []
        var assumed: Set<UInt16> = []
        var hostIsCentral: [UInt16: Bool] = [:]
        var lastStart: [UInt16: HCIDirection] = [:]
        var lastTime: Int64?
        let origin = file.packets.first { $0.unixMicroseconds != nil }?.unixMicroseconds ?? 0

        for packet in file.packets {
            let linkType = packet.linkType
            if linkType.isAir { throw PcapError.airCapture(linkType, record: packet.number, at: packet.offset) }
            guard linkType.isHCI else { throw PcapError.unsupportedLinkType(linkType, record: packet.number, at: packet.offset) }
            // A Simple Packet Block has no time: it is taken at the previous packet's.
            let absolute = packet.unixMicroseconds ?? lastTime ?? origin
            lastTime = absolute
            let (time, overflow) = absolute.subtractingReportingOverflow(origin)
            let data = packet.data
            /// Strict: the error; else the packet is listed as skipped.
            func tooShort(_ needed: Int) throws {
                if strict { throw PcapError.truncatedLinkHeader(linkType, record: packet.number, length: data.count, needed: needed, at: packet.offset) }
                skipped.append(SkippedRecord(record: packet.number, offset: packet.offset, outcome: .skipped,
                                             reason: "\(data.count) octets, too short for link type \(linkType)'s header (needs \(needed))"))
            }
            let frame: [UInt8]
            var direction: HCIDirection?
            var controller: UInt16?
            switch linkType {
            case .bluetoothHCIH4WithPHDR:
                guard data.count >= 5 else {
                    try tooShort(5)
                    continue
                }
                direction = data[3] & 0x01 != 0 ? .controllerToHost : .hostToController
                frame = Array(data[4...])
            case .bluetoothLinuxMonitor:
                guard data.count >= 4 else {
                    try tooShort(4)
                    continue
                }
                let index = UInt16(data[0]) << 8 | UInt16(data[1])
                let opcode = BTSnoopMonitorOpcode(rawValue: UInt16(data[2]) << 8 | UInt16(data[3]))
                guard let (type, carried) = opcode.hciPacket else { continue }
                controller = index
                direction = carried
                frame = [type.rawValue] + data[4...]
            default:   // 187
                guard data.count >= 1 else {
                    try tooShort(1)
                    continue
                }
                frame = data
                direction = h4Direction(frame, hostIsCentral: &hostIsCentral, lastStart: &lastStart, assumed: &assumed)
            }
            guard let direction else {
                undirected.append(packet.number)
                continue
            }
            packets.append(CaptureFile.Packet(record: packet.number, offset: packet.offset, time: overflow ? 0 : time,
                                              direction: direction, frame: frame,
                                              missingOctets: max(0, packet.originalLength - data.count), controller: controller))
        }
        let format: CaptureFile.Format
        switch file.kind {
        case let .pcap(_, nanoseconds): format = .pcap(linkType: file.linkTypes.first ?? PcapLinkType(rawValue: 0), nanoseconds: nanoseconds)
        case .pcapng: format = .pcapng(linkTypes: file.linkTypes)
        }
        var capture = CaptureFile(format: format, recordCount: file.packets.count, packets: packets)
        capture.undirectedRecords = undirected
        capture.assumedClientHandles = assumed.sorted()
        capture.skipped = skipped
        capture.smoothClock()
        return capture
    }

    /// Link type 187: the direction of an H4 frame, as far as the frame and the connection events
    /// before it tell (see the type's documentation). Nil when it cannot be told.
    static func h4Direction(_ frame: [UInt8], hostIsCentral: inout [UInt16: Bool], lastStart: inout [UInt16: HCIDirection],
                            assumed: inout Set<UInt16>) -> HCIDirection? {
        switch H4PacketType(rawValue: frame[0]) {
        case .command:
            return .hostToController
        case .event:
            // LE Connection Complete (0x01), LE Enhanced Connection Complete v1 (0x0A) and v2 (0x29):
            // subevent, status, handle (2), role (0 central, 1 peripheral) (Core Spec Vol 4, Part E, 7.7.65).
            if frame.count >= 8, frame[1] == 0x3E, [0x01, 0x0A, 0x29].contains(frame[3]), frame[4] == 0 {
                let handle = (UInt16(frame[5]) | UInt16(frame[6]) << 8) & 0x0FFF
                hostIsCentral[handle] = frame[7] == 0
            }
            return .controllerToHost
        case .acl:
            guard frame.count >= 5 else { return nil }
            let handle = (UInt16(frame[1]) | UInt16(frame[2]) << 8) & 0x0FFF
            let boundary = (frame[2] >> 4) & 0x03
            if boundary == 0x01 { return lastStart[handle] }   // continuing fragment (Vol 4, Part E, 5.4.2)
            // Basic L2CAP header: length (2), channel (2), then the ATT opcode (Vol 3, Part A, 3.1).
            guard frame.count >= 10, frame[7] == 0x04, frame[8] == 0x00, let fromClient = attFromClient(frame[9]) else {
                lastStart[handle] = nil
                return nil
            }
            let hostIsClient: Bool
            if let central = hostIsCentral[handle] {
                hostIsClient = central
            } else {
                hostIsClient = true
                assumed.insert(handle)
            }
            let direction: HCIDirection = fromClient == hostIsClient ? .hostToController : .controllerToHost
            lastStart[handle] = direction
            return direction
        default:
            return nil
        }
    }

    /// Whether an ATT opcode is sent by the client (true) or the server (false); nil when unknown
    /// (Core Spec Vol 3, Part F, 3.4.8, Table 3.37).
    static func attFromClient(_ opcode: UInt8) -> Bool? {
        switch opcode {
        case 0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x1E, 0x20, 0x52, 0xD2: return true
        case 0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x1B, 0x1D, 0x21, 0x23: return false
        default: return nil
        }
    }
}

import BLERuntime
import BLEWire
import HCI
import Transport

/// The host side of HCI: sends commands within the controller's command credits, matches
/// Command Complete/Status to them, sends ACL data within the controller's LE buffer credits
/// (fragmenting L2CAP PDUs), reassembles incoming ACL fragments into L2CAP PDUs, and hands
/// other events up. Core 5.4, Vol 4, Part E, 4 (flow control) and 5.4 (packet formats).
public final class HCIDriver {
    public let loop: EventLoop
    public let transport: HCITransport

    /// Events other than Command Complete/Status and Number Of Completed Packets.
    public var onEvent: ((HCIEvent) -> Void)?
    /// One whole L2CAP basic frame received on `handle`.
    public var onL2CAPFrame: ((_ handle: UInt16, _ frame: L2CAPBasicFrame) -> Void)?
    /// Something from the controller that could not be used: a malformed packet, broken
    /// fragmentation of the peer's L2CAP PDUs. Always `HostError.violation` with the layer
    /// (`hci`, `l2cap`), the kind and the octets. The packet is dropped; the driver goes on.
    public var onProtocolError: ((HostError) -> Void)?
    /// The transport closed: everything pending has failed.
    public var onTransportClosed: ((TransportError) -> Void)?
    /// Called each time an ACL fragment goes to the controller, with its connection handle and
    /// how many fragments of that connection still wait in the host. A sender that held back
    /// because the queue was full (CoreBluetooth's `canSendWriteWithoutResponse`) waits for this.
    public var onACLSent: ((_ handle: UInt16, _ stillQueued: Int) -> Void)?

    /// How long to wait for Command Complete/Status (BlueZ uses 2 s).
    public var commandTimeout: TimeSpan = .seconds(2)

    // MARK: Commands
    private struct PendingCommand {
        let command: HCICommand
        let completion: (Result<CommandResult, HostError>) -> Void
    }
    private var commandQueue: [PendingCommand] = []
    private var commandQueueHead = 0
    private var inFlight: PendingCommand?
    private var commandCredits = 1
    private var commandTimer: LoopTimer?
    /// Every command's timeout task: one closure made once (a lab of thousands of devices sends
    /// a dozen commands each while it powers on).
    private lazy var commandTimeoutTask: () -> Void = { [weak self] in self?.commandTimedOut() }

    // MARK: ACL
    /// LE_ACL_Data_Packet_Length and Total_Num_LE_ACL_Data_Packets from LE Read Buffer Size.
    public private(set) var aclPacketLength = 27
    public private(set) var aclBufferCount = 0
    private var aclCredits = 0
    /// Packets sent but not yet reported completed, per handle.
    private var unacknowledged: [UInt16: Int] = [:]
    private var outbound: [UInt16: FIFO<[UInt8]>] = [:]
    /// Handles with queued fragments, in round-robin order.
    private var readyHandles: [UInt16] = []
    /// Incoming fragments per connection handle (HCI's L2CAPReassembler).
    private var reassembly = L2CAPReassembler<UInt16>()
    public private(set) var closed: TransportError?

    /// Number of ACL fragments currently queued (not yet given to the controller) for `handle`.
    public func queuedFragments(for handle: UInt16) -> Int { outbound[handle]?.count ?? 0 }

    public init(loop: EventLoop, transport: HCITransport) {
        self.loop = loop
        self.transport = transport
        // Weak: the controller side may outlive the host and still have frames on the way.
        transport.onFrame = { [weak self] frame in self?.receive(frame) }
        transport.onClose = { [weak self] error in self?.transportClosed(error) }
    }

    // MARK: Sending commands

    /// Sends `command` when a command credit is available. `completion` gets the Command Complete
    /// return parameters, or the Command Status for commands answered that way; a non-success
    /// status is a `.command` error.
    public func send(_ command: HCICommand, completion: @escaping (Result<CommandResult, HostError>) -> Void = { _ in }) {
        if let closed {
            completion(.failure(.transport(closed)))
            return
        }
        commandQueue.append(PendingCommand(command: command, completion: completion))
        pumpCommands()
    }

    private func pumpCommands() {
        while inFlight == nil, commandCredits > 0, commandQueueHead < commandQueue.count {
            let next = commandQueue[commandQueueHead]
            commandQueueHead += 1
            if commandQueueHead == commandQueue.count {
                commandQueue.removeAll(keepingCapacity: true)
                commandQueueHead = 0
            }
            inFlight = next
            commandCredits -= 1
            commandTimer = loop.schedule(after: commandTimeout, commandTimeoutTask)
            transport.send(next.command.h4Frame)
        }
    }

    private func commandTimedOut() {
        guard let pending = inFlight else { return }
        inFlight = nil
        // Like BlueZ: assume the controller lost it and allow the next command.
        commandCredits = 1
        pending.completion(.failure(.commandTimeout(pending.command.opcode)))
        pumpCommands()
    }

    private func completeCommand(opcode: HCIOpcode, credits: UInt8, result: Result<CommandResult, HostError>) {
        commandCredits = Int(credits)
        guard let pending = inFlight, pending.command.opcode == opcode else {
            // Unsolicited (e.g. the NOP opcode 0x0000 announcing credits) or a stale answer.
            pumpCommands()
            return
        }
        inFlight = nil
        commandTimer?.cancel()
        commandTimer = nil
        pending.completion(result)
        pumpCommands()
    }

    // MARK: Sending ACL data

    /// Called once LE Read Buffer Size has answered.
    public func setLEBuffers(packetLength: Int, count: Int) {
        aclPacketLength = max(1, packetLength)
        aclBufferCount = count
        aclCredits = count
    }

    /// Queues one L2CAP PDU (basic header included) for `handle`, fragmented to the controller's
    /// buffer size: the first fragment with PB 0b00, the rest 0b01 (Vol 4 Part E 5.4.2).
    public func sendL2CAP(handle: UInt16, pdu: [UInt8]) {
        guard closed == nil else { return }
        let wasEmpty = outbound[handle]?.isEmpty ?? true
        var offset = 0
        var boundary = PacketBoundary.firstNonFlushable
        repeat {
            let end = min(pdu.count, offset + aclPacketLength)
            var w = ByteWriter(capacity: 5 + end - offset)
            HCIACLData(handle: handle, boundary: boundary, data: []).encodeHeaderH4(length: end - offset, into: &w)
            w.write(bytes: pdu[offset..<end])
            outbound[handle, default: FIFO()].append(w.bytes)
            offset = end
            boundary = .continuing
        } while offset < pdu.count
        if wasEmpty { readyHandles.append(handle) }
        pumpACL()
    }

    private func pumpACL() {
        while aclCredits > 0, !readyHandles.isEmpty {
            let handle = readyHandles.removeFirst()
            guard let frame = outbound[handle]?.popFirst() else { continue }
            let stillQueued = outbound[handle]?.count ?? 0
            aclCredits -= 1
            unacknowledged[handle, default: 0] += 1
            if stillQueued > 0 { readyHandles.append(handle) }
            transport.send(frame)
            onACLSent?(handle, stillQueued)
        }
    }

    /// Forgets a connection: its queued fragments are dropped and, as Vol 4 Part E 4.3 says, the
    /// buffers it held in the controller count as freed. A PDU the peer began and never finished
    /// is reported (`incomplete-frame`) and discarded.
    public func connectionClosed(handle: UInt16) {
        aclCredits += unacknowledged.removeValue(forKey: handle) ?? 0
        aclCredits = min(aclCredits, aclBufferCount)
        outbound[handle] = nil
        readyHandles.removeAll { $0 == handle }
        if let unfinished = reassembly.discard(handle) {
            report(.l2cap, .incompleteFrame, handle: handle, octets: unfinished,
                   "the link ended with an L2CAP PDU unfinished (\(unfinished.count) octets of \(Self.expectedLength(unfinished).map(String.init) ?? "?")); discarded")
        }
        pumpACL()
    }

    private func report(_ layer: ProtocolViolation.Layer, _ kind: ProtocolViolation.Kind, handle: UInt16?,
                        octets: [UInt8], _ detail: String) {
        onProtocolError?(.violation(ProtocolViolation(layer: layer, kind: kind, handle: handle, detail: detail,
                                                      octets: Array(octets.prefix(ProtocolViolation.octetLimit)))))
    }

    /// The whole PDU's size by its basic header (4 + Length), once the Length is there.
    static func expectedLength(_ buffer: [UInt8]) -> Int? { L2CAPBasicFrame.expectedSize(buffer) }

    // MARK: Receiving

    private func receive(_ frame: [UInt8]) {
        guard let indicator = frame.first else { return }
        switch indicator {
        case H4PacketType.event.rawValue:
            do {
                handle(try HCIEvent(decoding: frame, from: 1))
            } catch {
                report(.hci, .malformedPacket, handle: nil, octets: frame, "event [\(frame.prefix(16).spacedHex)]: \(error)")
            }
        case H4PacketType.acl.rawValue:
            do {
                receiveACL(try HCIACLData(decoding: frame, from: 1))
            } catch {
                let handle = frame.count >= 3 ? (UInt16(frame[1]) | UInt16(frame[2]) << 8) & 0x0FFF : nil
                report(.hci, .malformedPacket, handle: handle, octets: frame, "ACL [\(frame.prefix(16).spacedHex)]: \(error)")
            }
        default:
            report(.hci, .unexpectedPacketType, handle: nil, octets: frame,
                   "unexpected H4 packet type 0x\(String(indicator, radix: 16)) from the controller")
        }
    }

    private func handle(_ event: HCIEvent) {
        switch event {
        case let .commandComplete(cc):
            let result: Result<CommandResult, HostError>
            if let status = cc.status, !status.isSuccess {
                result = .failure(.command(cc.opcode, status))
            } else {
                result = .success(CommandResult(opcode: cc.opcode, returnParameters: cc.returnParameters))
            }
            completeCommand(opcode: cc.opcode, credits: cc.numHCICommandPackets, result: result)
        case let .commandStatus(cs):
            let result: Result<CommandResult, HostError> = cs.status.isSuccess
                ? .success(CommandResult(opcode: cs.opcode, returnParameters: [cs.status.rawValue]))
                : .failure(.command(cs.opcode, cs.status))
            completeCommand(opcode: cs.opcode, credits: cs.numHCICommandPackets, result: result)
        case let .numberOfCompletedPackets(list):
            for entry in list {
                let outstanding = unacknowledged[entry.handle] ?? 0
                let n = min(Int(entry.count), outstanding)
                if n < Int(entry.count) {
                    report(.hci, .completedPacketsOvercount, handle: entry.handle, octets: [],
                           "Number Of Completed Packets reports \(entry.count) for handle 0x\(String(entry.handle, radix: 16)) with \(outstanding) outstanding")
                }
                if n > 0 {
                    unacknowledged[entry.handle] = outstanding - n
                    aclCredits += n
                }
            }
            pumpACL()
        default:
            onEvent?(event)
        }
    }

    /// Reassembles L2CAP PDUs from ACL fragments using the basic header's length
    /// (Vol 3 Part A 7.2). Broken sequences are reported and dropped, never fatal:
    /// - a continuing fragment with nothing begun: `unexpected-continuation`;
    /// - a start while a PDU is unfinished: the unfinished one is `incomplete-frame`;
    /// - more octets than the basic header's Length: `frame-length-mismatch`;
    /// - PB 0b11 (a complete L2CAP PDU, BR/EDR only; Vol 4 Part E 5.4.2): `invalid-packet-boundary`.
    private func receiveACL(_ acl: HCIACLData) {
        let handle = acl.handle
        let outcome = reassembly.feed(acl.data, boundary: acl.boundary, stream: handle)
        if let unfinished = outcome.droppedUnfinished {
            report(.l2cap, .incompleteFrame, handle: handle, octets: unfinished,
                   "new L2CAP PDU started on handle 0x\(String(handle, radix: 16)) before the previous one was complete "
                   + "(\(unfinished.count) octets of \(Self.expectedLength(unfinished).map(String.init) ?? "?")); previous dropped")
        }
        switch outcome.problem {
        case nil:
            if let frame = outcome.frame { onL2CAPFrame?(handle, frame) }
        case let .continuationWithoutStart(octets):
            report(.l2cap, .unexpectedContinuation, handle: handle, octets: octets,
                   "continuing ACL fragment on handle 0x\(String(handle, radix: 16)) without a start; dropped")
        case let .invalidBoundary(boundary, octets):
            report(.hci, .invalidPacketBoundary, handle: handle, octets: octets,
                   "ACL packet boundary \(boundary) is not used on LE; dropped")
        case let .longerThanLength(octets, expected):
            report(.l2cap, .frameLengthMismatch, handle: handle, octets: octets,
                   "L2CAP PDU on handle 0x\(String(handle, radix: 16)) longer (\(octets.count)) than its header says (\(expected)); dropped")
        }
    }

    private func transportClosed(_ error: TransportError) {
        guard closed == nil else { return }
        closed = error
        commandTimer?.cancel()
        let pending = (inFlight.map { [$0] } ?? []) + commandQueue[commandQueueHead...]
        inFlight = nil
        commandQueue.removeAll()
        commandQueueHead = 0
        outbound.removeAll()
        readyHandles.removeAll()
        for p in pending { p.completion(.failure(.transport(error))) }
        onTransportClosed?(error)
    }
}

/// What a command returned: Command Complete's return parameters, or `[status]` from Command Status.
public struct CommandResult: Equatable {
    public let opcode: HCIOpcode
    public let returnParameters: [UInt8]

    public func decode<T: ReturnParameters>(_ type: T.Type) throws -> T {
        try T(decoding: returnParameters)
    }
}

extension HCIACLData {
    /// Writes the H4 indicator and ACL header for a payload of `length` octets.
    func encodeHeaderH4(length: Int, into w: inout ByteWriter) {
        w.write(H4PacketType.acl.rawValue)
        w.writeUInt16LE(handle | UInt16(boundary.rawValue) << 12 | UInt16(broadcast) << 14)
        w.writeUInt16LE(UInt16(truncatingIfNeeded: length))
    }
}

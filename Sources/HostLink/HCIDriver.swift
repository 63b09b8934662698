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
    /// Run only by `commandTimer`, which `deinit` cancels.
    private lazy var commandTimeoutTask: () -> Void = { [unowned(unsafe) self] in self.commandTimedOut() }

    // MARK: ACL
    /// LE_ACL_Data_Packet_Length and Total_Num_LE_ACL_Data_Packets from LE Read Buffer Size.
    public private(set) var aclPacketLength = 27
    public private(set) var aclBufferCount = 0
    private var aclCredits = 0
    /// One connection handle's outgoing ACL state: fragments waiting for a controller buffer,
    /// and packets sent but not yet reported completed. A class, so that each packet costs one
    /// table look-up (none while the same handle keeps sending: `lastQueue`).
    private final class ACLQueue {
        var fragments = FIFO<[UInt8]>()
        var unacknowledged = 0
    }
    private var queues: [UInt16: ACLQueue] = [:]
    /// The queue used last and its handle (a link's traffic comes in runs).
    private var lastHandle: UInt16 = 0xFFFF
    private var lastQueue: ACLQueue?
    /// Handles with queued fragments, in round-robin order.
    private var readyHandles: [UInt16] = []
    /// Incoming fragments per connection handle (HCI's L2CAPReassembler).
    private var reassembly = L2CAPReassembler<UInt16>()
    public private(set) var closed: TransportError?

    /// Number of ACL fragments currently queued (not yet given to the controller) for `handle`.
    public func queuedFragments(for handle: UInt16) -> Int { existingQueue(handle)?.fragments.count ?? 0 }

    @inline(__always)
    private func existingQueue(_ handle: UInt16) -> ACLQueue? {
        if handle == lastHandle, let lastQueue { return lastQueue }
        guard let queue = queues[handle] else { return nil }
        lastHandle = handle
        lastQueue = queue
        return queue
    }

    @inline(__always)
    private func queue(_ handle: UInt16) -> ACLQueue {
        if let queue = existingQueue(handle) { return queue }
        let queue = ACLQueue()
        queues[handle] = queue
        lastHandle = handle
        lastQueue = queue
        return queue
    }

    /// Forgets `handle`'s queue (its fragments and its unacknowledged count).
    private func removeQueue(_ handle: UInt16) -> ACLQueue? {
        if handle == lastHandle {
            lastHandle = 0xFFFF
            lastQueue = nil
        }
        return queues.removeValue(forKey: handle)
    }

    public init(loop: EventLoop, transport: HCITransport) {
        self.loop = loop
        self.transport = transport
        // The transport may outlive the driver and still have frames on the way, or close:
        // `deinit` takes these closures back, so they never run after the driver is gone. Not
        // weak references: with one, every retain of the driver (one per frame) would take the
        // slow path through a side table, besides the load itself.
        transport.onFrame = { [unowned(unsafe) self] frame in self.receive(frame) }
        transport.onClose = { [unowned(unsafe) self] error in self.transportClosed(error) }
    }

    deinit {
        transport.onFrame = nil
        transport.onClose = nil
        commandTimer?.cancel()
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
        let queue = queue(handle)
        let wasEmpty = queue.fragments.isEmpty
        var offset = 0
        var boundary = PacketBoundary.firstNonFlushable
        repeat {
            let end = min(pdu.count, offset + aclPacketLength)
            var w = ByteWriter(capacity: 5 + end - offset)
            HCIACLData.encodeHeaderH4(handle: handle, boundary: boundary, length: end - offset, into: &w)
            w.write(bytes: pdu[offset..<end])
            queue.fragments.append(w.bytes)
            offset = end
            boundary = .continuing
        } while offset < pdu.count
        if wasEmpty { readyHandles.append(handle) }
        pumpACL()
    }

    /// Queues the basic frame of `payload` on channel `channel` for `handle`: the same fragments
    /// as `sendL2CAP(handle:pdu:)` of `L2CAPBasicFrame(channel:payload:).encoded`, written
    /// straight into them (Vol 3 Part A 3.1; Vol 4 Part E 5.4.2), without the frame in between.
    public func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8]) {
        guard closed == nil else { return }
        let queue = queue(handle)
        let wasEmpty = queue.fragments.isEmpty
        let header = L2CAPBasicFrame.headerSize
        let total = header + payload.count
        let length = UInt16(truncatingIfNeeded: payload.count)
        if total <= aclPacketLength {
            // One fragment (PB 0b00), every octet written once into its final place.
            let size = 5 + total
            let aclHeader = handle & 0x0FFF
            let frame = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                buffer[0] = H4PacketType.acl.rawValue
                buffer[1] = UInt8(truncatingIfNeeded: aclHeader)
                buffer[2] = UInt8(truncatingIfNeeded: aclHeader >> 8)
                buffer[3] = UInt8(truncatingIfNeeded: total)
                buffer[4] = UInt8(truncatingIfNeeded: total >> 8)
                buffer[5] = UInt8(truncatingIfNeeded: length)
                buffer[6] = UInt8(truncatingIfNeeded: length >> 8)
                buffer[7] = UInt8(truncatingIfNeeded: channel)
                buffer[8] = UInt8(truncatingIfNeeded: channel >> 8)
                payload.withUnsafeBufferPointer { source in
                    if let from = source.baseAddress, source.count > 0 {
                        (buffer.baseAddress! + 9).initialize(from: from, count: source.count)
                    }
                }
                initialized = size
            }
            queue.fragments.append(frame)
            if wasEmpty { readyHandles.append(handle) }
            pumpACL()
            return
        }
        // Offsets below are in the whole frame (header, then payload).
        var offset = 0
        var boundary = PacketBoundary.firstNonFlushable
        repeat {
            let end = min(total, offset + aclPacketLength)
            var w = ByteWriter(capacity: 5 + end - offset)
            HCIACLData.encodeHeaderH4(handle: handle, boundary: boundary, length: end - offset, into: &w)
            if offset < header {
                if end >= header {
                    if offset == 0 {
                        w.writeUInt16LE(length)
                        w.writeUInt16LE(channel)
                    } else {
                        // A controller whose buffers hold fewer than four octets splits the header.
                        let octets = [UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: length >> 8),
                                      UInt8(truncatingIfNeeded: channel), UInt8(truncatingIfNeeded: channel >> 8)]
                        w.write(bytes: octets[offset..<header])
                    }
                    if end > header { w.write(bytes: payload[0..<end - header]) }
                } else {
                    let octets = [UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: length >> 8),
                                  UInt8(truncatingIfNeeded: channel), UInt8(truncatingIfNeeded: channel >> 8)]
                    w.write(bytes: octets[offset..<end])
                }
            } else if offset == header, end == total {
                w.write(bytes: payload)
            } else {
                w.write(bytes: payload[offset - header..<end - header])
            }
            queue.fragments.append(w.bytes)
            offset = end
            boundary = .continuing
        } while offset < total
        if wasEmpty { readyHandles.append(handle) }
        pumpACL()
    }

    private func pumpACL() {
        while aclCredits > 0, !readyHandles.isEmpty {
            let handle = readyHandles.removeFirst()
            guard let queue = existingQueue(handle), let frame = queue.fragments.popFirst() else { continue }
            let stillQueued = queue.fragments.count
            aclCredits -= 1
            queue.unacknowledged += 1
            if stillQueued > 0 { readyHandles.append(handle) }
            transport.send(frame)
            onACLSent?(handle, stillQueued)
        }
    }

    /// Forgets a connection: its queued fragments are dropped and, as Vol 4 Part E 4.3 says, the
    /// buffers it held in the controller count as freed. A PDU the peer began and never finished
    /// is reported (`incomplete-frame`) and discarded.
    public func connectionClosed(handle: UInt16) {
        aclCredits += removeQueue(handle)?.unacknowledged ?? 0
        aclCredits = min(aclCredits, aclBufferCount)
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
            if receiveCompletedPackets(frame) { return }
            do {
                handle(try HCIEvent(decoding: frame, from: 1))
            } catch {
                report(.hci, .malformedPacket, handle: nil, octets: frame, "event [\(frame.prefix(16).spacedHex)]: \(error)")
            }
        case H4PacketType.acl.rawValue:
            if receiveWholeFrame(frame) { return }
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

    /// The packet the controller sends most, read in place: a well-formed Number Of Completed
    /// Packets event (Vol 4 Part E 7.7.19), handled as `handle(_:)` handles its decoded form.
    /// False for anything else, which then takes the general decoder (and its error reports).
    @inline(__always)
    private func receiveCompletedPackets(_ frame: [UInt8]) -> Bool {
        let count = frame.count
        guard count >= 4, frame[1] == HCIEvent.Code.numberOfCompletedPackets, Int(frame[2]) == count - 3,
              Int(frame[3]) * 4 == count - 4 else { return false }
        var i = 4
        while i < count {
            completed(handle: UInt16(frame[i]) | UInt16(frame[i + 1]) << 8, count: UInt16(frame[i + 2]) | UInt16(frame[i + 3]) << 8)
            i += 4
        }
        pumpACL()
        return true
    }

    /// The ACL packet a host receives most, read in place: a start fragment (PB 0b00 or 0b10)
    /// holding exactly one whole basic frame while no PDU is being reassembled. The frame handed
    /// up is the one `receiveACL(_:)` would build, with one copy of the payload instead of two.
    /// False for anything else, which then takes the general path (and its error reports).
    @inline(__always)
    private func receiveWholeFrame(_ frame: [UInt8]) -> Bool {
        let count = frame.count
        guard count >= 9, reassembly.isEmpty else { return false }
        let header = UInt16(frame[1]) | UInt16(frame[2]) << 8
        let boundary = header >> 12 & 0x3
        guard boundary == 0b00 || boundary == 0b10, Int(frame[3]) | Int(frame[4]) << 8 == count - 5,
              Int(frame[5]) | Int(frame[6]) << 8 == count - 9 else { return false }
        let channel = UInt16(frame[7]) | UInt16(frame[8]) << 8
        onL2CAPFrame?(header & 0x0FFF, L2CAPBasicFrame(channel: channel, payload: Array(frame[9...])))
        return true
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
            for entry in list { completed(handle: entry.handle, count: entry.count) }
            pumpACL()
        default:
            onEvent?(event)
        }
    }

    /// One handle's entry of Number Of Completed Packets (Vol 4 Part E 7.7.19): its buffers are
    /// the controller's again; more than were outstanding is reported, and only those count.
    private func completed(handle: UInt16, count: UInt16) {
        let queue = existingQueue(handle)
        let outstanding = queue?.unacknowledged ?? 0
        let n = min(Int(count), outstanding)
        if n < Int(count) {
            report(.hci, .completedPacketsOvercount, handle: handle, octets: [],
                   "Number Of Completed Packets reports \(count) for handle 0x\(String(handle, radix: 16)) with \(outstanding) outstanding")
        }
        if n > 0, let queue {
            queue.unacknowledged = outstanding - n
            aclCredits += n
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
        // Queued fragments die with the transport; the unacknowledged counts stay, as before.
        for queue in queues.values { queue.fragments.removeAll() }
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
    /// Writes the H4 indicator and ACL header (BC_Flag 0b00) for a payload of `length` octets.
    @inline(__always)
    static func encodeHeaderH4(handle: UInt16, boundary: PacketBoundary, length: Int, into w: inout ByteWriter) {
        w.write(H4PacketType.acl.rawValue)
        w.writeUInt16LE(handle & 0x0FFF | UInt16(boundary.rawValue) << 12)
        w.writeUInt16LE(UInt16(truncatingIfNeeded: length))
    }
}

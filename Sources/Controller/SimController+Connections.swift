import BLERuntime
import BLEWire
import HCI

// The connection side of the controller's HCI: ACL data from the host (Core 5.4, Vol 4, Part E,
// 5.4.2 and 4.1), Disconnect (7.1.6) and LE Connection Update (7.8.18). The connection events
// themselves are in SimLink.swift.

/// One of a controller's connections: its handle on this controller and which end it is.
struct LinkEntry {
    let handle: UInt16
    let link: SimLink
    let isCentral: Bool
}

extension SimController {
    /// Reasons Disconnect accepts (7.1.6).
    static let allowedDisconnectReasons: Set<UInt8> = [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B]

    /// Event mask bit of Data Buffer Overflow (7.3.1, bit 25).
    static let dataBufferOverflowMaskBit: UInt64 = 1 << 25

    @inline(__always)
    func linkEntry(handle: UInt16) -> LinkEntry? {
        for entry in links where entry.handle == handle { return entry }
        return nil
    }

    /// The lowest connection handle not in use, from 0x0001 (handles are 0x0000–0x0EFF, Part E, 5.4.2).
    func freeHandle() -> UInt16 {
        var handle: UInt16 = 1
        while links.contains(where: { $0.handle == handle }) { handle += 1 }
        return handle
    }

    func removeLink(_ link: SimLink) {
        links.removeAll { $0.link === link }
    }

    // MARK: ACL data from the host

    /// Validates one ACL packet and queues it for its connection's next connection event. See
    /// the type's documentation for what is dropped.
    func receiveACL(_ frame: [UInt8]) {
        guard frame.count >= 5 else {
            counters.aclDroppedMalformed += 1
            return
        }
        let header = UInt16(frame[1]) | UInt16(frame[2]) << 8
        let length = Int(frame[3]) | Int(frame[4]) << 8
        guard length == frame.count - 5 else {
            counters.aclDroppedMalformed += 1
            return
        }
        guard let entry = linkEntry(handle: header & 0x0FFF) else {
            counters.aclDroppedUnknownHandle += 1
            return
        }
        // Host to controller on LE: PB 0b00 (first, non-flushable) or 0b01 (continuing); BC 0b00.
        guard header >> 13 == 0 else {
            counters.aclDroppedBadFlags += 1
            return
        }
        guard length <= model.aclBufferSize else {
            counters.aclDroppedTooLong += 1
            return
        }
        guard aclOutstanding < model.aclBufferCount else {
            counters.aclDroppedBufferOverflow += 1
            if eventMask & Self.dataBufferOverflowMaskBit != 0 {
                sendEvent(.unknown(code: 0x1A, parameters: [0x01]))   // 7.7.26, Link_Type ACL
            } else {
                counters.eventsMasked += 1
            }
            return
        }
        aclOutstanding += 1
        counters.aclFromHost += 1
        entry.link.enqueue(frame, fromCentral: entry.isCentral)
    }

    /// Hands a received data PDU's packet to the host.
    @inline(__always)
    func deliverACL(_ frame: [UInt8]) {
        counters.aclToHost += 1
        sendToHost(frame)
    }

    // MARK: Disconnect

    /// 7.1.6: Command Status; Unknown Connection Identifier (0x02) for a handle that is not
    /// connected, Invalid HCI Command Parameters for a reason the command does not allow, Command
    /// Disallowed while the connection is already being terminated. LL_TERMINATE_IND goes out at
    /// the next connection event after the data the host handed over before it (Vol 6, Part B,
    /// 5.1.3; `SimLink.requestTermination`).
    func disconnect(handle: UInt16, reason: HCIStatus) {
        guard let entry = linkEntry(handle: handle) else {
            sendCommandStatus(.disconnect, .unknownConnectionIdentifier)
            return
        }
        guard Self.allowedDisconnectReasons.contains(reason.rawValue) else {
            sendCommandStatus(.disconnect, .invalidCommandParameters)
            return
        }
        guard entry.link.termination == nil else {
            sendCommandStatus(.disconnect, .commandDisallowed)
            return
        }
        sendCommandStatus(.disconnect, .success)
        entry.link.requestTermination(byCentral: entry.isCentral, reason: reason)
    }

    // MARK: Connection Update

    /// 7.8.18: Command Status; Unknown Connection Identifier for a bad handle, Invalid HCI Command
    /// Parameters for parameters `connectionParametersAreValid` rejects, Command Disallowed while
    /// another update or a termination is in progress on the connection (or its ends are out of
    /// step after a missed instant). On the central, the link layer sends LL_CONNECTION_UPDATE_IND;
    /// on the peripheral it sends LL_CONNECTION_PARAM_REQ, which the central's host answers
    /// (Vol 6, Part B, 5.1.7; SimLink+Procedures.swift). The new interval is
    /// Connection_Interval_Min, as at connection creation.
    func connectionUpdate(_ p: LEConnectionUpdateParameters) {
        guard let entry = linkEntry(handle: p.handle) else {
            sendCommandStatus(.leConnectionUpdate, .unknownConnectionIdentifier)
            return
        }
        guard connectionParametersAreValid(intervalMin: p.intervalMin, intervalMax: p.intervalMax,
                                           latency: p.maxLatency, timeout: p.supervisionTimeout),
              p.minCELength <= p.maxCELength else {
            sendCommandStatus(.leConnectionUpdate, .invalidCommandParameters)
            return
        }
        let link = entry.link
        guard link.update == nil, link.termination == nil, link.desync == nil else {
            sendCommandStatus(.leConnectionUpdate, .commandDisallowed)
            return
        }
        sendCommandStatus(.leConnectionUpdate, .success)
        let parameters = SimLink.Parameters(p)
        if entry.isCentral {
            link.update = .indicationPending(parameters)
            link.scheduleNextEvent()
        } else {
            link.peripheralRequests(parameters)
        }
    }

    // MARK: LE Remote Connection Parameter Request Reply and Negative Reply

    /// 7.8.31: Command Complete with Status and Connection_Handle. Unknown Connection Identifier
    /// for a bad handle, Command Disallowed when the connection has no request waiting for this
    /// host, Invalid HCI Command Parameters for parameters LE Connection Update would refuse.
    func remoteConnectionParameterRequestReply(_ p: LEConnectionUpdateParameters) {
        let opcode = HCIOpcode.leRemoteConnectionParameterRequestReply
        guard let entry = linkEntry(handle: p.handle) else {
            return sendCommandComplete(opcode, ConnectionHandleReturn(status: .unknownConnectionIdentifier, handle: p.handle).encoded)
        }
        guard entry.isCentral, entry.link.isAwaitingCentralHost else {
            return sendCommandComplete(opcode, ConnectionHandleReturn(status: .commandDisallowed, handle: p.handle).encoded)
        }
        guard connectionParametersAreValid(intervalMin: p.intervalMin, intervalMax: p.intervalMax,
                                           latency: p.maxLatency, timeout: p.supervisionTimeout),
              p.minCELength <= p.maxCELength else {
            return sendCommandComplete(opcode, ConnectionHandleReturn(status: .invalidCommandParameters, handle: p.handle).encoded)
        }
        sendCommandComplete(opcode, ConnectionHandleReturn(handle: p.handle).encoded)
        entry.link.centralHostAccepts(SimLink.Parameters(p))
    }

    /// 7.8.32: as the Reply; a Reason of 0x00 (success) is Invalid HCI Command Parameters.
    func remoteConnectionParameterRequestNegativeReply(handle: UInt16, reason: HCIStatus) {
        let opcode = HCIOpcode.leRemoteConnectionParameterRequestNegativeReply
        guard let entry = linkEntry(handle: handle) else {
            return sendCommandComplete(opcode, ConnectionHandleReturn(status: .unknownConnectionIdentifier, handle: handle).encoded)
        }
        guard entry.isCentral, entry.link.isAwaitingCentralHost else {
            return sendCommandComplete(opcode, ConnectionHandleReturn(status: .commandDisallowed, handle: handle).encoded)
        }
        guard !reason.isSuccess else {
            return sendCommandComplete(opcode, ConnectionHandleReturn(status: .invalidCommandParameters, handle: handle).encoded)
        }
        sendCommandComplete(opcode, ConnectionHandleReturn(handle: handle).encoded)
        entry.link.centralHostRejects(reason)
    }
}

extension SimLink.Parameters {
    init(_ p: LEConnectionUpdateParameters) {
        self.init(intervalUnits: p.intervalMin, intervalMaxUnits: p.intervalMax, latency: p.maxLatency, timeoutUnits: p.supervisionTimeout)
    }
}

import BLERuntime
import BLEWire
import HCI

// The fault side of a connection (LinkFaults.swift): loss with link-layer retransmission, added
// latency and jitter, ATT PDUs that vanish, and a radio path that is cut.

/// An ACL packet waiting in a controller for a connection event.
struct QueuedPacket {
    var frame: [UInt8]
    /// The earliest time it may go on air (later than its arrival only under added latency).
    var readyAt: Instant
}

/// What a link remembers per direction for its faults.
struct DirectionState {
    /// Data PDUs of the packet at the head of the queue already acknowledged (under loss).
    var headPDUsAcknowledged = 0
    /// ATT PDUs this side has sent on the connection (start fragments on `L2CAPChannelID.att`).
    var attPDUsSent = 0
    /// The continuation fragments that follow a dropped start fragment are dropped too.
    var droppingContinuations = false
    /// `readyAt` of the latest packet queued, so that jitter never reorders packets.
    var lastReadyAt: Instant = .zero
}

extension SimLink {
    /// The faults both ends have.
    static func faults(central: SimController, peripheral: SimController) -> LinkFaults {
        switch (central.radio.linkFaults, peripheral.radio.linkFaults) {
        case (nil, nil): return .none
        case let (c?, nil): return c
        case let (nil, p?): return p
        case let (c?, p?): return c.combined(with: p)
        }
    }

    /// One end's faults changed: from now on the link follows the new ones, and `drops` count
    /// ATT PDUs from now on.
    func faultsChanged() {
        guard !isClosed else { return }
        faults = Self.faults(central: central, peripheral: peripheral)
        fromCentralState.attPDUsSent = 0
        fromPeripheralState.attPDUsSent = 0
        reachabilityMayHaveChanged()
        scheduleNextEvent()
    }

    /// `SimAir.loseLink`: from now on neither end hears the other, for good.
    func sever() {
        guard !isClosed, !isSevered else { return }
        isSevered = true
        reachabilityMayHaveChanged()
    }

    /// The link's own stream, named after both ends so that no other device's draws move.
    private func stream(_ name: String) -> SeededRandom {
        SeededRandom(seed: air.seed, stream: "\(name)/\(centralAddress)-\(peripheralAddress)/\(createdAt.nanoseconds)")
    }

    /// One transmission attempt: true when it is lost.
    func drawLoss() -> Bool {
        if lossRandom == nil { lossRandom = stream("loss") }
        // 53 random bits as a uniform value in [0, 1).
        let u = Double(lossRandom!.next() >> 11) / Double(1 << 53)
        return u < faults.lossRate
    }

    /// When a packet queued now may go: after `latency` + a uniform 0…`jitter` (whole µs), and
    /// never before the packet queued before it in the same direction.
    func delayedReadyTime(fromCentral: Bool) -> Instant {
        var delay = faults.latency
        let jitterMicros = faults.jitter.nanoseconds / 1000
        if jitterMicros > 0 {
            if jitterRandom == nil { jitterRandom = stream("jitter") }
            delay = delay + .microseconds(jitterRandom!.int(in: 0...jitterMicros))
        }
        var state = fromCentral ? fromCentralState : fromPeripheralState
        let ready = max(loop.now + delay, state.lastReadyAt)
        state.lastReadyAt = ready
        if fromCentral { fromCentralState = state } else { fromPeripheralState = state }
        return ready
    }

    /// Whether `frame` (an ACL packet from the host of that side, PB 0b00 start or 0b01
    /// continuation) belongs to an ATT PDU that `LinkFaults.drops` removes.
    func shouldDrop(_ frame: [UInt8], fromCentral: Bool) -> Bool {
        var state = fromCentral ? fromCentralState : fromPeripheralState
        defer { if fromCentral { fromCentralState = state } else { fromPeripheralState = state } }
        // H4 ACL frame: indicator (1), handle and flags (2), Data_Total_Length (2), then the data.
        let isStart = PacketBoundary(rawValue: frame[2] >> 4) == .firstNonFlushable
        guard isStart else { return state.droppingContinuations }
        state.droppingContinuations = false
        guard L2CAPBasicFrame.header(of: frame, at: 5)?.channel == L2CAPChannelID.att else { return false }
        state.attPDUsSent += 1
        let side: ATTDrop.Side = fromCentral ? .central : .peripheral
        guard let drop = faults.drops.first(where: { $0.from == side && $0.index == state.attPDUsSent }) else { return false }
        state.droppingContinuations = true
        droppedATTPDUs.append(drop)
        air.faultRecord.droppedATTPDUs.append((loop.now, drop, fromCentral ? centralHandle : peripheralHandle))
        air.onFault?(.attPDUDropped(drop, central: central, peripheral: peripheral))
        return true
    }
}

/// A fault taking effect, as `SimAir.onFault` reports it.
public enum FaultEvent {
    /// `LinkFaults.drops` removed an ATT PDU on the connection between the two.
    case attPDUDropped(ATTDrop, central: SimController, peripheral: SimController)
    /// A device walking out of range (`startLeavingRange`) passed the receiver sensitivity.
    case leftRange(SimController, rssi: Int8)
}

/// What faults did on a lab's air, for tests and reports.
public struct FaultRecord: Sendable {
    /// Data PDU transmissions lost to `LinkFaults.lossRate` (each one resent).
    public var lostTransmissions = 0
    /// ATT PDUs removed by `LinkFaults.drops`: when, and on which connection (the sender's handle).
    public var droppedATTPDUs: [(time: Instant, drop: ATTDrop, senderHandle: UInt16)] = []
    public init() {}
}

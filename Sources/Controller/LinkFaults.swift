import BLERuntime
import BLEWire

/// Faults a lab puts on the connections of one device (the field's noisy, slow and lossy links),
/// applied by `SimLink` to data PDUs. Everything is off by default, and a device without faults
/// draws no random numbers, so existing seeded streams (advDelay, RSSI noise) are unchanged.
///
/// - `lossRate`: each transmission of a data PDU is lost with this probability (its own seeded
///   stream per connection). The link layer's acknowledgement scheme (SN/NESN, Core 5.4 Vol 6
///   Part B 4.5.9) resends an unacknowledged PDU, so loss only delays data to later connection
///   events: nothing is lost or reordered. Each attempt takes a slot of the event. A rate of 1
///   means nothing gets through at all: the link is silent and supervision times out (4.5.2).
/// - `latency` and `jitter`: an ACL packet becomes eligible for transmission `latency` plus a
///   uniform draw in 0…`jitter` after its host handed it over (a busy radio scheduler, a slow
///   peer); packets keep their order, so it travels in a later connection event.
/// - `pdusPerEvent`: how many data PDUs each side may send in one connection event on the
///   device's connections (nil: `AirModel.maxPDUsPerEvent`). Not a fault but the capacity of a
///   real pair of controllers, which the connection event's length bounds: phones and modules
///   with long events carry more than the lab's default, and a replayed capture needs as many.
/// - `encryption`: the Encryption Start procedure goes wrong whatever the hosts do
///   (SimLink+Encryption.swift): `.keyMissing` makes the peripheral's link layer refuse with PIN
///   or Key Missing (0x06) without asking its host, as a controller that lost its keys; `.micFailure`
///   makes the central's LL_START_ENC_RSP fail the MIC check, and the peripheral leaves with
///   Connection Terminated due to MIC Failure (0x3D), as when the two keys differ.
/// - `drops`: a fault beyond the specification — the Nth ATT PDU a side sends on a connection is
///   acknowledged by the link layer and then vanishes for good (the sender's host gets Number Of
///   Completed Packets for it; the receiver's host never sees it).
public struct LinkFaults: Hashable, Sendable {
    public var lossRate: Double
    public var latency: TimeSpan
    public var jitter: TimeSpan
    public var drops: [ATTDrop]
    public var pdusPerEvent: Int?
    public var encryption: EncryptionFault?

    /// How an encryption procedure fails (`encryption`).
    public enum EncryptionFault: String, Hashable, Sendable, CaseIterable {
        case keyMissing = "key-missing"
        case micFailure = "mic-failure"
    }

    public init(lossRate: Double = 0, latency: TimeSpan = .zero, jitter: TimeSpan = .zero, drops: [ATTDrop] = [], pdusPerEvent: Int? = nil,
                encryption: EncryptionFault? = nil) {
        self.lossRate = lossRate
        self.latency = latency
        self.jitter = jitter
        self.drops = drops
        self.pdusPerEvent = pdusPerEvent
        self.encryption = encryption
    }

    public static let none = LinkFaults()

    public var isNone: Bool { self == .none }

    /// Nothing but `pdusPerEvent`: the capacity of the sim's connection events, which a real
    /// controller decides itself (so another tier goes without it).
    public var isCapacityOnly: Bool {
        pdusPerEvent != nil && lossRate == 0 && latency == .zero && jitter == .zero && drops.isEmpty && encryption == nil
    }

    /// Both ends' faults on one connection: losses compound, delays add, drops accumulate; the
    /// smaller capacity per event holds.
    func combined(with other: LinkFaults) -> LinkFaults {
        let perEvent = [pdusPerEvent, other.pdusPerEvent].compactMap { $0 }.min()
        return LinkFaults(lossRate: 1 - (1 - lossRate) * (1 - other.lossRate), latency: latency + other.latency,
                          jitter: jitter + other.jitter, drops: drops + other.drops, pdusPerEvent: perEvent,
                          encryption: encryption ?? other.encryption)
    }
}

/// "Drop the `index`-th ATT PDU `from` that side of a connection" (1-based, counted from the
/// connection's start, or from when the faults were set on an open connection).
public struct ATTDrop: Hashable, Sendable, CustomStringConvertible {
    public enum Side: String, Hashable, Sendable {
        case central
        case peripheral
    }

    public var from: Side
    public var index: Int

    public init(from: Side, index: Int) {
        self.from = from
        self.index = index
    }

    public var description: String { "ATT PDU #\(index) from the \(from.rawValue)" }
}

/// A device's RSSI falling at a constant rate (walking away), from `start`.
struct RSSIRamp {
    var start: Instant
    var from: Double
    var dBPerSecond: Double
    var leavesRange: LoopTimer?

    func value(at t: Instant) -> Double {
        from - dBPerSecond * Double((t - start).nanoseconds) / 1e9
    }
}

extension SimAir {
    // MARK: Link faults

    /// Sets the faults on every connection of `controller`, now and later ones.
    public func setLinkFaults(_ faults: LinkFaults, for controller: SimController) {
        var faults = faults
        faults.lossRate = min(1, max(0, faults.lossRate.isNaN ? 0 : faults.lossRate))
        controller.radio.linkFaults = faults.isNone ? nil : faults
        for entry in controller.links { entry.link.faultsChanged() }
    }

    public func linkFaults(of controller: SimController) -> LinkFaults { controller.radio.linkFaults ?? .none }

    /// The connection between `a` and `b` loses its radio path: neither end hears the other any
    /// more (a wall, a microwave oven, a body between them), while both stay powered and keep
    /// advertising and scanning. Both link layers' supervision timers run out (Vol 6 Part B
    /// 4.5.2) and both hosts get Disconnection Complete with Connection Timeout (0x08). Returns
    /// false when the two are not connected.
    @discardableResult
    public func loseLink(between a: SimController, and b: SimController) -> Bool {
        guard let entry = a.links.first(where: { $0.link.central === b || $0.link.peripheral === b }) else { return false }
        entry.link.sever()
        return true
    }

    // MARK: Walking out of range

    /// The RSSI of `controller` starts falling by `dBPerSecond` from its current value. Receivers
    /// hear its PDUs while their readings reach `AirModel.receiverSensitivity` (with noise, the
    /// last ones come and go); once even the strongest reading (RSSI + `rssiNoise`) is below it,
    /// the device is out of range (`setInRange(false)`): scanners stop receiving it and its
    /// connections time out. `setRSSI` or `setInRange(true)` stops the walk; back in range the
    /// device has the RSSI it walked from.
    public func startLeavingRange(_ controller: SimController, dBPerSecond: Double) {
        stopRamp(controller)
        let now = loop.now
        let from = Double(controller.radio.rssi)
        guard dBPerSecond > 0 else { return }
        if controller.radio.walkedFrom == nil { controller.radio.walkedFrom = controller.radio.rssi }
        var ramp = RSSIRamp(start: now, from: from, dBPerSecond: dBPerSecond)
        // Heard while RSSI + noise >= sensitivity, i.e. RSSI >= sensitivity - noise.
        let margin = from - (Double(model.receiverSensitivity) - Double(model.rssiNoise))
        let seconds = max(0, margin) / dBPerSecond
        // The first instant (whole µs) at which no reading reaches the sensitivity any more.
        let at = now + .microseconds(Int64((seconds * 1e6).rounded(.down)) + 1)
        ramp.leavesRange = loop.schedule(at: at) { [weak self, weak controller] in
            guard let self, let controller else { return }
            controller.radio.rssi = Int8(clamping: Int(controller.radio.ramp?.value(at: self.loop.now).rounded(.down) ?? -127))
            controller.radio.ramp = nil
            self.setInRange(false, for: controller)
            self.onFault?(.leftRange(controller, rssi: controller.radio.rssi))
        }
        controller.radio.ramp = ramp
    }

    func stopRamp(_ controller: SimController) {
        guard let ramp = controller.radio.ramp else { return }
        ramp.leavesRange?.cancel()
        controller.radio.rssi = Int8(clamping: Int(ramp.value(at: loop.now).rounded(.down)))
        controller.radio.ramp = nil
    }

    /// The RSSI of `controller` now (following a ramp), before noise.
    func currentRSSI(of controller: SimController) -> Int64 {
        if let ramp = controller.radio.ramp { return Int64(ramp.value(at: loop.now).rounded(.down)) }
        return Int64(controller.radio.rssi)
    }
}

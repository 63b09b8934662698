import BLERuntime
import BLEWire
import HCI

// The advertising state (Core 5.4, Vol 6, Part B, 4.4.2) behind LE Set Advertising Parameters,
// Data, Scan Response Data and Enable (Vol 4, Part E, 7.8.5–7.8.9).
//
// Timing: the first advertising event starts advDelay after the enable; each next one starts
// advInterval + advDelay after the previous one, with advInterval = Advertising_Interval_Min
// (the spec lets the controller pick within [min, max]; the low end gives the fastest discovery)
// and advDelay drawn per event, uniformly in whole microseconds from 0…AirModel.advertisingDelayMax,
// from the device's seeded stream. High duty cycle directed advertising (type 0x01) sends an event
// every 3.75 ms with no advDelay and times out after 1.28 s (Vol 6, Part B, 4.4.2.4.3).

extension SimController {
    /// Spacing of high duty cycle directed advertising events (≤ 3.75 ms, Vol 6, Part B, 4.4.2.4.3).
    static let highDutyInterval = TimeSpan.microseconds(3750)
    /// How long high duty cycle directed advertising lasts (Vol 4, Part E, 7.8.9).
    static let highDutyDuration = TimeSpan.milliseconds(1280)

    /// 7.8.5. Command Disallowed while advertising; ranges as the command's parameter table gives
    /// them. A filter policy that needs the Filter Accept List, which the sim lacks, is
    /// Unsupported Feature or Parameter Value (0x11).
    func setAdvertisingParameters(_ p: LEAdvertisingParameters) -> HCIStatus {
        guard !isAdvertising else { return .commandDisallowed }
        let type = p.advertisingType
        guard type.rawValue <= 0x04, p.ownAddressType.rawValue <= 0x03,
              p.channelMap & 0x07 != 0, p.channelMap <= 0x07, p.filterPolicy <= 0x03 else {
            return .invalidCommandParameters
        }
        if type != .connectableDirectedHighDuty {
            // Intervals are not used for high duty cycle directed advertising.
            guard (0x0020...0x4000).contains(p.intervalMin), (0x0020...0x4000).contains(p.intervalMax),
                  p.intervalMin <= p.intervalMax else { return .invalidCommandParameters }
        }
        if type.isDirected {
            guard p.peerAddressType.rawValue <= 0x01 else { return .invalidCommandParameters }
        } else if p.filterPolicy != 0 {
            return .unsupportedFeatureOrParameterValue
        }
        advertisingParameters = p
        return .success
    }

    /// 7.8.9. Enabling while enabled and disabling while disabled succeed and change nothing.
    /// Own_Address_Type random without a random address is Invalid HCI Command Parameters (0x12).
    func setAdvertisingEnable(_ enable: Bool) -> HCIStatus {
        guard enable else {
            stopAdvertising()
            return .success
        }
        guard !isAdvertising else { return .success }
        guard airAddress(ownAddressType: advertisingParameters.ownAddressType) != nil else {
            return .invalidCommandParameters
        }
        isAdvertising = true
        let now = loop.now
        if advertisingParameters.advertisingType == .connectableDirectedHighDuty {
            advertisingDeadline = now + Self.highDutyDuration
            scheduleAdvertisingEvent(at: now)
        } else {
            advertisingDeadline = .distantFuture
            scheduleAdvertisingEvent(at: now + nextAdvertisingDelay())
        }
        return .success
    }

    func stopAdvertising() {
        isAdvertising = false
        advertisingTimer.cancel()
    }

    /// A connection was created from one of this device's advertising events: advertising is
    /// disabled (7.8.9).
    func advertisingEndedByConnection() {
        stopAdvertising()
    }

    /// advDelay for the next event.
    private func nextAdvertisingDelay() -> TimeSpan {
        let maxMicros = model.advertisingDelayMax.nanoseconds / 1_000
        guard maxMicros > 0 else { return .zero }
        return .microseconds(radio.advertisingRandom.int(in: 0...maxMicros))
    }

    /// The device's one advertising timer, made at its first event and rescheduled for each next
    /// one (a crowd of advertisers runs thousands of events a second).
    private func scheduleAdvertisingEvent(at deadline: Instant) {
        loop.reschedule(advertisingTimer, at: deadline, advertisingTask)
    }

    /// One advertising event: on the air if the device is heard; then the next one is scheduled,
    /// unless the event created a connection.
    func advertisingEvent() {
        guard isAdvertising else { return }
        let now = loop.now
        let p = advertisingParameters
        if now >= advertisingDeadline {
            // High duty cycle directed advertising timed out (7.8.9): LE Connection Complete with
            // Advertising Timeout (0x3C), advertising disabled.
            stopAdvertising()
            sendLEMeta(.connectionComplete(LEConnectionComplete(
                status: .advertisingTimeout, handle: 0, role: .peripheral,
                peer: LEAddress(p.peerAddress, type: p.peerAddressType),
                connectionInterval: 0, supervisionTimeout: 0)), bit: EventMask.leConnectionComplete)
            return
        }
        if let own = airAddress(ownAddressType: p.ownAddressType) {
            let pdu = AdvertisingPDU(
                type: p.advertisingType, advertiser: own,
                target: p.advertisingType.isDirected ? LEAddress(p.peerAddress, type: p.peerAddressType) : nil,
                data: p.advertisingType.isDirected ? [] : advertisingData,
                scanResponse: scanResponseData, channelMap: p.channelMap)
            air.deliverAdvertisingEvent(pdu, from: self)
        }
        guard isAdvertising else { return }
        let next: Instant
        if p.advertisingType == .connectableDirectedHighDuty {
            next = min(now + Self.highDutyInterval, advertisingDeadline)
        } else {
            next = now + TimeSpan.microseconds(Int64(p.intervalMin) * 625) + nextAdvertisingDelay()
        }
        scheduleAdvertisingEvent(at: next)
    }
}

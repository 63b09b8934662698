import BLERuntime
import BLEWire
import HCI

/// The shared medium of a lab: every `SimController` attached to it, the radio state of each device
/// (power, range, RSSI) and the seeded randomness of the air. Advertising events are fanned out
/// here; connection events are carried by `SimLink` objects the air creates when an initiator
/// catches its target's advertising event.
///
/// Single-threaded: everything runs on `loop`. The air keeps its controllers alive (a controller
/// refers back to its air without retaining it), so keep the air alive as long as its controllers.
///
/// Timing choices (each documented where it is made):
/// - advertising events every Advertising_Interval_Min + advDelay (0–10 ms, seeded, whole µs);
///   the event's PDUs go on channels 37, 38, 39 (those enabled) `AirModel.advertisingChannelSpacing`
///   apart, and a scanner or initiator catches the event only on the channel its open scan window
///   listens to then; every PDU of an event (ADV_*, SCAN_REQ/SCAN_RSP, CONNECT_IND) is delivered
///   at the event's start;
/// - a connection is created at the advertising event its initiator answers; its interval is
///   Connection_Interval_Min; its first anchor is 1.25 ms + `AirModel.transmitWindowOffset` later;
/// - data, LL_TERMINATE_IND and LL control PDUs go at the first anchor not earlier than now
///   (with peripheral latency: one the peripheral listens on); an update applies 6 × (latency + 1)
///   events after its LL_CONNECTION_UPDATE_IND, with the instant's old anchor as the new base;
/// - a silent peer times out at (last anchor heard) + supervision timeout.
///
/// Radio: one threshold, `AirModel.receiverSensitivity`. Each PDU's reading is the sender's RSSI
/// plus a seeded noise draw; below the sensitivity it is not received (`receivedReading`,
/// `signalReaches`). A device whose RSSI + noise cannot reach it is not heard at all
/// (`signalCanReach`): scanners and initiators miss it and its connections time out.
///
/// Determinism: time comes only from `loop`; random draws only from `SeededRandom` streams derived
/// from `seed` and each device's public address, so adding a device does not change another
/// device's draws. Same seed, same inputs → same bytes to every host.
public final class SimAir {
    public let loop: EventLoop
    public let seed: UInt64
    public let model: AirModel
    /// What link faults have done so far (LinkFaults.swift).
    public internal(set) var faultRecord = FaultRecord()
    /// Called as each fault takes effect (for timelines).
    public var onFault: ((FaultEvent) -> Void)?
    /// Attached controllers, in attach order (the order ties are broken in).
    public private(set) var controllers: [SimController] = []
    /// Sees every transmission, as a sniffer would (AirObserver.swift); nil: nobody listens.
    public var observer: AirObserver?
    /// Connections made so far: numbers them for `observer`.
    var linksMade = 0
    /// The controllers scanning now and those initiating now, each in attach order: an advertising
    /// event visits only these, so its cost does not grow with the number of devices that merely
    /// advertise (a crowded air of N advertisers costs N events, not N²).
    private var scanners: [SimController] = []
    private var initiators: [SimController] = []
    /// Receivers an advertising event has examined so far (scanners and initiators): the work the
    /// air does per event, which tests check does not depend on how many devices advertise.
    public private(set) var receiversExamined = 0
    /// Advertising events put on the air so far.
    public private(set) var advertisingEvents = 0

    public init(loop: EventLoop, seed: UInt64, model: AirModel = .init()) {
        self.loop = loop
        self.seed = seed
        self.model = model
    }

    func attach(_ controller: SimController) {
        controllers.append(controller)
    }

    /// `controller` started or stopped scanning (`isScanning`) or initiating (`initiating`).
    func listeningChanged(_ controller: SimController) {
        Self.update(&scanners, controller, member: controller.isScanning)
        Self.update(&initiators, controller, member: controller.isInitiating)
    }

    /// Puts `controller` in `list` (kept in attach order: the order receivers draw in) or takes it out.
    private static func update(_ list: inout [SimController], _ controller: SimController, member: Bool) {
        let index = list.firstIndex { $0.attachIndex >= controller.attachIndex } ?? list.count
        let present = index < list.count && list[index] === controller
        if member, !present {
            list.insert(controller, at: index)
        } else if !member, present {
            list.remove(at: index)
        }
    }

    // MARK: Per-device knobs

    /// The RSSI (dBm) receivers measure for `controller`'s transmissions: advertising reports and
    /// Read RSSI on its peers' connections. `AirModel.rssiNoise` is added per reading.
    public func setRSSI(_ dBm: Int8, for controller: SimController) {
        stopRamp(controller)
        controller.radio.walkedFrom = nil
        controller.radio.rssi = dBm
        for entry in controller.links { entry.link.reachabilityMayHaveChanged() }
    }

    /// The RSSI now, following `startLeavingRange` while it runs.
    public func rssi(of controller: SimController) -> Int8 { Int8(clamping: currentRSSI(of: controller)) }

    /// The device stops transmitting and answering anything: its controller loses all state at
    /// once (advertising, scanning, initiating, connections, queued events and data) and its host
    /// gets no more events; commands and data from its host are ignored while off. Its peers stop
    /// hearing it and time out (Vol 6, Part B, 4.5.2).
    public func powerOff(_ controller: SimController) {
        guard controller.radio.isPoweredOn else { return }
        controller.radio.isPoweredOn = false
        controller.dropAllState()
        controller.discardPendingHostFrames()
    }

    /// Powers a device back on. Its controller comes up as after power-up (the state of HCI Reset):
    /// its host must configure it again.
    public func powerOn(_ controller: SimController) {
        controller.radio.isPoweredOn = true
    }

    public func isPoweredOn(_ controller: SimController) -> Bool { controller.radio.isPoweredOn }

    /// Out of range, nothing from or to the device crosses the air: scanners stop seeing it, its
    /// connections go silent and both sides time out unless it comes back within the supervision
    /// timeout, in which case the connections carry on. Back in range, a device that walked away
    /// (`startLeavingRange`) is where it walked from: its RSSI is the one it had before the walk,
    /// never the faded value below the sensitivity.
    public func setInRange(_ inRange: Bool, for controller: SimController) {
        if inRange {
            stopRamp(controller)
            if let from = controller.radio.walkedFrom {
                controller.radio.rssi = from
                controller.radio.walkedFrom = nil
            }
        }
        guard controller.radio.isInRange != inRange else {
            for entry in controller.links { entry.link.reachabilityMayHaveChanged() }
            return
        }
        controller.radio.isInRange = inRange
        for entry in controller.links { entry.link.reachabilityMayHaveChanged() }
    }

    public func isInRange(_ controller: SimController) -> Bool { controller.radio.isInRange }

    // MARK: The medium

    /// Whether a transmission of `sender` reaches `receiver`. The one place a future loss or
    /// distance model decides what crosses the air.
    @inline(__always)
    func canHear(_ receiver: SimController, _ sender: SimController) -> Bool {
        receiver !== sender && receiver.radio.isPoweredOn && sender.radio.isPoweredOn
            && receiver.radio.isInRange && sender.radio.isInRange
    }

    /// One RSSI reading of `transmitter` (dBm), with the model's seeded noise, clamped to the
    /// range HCI can report (−127…+20, Vol 4, Part E, 7.7.65.2).
    func rssiReading(of transmitter: SimController) -> Int8 {
        Int8(min(20, max(-127, noisyRSSI(of: transmitter))))
    }

    /// The RSSI of one PDU of `transmitter`: its RSSI now plus one seeded noise draw.
    private func noisyRSSI(of transmitter: SimController) -> Int64 {
        var value = currentRSSI(of: transmitter)
        if model.rssiNoise > 0 {
            let n = Int64(model.rssiNoise)
            value += transmitter.radio.rssiRandom.int(in: -n...n)
        }
        return value
    }

    /// The reading of one PDU of `transmitter` that a receiver decodes, or nil when it falls below
    /// `AirModel.receiverSensitivity` and is lost. Always draws (the value is reported).
    func receivedReading(of transmitter: SimController) -> Int8? {
        let value = noisyRSSI(of: transmitter)
        guard value >= Int64(model.receiverSensitivity) else { return nil }
        return Int8(min(20, value))
    }

    /// Whether some reading of `transmitter` can reach the sensitivity (RSSI + noise ≥ it): false
    /// means nothing it sends is heard. No draw.
    @inline(__always)
    func signalCanReach(_ transmitter: SimController) -> Bool {
        currentRSSI(of: transmitter) + Int64(model.rssiNoise) >= Int64(model.receiverSensitivity)
    }

    /// Whether the noise decides what of `transmitter` is heard: some readings reach the
    /// sensitivity and some do not.
    @inline(__always)
    func signalIsMarginal(_ transmitter: SimController) -> Bool {
        guard model.rssiNoise > 0 else { return false }
        let rssi = currentRSSI(of: transmitter), n = Int64(model.rssiNoise), floor = Int64(model.receiverSensitivity)
        return rssi - n < floor && rssi + n >= floor
    }

    /// Whether one PDU of `transmitter` is received, when its reading is not reported. Draws the
    /// noise only when it decides (`signalIsMarginal`), so a strong or a silent device draws nothing.
    func signalReaches(_ transmitter: SimController) -> Bool {
        if signalIsMarginal(transmitter) { return receivedReading(of: transmitter) != nil }
        return signalCanReach(transmitter)
    }

    /// Read RSSI on a connection (Vol 4, Part E, 7.5.4): the RSSI of the packets the controller
    /// received, so never below the sensitivity.
    func linkRSSIReading(of transmitter: SimController) -> Int8 {
        max(rssiReading(of: transmitter), model.receiverSensitivity)
    }

    /// Delivers one legacy advertising event (Vol 6, Part B, 4.4.2) of `advertiser` at the current
    /// time: first to every scanner that hears it (in attach order), then to the first initiator
    /// that targets it, which connects. Scan requests and responses are part of the same event.
    /// An initiator needs the advertising PDU (on a channel its scan window listens to, above the
    /// sensitivity) and the advertiser its CONNECT_IND (above the sensitivity too).
    func deliverAdvertisingEvent(_ pdu: AdvertisingPDU, from advertiser: SimController) {
        let now = loop.now
        advertisingEvents += 1
        if observer != nil, sniffable(advertiser) {
            let type: AdvertisingChannelPDU.PDUType
            switch pdu.type.rawValue {
            case 0x00: type = .advInd
            case 0x01, 0x04: type = .advDirectInd
            case 0x02: type = .advScanInd
            default: type = .advNonconnInd
            }
            observe(.advertising(.advertising(type, advertiser: pdu.advertiser, target: pdu.target, data: pdu.data),
                                 rssi: sniffedRSSI(advertiser)))
        }
        receiversExamined += scanners.count
        for receiver in scanners where receiver.isScanning && canHear(receiver, advertiser) {
            receiver.scannerReceives(pdu, from: advertiser, at: now)
        }
        guard pdu.type.isConnectable else { return }
        receiversExamined += initiators.count
        for receiver in initiators where receiver.isInitiating && canHear(receiver, advertiser) {
            if receiver.initiatorAccepts(pdu), receiver.initiatorCatches(pdu, at: now),
               signalReaches(advertiser), signalReaches(receiver) {
                establishConnection(initiator: receiver, advertiser: advertiser, pdu: pdu, at: now)
                return
            }
        }
    }

    /// CONNECT_IND (Vol 6, Part B, 2.3.3.1) sent in reply to `pdu`: both link layers enter the
    /// Connection State now and both hosts get LE Connection Complete (Vol 4, Part E, 7.7.65.1);
    /// the advertiser's advertising ends (Vol 4, Part E, 7.8.9). The connection interval is the
    /// initiator's Connection_Interval_Min; the first anchor point is transmitWindowDelay (1.25 ms)
    /// + transmitWindowOffset after the CONNECT_IND.
    func establishConnection(initiator: SimController, advertiser: SimController, pdu: AdvertisingPDU, at now: Instant) {
        guard let request = initiator.initiating,
              let centralAddress = initiator.airAddress(ownAddressType: request.ownAddressType) else { return }
        initiator.initiating = nil
        advertiser.advertisingEndedByConnection()

        let link = SimLink(air: self, central: initiator, peripheral: advertiser,
                           centralAddress: centralAddress, peripheralAddress: pdu.advertiser,
                           intervalUnits: request.connectionIntervalMin, latency: request.maxLatency,
                           timeoutUnits: request.supervisionTimeout, createdAt: now,
                           firstAnchor: now + .microseconds(1250) + model.transmitWindowOffset,
                           centralHandle: initiator.freeHandle(), peripheralHandle: advertiser.freeHandle())
        linksMade += 1
        link.airNumber = linksMade
        observe(.connectRequest(link: link.airNumber, initiator: centralAddress, advertiser: pdu.advertiser,
                                interval: link.intervalUnits, latency: link.latency, timeout: link.timeoutUnits,
                                windowOffset: UInt16(clamping: model.transmitWindowOffset.nanoseconds / 1_250_000),
                                rssi: sniffedRSSI(initiator)))
        initiator.links.append(LinkEntry(handle: link.centralHandle, link: link, isCentral: true))
        advertiser.links.append(LinkEntry(handle: link.peripheralHandle, link: link, isCentral: false))
        // Ends that cannot hear each other from the start (a link fault of 100% loss) never
        // establish the connection: it fails six intervals on (Vol 6 Part B 4.5.2).
        link.reachabilityMayHaveChanged()

        initiator.sendLEMeta(.connectionComplete(LEConnectionComplete(
            handle: link.centralHandle, role: .central, peer: initiator.reportedAddress(pdu.advertiser),
            connectionInterval: link.intervalUnits, peripheralLatency: link.latency,
            supervisionTimeout: link.timeoutUnits, centralClockAccuracy: 0)),
            bit: EventMask.leConnectionComplete)
        advertiser.sendLEMeta(.connectionComplete(LEConnectionComplete(
            handle: link.peripheralHandle, role: .peripheral, peer: advertiser.reportedAddress(centralAddress),
            connectionInterval: link.intervalUnits, peripheralLatency: link.latency,
            supervisionTimeout: link.timeoutUnits, centralClockAccuracy: model.centralClockAccuracy)),
            bit: EventMask.leConnectionComplete)
    }
}

/// What one legacy advertising event puts on the air (Vol 6, Part B, 2.3.1): the PDU type, AdvA,
/// TargetA for ADV_DIRECT_IND, AdvData, and the ScanRspData a SCAN_REQ would get back.
struct AdvertisingPDU {
    var type: AdvertisingType
    var advertiser: LEAddress
    var target: LEAddress?
    var data: [UInt8]
    var scanResponse: [UInt8]
    /// Advertising_Channel_Map (7.8.5): bit 0 channel 37, bit 1 channel 38, bit 2 channel 39.
    var channelMap: UInt8 = 0x07
}

/// The radio side of one device: what the air needs to know about it.
struct RadioState {
    var isPoweredOn = true
    var isInRange = true
    var rssi: Int8
    /// advDelay draws (Vol 6, Part B, 4.4.2.2.1).
    var advertisingRandom: SeededRandom
    /// RSSI noise draws for this device's transmissions.
    var rssiRandom: SeededRandom
    /// Faults on this device's connections (nil: none).
    var linkFaults: LinkFaults?
    /// The RSSI falling while the device walks out of range.
    var ramp: RSSIRamp?
    /// The RSSI it had when it started walking away: where `setInRange(true)` brings it back.
    var walkedFrom: Int8?
}

import BLERuntime
import BLEWire
import HCI

/// What crossed the sim's air, as a sniffer next to the devices would have seen it: set
/// `SimAir.observer` to receive each transmission as it happens (`AirRecorder` writes them as a
/// pcap). Observing draws nothing from the air's random streams and changes nothing the devices
/// see, so a run with an observer is the same run as without.
public protocol AirObserver: AnyObject {
    func observe(_ transmission: AirTransmission, at time: Instant)
}

/// One transmission on the sim's air. `rssi`: the sender's RSSI (dBm) without the per-reading noise.
public enum AirTransmission: Sendable {
    /// One legacy advertising event's PDU (ADV_IND, ADV_DIRECT_IND, ADV_NONCONN_IND, ADV_SCAN_IND).
    case advertising(AdvertisingChannelPDU, rssi: Int8)
    /// SCAN_REQ of an active scanner, and SCAN_RSP when the advertiser heard it (same event).
    case scanRequest(AdvertisingChannelPDU, rssi: Int8)
    case scanResponse(AdvertisingChannelPDU, rssi: Int8)
    /// CONNECT_IND: a new connection, `link` numbering it for the data that follows. Access address,
    /// CRCInit and hop increment are the observer's to choose (the sim does not model them).
    case connectRequest(link: Int, initiator: LEAddress, advertiser: LEAddress, interval: UInt16, latency: UInt16, timeout: UInt16,
                        windowOffset: UInt16, rssi: Int8)
    /// One ACL packet a side's link layer sent in connection event `event` (the H4 frame its host
    /// gave: the observer splits it into data PDUs of `payloadOctets`), from its PDU `fromPDU` on
    /// (the ones before went out under loss, as `dataAttempt`s).
    case data(link: Int, fromCentral: Bool, aclFrame: [UInt8], payloadOctets: Int, fromPDU: Int, event: Int64, rssi: Int8)
    /// Under loss: one transmission of PDU `index` of an ACL packet; `acknowledged` false when it
    /// was lost (it is sent again, with the same SN).
    case dataAttempt(link: Int, fromCentral: Bool, aclFrame: [UInt8], payloadOctets: Int, index: Int, acknowledged: Bool, event: Int64,
                     rssi: Int8)
    /// An LL control PDU; `acknowledged` false when the peer did not receive it (it is sent again).
    case control(link: Int, fromCentral: Bool, pdu: LLControlPDU, acknowledged: Bool, event: Int64, rssi: Int8)
}

extension SimAir {
    /// Hands `transmission` to the observer, if any, at the current time.
    @inline(__always)
    func observe(_ transmission: @autoclosure () -> AirTransmission) {
        guard let observer else { return }
        observer.observe(transmission(), at: loop.now)
    }

    /// The RSSI a sniffer reads for `controller`: no noise draw.
    func sniffedRSSI(_ controller: SimController) -> Int8 { rssi(of: controller) }

    /// Whether a sniffer hears `controller` at all (powered on and in range).
    func sniffable(_ controller: SimController) -> Bool { controller.radio.isPoweredOn && controller.radio.isInRange }
}

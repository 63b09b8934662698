import BLERuntime

/// The physical and link-layer constants of a simulated air (Core 5.4, Vol 6, Part B), shared by
/// every controller attached to it. Defaults give a legacy LE 1M link as a typical controller runs it.
///
/// Every crossing of the air goes through `SimAir.canHear(_:_:)` (advertising PDUs) or a connection
/// event (data PDUs), so loss, latency and jitter models can later be added here and applied in those
/// two places without touching the controllers' HCI behaviour.
public struct AirModel: Sendable {
    /// Upper bound of advDelay, the pseudo-random delay added to every advertising interval
    /// (Vol 6, Part B, 4.4.2.2.1: 0–10 ms). Drawn per event from the advertiser's seeded stream,
    /// in whole microseconds. Not applied to high duty cycle directed advertising.
    public var advertisingDelayMax: TimeSpan = .milliseconds(10)

    /// Link-layer data PDUs each side may send in one connection event (per connection, per
    /// direction). Real controllers are bounded by the connection event length; this is that bound.
    public var maxPDUsPerEvent: Int = 4

    /// Maximum payload of an LL data PDU (connMaxTxOctets without Data Length Extension, Vol 6,
    /// Part B, 4.5.10). An HCI ACL packet of up to this many octets travels as one PDU.
    public var llDataPayloadOctets: Int = 27

    /// Total_Num_LE_ACL_Data_Packets reported by LE Read Buffer Size (Vol 4, Part E, 7.8.2): how
    /// many ACL packets a controller holds for its host (shared by all its connections) before
    /// Number Of Completed Packets returns credits.
    public var aclBufferCount: Int = 8

    /// LE_ACL_Data_Packet_Length reported by LE Read Buffer Size: the longest ACL packet a host may send.
    public var aclBufferSize: Int = 27

    /// Supervision_Timeout (units of 10 ms) a lab uses when it builds LE Create Connection without
    /// a scenario value. Controllers never use it themselves: they honour the value in the command.
    public var defaultSupervisionTimeout: UInt16 = 0x01F4

    /// T_IFS (Vol 6, Part B, 4.1.1). The current model delivers each advertising event and each
    /// connection event as one batch at the event's start; the latency model to come spaces PDUs by it.
    public var interFrameSpace: TimeSpan = .microseconds(150)

    /// transmitWindowOffset the initiator puts in CONNECT_IND (Vol 6, Part B, 2.3.3.1). The first
    /// anchor point is at the connection's creation + transmitWindowDelay (1.25 ms) + this offset; the
    /// model places the anchor at the start of the transmit window.
    public var transmitWindowOffset: TimeSpan = .zero

    /// Connection events between the one carrying LL_CONNECTION_UPDATE_IND and its instant
    /// (Vol 6, Part B, 5.1.1: the central chooses an instant at least 6 events ahead).
    public var connectionUpdateInstantOffset: Int64 = 6

    /// RSSI scanners and connections see for a device unless `SimAir.setRSSI` says otherwise.
    public var defaultRSSI: Int8 = -60

    /// The weakest signal a receiver decodes (dBm). Only a device walking out of range
    /// (`SimAir.startLeavingRange`) is compared with it: when its falling RSSI passes this value,
    /// nothing it sends is received any more.
    public var receiverSensitivity: Int8 = -100

    /// Half-width of the uniform, seeded noise added to every RSSI reading (± dB; 0 = none).
    public var rssiNoise: Int8 = 0

    /// TX_Power_Level returned by LE Read Advertising Physical Channel Tx Power (Vol 4, Part E, 7.8.6).
    public var advertisingTxPower: Int8 = 0

    /// Sleep clock accuracy the central announces in CONNECT_IND, reported to the peripheral's
    /// host as Central_Clock_Accuracy (Vol 4, Part E, 7.7.65.1). 0x07 = 0–20 ppm: the sim's clocks are exact.
    public var centralClockAccuracy: UInt8 = 0x07

    public init() {}
}

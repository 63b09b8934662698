import BLERuntime

/// The physical and link-layer constants of a simulated air (Core 5.4, Vol 6, Part B), shared by
/// every controller attached to it. Defaults give a legacy LE 1M link as a typical controller runs it.
///
/// Every crossing of the air goes through `SimAir.canHear(_:_:)` (power and range) and the radio
/// threshold (`receiverSensitivity`, with `rssiNoise`): `SimAir.receivedReading` and
/// `signalReaches` for advertising-channel PDUs, `SimLink.physicallyReachable` and its per-PDU
/// loss for a connection.
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

    /// Connection events the peripheral listens to between the one carrying LL_CONNECTION_UPDATE_IND
    /// and its instant. Vol 6, Part B, 5.1.1: the central should allow at least 6 connection events
    /// that the peripheral will be listening for; with peripheral latency L the peripheral need only
    /// listen every L + 1 events, so the instant is this many × (L + 1) events ahead.
    public var connectionUpdateInstantOffset: Int64 = 6

    /// How long a link layer waits for the answer to an LL control procedure it started before it
    /// drops the connection with LL Response Timeout (0x22): 40 s (Vol 6, Part B, 5.2).
    public var procedureResponseTimeout: TimeSpan = .seconds(40)

    /// RSSI scanners and connections see for a device unless `SimAir.setRSSI` says otherwise.
    public var defaultRSSI: Int8 = -60

    /// The weakest signal a receiver decodes (dBm), the one threshold of the radio model: a PDU is
    /// received only when its reading (the sender's RSSI plus the seeded noise drawn for it) is at
    /// least this. It applies to advertising PDUs, scan requests and responses, CONNECT_IND and
    /// every PDU of a connection; a device whose RSSI + `rssiNoise` is below it cannot be heard at
    /// all, so it is not found, not connected, and its connections end by supervision timeout.
    ///
    /// -100 dBm is the sim's choice, not the specification's: Core Vol 6, Part A, 4.1 requires a
    /// receiver sensitivity of -70 dBm or better (LE 1M), and phones and modules commonly reach
    /// -90 to -100 dBm. -100 keeps every ordinary scenario RSSI (-30 … -90 dBm) well inside range
    /// and leaves a walk-away fault room to fade.
    public var receiverSensitivity: Int8 = -100

    /// Half-width of the uniform, seeded noise added to every RSSI reading (± dB; 0 = none).
    public var rssiNoise: Int8 = 0

    /// Time from the start of one advertising PDU of an event to the next, on the next enabled
    /// primary channel (37, then 38, then 39). The specification only bounds it (the PDUs of an
    /// event go back to back, less than 10 ms apart, Vol 6, Part B, 4.4.2); 1 ms is the sim's
    /// choice: a PDU, T_IFS and room for a SCAN_REQ or CONNECT_IND. It decides which channel a
    /// scanner catches an event on (`SimController` scanning); every PDU of the event is still
    /// delivered at the event's start.
    public var advertisingChannelSpacing: TimeSpan = .milliseconds(1)

    /// TX_Power_Level returned by LE Read Advertising Physical Channel Tx Power (Vol 4, Part E, 7.8.6).
    public var advertisingTxPower: Int8 = 0

    /// Sleep clock accuracy the central announces in CONNECT_IND, reported to the peripheral's
    /// host as Central_Clock_Accuracy (Vol 4, Part E, 7.7.65.1). 0x07 = 0–20 ppm: the sim's clocks are exact.
    public var centralClockAccuracy: UInt8 = 0x07

    public init() {}
}

import BLERuntime
import BLEWire
import HCI

// The scanning state (Core 5.4, Vol 6, Part B, 4.4.3) behind LE Set Scan Parameters and Enable
// (Vol 4, Part E, 7.8.10–7.8.11), and the initiating state (Vol 6, Part B, 4.4.4) behind LE Create
// Connection and its Cancel (Vol 4, Part E, 7.8.12–7.8.13).
//
// Channel timing (Vol 6, Part B, 4.4.2 and 4.4.3): an advertising event sends its PDU on each
// enabled primary channel in turn, 37 then 38 then 39, `AirModel.advertisingChannelSpacing`
// apart from the event's start. A scanner (or an initiator) listens in scan window k — from
// start + k × LE_Scan_Interval for LE_Scan_Window — on channel 37 + (k mod 3), a different
// channel each window as the specification recommends; with window = interval it listens all the
// time, changing channel at each interval. It catches the event when one of the event's PDUs goes
// out, on the channel it listens to, inside an open window; at most once per event. (Its reports,
// scan request and response, or CONNECT_IND, are still delivered at the event's start.) Then the
// PDU must be heard: its reading, RSSI plus noise, at or above the receiver sensitivity (SimAir).

extension SimController {
    /// 7.8.10. Command Disallowed while scanning. Scanning_Filter_Policy 0x01 uses the Filter
    /// Accept List (SimController+Lists.swift); 0x02 and 0x03, which concern directed
    /// advertisements to a resolvable private address, are not supported (0x11).
    func setScanParameters(_ p: LEScanParameters) -> HCIStatus {
        guard !isScanning else { return .commandDisallowed }
        guard p.scanType <= 0x01, (0x0004...0x4000).contains(p.interval), (0x0004...0x4000).contains(p.window),
              p.window <= p.interval, p.ownAddressType.rawValue <= 0x03, p.filterPolicy <= 0x03 else {
            return .invalidCommandParameters
        }
        guard p.filterPolicy <= 0x01 else { return .unsupportedFeatureOrParameterValue }
        scanParameters = p
        return .success
    }

    /// 7.8.11. Enabling while enabled only changes Filter_Duplicates; disabling while disabled does
    /// nothing. The duplicate filter starts empty at each enable from the disabled state.
    func setScanEnable(_ enable: Bool, filterDuplicates filter: Bool) -> HCIStatus {
        guard enable else {
            isScanning = false
            return .success
        }
        if isScanning {
            filterDuplicates = filter
            return .success
        }
        guard airAddress(ownAddressType: scanParameters.ownAddressType) != nil else { return .invalidCommandParameters }
        isScanning = true
        filterDuplicates = filter
        reportedDuplicates.removeAll(keepingCapacity: true)
        scanStart = loop.now
        return .success
    }

    /// The primary channel (0, 1, 2 for 37, 38, 39) a device scanning since `start` with
    /// `interval` and `window` (0.625 ms units) listens to at `t`; nil while its window is closed.
    static func listeningChannel(at t: Instant, start: Instant, interval: UInt16, window: UInt16) -> Int64? {
        let elapsed = (t - start).nanoseconds
        guard elapsed >= 0 else { return nil }
        let intervalNs = Int64(max(1, interval)) * 625_000
        guard elapsed % intervalNs < Int64(window) * 625_000 else { return nil }
        return (elapsed / intervalNs) % 3
    }

    /// Whether such a device catches the advertising event that starts at `t0` on `channelMap`:
    /// the PDU on the i-th enabled channel goes at t0 + i × spacing.
    static func catchesEvent(at t0: Instant, channelMap: UInt8, start: Instant, interval: UInt16, window: UInt16,
                             spacing: TimeSpan) -> Bool {
        var slot: Int64 = 0
        for channel in Int64(0)..<3 where channelMap & (1 << UInt8(channel)) != 0 {
            let t = Instant(nanoseconds: t0.nanoseconds + slot * spacing.nanoseconds)
            if listeningChannel(at: t, start: start, interval: interval, window: window) == channel { return true }
            slot += 1
        }
        return false
    }

    /// An advertising event reaches this scanner (Vol 6, Part B, 4.4.3): one LE Advertising Report
    /// per PDU (7.7.65.2), the SCAN_RSP right after the advertising PDU for an active scanner and a
    /// scannable type. ADV_DIRECT_IND is reported only when it is addressed to this device. Each PDU
    /// is heard only above the sensitivity: the advertising PDU, the SCAN_REQ at the advertiser,
    /// the SCAN_RSP.
    func scannerReceives(_ pdu: AdvertisingPDU, from advertiser: SimController, at t: Instant) {
        guard Self.catchesEvent(at: t, channelMap: pdu.channelMap, start: scanStart, interval: scanParameters.interval,
                                window: scanParameters.window, spacing: model.advertisingChannelSpacing) else { return }
        let eventType: AdvertisingReportType
        switch pdu.type {
        case .connectableUndirected: eventType = .advInd
        case .scannableUndirected: eventType = .advScanInd
        case .nonConnectableUndirected: eventType = .advNonconnInd
        case .connectableDirectedHighDuty, .connectableDirectedLowDuty:
            guard let target = pdu.target, target == airAddress(ownAddressType: scanParameters.ownAddressType) else { return }
            eventType = .advDirectInd
        default: return
        }
        // Scanning_Filter_Policy 0x01: only advertisers on the accept list (after resolution).
        if scanParameters.filterPolicy == 0x01, !isAccepted(pdu.advertiser) { return }
        guard let rssi = air.receivedReading(of: advertiser) else { return }
        let sender = reportedAddress(pdu.advertiser)
        report(eventType, sender, data: pdu.data, rssi: rssi)
        guard scanParameters.isActive, pdu.type.isScannable else { return }
        // The same draws, in the same order, as without an observer.
        let requestHeard = air.signalReaches(self)
        if air.observer != nil, let scanner = airAddress(ownAddressType: scanParameters.ownAddressType) {
            air.observe(.scanRequest(.scanRequest(scanner: scanner, advertiser: pdu.advertiser), rssi: air.sniffedRSSI(self)))
            if requestHeard {
                air.observe(.scanResponse(.advertising(.scanRsp, advertiser: pdu.advertiser, data: pdu.scanResponse),
                                          rssi: air.sniffedRSSI(advertiser)))
            }
        }
        if requestHeard, let responseRSSI = air.receivedReading(of: advertiser) {
            report(.scanRsp, sender, data: pdu.scanResponse, rssi: responseRSSI)
        }
    }

    /// The reading was drawn before the duplicate filter and the mask check, so neither shifts later draws.
    private func report(_ type: AdvertisingReportType, _ sender: LEAddress, data: [UInt8], rssi: Int8) {
        if filterDuplicates {
            let key = sender.address.rawValue | UInt64(sender.type.rawValue) << 48 | UInt64(type.rawValue) << 56
            guard reportedDuplicates.insert(key).inserted else { return }
        }
        sendLEMeta(.advertisingReport([LEAdvertisingReport(eventType: type, address: sender, data: data, rssi: rssi)]),
                   bit: EventMask.leAdvertisingReport)
    }

    // MARK: Initiating

    /// 7.8.12: Command Status. Command Disallowed while already initiating; Connection Already
    /// Exists (0x0B) for a peer already connected (Vol 6, Part B, 4.5: one connection per pair).
    /// Initiator_Filter_Policy 0x01 connects to whoever on the Filter Accept List is heard first.
    func createConnection(_ p: LECreateConnectionParameters) -> HCIStatus {
        guard initiating == nil else { return .commandDisallowed }
        guard (0x0004...0x4000).contains(p.scanInterval), (0x0004...0x4000).contains(p.scanWindow),
              p.scanWindow <= p.scanInterval, p.initiatorFilterPolicy <= 0x01,
              p.peerAddressType.rawValue <= 0x03, p.ownAddressType.rawValue <= 0x03,
              connectionParametersAreValid(intervalMin: p.connectionIntervalMin, intervalMax: p.connectionIntervalMax,
                                           latency: p.maxLatency, timeout: p.supervisionTimeout),
              p.minCELength <= p.maxCELength else {
            return .invalidCommandParameters
        }
        guard airAddress(ownAddressType: p.ownAddressType) != nil else { return .invalidCommandParameters }
        let target = Self.onAirPeer(p)
        if p.initiatorFilterPolicy == 0,
           links.contains(where: { ($0.isCentral ? $0.link.peripheralAddress : $0.link.centralAddress) == target }) {
            return .connectionAlreadyExists
        }
        initiating = p
        initiatingStart = loop.now
        return .success
    }

    /// The peer an LE Create Connection targets, as it appears on the air: identity address types
    /// (0x02, 0x03) match public and random addresses, there being no resolving list.
    static func onAirPeer(_ p: LECreateConnectionParameters) -> LEAddress {
        LEAddress(p.peerAddress, type: AddressType(rawValue: p.peerAddressType.rawValue & 0x01))
    }

    /// Whether this initiator connects in reply to `pdu` (Vol 6, Part B, 4.4.4): a connectable PDU
    /// from its target (or, with Initiator_Filter_Policy 0x01, from a device on the accept list it
    /// is not connected to yet); for ADV_DIRECT_IND, addressed to this device.
    func initiatorAccepts(_ pdu: AdvertisingPDU) -> Bool {
        guard let p = initiating, pdu.type.isConnectable else { return false }
        if p.initiatorFilterPolicy == 0x01 {
            guard isAccepted(pdu.advertiser),
                  !links.contains(where: { ($0.isCentral ? $0.link.peripheralAddress : $0.link.centralAddress) == pdu.advertiser }) else {
                return false
            }
        } else if !isTarget(pdu.advertiser, of: p) {
            return false
        }
        if pdu.type.isDirected {
            return pdu.target == airAddress(ownAddressType: p.ownAddressType)
        }
        return true
    }

    /// Whether the initiator's scan (LE_Scan_Interval and LE_Scan_Window of 7.8.12, from when LE
    /// Create Connection was accepted) catches the advertising event at `t` (the channel timing
    /// at the top of this file).
    func initiatorCatches(_ pdu: AdvertisingPDU, at t: Instant) -> Bool {
        guard let p = initiating else { return false }
        return Self.catchesEvent(at: t, channelMap: pdu.channelMap, start: initiatingStart, interval: p.scanInterval,
                                 window: p.scanWindow, spacing: model.advertisingChannelSpacing)
    }

    /// 7.8.13: Command Complete, then LE Connection Complete with Unknown Connection Identifier
    /// (0x02). Command Disallowed when not initiating.
    func createConnectionCancel() {
        guard let p = initiating else {
            sendCommandComplete(.leCreateConnectionCancel, [HCIStatus.commandDisallowed.rawValue])
            return
        }
        initiating = nil
        sendCommandComplete(.leCreateConnectionCancel, [HCIStatus.success.rawValue])
        sendLEMeta(.connectionComplete(LEConnectionComplete(
            status: .unknownConnectionIdentifier, handle: 0, role: .central, peer: Self.onAirPeer(p),
            connectionInterval: 0, supervisionTimeout: 0)), bit: EventMask.leConnectionComplete)
    }
}

import BLERuntime
import BLEWire
import HCI

// The scanning state (Core 5.4, Vol 6, Part B, 4.4.3) behind LE Set Scan Parameters and Enable
// (Vol 4, Part E, 7.8.10–7.8.11), and the initiating state (Vol 6, Part B, 4.4.4) behind LE Create
// Connection and its Cancel (Vol 4, Part E, 7.8.12–7.8.13).
//
// A scanner hears an advertising event when its scan window is open at the event's start:
// (t − scan start) mod LE_Scan_Interval < LE_Scan_Window. An initiator hears every advertising
// event of its target (its scan window is not modelled).

extension SimController {
    /// 7.8.10. Command Disallowed while scanning. Scanning_Filter_Policy values other than 0x00
    /// need the Filter Accept List or privacy, which the sim lacks (0x11).
    func setScanParameters(_ p: LEScanParameters) -> HCIStatus {
        guard !isScanning else { return .commandDisallowed }
        guard p.scanType <= 0x01, (0x0004...0x4000).contains(p.interval), (0x0004...0x4000).contains(p.window),
              p.window <= p.interval, p.ownAddressType.rawValue <= 0x03, p.filterPolicy <= 0x03 else {
            return .invalidCommandParameters
        }
        guard p.filterPolicy == 0 else { return .unsupportedFeatureOrParameterValue }
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

    private func scanWindowIsOpen(at t: Instant) -> Bool {
        let interval = Int64(scanParameters.interval) * 625_000
        let window = Int64(scanParameters.window) * 625_000
        guard window < interval else { return true }
        return (t - scanStart).nanoseconds % interval < window
    }

    /// An advertising event reaches this scanner (Vol 6, Part B, 4.4.3): one LE Advertising Report
    /// per PDU (7.7.65.2), the SCAN_RSP right after the advertising PDU for an active scanner and a
    /// scannable type. ADV_DIRECT_IND is reported only when it is addressed to this device.
    func scannerReceives(_ pdu: AdvertisingPDU, from advertiser: SimController, at t: Instant) {
        guard scanWindowIsOpen(at: t) else { return }
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
        report(eventType, pdu.advertiser, data: pdu.data, from: advertiser)
        if scanParameters.isActive, pdu.type.isScannable {
            report(.scanRsp, pdu.advertiser, data: pdu.scanResponse, from: advertiser)
        }
    }

    private func report(_ type: AdvertisingReportType, _ sender: LEAddress, data: [UInt8], from advertiser: SimController) {
        if filterDuplicates {
            let key = sender.address.rawValue | UInt64(sender.type.rawValue) << 48 | UInt64(type.rawValue) << 56
            guard reportedDuplicates.insert(key).inserted else { return }
        }
        // Drawn before the mask check, so a host's event masks never shift later draws.
        let rssi = air.rssiReading(of: advertiser)
        sendLEMeta(.advertisingReport([LEAdvertisingReport(eventType: type, address: sender, data: data, rssi: rssi)]),
                   bit: EventMask.leAdvertisingReport)
    }

    // MARK: Initiating

    /// 7.8.12: Command Status. Command Disallowed while already initiating; Connection Already
    /// Exists (0x0B) for a peer already connected (Vol 6, Part B, 4.5: one connection per pair);
    /// an Initiator_Filter_Policy using the Filter Accept List is unsupported (0x11).
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
        guard p.initiatorFilterPolicy == 0 else { return .unsupportedFeatureOrParameterValue }
        guard airAddress(ownAddressType: p.ownAddressType) != nil else { return .invalidCommandParameters }
        let target = Self.onAirPeer(p)
        if links.contains(where: { ($0.isCentral ? $0.link.peripheralAddress : $0.link.centralAddress) == target }) {
            return .connectionAlreadyExists
        }
        initiating = p
        return .success
    }

    /// The peer an LE Create Connection targets, as it appears on the air: identity address types
    /// (0x02, 0x03) match public and random addresses, there being no resolving list.
    static func onAirPeer(_ p: LECreateConnectionParameters) -> LEAddress {
        LEAddress(p.peerAddress, type: AddressType(rawValue: p.peerAddressType.rawValue & 0x01))
    }

    /// Whether this initiator connects in reply to `pdu` (Vol 6, Part B, 4.4.4): a connectable PDU
    /// from its target; for ADV_DIRECT_IND, addressed to this device.
    func initiatorAccepts(_ pdu: AdvertisingPDU) -> Bool {
        guard let p = initiating, pdu.type.isConnectable, pdu.advertiser == Self.onAirPeer(p) else { return false }
        if pdu.type.isDirected {
            return pdu.target == airAddress(ownAddressType: p.ownAddressType)
        }
        return true
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

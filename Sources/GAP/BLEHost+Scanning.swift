import BLERuntime
import BLEWire
import HCI
import HostLink

/// How to scan, and which devices to report.
public struct ScanConfiguration: Hashable {
    /// Report only devices advertising at least one of these services (in the advertising data
    /// or the scan response), as CoreBluetooth's `scanForPeripherals(withServices:)` does.
    /// Nil or empty: every device.
    public var services: [BluetoothUUID]?
    /// Active scanning asks scannable advertisers for their scan response.
    public var active: Bool
    /// Report every advertising event instead of each device once per scan.
    public var allowDuplicates: Bool
    /// Scan interval and window (LE Set Scan Parameters, Vol 4 Part E 7.8.10: 0.625 ms units on
    /// the wire, 2.5 ms to 10.24 s, window ≤ interval; values outside are clamped, a window
    /// longer than the interval is cut to it).
    public var interval: TimeSpan
    public var window: TimeSpan
    /// Report only devices heard at least this strong (dBm), as apps filter by RSSI; a weaker
    /// report is dropped and the device may still be reported when it is heard stronger. Nil: all.
    public var minimumRSSI: Int8?

    public init(services: [BluetoothUUID]? = nil, active: Bool = true, allowDuplicates: Bool = false,
                interval: TimeSpan = .milliseconds(10), window: TimeSpan = .milliseconds(10), minimumRSSI: Int8? = nil) {
        self.services = services
        self.active = active
        self.allowDuplicates = allowDuplicates
        self.interval = interval
        self.window = window
        self.minimumRSSI = minimumRSSI
    }

    /// A duration in LE_Scan_Interval / LE_Scan_Window units (0.625 ms), within 0x0004–0x4000.
    static func scanUnits(_ t: TimeSpan) -> UInt16 {
        UInt16(clamping: min(max(t.nanoseconds / 625_000, 4), 0x4000))
    }
}

/// One discovered device: an advertising report merged with its scan response, if any.
public struct ScanReport: Hashable {
    public var address: LEAddress
    public var rssi: Int8
    public var advertisement: AdvertisingData
    public var scanResponse: AdvertisingData?
    public var isConnectable: Bool
    public var time: Instant
    /// The identity of a bonded peer whose resolvable private address this is (resolved with the
    /// IRK it gave when bonding); nil for any other address.
    public var identity: LEAddress?

    /// The complete local name from either, else a shortened one.
    public var localName: String? {
        let ad = advertisement.structures + (scanResponse?.structures ?? [])
        return AdvertisingData(ad).localName
    }

    /// Every advertised service UUID, advertising data first.
    public var serviceUUIDs: [BluetoothUUID] {
        advertisement.serviceUUIDs + (scanResponse?.serviceUUIDs ?? [])
    }

    /// Whether this report passes a CoreBluetooth-style service filter.
    public func matches(services filter: [BluetoothUUID]?) -> Bool {
        guard let filter, !filter.isEmpty else { return true }
        // `serviceUUIDs` without building the list: a crowded scan filters every report.
        return advertisement.advertisesAny(of: filter) || scanResponse?.advertisesAny(of: filter) == true
    }
}

extension AdvertisingData {
    /// Whether a service UUID list of this data names one of `filter`.
    fileprivate func advertisesAny(of filter: [BluetoothUUID]) -> Bool {
        for s in structures {
            switch s {
            case let .serviceUUIDs16(u, _), let .serviceUUIDs32(u, _), let .serviceUUIDs128(u, _):
                if u.contains(where: { filter.contains($0) }) { return true }
            default: break
            }
        }
        return false
    }
}

final class ScannerState {
    let configuration: ScanConfiguration
    let onReport: (ScanReport) -> Void
    var reported: Set<LEAddress> = []
    /// Scannable advertisements waiting for their SCAN_RSP.
    var awaitingScanResponse: [LEAddress: ScanResponseWait] = [:]
    /// Waits no longer in use, kept with their timers and tasks for the next scannable
    /// advertisement: an active scan of a crowd waits for thousands of responses a second, and
    /// nearly every wait ends at once, with its response.
    var spareWaits: [ScanResponseWait] = []
    /// Scannable advertisements offered alone because no SCAN_RSP came within
    /// `BLEHost.scanResponseWait`, with whether they were reported: a scan response that comes
    /// later still belongs to them (until the device advertises again).
    var offeredAlone: [LEAddress: (report: ScanReport, delivered: Bool)] = [:]
    var isEnabled = false

    init(configuration: ScanConfiguration, onReport: @escaping (ScanReport) -> Void) {
        self.configuration = configuration
        self.onReport = onReport
    }

    /// `wait` has left `awaitingScanResponse` (its timer cancelled or run): keep it for reuse.
    func recycle(_ wait: ScanResponseWait) {
        spareWaits.append(wait)
    }
}

/// A scannable advertisement waiting for its SCAN_RSP, with the timer that offers it alone
/// after `BLEHost.scanResponseWait`. Reused (`ScannerState.spareWaits`): its timer is rescheduled
/// for each new advertisement, with the task made when the wait was.
final class ScanResponseWait {
    var report: ScanReport
    let timer = LoopTimer()
    /// The timer's task; set once by the host that made the wait.
    var expire: () -> Void = {}

    init(report: ScanReport) {
        self.report = report
    }
}

extension BLEHost {
    public var isScanning: Bool { scanner?.isEnabled ?? false }

    /// How long an active scanner holds a scannable advertisement while waiting for its scan
    /// response before reporting it alone. Only how soon a device is reported depends on it: a
    /// scan response that comes later is still merged (`receiveAdvertisingReport`).
    static let scanResponseWait = TimeSpan.milliseconds(10)

    /// Starts scanning; `onReport` is called for each matching device (once per device unless
    /// duplicates are allowed; once more when a device reported without its scan response gets
    /// one with data later). Scanning again while scanning replaces the configuration.
    public func startScanning(_ configuration: ScanConfiguration = .init(),
                              onReport: @escaping (ScanReport) -> Void,
                              completion: @escaping (Result<Void, HostError>) -> Void = { _ in }) {
        if let error = requireReady() { return completion(.failure(error)) }
        let state = ScannerState(configuration: configuration, onReport: onReport)
        let interval = ScanConfiguration.scanUnits(configuration.interval)
        let params = LEScanParameters(active: configuration.active, interval: interval,
                                      window: min(ScanConfiguration.scanUnits(configuration.window), interval), ownAddressType: ownAddressType)
        var commands: [HCICommand] = []
        if scanner?.isEnabled == true { commands.append(.leSetScanEnable(enable: false, filterDuplicates: false)) }
        discardPendingScanResponses()
        scanner = state
        // Duplicates are filtered here, not in the controller, so scan responses still merge.
        commands += [.leSetScanParameters(params), .leSetScanEnable(enable: true, filterDuplicates: false)]
        send(commands) { result in
            if case .success = result { state.isEnabled = true }
            completion(result)
        }
    }

    public func stopScanning(completion: @escaping (Result<Void, HostError>) -> Void = { _ in }) {
        if let error = requireReady() { return completion(.failure(error)) }
        guard let state = scanner, state.isEnabled else {
            scanner = nil
            return completion(.success(()))
        }
        flushPendingScanResponses()
        state.isEnabled = false
        scanner = nil
        send([.leSetScanEnable(enable: false, filterDuplicates: false)], completion: completion)
    }

    func receiveAdvertisingReport(_ report: LEAdvertisingReport) {
        guard let state = scanner, state.isEnabled else { return }
        let data: AdvertisingData
        do {
            data = try AdvertisingData(decoding: report.data)
        } catch {
            // Vol 3 Part C 11: a report whose AD structures do not parse is not used.
            self.report(ProtocolViolation(layer: .gap, kind: .malformedAdvertisingData, handle: nil,
                                     detail: "advertising data from \(report.sender) [\(report.data.spacedHex)]: \(error); report dropped",
                                     octets: Array(report.data.prefix(ProtocolViolation.octetLimit))))
            return
        }
        let sender = report.sender
        if report.eventType == .scanRsp {
            if let pending = state.awaitingScanResponse.removeValue(forKey: sender) {
                pending.timer.cancel()
                state.recycle(pending)
                var merged = pending.report
                merged.scanResponse = data
                deliver(merged, to: state)
            } else if let alone = state.offeredAlone.removeValue(forKey: sender) {
                // A scan response after the wait: HCI does not bound when a controller reports
                // it, and it may report other devices first (Vol 4 Part E 7.7.65.2). It still
                // answers that advertisement (Vol 6 Part B 4.4.3.2): merge. A device already
                // reported alone is reported again only when the response adds something.
                var merged = alone.report
                merged.scanResponse = data
                if !alone.delivered {
                    deliver(merged, to: state)
                } else if !data.structures.isEmpty, passesFilters(merged, state) {
                    state.onReport(merged)
                }
            }
            // Else it answers no advertisement this scan heard (an earlier scan's): dropped.
            return
        }
        var scanReport = ScanReport(address: sender, rssi: report.rssi, advertisement: data, scanResponse: nil,
                                    isConnectable: report.eventType.isConnectable, time: loop.now)
        if !bonds.bonds.isEmpty { scanReport.identity = resolvedIdentity(of: sender) }
        let scannable = report.eventType == .advInd || report.eventType == .advScanInd
        if state.configuration.active && scannable {
            if !state.offeredAlone.isEmpty { state.offeredAlone[sender] = nil }
            if let previous = state.awaitingScanResponse.removeValue(forKey: sender) {
                previous.timer.cancel()
                state.recycle(previous)
                deliver(previous.report, to: state)
            }
            let wait: ScanResponseWait
            if let spare = state.spareWaits.popLast() {
                wait = spare
                wait.report = scanReport
            } else {
                wait = ScanResponseWait(report: scanReport)
                wait.expire = { [weak self, weak state, unowned wait] in
                    // The wait is the one for its sender: every other way out of
                    // `awaitingScanResponse` cancels its timer.
                    guard let self, let state else { return }
                    let sender = wait.report.address
                    guard let pending = state.awaitingScanResponse.removeValue(forKey: sender) else { return }
                    state.recycle(pending)
                    let report = pending.report
                    state.offeredAlone[sender] = (report, self.deliver(report, to: state))
                }
            }
            loop.reschedule(wait.timer, at: loop.now + Self.scanResponseWait, wait.expire)
            state.awaitingScanResponse[sender] = wait
        } else {
            deliver(scanReport, to: state)
        }
    }

    /// Whether `report` passes the scan's filters: the services, and the RSSI floor.
    private func passesFilters(_ report: ScanReport, _ state: ScannerState) -> Bool {
        guard state.isEnabled, report.matches(services: state.configuration.services) else { return false }
        if let floor = state.configuration.minimumRSSI, report.rssi < floor { return false }
        return true
    }

    /// Reports `report` when it passes the filters (and, without duplicates, is the device's
    /// first); returns whether it did.
    @discardableResult
    private func deliver(_ report: ScanReport, to state: ScannerState) -> Bool {
        guard passesFilters(report, state) else { return false }
        if !state.configuration.allowDuplicates {
            guard state.reported.insert(report.address).inserted else { return false }
        }
        state.onReport(report)
        return true
    }

    private func flushPendingScanResponses() {
        guard let state = scanner else { return }
        let pending = state.awaitingScanResponse.values.sorted { $0.report.time < $1.report.time || ($0.report.time == $1.report.time && $0.report.address.address < $1.report.address.address) }
        state.awaitingScanResponse.removeAll()
        for p in pending {
            p.timer.cancel()
            state.recycle(p)
            deliver(p.report, to: state)
        }
    }

    private func discardPendingScanResponses() {
        guard let state = scanner else { return }
        for p in state.awaitingScanResponse.values {
            p.timer.cancel()
            state.recycle(p)
        }
        state.awaitingScanResponse.removeAll()
    }
}

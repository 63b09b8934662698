import BLERuntime
import BLEWire
import HCI
import HostLink

/// What a peripheral advertises (legacy advertising, Core 5.4 Vol 6 Part B 2.3.1).
public struct AdvertisingConfiguration: Hashable {
    public var data: AdvertisingData
    public var scanResponse: AdvertisingData?
    /// Advertising interval, 20 ms – 10.24 s (sent in 0.625 ms units).
    public var interval: TimeSpan
    /// ADV_IND when true, else ADV_SCAN_IND (with a scan response) or ADV_NONCONN_IND.
    public var connectable: Bool

    public init(data: AdvertisingData, scanResponse: AdvertisingData? = nil, interval: TimeSpan = .milliseconds(100),
                connectable: Bool = true) {
        self.data = data
        self.scanResponse = scanResponse
        self.interval = interval
        self.connectable = connectable
    }

    var advertisingType: AdvertisingType {
        if connectable { return .connectableUndirected }
        return scanResponse == nil ? .nonConnectableUndirected : .scannableUndirected
    }

    /// Interval in 0.625 ms units, clamped to the range of Vol 4 Part E 7.8.5.
    var intervalUnits: UInt16 {
        UInt16(clamping: min(max(interval.nanoseconds / 625_000, 0x0020), 0x4000))
    }
}

struct AdvertiserState {
    var isEnabled = false
    var configuration: AdvertisingConfiguration?
    /// An operation (a start's or a stop's HCI commands) is under way.
    var busy = false
    /// Operations waiting for the one under way, first first.
    var waiting: [(@escaping () -> Void) -> Void] = []
}

extension BLEHost {
    public var isAdvertising: Bool { advertiser.isEnabled }
    public var advertisingConfiguration: AdvertisingConfiguration? { advertiser.configuration }

    /// Sets parameters, advertising data and scan response data, then enables advertising.
    /// Data longer than 31 octets is refused here, before anything is sent.
    public func startAdvertising(_ configuration: AdvertisingConfiguration,
                                 completion: @escaping (Result<Void, HostError>) -> Void = { _ in }) {
        advertisingOperation { [weak self] done in
            guard let self else { return done() }
            self.runStartAdvertising(configuration) { result in
                done()
                completion(result)
            }
        }
    }

    public func stopAdvertising(completion: @escaping (Result<Void, HostError>) -> Void = { _ in }) {
        advertisingOperation { [weak self] done in
            guard let self else { return done() }
            self.runStopAdvertising { result in
                done()
                completion(result)
            }
        }
    }

    /// True while a start or stop is under way or waiting.
    public var isChangingAdvertising: Bool { advertiser.busy }

    /// Runs `operation` once every earlier start or stop has finished. Each is a sequence of HCI
    /// commands sent one at a time; two interleaved (a stop's LE Set Advertising Enable sent
    /// between a start's parameters and its enable, Vol 4 Part E 7.8.9) would leave the
    /// controller advertising after the stop had succeeded.
    private func advertisingOperation(_ operation: @escaping (@escaping () -> Void) -> Void) {
        advertiser.waiting.append(operation)
        if !advertiser.busy { runNextAdvertisingOperation() }
    }

    private func runNextAdvertisingOperation() {
        guard !advertiser.waiting.isEmpty else {
            advertiser.busy = false
            return
        }
        advertiser.busy = true
        let operation = advertiser.waiting.removeFirst()
        operation { [weak self] in self?.runNextAdvertisingOperation() }
    }

    private func runStartAdvertising(_ configuration: AdvertisingConfiguration, completion: @escaping (Result<Void, HostError>) -> Void) {
        if let error = requireReady() { return completion(.failure(error)) }
        let data = configuration.data.encoded
        let scanResponse = configuration.scanResponse?.encoded ?? []
        guard data.count <= AdvertisingData.legacyMaximumLength else {
            return completion(.failure(.invalidState("advertising data is \(data.count) octets; legacy advertising carries at most 31")))
        }
        guard scanResponse.count <= AdvertisingData.legacyMaximumLength else {
            return completion(.failure(.invalidState("scan response data is \(scanResponse.count) octets; at most 31")))
        }
        let params = LEAdvertisingParameters(intervalMin: configuration.intervalUnits, intervalMax: configuration.intervalUnits,
                                             advertisingType: configuration.advertisingType, ownAddressType: ownAddressType)
        var commands: [HCICommand] = []
        // Parameters may not change while advertising (7.8.5): stop first.
        if advertiser.isEnabled { commands.append(.leSetAdvertisingEnable(false)) }
        commands += [.leSetAdvertisingParameters(params), .leSetAdvertisingData(data), .leSetScanResponseData(scanResponse),
                     .leSetAdvertisingEnable(true)]
        send(commands) { [weak self] result in
            if case .success = result {
                self?.advertiser.isEnabled = true
                self?.advertiser.configuration = configuration
            }
            completion(result)
        }
    }

    private func runStopAdvertising(completion: @escaping (Result<Void, HostError>) -> Void) {
        if let error = requireReady() { return completion(.failure(error)) }
        guard advertiser.isEnabled else { return completion(.success(())) }
        send([.leSetAdvertisingEnable(false)]) { [weak self] result in
            if case .success = result { self?.advertiser.isEnabled = false }
            completion(result)
        }
    }

    /// A connectable legacy advertiser stops once connected (Vol 6 Part B 4.4.2); mirror that.
    func advertisingEndedByConnection() {
        if advertiser.configuration?.connectable == true { advertiser.isEnabled = false }
    }
}

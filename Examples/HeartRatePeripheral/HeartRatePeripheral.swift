// A heart-rate sensor played by the app itself (seed 004): a CBPeripheralManager publishes the
// Heart Rate service (180D) with Heart Rate Measurement (2A37, notify), advertises it, stops
// advertising once a central subscribes, and then sends a measurement every second: flags 0x00
// then the rate in bpm, wandering by at most 1 around `heartRateValue`.

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothLab
#endif
import Foundation

/// Where the once-a-second beat comes from: a `Timer` on Apple's platforms, the lab's virtual
/// clock (`CBLabTimer`) in tests.
public protocol HeartbeatTimer: AnyObject {
    func start(every interval: TimeInterval, _ tick: @escaping () -> Void)
    func invalidate()
}

public final class HeartRatePeripheral: NSObject, CBPeripheralManagerDelegate {
    public static let heartRateService = CBUUID(string: "180D")
    public static let heartRateMeasurement = CBUUID(string: "2A37")

    public private(set) var peripheralManager: CBPeripheralManager!
    public private(set) var isAdvertising = false
    /// The resting rate the measurements wander around.
    public var heartRateValue: UInt8 = 72
    /// Every rate sent, in order.
    public private(set) var sentRates: [UInt8] = []
    /// Updates the transmit queue refused; sent again when the manager is ready.
    public private(set) var pending: Data?

    private let localName: String
    private let timer: HeartbeatTimer
    /// Draws a rate in the range (the app's random source, seedable for tests).
    private let drawRate: (ClosedRange<UInt8>) -> UInt8
    private var isSending = false

    private let heartRateCharacteristic = CBMutableCharacteristic(
        type: HeartRatePeripheral.heartRateMeasurement, properties: [.notify], value: nil, permissions: [.readable])

    public convenience init(localName: String = "HR Sim", timer: HeartbeatTimer) {
        self.init(localName: localName, timer: timer, random: SystemRandomNumberGenerator())
    }

    public init<R: RandomNumberGenerator>(localName: String = "HR Sim", timer: HeartbeatTimer, random: R) {
        self.localName = localName
        self.timer = timer
        var generator = random
        drawRate = { UInt8.random(in: $0, using: &generator) }
        super.init()
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil)
    }

    public func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else {
            stopSending()
            isAdvertising = false
            return
        }
        setUpHeartRateService()
        startAdvertising()
    }

    private func setUpHeartRateService() {
        let service = CBMutableService(type: Self.heartRateService, primary: true)
        service.characteristics = [heartRateCharacteristic]
        peripheralManager.add(service)
    }

    private func startAdvertising() {
        isAdvertising = true
        peripheralManager.startAdvertising([
            CBAdvertisementDataLocalNameKey: localName,
            CBAdvertisementDataServiceUUIDsKey: [Self.heartRateService],
        ])
    }

    private func stopAdvertising() {
        isAdvertising = false
        peripheralManager.stopAdvertising()
    }

    /// A central subscribed: nobody else needs to find us; start beating.
    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        guard characteristic.uuid == Self.heartRateMeasurement else { return }
        stopAdvertising()
        startSending()
    }

    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        guard characteristic.uuid == Self.heartRateMeasurement, heartRateCharacteristic.subscribedCentrals?.isEmpty ?? true else { return }
        stopSending()
        startAdvertising()
    }

    private func startSending() {
        guard !isSending else { return }
        isSending = true
        timer.start(every: 1) { [weak self] in self?.sendHeartRateMeasurement() }
    }

    private func stopSending() {
        isSending = false
        timer.invalidate()
    }

    /// One measurement: Flags 0x00 (8-bit rate, no contact or energy fields), then the rate.
    public func sendHeartRateMeasurement() {
        let rate = drawRate((heartRateValue - 1)...(heartRateValue + 1))
        let measurement = Data([0x00, rate])
        sentRates.append(rate)
        if !peripheralManager.updateValue(measurement, for: heartRateCharacteristic, onSubscribedCentrals: nil) {
            pending = measurement
        }
    }

    public func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        guard let measurement = pending else { return }
        if peripheral.updateValue(measurement, for: heartRateCharacteristic, onSubscribedCentrals: nil) { pending = nil }
    }
}

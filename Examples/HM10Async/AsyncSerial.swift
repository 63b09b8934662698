// An HM-10 serial client written with async/await: the CoreBluetooth delegate callbacks wrapped
// in checked continuations (power-on, scan, connect, discovery, read, subscribe, write with
// response) and an AsyncStream of the module's notifications; the app sends a line every
// `interval` of an injected clock and collects the echoes.
//
// The only lab-specific line is the import. What a test injects is the clock (`lab.clock`; the
// app's default is `ContinuousClock`), and it runs the app's task on the lab's executor
// (`lab.task { }`), so that the app's scheduling follows the lab's loop.

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothLab
#endif
import Foundation

/// Talks CoreBluetooth for an async app. Its methods are called from one task at a time; its
/// delegate callbacks come on the central manager's queue (the main queue), which is where the
/// continuations they resume were stored.
public final class AsyncSerial: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    public enum SerialError: Error, Equatable {
        /// Bluetooth is not usable: the manager's state.
        case unavailable(CBManagerState)
        case noSerialCharacteristic
        case disconnected
        /// A CoreBluetooth error, by its domain and code.
        case failed(domain: String, code: Int)
    }

    /// Nearly every HM-10 module serves FFE0 with the serial characteristic FFE1.
    public let serviceUUID = CBUUID(string: "FFE0")
    public let characteristicUUID = CBUUID(string: "FFE1")

    public private(set) var central: CBCentralManager!
    public private(set) var peripheral: CBPeripheral?
    public private(set) var serial: CBCharacteristic?
    private let clock: any Clock<Duration>

    private var poweringOn: [CheckedContinuation<Void, Error>] = []
    private var scanning: CheckedContinuation<CBPeripheral, Never>?
    private var connecting: CheckedContinuation<Void, Error>?
    private var discovering: CheckedContinuation<CBCharacteristic, Error>?
    private var subscribing: CheckedContinuation<Void, Error>?
    private var reads: [CheckedContinuation<Data, Error>] = []
    private var writes: [CheckedContinuation<Void, Error>] = []
    private var room: CheckedContinuation<Void, Never>?
    private var incoming: AsyncStream<Data>.Continuation?

    public init(clock: any Clock<Duration> = ContinuousClock()) {
        self.clock = clock
        super.init()
        central = CBCentralManager(delegate: self, queue: nil)
    }

    // MARK: The app's session

    /// Finds the first module, connects, discovers FFE1 and returns what it reads there.
    public func open() async throws -> String {
        try await poweredOn()
        let module = await firstModule()
        try await connect(module)
        try await discoverSerial()
        return String(decoding: try await read(), as: UTF8.self)
    }

    /// Subscribes to FFE1, then sends each line, one every `interval` of the app's clock, while a
    /// child task collects the module's notifications; returns them once there are as many as lines.
    public func chat(_ lines: [String], every interval: Duration) async throws -> [String] {
        let echoes = try await notifications()
        async let heard = collect(lines.count, from: echoes)
        for (index, line) in lines.enumerated() {
            try await send(Data(line.utf8))
            if index < lines.count - 1 { try await clock.sleep(for: interval) }
        }
        return await heard
    }

    private func collect(_ count: Int, from stream: AsyncStream<Data>) async -> [String] {
        var heard: [String] = []
        for await data in stream {
            heard.append(String(decoding: data, as: UTF8.self))
            if heard.count == count { break }
        }
        return heard
    }

    // MARK: Delegate callbacks as async functions

    public func poweredOn() async throws {
        switch central.state {
        case .poweredOn: return
        case .unsupported, .unauthorized, .poweredOff: throw SerialError.unavailable(central.state)
        default: try await withCheckedThrowingContinuation { poweringOn.append($0) }
        }
    }

    /// Scans for FFE0 until a module answers, then stops scanning.
    public func firstModule() async -> CBPeripheral {
        await withCheckedContinuation { continuation in
            scanning = continuation
            central.scanForPeripherals(withServices: [serviceUUID], options: nil)
        }
    }

    public func connect(_ module: CBPeripheral) async throws {
        try await withCheckedThrowingContinuation { continuation in
            connecting = continuation
            central.connect(module, options: nil)
        }
    }

    @discardableResult
    public func discoverSerial() async throws -> CBCharacteristic {
        guard let peripheral else { throw SerialError.disconnected }
        let characteristic = try await withCheckedThrowingContinuation { continuation in
            discovering = continuation
            peripheral.discoverServices([serviceUUID])
        }
        serial = characteristic
        return characteristic
    }

    /// Reads FFE1. (A notification that arrives while a read is pending answers it: CoreBluetooth
    /// reports both through the same callback.)
    public func read() async throws -> Data {
        guard let peripheral, let serial else { throw SerialError.disconnected }
        return try await withCheckedThrowingContinuation { continuation in
            reads.append(continuation)
            peripheral.readValue(for: serial)
        }
    }

    /// Subscribes to FFE1: its notifications, in arrival order, until the link goes down.
    public func notifications() async throws -> AsyncStream<Data> {
        guard let peripheral, let serial else { throw SerialError.disconnected }
        let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
        incoming = continuation
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, Error>) in
            subscribing = done
            peripheral.setNotifyValue(true, for: serial)
        }
        return stream
    }

    /// Sends `data` the way FFE1 takes it: a Write Request, answered, when it has `write`; else a
    /// Write Command, once the link has room for one.
    public func send(_ data: Data) async throws {
        guard let peripheral, let serial else { throw SerialError.disconnected }
        if serial.properties.contains(.write) {
            try await withCheckedThrowingContinuation { continuation in
                writes.append(continuation)
                peripheral.writeValue(data, for: serial, type: .withResponse)
            }
        } else {
            while !peripheral.canSendWriteWithoutResponse {
                await withCheckedContinuation { room = $0 }
            }
            peripheral.writeValue(data, for: serial, type: .withoutResponse)
        }
    }

    // MARK: CBCentralManagerDelegate

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        switch central.state {
        case .poweredOn:
            poweringOn.forEach { $0.resume() }
        case .unsupported, .unauthorized, .poweredOff:
            poweringOn.forEach { $0.resume(throwing: SerialError.unavailable(central.state)) }
        default:
            return
        }
        poweringOn.removeAll()
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard let scanning else { return }
        self.scanning = nil
        central.stopScan()
        scanning.resume(returning: peripheral)
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        self.peripheral = peripheral
        peripheral.delegate = self
        connecting?.resume()
        connecting = nil
    }

    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        connecting?.resume(throwing: Self.failure(error))
        connecting = nil
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        self.peripheral = nil
        serial = nil
        discovering?.resume(throwing: SerialError.disconnected)
        subscribing?.resume(throwing: SerialError.disconnected)
        reads.forEach { $0.resume(throwing: SerialError.disconnected) }
        writes.forEach { $0.resume(throwing: SerialError.disconnected) }
        room?.resume()
        (discovering, subscribing, reads, writes, room) = (nil, nil, [], [], nil)
        incoming?.finish()
        incoming = nil
    }

    // MARK: CBPeripheralDelegate

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard error == nil, let service = peripheral.services?.first(where: { $0.uuid == serviceUUID }) else {
            discovering?.resume(throwing: error.map(Self.failure) ?? SerialError.noSerialCharacteristic)
            discovering = nil
            return
        }
        peripheral.discoverCharacteristics([characteristicUUID], for: service)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        if let characteristic = service.characteristics?.first(where: { $0.uuid == characteristicUUID }), error == nil {
            discovering?.resume(returning: characteristic)
        } else {
            discovering?.resume(throwing: error.map(Self.failure) ?? SerialError.noSerialCharacteristic)
        }
        discovering = nil
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        if !reads.isEmpty {
            let read = reads.removeFirst()
            if let error { read.resume(throwing: Self.failure(error)) } else { read.resume(returning: characteristic.value ?? Data()) }
        } else if error == nil, let value = characteristic.value {
            incoming?.yield(value)
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        if let error { subscribing?.resume(throwing: Self.failure(error)) } else { subscribing?.resume() }
        subscribing = nil
    }

    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        guard !writes.isEmpty else { return }
        let write = writes.removeFirst()
        if let error { write.resume(throwing: Self.failure(error)) } else { write.resume() }
    }

    public func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {
        room?.resume()
        room = nil
    }

    private static func failure(_ error: Error?) -> SerialError {
        guard let error = error as NSError? else { return .disconnected }
        return .failed(domain: error.domain, code: error.code)
    }
}

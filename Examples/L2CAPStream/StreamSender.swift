// The central half: scan for the receiver's service, connect, read the PSM from its
// characteristic, open an L2CAP channel and stream `totalBytes` of StreamPattern through the
// channel's output stream, writing whenever the stream has space; then close the streams.
//
// The only lab-specific line is the import: on Apple's platforms this file builds against
// CoreBluetooth itself.

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothLab
#endif
import Foundation

public final class StreamSender: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, StreamDelegate {
    public private(set) var centralManager: CBCentralManager!
    public private(set) var peripheral: CBPeripheral?
    /// The channel, once open (kept: iOS closes a channel the app lets go).
    public private(set) var channel: CBL2CAPChannel?
    /// How much to send.
    public let totalBytes: Int
    /// Bytes the output stream has taken so far.
    public private(set) var sentBytes = 0
    /// Every write took all it was given or a part; `write` returning 0 (no room) is counted.
    public private(set) var fullWrites = 0
    /// Why the transfer could not go on, if it could not.
    public private(set) var failure: Error?
    public var isFinished: Bool { sentBytes == totalBytes }

    private let serviceUUID = CBUUID(string: StreamPattern.serviceUUIDString)
    private let psmUUID = CBUUID(string: CBUUIDL2CAPPSMCharacteristicString)
    private let chunk = 4096

    public init(totalBytes: Int = 1 << 20) {
        self.totalBytes = totalBytes
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        central.scanForPeripherals(withServices: [serviceUUID])
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        central.stopScan()
        self.peripheral = peripheral
        peripheral.delegate = self
        central.connect(peripheral)
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.discoverServices([serviceUUID])
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        if !isFinished, failure == nil { failure = error }
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == serviceUUID }) else { return }
        peripheral.discoverCharacteristics([psmUUID], for: service)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        guard let characteristic = service.characteristics?.first(where: { $0.uuid == psmUUID }) else { return }
        peripheral.readValue(for: characteristic)
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard characteristic.uuid == psmUUID, let value = characteristic.value, value.count == 2 else { return }
        let psm = CBL2CAPPSM(value[value.startIndex]) | CBL2CAPPSM(value[value.startIndex + 1]) << 8
        peripheral.openL2CAPChannel(psm)
    }

    public func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: Error?) {
        guard let channel else {
            failure = error
            return
        }
        self.channel = channel
        channel.outputStream.delegate = self
        channel.outputStream.schedule(in: .current, forMode: .default)
        channel.outputStream.open()
    }

    public func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard let output = aStream as? OutputStream else { return }
        switch eventCode {
        case .hasSpaceAvailable:
            send(on: output)
        case .errorOccurred, .endEncountered:
            if !isFinished, failure == nil { failure = aStream.streamError ?? CBError(.peripheralDisconnected) }
        default:
            break
        }
    }

    private func send(on output: OutputStream) {
        while sentBytes < totalBytes, output.hasSpaceAvailable {
            let bytes = StreamPattern.bytes(from: sentBytes, count: min(chunk, totalBytes - sentBytes))
            let n = output.write(bytes, maxLength: bytes.count)
            if n == 0 { fullWrites += 1 }
            guard n > 0 else { return }
            sentBytes += n
        }
        if isFinished {
            // All of it is with the channel: closing both streams lets it go once it is sent.
            output.close()
            channel?.inputStream.close()
        }
    }
}

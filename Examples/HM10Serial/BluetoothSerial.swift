// A Bluetooth serial link to an HM-10 module (seed 000): scan for the FFE0 service, connect to
// the peripheral the user picks, subscribe to FFE1, and send text over FFE1 with the write type
// its properties call for.
//
// The only lab-specific line is the import: on Apple's platforms this file builds against
// CoreBluetooth itself.

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothLab
#endif
import Foundation

/// What the serial's user (a screen, a test) hears about.
public protocol BluetoothSerialDelegate: AnyObject {
    func serialDidDiscoverPeripheral(_ peripheral: CBPeripheral, rssi: NSNumber?)
    func serialDidConnectPeripheral(_ peripheral: CBPeripheral)
    func serialDidReceiveMessage(_ message: String)
    func serialDidDisconnect(_ peripheral: CBPeripheral, error: Error?)
}

public extension BluetoothSerialDelegate {
    func serialDidDiscoverPeripheral(_ peripheral: CBPeripheral, rssi: NSNumber?) {}
    func serialDidConnectPeripheral(_ peripheral: CBPeripheral) {}
    func serialDidReceiveMessage(_ message: String) {}
    func serialDidDisconnect(_ peripheral: CBPeripheral, error: Error?) {}
}

/// The one object that talks CoreBluetooth for the app.
public final class BluetoothSerial: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    public weak var delegate: BluetoothSerialDelegate?

    /// Scans for and connects to peripherals.
    public private(set) var centralManager: CBCentralManager!
    /// The peripheral a connection is being attempted to.
    public private(set) var pendingPeripheral: CBPeripheral?
    /// The peripheral the serial talks to once connected.
    public private(set) var connectedPeripheral: CBPeripheral?
    /// FFE1, once discovered: data goes out through it.
    public private(set) weak var writeCharacteristic: CBCharacteristic?
    /// `.withResponse` when FFE1 offers `.write`, else `.withoutResponse`.
    public private(set) var writeType: CBCharacteristicWriteType = .withoutResponse
    /// Writes the module acknowledged (only ever counted for `.withResponse`).
    public private(set) var acknowledgedWrites = 0

    /// Nearly every HM-10 module serves FFE0 with the serial characteristic FFE1.
    public let serviceUUID = CBUUID(string: "FFE0")
    public let characteristicUUID = CBUUID(string: "FFE1")

    public override init() {
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    /// Whether a peripheral is connected and FFE1 is ready for data.
    public var isReady: Bool { connectedPeripheral != nil && writeCharacteristic != nil }

    // MARK: Scanning and connecting

    /// Looks for peripherals serving FFE0; ones the system is already connected to are reported at once.
    public func startScan() {
        guard centralManager.state == .poweredOn else { return }
        centralManager.scanForPeripherals(withServices: [serviceUUID], options: nil)
        for peripheral in centralManager.retrieveConnectedPeripherals(withServices: [serviceUUID]) {
            delegate?.serialDidDiscoverPeripheral(peripheral, rssi: nil)
        }
    }

    public func stopScan() {
        centralManager.stopScan()
    }

    public func connect(to peripheral: CBPeripheral) {
        pendingPeripheral = peripheral
        centralManager.connect(peripheral, options: nil)
    }

    public func disconnect() {
        if let peripheral = connectedPeripheral ?? pendingPeripheral {
            centralManager.cancelPeripheralConnection(peripheral)
        }
    }

    /// Sends `message` as UTF-8; false when not ready.
    @discardableResult
    public func send(_ message: String) -> Bool {
        guard let peripheral = connectedPeripheral, let characteristic = writeCharacteristic else { return false }
        peripheral.writeValue(Data(message.utf8), for: characteristic, type: writeType)
        return true
    }

    // MARK: CBCentralManagerDelegate

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        pendingPeripheral = nil
        connectedPeripheral = nil
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        delegate?.serialDidDiscoverPeripheral(peripheral, rssi: RSSI)
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        pendingPeripheral = nil
        connectedPeripheral = peripheral
        peripheral.discoverServices([serviceUUID])
    }

    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        pendingPeripheral = nil
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        connectedPeripheral = nil
        writeCharacteristic = nil
        delegate?.serialDidDisconnect(peripheral, error: error)
    }

    // MARK: CBPeripheralDelegate

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        for service in peripheral.services ?? [] {
            peripheral.discoverCharacteristics([characteristicUUID], for: service)
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        for characteristic in service.characteristics ?? [] where characteristic.uuid == characteristicUUID {
            peripheral.setNotifyValue(true, for: characteristic)
            writeCharacteristic = characteristic
            // The module decides: with a response when FFE1 takes Write Requests, else Write Commands.
            writeType = characteristic.properties.contains(.write) ? .withResponse : .withoutResponse
            delegate?.serialDidConnectPeripheral(peripheral)
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard error == nil, let data = characteristic.value, let message = String(data: data, encoding: .utf8) else { return }
        delegate?.serialDidReceiveMessage(message)
    }

    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        // Called only for `.withResponse` writes: a module that takes Write Commands never answers.
        if error == nil { acknowledgedWrites += 1 }
    }

    public func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: Error?) {}
}

// The smart curtain's BLE handler (seed 002): scan for everything, connect to the device named
// "Smart_Curtain" and stop scanning, find service FFF0, send commands to it as Write Commands,
// read its state and follow it through notifications.

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothLab
#endif
import Foundation

public final class BleHandler: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    public enum Event: Equatable {
        case connected
        case connectionFailed
        case disconnected
        case value(Data)
    }

    public let deviceName = "Smart_Curtain"
    public let serviceUUID = [CBUUID(string: "FFF0")]
    /// The curtain's command characteristic (write without response) and state characteristic
    /// (read, notify).
    public let writeCharacteristicUUID = "FFF1"
    public let readCharacteristicUUID = "FFF2"

    public var onEvent: ((Event) -> Void)?
    public private(set) var centralManager: CBCentralManager?
    public private(set) var myPeripheral: CBPeripheral?
    private var processingUUID: String?
    private var requestData: Data?

    public override init() {
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        switch central.state {
        case .poweredOn:
            startScanDevice()
        case .unknown, .resetting, .unsupported, .unauthorized, .poweredOff:
            break
        }
    }

    public func startScanDevice() {
        centralManager?.scanForPeripherals(withServices: nil, options: nil)
    }

    public func stopScanDevice() {
        centralManager?.stopScan()
    }

    /// Connects to the first device with the curtain's name.
    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard myPeripheral == nil, peripheral.name == deviceName else { return }
        myPeripheral = peripheral
        central.connect(peripheral, options: nil)
        stopScanDevice()
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices(serviceUUID)
    }

    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        myPeripheral = nil
        onEvent?(.connectionFailed)
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        onEvent?(.disconnected)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        onEvent?(error == nil ? .connected : .connectionFailed)
    }

    // MARK: Commands

    /// Sends `data` to the curtain's command characteristic.
    public func writeService(data: Data) {
        guard let service = myPeripheral?.services?.first else { return }
        processingUUID = writeCharacteristicUUID
        requestData = data
        myPeripheral?.discoverCharacteristics([CBUUID(string: writeCharacteristicUUID)], for: service)
    }

    /// Reads the curtain's state and subscribes to its changes.
    public func readService() {
        guard let service = myPeripheral?.services?.first else { return }
        processingUUID = readCharacteristicUUID
        myPeripheral?.discoverCharacteristics([CBUUID(string: readCharacteristicUUID)], for: service)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        for characteristic in service.characteristics ?? [] where characteristic.uuid.uuidString == processingUUID {
            switch characteristic.uuid.uuidString {
            case writeCharacteristicUUID:
                if let data = requestData {
                    peripheral.writeValue(data, for: characteristic, type: .withoutResponse)
                }
                processingUUID = nil
            case readCharacteristicUUID:
                peripheral.setNotifyValue(true, for: characteristic)
                peripheral.readValue(for: characteristic)
                processingUUID = nil
            default:
                break
            }
        }
    }

    /// Read results and notifications alike.
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard characteristic.uuid.uuidString == readCharacteristicUUID, let value = characteristic.value else { return }
        onEvent?(.value(value))
    }
}

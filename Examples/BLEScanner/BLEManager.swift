// A general BLE scanner (seed 001): scan for everything, list named devices once each, connect
// to one, discover all its services and characteristics, read what is readable, subscribe to
// what notifies, and show what arrives as text.

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothLab
#endif
import Foundation

/// A device in the list.
public struct DiscoveredDevice: Identifiable {
    public let id: UUID
    public let peripheral: CBPeripheral
    public let name: String
    public let rssi: Int
    public var isConnected = false
}

/// Service UUIDs the scanner knows by name.
public enum BLEServiceUUID {
    public static let heartRate = CBUUID(string: "180D")
    public static let battery = CBUUID(string: "180F")
    public static let deviceInfo = CBUUID(string: "180A")
    public static let nordicUART = CBUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
}

public final class BLEManager: NSObject {
    public private(set) var devices: [DiscoveredDevice] = []
    public private(set) var isScanning = false
    public private(set) var isPoweredOn = false
    public private(set) var connectedDevice: CBPeripheral?
    /// The last value received, as UTF-8 text.
    public private(set) var receivedData = ""
    /// Every value received (reads and notifications), in order, with its characteristic.
    public private(set) var received: [(characteristic: CBUUID, value: Data)] = []
    /// Scan options; nil as in the app, `[CBCentralManagerScanOptionAllowDuplicatesKey: true]`
    /// to see every advertisement (the list still holds each device once).
    public var scanOptions: [String: Any]?

    private var centralManager: CBCentralManager!

    public override init() {
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    public func startScan() {
        guard isPoweredOn else { return }
        devices.removeAll()
        centralManager.scanForPeripherals(withServices: nil, options: scanOptions)
        isScanning = true
    }

    public func stopScan() {
        centralManager.stopScan()
        isScanning = false
    }

    public func connect(_ device: DiscoveredDevice) {
        stopScan()
        centralManager.connect(device.peripheral, options: nil)
    }

    public func disconnect() {
        if let peripheral = connectedDevice {
            centralManager.cancelPeripheralConnection(peripheral)
        }
    }

    /// Writes `data`, without response when the characteristic allows it, else with one.
    public func write(_ data: Data, to characteristic: CBCharacteristic, of peripheral: CBPeripheral) {
        let type: CBCharacteristicWriteType = characteristic.properties.contains(.writeWithoutResponse) ? .withoutResponse : .withResponse
        peripheral.writeValue(data, for: characteristic, type: type)
    }
}

extension BLEManager: CBCentralManagerDelegate {
    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        isPoweredOn = central.state == .poweredOn
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        // Only devices with a name, each once.
        guard let name = peripheral.name, !name.isEmpty else { return }
        guard !devices.contains(where: { $0.peripheral.identifier == peripheral.identifier }) else { return }
        devices.append(DiscoveredDevice(id: peripheral.identifier, peripheral: peripheral, name: name, rssi: RSSI.intValue))
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        connectedDevice = peripheral
        peripheral.delegate = self
        peripheral.discoverServices(nil)
        if let index = devices.firstIndex(where: { $0.id == peripheral.identifier }) {
            devices[index].isConnected = true
        }
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        connectedDevice = nil
        if let index = devices.firstIndex(where: { $0.id == peripheral.identifier }) {
            devices[index].isConnected = false
        }
    }
}

extension BLEManager: CBPeripheralDelegate {
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        peripheral.services?.forEach { peripheral.discoverCharacteristics(nil, for: $0) }
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        service.characteristics?.forEach { characteristic in
            if characteristic.properties.contains(.notify) {
                peripheral.setNotifyValue(true, for: characteristic)
            }
            if characteristic.properties.contains(.read) {
                peripheral.readValue(for: characteristic)
            }
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard let data = characteristic.value else { return }
        received.append((characteristic.uuid, data))
        if let text = String(data: data, encoding: .utf8) {
            receivedData = text
        }
    }
}

// A battery-level central (seed 003) for a BLE112-style peripheral: scan for the Device
// Information (180A) and Battery (180F) services, connect to the first one found, read the
// manufacturer name (2A29) once, and follow the battery level (2A19, 0–100 %) by notifications.

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothLab
#endif
import Foundation

public final class BatteryMonitor: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    public static let deviceInformationService = CBUUID(string: "180A")
    public static let batteryService = CBUUID(string: "180F")
    public static let manufacturerNameCharacteristic = CBUUID(string: "2A29")
    public static let batteryLevelCharacteristic = CBUUID(string: "2A19")

    /// The latest battery level in percent (nil until read).
    public private(set) var batteryLevel: Int?
    /// Every level received, in order.
    public private(set) var levelHistory: [Int] = []
    /// Values that were not a level in 0–100 (the app ignores them).
    public private(set) var rejectedLevels: [Data] = []
    public private(set) var manufacturerName: String?
    public private(set) var peripheral: CBPeripheral?
    public private(set) var centralManager: CBCentralManager!

    public override init() {
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        central.scanForPeripherals(withServices: [Self.deviceInformationService, Self.batteryService], options: nil)
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        // One peripheral is enough: stop scanning to save the radio, and connect.
        central.stopScan()
        self.peripheral = peripheral
        peripheral.delegate = self
        central.connect(peripheral, options: nil)
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.discoverServices([Self.deviceInformationService, Self.batteryService])
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        self.peripheral = nil
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        for service in peripheral.services ?? [] {
            switch service.uuid {
            case Self.batteryService: peripheral.discoverCharacteristics([Self.batteryLevelCharacteristic], for: service)
            case Self.deviceInformationService: peripheral.discoverCharacteristics([Self.manufacturerNameCharacteristic], for: service)
            default: break
            }
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        for characteristic in service.characteristics ?? [] {
            switch characteristic.uuid {
            case Self.batteryLevelCharacteristic:
                // The level changes over time: be told instead of polling, and read it once now.
                peripheral.setNotifyValue(true, for: characteristic)
                peripheral.readValue(for: characteristic)
            case Self.manufacturerNameCharacteristic:
                // Static: one read is enough.
                peripheral.readValue(for: characteristic)
            default:
                break
            }
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard error == nil, let value = characteristic.value else { return }
        switch characteristic.uuid {
        case Self.batteryLevelCharacteristic:
            guard value.count == 1, value[value.startIndex] <= 100 else { return rejectedLevels.append(value) }
            let level = Int(value[value.startIndex])
            batteryLevel = level
            levelHistory.append(level)
        case Self.manufacturerNameCharacteristic:
            manufacturerName = String(data: value, encoding: .utf8)
        default:
            break
        }
    }
}

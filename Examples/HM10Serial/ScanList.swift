#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothLab
#endif
import Foundation

/// The scan screen's model without the screen: the peripherals found, each once, strongest
/// signal first, and the choice of one to connect to.
public final class ScanList: BluetoothSerialDelegate {
    public private(set) var peripherals: [(peripheral: CBPeripheral, rssi: Float)] = []
    public private(set) var connected: CBPeripheral?
    public private(set) var messages: [String] = []
    private let serial: BluetoothSerial

    public init(serial: BluetoothSerial) {
        self.serial = serial
        serial.delegate = self
    }

    public func start() {
        peripherals = []
        serial.startScan()
    }

    /// The user picked row `index`: stop scanning and connect.
    public func select(_ index: Int) {
        serial.stopScan()
        serial.connect(to: peripherals[index].peripheral)
    }

    public func serialDidDiscoverPeripheral(_ peripheral: CBPeripheral, rssi: NSNumber?) {
        guard !peripherals.contains(where: { $0.peripheral.identifier == peripheral.identifier }) else { return }
        peripherals.append((peripheral, rssi?.floatValue ?? 0))
        peripherals.sort { $0.rssi > $1.rssi }
    }

    public func serialDidConnectPeripheral(_ peripheral: CBPeripheral) {
        connected = peripheral
    }

    public func serialDidReceiveMessage(_ message: String) {
        messages.append(message)
    }
}

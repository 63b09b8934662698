import CoreBluetoothLab
import Foundation

/// A central-side delegate that writes down every callback, in order, as a short line, and keeps
/// what the callbacks handed over. Tests assert on `events` and react through the `on…` hooks.
final class CentralRecorder: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    private(set) var events: [String] = []
    private(set) var discovered: [CBPeripheral] = []
    private(set) var advertisements: [[String: Any]] = []
    private(set) var errors: [String: Error] = [:]
    private(set) var disconnectionTimestamps: [CFAbsoluteTime] = []
    private(set) var restoredState: [String: Any]?
    var onStateUpdate: ((CBCentralManager) -> Void)?
    var onDiscover: ((CBPeripheral, [String: Any], NSNumber) -> Void)?
    var onConnect: ((CBPeripheral) -> Void)?
    var onServices: ((CBPeripheral) -> Void)?
    var onCharacteristics: ((CBPeripheral, CBService) -> Void)?
    var onValue: ((CBCharacteristic) -> Void)?
    var onReady: ((CBPeripheral) -> Void)?

    private func note(_ event: String, error: Error? = nil) {
        if let error { errors[event] = error }
        events.append(error.map { "\(event) error \(($0 as NSError).domain) \(($0 as NSError).code)" } ?? event)
    }

    func count(_ prefix: String) -> Int { events.filter { $0.hasPrefix(prefix) }.count }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        note("state \(central.state)")
        onStateUpdate?(central)
    }

    /// "restore NAMES scan UUIDS"; the dictionary is kept in `restoredState`.
    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any]) {
        restoredState = dict
        let peripherals = (dict[CBCentralManagerRestoredStatePeripheralsKey] as? [CBPeripheral]) ?? []
        let scan = (dict[CBCentralManagerRestoredStateScanServicesKey] as? [CBUUID])?.map(\.uuidString).joined(separator: ",")
        note("restore \(peripherals.map { "\($0.name ?? "-") \($0.state)" }.joined(separator: ",")) scan \(scan ?? "none")")
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        note("discover \(peripheral.name ?? "-")")
        if !discovered.contains(where: { $0 === peripheral }) { discovered.append(peripheral) }
        advertisements.append(advertisementData)
        onDiscover?(peripheral, advertisementData, RSSI)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        note("connect \(peripheral.name ?? "-")")
        peripheral.delegate = self
        onConnect?(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        note("fail \(peripheral.name ?? "-")", error: error)
    }

    /// iOS 17's variant, which the lab calls instead of `didDisconnectPeripheral:error:` when the
    /// delegate implements it: "disconnect NAME", plus " reconnecting" when `isReconnecting`.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                        timestamp: CFAbsoluteTime, isReconnecting: Bool, error: Error?) {
        disconnectionTimestamps.append(timestamp)
        note("disconnect \(peripheral.name ?? "-")" + (isReconnecting ? " reconnecting" : ""), error: error)
    }

    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral) {
        note("event \(event) \(peripheral.name ?? "-")")
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        note("services \((peripheral.services ?? []).map(\.uuid.uuidString).joined(separator: ","))", error: error)
        onServices?(peripheral)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        note("characteristics \(service.uuid.uuidString): \((service.characteristics ?? []).map(\.uuid.uuidString).joined(separator: ","))", error: error)
        onCharacteristics?(peripheral, service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: Error?) {
        note("descriptors \(characteristic.uuid.uuidString): \((characteristic.descriptors ?? []).map(\.uuid.uuidString).joined(separator: ","))", error: error)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        let hex = characteristic.value.map { $0.map { String(format: "%02x", $0) }.joined() } ?? "nil"
        note("value \(characteristic.uuid.uuidString) \(hex)", error: error)
        if error == nil { onValue?(characteristic) }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: Error?) {
        note("descriptor value \(descriptor.uuid.uuidString) \(descriptor.value.map { "\($0)" } ?? "nil")", error: error)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        note("wrote \(characteristic.uuid.uuidString)", error: error)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: Error?) {
        note("wrote descriptor \(descriptor.uuid.uuidString)", error: error)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        note("notifying \(characteristic.uuid.uuidString) \(characteristic.isNotifying)", error: error)
    }

    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: Error?) {
        note("rssi \(RSSI)", error: error)
    }

    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {
        note("modified \(invalidatedServices.map(\.uuid.uuidString).joined(separator: ","))")
    }

    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {
        note("ready")
        onReady?(peripheral)
    }

    /// L2CAP channels opened, in order (the recorder keeps them, as an app must).
    private(set) var channels: [CBL2CAPChannel] = []
    var onOpen: ((CBL2CAPChannel) -> Void)?

    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: Error?) {
        note("open \(channel.map { String(format: "0x%04x", $0.psm) } ?? "nil")", error: error)
        if let channel {
            channels.append(channel)
            onOpen?(channel)
        }
    }
}

import CoreBluetoothLab
import Foundation

/// A peripheral-manager delegate that writes down every callback and answers requests through
/// hooks (default: reads answer `readValue`, writes succeed).
final class PeripheralManagerRecorder: NSObject, CBPeripheralManagerDelegate {
    private(set) var events: [String] = []
    private(set) var written: [Data] = []
    var readValue = Data("hello".utf8)
    var writeResult: CBATTError.Code = .success
    /// When false, requests are kept in `pendingReads` / `pendingWrites` unanswered.
    var answersAtOnce = true
    private(set) var pendingReads: [CBATTRequest] = []
    private(set) var pendingWrites: [CBATTRequest] = []
    var onStateUpdate: ((CBPeripheralManager) -> Void)?
    var onSubscribe: ((CBPeripheralManager, CBCentral, CBCharacteristic) -> Void)?
    var onReady: ((CBPeripheralManager) -> Void)?

    func count(_ prefix: String) -> Int { events.filter { $0.hasPrefix(prefix) }.count }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        events.append("state \(peripheral.state)")
        onStateUpdate?(peripheral)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        events.append("added \(service.uuid.uuidString)" + (error.map { " error \(($0 as NSError).code)" } ?? ""))
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?) {
        events.append("advertising" + (error.map { " error \(($0 as NSError).code)" } ?? ""))
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        events.append("subscribed \(characteristic.uuid.uuidString)")
        onSubscribe?(peripheral, central, characteristic)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        events.append("unsubscribed \(characteristic.uuid.uuidString)")
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        events.append("ready")
        onReady?(peripheral)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        events.append("read \(request.characteristic.uuid.uuidString) at \(request.offset)")
        guard answersAtOnce else { return pendingReads.append(request) }
        request.value = readValue.count > request.offset ? readValue.subdata(in: request.offset..<readValue.count) : Data()
        peripheral.respond(to: request, withResult: .success)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        events.append("write \(requests.map { $0.characteristic.uuid.uuidString }.joined(separator: ","))")
        written += requests.compactMap(\.value)
        guard answersAtOnce else { return pendingWrites.append(contentsOf: requests) }
        if let first = requests.first { peripheral.respond(to: first, withResult: writeResult) }
    }

    /// L2CAP channels opened by centrals, in order (kept, as an app must).
    private(set) var channels: [CBL2CAPChannel] = []
    private(set) var publishedPSMs: [CBL2CAPPSM] = []
    var onOpen: ((CBL2CAPChannel) -> Void)?

    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?) {
        events.append(String(format: "published 0x%04x", PSM) + (error.map { " error \(($0 as NSError).code)" } ?? ""))
        if error == nil { publishedPSMs.append(PSM) }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?) {
        events.append(String(format: "unpublished 0x%04x", PSM) + (error.map { " error \(($0 as NSError).code)" } ?? ""))
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: Error?) {
        events.append("open \(channel.map { String(format: "0x%04x", $0.psm) } ?? "nil")" + (error.map { " error \(($0 as NSError).code)" } ?? ""))
        if let channel {
            channels.append(channel)
            onOpen?(channel)
        }
    }
}

// The peripheral half: a CBPeripheralManager publishes an L2CAP channel, tells its PSM in a
// read-only characteristic (Apple's convention, CBUUIDL2CAPPSMCharacteristicString) of a service
// it advertises, and checks every byte a central streams over the channel against StreamPattern.
//
// The only lab-specific line is the import: on Apple's platforms this file builds against
// CoreBluetooth itself.

#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import CoreBluetoothLab
#endif
import Foundation

public final class StreamReceiver: NSObject, CBPeripheralManagerDelegate, StreamDelegate {
    public private(set) var peripheralManager: CBPeripheralManager!
    /// The PSM the channel was published on, once it was.
    public private(set) var psm: CBL2CAPPSM?
    /// The channel a central opened (kept: iOS closes a channel the app lets go).
    public private(set) var channel: CBL2CAPChannel?
    /// Bytes received and found to match the pattern, in order.
    public private(set) var verifiedBytes = 0
    /// The offset of the first byte that did not match, if one did not.
    public private(set) var firstMismatch: Int?
    /// The channel's input ended (the central closed it, or the link went).
    public private(set) var ended = false

    private let localName: String
    private var buffer = [UInt8](repeating: 0, count: 4096)

    public init(localName: String = "L2CAP Sink") {
        self.localName = localName
        super.init()
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil)
    }

    public func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        peripheral.publishL2CAPChannel(withEncryption: false)
    }

    public func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?) {
        guard error == nil else { return }
        psm = PSM
        let serviceUUID = CBUUID(string: StreamPattern.serviceUUIDString)
        let psmCharacteristic = CBMutableCharacteristic(
            type: CBUUID(string: CBUUIDL2CAPPSMCharacteristicString), properties: [.read],
            value: Data([UInt8(PSM & 0xFF), UInt8(PSM >> 8)]), permissions: [.readable])
        let service = CBMutableService(type: serviceUUID, primary: true)
        service.characteristics = [psmCharacteristic]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: localName, CBAdvertisementDataServiceUUIDsKey: [serviceUUID]])
    }

    public func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: Error?) {
        guard let channel else { return }
        self.channel = channel
        channel.inputStream.delegate = self
        channel.inputStream.schedule(in: .current, forMode: .default)
        channel.inputStream.open()
    }

    public func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard let input = aStream as? InputStream else { return }
        switch eventCode {
        case .hasBytesAvailable:
            while input.hasBytesAvailable {
                let n = input.read(&buffer, maxLength: buffer.count)
                guard n > 0 else { break }
                check(buffer[0..<n])
            }
        case .endEncountered, .errorOccurred:
            ended = true
            input.close()
        default:
            break
        }
    }

    private func check(_ bytes: ArraySlice<UInt8>) {
        for byte in bytes {
            if firstMismatch == nil, byte != StreamPattern.byte(at: verifiedBytes) { firstMismatch = verifiedBytes }
            if firstMismatch == nil { verifiedBytes += 1 }
        }
    }
}

import BLELab
import BLERuntime
import CoreBluetoothLab
import Foundation
import HCI
import XCTest

/// CBAttributePermissions' encryption on a peripheral manager, and a central manager that pairs
/// when the peripheral asks for it, as iOS does (the user's pairing dialog answered yes).
final class PairingTests: LabTestCase {
    private let serviceUUID = CBUUID(string: "A0E1F3D2-0000-4000-8000-00000000BB01")
    private let secretUUID = CBUUID(string: "A0E1F3D2-0000-4000-8000-00000000BB02")
    private var manager: CBPeripheralManager!
    private var managerRecorder: PeripheralManagerRecorder!
    private var central: CBCentralManager?

    override func tearDown() {
        manager = nil
        managerRecorder = nil
        central = nil
        super.tearDown()
    }

    /// A lock: one cached characteristic whose value needs encryption to read.
    private func publishLock() {
        managerRecorder = PeripheralManagerRecorder()
        let secret = CBMutableCharacteristic(type: secretUUID, properties: [.read], value: Data("code".utf8),
                                             permissions: [.readable, .readEncryptionRequired])
        let service = CBMutableService(type: serviceUUID, primary: true)
        service.characteristics = [secret]
        managerRecorder.onStateUpdate = { [serviceUUID] pm in
            guard pm.state == .poweredOn else { return }
            pm.add(service)
            pm.startAdvertising([CBAdvertisementDataLocalNameKey: "Lock", CBAdvertisementDataServiceUUIDsKey: [serviceUUID]])
        }
        manager = lab.attach { CBPeripheralManager(delegate: managerRecorder, queue: nil) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.manager.isAdvertising })
    }

    /// The lock published, a central connected to it that has read the secret (and so paired).
    private func pairedByARead() throws -> (CentralRecorder, CBCentralManager, CBPeripheral) {
        publishLock()
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        self.central = central
        let peripheral = try connectAndDiscover("Lock", with: central, recorder)
        peripheral.readValue(for: try characteristic(secretUUID.uuidString, of: peripheral))
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.count("value") == 1 })
        return (recorder, central, peripheral)
    }

    func testReadingAnEncryptedCharacteristicPairsThenReads() throws {
        let (recorder, central, _) = try pairedByARead()
        XCTAssertEqual(recorder.events.last, "value \(secretUUID.uuidString) 636f6465")
        // On the link: the read refused (Insufficient Authentication), SMP, encryption, the read again.
        let centralDevice = try XCTUnwrap(lab.device(of: central))
        XCTAssertEqual(centralDevice.host.bonds.bonds.count, 1)
        XCTAssertTrue(try XCTUnwrap(centralDevice.host.connections.values.first).security.encrypted)
    }

    func testAPeripheralThatForgotItsBondEndsTheLinkWithPeerRemovedPairingInformation() throws {
        let (recorder, central, peripheral) = try pairedByARead()
        central.cancelPeripheralConnection(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.count("disconnect") == 1 })

        // The lock's factory reset; the phone still has its bond.
        try XCTUnwrap(lab.device(of: manager)).host.bonds.forgetAll()
        manager.startAdvertising([CBAdvertisementDataLocalNameKey: "Lock", CBAdvertisementDataServiceUUIDsKey: [serviceUUID]])
        lab.run(for: .milliseconds(200))
        recorder.onConnect = { $0.discoverServices(nil) }
        recorder.onServices = { p in for s in p.services ?? [] { p.discoverCharacteristics(nil, for: s) } }
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.count("characteristics") == 2 })
        peripheral.readValue(for: try characteristic(secretUUID.uuidString, of: peripheral))
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.count("disconnect") == 2 })
        let error = try XCTUnwrap(recorder.errors["disconnect Lock"] as? CBError)
        XCTAssertEqual(error.code, .peerRemovedPairingInformation)
        // The read itself fails with the peripheral's answer, before the link drops.
        XCTAssertEqual(recorder.events.filter { $0.hasPrefix("value") }.last, "value \(secretUUID.uuidString) nil error CBATTErrorDomain 5")
    }
}

import ATT
import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import XCTest

/// CBPeripheralManager on one controller, a CBCentralManager on another, both through this API.
final class PeripheralManagerTests: LabTestCase {
    private let serviceUUID = CBUUID(string: "A0E1F3D2-0000-4000-8000-00000000AA01")
    private var manager: CBPeripheralManager!
    private var managerRecorder: PeripheralManagerRecorder!
    private var dynamic: CBMutableCharacteristic!
    private var cached: CBMutableCharacteristic!
    private var notifying: CBMutableCharacteristic!
    /// The app keeps its central manager; one that is released stops calling back, as on Apple's platforms.
    private var central: CBCentralManager?

    override func tearDown() {
        manager = nil
        managerRecorder = nil
        central = nil
        super.tearDown()
    }

    /// A peripheral manager publishing one service with a dynamic read/write characteristic
    /// (…AA02), a cached read-only one (…AA03) and a notifying one (…AA04), advertising "Lab PM".
    private func publish() {
        managerRecorder = PeripheralManagerRecorder()
        dynamic = CBMutableCharacteristic(type: CBUUID(string: "A0E1F3D2-0000-4000-8000-00000000AA02"),
                                          properties: [.read, .write, .writeWithoutResponse], value: nil,
                                          permissions: [.readable, .writeable])
        cached = CBMutableCharacteristic(type: CBUUID(string: "A0E1F3D2-0000-4000-8000-00000000AA03"),
                                         properties: [.read], value: Data("v1.0".utf8), permissions: [.readable])
        notifying = CBMutableCharacteristic(type: CBUUID(string: "A0E1F3D2-0000-4000-8000-00000000AA04"),
                                            properties: [.notify, .indicate], value: nil, permissions: [.readable])
        let service = CBMutableService(type: serviceUUID, primary: true)
        service.characteristics = [dynamic, cached, notifying]
        managerRecorder.onStateUpdate = { [serviceUUID] pm in
            guard pm.state == .poweredOn else { return }
            pm.add(service)
            pm.startAdvertising([CBAdvertisementDataLocalNameKey: "Lab PM", CBAdvertisementDataServiceUUIDsKey: [serviceUUID]])
        }
        manager = lab.attach { CBPeripheralManager(delegate: managerRecorder, queue: nil) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.manager.isAdvertising })
        XCTAssertEqual(managerRecorder.events, ["state poweredOn", "added A0E1F3D2-0000-4000-8000-00000000AA01", "advertising"])
    }

    private func connectedCentral() throws -> (CentralRecorder, CBCentralManager, CBPeripheral) {
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        central.scanForPeripherals(withServices: [serviceUUID])
        XCTAssertTrue(lab.run(within: .seconds(5)) { !recorder.discovered.isEmpty })
        central.stopScan()
        let peripheral = try connectAndDiscover("Lab PM", with: central, recorder)
        self.central = central
        return (recorder, central, peripheral)
    }

    func testAdvertisingCarriesNameAndServiceAndGoesOnAfterAConnection() throws {
        publish()
        let (recorder, _, peripheral) = try connectedCentral()
        XCTAssertEqual(recorder.advertisements.first?[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID], [serviceUUID])
        XCTAssertEqual(peripheral.services?.map(\.uuid), [serviceUUID])
        XCTAssertEqual(lab.device(of: manager)?.host.isAdvertising, true, "still advertising while connected")
        manager.stopAdvertising()
        lab.run(for: .milliseconds(100))
        XCTAssertEqual(lab.device(of: manager)?.host.isAdvertising, false)
        XCTAssertFalse(manager.isAdvertising)
    }

    func testALocalNameThatDoesNotFitGoesToTheScanResponse() throws {
        managerRecorder = PeripheralManagerRecorder()
        let name = "Kitchen thermometer 2"
        managerRecorder.onStateUpdate = { [serviceUUID] pm in
            if pm.state == .poweredOn { pm.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [serviceUUID]]) }
        }
        manager = lab.attach { CBPeripheralManager(delegate: managerRecorder, queue: nil) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.manager.isAdvertising })
        let configuration = try XCTUnwrap(lab.device(of: manager)?.host.advertisingConfiguration)
        XCTAssertNil(configuration.data.localName, "flags and the 128-bit UUID leave no room")
        XCTAssertEqual(configuration.scanResponse?.localName, name)
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        central.scanForPeripherals(withServices: [serviceUUID])
        XCTAssertTrue(lab.run(within: .seconds(2)) { !recorder.discovered.isEmpty })
        XCTAssertEqual(recorder.discovered.first?.name, name)
        XCTAssertEqual(recorder.advertisements.first?[CBAdvertisementDataLocalNameKey] as? String, name)
    }

    func testReadsOfACachedValueNeverReachTheDelegate() throws {
        publish()
        let (recorder, _, peripheral) = try connectedCentral()
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AA03", of: peripheral)
        peripheral.readValue(for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(2)) { characteristic.value != nil })
        XCTAssertEqual(characteristic.value, Data("v1.0".utf8))
        XCTAssertEqual(managerRecorder.count("read"), 0)
        XCTAssertEqual(recorder.count("value"), 1, "\(recorder.events)")
    }

    func testReadRequestsAreAnsweredByRespond() throws {
        publish()
        let (_, _, peripheral) = try connectedCentral()
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AA02", of: peripheral)
        managerRecorder.answersAtOnce = false
        peripheral.readValue(for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.managerRecorder.pendingReads.count == 1 })
        lab.run(for: .seconds(1))
        XCTAssertNil(characteristic.value, "no answer yet: the ATT request waits for respond(to:withResult:)")
        let request = managerRecorder.pendingReads[0]
        XCTAssertEqual(request.offset, 0)
        XCTAssertEqual(request.central.maximumUpdateValueLength, 244)
        request.value = Data("later".utf8)
        manager.respond(to: request, withResult: .success)
        manager.respond(to: request, withResult: .unlikelyError)
        XCTAssertTrue(lab.run(within: .seconds(2)) { characteristic.value != nil })
        XCTAssertEqual(characteristic.value, Data("later".utf8))
    }

    func testLongReadsGoThroughTheDelegateWithOffsets() throws {
        publish()
        let (_, _, peripheral) = try connectedCentral()
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AA02", of: peripheral)
        managerRecorder.readValue = Data((0..<400).map { UInt8(truncatingIfNeeded: $0) })
        peripheral.readValue(for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(3)) { characteristic.value != nil })
        XCTAssertEqual(characteristic.value, managerRecorder.readValue)
        XCTAssertEqual(managerRecorder.events.filter { $0.hasPrefix("read") }, ["read A0E1F3D2-0000-4000-8000-00000000AA02 at 0",
                                                                              "read A0E1F3D2-0000-4000-8000-00000000AA02 at 246"])
    }

    func testWriteRequestsAreAnsweredByRespondAndCommandsNeedNoAnswer() throws {
        publish()
        let (recorder, _, peripheral) = try connectedCentral()
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AA02", of: peripheral)
        managerRecorder.writeResult = .insufficientAuthorization
        peripheral.writeValue(Data([1, 2]), for: characteristic, type: .withResponse)
        XCTAssertTrue(lab.run(within: .seconds(2)) { recorder.count("wrote") == 1 })
        XCTAssertEqual((recorder.errors.values.first as? CBATTError)?.code, .insufficientAuthorization)

        managerRecorder.writeResult = .success
        peripheral.writeValue(Data([3]), for: characteristic, type: .withResponse)
        peripheral.writeValue(Data([4]), for: characteristic, type: .withoutResponse)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.managerRecorder.written.count == 3 && recorder.count("wrote") == 2 })
        XCTAssertEqual(managerRecorder.written, [Data([1, 2]), Data([3]), Data([4])])
        XCTAssertEqual(recorder.count("wrote"), 2)
        XCTAssertEqual(lab.attWrites(to: characteristic.uuid).map(\.opcode), [.writeRequest, .writeRequest, .writeCommand])
    }

    /// Application error codes (0x80–0x9F, Core 5.4 Vol 3 Part F 3.4.1.1) are answered as given:
    /// the Error Response on the link carries the app's code, and the central reports it.
    func testApplicationErrorCodesAreAnsweredOnTheLinkAsGiven() throws {
        publish()
        let (recorder, central, peripheral) = try connectedCentral()
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AA02", of: peripheral)
        peripheral.writeValue(Data([0]), for: characteristic, type: .withResponse)    // answered: success
        XCTAssertTrue(lab.run(within: .seconds(2)) { recorder.count("wrote") == 1 })
        let handle = try XCTUnwrap(lab.attWrites(to: characteristic.uuid).first?.handle)
        let errorResponses: () -> [[UInt8]] = {
            self.lab.attTraffic(of: central).filter { !$0.wasSent && $0.opcode == .errorResponse }.map(\.bytes)
        }

        let applicationError = try XCTUnwrap(CBATTError.Code(rawValue: 0x80))
        managerRecorder.writeResult = applicationError
        peripheral.writeValue(Data([1]), for: characteristic, type: .withResponse)
        XCTAssertTrue(lab.run(within: .seconds(2)) { recorder.count("wrote") == 2 })
        XCTAssertEqual(errorResponses().last, [0x01, 0x12, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x80], "Error Response to the Write Request, code 0x80")
        let writeError = try XCTUnwrap(recorder.errors["wrote A0E1F3D2-0000-4000-8000-00000000AA02"])
        XCTAssertEqual((writeError as NSError).domain, CBATTErrorDomain)
        XCTAssertEqual((writeError as NSError).code, 0x80)
        XCTAssertEqual((writeError as? CBATTError)?.code, applicationError)
        XCTAssertEqual(writeError.localizedDescription, "Unknown ATT error.")

        managerRecorder.answersAtOnce = false
        peripheral.readValue(for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.managerRecorder.pendingReads.count == 1 })
        let request = try XCTUnwrap(managerRecorder.pendingReads.first)
        manager.respond(to: request, withResult: try XCTUnwrap(CBATTError.Code(rawValue: 0x9F)))
        XCTAssertTrue(lab.run(within: .seconds(2)) { recorder.count("value") == 1 })
        XCTAssertEqual(errorResponses().last, [0x01, 0x0A, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x9F], "Error Response to the Read Request, code 0x9F")
        XCTAssertEqual((recorder.errors["value A0E1F3D2-0000-4000-8000-00000000AA02 nil"] as NSError?)?.code, 0x9F)
    }

    /// A code that is no ATT Error Code cannot cross the link: Unlikely Error goes instead, and
    /// the misuse is reported (the lab used to crash converting it to an octet).
    func testACodeBeyondAnOctetIsAnsweredAsUnlikelyErrorWithAWarning() throws {
        publish()
        let (recorder, central, peripheral) = try connectedCentral()
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AA02", of: peripheral)
        managerRecorder.writeResult = try XCTUnwrap(CBATTError.Code(rawValue: 0x1FF))
        peripheral.writeValue(Data([1]), for: characteristic, type: .withResponse)
        XCTAssertTrue(lab.run(within: .seconds(2)) { recorder.count("wrote") == 1 })
        XCTAssertEqual(lab.attTraffic(of: central).last { !$0.wasSent && $0.opcode == .errorResponse }?.bytes.last, 0x0E)
        XCTAssertEqual((recorder.errors.values.first as? CBATTError)?.code, .unlikelyError)
        XCTAssertTrue(lab.warnings.last?.contains("API MISUSE: respond(to:withResult:) with CBATTError.Code(rawValue: 511)") ?? false,
                      "\(lab.warnings.last ?? "")")
    }

    func testSubscribeUpdateAndUnsubscribe() throws {
        publish()
        let (recorder, central, peripheral) = try connectedCentral()
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AA04", of: peripheral)
        XCTAssertTrue(manager.updateValue(Data([0]), for: notifying, onSubscribedCentrals: nil), "nobody to send to")
        peripheral.setNotifyValue(true, for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.managerRecorder.count("subscribed") == 1 })
        XCTAssertEqual(notifying.subscribedCentrals?.count, 1)
        XCTAssertEqual(notifying.subscribedCentrals?.first?.maximumUpdateValueLength, 244)
        XCTAssertTrue(manager.updateValue(Data([0x2A]), for: notifying, onSubscribedCentrals: nil))
        XCTAssertTrue(lab.run(within: .seconds(2)) { characteristic.value == Data([0x2A]) })
        XCTAssertTrue(lab.attTraffic(of: central).contains { $0.opcode == .handleValueNotification }, "notify is preferred over indicate")

        peripheral.setNotifyValue(false, for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.managerRecorder.count("unsubscribed") == 1 })
        XCTAssertEqual(notifying.subscribedCentrals?.count, 0)
        XCTAssertEqual(recorder.count("value"), 1, "\(recorder.events)")
    }

    func testADisconnectingSubscriberIsUnsubscribed() throws {
        publish()
        let (_, central, peripheral) = try connectedCentral()
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AA04", of: peripheral)
        peripheral.setNotifyValue(true, for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.managerRecorder.count("subscribed") == 1 })
        central.cancelPeripheralConnection(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.managerRecorder.count("unsubscribed") == 1 })
        XCTAssertEqual(notifying.subscribedCentrals?.count, 0)
    }

    func testUpdateValueReturnsFalseWhenTheQueueIsFullThenIsReadyFollows() throws {
        publish()
        let (recorder, _, peripheral) = try connectedCentral()
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AA04", of: peripheral)
        peripheral.setNotifyValue(true, for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.managerRecorder.count("subscribed") == 1 })

        var sent = 0
        while manager.updateValue(Data([UInt8(sent)]), for: notifying, onSubscribedCentrals: nil) { sent += 1 }
        XCTAssertGreaterThan(sent, lab.transmitQueueLimit)
        var total = sent
        managerRecorder.onReady = { pm in
            while total < 50, pm.updateValue(Data([UInt8(total)]), for: self.notifying, onSubscribedCentrals: nil) { total += 1 }
        }
        XCTAssertTrue(lab.run(within: .seconds(5)) { recorder.count("value") == 50 })
        XCTAssertGreaterThanOrEqual(managerRecorder.count("ready"), 1)
        XCTAssertEqual(recorder.events.filter { $0.hasPrefix("value") },
                       (0..<50).map { "value A0E1F3D2-0000-4000-8000-00000000AA04 " + String(format: "%02x", $0) }, "none lost, in order")
    }

    func testACachedValueOnAWritableCharacteristicIsRefused() {
        managerRecorder = PeripheralManagerRecorder()
        let bad = CBMutableService(type: CBUUID(string: "FEED"), primary: true)
        bad.characteristics = [CBMutableCharacteristic(type: CBUUID(string: "BEEF"), properties: [.read, .write],
                                                       value: Data([1]), permissions: [.readable, .writeable])]
        managerRecorder.onStateUpdate = { pm in if pm.state == .poweredOn { pm.add(bad) } }
        manager = lab.attach { CBPeripheralManager(delegate: managerRecorder, queue: nil) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.managerRecorder.count("added") == 1 })
        XCTAssertEqual(managerRecorder.events.last, "added FEED error \(CBError.Code.invalidParameters.rawValue)")
    }

    func testPoweringOffStopsAdvertisingAndKeepsServicesAResetClearsThem() throws {
        publish()
        let database = { self.lab.device(of: self.manager)?.host.gattServer.database.service(self.serviceUUID.bluetoothUUIDForTests) }
        lab.powerOff(manager)
        XCTAssertEqual(manager.state, .poweredOff)
        XCTAssertFalse(manager.isAdvertising)
        XCTAssertNotNil(database(), "the local database survives a power-off")

        lab.powerOn(manager)
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.manager.state == .poweredOn })
        // The recorder adds its service again on .poweredOn, as many apps do: it is still published.
        XCTAssertTrue(lab.run(within: .seconds(1)) { self.managerRecorder.count("added") == 2 })
        XCTAssertEqual(managerRecorder.events.filter { $0.hasPrefix("added") }.last,
                       "added \(serviceUUID.uuidString) error \(CBError.Code.invalidParameters.rawValue)")
        XCTAssertEqual(lab.device(of: manager)?.host.gattServer.database.services.filter { $0.uuid == serviceUUID.bluetoothUUIDForTests }.count, 1)

        lab.reset(manager)
        XCTAssertEqual(manager.state, .resetting)
        XCTAssertNil(database(), "cleared below powered off")
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.manager.state == .poweredOn })
        XCTAssertEqual(lab.device(of: manager)?.host.gattServer.database.services.filter { $0.uuid == serviceUUID.bluetoothUUIDForTests }.count, 1)
    }
}

extension CBUUID {
    var bluetoothUUIDForTests: BluetoothUUID { BluetoothUUID(string: uuidString)! }
}

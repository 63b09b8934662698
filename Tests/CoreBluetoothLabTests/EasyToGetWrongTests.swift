import ATT
import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import ScenarioFormat
import XCTest

/// The documented behaviours apps most often get wrong, each checked against what crossed the
/// link, not only against what the API reported.
final class EasyToGetWrongTests: ConnectedProbeTestCase {

    func testDidWriteValueForNeverFiresForWithoutResponse() throws {
        let fff1 = try characteristic("FFF1", of: peripheral)
        peripheral.writeValue(Data([0x42]), for: fff1, type: .withoutResponse)
        lab.run(for: .seconds(2))
        XCTAssertEqual(recorder.count("wrote"), 0)
        let writes = lab.attWrites(to: CBUUID(string: "FFF1"))
        XCTAssertEqual(writes.map(\.opcode), [.writeCommand], "a Write Command (0x52) crossed the link")
        XCTAssertEqual(writes.first?.value, Data([0x42]))
        XCTAssertEqual(probe.value(of: CharacteristicRef(0xFFF1)), [0x42])
    }

    func testWithResponseGetsDidWriteValueForAfterTheWriteResponse() throws {
        let fff2 = try characteristic("FFF2", of: peripheral)
        peripheral.writeValue(Data([0x07]), for: fff2, type: .withResponse)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.recorder.count("wrote") == 1 })
        XCTAssertEqual(recorder.events.last, "wrote FFF2")
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF2")).map(\.opcode), [.writeRequest])
        XCTAssertEqual(probe.value(of: CharacteristicRef(0xFFF2)), [0x07])
    }

    /// CoreBluetooth sends the Write Request whatever the properties say; the peripheral's Error
    /// Response comes back as CBATTError.writeNotPermitted.
    func testWithResponseOnACharacteristicWithoutWriteFailsWithWriteNotPermitted() throws {
        let fff1 = try characteristic("FFF1", of: peripheral)
        XCTAssertFalse(fff1.properties.contains(.write))
        peripheral.writeValue(Data([0x0E]), for: fff1, type: .withResponse)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.recorder.count("wrote") == 1 })
        let error = try XCTUnwrap(recorder.errors["wrote FFF1"])
        XCTAssertEqual((error as? CBATTError)?.code, .writeNotPermitted)
        XCTAssertEqual((error as NSError).domain, CBATTErrorDomain)
        XCTAssertEqual((error as NSError).code, 3)
        XCTAssertEqual(error.localizedDescription, "Writing is not permitted.")
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF1")).map(\.opcode), [.writeRequest], "the request really went out")
        let answers = lab.attTraffic(of: central).filter { !$0.wasSent }.compactMap(\.pdu)
        XCTAssertTrue(answers.contains { if case let .errorResponse(e) = $0 { return e.error == .writeNotPermitted } else { return false } })
        XCTAssertEqual(probe.value(of: CharacteristicRef(0xFFF1)), [0x01], "the refused value was not stored")
    }

    /// CoreBluetooth drops a Write Command to a characteristic without write-without-response
    /// and only logs a warning: nothing crosses the link, no callback.
    func testWithoutResponseOnACharacteristicWithoutThePropertyIsDroppedWithAWarning() throws {
        let fff2 = try characteristic("FFF2", of: peripheral)
        peripheral.writeValue(Data([0x09]), for: fff2, type: .withoutResponse)
        lab.run(for: .seconds(2))
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF2")), [])
        XCTAssertEqual(recorder.count("wrote"), 0)
        XCTAssertTrue(lab.warnings.last?.contains("does not specify the \"Write Without Response\" property") ?? false)
    }

    func testWithoutResponseLongerThanTheMaximumIsDroppedWithAWarning() throws {
        let fff1 = try characteristic("FFF1", of: peripheral)
        let maximum = peripheral.maximumWriteValueLength(for: .withoutResponse)
        peripheral.writeValue(Data(count: maximum + 1), for: fff1, type: .withoutResponse)
        peripheral.writeValue(Data(count: maximum), for: fff1, type: .withoutResponse)
        lab.run(for: .seconds(1))
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF1")).map(\.value.count), [maximum], "only the one that fits")
        XCTAssertTrue(lab.warnings.last?.contains("maximumWriteValueLength") ?? false)
    }

    func testSetNotifyValueOnACharacteristicWithoutNotifyOrIndicateFails() throws {
        let fff3 = try characteristic("FFF3", of: peripheral)
        let before = lab.attTraffic(of: central).count
        peripheral.setNotifyValue(true, for: fff3)
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.recorder.count("notifying") == 1 })
        XCTAssertEqual((recorder.errors["notifying FFF3 false"] as? CBATTError)?.code, .requestNotSupported)
        XCTAssertFalse(fff3.isNotifying)
        XCTAssertEqual(lab.attTraffic(of: central).count, before, "nothing was sent")
    }

    func testNotificationsArriveOnlyWhileNotifying() throws {
        let fff4 = try characteristic("FFF4", of: peripheral)
        let notify: (UInt8) -> Void = { self.probe.perform([.notify(CharacteristicRef(0xFFF4), .bytes([$0]))]) }
        notify(0x10)
        lab.run(for: .seconds(1))
        XCTAssertEqual(recorder.count("value FFF4"), 0, "not subscribed yet")

        peripheral.setNotifyValue(true, for: fff4)
        XCTAssertTrue(lab.run(within: .seconds(2)) { fff4.isNotifying })
        notify(0x11)
        notify(0x12)
        lab.run(for: .seconds(1))
        XCTAssertEqual(recorder.events.filter { $0.hasPrefix("value FFF4") }, ["value FFF4 11", "value FFF4 12"])
        XCTAssertEqual(fff4.value, Data([0x12]))

        peripheral.setNotifyValue(false, for: fff4)
        XCTAssertTrue(lab.run(within: .seconds(2)) { !fff4.isNotifying })
        let notificationsBefore = lab.attTraffic(of: central).filter { $0.opcode == .handleValueNotification }.count
        notify(0x13)
        lab.run(for: .seconds(1))
        XCTAssertEqual(recorder.count("value FFF4"), 2)
        XCTAssertEqual(lab.attTraffic(of: central).filter { $0.opcode == .handleValueNotification }.count, notificationsBefore,
                       "the peripheral sent nothing once the CCCD was cleared")
    }

    func testIndicationsAreUsedWhenTheCharacteristicOnlyIndicates() throws {
        let fff5 = try characteristic("FFF5", of: peripheral)
        peripheral.setNotifyValue(true, for: fff5)
        XCTAssertTrue(lab.run(within: .seconds(2)) { fff5.isNotifying })
        probe.perform([.indicate(CharacteristicRef(0xFFF5), .bytes([0x55]))])
        lab.run(for: .seconds(1))
        XCTAssertEqual(recorder.events.last, "value FFF5 55")
        XCTAssertTrue(lab.attTraffic(of: central).contains { $0.opcode == .handleValueConfirmation && $0.wasSent })
    }
}

extension CBLab.ATTWrite: Equatable {
    public static func == (a: CBLab.ATTWrite, b: CBLab.ATTWrite) -> Bool {
        a.time == b.time && a.opcode == b.opcode && a.handle == b.handle && a.value == b.value && a.receiver == b.receiver
    }
}

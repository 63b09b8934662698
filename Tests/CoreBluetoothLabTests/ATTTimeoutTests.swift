import ATT
import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import ScenarioFormat
import XCTest

/// A peripheral that never answers an ATT request. After 30 s the transaction has timed out (Core
/// 5.4 Vol 3 Part F 3.3.3): no further ATT PDU may be sent on that bearer, and only a new link
/// brings a new one. iOS reports the pending operation's failure, ends the link, and reports the
/// disconnection with CBError.connectionTimeout; so does the lab.
final class ATTTimeoutTests: LabTestCase {
    private var recorder: CentralRecorder!
    private var central: CBCentralManager!
    private var peripheral: CBPeripheral!
    private var probe: SimulatedPeripheral!

    override func setUpWithError() throws {
        try super.setUpWithError()
        var spec = Peripherals.probe()
        // FFF3 is read with a Read Request that the probe's server never answers.
        spec.flaws = [ATTFlaw(requests: [.readRequest], characteristic: CharacteristicRef(0xFFF3), answer: .none)]
        spec.onDisconnect = [.startAdvertising]
        probe = try lab.addPeripheral(spec)
        recorder = CentralRecorder()
        central = poweredCentral(recorder)
        peripheral = try connectAndDiscover("Probe", with: central, recorder)
        lab.run(for: .seconds(1))
    }

    override func tearDown() {
        recorder = nil
        central = nil
        peripheral = nil
        probe = nil
        super.tearDown()
    }

    /// HCI Disconnect (OGF 0x01, OCF 0x006) commands and Disconnection Complete (0x05) events in
    /// the central's HCI log since `start`.
    private func hci(since start: Instant) throws -> (disconnects: [(time: Instant, frame: [UInt8])], completes: [[UInt8]]) {
        let log = try XCTUnwrap(lab.device(of: central)).log.packets.filter { $0.time >= start }
        let disconnects = log.filter { $0.direction == .hostToController && $0.frame.starts(with: [0x01, 0x06, 0x04]) }
        let completes = log.filter { $0.direction == .controllerToHost && $0.frame.starts(with: [0x04, 0x05]) }
        return (disconnects.map { ($0.time, $0.frame) }, completes.map(\.frame))
    }

    func testTheTimedOutOperationFailsThenTheLinkIsDisconnectedWithConnectionTimeout() throws {
        let fff1 = try characteristic("FFF1", of: peripheral)
        let fff2 = try characteristic("FFF2", of: peripheral)
        let fff3 = try characteristic("FFF3", of: peripheral)
        let handle = try XCTUnwrap(lab.device(of: central)?.host.connections.keys.first)
        let start = lab.now
        let eventsBefore = recorder.events.count
        peripheral.readValue(for: fff3)        // never answered
        peripheral.readValue(for: fff1)        // queued behind it
        peripheral.writeValue(Data([0x22]), for: fff2, type: .withResponse)

        // The read fails at the timeout; the central then ends the link.
        XCTAssertTrue(lab.run(within: .seconds(40)) { self.recorder.count("value FFF3") == 1 })
        XCTAssertGreaterThanOrEqual(lab.now - start, .seconds(30))
        XCTAssertLessThan(lab.now - start, .seconds(31))
        XCTAssertEqual(peripheral.state, .disconnecting)
        XCTAssertEqual(recorder.count("disconnect"), 0, "the operation's failure comes first")
        let readError = try XCTUnwrap(recorder.errors["value FFF3 nil"])
        XCTAssertEqual((readError as? CBError)?.code, .connectionTimeout)

        XCTAssertTrue(lab.run(within: .seconds(5)) { self.peripheral.state == .disconnected })
        XCTAssertEqual(Array(recorder.events.dropFirst(eventsBefore)),
                       ["value FFF3 nil error CBErrorDomain 6", "disconnect Probe error CBErrorDomain 6"],
                       "the queued read and write end with the link, without callbacks")
        let error = try XCTUnwrap(recorder.errors["disconnect Probe"])
        XCTAssertEqual((error as? CBError)?.code, .connectionTimeout)
        XCTAssertEqual(error.localizedDescription, "The connection has timed out unexpectedly.")

        // On the central's HCI: Disconnect for the link (reason 0x13, Remote User Terminated
        // Connection), sent at the timeout, then its Disconnection Complete.
        let (disconnects, completes) = try hci(since: start)
        XCTAssertEqual(disconnects.map(\.frame), [[0x01, 0x06, 0x04, 0x03, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x13]])
        XCTAssertGreaterThanOrEqual((disconnects.first?.time ?? start) - start, .seconds(30))
        XCTAssertEqual(completes.count, 1)
        XCTAssertEqual(completes.first.map { Array($0.suffix(4).prefix(3)) }, [0x00, UInt8(handle & 0xFF), UInt8(handle >> 8)], "status success, the link's handle")

        // On the bearer: the Read Request was the last ATT PDU the central sent.
        let sent = lab.attTraffic(of: central).filter { $0.wasSent && $0.time >= start }
        XCTAssertEqual(sent.map(\.opcode), [.readRequest], "no ATT after the timed-out request: \(sent)")
        let fff3Handle = try XCTUnwrap(probe.server.database.services.flatMap(\.characteristics).first { $0.uuid == BluetoothUUID(uuid16: 0xFFF3) }?.valueHandle)
        XCTAssertEqual(sent.first?.bytes, [0x0A, UInt8(fff3Handle & 0xFF), UInt8(fff3Handle >> 8)])
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF2")).count, 0)
        XCTAssertEqual(probe.value(of: CharacteristicRef(0xFFF2)), [0x02])
    }

    func testCallsAfterTheTimeoutAreRefusedAsOnADisconnectedPeripheral() throws {
        let fff1 = try characteristic("FFF1", of: peripheral)
        let fff3 = try characteristic("FFF3", of: peripheral)
        peripheral.readValue(for: fff3)
        XCTAssertTrue(lab.run(within: .seconds(40)) { self.recorder.count("value FFF3") == 1 })

        // At once, while the link is going down, and after it is down.
        let eventsBefore = recorder.events.count
        let sentBefore = lab.attTraffic(of: central).filter(\.wasSent).count
        peripheral.readValue(for: fff1)
        peripheral.writeValue(Data([0x11]), for: fff1, type: .withoutResponse)
        XCTAssertFalse(peripheral.canSendWriteWithoutResponse)
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.peripheral.state == .disconnected })
        peripheral.readValue(for: fff1)
        peripheral.readRSSI()
        lab.run(for: .seconds(1))
        XCTAssertEqual(Array(recorder.events.dropFirst(eventsBefore)), ["disconnect Probe error CBErrorDomain 6"])
        XCTAssertEqual(lab.attTraffic(of: central).filter(\.wasSent).count, sentBefore, "nothing was sent")
        XCTAssertEqual(lab.attWrites(to: CBUUID(string: "FFF1")).count, 0)
        let misuse = lab.warnings.suffix(4)
        XCTAssertEqual(misuse.count, 4)
        XCTAssertTrue(misuse.allSatisfy { $0.contains("API MISUSE") && $0.contains("can only accept commands while in the connected state") }, "\(misuse)")

        // A new connection works: the timeout ended the old bearer, not the peripheral.
        recorder.onConnect = { $0.discoverServices(nil) }
        recorder.onServices = { p in for s in p.services ?? [] { p.discoverCharacteristics(nil, for: s) } }
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.peripheral.state == .connected && self.peripheral.services?.first?.characteristics != nil })
        peripheral.readValue(for: try characteristic("FFF1", of: peripheral))
        XCTAssertTrue(lab.run(within: .seconds(2)) { self.recorder.count("value FFF1") == 1 })
        XCTAssertEqual(recorder.events.last, "value FFF1 01")
    }
}

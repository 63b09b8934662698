import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import ScenarioFormat
import XCTest

/// Flawed simulated peripherals on the sim air: each fault is checked on the ATT PDUs that crossed
/// the peripheral's and the central's HCI (Core 5.4 Vol 3 Part F), as a field capture shows them.
final class FlawedPeripheralTests: XCTestCase {
    private struct Rig {
        let lab: Lab
        let peripheral: SimulatedPeripheral
        let central: LabDevice
        let connection: Connection

        /// What the central received on its HCI since `from`, as spaced hex.
        func centralReceived(from: Int = 0) -> [String] {
            central.traffic.records.dropFirst(from).filter { !$0.wasSent }.map(\.bytes.spacedHex)
        }
        func peripheralSent(from: Int = 0) -> [String] {
            peripheral.device.traffic.records.dropFirst(from).filter(\.wasSent).map(\.bytes.spacedHex)
        }
    }

    /// 0x000A 180F: 2A19 decl 0x000B, value 0x000C, CCCD 0x000D; 0x000E 180A: 2A29 decl 0x000F, value 0x0010.
    private func spec(_ flaws: [ATTFlaw]) -> PeripheralSpec {
        var spec = PeripheralSpec(id: "sensor", advertising: AdvertisingSpec(name: "Sensor", services: [0x180F]), services: [
            ServiceSpec(uuid: 0x180F, characteristics: [CharacteristicSpec(uuid: 0x2A19, properties: [.read, .notify], value: [87])]),
            ServiceSpec(uuid: 0x180A, characteristics: [CharacteristicSpec(uuid: 0x2A29, properties: [.read, .write], value: Array("Acme".utf8))]),
        ])
        spec.flaws = flaws
        return spec
    }

    private func rig(_ flaws: [ATTFlaw]) throws -> Rig {
        let lab = Lab(seed: 5)
        let peripheral = try lab.addPeripheral(spec(flaws))
        let central = try lab.addDevice("central")
        try lab.powerOn()
        try lab.wait { done in peripheral.start(completion: done) }.get()
        let connection = try lab.wait { done in central.host.connect(to: peripheral.device.address, completion: done) }.get()
        return Rig(lab: lab, peripheral: peripheral, central: central, connection: connection)
    }

    func testADiscoveryRequestAnsweredWithAnErrorAtTheWrongPlace() throws {
        let r = try rig([ATTFlaw(requests: [.readByGroupTypeRequest], skip: 1, count: 1, answer: .error(.attributeNotFound))])
        let first = try r.lab.wait { done in r.connection.client.discoverAll(completion: done) }.get()
        XCTAssertEqual(first.map(\.uuid), [0x1800, 0x1801, 0x180F], "discovery ended at the error")
        // Error Response to Read By Group Type, handle 0x000E (the request's start), Attribute Not Found.
        XCTAssertTrue(r.peripheralSent().contains("01 10 0e 00 0a"))
        XCTAssertTrue(r.centralReceived().contains("01 10 0e 00 0a"))
        let second = try r.lab.wait { done in r.connection.client.discoverAll(completion: done) }.get()
        XCTAssertEqual(second.map(\.uuid), [0x1800, 0x1801, 0x180F, 0x180A], "count: 1 — the third request is answered normally")
    }

    func testAnErrorOnAReadOfOneCharacteristicOnly() throws {
        let r = try rig([ATTFlaw(requests: [.readRequest], characteristic: CharacteristicRef(0x2A19), answer: .error(.insufficientEncryption))])
        _ = try r.lab.wait { done in r.connection.client.discoverAll(completion: done) }.get()
        let refused = try r.lab.wait { done in r.connection.client.read(handle: 0x000C, completion: done) }
        XCTAssertEqual(refused.failureValue, .att(.insufficientEncryption, handle: 0x000C))
        XCTAssertEqual(r.centralReceived().last, "01 0a 0c 00 0f")
        XCTAssertEqual(try r.lab.wait { done in r.connection.client.read(handle: 0x0010, completion: done) }.get(), Array("Acme".utf8))
    }

    func testALateAnswerCrossesTheLinkAfterTheDelay() throws {
        let r = try rig([ATTFlaw(requests: [.readRequest], delay: .seconds(5), answer: .normal)])
        let start = r.central.traffic.records.count
        XCTAssertEqual(try r.lab.wait { done in r.connection.client.read(handle: 0x000C, completion: done) }.get(), [87])
        let records = r.central.traffic.records.dropFirst(start)
        let request = try XCTUnwrap(records.first { $0.wasSent && $0.opcode == .readRequest })
        let response = try XCTUnwrap(records.first { !$0.wasSent && $0.opcode == .readResponse })
        XCTAssertEqual(response.bytes.spacedHex, "0b 57")
        XCTAssertGreaterThanOrEqual(response.time - request.time, .seconds(5))
        XCTAssertLessThan(response.time - request.time, .seconds(5) + .milliseconds(100))
    }

    func testANeverAnsweredReadTimesOutOnTheCentralAfter30Seconds() throws {
        let r = try rig([ATTFlaw(requests: [.readRequest], answer: .none)])
        var failures: [ATTError] = []
        r.connection.bearer.onFailure = { failures.append($0) }
        let start = r.lab.loop.now
        let result = try r.lab.wait { done in r.connection.client.read(handle: 0x000C, completion: done) }
        XCTAssertEqual(result.failureValue, .timeout)
        XCTAssertEqual(failures, [.timeout(.readRequest)])
        XCTAssertGreaterThanOrEqual(r.lab.loop.now - start, .seconds(30))
        XCTAssertEqual(r.connection.bearer.state, .failed)
        let sentBefore = r.central.traffic.sent.count
        XCTAssertEqual(try r.lab.wait { done in r.connection.client.read(handle: 0x0010, completion: done) }.failureValue, .timeout)
        XCTAssertEqual(r.central.traffic.sent.count, sentBefore, "no ATT after the timeout (Part F, 3.3.3)")
        XCTAssertFalse(r.centralReceived().contains { $0.hasPrefix("0b") }, "the peripheral never answered")
    }

    func testMalformedAnswersCrossTheLinkAsTheyWereDamaged() throws {
        let r = try rig([
            ATTFlaw(requests: [.readRequest], characteristic: CharacteristicRef(0x2A19), count: 1, answer: .malformed(.wrongOpcode)),
            ATTFlaw(requests: [.readRequest], characteristic: CharacteristicRef(0x2A29), count: 1, answer: .malformed(.truncated)),
            ATTFlaw(requests: [.writeRequest], count: 1, answer: .malformed(.badErrorLength)),
            ATTFlaw(requests: [.readByTypeRequest], count: 1, answer: .malformed(.octets([0x09, 0x07]))),
        ])
        let start = r.central.traffic.records.count
        let wrong = try r.lab.wait { done in r.connection.client.read(handle: 0x000C, completion: done) }
        XCTAssertEqual(wrong.failureValue, .protocolViolation(.unexpectedResponse(request: .readRequest, received: .readBlobResponse)))
        let cut = try r.lab.wait { done in r.connection.client.read(handle: 0x0010, completion: done) }
        XCTAssertEqual(try cut.get(), Array("Acm".utf8), "a Read Response one octet short is a shorter value, not a decode error")
        let short = try r.lab.wait { done in r.connection.client.write([1], handle: 0x0010, completion: done) }
        guard case .protocolViolation(.malformedResponse(.errorResponse, _))? = short.failureValue else { return XCTFail("\(short)") }
        let bad = try r.lab.wait { done in r.connection.client.read(uuid: 0x2A19, completion: done) }
        guard case .protocolViolation(.malformedResponse(.readByTypeResponse, _))? = bad.failureValue else { return XCTFail("\(bad)") }
        XCTAssertEqual(r.centralReceived(from: start), ["0d 57", "0b 41 63 6d", "01 12 10 00", "09 07"])
        XCTAssertEqual(try r.lab.wait { done in r.connection.client.read(handle: 0x000C, completion: done) }.get(), [87],
                       "the link still works")
    }

    func testActionsSendWhatNoCorrectServerWould() throws {
        let r = try rig([])
        _ = try r.lab.wait { done in r.connection.client.discoverAll(completion: done) }.get()
        let start = r.central.traffic.records.count
        r.peripheral.perform([.notifyHandle(0x00F0, .bytes([0xFF])), .indicateHandle(0x00F1, .bytes([0x01, 0x02])), .sendPDU([0x0B, 0x41])])
        XCTAssertTrue(r.lab.run(within: .seconds(1)) { r.centralReceived(from: start).count == 3 })
        XCTAssertEqual(r.centralReceived(from: start), ["1b f0 00 ff", "1d f1 00 01 02", "0b 41"])
        XCTAssertTrue(r.lab.run(within: .seconds(1)) { r.peripheral.device.traffic.received.contains { $0.opcode == .handleValueConfirmation } },
                      "the central confirms an indication of a handle it does not know")
        XCTAssertTrue(r.connection.bearer.isOpen)
    }

    func testAddAndRemoveAServiceAndSayServiceChanged() throws {
        let r = try rig([])
        _ = try r.lab.wait { done in r.connection.client.discoverAll(completion: done) }.get()
        try r.lab.wait { done in r.connection.client.write([0x02, 0x00], handle: 0x0009, completion: done) }.get()
        let start = r.central.traffic.records.count
        r.peripheral.perform([.addService(ServiceSpec(uuid: 0xFE59, characteristics: [CharacteristicSpec(uuid: 0xFE5A, properties: [.read])])),
                              .serviceChanged(nil)])
        XCTAssertTrue(r.lab.run(within: .seconds(1)) { !r.centralReceived(from: start).isEmpty })
        // Service Changed (value handle 0x0008): Affected Attribute Handle Range 0x0011..0x0013.
        XCTAssertEqual(r.centralReceived(from: start), ["1d 08 00 11 00 13 00"])
        XCTAssertEqual(r.peripheral.server.database.service(0xFE59)?.range, ATTHandleRange(start: 0x0011, end: 0x0013))
        let next = r.central.traffic.records.count
        r.peripheral.perform([.removeService(0x180A), .serviceChanged(ATTHandleRange(start: 0x000E, end: 0x0010))])
        XCTAssertTrue(r.lab.run(within: .seconds(1)) { !r.centralReceived(from: next).isEmpty })
        XCTAssertEqual(r.centralReceived(from: next), ["1d 08 00 0e 00 10 00"])
        XCTAssertNil(r.peripheral.server.database.service(0x180A))
    }
}

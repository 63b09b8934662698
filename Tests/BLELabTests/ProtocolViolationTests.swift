import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat
import XCTest

/// A central that breaks the Attribute Protocol against a simulated peripheral on the sim air:
/// what crossed both HCIs, the link, and the typed events the peripheral and its host report.
final class ProtocolViolationTests: XCTestCase {
    private struct Rig {
        let lab: Lab
        let peripheral: SimulatedPeripheral
        let central: LabDevice
        let connection: Connection
    }

    /// 180F: 2A19 read/notify at value handle 0x000C.
    private func rig() throws -> (Rig, () -> [ATTViolationEvent]) {
        let lab = Lab(seed: 11)
        let peripheral = try lab.addPeripheral(PeripheralSpec(id: "sensor", advertising: AdvertisingSpec(name: "Sensor"), services: [
            ServiceSpec(uuid: 0x180F, characteristics: [CharacteristicSpec(uuid: 0x2A19, properties: [.read, .notify], value: [87])]),
        ]))
        var events: [ATTViolationEvent] = []
        peripheral.host.observeATTViolations { _, event in events.append(event) }
        let central = try lab.addDevice("central")
        try lab.powerOn()
        try lab.wait { done in peripheral.start(completion: done) }.get()
        let connection = try lab.wait { done in central.host.connect(to: peripheral.device.address, completion: done) }.get()
        return (Rig(lab: lab, peripheral: peripheral, central: central, connection: connection), { events })
    }

    /// Two Read Requests back to back, the second sent before the first was answered (Core Vol 3
    /// Part F 3.3.2): the peripheral answers neither, reports a pipelined-request violation and
    /// drops the link with Remote User Terminated Connection, as a BlueZ peripheral does.
    func testAPipeliningCentralLosesTheLink() throws {
        let (r, hostEvents) = try rig()
        let before = r.peripheral.device.traffic.records.count
        XCTAssertTrue(r.connection.bearer.sendUnchecked([0x0A, 0x0C, 0x00]))
        XCTAssertTrue(r.connection.bearer.sendUnchecked([0x0A, 0x03, 0x00]))
        XCTAssertTrue(r.lab.run(within: .seconds(2)) { !r.connection.isConnected })
        XCTAssertEqual(r.connection.disconnectReason, .remoteUserTerminatedConnection)
        let peripheralATT = r.peripheral.device.traffic.records.dropFirst(before)
        XCTAssertEqual(peripheralATT.filter { !$0.wasSent }.map(\.bytes.spacedHex), ["0a 0c 00", "0a 03 00"])
        XCTAssertEqual(peripheralATT.filter(\.wasSent).map(\.bytes.spacedHex), [], "neither request is answered")
        XCTAssertEqual(hostEvents().map(\.violation), [.pipelinedRequest(pending: .readRequest, received: .readRequest)])
        XCTAssertEqual(hostEvents().first?.pdu, [0x0A, 0x03, 0x00])
        XCTAssertEqual(hostEvents().first?.consequence, .linkDropped)
        let recorded = r.peripheral.activity.map(\.description)
        XCTAssertTrue(recorded.contains { $0.contains("protocol violation by") && $0.contains("pipelined-request") && $0.contains("drops the link") },
                      "\(recorded)")
    }

    /// The same two requests, the second sent once the first was answered: both answered.
    func testACentralThatWaitsIsAnswered() throws {
        let (r, hostEvents) = try rig()
        let first = try r.lab.wait { done in r.connection.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x000C)), completion: done) }
        XCTAssertEqual(try first.get(), .readResponse(ATTReadResponse(value: [87])))
        let second = try r.lab.wait { done in r.connection.bearer.send(request: .readRequest(ATTReadRequest(handle: 0x0003)), completion: done) }
        XCTAssertNoThrow(try second.get())
        XCTAssertTrue(r.connection.isConnected)
        XCTAssertEqual(hostEvents(), [])
    }

    /// A second Exchange MTU Request is answered, but the peripheral keeps the first ATT_MTU; the
    /// central's own client refuses to send a second one.
    func testARepeatedMTUExchangeKeepsTheFirstMTU() throws {
        let (r, hostEvents) = try rig()
        r.connection.bearer.preferredMTU = 247
        XCTAssertEqual(try r.lab.wait { done in r.connection.client.exchangeMTU(completion: done) }.get(), 247)
        let second: Result<Int, GATTError> = try r.lab.wait { done in r.connection.client.exchangeMTU(completion: done) }
        guard case .failure(.mtuAlreadyExchanged(247)) = second else {
            return XCTFail("the client sent a second Exchange MTU")
        }
        let before = r.peripheral.device.traffic.records.count
        XCTAssertTrue(r.connection.bearer.sendUnchecked([0x02, 0x40, 0x00]))   // Client Rx MTU 64, sent raw
        r.lab.run(within: .milliseconds(200)) { false }
        XCTAssertEqual(r.peripheral.device.traffic.records.dropFirst(before).filter(\.wasSent).map(\.bytes.spacedHex), ["03 f7 00"], "its Server Rx MTU, 247")
        let server = try XCTUnwrap(r.peripheral.host.connections.values.first)
        XCTAssertEqual(server.bearer.mtu, 247)
        XCTAssertEqual(hostEvents().map(\.violation.name), ["repeated-mtu-exchange"])
    }

    /// A read of handle 0x0000 and a Read By Group Type whose range runs backwards: each answered
    /// Invalid Handle, the link kept, and each reported to the peripheral's host as a typed
    /// `att/invalid-handle` violation with the Error Response it sent.
    func testHandleZeroAndABackwardsRangeAreAnsweredAndReportedAsTypedViolations() throws {
        let (r, hostEvents) = try rig()
        var typed: [ProtocolViolation] = []
        r.peripheral.host.onViolation = { typed.append($0) }
        let before = r.peripheral.device.traffic.records.count
        let zero = try r.lab.wait { done in r.connection.bearer.send(request: .readRequest(ATTReadRequest(handle: 0)), completion: done) }
        XCTAssertEqual(zero.failureValue, .errorResponse(ATTErrorResponse(requestOpcode: .readRequest, handle: 0, error: .invalidHandle)))
        let backwards = try r.lab.wait { done in
            r.connection.bearer.send(request: .readByGroupTypeRequest(ATTReadByGroupTypeRequest(range: ATTHandleRange(start: 9, end: 2),
                                                                                                  groupType: .primaryService)),
                                     completion: done)
        }
        XCTAssertEqual(backwards.failureValue, .errorResponse(ATTErrorResponse(requestOpcode: .readByGroupTypeRequest, handle: 9, error: .invalidHandle)))
        XCTAssertEqual(r.peripheral.device.traffic.records.dropFirst(before).filter(\.wasSent).map(\.bytes.spacedHex),
                       ["01 0a 00 00 01", "01 10 09 00 01"])
        XCTAssertTrue(r.connection.isConnected)
        XCTAssertEqual(hostEvents().map(\.violation.name), ["invalid-handle", "invalid-handle"])
        XCTAssertEqual(typed.map { "\($0.layer)/\($0.kind) -> \($0.answer.token)" },
                       ["att/invalid-handle -> error-response 0x0a 0x01", "att/invalid-handle -> error-response 0x10 0x01"])
        XCTAssertEqual(typed.map(\.octets.spacedHex), ["0a 00 00", "10 09 00 02 00 00 28"])
        let recorded = r.peripheral.activity.map(\.description).filter { $0.contains("invalid-handle") }
        XCTAssertEqual(recorded.count, 2, "\(r.peripheral.activity.map(\.description))")
    }
}

import BLERuntime
import BLEWire
import HCI
import HostLink
import XCTest

/// An `L2CAPLink` on handle 0x0001 over a driver and a scripted controller, with what the link
/// reports collected. Frames arrive as the controller sends them (ACL, PB 0b10) and leave as the
/// driver sends them (ACL, PB 0b00), so tests check the octets on the HCI wire.
final class LinkHarness {
    let h = DriverHarness()
    let link: L2CAPLink
    var controller: ScriptedController { h.controller }
    var loop: VirtualEventLoop { h.loop }

    private(set) var attPDUs: [[UInt8]] = []
    /// Everything the link reported, in order.
    private(set) var violations: [ProtocolViolation] = []
    private(set) var acceptedParameters: [ConnectionParameterUpdate] = []

    init(role: ConnectionRole) {
        h.driver.setLEBuffers(packetLength: 27, count: 8)
        link = L2CAPLink(handle: 0x0001, role: role, driver: h.driver)
        h.driver.onL2CAPFrame = { [unowned self] handle, frame in
            XCTAssertEqual(handle, 0x0001)
            self.link.receive(frame: frame)
        }
        link.onATT = { [unowned self] in self.attPDUs.append($0) }
        link.onViolation = { [unowned self] in self.violations.append($0) }
        link.onConnectionParametersAccepted = { [unowned self] in self.acceptedParameters.append($0) }
    }

    /// Each violation as `layer/kind -> answer` (what a harness compares).
    var reported: [String] { violations.map { "\($0.layer)/\($0.kind) -> \($0.answer.token)" } }

    /// The peer sends `payloadHex` on `cid` in one basic frame, in one ACL packet.
    func receive(cid: UInt16, _ payloadHex: String, file: StaticString = #filePath, line: UInt = #line) {
        let payload = hex(payloadHex, file: file, line: line)
        controller.reply(Self.aclFrame(flags: 0x20, cid: cid, payload: payload))
    }

    /// The link must have sent `payloadHex` on `cid` in one basic frame, in one ACL packet.
    func expectSent(cid: UInt16, _ payloadHex: String, file: StaticString = #filePath, line: UInt = #line) {
        let payload = hex(payloadHex, file: file, line: line)
        controller.expectSent(Self.aclFrame(flags: 0x00, cid: cid, payload: payload), file: file, line: line)
    }

    /// H4 ACL | handle 0x001 with `flags` in the upper octet | Data_Total_Length | L2CAP Length | CID | payload.
    static func aclFrame(flags: UInt8, cid: UInt16, payload: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 9 + payload.count)
        w.write(UInt8(0x02))   // H4 ACL
        w.write(UInt8(0x01))   // handle 0x001, low octet
        w.write(flags)         // handle high bits, PB, BC
        w.writeUInt16LE(UInt16(4 + payload.count))
        w.writeUInt16LE(UInt16(payload.count))
        w.writeUInt16LE(cid)
        w.write(bytes: payload)
        return w.bytes
    }
}

/// Collects the results of `requestConnectionParameterUpdate`.
final class UpdateOutcome {
    private(set) var results: [Result<Bool, HostError>] = []
    private(set) var completedAt: Instant?
    func record(_ result: Result<Bool, HostError>, at time: Instant) {
        results.append(result)
        if completedAt == nil { completedAt = time }
    }
}

extension LinkHarness {
    @discardableResult
    func requestUpdate(_ params: ConnectionParameterUpdate) -> UpdateOutcome {
        let outcome = UpdateOutcome()
        link.requestConnectionParameterUpdate(params) { [loop] in outcome.record($0, at: loop.now) }
        return outcome
    }
}

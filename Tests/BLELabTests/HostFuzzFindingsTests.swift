import ATT
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import Transport
import XCTest

/// What the host fuzzer (Fuzzing/Host, docs/fuzzing.md) found, each as it failed before its fix:
/// a BLEHost fed HCI events straight from a "controller" that is only the test.
final class HostFuzzFindingsTests: XCTestCase {
    final class Fixture {
        let loop = VirtualEventLoop()
        let transport: InProcessTransport
        let host: BLEHost
        var connected: [Connection] = []
        var violations: [ProtocolViolation] = []

        init() {
            transport = InProcessTransport(loop: loop, endpoint: "test") { _ in }
            host = BLEHost(loop: loop, transport: transport)
            host.onConnection = { [unowned self] in self.connected.append($0) }
            host.onViolation = { [unowned self] in self.violations.append($0) }
        }

        func deliver(_ event: HCIEvent) {
            transport.deliverToHost([H4PacketType.event.rawValue] + event.encoded)
            loop.run(until: loop.now + .milliseconds(10))
        }

        static func connectionComplete(handle: UInt16, peer: UInt64, role: ConnectionRole = .peripheral) -> HCIEvent {
            .leMeta(.connectionComplete(LEConnectionComplete(handle: handle, role: role,
                                                             peer: LEAddress(BDAddr(rawValue: peer), type: .public),
                                                             connectionInterval: 24, supervisionTimeout: 400)))
        }
    }

    /// Vol 4 Part E 5.3, 7.7.65.1: a connection handle names one connection until its
    /// Disconnection Complete. A second LE Connection Complete on handle 0x0040 used to replace
    /// the first connection in the host's table: that one was never closed (still "connected",
    /// still attached to the GATT server, leaked) and the second took its place. Now the event is
    /// reported as `hci/connection-handle-in-use` and the first connection stays the host's,
    /// until its own Disconnection Complete closes it.
    func testConnectionCompleteForAHandleInUseIsReportedAndKeepsTheConnection() throws {
        let f = Fixture()
        f.deliver(Fixture.connectionComplete(handle: 0x0040, peer: 0xA1))
        f.deliver(Fixture.connectionComplete(handle: 0x0040, peer: 0xB2))
        XCTAssertEqual(f.connected.map(\.peer.address.rawValue), [0xA1])
        XCTAssertEqual(f.violations.map { "\($0.layer)/\($0.kind)" }, ["hci/connection-handle-in-use"])
        XCTAssertEqual(f.violations.first?.handle, 0x0040)
        XCTAssertEqual(f.violations.first?.octets.first, 0x3E, "the event's octets, from its code on")
        XCTAssertEqual(f.host.connections[0x0040]?.peer.address.rawValue, 0xA1)
        XCTAssertEqual(f.host.gattServer.connections.count, 1)

        f.deliver(.disconnectionComplete(DisconnectionComplete(handle: 0x0040, reason: .remoteUserTerminatedConnection)))
        let first = try XCTUnwrap(f.connected.first)
        XCTAssertFalse(first.isConnected)
        XCTAssertTrue(f.host.connections.isEmpty)
        XCTAssertTrue(f.host.gattServer.connections.isEmpty)
    }
}

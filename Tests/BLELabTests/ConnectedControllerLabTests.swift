import BLELab
import BLERuntime
import BLEWire
import Controller
import GAP
import GATT
import ScenarioFormat
import Transport
import XCTest

/// A lab whose controllers come from a `ControllerConnector` instead of the embedded air — the
/// shape of the socket and vhci tiers. Here the controllers are simulated ones behind
/// in-process transports, so the test runs anywhere, but the lab only sees transports.
final class ConnectedControllerLabTests: XCTestCase {
    final class LoopbackConnector: ControllerConnector {
        let air: SimAir
        var opened: [String] = []
        var closed = false
        init(air: SimAir) { self.air = air }
        var description: String { "loopback controllers" }

        func openController(for name: String, index: Int, on loop: DrivableEventLoop) throws -> HCITransport {
            opened.append(name)
            let controller = SimController(air: air, address: BDAddr(rawValue: 0xA0_0000_0000 + UInt64(index) + 1), name: name)
            let transport = InProcessTransport(loop: loop, endpoint: "loopback \(index)",
                                               deliverToController: { [unowned controller] in controller.receive(fromHost: $0) })
            controller.toHost = { [unowned transport] in transport.deliverToHost($0) }
            return transport
        }

        func closeAll() { closed = true }
    }

    func testDevicesGetTheirControllersFromTheConnector() throws {
        let loop = VirtualEventLoop()
        let connector = LoopbackConnector(air: SimAir(loop: loop, seed: 1))
        let lab = Lab(seed: 1, loop: loop, connector: connector)
        XCTAssertFalse(lab.isSimulated)
        let peripheral = try lab.addPeripheral(PeripheralSpec(id: "p", rssi: -30, advertising: AdvertisingSpec(name: "P", services: [0xFFE0]),
                                                              services: [ServiceSpec(uuid: 0xFFE0, characteristics: [
                                                                  CharacteristicSpec(uuid: 0xFFE1, properties: [.read], value: [7]),
                                                              ])]))
        let central = try lab.addDevice("central", address: BDAddr(rawValue: 1))
        XCTAssertEqual(connector.opened, ["p", "central"])
        XCTAssertNil(central.controller)
        XCTAssertNil(peripheral.device.rssi, "RSSI is the external medium's business")

        try lab.powerOn()
        // The controller's own address wins over any requested one.
        XCTAssertEqual(central.address.address, BDAddr(rawValue: 0xA0_0000_0002))
        try lab.wait { done in peripheral.start(completion: done) }.get()
        let connection = try lab.wait { done in central.host.connect(to: peripheral.device.address, completion: done) }.get()
        let services = try lab.wait { done in connection.client.discoverAll(serviceUUIDs: [0xFFE0], completion: done) }.get()
        let handle = try XCTUnwrap(services.first?.characteristic(0xFFE1)?.valueHandle)
        XCTAssertEqual(try lab.wait { done in connection.client.read(handle: handle, completion: done) }.get(), [7])

        lab.shutDown()
        XCTAssertTrue(connector.closed)
    }

    func testAConnectorThatFailsGivesATypedError() {
        final class Refusing: ControllerConnector {
            struct Refused: Error {}
            var description: String { "nothing" }
            func openController(for name: String, index: Int, on loop: DrivableEventLoop) throws -> HCITransport { throw Refused() }
            func closeAll() {}
        }
        let lab = Lab(seed: 1, loop: VirtualEventLoop(), connector: Refusing())
        XCTAssertThrowsError(try lab.addDevice("x")) { XCTAssertTrue($0 is Refusing.Refused) }
        XCTAssertTrue(lab.devices.isEmpty)
    }
}

import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

final class ConnectionTests: XCTestCase {
    func testBothSidesGetLEConnectionCompleteAndAdvertisingStops() {
        let lab = TestLab(seed: 21)
        let central = lab.device("central", "C0:00:00:00:00:0C")
        let peripheral = lab.device("peripheral", "C0:00:00:00:00:0E")
        let watcher = lab.device("watcher", "C0:00:00:00:00:0A")
        for host in [central, peripheral, watcher] { host.bringUp() }
        watcher.scan()
        peripheral.advertise(intervalUnits: 0x00A0)
        lab.run(until: .ms(250))
        central.send(.leCreateConnection(LECreateConnectionParameters(
            peer: peripheral.publicAddress, connectionIntervalMin: 0x0018, connectionIntervalMax: 0x0028,
            maxLatency: 0, supervisionTimeout: 0x0064)))
        lab.run(until: .ms(2000))

        // Command Status at once, then LE Connection Complete at the next advertising event.
        XCTAssertEqual(central.received.first?.frame, hex("04 0f 04 00 01 0d 20"))
        XCTAssertEqual(central.received.first?.time, .ms(250))
        let connectedAt = central.connectionCompletes.first?.time ?? .zero
        let lastReport = watcher.reports.last?.time ?? .zero
        XCTAssertEqual(lastReport, connectedAt, "the ADV_IND the initiator answered is the last one on the air")
        XCTAssertGreaterThan(connectedAt, .ms(250))
        XCTAssertLessThanOrEqual(connectedAt, .ms(360))
        XCTAssertFalse(peripheral.controller.isAdvertising)
        XCTAssertFalse(central.controller.isInitiating)

        // Exact bytes: handle 1, central role, peer public C0:00:00:00:00:0E, interval 0x18
        // (Connection_Interval_Min), latency 0, timeout 0x64, clock accuracy 0 on the central.
        XCTAssertEqual(central.received.last?.frame.spacedHex,
                       hex("04 3e 13 01 00 01 00 00 00 0e 00 00 00 00 c0 18 00 00 00 64 00 00").spacedHex)
        // The peripheral: role 1, peer the central, the central's clock accuracy 0x07.
        XCTAssertEqual(peripheral.received.map(\.frame.spacedHex),
                       [hex("04 3e 13 01 00 01 00 01 00 0c 00 00 00 00 c0 18 00 00 00 64 00 07").spacedHex])
        XCTAssertEqual(peripheral.received.first?.time, connectedAt)
        XCTAssertEqual(central.controller.connectionHandles, [1])
        XCTAssertEqual(peripheral.controller.connectionHandles, [1])
    }

    func testCentralConnectedToTwoPeripherals() {
        let lab = TestLab(seed: 4)
        let central = lab.device("central", "C0:00:00:00:00:0C")
        let p1 = lab.device("p1", "C0:00:00:00:00:01")
        let p2 = lab.device("p2", "C0:00:00:00:00:02")
        for host in [central, p1, p2] { host.bringUp() }
        p1.advertise()
        p2.advertise()
        central.connect(to: p1.publicAddress)
        lab.run(for: .milliseconds(500))
        var completes = central.connectionCompletes.map(\.event)
        central.connect(to: p2.publicAddress)
        lab.run(for: .milliseconds(500))
        completes += central.connectionCompletes.map(\.event)

        XCTAssertEqual(completes.map(\.handle), [1, 2])
        XCTAssertEqual(completes.map(\.peer), [p1.publicAddress, p2.publicAddress])
        XCTAssertEqual(p1.connectionCompletes.map(\.event.handle), [1])
        XCTAssertEqual(p2.connectionCompletes.map(\.event.handle), [1])

        central.sendACL(handle: 1, [0x01, 0x11])
        central.sendACL(handle: 2, [0x02, 0x22])
        central.sendACL(handle: 2, [0x02, 0x23])
        lab.run(for: .milliseconds(100))
        XCTAssertEqual(p1.acl.map(\.data.data), [[0x01, 0x11]])
        XCTAssertEqual(p2.acl.map(\.data.data), [[0x02, 0x22], [0x02, 0x23]])
        XCTAssertEqual(central.completedPackets.flatMap(\.entries).sorted { $0.handle < $1.handle },
                       [CompletedPackets(handle: 1, count: 1), CompletedPackets(handle: 2, count: 2)])
    }

    func testCreateConnectionCancel() {
        let lab = TestLab()
        let central = lab.device("central", "C0:00:00:00:00:0C")
        let peripheral = lab.device("peripheral", "C0:00:00:00:00:0E")
        central.bringUp()
        peripheral.bringUp()
        central.connect(to: peripheral.publicAddress)
        lab.run(for: .milliseconds(1_000))
        XCTAssertTrue(central.controller.isInitiating)
        central.send(.leCreateConnectionCancel)
        lab.settle()
        XCTAssertEqual(central.received.map(\.frame.spacedHex), [
            hex("04 0e 04 01 0e 20 00").spacedHex,
            hex("04 3e 13 01 02 00 00 00 00 0e 00 00 00 00 c0 00 00 00 00 00 00 00").spacedHex,
        ])
        XCTAssertFalse(central.controller.isInitiating)
        central.clear()
        peripheral.advertise()
        lab.run(for: .milliseconds(1_000))
        XCTAssertTrue(central.received.isEmpty)
        XCTAssertTrue(peripheral.controller.isAdvertising)
    }

    func testSecondConnectionToTheSamePeerIsRefused() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        pair.peripheral.advertise()
        pair.central.send(.leCreateConnection(LECreateConnectionParameters(peer: pair.peripheral.publicAddress)))
        lab.settle()
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 0f 04 0b 01 0d 20")])
    }

    /// Low duty cycle ADV_DIRECT_IND: only the addressed initiator connects.
    func testDirectedAdvertisingConnectsOnlyItsTarget() {
        let lab = TestLab(seed: 8)
        let addressed = lab.device("addressed", "C0:00:00:00:00:0C")
        let other = lab.device("other", "C0:00:00:00:00:0D")
        let peripheral = lab.device("peripheral", "C0:00:00:00:00:0E")
        for host in [addressed, other, peripheral] { host.bringUp() }
        other.connect(to: peripheral.publicAddress)
        peripheral.advertise(type: .connectableDirectedLowDuty, peer: addressed.publicAddress)
        lab.run(for: .milliseconds(1_000))
        XCTAssertTrue(other.connectionCompletes.isEmpty)
        XCTAssertTrue(peripheral.controller.isAdvertising)
        addressed.connect(to: peripheral.publicAddress)
        lab.run(for: .milliseconds(1_000))
        XCTAssertEqual(addressed.connectionCompletes.map(\.event.status), [.success])
        XCTAssertEqual(peripheral.connectionCompletes.map(\.event.peer), [addressed.publicAddress])
        XCTAssertTrue(other.connectionCompletes.isEmpty)
        XCTAssertTrue(other.controller.isInitiating)
    }

    func testReadRSSIOnAConnection() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        lab.air.setRSSI(-47, for: pair.peripheral.controller)
        lab.air.setRSSI(-72, for: pair.central.controller)
        pair.central.send(.readRSSI(handle: pair.centralHandle))
        pair.peripheral.send(.readRSSI(handle: pair.peripheralHandle))
        lab.settle()
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 0e 07 01 05 14 00 01 00 d1")])   // -47
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [hex("04 0e 07 01 05 14 00 01 00 b8")])  // -72
    }
}

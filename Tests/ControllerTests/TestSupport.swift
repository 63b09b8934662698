import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// A lab of simulated controllers on one virtual loop, for tests.
final class TestLab {
    let loop = VirtualEventLoop()
    let air: SimAir

    init(seed: UInt64 = 1, model: AirModel = AirModel()) {
        air = SimAir(loop: loop, seed: seed, model: model)
    }

    /// A controller with a recording host attached.
    func device(_ name: String, _ address: String) -> TestHost {
        let controller = SimController(air: air, address: BDAddr(string: address)!, name: name)
        return TestHost(controller: controller, loop: loop)
    }

    /// Runs what is due now (e.g. the controller's answer to a command).
    func settle() { loop.run(until: loop.now) }

    func run(for span: TimeSpan) { loop.advance(by: span) }
    func run(until t: Instant) { loop.run(until: t) }
}

/// A host double: sends H4 frames, records every frame the controller hands it with the virtual
/// time it arrived.
final class TestHost {
    let controller: SimController
    let loop: VirtualEventLoop
    private(set) var received: [(time: Instant, frame: [UInt8])] = []
    /// Called for each frame after it is recorded (lets a test answer from inside `toHost`).
    var onFrame: ((Instant, [UInt8]) -> Void)?

    init(controller: SimController, loop: VirtualEventLoop) {
        self.controller = controller
        self.loop = loop
        controller.toHost = { [unowned self] frame in
            self.received.append((self.loop.now, frame))
            self.onFrame?(self.loop.now, frame)
        }
    }

    var address: BDAddr { controller.address }
    var publicAddress: LEAddress { LEAddress(controller.address, type: .public) }

    func send(_ command: HCICommand) {
        controller.receive(fromHost: [H4PacketType.command.rawValue] + command.encoded)
    }

    func sendRaw(_ hex: String) {
        controller.receive(fromHost: [UInt8](hex: hex)!)
    }

    func sendACL(handle: UInt16, boundary: PacketBoundary = .firstNonFlushable, _ data: [UInt8]) {
        controller.receive(fromHost: HCIPacket.acl(HCIACLData(handle: handle, boundary: boundary, data: data)).h4)
    }

    func clear() { received.removeAll() }

    /// Everything received, decoded.
    var packets: [(time: Instant, packet: HCIPacket)] {
        received.map { ($0.time, try! HCIPacket(h4: $0.frame)) }
    }

    var events: [(time: Instant, event: HCIEvent)] {
        packets.compactMap { if case let .event(e) = $0.packet { return ($0.time, e) } else { return nil } }
    }

    var acl: [(time: Instant, data: HCIACLData)] {
        packets.compactMap { if case let .acl(a) = $0.packet { return ($0.time, a) } else { return nil } }
    }

    var reports: [(time: Instant, report: LEAdvertisingReport)] {
        events.flatMap { item -> [(time: Instant, report: LEAdvertisingReport)] in
            if case let .leMeta(.advertisingReport(list)) = item.event { return list.map { (item.time, $0) } }
            return []
        }
    }

    var connectionCompletes: [(time: Instant, event: LEConnectionComplete)] {
        events.compactMap { if case let .leMeta(.connectionComplete(e)) = $0.event { return ($0.time, e) } else { return nil } }
    }

    var disconnections: [(time: Instant, event: DisconnectionComplete)] {
        events.compactMap { if case let .disconnectionComplete(e) = $0.event { return ($0.time, e) } else { return nil } }
    }

    var updates: [(time: Instant, event: LEConnectionUpdateComplete)] {
        events.compactMap { if case let .leMeta(.connectionUpdateComplete(e)) = $0.event { return ($0.time, e) } else { return nil } }
    }

    var completedPackets: [(time: Instant, entries: [CompletedPackets])] {
        events.compactMap { if case let .numberOfCompletedPackets(l) = $0.event { return ($0.time, l) } else { return nil } }
    }

    var commandResults: [HCIEvent] {
        events.map(\.event).filter {
            if case .commandComplete = $0 { return true }
            if case .commandStatus = $0 { return true }
            return false
        }
    }

    // MARK: Common set-ups (each runs the loop until the answers are in and clears the record)

    /// Reset, then unmask LE Meta (the LE mask keeps its default: connection complete, reports, update complete).
    func bringUp() {
        send(.reset)
        send(.setEventMask(EventMask.defaultMask | EventMask.leMeta))
        loop.run(until: loop.now)
        clear()
    }

    func advertise(type: AdvertisingType = .connectableUndirected, intervalUnits: UInt16 = 0x00A0,
                   data: [UInt8] = [0x02, 0x01, 0x06], scanResponse: [UInt8] = [],
                   ownAddressType: AddressType = .public, peer: LEAddress? = nil) {
        send(.leSetAdvertisingParameters(LEAdvertisingParameters(
            intervalMin: intervalUnits, intervalMax: intervalUnits, advertisingType: type, ownAddressType: ownAddressType,
            peerAddressType: peer?.type ?? .public, peerAddress: peer?.address ?? BDAddr(rawValue: 0))))
        send(.leSetAdvertisingData(data))
        send(.leSetScanResponseData(scanResponse))
        send(.leSetAdvertisingEnable(true))
        loop.run(until: loop.now)
        expectAllSucceeded()
        clear()
    }

    func scan(active: Bool = false, intervalUnits: UInt16 = 0x0010, windowUnits: UInt16 = 0x0010, filterDuplicates: Bool = false) {
        send(.leSetScanParameters(LEScanParameters(active: active, interval: intervalUnits, window: windowUnits)))
        send(.leSetScanEnable(enable: true, filterDuplicates: filterDuplicates))
        loop.run(until: loop.now)
        expectAllSucceeded()
        clear()
    }

    func connect(to peer: LEAddress, intervalMin: UInt16 = 0x0018, intervalMax: UInt16 = 0x0028,
                 latency: UInt16 = 0, timeout: UInt16 = 0x0064) {
        send(.leCreateConnection(LECreateConnectionParameters(
            peer: peer, connectionIntervalMin: intervalMin, connectionIntervalMax: intervalMax,
            maxLatency: latency, supervisionTimeout: timeout)))
        loop.run(until: loop.now)
        expectAllSucceeded()
        clear()
    }

    func expectAllSucceeded(file: StaticString = #filePath, line: UInt = #line) {
        for event in commandResults {
            switch event {
            case let .commandComplete(c): XCTAssertEqual(c.status, .success, "\(c.opcode)", file: file, line: line)
            case let .commandStatus(s): XCTAssertEqual(s.status, .success, "\(s.opcode)", file: file, line: line)
            default: break
            }
        }
    }
}

extension Instant {
    static func ms(_ v: Double) -> Instant { Instant(nanoseconds: Int64((v * 1e6).rounded())) }
}

func hex(_ s: String) -> [UInt8] { [UInt8](hex: s)! }

/// A central and a peripheral connected on a fresh lab, with their records cleared.
struct ConnectedPair {
    let lab: TestLab
    let central: TestHost
    let peripheral: TestHost
    /// When both hosts got LE Connection Complete (the CONNECT_IND).
    let connectedAt: Instant
    let interval: TimeSpan
    let centralHandle: UInt16
    let peripheralHandle: UInt16

    /// Anchor point of connection event k: 1.25 ms after the CONNECT_IND, then every interval.
    func anchor(_ k: Int64) -> Instant { connectedAt + .microseconds(1250) + interval * k }

    /// The first anchor at or after `t`.
    func nextAnchor(atOrAfter t: Instant) -> Instant {
        let delta = (t - anchor(0)).nanoseconds
        guard delta > 0 else { return anchor(0) }
        return anchor((delta + interval.nanoseconds - 1) / interval.nanoseconds)
    }
}

extension TestLab {
    func connectedPair(intervalUnits: UInt16 = 0x0018, latency: UInt16 = 0, timeout: UInt16 = 0x0064,
                       file: StaticString = #filePath, line: UInt = #line) -> ConnectedPair {
        let central = device("central", "C0:00:00:00:00:0C")
        let peripheral = device("peripheral", "C0:00:00:00:00:0E")
        central.bringUp()
        peripheral.bringUp()
        peripheral.advertise()
        central.connect(to: peripheral.publicAddress, intervalMin: intervalUnits, intervalMax: intervalUnits + 0x10,
                        latency: latency, timeout: timeout)
        loop.run(until: loop.now + .milliseconds(2_000)) { !central.connectionCompletes.isEmpty }
        settle()
        let c = central.connectionCompletes.first
        let p = peripheral.connectionCompletes.first
        XCTAssertNotNil(c, file: file, line: line)
        XCTAssertEqual(c?.time, p?.time, file: file, line: line)
        central.clear()
        peripheral.clear()
        return ConnectedPair(lab: self, central: central, peripheral: peripheral, connectedAt: c?.time ?? .zero,
                             interval: .microseconds(Int64(intervalUnits) * 1250),
                             centralHandle: c?.event.handle ?? 0, peripheralHandle: p?.event.handle ?? 0)
    }
}

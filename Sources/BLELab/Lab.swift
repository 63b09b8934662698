import BLERuntime
import BLEWire
import Controller
import GAP
import HCI
import Transport

/// A virtual BLE lab: one virtual event loop, one simulated air, and any number of devices, each a
/// `SimController` joined to a `BLEHost` by H4 frames, with a packet log on the host's transport.
/// Everything is deterministic in `seed`. Nothing is global: make one lab per test.
public final class Lab {
    public let seed: UInt64
    public let loop: VirtualEventLoop
    public let air: SimAir
    public private(set) var devices: [LabDevice] = []

    public init(seed: UInt64 = 1, model: AirModel = AirModel()) {
        self.seed = seed
        loop = VirtualEventLoop()
        air = SimAir(loop: loop, seed: seed, model: model)
    }

    /// Adds a device: a controller on the air and a host on it.
    /// - Parameters:
    ///   - address: its public BD_ADDR; by default derived from `name` and the lab's seed.
    ///   - recordsTraffic: keep the packet log and the ATT view (turn off for long benchmarks).
    @discardableResult
    public func addDevice(_ name: String, address: BDAddr? = nil, configuration: HostConfiguration = .init(),
                          recordsTraffic: Bool = true) -> LabDevice {
        let device = LabDevice(lab: self, name: name, address: address ?? derivedAddress(for: name),
                               configuration: configuration, recordsTraffic: recordsTraffic)
        devices.append(device)
        return device
    }

    public func device(named name: String) -> LabDevice? { devices.first { $0.name == name } }

    /// A stable public address for `name`: FNV-1a of the name and seed, with the top bits cleared
    /// so it is never mistaken for a random static address.
    func derivedAddress(for name: String) -> BDAddr {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325 ^ seed
        for b in name.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        let raw = (h ^ (h >> 29)) & 0x3FFF_FFFF_FFFF
        return BDAddr(rawValue: raw == 0 ? 1 : raw)
    }

    /// Powers on every device's host (Reset and configuration over HCI).
    public func powerOn() throws {
        for device in devices where device.host.state != .ready {
            try wait(within: .seconds(5), "power-on of \(device.name)") { done in
                device.host.powerOn(completion: done)
            }.get()
        }
    }

    /// Lets `span` of virtual time pass.
    public func run(for span: TimeSpan) { loop.advance(by: span) }

    /// Runs until `condition` holds, at most `span` of virtual time; returns whether it held.
    @discardableResult
    public func run(within span: TimeSpan, until condition: () -> Bool) -> Bool {
        loop.run(until: loop.now + span, orUntil: condition)
    }

    /// Starts an asynchronous operation and runs the loop until it calls back, for at most `span`
    /// of virtual time. Throws `LabError.timedOut` if it never does.
    public func wait<T>(within span: TimeSpan = .seconds(60), _ what: String = "operation",
                        _ start: (@escaping (T) -> Void) -> Void) throws -> T {
        var result: T?
        start { value in if result == nil { result = value } }
        guard run(within: span, until: { result != nil }), let value = result else {
            throw LabError.timedOut(what: what, after: span, at: loop.now)
        }
        return value
    }
}

public enum LabError: Error, CustomStringConvertible {
    case timedOut(what: String, after: TimeSpan, at: Instant)

    public var description: String {
        switch self {
        case let .timedOut(what, span, at): return "\(what) did not finish within \(span) (virtual time \(at))"
        }
    }
}

/// One simulated device: controller, transport, host, and what crossed its HCI.
public final class LabDevice {
    public unowned let lab: Lab
    public let name: String
    public let controller: SimController
    public let transport: InProcessTransport
    /// Every HCI packet between this host and its controller, with virtual timestamps.
    public let log: PacketLog
    /// The ATT PDUs in `log`.
    public let traffic: ATTTraffic
    public let host: BLEHost

    init(lab: Lab, name: String, address: BDAddr, configuration: HostConfiguration, recordsTraffic: Bool) {
        self.lab = lab
        self.name = name
        let controller = SimController(air: lab.air, address: address, name: name)
        self.controller = controller
        let transport = InProcessTransport(loop: lab.loop, endpoint: "sim controller '\(name)'",
                                           deliverToController: { [unowned controller] frame in controller.receive(fromHost: frame) })
        self.transport = transport
        controller.toHost = { [unowned transport] frame in transport.deliverToHost(frame) }
        log = PacketLog(keepsPackets: recordsTraffic)
        traffic = ATTTraffic(log: log)
        let tapped: HCITransport = recordsTraffic ? TappedTransport(transport, log: log, loop: lab.loop) : transport
        host = BLEHost(loop: lab.loop, transport: tapped, configuration: configuration)
    }

    /// The address peers see.
    public var address: LEAddress { host.address }

    /// The RSSI scanners report for this device.
    public var rssi: Int8 {
        get { lab.air.rssi(of: controller) }
        set { lab.air.setRSSI(newValue, for: controller) }
    }
}

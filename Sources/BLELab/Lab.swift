import BLERuntime
import BLEWire
import Controller
import GAP
import HCI
import Transport

/// Where a lab's controllers come from when they are not the embedded simulator's: RootCanal or
/// Bumble over sockets, Linux controllers over the HCI user channel. The lab asks for one fresh
/// controller per device and hands it to that device's host.
public protocol ControllerConnector: AnyObject {
    /// Says where controllers come from, for messages ("RootCanal at 127.0.0.1:6402").
    var description: String { get }
    /// Opens a transport to a controller for the new device `name` (the `index`-th of the lab).
    func openController(for name: String, index: Int, on loop: DrivableEventLoop) throws -> HCITransport
    /// Closes every transport it opened (the lab is done).
    func closeAll()
}

/// A BLE lab: one event loop and any number of devices, each a controller joined to a `BLEHost`
/// by H4 frames, with a packet log on the host's transport.
///
/// On the embedded simulator (`init(seed:model:)`) the loop is virtual, the controllers are
/// `SimController`s on one `SimAir`, and everything is deterministic in `seed`. With a
/// `ControllerConnector` the controllers are external (RootCanal, Bumble, kernel controllers) and
/// the loop runs in real time. Nothing is global: make one lab per test.
public final class Lab {
    public let seed: UInt64
    public let loop: DrivableEventLoop
    /// The simulated air, on the embedded simulator; nil with external controllers.
    public let air: SimAir?
    /// Where external controllers come from; nil on the simulator.
    public let connector: ControllerConnector?
    public private(set) var devices: [LabDevice] = []
    /// How many devices' transports to their controllers have closed or failed (each device's
    /// `host.driver.closed` says which). A runner asks after every task whether any did: this
    /// answers without a walk over the devices.
    public fileprivate(set) var lostControllers = 0
    /// True once any device's transport has closed or failed.
    public var hasLostController: Bool { lostControllers > 0 }

    /// A lab on the embedded simulator.
    public convenience init(seed: UInt64 = 1, model: AirModel = AirModel()) {
        let loop = VirtualEventLoop()
        self.init(seed: seed, loop: loop, air: SimAir(loop: loop, seed: seed, model: model))
    }

    /// A lab on the embedded simulator, with the loop and air made by the caller.
    public init(seed: UInt64, loop: VirtualEventLoop, air: SimAir) {
        self.seed = seed
        self.loop = loop
        self.air = air
        connector = nil
    }

    /// A lab whose devices sit on external controllers, on a real-time loop.
    public init(seed: UInt64, loop: DrivableEventLoop, connector: ControllerConnector) {
        self.seed = seed
        self.loop = loop
        air = nil
        self.connector = connector
    }

    /// True on the embedded simulator (virtual time, sim-only controls available).
    public var isSimulated: Bool { air != nil }

    /// Adds a device: a controller (on the air, or from the connector) and a host on it.
    /// - Parameters:
    ///   - address: its public BD_ADDR on the simulator; by default derived from `name` and the
    ///     lab's seed. External controllers keep their own.
    ///   - recordsTraffic: keep the packet log and the ATT view (turn off for long benchmarks).
    @discardableResult
    public func addDevice(_ name: String, address: BDAddr? = nil, configuration: HostConfiguration = .init(),
                          recordsTraffic: Bool = true) throws -> LabDevice {
        let device: LabDevice
        if let air {
            device = LabDevice(lab: self, name: name, simulatedOn: air, address: address ?? derivedAddress(for: name),
                               configuration: configuration, recordsTraffic: recordsTraffic)
        } else if let connector {
            let transport = try connector.openController(for: name, index: devices.count, on: loop)
            device = LabDevice(lab: self, name: name, transport: transport, configuration: configuration,
                               recordsTraffic: recordsTraffic)
        } else {
            throw LabError.noControllers
        }
        devices.append(device)
        return device
    }

    /// Ends the lab: closes the transports to external controllers.
    public func shutDown() { connector?.closeAll() }

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
    case noControllers
    /// A control that only the embedded simulator has (power, range, RSSI).
    case simulatorOnly(String)

    public var description: String {
        switch self {
        case let .timedOut(what, span, at): return "\(what) did not finish within \(span) (lab time \(at))"
        case .noControllers: return "the lab has neither a simulated air nor a controller connector"
        case let .simulatorOnly(what): return "\(what) needs the embedded simulator (--transport sim)"
        }
    }
}

/// One device of a lab: its controller (simulated, or external behind `transport`), the host on
/// it, and what crossed its HCI.
public final class LabDevice {
    public unowned let lab: Lab
    public let name: String
    /// The simulated controller, on the embedded simulator; nil for an external controller.
    public let controller: SimController?
    /// The host's transport to its controller (before the packet-log tap).
    public let transport: HCITransport
    /// Every HCI packet between this host and its controller, with the lab's timestamps.
    public let log: PacketLog
    /// The ATT PDUs in `log`.
    public let traffic: ATTTraffic
    public let host: BLEHost

    /// A device on the simulated air.
    init(lab: Lab, name: String, simulatedOn air: SimAir, address: BDAddr, configuration: HostConfiguration, recordsTraffic: Bool) {
        let controller = SimController(air: air, address: address, name: name)
        let transport = InProcessTransport(loop: lab.loop, endpoint: "sim controller '\(name)'",
                                           deliverToController: { [unowned controller] frame in controller.receive(fromHost: frame) })
        // Strong: the transport holds the controller unowned, so there is no cycle, and a frame to
        // the host costs no reference check.
        controller.toHost = { [transport] frame in transport.deliverToHost(frame) }
        self.controller = controller
        self.lab = lab
        self.name = name
        self.transport = transport
        (log, traffic, host) = Self.makeHost(lab: lab, transport: transport, configuration: configuration, recordsTraffic: recordsTraffic)
    }

    /// A device on an external controller.
    init(lab: Lab, name: String, transport: HCITransport, configuration: HostConfiguration, recordsTraffic: Bool) {
        controller = nil
        self.lab = lab
        self.name = name
        self.transport = transport
        (log, traffic, host) = Self.makeHost(lab: lab, transport: transport, configuration: configuration, recordsTraffic: recordsTraffic)
    }

    private static func makeHost(lab: Lab, transport: HCITransport, configuration: HostConfiguration,
                                 recordsTraffic: Bool) -> (PacketLog, ATTTraffic, BLEHost) {
        let log = PacketLog(keepsPackets: recordsTraffic)
        let traffic = ATTTraffic(log: log)
        let tapped: HCITransport = recordsTraffic ? TappedTransport(transport, log: log, loop: lab.loop) : transport
        let host = BLEHost(loop: lab.loop, transport: tapped, configuration: configuration)
        // The host's driver took `onClose`; the lab counts each close before the driver hears it.
        let driverHears = tapped.onClose
        tapped.onClose = { [weak lab] error in
            lab?.lostControllers += 1
            driverHears?(error)
        }
        return (log, traffic, host)
    }

    /// The address peers see.
    public var address: LEAddress { host.address }

    /// The RSSI scanners report for this device, on the simulator (nil for external controllers,
    /// whose medium decides).
    public var rssi: Int8? {
        get { controller.flatMap { lab.air?.rssi(of: $0) } }
        set {
            guard let controller, let air = lab.air, let value = newValue else { return }
            air.setRSSI(value, for: controller)
        }
    }
}

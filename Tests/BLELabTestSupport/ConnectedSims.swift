import BLELab
import BLERuntime
import BLEWire
import Controller
import ScenarioEngine
import ScenarioFormat
import Transport

/// The embedded simulator's controllers behind a `ControllerConnector`, on virtual time: a lab
/// that is not `isSimulated` (no air to fault, real controllers' end-of-run handling) but runs
/// deterministically in-process, standing in for the socket tier in tests.
public final class ConnectedSims: ControllerConnector {
    public let air: SimAir
    private let addressBase: UInt64
    private let latency: TimeSpan

    /// Controllers on an air seeded `airSeed`; the k-th device's public address is `addressBase + k`.
    /// `latency`: how long each packet from a controller takes to reach its host (as over a
    /// socket), in order; zero hands it over at once.
    public init(loop: VirtualEventLoop, airSeed: UInt64, addressBase: UInt64, latency: TimeSpan = .zero) {
        air = SimAir(loop: loop, seed: airSeed)
        self.addressBase = addressBase
        self.latency = latency
    }

    public var description: String { "in-process controllers behind a connector" }

    public func openController(for name: String, index: Int, on loop: DrivableEventLoop) throws -> HCITransport {
        let controller = SimController(air: air, address: BDAddr(rawValue: addressBase + UInt64(index)), name: name)
        let transport = InProcessTransport(loop: loop, endpoint: name, deliverToController: { controller.receive(fromHost: $0) })
        if latency == .zero {
            controller.toHost = { [unowned transport] in transport.deliverToHost($0) }
        } else {
            let latency = latency
            controller.toHost = { [weak transport] packet in
                loop.schedule(after: latency) { transport?.deliverToHost(packet) }
            }
        }
        return transport
    }

    public func closeAll() {}
}

/// A scenario backend of `ConnectedSims` labs, reporting itself as the socket tier.
public struct ConnectedSimsBackend: ScenarioBackend {
    public var airSeed: UInt64
    public var addressBase: UInt64
    public var advertisingIntervalStagger: TimeSpan
    /// `ConnectedSims.latency`.
    public var latency: TimeSpan

    public init(airSeed: UInt64 = 1, addressBase: UInt64 = 0xC0_0000_0000, advertisingIntervalStagger: TimeSpan = .zero,
                latency: TimeSpan = .zero) {
        self.airSeed = airSeed
        self.addressBase = addressBase
        self.advertisingIntervalStagger = advertisingIntervalStagger
        self.latency = latency
    }

    public var tier: TransportTier { .socket }

    public func makeLab(seed: UInt64) throws -> Lab {
        let loop = VirtualEventLoop()
        return Lab(seed: seed, loop: loop, connector: ConnectedSims(loop: loop, airSeed: airSeed, addressBase: addressBase, latency: latency))
    }
}

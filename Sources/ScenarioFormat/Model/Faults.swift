import ATT
import BLERuntime
import Controller

/// What a peripheral's `link:` block and `mtu:` key declare (docs/scenarios.md "Faults").
public struct PeripheralFaults: Hashable {
    /// Faults on every connection to the peripheral, from the start (nil: none).
    public var link: LinkFaults?
    /// The largest ATT_MTU the peripheral accepts: its Exchange MTU Response's Server Rx MTU
    /// (Core 5.4 Vol 3 Part F 3.4.2.2). Nil: the host's default (247).
    public var mtu: Int?

    public init(link: LinkFaults? = nil, mtu: Int? = nil) {
        self.link = link
        self.mtu = mtu
    }
}

/// A central step that puts a fault on the air or changes the link (docs/scenarios.md "Faults").
public enum FaultStep: Hashable {
    /// The link to the peripheral loses its radio path, now or `after` this long (the step does
    /// not wait): both supervision timeouts fire (Vol 6 Part B 4.5.2).
    case linkLoss(peripheral: String, after: TimeSpan?)
    /// The peripheral walks out of range: its RSSI falls by `rate` dB/s until scanners stop
    /// receiving it; nil rate: at once.
    case outOfRange(peripheral: String, rate: Double?)
    /// Back in range (at the RSSI it had when it left).
    case inRange(peripheral: String)
    /// The peripheral's controller powers off (its host loses everything); peers time out.
    case powerOff(peripheral: String)
    /// The central's controller powers off, now or `after` this long (the step does not wait):
    /// its host loses its connections, the peripherals time out, and a later step that needs the
    /// central fails naming it (`power-off: central`).
    case centralPowerOff(after: TimeSpan?)
    /// The peripheral comes back: its controller powers on, its host configures it again and it
    /// starts advertising as at the beginning.
    case powerOn(peripheral: String)
    /// The central asks for new parameters with LE Connection Update (Vol 4 Part E 7.8.18) and
    /// waits for LE Connection Update Complete.
    case connectionUpdate(peripheral: String, ConnectionUpdateRequest)
    /// The faults on the peripheral's connections from now on (replacing its `link:` block).
    case link(peripheral: String, LinkFaults)
    /// From now on the central's host accepts (the default: those in range) or rejects the
    /// peripheral's requests for new connection parameters, over the link layer (LE Remote
    /// Connection Parameter Request, Vol 4 Part E 7.7.65.6) or L2CAP (Vol 3 Part A 4.20).
    case parameterRequests(peripheral: String, accept: Bool)

    /// The peripheral the step acts on; nil for the central's own power-off.
    public var peripheral: String? {
        switch self {
        case .centralPowerOff: return nil
        case let .linkLoss(p, _), let .outOfRange(p, _), let .inRange(p), let .powerOff(p), let .powerOn(p),
             let .connectionUpdate(p, _), let .link(p, _), let .parameterRequests(p, _):
            return p
        }
    }

    /// Whether the step needs the embedded simulator (a real controller's air cannot be told).
    public var needsSimulator: Bool {
        switch self {
        case .connectionUpdate, .parameterRequests: return false
        // The sim's controller or a BlueZ adapter (Adapter1.Powered): the seat decides.
        case .centralPowerOff: return false
        default: return true
        }
    }
}

/// Expectations about the link (docs/scenarios.md "Faults").
public enum FaultExpectation: Hashable {
    /// The connection's parameters (as the central's LE Connection Complete or latest LE
    /// Connection Update Complete report them) become these within `within`; nil: any.
    case connectionParameters(peripheral: String, interval: UInt16?, latency: UInt16?, timeout: UInt16?, within: TimeSpan)
    /// The connection's ATT_MTU, after Exchange MTU: min(client Rx MTU, server Rx MTU) (Vol 3
    /// Part F 3.4.2.2).
    case mtu(peripheral: String, Int)

    public var peripheral: String {
        switch self {
        case let .connectionParameters(p, _, _, _, _), let .mtu(p, _): return p
        }
    }

    public var summary: String {
        switch self {
        case let .connectionParameters(p, interval, latency, timeout, within):
            return "the connection to \(p) with \(Self.describe(interval: interval, latency: latency, timeout: timeout)) within \(within)"
        case let .mtu(p, mtu):
            return "ATT_MTU \(mtu) on the connection to \(p)"
        }
    }

    static func describe(interval: UInt16?, latency: UInt16?, timeout: UInt16?) -> String {
        var parts: [String] = []
        if let interval { parts.append("interval \(ConnectionUpdateRequest.milliseconds(micros: Int64(interval) * 1250))") }
        if let latency { parts.append("latency \(latency)") }
        if let timeout { parts.append("timeout \(ConnectionUpdateRequest.milliseconds(micros: Int64(timeout) * 10_000))") }
        return parts.joined(separator: ", ")
    }
}

import BLERuntime
import Controller
import GAP
import HCI
import Transport

/// New connection parameters a peripheral asks for (`request-connection-update`): L2CAP
/// Connection Parameter Update Request (Core 5.4 Vol 3 Part A 4.20), which the central's host
/// answers and, when it accepts, applies with LE Connection Update (Vol 4 Part E 7.8.18); or,
/// `via: .linkLayer`, LE Connection Update on the peripheral (LL_CONNECTION_PARAM_REQ, Vol 6
/// Part B 5.1.7), which the central's controller hands its host to answer.
public struct ConnectionUpdateRequest: Hashable, Sendable, CustomStringConvertible {
    /// Connection interval in 1.25 ms units (min = max), peripheral latency in events,
    /// supervision timeout in 10 ms units.
    public var interval: UInt16
    public var latency: UInt16
    public var timeout: UInt16
    /// How a peripheral asks (a central always uses LE Connection Update).
    public var via: ParameterUpdateProcedure

    public init(interval: UInt16, latency: UInt16, timeout: UInt16, via: ParameterUpdateProcedure = .l2cap) {
        self.interval = interval
        self.latency = latency
        self.timeout = timeout
        self.via = via
    }

    public var parameters: ConnectionParameters {
        ConnectionParameters(intervalMin: interval, intervalMax: interval, latency: latency, supervisionTimeout: timeout)
    }

    public var description: String {
        "interval \(Self.milliseconds(micros: Int64(interval) * 1250)) latency \(latency) timeout \(Self.milliseconds(micros: Int64(timeout) * 10_000))"
            + (via == .linkLayer ? " via link-layer" : "")
    }

    /// "48.75ms", "50ms".
    public static func milliseconds(micros: Int64) -> String {
        let whole = micros / 1000, rest = micros % 1000
        guard rest != 0 else { return "\(whole)ms" }
        var fraction = String(rest)
        while fraction.count < 3 { fraction = "0" + fraction }
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(whole).\(fraction)ms"
    }
}

extension PeripheralAction {
    var faultDescription: String {
        switch self {
        case .powerOff: return "power-off"
        case let .requestConnectionUpdate(r): return "request-connection-update \(r)"
        case let .burst(c, v, count): return "burst \(count) × notify \(c)\(v.map { " value \($0)" } ?? "")"
        default: return "\(self)"
        }
    }
}

extension SimulatedPeripheral {
    /// The fault actions. Power-off needs the embedded simulator; elsewhere it is recorded as
    /// not done.
    func executeFault(_ action: PeripheralAction, context: ActionContext, site: String) {
        switch action {
        case .powerOff:
            guard device.powerOff() else { return failed(action, "power-off needs the embedded simulator", context) }
            record(.action(action))
            did(action, "power-off", context)
        case let .requestConnectionUpdate(request):
            let connections = host.connections.values.sorted { $0.handle < $1.handle }
            guard !connections.isEmpty else { return failed(action, "\(spec.id) has no connection", context) }
            // The central answers a few connection events later: its answer is recorded when it
            // comes, not waited for. A refusal by this host itself (a link-layer request while
            // one is still waiting) comes at once and fails the step.
            var refusals: [String] = []
            for connection in connections {
                var answeredAtOnce = true
                connection.updateParameters(request.parameters, via: request.via) { [weak self] result in
                    guard case let .failure(error) = result else { return }
                    if answeredAtOnce { refusals.append("\(error)") } else { self?.record(.note("request-connection-update: \(error)")) }
                }
                answeredAtOnce = false
            }
            if let refusal = refusals.first { return failed(action, "\(spec.id)'s host refused it: \(refusal)", context) }
            record(.action(action))
            let sent = request.via == .linkLayer ? "LL_CONNECTION_PARAM_REQ asked of the controller" : "L2CAP Connection Parameter Update Request sent"
            did(action, "\(action.description) (\(sent) on \(connections.count) connection\(connections.count == 1 ? "" : "s"))", context)
        case let .burst(ref, source, count):
            // All handed to the stack at once: the host queues what the controller's ACL
            // buffers cannot take and sends it as Number Of Completed Packets returns credits
            // (Vol 4 Part E 4.1.1), so the burst takes as many connection events as it needs.
            var reached = 0
            for _ in 0..<count {
                guard let (_, sent) = notify(ref, source, context: context, site: site) else { return }
                reached = max(reached, sent)
            }
            did(action, SimulatedPeripheral.reach("burst \(count) × notify \(ref)", reached), context)
        default:
            break
        }
    }
}

extension LabDevice {
    /// Powers the device's controller off (`SimAir.powerOff`) and tells its host, which ends its
    /// connections, as when the device's battery dies or its firmware resets: peers time out.
    /// What the controller had already handed to its host transport dies with it: a Number Of
    /// Completed Packets still in flight would reach a host that has let go of the link.
    /// False off the simulator.
    @discardableResult
    public func powerOff() -> Bool {
        guard let controller, let air = lab.air else { return false }
        air.powerOff(controller)
        (transport as? InProcessTransport)?.discardInFlight()
        host.controllerDidReset(reason: .hardwareFailure)
        return true
    }
}

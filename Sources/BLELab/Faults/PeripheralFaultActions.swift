import BLERuntime
import Controller
import GAP
import HCI
import ScenarioFormat
import Transport

extension ConnectionUpdateRequest {
    public var parameters: ConnectionParameters {
        ConnectionParameters(intervalMin: interval, intervalMax: interval, latency: latency, supervisionTimeout: timeout)
    }

    /// The GAP procedure `via` names.
    public var procedure: ParameterUpdateProcedure { via == .linkLayer ? .linkLayer : .l2cap }
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
                connection.updateParameters(request.parameters, via: request.procedure) { [weak self] result in
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

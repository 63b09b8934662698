import ATT
import BLELab
import BLERuntime
import Controller
import GAP
import GATT
import HCI
import ScenarioFormat

/// Fault steps and link expectations (docs/scenarios.md "Faults").
extension ScenarioSession {
    // MARK: Set-up

    /// Each peripheral's `link:` block on the air, and its `mtu:` on every connection it gets.
    func applyDeclaredFaults() throws {
        if options.recordsTimeline, let air = lab.air {
            air.onFault = { [weak self] event in self?.recordFault(event) }
        }
        for spec in scenario.peripherals {
            guard let faults = scenario.faults[spec.id], let peripheral = peripherals[spec.id] else { continue }
            if let link = faults.link {
                let (air, controller) = try simulated(spec.id, "link: faults")
                air.setLinkFaults(link, for: controller)
            }
            if let mtu = faults.mtu {
                // The peripheral's receive MTU, its Exchange MTU Response's Server Rx MTU (Vol 3
                // Part F 3.4.2.2): set on each connection's bearer before any PDU arrives.
                let previous = peripheral.host.onConnection
                peripheral.host.onConnection = { connection in
                    connection.bearer.preferredMTU = UInt16(mtu)
                    previous?(connection)
                }
            }
        }
    }

    private func recordFault(_ event: FaultEvent) {
        func id(of controller: SimController) -> String {
            peripherals.first { $0.value.device.controller === controller }?.key ?? controller.name
        }
        switch event {
        case let .attPDUDropped(drop, _, peripheral):
            record(TimelineEvent(time: now, device: id(of: peripheral), kind: .peripheral, text: "air: \(drop) dropped"))
        case let .leftRange(controller, rssi):
            record(TimelineEvent(time: now, device: id(of: controller), kind: .peripheral,
                                 text: "air: out of range (\(rssi) dBm, below the receivers' sensitivity)"))
        }
    }

    /// The simulated air and the peripheral's controller, or a failure saying the step needs the
    /// embedded simulator.
    func simulated(_ id: String, _ what: String) throws -> (SimAir, SimController) {
        guard let air = lab.air, let controller = peripherals[id]?.device.controller else {
            throw StepFailure(kind: .operation, expected: "\(what) on the embedded simulator",
                              seen: "\(LabError.simulatorOnly(what)); add 'requires: [sim]' to the scenario")
        }
        return (air, controller)
    }

    // MARK: Steps

    func execute(_ fault: FaultStep, step: CentralStep) throws {
        switch fault {
        case let .linkLoss(id, after):
            let (air, controller) = try simulated(id, "link-loss")
            guard let centralController = centralDevice.controller else { return }
            if let after {
                _ = lab.loop.schedule(after: after) { [weak self] in
                    let lost = air.loseLink(between: centralController, and: controller)
                    self?.record(TimelineEvent(time: self?.now ?? .zero, device: id, kind: .peripheral,
                                               text: lost ? "air: the link to the central lost its radio path" : "air: link-loss with no link to the central"))
                }
                note = "the link to \(id) loses its radio path at \(now + after)"
            } else {
                _ = try live(id)
                guard air.loseLink(between: centralController, and: controller) else {
                    throw StepFailure(kind: .operation, expected: "a connection to \(id) to lose", seen: "no link between the controllers")
                }
                note = "the link to \(id) lost its radio path; both ends wait for their supervision timeout"
            }
        case let .outOfRange(id, rate):
            let (air, controller) = try simulated(id, "out-of-range")
            if let rate {
                air.startLeavingRange(controller, dBPerSecond: rate)
                let from = air.rssi(of: controller), floor = air.model.receiverSensitivity
                note = "\(id) leaves range: \(from) dBm falling \(FaultSyntax.trimmed(rate)) dB/s, out of range below \(floor) dBm"
            } else {
                air.setInRange(false, for: controller)
                note = "\(id) is out of range"
            }
        case let .inRange(id):
            let (air, controller) = try simulated(id, "in-range")
            air.setInRange(true, for: controller)
            note = "\(id) is back in range at \(air.rssi(of: controller)) dBm"
        case let .powerOff(id):
            _ = try simulated(id, "power-off")
            peripherals[id]?.device.powerOff()
            note = "\(id) powered off"
        case let .powerOn(id):
            let (air, controller) = try simulated(id, "power-on")
            guard let peripheral = peripherals[id] else { return }
            guard !air.isPoweredOn(controller) || peripheral.host.state != .ready else {
                throw StepFailure(kind: .operation, expected: "\(id) powered off", seen: "\(id) is already on")
            }
            air.powerOn(controller)
            if peripheral.host.state == .ready { peripheral.host.controllerDidReset() }
            let powered = try operate("\(id) to power on") { done in peripheral.host.powerOn(completion: done) }
            if case let .failure(error) = powered {
                throw StepFailure(kind: .operation, expected: "\(id) to power on", seen: "\(error)")
            }
            let started = try operate("advertising of \(id) to start") { done in peripheral.start(completion: done) }
            if case let .failure(error) = started {
                throw StepFailure(kind: .operation, expected: "\(id) to start advertising", seen: "\(error)")
            }
            note = peripheral.spec.advertising == nil ? "\(id) powered on (not advertising: it has no advertise block)" : "\(id) powered on and advertising"
        case let .connectionUpdate(id, request):
            let connection = try live(id)
            var updated = false
            connection.whenParametersUpdated { _ in updated = true }
            let result = try operate("LE Connection Update for \(id)") { done in connection.updateParameters(request.parameters, completion: done) }
            if case let .failure(error) = result {
                throw StepFailure(kind: .operation, expected: "the controller to accept LE Connection Update (\(request))", seen: "\(error)")
            }
            // The new parameters apply at the update's instant, a few events later (Vol 6 Part B 5.1.1).
            try waitFor("LE Connection Update Complete from \(id)", within: Self.operationLimit) { updated || !connection.isConnected }
            guard updated else {
                throw StepFailure(kind: .operation, expected: "LE Connection Update Complete (\(request))",
                                  seen: connection.isConnected ? "none" : "the connection ended (\(connection.disconnectReason.map { "\($0)" } ?? "?"))")
            }
            note = "LE Connection Update Complete: " + Self.describe(connection)
        case let .link(id, faults):
            let (air, controller) = try simulated(id, "link")
            air.setLinkFaults(faults, for: controller)
            note = "link faults of \(id): \(Self.describe(faults))"
        case let .parameterRequests(id, accept):
            (central as? HostCentral)?.answerParameterRequests(from: id, accept: accept)
            note = "the central \(accept ? "accepts" : "rejects") \(id)'s requests for new connection parameters"
        }
    }

    static func describe(_ c: Connection) -> String {
        "interval \(ConnectionUpdateRequest.milliseconds(micros: Int64(c.interval) * 1250)), latency \(c.latency), "
            + "timeout \(ConnectionUpdateRequest.milliseconds(micros: Int64(c.supervisionTimeout) * 10_000))"
    }

    static func describe(_ f: LinkFaults) -> String {
        if f.isNone { return "none" }
        var parts: [String] = []
        if f.lossRate > 0 { parts.append("loss \(FaultSyntax.trimmed(f.lossRate * 100))%") }
        if f.latency > .zero { parts.append("latency \(f.latency)") }
        if f.jitter > .zero { parts.append("jitter \(f.jitter)") }
        if !f.drops.isEmpty { parts.append("drop " + f.drops.map(\.description).joined(separator: ", ")) }
        return parts.joined(separator: ", ")
    }

    // MARK: Expectations

}

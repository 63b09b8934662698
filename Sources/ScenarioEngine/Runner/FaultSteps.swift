import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

import Controller

/// `faults:` of a scenario's peripherals and its `fault:` steps: what the embedded simulator's air
/// and controllers do to links (docs/scenarios.md). Only the simulator offers them; elsewhere the
/// step fails saying so.
final class FaultSteps {
    unowned let session: ScenarioSession

    init(session: ScenarioSession) {
        self.session = session
    }

    /// Each peripheral's `link:` block on the air, and its `mtu:` on every connection it gets.
    func applyDeclaredFaults() throws {
        if session.options.recordsTimeline, let air = session.lab.air {
            air.onFault = { [weak self] event in self?.recordFault(event) }
        }
        for spec in session.scenario.peripherals {
            guard let faults = session.scenario.faults[spec.id], let peripheral = session.peripherals[spec.id] else { continue }
            // A real controller's connection events carry what it decides: `pdus-per-event` alone
            // is the sim's and goes without elsewhere.
            if let link = faults.link, !(link.isCapacityOnly && session.lab.air == nil) {
                let (air, controller) = try simulated(spec.id, "link: faults")
                air.setLinkFaults(link, for: controller)
            }
            if let mtu = faults.mtu { peripheral.answeredMTU = mtu }
        }
    }

    private func recordFault(_ event: FaultEvent) {
        func id(of controller: SimController) -> String {
            session.peripherals.first { $0.value.device.controller === controller }?.key ?? controller.name
        }
        switch event {
        case let .attPDUDropped(drop, _, peripheral):
            session.record(TimelineEvent(time: session.now, device: id(of: peripheral), kind: .peripheral, text: "air: \(drop) dropped"))
        case let .leftRange(controller, rssi):
            session.record(TimelineEvent(time: session.now, device: id(of: controller), kind: .peripheral,
                                 text: "air: out of range (\(rssi) dBm, below the receivers' sensitivity)"))
        }
    }

    /// The simulated air and the peripheral's controller, or a failure saying the step needs the
    /// embedded simulator.
    func simulated(_ id: String, _ what: String) throws -> (SimAir, SimController) {
        guard let air = session.lab.air, let controller = session.peripherals[id]?.device.controller else {
            throw StepFailure(kind: .operation, expected: "\(what) on the embedded simulator",
                              seen: "\(LabError.simulatorOnly(what)); add 'requires: [sim]' to the scenario")
        }
        return (air, controller)
    }

    func execute(_ fault: FaultStep, step: CentralStep) throws {
        switch fault {
        case let .linkLoss(id, after):
            let (air, controller) = try simulated(id, "link-loss")
            guard let centralController = session.centralDevice.controller else { return }
            if let after {
                _ = session.lab.loop.schedule(after: after) { [weak self] in
                    let lost = air.loseLink(between: centralController, and: controller)
                    self?.session.record(TimelineEvent(time: self?.session.now ?? .zero, device: id, kind: .peripheral,
                                               text: lost ? "air: the link to the central lost its radio path" : "air: link-loss with no link to the central"))
                }
                session.note = "the link to \(id) loses its radio path at \(session.now + after)"
            } else {
                _ = try session.live(id)
                guard air.loseLink(between: centralController, and: controller) else {
                    throw StepFailure(kind: .operation, expected: "a connection to \(id) to lose", seen: "no link between the controllers")
                }
                session.note = "the link to \(id) lost its radio path; both ends wait for their supervision timeout"
            }
        case let .outOfRange(id, rate):
            let (air, controller) = try simulated(id, "out-of-range")
            if let rate {
                air.startLeavingRange(controller, dBPerSecond: rate)
                let from = air.rssi(of: controller), floor = air.model.receiverSensitivity
                session.note = "\(id) leaves range: \(from) dBm falling \(FaultSyntax.trimmed(rate)) dB/s, out of range below \(floor) dBm"
            } else {
                air.setInRange(false, for: controller)
                session.note = "\(id) is out of range"
            }
        case let .inRange(id):
            let (air, controller) = try simulated(id, "in-range")
            air.setInRange(true, for: controller)
            session.note = "\(id) is back in range at \(air.rssi(of: controller)) dBm"
        case let .powerOff(id):
            _ = try simulated(id, "power-off")
            session.peripherals[id]?.device.powerOff()
            session.note = "\(id) powered off"
        case let .centralPowerOff(after):
            let done = try session.operate("the central's controller to power off") { done in session.central.powerOff(after: after, completion: done) }
            if case let .failure(error) = done {
                throw StepFailure(kind: .operation, expected: "the central's controller to power off", seen: "\(error)")
            }
            session.note = after.map { "the central's controller powers off at \(session.now + $0)" }
                ?? "the central's controller powered off; its connections are gone and the peripherals time out"
        case let .powerOn(id):
            let (air, controller) = try simulated(id, "power-on")
            guard let peripheral = session.peripherals[id] else { return }
            guard !air.isPoweredOn(controller) || peripheral.host.state != .ready else {
                throw StepFailure(kind: .operation, expected: "\(id) powered off", seen: "\(id) is already on")
            }
            air.powerOn(controller)
            if peripheral.host.state == .ready { peripheral.host.controllerDidReset() }
            let powered = try session.operate("\(id) to power on") { done in peripheral.host.powerOn(completion: done) }
            if case let .failure(error) = powered {
                throw StepFailure(kind: .operation, expected: "\(id) to power on", seen: "\(error)")
            }
            let started = try session.operate("advertising of \(id) to start") { done in peripheral.start(completion: done) }
            if case let .failure(error) = started {
                throw StepFailure(kind: .operation, expected: "\(id) to start advertising", seen: "\(error)")
            }
            session.note = peripheral.spec.advertising == nil ? "\(id) powered on (not advertising: it has no advertise block)" : "\(id) powered on and advertising"
        case let .connectionUpdate(id, request):
            let connection = try session.live(id)
            var updated = false
            connection.whenParametersUpdated { _ in updated = true }
            let result = try session.operate("LE Connection Update for \(id)") { done in connection.updateParameters(request.parameters, completion: done) }
            if case let .failure(error) = result {
                throw StepFailure(kind: .operation, expected: "the controller to accept LE Connection Update (\(request))", seen: "\(error)")
            }
            // The new parameters apply at the update's instant, a few events later (Vol 6 Part B 5.1.1).
            try session.waitFor("LE Connection Update Complete from \(id)", within: ScenarioSession.operationLimit) { updated || !connection.isConnected }
            guard updated else {
                throw StepFailure(kind: .operation, expected: "LE Connection Update Complete (\(request))",
                                  seen: connection.isConnected ? "none" : "the connection ended (\(connection.disconnectReason.map { "\($0)" } ?? "?"))")
            }
            session.note = "LE Connection Update Complete: " + ScenarioSession.describe(connection)
        case let .link(id, faults):
            let (air, controller) = try simulated(id, "link")
            air.setLinkFaults(faults, for: controller)
            session.note = "link faults of \(id): \(ScenarioSession.describe(faults))"
        case let .parameterRequests(id, accept):
            session.central.answerParameterRequests(from: id, accept: accept)
            session.note = "the central \(accept ? "accepts" : "rejects") \(id)'s requests for new connection parameters"
        }
    }
}

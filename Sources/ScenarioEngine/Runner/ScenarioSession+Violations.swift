import GAP
import HostLink
import ScenarioFormat

/// The protocol violations of every lab device, in the timeline and in the notes of the steps
/// they happened in: each device's host reports every layer's (HCI, L2CAP, LE signaling, SMP,
/// ATT, GAP) as one typed `ProtocolViolation` through `BLEHost.onViolation`, ATT's included
/// (GAP joins the bearer's own event to it), so each is recorded once, from there.
extension ScenarioSession {
    /// Records what `host` reports, as `device` (a peripheral's id, or `central`). Whoever had
    /// `onViolation` before still hears everything. Weak: a host on external controllers can
    /// still report after the run has ended (its transport closing with a PDU unfinished).
    func watchViolations(of host: BLEHost, device: String) {
        let earlier = host.onViolation
        host.onViolation = { [weak self, unowned host] violation in
            earlier?(violation)
            self?.violated(violation, on: device, host: host)
        }
    }

    private func violated(_ v: ProtocolViolation, on device: String, host: BLEHost) {
        // HCI's come from the device's own controller, whatever connection they name.
        let from = v.layer == .hci ? "its controller" : v.handle.map { sender(of: $0, on: device, host: host) }
        var consequence = ""
        switch v.answer {
        case .none: break
        case let .disconnect(reason): consequence = "; \(device) ends the link: \(reason)"
        default: consequence = "; answered \(v.answer)"
        }
        let octets = v.octets.isEmpty ? "(none)" : v.octets.spacedHex
        violationNotes.append(("\(device): \(v.layer)/\(v.kind)\(from.map { " from \($0)" } ?? ""): \(v.detail); octets \(octets)\(consequence)",
                               v.detail))
        record(TimelineEvent(time: now, device: device, kind: .protocolViolation,
                             text: "rejected\(from.map { " from \($0)" } ?? ""): \(v.detail); octets \(octets)\(consequence)",
                             direction: "received", bytes: v.octets, layer: v.layer.rawValue, violation: v.kind.rawValue,
                             answer: v.answer.token))
    }

    /// Who is at the other end of the connection `handle`: for the central, the peripheral it
    /// connected to there; for a peripheral, the central.
    private func sender(of handle: UInt16, on device: String, host: BLEHost) -> String {
        guard device == PeripheralSchema.centralID else { return PeripheralSchema.centralID }
        let peer = connections.first { $0.value.handle == handle && $0.value.host === host }?.key
        return peer ?? "connection 0x\(String(handle, radix: 16))"
    }
}

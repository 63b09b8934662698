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

    // MARK: Steps

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

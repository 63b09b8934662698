import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import ScenarioFormat

extension ScenarioSession {
    /// Whether an operation's failure that is no ATT Error Response is expected by the `expect`
    /// steps right after it (`malformed-response` for a rejected response, `att-timeout` for a
    /// transaction timeout), as `error` expects an Error Response.
    func expectsFailure(_ error: GATTError, following: ArraySlice<CentralStep>) -> Bool {
        following.contains { step in
            guard case let .expect(.flaw(e)) = step.action else { return false }
            switch (error, e) {
            case (.protocolViolation, .malformedResponse), (.invalidResponse, .malformedResponse): return true
            case (.timeout, .attTimeout): return true
            default: return false
            }
        }
    }

    /// An operation's failure in words; for a response the central rejected just now, with the
    /// octets that arrived.
    func describe(_ error: GATTError, of step: CentralStep) -> String {
        guard case .protocolViolation = error, let id = step.action.peripheral,
              let rejected = flawObservations.rejected[id]?.last, rejected.time == now else { return "\(error)" }
        return "\(error); octets \(rejected.bytes.isEmpty ? "(none)" : rejected.bytes.spacedHex)"
    }

}

import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import ScenarioFormat

/// What a `connect` step gave, for `expect: { connect-failed }`.
struct ConnectAttempt {
    enum Outcome {
        /// The connection (nil when the seat gives the lab none: another stack holds it).
        case connected(Connection?)
        /// Why it gave none, when it has a name, and the report's words.
        case failed(ConnectFailureReason?, String)
    }

    var step: CentralStep
    var peripheral: String
    var time: Instant
    var outcome: Outcome
}

/// `link-lost` and `connect-failed`: a step cut short by the link, or a connect that gave no
/// connection, is ok (and says so) when one of the `expect` steps right after it expects that;
/// otherwise it fails the scenario, as an unexpected ATT error does. The expectation fails when
/// the step did complete.
extension ScenarioSession {
    /// "remote-user-terminated (0x13) at 1.2s".
    func linkEnd(_ id: String, reason: UInt8?) -> String {
        let status = (reason.map(HCIStatus.init(rawValue:)) ?? connections[id]?.disconnectReason).map { "\($0)" } ?? "reason unknown"
        return status + (linkEnded[id].map { " at \($0)" } ?? "")
    }

}

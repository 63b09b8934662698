/// New connection parameters a peripheral asks for (`request-connection-update`): L2CAP
/// Connection Parameter Update Request (Core 5.4 Vol 3 Part A 4.20), which the central's host
/// answers and, when it accepts, applies with LE Connection Update (Vol 4 Part E 7.8.18); or,
/// `via: .linkLayer`, LE Connection Update on the peripheral (LL_CONNECTION_PARAM_REQ, Vol 6
/// Part B 5.1.7), which the central's controller hands its host to answer.
public struct ConnectionUpdateRequest: Hashable, Sendable, CustomStringConvertible {
    /// How a peripheral asks for new connection parameters (the scenario's `via:`; the lab maps it
    /// to GAP's `ParameterUpdateProcedure`).
    public enum Procedure: String, Hashable, Sendable, CaseIterable {
        /// L2CAP Connection Parameter Update Request (Vol 3 Part A 4.20), answered by the central's host.
        case l2cap
        /// LE Connection Update on the peripheral: LL_CONNECTION_PARAM_REQ (Vol 6 Part B 5.1.7).
        case linkLayer = "link-layer"
    }

    /// Connection interval in 1.25 ms units (min = max), peripheral latency in events,
    /// supervision timeout in 10 ms units.
    public var interval: UInt16
    public var latency: UInt16
    public var timeout: UInt16
    /// How a peripheral asks (a central always uses LE Connection Update).
    public var via: Procedure

    public init(interval: UInt16, latency: UInt16, timeout: UInt16, via: Procedure = .l2cap) {
        self.interval = interval
        self.latency = latency
        self.timeout = timeout
        self.via = via
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

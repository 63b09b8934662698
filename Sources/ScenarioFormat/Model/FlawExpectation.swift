import ATT
import BLERuntime
import BLEWire

/// Expectations about how the central met a flawed peripheral (docs/scenarios.md, "Flawed
/// peripherals"). Each is judged on what crossed the central's HCI and what its ATT bearer and
/// GATT client made of it.
public enum FlawExpectation: Hashable {
    /// The central rejected a response from the peripheral: one that did not decode, one of the
    /// wrong kind for the request outstanding, or one with no request outstanding.
    case malformedResponse(peripheral: String, opcode: ATTOpcode?, bytes: [UInt8]?, within: TimeSpan)
    /// The central's ATT transaction timeout (30 s, Core 5.4 Vol 3 Part F 3.3.3) fired on its
    /// bearer to the peripheral, for `request` when given.
    case attTimeout(peripheral: String, request: ATTOpcode?, within: TimeSpan)
    /// The slowest response of the last operation, from request to response on the central's HCI.
    case responseTime(atLeast: TimeSpan?, atMost: TimeSpan?)
    /// A notification or indication for a handle the central never discovered arrived, and the
    /// central ignored it (confirming an indication, as Part F 3.4.7.2 requires).
    case ignoredNotification(peripheral: String, handle: UInt16, indication: Bool?, within: TimeSpan)
    /// A Service Changed indication arrived, was confirmed, and the central re-discovered the range.
    case serviceChanged(peripheral: String, range: ATTHandleRange?, within: TimeSpan)
    /// The central's view of the peripheral (after any re-discovery) has none of these services:
    /// what a truncated discovery or a removed service leaves.
    case notServices([BluetoothUUID], peripheral: String)

    public var peripheral: String? {
        switch self {
        case let .malformedResponse(p, _, _, _), let .attTimeout(p, _, _), let .ignoredNotification(p, _, _, _),
             let .serviceChanged(p, _, _), let .notServices(_, p):
            return p
        case .responseTime: return nil
        }
    }

    public var summary: String {
        switch self {
        case let .malformedResponse(p, opcode, bytes, within):
            var s = "the central to reject a response from \(p)"
            if let opcode { s += ", a \(opcode.name)" }
            if let bytes { s += " of octets \(bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " "))" }
            return s + " within \(within)"
        case let .attTimeout(p, request, within):
            return "the central's ATT transaction timeout on \(p)\(request.map { " for a \($0.name)" } ?? "") within \(within)"
        case let .responseTime(least, most):
            var parts: [String] = []
            if let least { parts.append("at least \(least)") }
            if let most { parts.append("at most \(most)") }
            return "the last operation's slowest response to take \(parts.joined(separator: " and "))"
        case let .ignoredNotification(p, handle, indication, within):
            let kind = indication.map { $0 ? "an indication" : "a notification" } ?? "a notification or indication"
            return "\(kind) from \(p) for handle \(hex4(handle)), which the central never discovered, received and ignored within \(within)"
        case let .serviceChanged(p, range, within):
            return "a Service Changed indication from \(p)\(range.map { " for \($0)" } ?? ""), confirmed and re-discovered within \(within)"
        case let .notServices(list, p):
            return "\(p) has none of the services \(list.map(\.description).joined(separator: ", ")) as the central knows it"
        }
    }
}

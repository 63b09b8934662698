import ATT
import BLELab
import BLERuntime
import BLEWire
import Controller
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

/// Look-ups on the session's account of what the central saw, for the steps and the judge.
extension ScenarioSession {
    func describeScan(_ found: [String: SeatScanReport]) -> String {
        scenario.peripherals.compactMap { spec in
            found[spec.id].map { r in
                // A peripheral with `privacy:`: where the scan heard it, and who the central's host took it for.
                var details = r.rssi.map { ["\($0) dBm"] } ?? []
                if privatePeripherals.contains(spec.id) {
                    details.append("at \(r.address)" + (r.identity.map { ", resolved to identity \($0)" } ?? ", not resolved"))
                }
                return details.isEmpty ? spec.id : "\(spec.id) (\(details.joined(separator: ", ")))"
            }
        }.joined(separator: ", ")
    }

    /// The first peripheral of the scenario at `address` (a look-up per scan report: a dictionary,
    /// rebuilt in the scenario's order when it misses or is stale).
    func peripheralID(at address: LEAddress) -> String? {
        if let id = idsByAddress[address], peripheralSeats[id]?.address == address { return id }
        idsByAddress.removeAll(keepingCapacity: true)
        for spec in scenario.peripherals {
            guard let seen = peripheralSeats[spec.id]?.address, idsByAddress[seen] == nil else { continue }
            idsByAddress[seen] = spec.id
        }
        return idsByAddress[address] ?? formerOwner(of: address)
    }

    /// The address `id` is at: BLELab's device, or what the external peripheral reports; for a
    /// peripheral with `privacy:`, where the central knows it to be (`centralAddresses`).
    func address(of id: String) -> LEAddress? {
        centralAddresses[id] ?? peripheralSeats[id]?.address
    }

    /// "remote-user-terminated (0x13) at 1.2s".
    func linkEnd(_ id: String, reason: UInt8?) -> String {
        let status = (reason.map(HCIStatus.init(rawValue:)) ?? connections[id]?.disconnectReason).map { "\($0)" } ?? "reason unknown"
        return status + (linkEnded[id].map { " at \($0)" } ?? "")
    }

    static func milliseconds(_ span: TimeSpan) -> String {
        ConnectionUpdateRequest.milliseconds(micros: span.nanoseconds / 1000)
    }

    /// The address of `id` while the central is connected to it.
    func linked(_ id: String) throws -> LEAddress {
        guard everConnected.contains(id), let address = address(of: id) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "never connected to \(id)")
        }
        guard central.isConnected(address) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "the connection ended" + endReason(id))
        }
        return address
    }

    /// " (remote-user-terminated (0x13))" when the lab saw the link end, else "".
    func endReason(_ id: String) -> String {
        connections[id].map { " (\($0.disconnectReason.map { "\($0)" } ?? "?"))" } ?? ""
    }

    /// The live GAP connection to `id` (BLELab's host in the seat).
    /// The link whose security the expectations judge: the central's GAP connection when
    /// BLELab's host plays the central, else the simulated peripheral's side of its latest link
    /// (another stack in the central's seat tells the lab nothing of its link's encryption).
    func securityConnection(_ id: String) -> Connection? {
        if let connection = connections[id] { return connection }
        guard roles.central != nil, let host = peripherals[id]?.host else { return nil }
        let links = host.connections.values.sorted { $0.handle < $1.handle }
        return links.last { $0.isConnected } ?? links.last ?? security.links[id]
    }

    func live(_ id: String) throws -> Connection {
        guard let connection = connections[id] else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "never connected to \(id)")
        }
        guard connection.isConnected else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "the connection ended" + endReason(id))
        }
        return connection
    }

    /// The characteristic `ref` as the central resolved it on `id`.
    @discardableResult
    func characteristic(_ ref: CharacteristicRef, on id: String, at address: LEAddress) throws -> SeatCharacteristic {
        let services = central.services(on: address)
        for service in services where ref.service == nil || service.uuid == ref.service {
            if let c = service.characteristics.first(where: { $0.uuid == ref.characteristic }) { return c }
        }
        let seen = services.isEmpty ? "nothing discovered yet (add a discover step)"
            : "discovery found \(services.flatMap { s in s.characteristics.map { "\(s.uuid)/\($0.uuid)" } }.joined(separator: ", "))"
        throw StepFailure(kind: .operation, expected: "characteristic \(ref) discovered on \(id)", seen: seen)
    }

    // MARK: GATT operations

    /// The value handle of `ref` in `id`'s own database: the handle on the link.
    func valueHandle(_ ref: CharacteristicRef, on id: String) -> UInt16? {
        guard let seat = peripheralSeats[id] else { return nil }
        if seat.simulated != nil { return seat.valueHandle(ref) }
        // Served by another stack: the handle the central discovered on the link.
        guard everConnected.contains(id), let address = seat.address else { return nil }
        for service in central.services(on: address) where ref.service == nil || service.uuid == ref.service {
            if let c = service.characteristics.first(where: { $0.uuid == ref.characteristic }) { return c.valueHandle }
        }
        return nil
    }

    // MARK: Descriptors

}

/// Where the central's and the peripheral's accounts of writes stood when a write step started:
/// `write-sent-as` is judged on the central's HCI when the lab sees it, else on the peripheral's.
struct WriteMark {
    var step: CentralStep
    var peripheral: String
    /// ATT records on the central's HCI before the write.
    var centralTraffic: Int
    var connectionHandle: UInt16?
    /// The characteristic's value handle on the peripheral.
    var handle: UInt16?
    /// Writes of it the peripheral had received before it.
    var received: Int
}

/// Connections and link faults in words.
extension ScenarioSession {
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
        if let e = f.encryption { parts.append("encryption \(e.rawValue)") }
        return parts.joined(separator: ", ")
    }

    // MARK: Expectations

}

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

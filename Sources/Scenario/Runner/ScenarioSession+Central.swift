import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import Host
import ScenarioFormat

/// The scripted central's steps (docs/scenarios.md section 5), one path whoever plays the seat
/// (CentralSeat.swift): BLELab's own host or another stack.
extension ScenarioSession {
    // MARK: Scanning and connecting

    func describeScan(_ found: [String: ExternalScanReport]) -> String {
        scenario.peripherals.compactMap { spec in
            found[spec.id].map { r in r.rssi.map { "\(spec.id) (\($0) dBm)" } ?? spec.id }
        }.joined(separator: ", ")
    }

    func peripheralID(at address: LEAddress) -> String? {
        scenario.peripherals.first { peripheralSeats[$0.id]?.address == address }?.id
    }

    /// The address `id` is at: BLELab's device, or what the external peripheral reports.
    func address(of id: String) -> LEAddress? {
        peripheralSeats[id]?.address
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
    func characteristic(_ ref: CharacteristicRef, on id: String, at address: LEAddress) throws -> ExternalCharacteristic {
        let services = central.services(on: address)
        for service in services where ref.service == nil || service.uuid == ref.service {
            if let c = service.characteristics.first(where: { $0.uuid == ref.characteristic }) { return c }
        }
        let seen = services.isEmpty ? "nothing discovered yet (add a discover step)"
            : "discovery found \(services.flatMap { s in s.characteristics.map { "\(s.uuid)/\($0.uuid)" } }.joined(separator: ", "))"
        throw StepFailure(kind: .operation, expected: "characteristic \(ref) discovered on \(id)", seen: seen)
    }

    // MARK: GATT operations

    static func handle(of error: GATTError) -> UInt16 {
        if case let .att(_, handle) = error { return handle }
        return 0
    }

    /// Why a Write Command could not be sent, the one reason that applies: the value is longer
    /// than ATT_MTU - 3 (Core Vol 3 Part F 3.4.5.3), or the bearer is closed, or it failed (after a
    /// transaction timeout, Part F 3.3.3, or a protocol violation) and sends nothing more.
    static func unsentCommand(_ octets: Int, mtu: Int, bearer: ATTBearer.State, failure: ATTError? = nil) -> String {
        switch bearer {
        case .closed: return "the link is closed: the ATT bearer to the peripheral is gone"
        case .failed:
            if case .timeout? = failure { return "the ATT bearer sends nothing more after a transaction timeout (Core Vol 3 Part F 3.3.3)" }
            return "the ATT bearer sends nothing more: it failed" + (failure.map { " (\($0))" } ?? "")
        case .open:
            return "\(octets) octets do not fit a Write Command at ATT_MTU \(mtu) (at most ATT_MTU - 3 = \(mtu - 3) octets); "
                + "exchange a larger MTU first (mtu: 247), or write with type: request, which sends a long value in parts"
        }
    }

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
    /// Writes the peripheral had received before it.
    var received: Int
}

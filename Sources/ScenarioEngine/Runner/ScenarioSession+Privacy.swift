import BLEWire
import GAP
import ScenarioFormat

/// Following a peripheral with `privacy:` across its address changes (docs/scenarios.md section
/// 19). The lab knows every resolvable private address each of its peripherals has used, so it
/// names the device behind each address the central meets; whether the central itself knows them
/// for one device is what `addresses-seen` judges (with the keys the central's host holds).
extension ScenarioSession {
    /// The peripheral with `privacy:` that used `address` before its current one.
    func formerOwner(of address: LEAddress) -> String? {
        guard address.type == .random else { return nil }
        for id in privatePeripherals where peripherals[id]?.host.privateAddressHistory.contains(address.address) == true {
            return id
        }
        return nil
    }

    /// A scan heard `id` at `address`.
    func heard(_ id: String, at address: LEAddress) {
        if addressesSeen[id]?.contains(address) != true { addressesSeen[id, default: []].append(address) }
    }

    /// After a scan: a peripheral with `privacy:` is where the scan last heard it, which is where
    /// `connect` aims (an app connects to the device its scan reported).
    func followPrivateAddresses(_ found: [String: SeatScanReport]) {
        for id in privatePeripherals { if let report = found[id] { centralAddresses[id] = report.address } }
    }

    /// The identity address `id` distributes when it bonds: its public or random static address.
    func identityAddress(of id: String) -> LEAddress? {
        guard let host = peripherals[id]?.host else { return nil }
        if let random = host.configuration.randomAddress { return LEAddress(random, type: .random) }
        return host.publicAddress.map { LEAddress($0, type: .public) }
    }
}

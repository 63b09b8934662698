import DBus
import ScenarioEngine

/// `blelab run --central bluez[:hciN]` and `--peripheral bluez[:hciN[:ID]]`.
public enum BlueZRoles {
    public static let help = "bluez[:hciN] (bluetoothd over D-Bus on the system bus)"

    public static func make(central: String?, peripheral: String?) throws -> ScenarioRoles {
        var roles = ScenarioRoles()
        if let central {
            let parts = try split(central, option: "--central", maxParts: 2)
            roles.central = try BlueZCentral(adapter: parts.count > 1 ? parts[1] : "hci0")
        }
        if let peripheral {
            let parts = try split(peripheral, option: "--peripheral", maxParts: 3)
            roles.peripheral = BlueZPeripheralProvider(adapter: try DBusObjectPath("/org/bluez/\(parts.count > 1 ? parts[1] : "hci0")"),
                                                       select: parts.count > 2 ? parts[2] : nil)
        }
        if roles.central != nil, roles.peripheral != nil {
            throw SeatError.failed("--central and --peripheral together are not supported yet: give one (one bluetoothd plays one seat per run)")
        }
        return roles
    }

    private static func split(_ value: String, option: String, maxParts: Int) throws -> [String] {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts[0] == "bluez", parts.count <= maxParts, !parts.contains(where: \.isEmpty) else {
            let form = maxParts == 2 ? "bluez, bluez:hciN or none" : "bluez, bluez:hciN or bluez:hciN:PERIPHERAL"
            throw SeatError.failed("\(option) \(value): this build offers \(form)")
        }
        if parts.count > 1, !(parts[1].hasPrefix("hci") && parts[1].dropFirst(3).allSatisfy(\.isNumber) && parts[1].count > 3) {
            throw SeatError.failed("\(option) \(value): '\(parts[1])' is not an adapter name (hci0, hci1, …)")
        }
        return parts
    }
}

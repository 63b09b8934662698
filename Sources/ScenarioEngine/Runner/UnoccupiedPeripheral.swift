import BLELab
import BLERuntime
import BLEWire
import ScenarioFormat

/// `blelab run --peripheral none:ID@ADDRESS`: peripheral ID is served by a program outside the
/// lab (a bless GATT server on bluetoothd, a team's own firmware on a dev board) at ADDRESS.
/// The lab plays the central and the other peripherals; the scenario's `ID:` entry only says
/// what the program is expected to offer and advertise. The lab cannot make that program act or
/// see what its application was handed, so a scenario is run only when every step about ID is
/// one BLELab's central takes, or is judged on the central's side of the link (what the central
/// sent, what it received).
public final class UnoccupiedPeripheralProvider: PeripheralSeatProvider {
    /// The scenario peripheral the program serves; nil: the first declared.
    public let select: String?
    /// Where the program advertises; nil: the scenario's `address:` for it.
    public let address: LEAddress?

    public init(select: String?, address: LEAddress?) {
        self.select = select
        self.address = address
    }

    /// Parses the part after `none:` of `--peripheral none:ID@ADDRESS` (`ID`, `@ADDRESS` or
    /// `ID@ADDRESS`; the address as `C0:11:22:33:44:55[/public|/random]`).
    public convenience init(argument: String) throws {
        let parts = argument.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let id = parts[0].isEmpty ? nil : parts[0]
        var address: LEAddress?
        if parts.count == 2 {
            guard let parsed = LEAddress(string: parts[1]) else {
                throw SeatError.failed("--peripheral none:\(argument): '\(parts[1])' is not an address "
                    + "(C0:11:22:33:44:55, optionally /public or /random)")
            }
            address = parsed
        }
        if id == nil, address == nil {
            throw SeatError.failed("--peripheral none:\(argument): give the peripheral's id, its address or both (none:ID@ADDRESS)")
        }
        self.init(select: id, address: address)
    }

    public var description: String {
        "a program outside the lab" + (address.map { " at \($0)" } ?? "")
    }

    public func served(in scenario: Scenario) -> PeripheralSpec? {
        guard let select else { return scenario.peripherals.first }
        return scenario.peripheral(select)
    }

    public func unsupported(_ spec: PeripheralSpec, in scenario: Scenario) -> String? {
        Self.unsupported(spec, in: scenario).map { "\(spec.id) is served by a program outside the lab (--peripheral none): \($0)" }
    }

    /// Why the lab cannot run `scenario` with `spec` left to a program outside it, or nil.
    static func unsupported(_ spec: PeripheralSpec, in scenario: Scenario) -> String? {
        if !spec.onConnect.isEmpty || !spec.onDisconnect.isEmpty {
            return "its on-connect/on-disconnect actions are the program's to do; the lab cannot make it act"
        }
        for (service, c) in spec.characteristics
        where !(c.onRead.isEmpty && c.onWrite.isEmpty && c.onSubscribe.isEmpty && c.onUnsubscribe.isEmpty) {
            return "\(service)/\(c.uuid) has on-read/on-write/on-subscribe/on-unsubscribe actions, which are the program's to do"
        }
        if !spec.flaws.isEmpty { return "flaws: are how BLELab's simulated server misanswers; the program answers for itself" }
        if let faults = scenario.faults[spec.id], faults.link != nil || faults.mtu != nil {
            return "faults: act on the embedded simulator's air and BLELab's own server"
        }
        for step in scenario.steps {
            switch step.action {
            case let .peripheralActions(list) where list.contains(where: { $0.peripheral == spec.id }):
                return "step \(step.index) (\(step.text)) makes \(spec.id) act, and the lab cannot make a program outside it act"
            case let .expect(.peripheralReceived(e)) where e.peripheral == spec.id:
                return "step \(step.index) (\(step.text)) asks what the program's application was handed, which the lab cannot see "
                    + "(judge the central's side: expect: { write-sent-as: … })"
            case let .fault(fault) where fault.peripheral == spec.id:
                return "step \(step.index) (\(step.text)) is a fault on the embedded simulator's air or BLELab's own device"
            default:
                continue
            }
        }
        return nil
    }

    public func makePeripheral(_ spec: PeripheralSpec, lab: Lab) throws -> ProvidedPeripheralSeat {
        guard let at = address ?? spec.address else {
            throw SeatError.failed("the lab does not know where the program outside it serves \(spec.id): give its address "
                + "(--peripheral none:\(spec.id)@C0:11:22:33:44:55) or declare address: for \(spec.id)")
        }
        return UnoccupiedPeripheral(spec: spec, address: at)
    }
}

/// One run's seat of a peripheral a program outside the lab serves: it only says where that
/// program is. It has nothing to start or stop, and never hears of links (the central's side
/// judges them).
public final class UnoccupiedPeripheral: ProvidedPeripheralSeat {
    public let spec: PeripheralSpec
    public let address: LEAddress?

    public init(spec: PeripheralSpec, address: LEAddress) {
        self.spec = spec
        self.address = address
    }

    public var connectedCentrals: [LEAddress] { [] }
    public var onActivity: ((PeripheralActivity) -> Void)?
    public var onWrite: ((SeatReceivedWrite) -> Void)?

    public func start(completion: @escaping (Result<Void, SeatError>) -> Void) { completion(.success(())) }
    public func stop(completion: @escaping () -> Void) { completion() }
    /// Never called: `unsupported` refuses every scenario that makes this peripheral act.
    public func perform(_ actions: [PeripheralAction], site: String) {}
}

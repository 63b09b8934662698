import ATT
import BLELab
import BLERuntime
import BLEWire
import GATT
import HostLink
import ScenarioFormat

/// Scenario roles played by a stack other than BLELab's host: bluetoothd over D-Bus in the
/// central's seat (`blelab run --central bluez`) or serving one of the scenario's peripherals
/// (`--peripheral bluez`). The session drives them step by step on the lab's loop; what crossed
/// the link is still judged on the HCI of the BLELab devices on the other side.
public struct ScenarioRoles {
    public var central: CentralSeat?
    public var peripheral: PeripheralSeatProvider?

    public init(central: CentralSeat? = nil, peripheral: PeripheralSeatProvider? = nil) {
        self.central = central
        self.peripheral = peripheral
    }

    public var isEmpty: Bool { central == nil && peripheral == nil }

    /// "central: BlueZ 5.66 (bluetoothd) on hci0", for the run's header.
    public var description: String {
        var parts: [String] = []
        if let central { parts.append("central: \(central.description)") }
        if let peripheral { parts.append("peripheral: \(peripheral.description)") }
        return parts.joined(separator: "; ")
    }

    /// BLELab devices (controllers) a scenario needs: its peripherals and the central, less the
    /// roles played elsewhere.
    public func deviceCount(for scenario: Scenario) -> Int {
        var n = scenario.peripherals.count + 1
        if central != nil { n -= 1 }
        if peripheral != nil, !scenario.peripherals.isEmpty { n -= 1 }
        return n
    }

    /// Why the scenario cannot run with these roles (it is then skipped), or nil.
    public func unsupported(_ scenario: Scenario) -> String? {
        if central != nil, let reason = Self.radioStepsOnlyBLELabsCentralTakes(scenario) { return reason }
        if let central, let reason = central.unsupported(scenario) { return reason }
        if let peripheral, let spec = peripheral.served(in: scenario), let reason = peripheral.unsupported(spec, in: scenario) {
            return reason
        }
        return nil
    }
}

/// Why a seat's operation failed: an ATT error the peer answered with (which an
/// `expect: { error: … }` step may take), or anything else, said plainly.
public enum SeatError: Error, CustomStringConvertible, Equatable {
    case att(ATTErrorCode, String)
    case failed(String)
    case timeout(String)
    /// BLELab's own host in the seat: the GATT client's typed failure.
    case gatt(GATTError)
    /// BLELab's own host in the seat: the host's typed failure (a refused or timed-out connect).
    case host(HostError)

    public var description: String {
        switch self {
        case let .att(code, text): return "ATT error \(code) (\(text))"
        case let .failed(text): return text
        case let .timeout(text): return text
        case let .gatt(error): return "\(error)"
        case let .host(error): return "\(error)"
        }
    }

    public var attErrorCode: ATTErrorCode? {
        switch self {
        case let .att(code, _): return code
        case let .gatt(error): return error.attErrorCode
        default: return nil
        }
    }
}

/// One device a central seat's scan reported.
public struct SeatScanReport: Equatable {
    public var address: LEAddress
    public var rssi: Int8?
    public var names: [String]
    public var serviceUUIDs: [BluetoothUUID]
    /// The identity the central's host resolved a resolvable private address to (with a bond's
    /// IRK, Core Vol 6 Part B 1.3.2.3), when it did and can say.
    public var identity: LEAddress?

    public init(address: LEAddress, rssi: Int8?, names: [String], serviceUUIDs: [BluetoothUUID], identity: LEAddress? = nil) {
        self.address = address
        self.rssi = rssi
        self.names = names
        self.serviceUUIDs = serviceUUIDs
        self.identity = identity
    }
}

/// A service as a central seat resolved it.
public struct SeatService: Equatable {
    public var uuid: BluetoothUUID
    public var characteristics: [SeatCharacteristic]

    public init(uuid: BluetoothUUID, characteristics: [SeatCharacteristic]) {
        self.uuid = uuid
        self.characteristics = characteristics
    }
}

public struct SeatCharacteristic: Equatable {
    public var uuid: BluetoothUUID
    public var properties: CharacteristicProperties
    /// The value handle on the link, when the stack tells it.
    public var valueHandle: UInt16?

    public init(uuid: BluetoothUUID, properties: CharacteristicProperties, valueHandle: UInt16?) {
        self.uuid = uuid
        self.properties = properties
        self.valueHandle = valueHandle
    }
}

/// How a central seat is asked to write: the scenario's `type`, and whether through
/// AcquireWrite's socket.
public struct SeatWrite: Equatable {
    public var value: [UInt8]
    public var type: WriteType
    public var acquire: Bool

    public init(value: [UInt8], type: WriteType, acquire: Bool) {
        self.value = value
        self.type = type
        self.acquire = acquire
    }
}

/// A write a provided peripheral seat's application was handed.
public struct SeatReceivedWrite {
    public var characteristic: CharacteristicRef
    public var value: [UInt8]
    /// What the stack said the write was ("request", "command"), when it says.
    public var method: WriteMethod?

    public init(characteristic: CharacteristicRef, value: [UInt8], method: WriteMethod?) {
        self.characteristic = characteristic
        self.value = value
        self.method = method
    }
}

/// Serves one of a scenario's peripherals with another stack.
public protocol PeripheralSeatProvider: AnyObject {
    var description: String { get }
    /// The peripheral it serves in `scenario` (nil: the scenario has none).
    func served(in scenario: Scenario) -> PeripheralSpec?
    /// Why it cannot serve `spec` (the scenario is skipped), or nil.
    func unsupported(_ spec: PeripheralSpec, in scenario: Scenario) -> String?
    /// The peripheral for one run, on the lab's loop.
    func makePeripheral(_ spec: PeripheralSpec, lab: Lab) throws -> ProvidedPeripheralSeat
}

/// One peripheral another stack serves, for one scenario run: a `PeripheralSeat` it plays, made by a
/// `PeripheralSeatProvider`.
public protocol ProvidedPeripheralSeat: PeripheralSeat {
    var spec: PeripheralSpec { get }
    /// Registers its GATT database and starts advertising (when the spec advertises).
    func start(completion: @escaping (Result<Void, SeatError>) -> Void)
    /// Unregisters everything; completes on the loop (bounded), also after failures.
    func stop(completion: @escaping () -> Void)
    /// The address centrals see it at (known once started).
    var address: LEAddress? { get }
    /// The centrals connected to it, as its stack has told it so far (a `peripheral:` step whose
    /// actions act on the link waits for one).
    var connectedCentrals: [LEAddress] { get }
    /// Runs actions now (a scenario's `peripheral:` step).
    func perform(_ actions: [PeripheralAction], site: String)
    /// What it did and saw, as the simulated peripheral reports it.
    var onActivity: ((PeripheralActivity) -> Void)? { get set }
    /// Each write its application was handed.
    var onWrite: ((SeatReceivedWrite) -> Void)? { get set }
}

extension ProvidedPeripheralSeat {
    public var simulated: SimulatedPeripheral? { nil }
    public func announceAgain() {}
    public var hasLink: Bool { !connectedCentrals.isEmpty }
    public func valueHandle(_ ref: CharacteristicRef) -> UInt16? { nil }
    public func startServing(completion: @escaping (Result<Void, SeatError>) -> Void) { start(completion: completion) }
    public func stopServing(completion: @escaping () -> Void) { stop(completion: completion) }

    /// Its stack does not say what each action did: the step's note lists them.
    public func perform(_ actions: [PeripheralAction], site: String, report: @escaping (ActionReport) -> Void) {
        perform(actions, site: site)
        report(ActionReport(done: [actions.map(\.description).joined(separator: ", ")]))
    }
}

extension ScenarioRoles {
    /// Steps only BLELab's own central can take: another stack chooses its own scan duty cycle
    /// and does not read RSSI on a link for the scenario.
    static func radioStepsOnlyBLELabsCentralTakes(_ scenario: Scenario) -> String? {
        for step in scenario.steps {
            if case let .scan(scan) = step.action, scan.timing != nil {
                return "step \(step.index) (\(step.text)) sets the scan's interval and window, which only BLELab's own central does"
            }
            if step.connectScan != nil {
                return "step \(step.index) (\(step.text)) sets the initiator's scan interval and window, which only BLELab's own central does"
            }
            if case let .expect(.rssi(e)) = step.action, e.source == .link {
                return "step \(step.index) (\(step.text)) reads RSSI on the link (HCI Read RSSI), which only BLELab's own central does"
            }
        }
        return nil
    }
}

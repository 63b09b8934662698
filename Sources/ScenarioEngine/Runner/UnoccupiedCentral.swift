import BLELab
import BLERuntime
import BLEWire
import ScenarioFormat

/// `blelab run --central none`: the central's seat is left to a program outside the lab (a
/// team's own BlueZ-based gateway running beside it). The lab plays the peripherals; a scenario
/// may wait, make the peripherals act, and check what reached them (`peripheral-received`), but
/// has no central steps of its own.
public final class UnoccupiedCentral: CentralSeat {
    public init() {}

    public var description: String { "nobody in the lab (a program outside it takes the central's seat)" }
    public var failure: String? { nil }
    public var onValue: ((LEAddress, CharacteristicRef, [UInt8]) -> Void)?
    public var onDisconnected: ((LEAddress) -> Void)?
    /// Nobody in the lab can tell which links the program outside it holds.
    public var knowsItsLinks: Bool { false }

    public func unsupported(_ scenario: Scenario) -> String? {
        for step in scenario.steps {
            switch step.action {
            case .wait, .peripheralActions, .expect(.peripheralReceived):
                continue
            default:
                return "step \(step.index) (\(step.text)) is the central's to do, and --central none leaves that seat to a program "
                    + "outside the lab: keep to wait, peripheral and expect: { peripheral-received: … } steps"
            }
        }
        return nil
    }

    public func begin(lab: Lab, completion: @escaping (Result<Void, SeatError>) -> Void) { completion(.success(())) }
    public func end(completion: @escaping () -> Void) { completion() }

    private func refuse<T>(_ completion: (Result<T, SeatError>) -> Void) {
        completion(.failure(.failed("--central none has no central to do this")))
    }

    public func startScan(_ scan: ScanStep, completion: @escaping (Result<Void, SeatError>) -> Void) { refuse(completion) }
    public func stopScan(completion: @escaping (Result<[SeatScanReport], SeatError>) -> Void) { refuse(completion) }
    public func connect(to address: LEAddress, within: TimeSpan, completion: @escaping (Result<Void, SeatError>) -> Void) {
        refuse(completion)
    }
    public func disconnect(from address: LEAddress, completion: @escaping (Result<Void, SeatError>) -> Void) { refuse(completion) }
    public func isConnected(_ address: LEAddress) -> Bool { false }
    public func discover(on address: LEAddress, services: [BluetoothUUID]?,
                         completion: @escaping (Result<[SeatService], SeatError>) -> Void) { refuse(completion) }
    public func services(on address: LEAddress) -> [SeatService] { [] }
    public func mtu(on address: LEAddress) -> Int? { nil }
    public func read(_ ref: CharacteristicRef, on address: LEAddress, completion: @escaping (Result<[UInt8], SeatError>) -> Void) {
        refuse(completion)
    }
    public func write(_ write: SeatWrite, to ref: CharacteristicRef, on address: LEAddress,
                      completion: @escaping (Result<Void, SeatError>) -> Void) { refuse(completion) }
    public func setNotifications(_ enable: Bool, for ref: CharacteristicRef, on address: LEAddress, acquire: Bool,
                                 completion: @escaping (Result<Void, SeatError>) -> Void) { refuse(completion) }
}

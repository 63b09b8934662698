import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import ScenarioFormat

/// The central's seat: whoever plays it, BLELab's own host (`HostCentral`) or another stack
/// (`BlueZCentral`, `blelab run --central bluez`). The session runs every central step through
/// this one interface and keeps one account of what the central saw. Every call runs on the
/// lab's loop and completes exactly once, there; the session bounds each wait with the step's
/// own limit.
public protocol CentralSeat: AnyObject {
    /// For headers and reports: "BlueZ 5.66 (bluetoothd) on hci0".
    var description: String { get }
    /// Why it cannot play `scenario` (the scenario is skipped), or nil.
    func unsupported(_ scenario: Scenario) -> String?
    /// Called once per scenario with its lab, before any peripheral starts.
    func begin(lab: Lab, completion: @escaping (Result<Void, SeatError>) -> Void)
    /// Called once per scenario at its end, also after failures: disconnect, forget devices.
    func end(completion: @escaping () -> Void)

    func startScan(_ scan: ScanStep, completion: @escaping (Result<Void, SeatError>) -> Void)
    /// Stops the scan and hands over what it reported.
    func stopScan(completion: @escaping (Result<[SeatScanReport], SeatError>) -> Void)
    func connect(to address: LEAddress, within: TimeSpan, completion: @escaping (Result<Void, SeatError>) -> Void)
    /// Ends the connection; completes once it has ended (or with why it will not).
    func disconnect(from address: LEAddress, completion: @escaping (Result<Void, SeatError>) -> Void)
    func isConnected(_ address: LEAddress) -> Bool
    func discover(on address: LEAddress, services: [BluetoothUUID]?,
                  completion: @escaping (Result<[SeatService], SeatError>) -> Void)
    /// What the central has resolved on `address` so far (characteristic look-ups and `services`
    /// expectations use it).
    func services(on address: LEAddress) -> [SeatService]
    /// ATT_MTU on the connection, when the stack tells it.
    func mtu(on address: LEAddress) -> Int?
    func read(_ ref: CharacteristicRef, on address: LEAddress, completion: @escaping (Result<[UInt8], SeatError>) -> Void)
    func write(_ write: SeatWrite, to ref: CharacteristicRef, on address: LEAddress,
               completion: @escaping (Result<Void, SeatError>) -> Void)
    func setNotifications(_ enable: Bool, for ref: CharacteristicRef, on address: LEAddress, acquire: Bool,
                          completion: @escaping (Result<Void, SeatError>) -> Void)

    /// What a step that succeeded did, in the stack's own terms ("Write Request accepted",
    /// "StartNotify"), for the step's note.
    func describe(_ done: SeatOperation) -> String

    /// Set once the role cannot go on (the daemon left the bus, its adapter was powered off):
    /// the step running fails with this text.
    var failure: String? { get }

    /// Each value the stack delivered to the application (a notification or indication), in order.
    var onValue: ((_ address: LEAddress, _ ref: CharacteristicRef, _ value: [UInt8]) -> Void)? { get set }
    /// The stack says the connection ended (not asked for by a `disconnect` step).
    var onDisconnected: ((_ address: LEAddress) -> Void)? { get set }

    // What only some seats offer; the defaults below are those of a stack the lab sees only
    // through its API.

    /// The lab device whose HCI carries the central's traffic (BLELab's own host), or nil.
    var device: LabDevice? { get }
    /// The GAP connection to `address`, when the seat's host is BLELab's (kept after it ends).
    func connection(to address: LEAddress) -> Connection?
    /// Connects with the initiator's scan timing (a `connect` step's `scan:`).
    func connect(to address: LEAddress, within: TimeSpan, scan: ScanTiming?, completion: @escaping (Result<Void, SeatError>) -> Void)
    /// Connects asking for these connection parameters (a `connect` step's `interval`, `latency`,
    /// `timeout`); a stack that chooses them itself fails the step.
    func connect(to address: LEAddress, within: TimeSpan, scan: ScanTiming?, parameters: ConnectionUpdateRequest?,
                 completion: @escaping (Result<Void, SeatError>) -> Void)
    /// How long past `within` a connect may take to complete (the cancel's round trip, a
    /// daemon's property change after its reply).
    var connectGrace: TimeSpan { get }
    /// Gives up a connect that never completed.
    func abandonConnect()
    /// The last write PDU the central sent for `handle`, in spec terms, when the lab sees its HCI
    /// (another stack's peripheral may not say which PDU carried a write).
    func lastWriteSent(to handle: UInt16) -> (method: WriteMethod, description: String)?
    /// Why a disconnect has not ended the link to `address` yet, when the seat can tell.
    func whyStillConnected(_ address: LEAddress) -> String?
    /// ATT_MTU exchange; nil when the stack negotiates it itself and has no call for it.
    func exchangeMTU(_ mtu: Int, on address: LEAddress, completion: @escaping (Result<Int?, SeatError>) -> Void)
    /// Notifications with a given client configuration (a subscribe step's `with:`).
    func setNotifications(_ enable: Bool, for ref: CharacteristicRef, on address: LEAddress, acquire: Bool,
                          configuration: GATTClientConfiguration?, completion: @escaping (Result<Void, SeatError>) -> Void)
    /// `parameter-requests: accept|reject` for peripheral `id`: how the central's host answers its
    /// requests for new connection parameters from now on (a stack that decides itself ignores it).
    func answerParameterRequests(from id: String, accept: Bool)
    /// `power-off: central`: powers the central's controller off, now or `after` this long (then
    /// it completes at once). Once off, the seat's `failure` (or, for BLELab's host, the
    /// session) ends the steps that need it.
    func powerOff(after: TimeSpan?, completion: @escaping (Result<Void, SeatError>) -> Void)
    /// Whether the lab's advertisers must enable advertising again when it scans (see
    /// `ScenarioSession.reannounceAdvertising`).
    var needsAdvertisingReannounced: Bool { get }
    /// Whether a step may wait on its connections: false when a program outside the lab holds
    /// them and nobody in it can tell.
    var knowsItsLinks: Bool { get }
    /// `gatt-cache: true`: takes `services` as what the central knows of `address`'s database
    /// without discovering it; nil when it did, else why the seat cannot (another stack keeps
    /// its own cache).
    func restoreGATTCache(_ services: [GATTRemoteService], on address: LEAddress) -> String?

    // Security (docs/scenarios.md section 19) by a stack the lab sees only through its API: the
    // outcome is judged on the peripheral's side of the link (its host is BLELab's).

    /// A `pair` step: pairs with `address` the stack's way, with `settings` as its user's IO
    /// capability and answers; completes when the stack says the pairing ended.
    func pair(with address: LEAddress, settings: SecuritySpec, completion: @escaping (Result<Void, SeatError>) -> Void)
    /// An `auto-pair` step: the settings the stack's pairings on Insufficient Authentication or
    /// Encryption use from now on (nil: off, where the stack can turn it off).
    func autoPair(_ settings: SecuritySpec?, completion: @escaping (Result<Void, SeatError>) -> Void)
}

/// A step the seat completed, for `CentralSeat.describe`.
public enum SeatOperation {
    case write(SeatWrite)
    case notifications(enable: Bool, acquire: Bool, configuration: GATTClientConfiguration?)
    /// An ATT_MTU exchange: asked for, and what the seat reports now.
    case mtu(asked: Int, now: Int?)
}

extension CentralSeat {
    public var device: LabDevice? { nil }
    public func connection(to address: LEAddress) -> Connection? { nil }
    public func connect(to address: LEAddress, within: TimeSpan, scan: ScanTiming?,
                        completion: @escaping (Result<Void, SeatError>) -> Void) {
        connect(to: address, within: within, completion: completion)
    }
    public func connect(to address: LEAddress, within: TimeSpan, scan: ScanTiming?, parameters: ConnectionUpdateRequest?,
                        completion: @escaping (Result<Void, SeatError>) -> Void) {
        guard let parameters else { return connect(to: address, within: within, scan: scan, completion: completion) }
        completion(.failure(.failed("\(description) chooses the connection parameters itself; a connect step cannot ask for \(parameters)")))
    }
    public var connectGrace: TimeSpan { .seconds(12) }
    public func abandonConnect() {}
    public func restoreGATTCache(_ services: [GATTRemoteService], on address: LEAddress) -> String? {
        "\(description) keeps its own GATT cache; gatt-cache: true needs BLELab's own central"
    }
    public func whyStillConnected(_ address: LEAddress) -> String? { nil }
    public func lastWriteSent(to handle: UInt16) -> (method: WriteMethod, description: String)? { nil }
    public func exchangeMTU(_ mtu: Int, on address: LEAddress, completion: @escaping (Result<Int?, SeatError>) -> Void) {
        completion(.success(nil))
    }
    public func setNotifications(_ enable: Bool, for ref: CharacteristicRef, on address: LEAddress, acquire: Bool,
                                 configuration: GATTClientConfiguration?, completion: @escaping (Result<Void, SeatError>) -> Void) {
        setNotifications(enable, for: ref, on: address, acquire: acquire, completion: completion)
    }
    public func answerParameterRequests(from id: String, accept: Bool) {}
    public func powerOff(after: TimeSpan?, completion: @escaping (Result<Void, SeatError>) -> Void) {
        completion(.failure(.failed("\(description) cannot power its controller off: power-off: central needs the embedded simulator or --central bluez")))
    }
    public var needsAdvertisingReannounced: Bool { true }
    public var knowsItsLinks: Bool { true }
    public func pair(with address: LEAddress, settings: SecuritySpec, completion: @escaping (Result<Void, SeatError>) -> Void) {
        completion(.failure(.failed("\(description) does not pair in the lab")))
    }
    public func autoPair(_ settings: SecuritySpec?, completion: @escaping (Result<Void, SeatError>) -> Void) {
        completion(.success(()))
    }

    /// The words of a stack driven over BlueZ's D-Bus API (its method names).
    public func describe(_ done: SeatOperation) -> String {
        switch done {
        case let .write(w): return "\(w.acquire ? "AcquireWrite" : "WriteValue") returned"
        case let .notifications(enable, acquire, _):
            return enable ? (acquire ? "AcquireNotify" : "StartNotify") : (acquire ? "AcquireNotify's socket closed" : "StopNotify")
        case let .mtu(asked, now):
            return "\(description) negotiates ATT_MTU itself (asked for \(asked)); ATT_MTU is \(now.map(String.init) ?? "not reported")"
        }
    }
}

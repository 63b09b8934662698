import BLELab
import BLERuntime
import BLEWire
import GAP
import HostLink
import ScenarioFormat

/// A scenario peripheral's seat: BLELab's simulated peripheral, or one another stack serves
/// (`ProvidedPeripheralSeat`, `--peripheral bluez`). The session starts, drives and stops every
/// peripheral through it; what only the simulator offers (faults, flaws, the link's HCI) it asks
/// of `simulated`.
public protocol PeripheralSeat: AnyObject {
    var spec: PeripheralSpec { get }
    /// The address centrals see it at (known once started).
    var address: LEAddress? { get }
    /// Whether its stack has a connection to a central (it may hear of one a little after the
    /// central does).
    var hasLink: Bool { get }
    /// Starts serving: advertising, when the spec advertises (and, for another stack, its GATT
    /// database registered).
    func startServing(completion: @escaping (Result<Void, SeatError>) -> Void)
    /// Stops serving; completes on the loop (bounded), also after failures.
    func stopServing(completion: @escaping () -> Void)
    /// Runs a `peripheral:` step's actions; `report` says what those before the first `delay` did.
    func perform(_ actions: [PeripheralAction], site: String, report: @escaping (ActionReport) -> Void)
    /// The value handle of `ref` in its own database; nil when only the central's discovery can tell.
    func valueHandle(_ ref: CharacteristicRef) -> UInt16?
    /// What it did and saw.
    var onActivity: ((PeripheralActivity) -> Void)? { get set }
    /// Enables its advertising again, when it advertises, now that the central's stack scans. A
    /// real advertiser sends an advertising event every interval, so a scan that starts late still
    /// hears the next one; Linux's emulated controllers (btvirt)
    /// instead report an advertiser once, when scanning or advertising is enabled, and Linux 6.1
    /// drops a report that arrives before its discovery has reached the finding state (fixed in
    /// later kernels: "Bluetooth: hci_event: Set DISCOVERY_FINDING on SCAN_ENABLED"). Enabling
    /// again stands for the next advertising event.
    func announceAgain()
    /// BLELab's simulated peripheral in the seat, for what only it offers; nil for another stack.
    var simulated: SimulatedPeripheral? { get }
}

extension SimulatedPeripheral: PeripheralSeat {
    public var address: LEAddress? { device.address }
    public var hasLink: Bool { host.connections.values.contains { $0.role == .peripheral } }
    public var simulated: SimulatedPeripheral? { self }
    public func announceAgain() {
        guard host.isAdvertising, let configuration = host.advertisingConfiguration else { return }
        host.startAdvertising(configuration)
    }
    public func valueHandle(_ ref: CharacteristicRef) -> UInt16? { handles(for: ref)?.valueHandle }
    public func startServing(completion: @escaping (Result<Void, SeatError>) -> Void) {
        start { completion($0.mapError { .host($0) }) }
    }
    /// Stops on its own at the lab's end (`RealControllers.quiet` stops real advertisers).
    public func stopServing(completion: @escaping () -> Void) { completion() }
}

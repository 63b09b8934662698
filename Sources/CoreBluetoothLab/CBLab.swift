import BLELab
import BLERuntime
import BLEWire
import Controller
import Foundation
import GAP
import HostLink
import SMP
import ScenarioFormat

/// The lab behind CoreBluetoothLab: a `Lab` (one virtual loop, one simulated air) in which app
/// code written for CoreBluetooth finds its controllers, and the test's handle on it.
///
/// A `CBCentralManager` or `CBPeripheralManager` created while a lab is current gets a new lab
/// device of its own (controller and host). A lab is current inside `attach(_:)` and while it
/// runs (`run(for:)`, `run(within:until:)`), on that thread, and in the tasks started there or by
/// `task(_:)` (a task-local value):
///
///     let lab = CBLab(seed: 7)
///     try lab.addPeripheral(hm10)
///     let app = lab.attach { SerialApp() }      // its CBCentralManager joins `lab`
///     lab.run(for: .seconds(2))                 // power-on, scanning, connecting…
///
/// Apple's initializers take no lab, hence this scoping; it is per thread and task, so tests
/// running in parallel on other threads never see each other's labs. Its API is safe from any
/// thread or task: a lock (`LabLock`) held while the loop runs and at every public entry point.
public final class CBLab {
    /// The lab itself: loop, air, devices, packet logs.
    public let lab: Lab
    /// How many ACL fragments may wait in a host for controller buffers before the link counts
    /// as full: `canSendWriteWithoutResponse` is false and `updateValue` returns false from there
    /// until it drains below (then `peripheralIsReady(toSendWriteWithoutResponse:)` and
    /// `peripheralManagerIsReady(toUpdateSubscribers:)` follow). A write without response made
    /// while the link is full is dropped with an "API MISUSE" warning, as iOS drops them.
    public var transmitQueueLimit = 8
    /// How many octets an L2CAP channel's output stream takes before `write(_:maxLength:)`
    /// returns 0 (written, not yet sent as K-frames for want of the peer's credits).
    public var l2capSendBufferSize = 8192
    /// Our end of every L2CAP channel the managers open or accept: MTU, MPS and the credits
    /// granted (the receive window, in K-frames).
    public var l2capChannelParameters = L2CAPChannelParameters(mtu: 2048, mps: 247, initialCredits: 16)
    /// How the managers' device pairs, as an iPhone does: Secure Connections, bonding, IO
    /// KeyboardDisplay; `passkey` is what its user types when a peripheral shows one, and
    /// `confirmsNumericComparison` the user's answer. A central manager pairs (or encrypts with
    /// its bond) when a peripheral answers Insufficient Authentication or Encryption, then retries.
    public var pairing: SecuritySettings = {
        var settings = SecuritySettings()
        settings.io = .keyboardDisplay
        return settings
    }()
    /// What CoreBluetooth would print to the console: API misuse and silently dropped operations,
    /// in order, each with the virtual time.
    public private(set) var warnings: [String] { get { locked { _warnings } } set { locked { _warnings = newValue } } }
    private var _warnings: [String] = []
    /// Called with each warning as it is added to `warnings`, at the virtual instant of the call
    /// that caused it: the lab's console. `CBLab.printToStandardError` prints them as
    /// CoreBluetooth's log lines would appear (`[CoreBluetooth] API MISUSE: …`).
    public var onWarning: ((String) -> Void)? { get { locked { _onWarning } } set { locked { _onWarning = newValue } } }
    private var _onWarning: ((String) -> Void)?
    /// The simulated peripherals placed with `addPeripheral`, in order.
    public private(set) var peripherals: [SimulatedPeripheral] { get { locked { _peripherals } } set { locked { _peripherals = newValue } } }
    private var _peripherals: [SimulatedPeripheral] = []

    private var managersMade = 0
    /// Central managers made with a restore identifier, by identifier (CBCentralManager+Restoration.swift).
    var restorableCentrals: [String: RestorableCentral] = [:]
    /// Held while the loop runs and by every public entry point (LabLock.swift).
    let lock: LabLock
    /// Runs Swift concurrency jobs as tasks of the lab's loop (CBLab+Concurrency.swift).
    public let executor: LabExecutor

    /// A lab whose randomness all comes from `seed`, on the air `model` (by default
    /// `CBLab.phoneAirModel`: RSSI readings fluctuate as a phone's do; pass `AirModel()` for
    /// exact, noise-free readings).
    public init(seed: UInt64 = 1, model: AirModel = CBLab.phoneAirModel) {
        let (loop, lock) = (VirtualEventLoop(), LabLock())
        (self.loop, self.lock) = (loop, lock)
        executor = LabExecutor(loop: loop, lock: lock)
        air = SimAir(loop: loop, seed: seed, model: model)
        lab = Lab(seed: seed, loop: loop, air: air)
    }

    /// The lab's virtual loop and simulated air (a CoreBluetooth lab is always simulated).
    let loop: VirtualEventLoop
    let air: SimAir

    /// The virtual time.
    public var now: Instant { lock.locked { lab.loop.now } }

    // MARK: Being current

    /// Runs `body` with this lab current: CoreBluetooth managers created in it (directly or by
    /// app objects it creates, also in a `Task` it starts) attach to this lab.
    public func attach<T>(_ body: () throws -> T) rethrows -> T {
        let held = lock.enter(); defer { held.leave() }
        CBLab.stack.labs.append(self)
        defer { CBLab.stack.labs.removeLast() }
        return try CBLab.$taskLab.withValue(self, operation: body)
    }

    /// The lab managers attach to on this thread, if any.
    public static var current: CBLab? { stack.labs.last ?? taskLab }

    private final class Stack {
        var labs: [CBLab] = []
    }

    private static let stackKey = "CoreBluetoothLab.CBLab.stack"

    private static var stack: Stack {
        let storage = Thread.current.threadDictionary
        if let stack = storage[stackKey] as? Stack { return stack }
        let stack = Stack()
        storage[stackKey] = stack
        return stack
    }

    // MARK: Time

    /// Lets `span` of virtual time pass (the lab is current meanwhile).
    public func run(for span: TimeSpan) {
        attach { lab.run(for: span) }
    }

    /// Runs until `condition` holds, at most `span` of virtual time; returns whether it held.
    @discardableResult
    public func run(within span: TimeSpan = .seconds(60), until condition: () -> Bool) -> Bool {
        attach { lab.run(within: span, until: condition) }
    }

    // MARK: Simulated peripherals

    /// Places a simulated peripheral built from `spec`. It powers on and starts advertising as
    /// soon as the lab runs.
    @discardableResult
    public func addPeripheral(_ spec: PeripheralSpec) throws -> SimulatedPeripheral {
        let held = lock.enter(); defer { held.leave() }
        let peripheral = try lab.addPeripheral(spec)
        peripherals.append(peripheral)
        powerOnAndStart(peripheral)
        return peripheral
    }

    /// Places every peripheral a scenario file declares (its `peripherals:` block, with their
    /// advertising, GATT databases and triggers, and their `mtu:` and `link:` as a scenario run
    /// applies them: the ATT_MTU the peripheral answers an Exchange MTU with, and the air's faults
    /// on its links). The file's central steps are not run: here the app under test is the
    /// central. The lab's own seed drives the peripherals' generators.
    /// Throws `ScenarioErrors` (every problem in the file, with `file:line:column`) when the
    /// file does not validate.
    @discardableResult
    public func addPeripherals(fromScenario path: String) throws -> [SimulatedPeripheral] {
        let held = lock.enter(); defer { held.leave() }
        let scenario = try Scenario.load(path: path)
        return try scenario.peripherals.map { spec in
            let peripheral = try addPeripheral(spec)
            guard let faults = scenario.faults[spec.id] else { return peripheral }
            if let link = faults.link, let air = lab.air, let controller = peripheral.device.controller {
                air.setLinkFaults(link, for: controller)
            }
            if let mtu = faults.mtu { peripheral.answeredMTU = mtu }
            return peripheral
        }
    }

    /// The simulated peripheral with this id.
    public func peripheral(_ id: String) -> SimulatedPeripheral? {
        let held = lock.enter(); defer { held.leave() }
        return peripherals.first { $0.spec.id == id }
    }

    func powerOnAndStart(_ peripheral: SimulatedPeripheral) {
        loop.execute { [weak self, weak peripheral] in
            peripheral?.host.powerOn { result in
                guard let peripheral else { return }
                switch result {
                case .success: peripheral.start()
                case let .failure(error): self?.warn("simulated peripheral \(peripheral.spec.id) did not power on: \(error)")
                }
            }
        }
    }

    // MARK: For the managers

    /// A new device for a manager, named after its kind and creation order.
    func addManagerDevice(kind: String) -> LabDevice? {
        managersMade += 1
        do {
            var configuration = HostConfiguration()
            configuration.security = pairing
            return try lab.addDevice("\(kind)-\(managersMade)", configuration: configuration)
        } catch {
            warn("no controller for a \(kind): \(error)")
            return nil
        }
    }

    func warn(_ message: String) {
        let line = "\(now) \(message)"
        warnings.append(line)
        onWarning?(line)
    }

    /// An `onWarning` that writes each warning to standard error, one line each, prefixed like
    /// CoreBluetooth's log lines.
    public static func printToStandardError(_ line: String) {
        FileHandle.standardError.write(Data("[CoreBluetooth] \(line)\n".utf8))
    }
}

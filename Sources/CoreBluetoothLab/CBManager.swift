import BLELab
import BLERuntime
import BLEWire
import Dispatch
import Foundation
import GAP
import HCI

/// An abstract base class for Core Bluetooth manager objects (central and peripheral).
///
/// In the lab each manager owns a lab device (its own controller and host). Its state follows
/// that controller: `.unknown` until the host's HCI power-on completes after init, then
/// `.poweredOn`; `.poweredOff` or `.resetting` when the lab powers the controller off or resets
/// it (`CBLab.powerOff(_:)`, `CBLab.reset(_:)`). Made with no lab current, a manager is
/// `.unsupported`, as on hardware without Bluetooth LE, and never calls its delegate.
public class CBManager: NSObject {
    /// The current state of the manager.
    public internal(set) var state: CBManagerState { get { locked { _state } } set { locked { _state = newValue } } }
    private var _state: CBManagerState = .unknown
    /// The lab never asks the user: always `.allowedAlways`.
    public var authorization: CBManagerAuthorization { .allowedAlways }
    public class var authorization: CBManagerAuthorization { .allowedAlways }

    let cbLab: CBLab?
    let device: LabDevice?
    let callbacks: DelegateQueue
    /// True while the lab takes the controller away: connections that end then are dropped
    /// without delegate calls, as CoreBluetooth does when Bluetooth turns off.
    var controllerIsGoingAway = false

    /// `restoring`: the device of an earlier manager this one is restored on (state
    /// restoration); the subclass reports its state then, without a new power-on.
    init(queue: DispatchQueue?, kind: String, restoring: LabDevice? = nil) {
        callbacks = DelegateQueue(queue)
        let lab = CBLab.current
        let held = lab?.lock.enter(); defer { held?.leave() }
        cbLab = lab
        device = restoring ?? lab?.addManagerDevice(kind: kind)
        super.init()
        callbacks.lock = lab?.lock
        guard let lab else {
            state = .unsupported
            return
        }
        if restoring != nil { return }
        // After init returns, like CoreBluetooth: the app has stored the manager by then.
        lab.loop.execute { [weak self] in self?.powerOnController() }
    }

    var loop: EventLoop? { cbLab?.loop }

    /// Configures the controller over HCI; `.poweredOn` when done.
    func powerOnController() {
        guard let device else { return }
        device.host.powerOn { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.controllerDidPowerOn()
                self.update(state: .poweredOn)
            case let .failure(error):
                self.cbLab?.warn("\(type(of: self)): controller did not power on: \(error)")
                self.update(state: .poweredOff)
            }
        }
    }

    func update(state newState: CBManagerState) {
        guard newState != state else { return }
        state = newState
        stateDidChange()
    }

    /// The lab took the controller away (power off or reset): forget everything tied to it,
    /// without delegate calls, then report `newState`.
    func controllerWentAway(_ newState: CBManagerState) {
        guard let device else { return }
        controllerIsGoingAway = true
        controllerWillGoAway(to: newState)
        device.host.controllerDidReset(reason: .hardwareFailure)
        controllerIsGoingAway = false
        update(state: newState)
    }

    // Subclass hooks.
    func stateDidChange() {}
    func controllerDidPowerOn() {}
    /// `newState` below `.poweredOff` (`.resetting`) also invalidates what the manager handed
    /// out, as CoreBluetooth documents; `.poweredOff` only ends activity.
    func controllerWillGoAway(to newState: CBManagerState) {}

    /// "API MISUSE" as CoreBluetooth logs it: the call is ignored.
    func misuse(_ message: String) {
        cbLab?.warn("API MISUSE: \(message)")
    }
}

/// An abstract base class for a remote device: `CBPeripheral` for a central, `CBCentral` for a
/// peripheral manager.
public class CBPeer: NSObject {
    /// The UUID associated with the peer. In the lab it is derived from the peer's address, so it
    /// is the same on every run with the same seed.
    public let identifier: UUID
    let address: LEAddress

    init(address: LEAddress) {
        self.address = address
        identifier = PeerIdentifier.uuid(for: address)
        super.init()
    }
}

/// A remote device connected to a local peripheral manager and using its services.
public class CBCentral: CBPeer {
    weak var connection: Connection?

    init(connection: Connection) {
        self.connection = connection
        super.init(address: connection.peer)
    }

    /// The maximum amount of data, in bytes, that the central can receive in a single
    /// notification or indication: ATT_MTU − 3.
    public var maximumUpdateValueLength: Int { (connection?.bearer.mtu ?? 23) - 3 }

    public override var description: String {
        "<CBCentral: identifier = \(identifier.uuidString), MTU = \(maximumUpdateValueLength + 3)>"
    }
}

/// Identifiers of peers: "424C454C-00TT-4000-8000-AAAAAAAAAAAA" with the address type TT and the
/// 48-bit address A, so that `retrievePeripherals(withIdentifiers:)` can find a device the
/// central has never scanned, as iOS finds one it knows.
enum PeerIdentifier {
    static func uuid(for address: LEAddress) -> UUID {
        let a = address.address.rawValue
        let bytes: [UInt8] = [0x42, 0x4C, 0x45, 0x4C, 0x00, address.type.rawValue, 0x40, 0x00, 0x80, 0x00]
            + (0..<6).map { UInt8(truncatingIfNeeded: a >> (40 - 8 * UInt64($0))) }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    static func address(for identifier: UUID) -> LEAddress? {
        let u = identifier.uuid
        guard u.0 == 0x42, u.1 == 0x4C, u.2 == 0x45, u.3 == 0x4C, u.4 == 0, u.6 == 0x40, u.7 == 0, u.8 == 0x80, u.9 == 0 else {
            return nil
        }
        let raw = [u.10, u.11, u.12, u.13, u.14, u.15].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return LEAddress(BDAddr(rawValue: raw), type: AddressType(rawValue: u.5))
    }
}

import ATT
import BLERuntime
import BLEWire
import GATT
import HCI

/// One step of the scripted central, with where it was written. Equal steps do the same thing at
/// the same place of the script: where they were written (`location`, `text`) is not compared.
public struct CentralStep: Equatable {
    /// 1-based position in `central:`.
    public var index: Int
    public var location: SourceLocation
    /// The step as written in the file (compacted to one line), for reports.
    public var text: String
    public var action: CentralAction
    /// `acquire: true` on a subscribe or write step: through BlueZ's AcquireNotify/AcquireWrite
    /// socket when BlueZ is the central (BLELab's own central ignores it: the same PDUs cross).
    public var acquire: Bool
    /// `type:` on a subscribe step: what it writes to the CCCD (notifications, indications or
    /// both); nil: notifications, or indications when only those are offered.
    public var subscription: GATTClientConfiguration?
    /// `scan-interval` and `scan-window` on a connect step: the initiator's duty cycle (LE Create
    /// Connection, Vol 4 Part E 7.8.12). Nil: 60 ms and 60 ms.
    public var connectScan: ScanTiming?
    /// `gatt-cache: true` on a connect step: the central knows the peripheral's database from an
    /// earlier connection (its attribute cache, Core Vol 3 Part G 2.5.2) and uses its handles
    /// without discovering it.
    public var gattCache: Bool
    /// `interval`, `latency`, `timeout` on a connect step: the connection parameters the central
    /// asks for in LE Create Connection (Vol 4 Part E 7.8.12); nil: 30–50 ms, 0, 5 s.
    public var connectParameters: ConnectionUpdateRequest?

    public init(index: Int, location: SourceLocation, text: String, action: CentralAction, acquire: Bool = false,
                subscription: GATTClientConfiguration? = nil, connectScan: ScanTiming? = nil, gattCache: Bool = false,
                connectParameters: ConnectionUpdateRequest? = nil) {
        self.index = index
        self.location = location
        self.text = text
        self.action = action
        self.acquire = acquire
        self.subscription = subscription
        self.connectScan = connectScan
        self.gattCache = gattCache
        self.connectParameters = connectParameters
    }

    /// A step built rather than read (by `blelab import`): no place in a file, and no text until
    /// it is written out.
    public init(index: Int, action: CentralAction, acquire: Bool = false, subscription: GATTClientConfiguration? = nil,
                connectScan: ScanTiming? = nil, gattCache: Bool = false, connectParameters: ConnectionUpdateRequest? = nil) {
        self.init(index: index, location: SourceLocation(file: "", line: 0, column: 0), text: "", action: action, acquire: acquire,
                  subscription: subscription, connectScan: connectScan, gattCache: gattCache, connectParameters: connectParameters)
    }

    public static func == (a: CentralStep, b: CentralStep) -> Bool {
        a.index == b.index && a.action == b.action && a.acquire == b.acquire && a.subscription == b.subscription
            && a.connectScan == b.connectScan && a.gattCache == b.gattCache
            && a.connectParameters == b.connectParameters
    }

    public var isExpectation: Bool {
        if case .expect = action { return true }
        return false
    }
}

/// What a central step does. Every step that talks to a peripheral names it: validation resolves
/// the peripheral a step means (written `peripheral: ID`, or the only one connected there).
public enum CentralAction: Hashable {
    case scan(ScanStep)
    /// Connect to a peripheral found by a scan, waiting at most `within`.
    case connect(peripheral: String, within: TimeSpan)
    /// Primary services (all, or those listed), their characteristics and descriptors.
    case discover(peripheral: String, services: [BluetoothUUID]?)
    /// ATT Exchange MTU offering `mtu`.
    case exchangeMTU(peripheral: String, mtu: Int)
    case read(peripheral: String, characteristic: CharacteristicRef)
    case write(WriteStep)
    /// Read a descriptor of a characteristic (Core Vol 3 Part G 4.12.1 and 4.12.2).
    case readDescriptor(peripheral: String, descriptor: DescriptorRef)
    /// Write a descriptor with a Write Request (Part G 4.12.3; long values 4.12.4).
    case writeDescriptor(peripheral: String, descriptor: DescriptorRef, value: [UInt8])
    case subscribe(peripheral: String, characteristic: CharacteristicRef)
    case unsubscribe(peripheral: String, characteristic: CharacteristicRef)
    /// Let time pass.
    case wait(TimeSpan)
    /// End the connection, waiting at most `within` for it to end; nil: as long as the link's
    /// termination can take (`Connection.terminationBound`).
    case disconnect(peripheral: String, within: TimeSpan?)
    /// Make peripherals act now, in the order written.
    case peripheralActions([PeripheralActions])
    case expect(Expectation)
    /// A fault on the air or a change of the link (Faults.swift).
    case fault(FaultStep)
    /// Pairing, encryption, auto-pair (Security.swift).
    case security(SecurityStep)

    /// Whether the step is an ATT operation whose error an `expect: { error: … }` may take.
    public var isOperation: Bool {
        switch self {
        case .discover, .exchangeMTU, .read, .write, .subscribe, .unsubscribe, .readDescriptor, .writeDescriptor: return true
        default: return false
        }
    }

    /// The peripheral the step talks to, if any.
    public var peripheral: String? {
        switch self {
        case let .connect(p, _), let .discover(p, _), let .exchangeMTU(p, _), let .read(p, _), let .subscribe(p, _),
             let .unsubscribe(p, _), let .disconnect(p, _):
            return p
        case let .write(w): return w.peripheral
        case let .readDescriptor(p, _), let .writeDescriptor(p, _, _): return p
        case let .expect(e): return e.peripheral
        case let .fault(f): return f.peripheral
        case let .security(s): return s.peripheral
        case .scan, .wait, .peripheralActions: return nil
        }
    }
}

/// One descriptor of a characteristic, as a step names it (`{ characteristic: 2A19, descriptor: 2901 }`).
public struct DescriptorRef: Hashable, CustomStringConvertible {
    public var characteristic: CharacteristicRef
    public var uuid: BluetoothUUID

    public init(_ uuid: BluetoothUUID, of characteristic: CharacteristicRef) {
        self.uuid = uuid
        self.characteristic = characteristic
    }

    /// "descriptor 2901 of 180F/2A19".
    public var description: String { "descriptor \(uuid) of \(characteristic)" }
}

public struct ScanStep: Hashable {
    /// CoreBluetooth-style filter: any of these in the advertised service lists; empty: all.
    public var services: [BluetoothUUID]
    /// Keep only devices whose advertised local name (complete or shortened) is one of these; empty: all.
    public var names: [String]
    public var duration: TimeSpan
    /// Report every advertising event instead of each device once.
    public var duplicates: Bool
    /// The scan's interval and window (LE Set Scan Parameters, Vol 4 Part E 7.8.10); nil: 10 ms and 10 ms.
    public var timing: ScanTiming?
    /// Keep only devices heard at least this strong (dBm); nil: all.
    public var minRSSI: Int8?

    public init(services: [BluetoothUUID] = [], names: [String] = [], duration: TimeSpan = .seconds(1), duplicates: Bool = false,
                timing: ScanTiming? = nil, minRSSI: Int8? = nil) {
        self.services = services
        self.names = names
        self.duration = duration
        self.duplicates = duplicates
        self.timing = timing
        self.minRSSI = minRSSI
    }
}

/// A scanner's or an initiator's duty cycle: it listens for `window` at the start of every
/// `interval` (2.5 ms to 10.24 s in steps of 0.625 ms, window ≤ interval).
public struct ScanTiming: Hashable {
    public var interval: TimeSpan
    public var window: TimeSpan

    public init(interval: TimeSpan, window: TimeSpan) {
        self.interval = interval
        self.window = window
    }

    /// What `scan` uses untold: always listening, a new channel every 10 ms.
    public static let scanDefault = ScanTiming(interval: .milliseconds(10), window: .milliseconds(10))
    /// What `connect` uses untold: always listening, a new channel every 60 ms.
    public static let connectDefault = ScanTiming(interval: .milliseconds(60), window: .milliseconds(60))
}

/// How a `write` step chooses between a Write Request and a Write Command.
public enum WriteType: String, Hashable, CaseIterable {
    case request
    case command
    /// Request when the characteristic has `write`, else command (the HM-10 app's policy).
    case preferRequest = "prefer-request"
    /// Command when the characteristic has `write-without-response`, else request.
    case preferCommand = "prefer-command"
    /// Whatever the central's stack does when not told: BlueZ's WriteValue without a "type"
    /// (`--central bluez`); BLELab's own central does what BlueZ 5.66 does, a request when the
    /// characteristic has `write`, else a command.
    case `default`

    /// The ATT method for a characteristic with `properties`.
    public func method(for properties: CharacteristicProperties) -> WriteMethod {
        switch self {
        case .request: return .request
        case .command: return .command
        case .preferRequest, .default: return properties.contains(.write) ? .request : .command
        case .preferCommand: return properties.contains(.writeWithoutResponse) ? .command : .request
        }
    }
}

/// How a write crossed the link: ATT Write Request (or a long write's Prepare/Execute Write
/// Requests), or ATT Write Command.
public enum WriteMethod: String, Hashable, CaseIterable {
    case request
    case command
}

public struct WriteStep: Hashable {
    public var peripheral: String
    public var characteristic: CharacteristicRef
    public var value: [UInt8]
    public var type: WriteType

    public init(peripheral: String, characteristic: CharacteristicRef, value: [UInt8], type: WriteType = .preferRequest) {
        self.peripheral = peripheral
        self.characteristic = characteristic
        self.value = value
        self.type = type
    }
}

/// `peripheral: { ID: [actions] }`: one peripheral's actions.
public struct PeripheralActions: Hashable {
    public var peripheral: String
    public var actions: [PeripheralAction]

    public init(peripheral: String, actions: [PeripheralAction]) {
        self.peripheral = peripheral
        self.actions = actions
    }
}

import ATT
import BLELab
import BLERuntime
import BLEWire
import DBus
import GATT
import HCI
import ScenarioEngine
import ScenarioFormat

/// `blelab run --peripheral bluez`: one of a scenario's peripherals served by bluetoothd over
/// D-Bus (`BlueZPeripheral`), the others and the central on BLELab's stack as usual.
public final class BlueZPeripheralProvider: PeripheralSeatProvider {
    public let adapter: DBusObjectPath
    public let bus: DBusConnection.Bus
    /// The scenario peripheral it serves; nil: the first declared.
    public let select: String?

    public init(adapter: DBusObjectPath = "/org/bluez/hci0", bus: DBusConnection.Bus = .system, select: String? = nil) {
        self.adapter = adapter
        self.bus = bus
        self.select = select
    }

    public var description: String {
        let name = adapter.rawValue.split(separator: "/").last.map(String.init) ?? adapter.rawValue
        return "BlueZ (bluetoothd) on \(name)"
    }

    public func served(in scenario: Scenario) -> PeripheralSpec? {
        guard let select else { return scenario.peripherals.first }
        return scenario.peripheral(select)
    }

    public func unsupported(_ spec: PeripheralSpec, in scenario: Scenario) -> String? {
        BlueZPeripheralSupport.unsupported(spec, in: scenario).map { "\(spec.id) served by bluetoothd: \($0)" }
    }

    public func makePeripheral(_ spec: PeripheralSpec, lab: Lab) throws -> ProvidedPeripheralSeat {
        guard let loop = lab.loop as? SystemEventLoop else {
            throw SeatError.failed("BlueZ roles run in real time against the kernel's controllers: run the scenario with "
                + "--transport hci-user (this lab runs on the embedded simulator's virtual clock)")
        }
        let connection: DBusConnection
        do {
            connection = try DBusConnection(bus: bus, loop: loop)
        } catch let error as DBusError {
            throw SeatError.failed("cannot reach bluetoothd: \(error) (bluetoothd talks on the \(busDescription); "
                + "dbus-daemon must run there, and bluetoothd after it)")
        }
        return BlueZPeripheral(spec: spec, connection: connection, seed: lab.seed, adapter: adapter, busDescription: busDescription)
    }

    var busDescription: String {
        switch bus {
        case .system: return "system bus"
        case .session: return "session bus"
        case .address(let a): return "bus at \(a)"
        }
    }
}

/// What bluetoothd 5.66 cannot do for a GATT application through its D-Bus API, said per
/// scenario feature (the scenario is then skipped rather than failed for the wrong reason).
public enum BlueZPeripheralSupport {
    /// bluetoothd's timeout for an application's answer to ReadValue/WriteValue (libdbus's
    /// default method call timeout, g_dbus_proxy_method_call with -1); after it bluetoothd
    /// answers the central with Unlikely Error itself.
    public static let replyTimeout = TimeSpan.seconds(25)

    /// The first reason `spec` cannot be served by bluetoothd in `scenario`, or nil.
    public static func unsupported(_ spec: PeripheralSpec, in scenario: Scenario) -> String? {
        if let why = BlueZSecurity.peripheralUnsupported(spec, in: scenario) { return why }
        if let flaw = spec.flaws.first {
            return "bluetoothd serves GATT through its D-Bus API, which has no way to misanswer a request or send a malformed PDU "
                + "(flaws: \(flaw))"
        }
        if let faults = scenario.faults[spec.id] {
            if faults.link != nil {
                return "link: faults act on the embedded simulator's air; bluetoothd runs on a kernel controller"
            }
            if let mtu = faults.mtu {
                return "mtu: \(mtu) needs the server's Exchange MTU Response to carry it; bluetoothd takes its ATT MTU from main.conf "
                    + "([GATT] ExchangeMTU), not from a GATT application"
            }
        }
        if let c = spec.characteristics.first(where: { !$0.characteristic.extendedProperties.isEmpty })?.characteristic {
            return "\(c.uuid) sets extended properties \(c.extendedProperties); bluetoothd builds the 0x2900 descriptor from "
                + "GattCharacteristic1 flags this mapping does not pass"
        }
        if let advertising = spec.advertising, let flags = advertising.flags, flags & 0x01 != 0 {
            return "advertising flags 0x\(hex2(flags)) ask for LE Limited Discoverable; bluetoothd builds the Flags AD itself and "
                + "LEAdvertisement1 can only ask for General Discoverable"
        }
        for (trigger, actions) in triggers(of: spec, in: scenario) {
            for action in actions {
                if let reason = check(action, trigger: trigger, spec: spec) { return "\(trigger.name): \(action): \(reason)" }
            }
            if let reason = checkDelays(actions, trigger: trigger) { return "\(trigger.name): \(reason)" }
        }
        for step in scenario.steps {
            if case let .write(write) = step.action, write.peripheral == spec.id, let reason = check(write, spec: spec) {
                return "\(step.location.fileAndLine): '\(step.text)': \(reason)"
            }
            if case let .fault(fault) = step.action, fault.peripheral == spec.id, fault.needsSimulator {
                return "\(step.location.fileAndLine): '\(step.text)' needs the embedded simulator's air, and bluetoothd's "
                    + "controller is a kernel one"
            }
        }
        return nil
    }

    /// Why bluetoothd cannot perform `action` anywhere, or nil.
    public static func reason(for action: PeripheralAction) -> String? {
        switch action {
        case .forgetBonds:
            return "bluetoothd forgets a central's keys only with its device object (Adapter1.RemoveDevice), which also "
                + "disconnects it; a peripheral that forgets its bonds while the central stays connected has no D-Bus call"
        case .powerOff:
            return "Adapter1.Powered=false makes the kernel end each link first (HCI Disconnect, reason 0x15), so the central "
                + "would not see the silent loss of power that power-off simulates"
        case .requestConnectionUpdate:
            return "bluetoothd has no D-Bus method for a peripheral to ask for new connection parameters"
        case .notifyHandle, .indicateHandle:
            return "bluetoothd sends notifications only for its own characteristics' handles, to centrals that enabled them"
        case .sendPDU:
            return "bluetoothd serves GATT through its D-Bus API, which has no way to send a raw ATT PDU"
        case .addService, .removeService, .serviceChanged:
            return "bluetoothd's GATT database changes by whole applications (RegisterApplication) and sends Service Changed "
                + "itself; an application cannot add, remove or announce one service at run time"
        case let .disconnect(reason?) where reason != .remoteUserTerminatedConnection:
            return "bluetoothd ends a link only through MGMT Disconnect, which always sends Remote User Terminated Connection (0x13), not \(reason.name)"
        default:
            return nil
        }
    }

    enum Trigger {
        case onConnect, onDisconnect, step(SourceLocation)
        case onRead(CharacteristicSpec, service: BluetoothUUID)
        case onWrite(CharacteristicSpec, service: BluetoothUUID)
        case onSubscribe(CharacteristicSpec, service: BluetoothUUID)
        case onUnsubscribe(CharacteristicSpec, service: BluetoothUUID)

        var name: String {
            switch self {
            case .onConnect: return "on-connect"
            case .onDisconnect: return "on-disconnect"
            case let .step(location): return "\(location.fileAndLine) peripheral step"
            case let .onRead(c, s): return "\(s)/\(c.uuid) on-read"
            case let .onWrite(c, s): return "\(s)/\(c.uuid) on-write"
            case let .onSubscribe(c, s): return "\(s)/\(c.uuid) on-subscribe"
            case let .onUnsubscribe(c, s): return "\(s)/\(c.uuid) on-unsubscribe"
            }
        }
    }

    static func triggers(of spec: PeripheralSpec, in scenario: Scenario) -> [(Trigger, [PeripheralAction])] {
        var result: [(Trigger, [PeripheralAction])] = [(.onConnect, spec.onConnect), (.onDisconnect, spec.onDisconnect)]
        for (service, c) in spec.characteristics {
            result.append((.onRead(c, service: service), c.onRead))
            result.append((.onWrite(c, service: service), c.onWrite))
            result.append((.onSubscribe(c, service: service), c.onSubscribe))
            result.append((.onUnsubscribe(c, service: service), c.onUnsubscribe))
        }
        for step in scenario.steps {
            guard case let .peripheralActions(list) = step.action else { continue }
            for entry in list where entry.peripheral == spec.id { result.append((.step(step.location), entry.actions)) }
        }
        return result
    }

    static func check(_ action: PeripheralAction, trigger: Trigger, spec: PeripheralSpec) -> String? {
        if let reason = reason(for: action) { return reason }
        switch action {
        case let .respondError(code):
            switch trigger {
            case .onRead:
                return BlueZServerErrors.unsendable(code, in: .read)
            case let .onWrite(c, _):
                if c.properties.contains(.writeWithoutResponse), c.properties.contains(.write) {
                    // src/gatt-database.c chrc_write_cb: no reply is awaited for a characteristic
                    // with write-without-response; the Write Response is sent at once.
                    return "bluetoothd answers every write to a characteristic with write-without-response itself, before "
                        + "the application's reply (chrc_write_cb sends WriteValue without awaiting it)"
                }
                return BlueZServerErrors.unsendable(code, in: .write)
            default:
                return nil
            }
        case let .notify(ref, _), let .notifyEvery(ref, _, _, _), let .burst(ref, _, _):
            guard let c = characteristic(ref, in: spec) else { return nil }
            if c.properties.contains(.indicate), !c.properties.contains(.notify) {
                return "bluetoothd sends each central what its CCCD enabled; \(ref) offers only indications, so this "
                    + "would arrive as an indication"
            }
            return nil
        case let .indicate(ref, _):
            guard let c = characteristic(ref, in: spec) else { return nil }
            if c.properties.contains(.notify) {
                return "bluetoothd sends each central what its CCCD enabled; a central that enabled notifications of \(ref) "
                    + "would get this as a notification"
            }
            if !c.properties.contains(.indicate) {
                return "bluetoothd would send this as a notification: \(ref) has no indicate property"
            }
            return nil
        default:
            return nil
        }
    }

    /// A write the simulated server refuses for its opcode but bluetoothd takes: its GATT server
    /// checks only the write permission (src/shared/gatt-server.c, write_cb), which both `write`
    /// and `write-without-response` give (src/gatt-database.c, parse_chrc_flags), and it does
    /// not tell the application which opcode came (no "type" option, bluez/bluez#308), so the
    /// application cannot refuse it either.
    static func check(_ write: WriteStep, spec: PeripheralSpec) -> String? {
        guard let c = characteristic(write.characteristic, in: spec) else { return nil }
        let p = c.properties
        switch write.type.method(for: p) {
        case .command where p.contains(.write) && !p.contains(.writeWithoutResponse):
            return "a Write Command to \(write.characteristic), which has write but not write-without-response: bluetoothd "
                + "hands it to the application like a Write Request (its server checks the write permission, not the opcode, "
                + "and WriteValue does not say which came), where the simulator drops it"
        case .request where p.contains(.writeWithoutResponse) && !p.contains(.write):
            return "a Write Request to \(write.characteristic), which has write-without-response but not write: bluetoothd "
                + "answers it with a Write Response (its server checks the write permission, not the opcode), where the "
                + "simulator answers Write Not Permitted"
        default:
            return nil
        }
    }

    /// Leading delays that keep a read or write unanswered for longer than bluetoothd waits.
    static func checkDelays(_ actions: [PeripheralAction], trigger: Trigger) -> String? {
        switch trigger {
        case .onRead, .onWrite: break
        default: return nil
        }
        var total = TimeSpan.zero
        for action in actions {
            guard case let .delay(span) = action else { break }
            total = total + span
        }
        if case let .onWrite(c, _) = trigger, total > .zero, c.properties.contains(.write), c.properties.contains(.writeWithoutResponse) {
            return "the answer waits \(total), but bluetoothd answers a write to a characteristic with write-without-response "
                + "itself, at once (chrc_write_cb sends WriteValue without awaiting the reply)"
        }
        guard total >= replyTimeout else { return nil }
        return "the answer waits \(total), and bluetoothd waits \(replyTimeout) for the application's reply before answering "
            + "Unlikely Error itself"
    }

    static func characteristic(_ ref: CharacteristicRef, in spec: PeripheralSpec) -> CharacteristicSpec? {
        spec.characteristics.first { $0.characteristic.uuid == ref.characteristic && (ref.service == nil || $0.service == ref.service) }?
            .characteristic
    }

    static func hex2(_ v: UInt8) -> String { BlueZServerErrors.hex2(v) }
}

import ATT
import BLEWire
import GATT
import ScenarioFormat

/// How a scenario's security (docs/scenarios.md section 19) maps onto bluetoothd 5.66 and Linux's
/// Security Manager (net/bluetooth/smp.c), and what it cannot carry. bluetoothd pairs through an
/// `BlueZAgent`; everything else about a pairing the kernel decides:
/// - the IO capability is the agent's (RegisterAgent; mgmt Pair Device, Set IO Capability);
/// - MITM protection is asked for exactly when that capability is not NoInputNoOutput
///   (smp.c: the MITM bit follows the IO capability or a security level above medium);
/// - Secure Connections and bonding are the adapter's (main.conf `SecureConnections`,
///   Adapter1.Pairable), not a pairing's;
/// - the passkey it displays is drawn at random by the kernel (no agent call chooses it).
public enum BlueZSecurity {
    /// Why bluetoothd cannot pair with `settings`, or nil. `peerIO` is the other side's
    /// capability, when known (to tell who displays a passkey).
    public static func unsupported(_ settings: SecuritySpec, peerIO: IOCapabilityName?) -> String? {
        let io = settings.io ?? .noInputNoOutput
        if settings.oob == true {
            return "oob: true; bluetoothd has no D-Bus call that hands LE OOB data to the kernel"
        }
        if settings.secureConnections == false {
            return "secure-connections: false; bluetoothd offers Secure Connections by the adapter's setting (main.conf "
                + "SecureConnections), not per pairing"
        }
        if settings.bonding == false {
            return "bonding: false; bluetoothd always asks to bond while the adapter is pairable"
        }
        if settings.mitm == true, io == .noInputNoOutput {
            return "mitm: true with no-input-no-output; Linux asks for MITM protection only when the IO capability is not "
                + "NoInputNoOutput"
        }
        if settings.mitm == false, io != .noInputNoOutput {
            return "mitm: false with \(io.rawValue); Linux asks for MITM protection whenever the IO capability is not NoInputNoOutput"
        }
        if settings.passkey != nil, displaysPasskey(io, peer: peerIO) {
            return "passkey: \(BlueZAgent.digits(settings.passkey!)) to display; Linux draws the passkey it displays at random "
                + "(net/bluetooth/smp.c), an agent cannot choose it"
        }
        return nil
    }

    /// Whether a device with `io` displays the passkey in Passkey Entry against `peer` (Core Vol 3
    /// Part H 2.3.5.1, Table 2.8): a display-only side displays; a keyboard-display side displays
    /// when the other has only a keyboard.
    static func displaysPasskey(_ io: IOCapabilityName, peer: IOCapabilityName?) -> Bool {
        switch io {
        case .displayOnly, .displayYesNo: return true
        case .keyboardDisplay: return peer == .keyboardOnly
        case .keyboardOnly, .noInputNoOutput: return false
        }
    }

    /// The scenario's central steps that bluetoothd in the central's seat cannot take, or nil.
    public static func centralUnsupported(_ scenario: Scenario) -> String? {
        let battery = BluetoothUUID(string: "180F"), level = BluetoothUUID(string: "2A19")
        for p in scenario.peripherals {
            for (service, c) in p.characteristics where service == battery && c.uuid == level {
                guard !c.permissions.isOpen || !c.configurationPermissions.isOpen else { continue }
                return "\(p.id)'s Battery Level (180F/2A19) needs security; bluetoothd's battery plugin reads it and "
                    + "subscribes by itself on connecting, which makes it pair (with its default agent) before the scenario asks"
            }
        }
        let hid = BluetoothUUID(string: "1812")
        for p in scenario.peripherals where p.services.contains(where: { $0.uuid == hid }) {
            return "\(p.id) serves HID over GATT (1812); bluetoothd's input plugin claims that service, and no application "
                + "sees its characteristics"
        }
        if let why = linkAfterPeerFailure(scenario) { return why }
        for step in scenario.steps {
            switch step.action {
            case let .security(.pair(id, settings)):
                if let why = unsupported(settings, peerIO: scenario.peripheral(id)?.security.map { $0.settings.io ?? .noInputNoOutput }) {
                    return "step \(step.index) (\(step.text)): \(why)"
                }
            case let .security(.autoPair(on, settings)):
                guard on else {
                    return "step \(step.index) (\(step.text)): bluetoothd always raises the link's security and pairs when a peer "
                        + "answers Insufficient Authentication or Encryption (src/shared/att.c); it cannot be turned off"
                }
                if let why = unsupported(settings, peerIO: nil) { return "step \(step.index) (\(step.text)): \(why)" }
            case .expect(.security(.addressesSeen)):
                return "step \(step.index) (\(step.text)): which addresses a central heard and resolved is judged on BLELab's "
                    + "own central host; bluetoothd resolves private addresses itself and tells only its device objects"
            case .security(.encrypt):
                return "step \(step.index) (\(step.text)): bluetoothd has no call to encrypt a link with a bond; it encrypts by "
                    + "itself when it connects to a device it is bonded with"
            case .expect(.error(.insufficientAuthentication)), .expect(.error(.insufficientEncryption)):
                return "step \(step.index) (\(step.text)): bluetoothd raises the link's security and pairs by itself when a peer "
                    + "answers Insufficient Authentication or Encryption (src/shared/att.c), so an application sees that error "
                    + "only after bluetoothd's own pairing"
            case let .peripheralActions(list) where list.contains(where: { $0.actions.contains(.forgetBonds) }):
                return "step \(step.index) (\(step.text)): a peripheral forgets its bonds; bluetoothd would then need its own "
                    + "bond removed (RemoveDevice) to pair again"
            default:
                continue
            }
        }
        return nil
    }

    /// A step that needs the link after a pairing the peer failed. Linux as the central ends an
    /// LE link when the peer answers its pairing with Pairing Failed (HCI Disconnect,
    /// Authentication Failure 0x05, seen on the peripheral's HCI in the e2e run); its own
    /// refusals (`own`: passkey-entry-failed, numeric-comparison-failed, its agent said no) keep
    /// the link. As the peripheral it ended the link after the central's refusal too (`own`
    /// empty: every failure, a `pairing-failed: {}` included).
    static func linkAfterPeerFailure(_ scenario: Scenario, own: Set<String> = ["passkey-entry-failed", "numeric-comparison-failed"])
        -> String? {
        var failed: (id: String, step: CentralStep)?
        for step in scenario.steps {
            if case let .expect(.security(.pairingFailed(id, reason, _))) = step.action {
                if reason.map({ !own.contains($0.name) }) ?? own.isEmpty { failed = (id, step) }
                continue
            }
            guard let (id, at) = failed else { continue }
            let needsLink: Bool
            switch step.action {
            case .expect(.connected(id)): needsLink = true
            case .expect, .wait, .peripheralActions, .scan: needsLink = false
            default: needsLink = step.action.peripheral == id
            }
            if needsLink {
                return "step \(step.index) (\(step.text)) needs the link to \(id) after the pairing \(id) failed at step "
                    + "\(at.index) (\(at.text)); Linux ends the link after such a failed pairing (Disconnect, reason "
                    + "Authentication Failure 0x05)"
            }
        }
        return nil
    }

    /// Why bluetoothd cannot serve `spec`'s security in `scenario`, or nil.
    public static func peripheralUnsupported(_ spec: PeripheralSpec, in scenario: Scenario) -> String? {
        if spec.privacy != nil {
            return "privacy: is bluetoothd's own setting (main.conf Privacy), not a GATT application's"
        }
        let pairings = scenario.steps.compactMap { step -> SecuritySpec? in
            switch step.action {
            case let .security(.pair(id, settings)) where id == spec.id: return settings
            case let .security(.autoPair(true, settings)): return settings
            default: return nil
            }
        }
        guard let security = spec.security else {
            if !pairings.isEmpty {
                return "no security: (the peripheral refuses pairing); bluetoothd pairs whenever a central asks: with "
                    + "Adapter1.Pairable false it still paired Just Works with BLELab's bonding central"
            }
            return nil
        }
        if security.requestsSecurityOnConnect {
            return "request-security: on-connect; bluetoothd has no call for a peripheral to send a Security Request"
        }
        var settings = security.settings
        if settings.mitm == true, pairings.contains(where: { $0.mitm != true }) {
            return "security: mitm: true; Linux as the responder takes the MITM bit from the central's Pairing Request "
                + "(net/bluetooth/smp.c), so a central that does not ask for it pairs Just Works"
        }
        // Linux as the peripheral ended the link after every failed pairing it saw (the central's
        // refusal too: Authentication Failure, 0x05).
        if let why = linkAfterPeerFailure(scenario, own: []) { return why }
        // As the responder Linux asks for MITM only when the central does: `mitm` is not its own.
        settings.mitm = nil
        if let why = unsupported(settings, peerIO: pairings.first.map { $0.io ?? .noInputNoOutput }) { return "security: \(why)" }
        for (_, c) in spec.characteristics where !c.configurationPermissions.isOpen {
            if !c.properties.contains(.notify), !c.properties.contains(.indicate) { continue }
            if c.properties.contains(.notify), c.properties.contains(.indicate) {
                return "\(c.uuid) protects its CCCD and has both notify and indicate; bluetoothd's encrypt-notify and "
                    + "encrypt-indicate flags each also add their property, so one must go"
            }
        }
        // bluetoothd answers Insufficient Encryption (0x0F) for an attribute that needs
        // encryption on a link without it, where BLELab's server answers Insufficient
        // Authentication (0x05) until the central is bonded (src/shared/gatt-server.c,
        // check_permissions; Core Vol 3 Part C 10.3.1).
        var last: (permissions: AttributePermissions.Level, step: CentralStep)?
        for step in scenario.steps {
            switch step.action {
            case let .read(p, ref) where p == spec.id:
                last = level(ref, in: spec).map { ($0.value.read, step) }
            case let .write(w) where w.peripheral == spec.id:
                last = level(w.characteristic, in: spec).map { ($0.value.write, step) }
            case let .subscribe(p, ref) where p == spec.id, let .unsubscribe(p, ref) where p == spec.id:
                last = level(ref, in: spec).map { ($0.configuration.write, step) }
            case .expect(.error(.insufficientAuthentication)):
                if let last, last.permissions == .encrypted {
                    return "step \(step.index) (\(step.text)) expects Insufficient Authentication after step \(last.step.index) "
                        + "(\(last.step.text)); bluetoothd answers Insufficient Encryption (0x0F) for an attribute that needs "
                        + "encryption on an unencrypted link (src/shared/gatt-server.c)"
                }
            default:
                continue
            }
        }
        return nil
    }

    private static func level(_ ref: CharacteristicRef, in spec: PeripheralSpec)
        -> (value: AttributePermissions, configuration: AttributePermissions)? {
        guard let c = spec.characteristics.first(where: {
            $0.characteristic.uuid == ref.characteristic && (ref.service == nil || $0.service == ref.service)
        })?.characteristic else { return nil }
        return (c.permissions, c.configurationPermissions)
    }

    /// GattCharacteristic1 flags for `permissions:` (src/gatt-database.c parse_chrc_flags):
    /// encrypt-read/-write for `encrypted`, encrypt-authenticated-read/-write for
    /// `authenticated`, and encrypt(-authenticated)-notify/-indicate for the CCCD (bluetoothd
    /// makes the CCCD and takes its write permission from these). Each also sets its property,
    /// so one is given only where the property is.
    public static func permissionFlags(value: AttributePermissions, configuration: AttributePermissions,
                                       properties: CharacteristicProperties) -> [String] {
        var flags: [String] = []
        func level(_ l: AttributePermissions.Level, _ what: String) {
            switch l {
            case .open: break
            case .encrypted: flags.append("encrypt-\(what)")
            case .authenticated: flags.append("encrypt-authenticated-\(what)")
            }
        }
        if properties.contains(.read) { level(value.read, "read") }
        if properties.contains(.write) || properties.contains(.writeWithoutResponse) { level(value.write, "write") }
        if properties.contains(.notify) { level(configuration.write, "notify") } else if properties.contains(.indicate) {
            level(configuration.write, "indicate")
        }
        return flags
    }
}

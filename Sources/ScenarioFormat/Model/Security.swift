import BLERuntime
import GATT
import HCI

// Pairing, bonding and encryption in scenarios (docs/scenarios.md section 19): a peripheral's
// `security:`, a characteristic's `permissions:`, the central's `pair`, `encrypt` and `auto-pair`
// steps, the `forget-bonds` action and the security expectations. The format names what the
// Security Manager (Core Vol 3 Part H) takes; the lab maps the names onto SMP's types.

/// IO capabilities (Core Vol 3 Part H 2.3.2), as scenario files name them.
public enum IOCapabilityName: String, Hashable, CaseIterable {
    case noInputNoOutput = "no-input-no-output"
    case displayOnly = "display-only"
    case displayYesNo = "display-yes-no"
    case keyboardOnly = "keyboard-only"
    case keyboardDisplay = "keyboard-display"
}

/// The association models of pairing (Vol 3 Part H 2.3.5.1), as scenario files name them.
public enum PairingMethodName: String, Hashable, CaseIterable {
    case justWorks = "just-works"
    case passkeyEntry = "passkey-entry"
    case numericComparison = "numeric-comparison"
    case oob
}

/// A reason of SMP Pairing Failed (Vol 3 Part H 3.5.5, Table 3.7), or the SMP timeout (3.4),
/// as scenario files name them.
public struct PairingFailureName: RawRepresentable, Hashable, CustomStringConvertible {
    /// The reason code; 0 stands for the SMP timeout (no Pairing Failed is sent then).
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let timeout = PairingFailureName(rawValue: 0x00)

    /// Every name, by code.
    public static let names: [UInt8: String] = [
        0x00: "timeout", 0x01: "passkey-entry-failed", 0x02: "oob-not-available", 0x03: "authentication-requirements",
        0x04: "confirm-value-failed", 0x05: "pairing-not-supported", 0x06: "encryption-key-size", 0x07: "command-not-supported",
        0x08: "unspecified-reason", 0x09: "repeated-attempts", 0x0A: "invalid-parameters", 0x0B: "dhkey-check-failed",
        0x0C: "numeric-comparison-failed", 0x0D: "br-edr-pairing-in-progress", 0x0E: "cross-transport-key-derivation-not-allowed",
        0x0F: "key-rejected",
    ]

    public static var allNames: [String] { names.keys.sorted().compactMap { names[$0] } }

    public init?(name: String) {
        guard let code = Self.names.first(where: { $0.value == name })?.key else { return nil }
        self.init(rawValue: code)
    }

    public var name: String { Self.names[rawValue] ?? "0x" + String(rawValue, radix: 16) }
    public var description: String { name }
}

/// How a device pairs: a peripheral's `security:` or a `pair:` step's settings. Nil fields are
/// the Security Manager's defaults (no-input-no-output, Secure Connections, bonding, no MITM, a
/// random passkey when it displays one, "yes" to Numeric Comparison), and are left out when the
/// scenario is written back.
public struct SecuritySpec: Hashable {
    public var io: IOCapabilityName?
    public var secureConnections: Bool?
    public var bonding: Bool?
    /// Requires protection against a man in the middle (a method other than Just Works).
    public var mitm: Bool?
    /// The passkey it displays, or types (0–999999); nil: a random one shown, none typed.
    public var passkey: UInt32?
    /// The user's answer to Numeric Comparison.
    public var confirm: Bool?
    /// It has a way to exchange data out of band (an NFC tag, a QR code): a `pair` step with
    /// `oob: true` hands OOB data between the central and a peripheral whose `security:` has it.
    public var oob: Bool?

    public init(io: IOCapabilityName? = nil, secureConnections: Bool? = nil, bonding: Bool? = nil, mitm: Bool? = nil,
                passkey: UInt32? = nil, confirm: Bool? = nil, oob: Bool? = nil) {
        self.oob = oob
        self.io = io
        self.secureConnections = secureConnections
        self.bonding = bonding
        self.mitm = mitm
        self.passkey = passkey
        self.confirm = confirm
    }
}

/// A peripheral's `security:`: it pairs with these settings; without it, it refuses pairing
/// (Pairing Not Supported).
public struct PeripheralSecurity: Hashable {
    public var settings: SecuritySpec
    /// `request-security: on-connect`: it sends Security Request (Vol 3 Part H 3.6.7) as soon as a
    /// central connects.
    public var requestsSecurityOnConnect: Bool

    public init(settings: SecuritySpec = SecuritySpec(), requestsSecurityOnConnect: Bool = false) {
        self.settings = settings
        self.requestsSecurityOnConnect = requestsSecurityOnConnect
    }
}

/// A peripheral's `privacy:`: it advertises from a resolvable private address (Core Vol 6 Part B
/// 1.3.2.2) that changes every `rotate`, and gives its IRK and identity address to the centrals it
/// bonds with (Vol 3 Part H 3.6.4, 3.6.5), which then resolve its addresses to it.
public struct PeripheralPrivacy: Hashable {
    /// How often the address changes: T_GAP(private_addr_int) (Vol 3 Part C 10.8.2.2 recommends 15 minutes).
    public var rotate: TimeSpan

    /// The range a scenario may give: that of a controller's RPA_Timeout (LE Set Resolvable
    /// Private Address Timeout, Vol 4 Part E 7.8.45), 1 s to 1 hour.
    public static let rotateRange = TimeSpan.seconds(1)...TimeSpan.seconds(3600)

    public init(rotate: TimeSpan) {
        self.rotate = rotate
    }
}

/// The central's security steps.
public enum SecurityStep: Hashable {
    /// Pair with the peripheral (Pairing Request), with the central's defaults changed by `settings`.
    case pair(peripheral: String, settings: SecuritySpec)
    /// Encrypt the link with the bond the central has with the peripheral (LE Enable Encryption).
    case encrypt(peripheral: String)
    /// From now on, an ATT answer Insufficient Authentication or Insufficient Encryption makes the
    /// central pair (or encrypt with its bond) and retry the operation once, as phones do. The
    /// pairing uses the central's defaults changed by `settings`.
    case autoPair(Bool, settings: SecuritySpec)

    public var peripheral: String? {
        switch self {
        case let .pair(p, _), let .encrypt(p): return p
        case .autoPair: return nil
        }
    }
}

/// Expectations about pairing and encryption.
public enum SecurityExpectation: Hashable {
    /// The latest pairing with the peripheral succeeded (within `within`), with these properties.
    case paired(peripheral: String, method: PairingMethodName?, secureConnections: Bool?, bonded: Bool?, within: TimeSpan)
    /// The link to the peripheral is (or, for true, becomes within `within`) encrypted, or not.
    case encrypted(peripheral: String, Bool, within: TimeSpan)
    /// The latest pairing with the peripheral failed (within `within`), for `reason` if given.
    case pairingFailed(peripheral: String, reason: PairingFailureName?, within: TimeSpan)
    /// The latest encryption of the link failed, with this HCI status if given.
    case encryptionFailed(peripheral: String, reason: HCIStatus?, within: TimeSpan)
    /// The central's scans so far heard the peripheral at `count` distinct addresses, and its host
    /// resolves all of them (true) or none of them (false) to the peripheral's identity address,
    /// with the keys it holds now: one device to the app, or a new one at each address.
    case addressesSeen(peripheral: String, count: Int?, resolved: Bool?)

    /// How long a pairing may take untold: a Secure Connections pairing is some twenty SMP PDUs,
    /// a connection event or two each.
    public static let defaultWithin = TimeSpan.seconds(5)

    public var peripheral: String {
        switch self {
        case let .paired(p, _, _, _, _), let .encrypted(p, _, _), let .pairingFailed(p, _, _), let .encryptionFailed(p, _, _),
             let .addressesSeen(p, _, _): return p
        }
    }

    public var summary: String {
        switch self {
        case let .paired(p, method, sc, bonded, within):
            var parts: [String] = []
            if let method { parts.append("by \(method.rawValue)") }
            if let sc { parts.append(sc ? "with Secure Connections" : "with LE legacy pairing") }
            if let bonded { parts.append(bonded ? "bonded" : "not bonded") }
            return "paired with \(p)\(parts.isEmpty ? "" : " " + parts.joined(separator: ", ")) within \(within)"
        case let .encrypted(p, on, within):
            return on ? "the link to \(p) encrypted within \(within)" : "the link to \(p) unencrypted"
        case let .pairingFailed(p, reason, within):
            return "the pairing with \(p) to fail\(reason.map { " with \($0.name)" } ?? "") within \(within)"
        case let .encryptionFailed(p, reason, within):
            return "the encryption of the link to \(p) to fail\(reason.map { " with \($0.name)" } ?? "") within \(within)"
        case let .addressesSeen(p, count, resolved):
            var text = "the central's scans heard \(p)"
            if let count { text += " at \(count) address\(count == 1 ? "" : "es")" }
            if let resolved { text += resolved ? ", all resolved to its identity" : ", none resolved to its identity" }
            return text
        }
    }
}

/// The names of `permissions:` on a characteristic: what the link must have to read or write its
/// value, or to write its CCCD (`subscribe`). `read` and `write` alone stay open.
public enum PermissionName {
    public static let all = ["read", "write", "encrypted-read", "encrypted-write", "authenticated-read", "authenticated-write",
                             "encrypted-subscribe", "authenticated-subscribe"]

    /// The names for a characteristic's value and CCCD permissions, in `all`'s order.
    public static func names(value: AttributePermissions, configuration: AttributePermissions) -> [String] {
        var names: [String] = []
        if value.read == .encrypted { names.append("encrypted-read") }
        if value.write == .encrypted { names.append("encrypted-write") }
        if value.read == .authenticated { names.append("authenticated-read") }
        if value.write == .authenticated { names.append("authenticated-write") }
        if configuration.write == .encrypted { names.append("encrypted-subscribe") }
        if configuration.write == .authenticated { names.append("authenticated-subscribe") }
        return names
    }

    /// Applies one name; false when it is not one.
    public static func apply(_ name: String, value: inout AttributePermissions, configuration: inout AttributePermissions) -> Bool {
        switch name {
        case "read", "write": break
        case "encrypted-read": value.read = max(value.read, .encrypted)
        case "encrypted-write": value.write = max(value.write, .encrypted)
        case "authenticated-read": value.read = .authenticated
        case "authenticated-write": value.write = .authenticated
        case "encrypted-subscribe": configuration.write = max(configuration.write, .encrypted)
        case "authenticated-subscribe": configuration.write = .authenticated
        default: return false
        }
        return true
    }
}

extension Scenario {
    /// The first thing in the scenario that needs pairing or encryption, in words, or nil: a seat
    /// that cannot pair refuses the scenario with it.
    public var securityUse: String? {
        for p in peripherals {
            if p.security != nil { return "\(p.id) declares security: (pairing)" }
            if p.privacy != nil { return "\(p.id) declares privacy: (a resolvable private address, resolved with the IRK a bond gives)" }
            if let c = p.characteristics.first(where: { !$0.characteristic.permissions.isOpen || !$0.characteristic.configurationPermissions.isOpen }) {
                return "\(p.id)'s \(c.characteristic.uuid) has permissions: that need an encrypted link"
            }
        }
        for step in steps {
            switch step.action {
            case .security: return "step \(step.index) (\(step.text)) pairs or encrypts"
            case .expect(.security): return "step \(step.index) (\(step.text)) checks pairing or encryption"
            case let .peripheralActions(list) where list.contains(where: { $0.actions.contains(.forgetBonds) }):
                return "step \(step.index) (\(step.text)) makes a peripheral forget its bonds"
            default: continue
            }
        }
        return nil
    }
}

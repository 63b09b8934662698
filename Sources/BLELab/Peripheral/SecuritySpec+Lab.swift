import ScenarioFormat
import SMP

// What the lab makes of the scenario format's security names (ScenarioFormat/Model/Security.swift):
// the Security Manager's settings, and the format's names for what a pairing gave.

extension SecuritySpec {
    /// The Security Manager's settings: its defaults (no-input-no-output, Secure Connections,
    /// bonding) with what the spec sets.
    public var securitySettings: SecuritySettings { applied(to: SecuritySettings()) }

    /// `base` with what the spec sets.
    public func applied(to base: SecuritySettings) -> SecuritySettings {
        var s = base
        if let io { s.io = io.capability }
        if let secureConnections { s.secureConnections = secureConnections }
        if let bonding { s.bonding = bonding }
        if let mitm { s.mitm = mitm }
        if let passkey { s.passkey = passkey }
        if let confirm { s.confirmsNumericComparison = confirm }
        return s
    }
}

extension IOCapabilityName {
    public var capability: IOCapability {
        switch self {
        case .noInputNoOutput: return .noInputNoOutput
        case .displayOnly: return .displayOnly
        case .displayYesNo: return .displayYesNo
        case .keyboardOnly: return .keyboardOnly
        case .keyboardDisplay: return .keyboardDisplay
        }
    }
}

extension PairingMethodName {
    public init(_ method: PairingMethod) {
        switch method {
        case .justWorks: self = .justWorks
        case .passkeyEntry: self = .passkeyEntry
        case .numericComparison: self = .numericComparison
        case .oob: self = .oob
        }
    }
}

extension PairingFailure {
    /// The failure as scenario files name it (`pairing-failed: { reason: … }`): the Pairing
    /// Failed reason either side sent, or the SMP timeout; nil when the encryption that ends a
    /// pairing failed (an HCI status, in words in `description`).
    public var name: PairingFailureName? {
        switch self {
        case let .sent(reason), let .received(reason): return PairingFailureName(rawValue: reason.rawValue)
        case .timeout: return .timeout
        case .encryptionFailed: return nil
        }
    }

    /// "confirm-value-failed (sent Pairing Failed 0x04 (Confirm Value Failed))".
    public var report: String {
        name.map { "\($0.name) (\(description))" } ?? description
    }
}

/// An HCI status or error code (Core 5.4, Vol 1, Part F, 1.3). Also the Reason of a disconnection.
/// Open: codes this table does not name still round-trip.
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = HCIStatus(rawValue: 0x00)
    public static let unknownCommand = HCIStatus(rawValue: 0x01)
    public static let unknownConnectionIdentifier = HCIStatus(rawValue: 0x02)
    public static let hardwareFailure = HCIStatus(rawValue: 0x03)
    public static let authenticationFailure = HCIStatus(rawValue: 0x05)
    /// PIN or Key Missing: on LE, the peripheral's host has no LTK for the EDIV and Rand asked.
    public static let pinOrKeyMissing = HCIStatus(rawValue: 0x06)
    public static let memoryCapacityExceeded = HCIStatus(rawValue: 0x07)
    public static let connectionTimeout = HCIStatus(rawValue: 0x08)
    public static let connectionLimitExceeded = HCIStatus(rawValue: 0x09)
    public static let connectionAlreadyExists = HCIStatus(rawValue: 0x0B)
    public static let commandDisallowed = HCIStatus(rawValue: 0x0C)
    public static let connectionRejectedLimitedResources = HCIStatus(rawValue: 0x0D)
    public static let connectionAcceptTimeoutExceeded = HCIStatus(rawValue: 0x10)
    public static let unsupportedFeatureOrParameterValue = HCIStatus(rawValue: 0x11)
    public static let invalidCommandParameters = HCIStatus(rawValue: 0x12)
    public static let remoteUserTerminatedConnection = HCIStatus(rawValue: 0x13)
    public static let remoteDeviceTerminatedLowResources = HCIStatus(rawValue: 0x14)
    public static let remoteDeviceTerminatedPowerOff = HCIStatus(rawValue: 0x15)
    public static let connectionTerminatedByLocalHost = HCIStatus(rawValue: 0x16)
    public static let unsupportedRemoteFeature = HCIStatus(rawValue: 0x1A)
    public static let invalidLLParameters = HCIStatus(rawValue: 0x1E)
    public static let unspecifiedError = HCIStatus(rawValue: 0x1F)
    public static let unsupportedLLParameterValue = HCIStatus(rawValue: 0x20)
    public static let llResponseTimeout = HCIStatus(rawValue: 0x22)
    public static let llProcedureCollision = HCIStatus(rawValue: 0x23)
    public static let instantPassed = HCIStatus(rawValue: 0x28)
    public static let controllerBusy = HCIStatus(rawValue: 0x3A)
    public static let unacceptableConnectionParameters = HCIStatus(rawValue: 0x3B)
    public static let advertisingTimeout = HCIStatus(rawValue: 0x3C)
    public static let connectionTerminatedMICFailure = HCIStatus(rawValue: 0x3D)
    public static let connectionFailedToBeEstablished = HCIStatus(rawValue: 0x3E)
    public static let operationCancelledByHost = HCIStatus(rawValue: 0x44)

    /// Kebab-case names from the spec's titles, shortened where scenario files use the short form.
    /// The first name is the one printed; all are accepted by `init?(name:)`.
    static let names: [UInt8: [String]] = [
        0x00: ["success"],
        0x01: ["unknown-hci-command"],
        0x02: ["unknown-connection-identifier"],
        0x03: ["hardware-failure"],
        0x04: ["page-timeout"],
        0x05: ["authentication-failure"],
        0x06: ["pin-or-key-missing"],
        0x07: ["memory-capacity-exceeded"],
        0x08: ["connection-timeout", "supervision-timeout"],
        0x09: ["connection-limit-exceeded"],
        0x0A: ["synchronous-connection-limit-exceeded"],
        0x0B: ["connection-already-exists"],
        0x0C: ["command-disallowed"],
        0x0D: ["connection-rejected-limited-resources"],
        0x0E: ["connection-rejected-security-reasons"],
        0x0F: ["connection-rejected-unacceptable-bd-addr"],
        0x10: ["connection-accept-timeout-exceeded"],
        0x11: ["unsupported-feature-or-parameter-value"],
        0x12: ["invalid-hci-command-parameters"],
        0x13: ["remote-user-terminated", "remote-user-terminated-connection"],
        0x14: ["remote-low-resources", "remote-device-terminated-connection-low-resources"],
        0x15: ["remote-power-off", "remote-device-terminated-connection-power-off"],
        0x16: ["local-host-terminated", "connection-terminated-by-local-host"],
        0x17: ["repeated-attempts"],
        0x18: ["pairing-not-allowed"],
        0x19: ["unknown-lmp-pdu"],
        0x1A: ["unsupported-remote-feature"],
        0x1E: ["invalid-ll-parameters"],
        0x1F: ["unspecified-error"],
        0x20: ["unsupported-ll-parameter-value"],
        0x21: ["role-change-not-allowed"],
        0x22: ["ll-response-timeout"],
        0x23: ["ll-procedure-collision"],
        0x24: ["lmp-pdu-not-allowed"],
        0x25: ["encryption-mode-not-acceptable"],
        0x28: ["instant-passed"],
        0x29: ["pairing-with-unit-key-not-supported"],
        0x2A: ["different-transaction-collision"],
        0x2F: ["insufficient-security"],
        0x30: ["parameter-out-of-mandatory-range"],
        0x3A: ["controller-busy"],
        0x3B: ["unacceptable-connection-parameters"],
        0x3C: ["advertising-timeout"],
        0x3D: ["connection-terminated-mic-failure"],
        0x3E: ["connection-failed-to-be-established"],
        0x42: ["unknown-advertising-identifier"],
        0x43: ["limit-reached"],
        0x44: ["operation-cancelled-by-host"],
        0x45: ["packet-too-long"],
    ]

    /// The printed kebab-case name, or `0xNN`.
    public var name: String {
        Self.names[rawValue]?.first ?? "0x" + (rawValue < 16 ? "0" : "") + String(rawValue, radix: 16)
    }

    /// Accepts any of the names above (case-insensitive) or `0xNN`.
    public init?(name: String) {
        let lower = name.lowercased()
        if lower.hasPrefix("0x"), let v = UInt8(lower.dropFirst(2), radix: 16) {
            self.init(rawValue: v)
            return
        }
        guard let match = Self.names.first(where: { $0.value.contains(lower) }) else { return nil }
        self.init(rawValue: match.key)
    }

    public static var allNames: [String] { names.values.flatMap { $0 }.sorted() }

    public var isSuccess: Bool { rawValue == 0 }

    public var description: String {
        "\(name) (0x\(rawValue < 16 ? "0" : "")\(String(rawValue, radix: 16)))"
    }
}

import BLERuntime
import BLEWire
import HCI
import SMP

/// How a host sets up its controller and its defaults for connections.
public struct HostConfiguration {
    /// A random static address to use instead of the controller's public one (LE Set Random
    /// Address; Vol 6 Part B 1.3.2.1). Nil means the public BD_ADDR.
    public var randomAddress: BDAddr?
    /// Device Name served in the GAP service (0x2A00).
    public var deviceName: String
    /// Connection parameters a central asks for.
    public var connectionParameters: ConnectionParameters
    /// How long to wait for a connection before cancelling (nil: wait forever).
    public var connectTimeout: TimeSpan?
    /// ATT_MTU this host offers (Exchange MTU).
    public var attMTU: Int
    /// How this host pairs (Security Manager, Vol 3 Part H). Nil: it does not, and answers every
    /// Pairing Request "Pairing Not Supported", as before there was an SMP.
    public var security: SecuritySettings?
    /// Seeds this host's random numbers (pairing's nonces, keys and passkeys), so that a lab
    /// pairs the same way every run. Nil: derived from the controller's address.
    public var randomSeed: UInt64?
    /// Advertise from a resolvable private address that changes every `rotation`, and give the
    /// IRK to bonded peers (BLEHost+Privacy.swift). Nil: the public or static random address.
    public var privacy: PrivacySettings?

    public init(randomAddress: BDAddr? = nil, deviceName: String = "BLELab", connectionParameters: ConnectionParameters = .init(),
                connectTimeout: TimeSpan? = nil, attMTU: Int = 247) {
        self.randomAddress = randomAddress
        self.deviceName = deviceName
        self.connectionParameters = connectionParameters
        self.connectTimeout = connectTimeout
        self.attMTU = attMTU
    }
}

/// Connection parameters in HCI units: intervals 1.25 ms, supervision timeout 10 ms.
public struct ConnectionParameters: Hashable, Sendable {
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16

    /// 30–50 ms interval, no latency, 5 s supervision timeout (what phones commonly ask for).
    public init(intervalMin: UInt16 = 0x0018, intervalMax: UInt16 = 0x0028, latency: UInt16 = 0, supervisionTimeout: UInt16 = 500) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }

    /// From durations: interval in 1.25 ms steps, timeout in 10 ms steps (rounded down).
    public init(interval: TimeSpan, latency: UInt16 = 0, supervisionTimeout: TimeSpan) {
        let i = UInt16(clamping: interval.nanoseconds / 1_250_000)
        self.init(intervalMin: i, intervalMax: i, latency: latency,
                  supervisionTimeout: UInt16(clamping: supervisionTimeout.nanoseconds / 10_000_000))
    }

    public var isValid: Bool {
        connectionParametersAreValid(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency, timeout: supervisionTimeout)
    }
}

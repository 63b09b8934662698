import BLELab
import ScenarioEngine
import ScenarioFormat

/// The `--transport` values a build of `blelab` offers: the backend each makes, and how help and
/// messages list them. The library alone offers the sim (`.simOnly`); the executable passes
/// LabTiers' catalogue (main.swift), so the CLI itself knows no tier beyond the sim.
public struct TransportOffer {
    /// The backend for a `--transport` value; nil: no such transport. Throws when the transport
    /// exists but cannot be used here (the message says why and what to do).
    public var backend: (String) throws -> ScenarioBackend?
    /// For "not available" messages: "this build offers: sim".
    public var summary: String
    /// The lines `run --help` lists under --transport, one value per line.
    public var helpLines: String

    public init(backend: @escaping (String) throws -> ScenarioBackend?, summary: String = TransportOffer.simOnly.summary,
                helpLines: String = TransportOffer.simOnly.helpLines) {
        self.backend = backend
        self.summary = summary
        self.helpLines = helpLines
    }

    /// The tiers of the library alone: only the sim.
    public static var simOnly: TransportOffer {
        TransportOffer(backend: { $0 == TransportTier.sim.rawValue ? SimBackend() : nil }, summary: "this build offers: sim",
                       helpLines: "sim  the embedded simulator: virtual time, deterministic (the default)")
    }
}

/// The stacks a build of `blelab` offers for the central's seat (`--central S`) and a
/// peripheral's (`--peripheral S`), and the values `run --help` lists for each. `--central none`
/// (the seat left to a program outside the lab) is the CLI's own. The library alone offers none
/// (`.none`); the executable passes BlueZ (main.swift).
public struct SeatOffer {
    /// The seats for `--central`/`--peripheral` values (nil: not given). Throws when a value is
    /// not offered, saying what is.
    public var roles: (_ central: String?, _ peripheral: String?) throws -> ScenarioRoles
    /// `--central` values offered, each with its meaning, for `run --help`.
    public var centralValues: [(syntax: String, meaning: String)]
    /// `--peripheral` values offered, each with its meaning, for `run --help`.
    public var peripheralValues: [(syntax: String, meaning: String)]

    public init(roles: @escaping (_ central: String?, _ peripheral: String?) throws -> ScenarioRoles,
                centralValues: [(syntax: String, meaning: String)] = [], peripheralValues: [(syntax: String, meaning: String)] = []) {
        self.roles = roles
        self.centralValues = centralValues
        self.peripheralValues = peripheralValues
    }

    /// No stack but BLELab's own central and peripherals.
    public static var none: SeatOffer {
        SeatOffer(roles: { central, peripheral in
            if let central { throw UsageError("--central \(central): this build offers no other central") }
            if let peripheral { throw UsageError("--peripheral \(peripheral): this build offers no other peripheral") }
            return ScenarioRoles()
        })
    }
}

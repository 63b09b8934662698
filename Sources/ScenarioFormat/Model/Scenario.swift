import BLERuntime

/// Where something is in a scenario file: 1-based line and column.
public struct SourceLocation: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`, as compilers print it.
    public var description: String { "\(file):\(line):\(column)" }

    /// `file:line`, for failure reports.
    public var fileAndLine: String { "\(file):\(line)" }

    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
        (a.file, a.line, a.column) < (b.file, b.line, b.column)
    }
}

/// A tier a scenario can run on (docs/scenarios.md `requires:`, `blelab run --transport`): the
/// embedded simulator, a socket controller, or a Linux virtual controller.
public struct TransportTier: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let sim = TransportTier(rawValue: "sim")
    public static let socket = TransportTier(rawValue: "socket")
    public static let vhci = TransportTier(rawValue: "vhci")

    /// Every tier a scenario may name in `requires:`.
    public static let all: [TransportTier] = [.sim, .socket, .vhci]

    public var description: String { rawValue }
}

/// A scenario file, loaded and validated: simulated peripherals and a scripted central.
///
/// Two scenarios are equal when they describe the same run: where each was read from (`file`,
/// each step's `location` and `text`) is not compared, so a scenario written out by
/// `ScenarioWriter` and read back equals the one written.
public struct Scenario: Equatable {
    /// The `scenario:` line.
    public var name: String
    /// The file as it was given (used in reports and capture names).
    public var file: String
    public var tags: [String]
    /// Whole-scenario budget of (virtual) time; nil: none beyond each step's own limit.
    public var timeout: TimeSpan?
    /// The seed of every random choice; nil: `Scenario.defaultSeed`.
    public var seed: UInt64?
    /// Tiers this scenario can run on; nil: all.
    public var requires: [TransportTier]?
    /// `expect-failure: TEXT`: the scenario must fail, with TEXT in its failure's message, to pass
    /// (a case showing that a stack reports a fault); nil: it must pass.
    public var expectFailure: String?
    /// In declaration order.
    public var peripherals: [PeripheralSpec]
    public var steps: [CentralStep]
    /// Each peripheral's `link:` and `mtu:` (Faults.swift), by id; absent: none.
    public var faults: [String: PeripheralFaults] = [:]

    /// The seed used when neither the file nor the command line gives one.
    public static let defaultSeed: UInt64 = 1

    public init(name: String, file: String, tags: [String] = [], timeout: TimeSpan? = nil, seed: UInt64? = nil,
                requires: [TransportTier]? = nil, peripherals: [PeripheralSpec], steps: [CentralStep]) {
        self.name = name
        self.file = file
        self.tags = tags
        self.timeout = timeout
        self.seed = seed
        self.requires = requires
        self.peripherals = peripherals
        self.steps = steps
    }

    public func peripheral(_ id: String) -> PeripheralSpec? { peripherals.first { $0.id == id } }

    /// Whether the scenario may run on `tier`.
    public func runs(on tier: TransportTier) -> Bool { requires?.contains(tier) ?? true }

    public static func == (a: Scenario, b: Scenario) -> Bool {
        a.name == b.name && a.tags == b.tags && a.timeout == b.timeout && a.seed == b.seed && a.requires == b.requires
            && a.expectFailure == b.expectFailure && a.peripherals == b.peripherals && a.steps == b.steps && a.faults == b.faults
    }
}

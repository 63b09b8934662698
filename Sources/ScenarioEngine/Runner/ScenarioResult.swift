import BLELab
import BLERuntime
import ScenarioFormat
import Transport

/// What running one scenario gave: its outcome, the step-by-step record, and (when asked for) the
/// timeline and every device's packets.
public struct ScenarioResult {
    public enum Outcome {
        case passed
        case failed(ScenarioFailure)
        /// Not run on this tier (`requires:` does not list it).
        case skipped(reason: String)
    }

    public var name: String
    public var file: String
    public var tags: [String]
    public var seed: UInt64
    public var tier: TransportTier
    public var outcome: Outcome
    /// Virtual time when the scenario ended.
    public var virtualTime: TimeSpan
    public var steps: [StepRecord]
    /// Steps, peripheral activity and ATT PDUs in time order (when `RunOptions.recordsTimeline`
    /// without `RunOptions.timelineDirectory`; `events` gives them either way).
    public var timeline: [TimelineEvent]
    /// The timeline spooled to a file (`RunOptions.timelineDirectory`); removed with the last copy
    /// of the result.
    public var timelineSpool: TimelineSpool? = nil
    /// Why the spooled timeline could not be written or read back (reported like capture failures).
    public var timelineFailures: [String] = []
    /// Every device's HCI packets, peripherals in declaration order then the central (when
    /// `RunOptions.keepsCaptures`).
    public var captures: [DeviceCapture]
    /// With `expect-failure:`, the failure that made the scenario pass (shown in reports).
    public var failedAsExpected: ScenarioFailure? = nil
    /// The sniffer's view of the sim's air, a pcap of link type 256 (when `RunOptions.capturesAir`
    /// on the sim).
    public var airCapture: [UInt8]? = nil
    /// The streamed capture files (`RunOptions.captureFile`) that could not be written, each with why.
    public var captureFailures: [String] = []

    /// The timeline in time order, from the spool or from `timeline`.
    public var events: AnySequence<TimelineEvent> {
        if let timelineSpool { return AnySequence(timelineSpool.events) }
        return AnySequence(timeline)
    }

    public var passed: Bool {
        if case .passed = outcome { return true }
        return false
    }

    public var failure: ScenarioFailure? {
        if case let .failed(f) = outcome { return f }
        return nil
    }

    public var isSkipped: Bool {
        if case .skipped = outcome { return true }
        return false
    }
}

/// Which step, for reports.
public struct StepReference: Hashable {
    public var index: Int
    public var location: SourceLocation
    public var text: String

    public init(_ step: CentralStep) {
        index = step.index
        location = step.location
        text = step.text
    }
}

/// Why a scenario failed: the step, what was expected, what was seen, and the last packets the
/// central's HCI carried before it.
public struct ScenarioFailure: CustomStringConvertible {
    public enum Kind: String {
        /// An `expect` step did not hold.
        case expectation
        /// An operation got an ATT error no `expect: { error: … }` right after it expects.
        case unexpectedATTError = "unexpected-att-error"
        /// A step could not do what it says (not connected, not discovered, link lost…).
        case operation
        /// The scenario's `timeout` ran out while a step was waiting.
        case timeout
        /// The lab could not be built or powered on.
        case setup
        /// A device's connection to its controller closed, failed or carried bytes that are not
        /// HCI (external controllers: socket and vhci tiers).
        case transport
        /// A scenario with `expect-failure: TEXT` passed, or failed without TEXT in its failure.
        case expectedFailure = "expect-failure"
    }

    public var kind: Kind
    /// Nil for a setup failure.
    public var step: StepReference?
    public var expected: String
    public var seen: String
    /// Virtual time of the failure.
    public var time: Instant
    /// The last HCI packets (ATT PDUs decoded) of the central before the failure, oldest first.
    public var recentPackets: [String]

    /// One line: `step 7 (file:12): expect: {…}: expected …, seen …`.
    public var summary: String {
        let place = step.map { "step \($0.index) (\($0.location.fileAndLine)): \($0.text): " } ?? ""
        return "\(place)expected \(expected); seen \(seen)"
    }

    /// Several lines, indented by `indent`, for people.
    public func report(indent: String = "  ") -> String {
        var lines: [String] = []
        if let step {
            lines.append("\(indent)step \(step.index) (\(step.location.fileAndLine)): \(step.text)")
        } else {
            lines.append("\(indent)\(kind == .expectedFailure ? "the whole scenario" : "setup")")
        }
        lines.append("\(indent)expected: \(expected)")
        lines.append("\(indent)seen:     \(seen)")
        lines.append("\(indent)at:       \(time) (virtual)")
        if !recentPackets.isEmpty {
            lines.append("\(indent)last packets on the central's HCI:")
            lines += recentPackets.map { "\(indent)  \($0)" }
        }
        return lines.joined(separator: "\n")
    }

    public var description: String { summary }
}

public struct StepRecord {
    public enum Outcome: String {
        case passed, failed
        case notRun = "not-run"
    }

    public var step: StepReference
    public var start: Instant
    public var end: Instant
    public var outcome: Outcome
    /// What the step observed or did, in a few words (`discovered hm10 (-48 dBm)`, `read 72 65`).
    public var note: String?
}

/// One thing that happened, for the machine-readable timeline.
public struct TimelineEvent {
    public enum Kind: String {
        case stepStarted = "step-started"
        case stepEnded = "step-ended"
        /// An ATT PDU crossed a device's HCI.
        case att
        /// A simulated peripheral acted or saw something.
        case peripheral
        /// A lab device's host met a peer (or controller) that broke the protocol, of any layer
        /// (`layer`, `violation`, `answer` say which and what it did); or the central met a flawed
        /// peer: an ATT timeout, a notification for a handle it never discovered, a Service
        /// Changed indication.
        case protocolViolation = "protocol-violation"
        /// The central's own controller changed (`power-off: central`), or its security: each
        /// pairing's and encryption's outcome with a peripheral, auto-pair, OOB data.
        case central
    }

    public var time: Instant
    /// `central` or a peripheral id.
    public var device: String
    public var kind: Kind
    public var text: String
    /// For `att`: "sent" or "received" (by `device`'s host).
    public var direction: String?
    /// For `att`: the PDU's octets; for a protocol violation, the octets that broke the rules.
    public var bytes: [UInt8]?
    /// For steps: the step index.
    public var step: Int?
    /// For a protocol violation its host reported: the layer (`l2cap`, `signaling`, `smp`,
    /// `hci`, `att`, `gatt`, `gap`), the kind (`unknown-channel`, `pipelined-request`, …) and
    /// what the host answered (`none`, `command-reject 0x0000`, `disconnect 0x13`, …).
    public var layer: String?
    public var violation: String?
    public var answer: String?
}

/// One device's HCI packets, for a btsnoop capture.
public struct DeviceCapture {
    public var device: String
    public var packets: [LoggedPacket]
}

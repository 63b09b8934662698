import BLERuntime
import HCI
import HostLink
import Transport

/// One L2CAP PDU as the driver handed it up.
struct ReceivedPDU: Equatable, CustomStringConvertible {
    var handle: UInt16
    var bytes: [UInt8]
    var description: String { "handle 0x\(String(handle, radix: 16)): [\(bytes.spacedHex)]" }
}

/// The results a command's completion received (it must be called exactly once) and when.
final class CommandOutcome {
    private(set) var results: [Result<CommandResult, HostError>] = []
    private(set) var completedAt: Instant?

    var result: Result<CommandResult, HostError>? { results.first }

    /// What a completion received, comparable in assertions (`CommandResult` has no public init).
    enum Outcome: Equatable {
        case returned(HCIOpcode, [UInt8])
        case failed(HostError)
    }

    var outcomes: [Outcome] {
        results.map {
            switch $0 {
            case let .success(r): return .returned(r.opcode, r.returnParameters)
            case let .failure(e): return .failed(e)
            }
        }
    }
    var isComplete: Bool { !results.isEmpty }

    func record(_ result: Result<CommandResult, HostError>, at time: Instant) {
        results.append(result)
        if completedAt == nil { completedAt = time }
    }
}

/// An `HCIDriver` wired to a `ScriptedController` on a virtual loop, with everything the driver
/// reports collected for assertions.
final class DriverHarness {
    let loop = VirtualEventLoop()
    let controller: ScriptedController
    let driver: HCIDriver

    private(set) var pdus: [ReceivedPDU] = []
    private(set) var protocolErrors: [HostError] = []
    private(set) var events: [HCIEvent] = []
    private(set) var transportClosures: [TransportError] = []

    init() {
        controller = ScriptedController(loop: loop)
        driver = HCIDriver(loop: loop, transport: controller)
        driver.onL2CAPFrame = { [unowned self] handle, frame in self.pdus.append(ReceivedPDU(handle: handle, bytes: frame.encoded)) }
        driver.onProtocolError = { [unowned self] in self.protocolErrors.append($0) }
        driver.onEvent = { [unowned self] in self.events.append($0) }
        driver.onTransportClosed = { [unowned self] in self.transportClosures.append($0) }
    }

    /// Queues `command` on the driver; the outcome fills in when its completion runs.
    @discardableResult
    func send(_ command: HCICommand) -> CommandOutcome {
        let outcome = CommandOutcome()
        driver.send(command) { [loop] in outcome.record($0, at: loop.now) }
        return outcome
    }

    /// The protocol errors' texts, for readable assertions on what was reported.
    var protocolErrorTexts: [String] {
        protocolErrors.map { error -> String in
            if case let .violation(v) = error { return v.detail }
            if case let .malformed(text) = error { return text }
            return error.description
        }
    }

    /// The typed violations among the protocol errors, in order.
    var violations: [ProtocolViolation] {
        protocolErrors.compactMap { error in
            if case let .violation(v) = error { return v }
            return nil
        }
    }

    /// Each violation as `layer/kind` (what a harness compares).
    var violationKinds: [String] { violations.map { "\($0.layer)/\($0.kind)" } }
}

import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat
import SMP

/// What the central's pairings and encryptions gave, per peripheral (docs/scenarios.md section
/// 19): whoever started them — a `pair` or `encrypt` step, `auto-pair`, or the peripheral's
/// Security Request — BLELab's host reports each outcome once, and the security expectations
/// judge the latest.
final class SecurityAccount {
    /// `auto-pair`: on, with the pairing's settings.
    var autoPair: SecuritySpec?
    /// Why the running operation's auto-pair failed, for its step's failure.
    var autoPairFailure: String?
    /// The latest pairing's outcome with each peripheral.
    private(set) var pairings: [String: Result<PairingResult, PairingFailure>] = [:]
    /// The link each peripheral's latest pairing ran on (kept after it ends).
    private(set) var links: [String: Connection] = [:]
    /// How many pairing outcomes each peripheral's link has reported so far.
    private(set) var reports: [String: Int] = [:]
    /// The latest encryption's outcome on each peripheral's link: what it gave, or why it failed
    /// (an HCI status, or nil for a refusal before any command, in words).
    private(set) var encryptions: [String: Result<LinkSecurity, EncryptionOutcomeFailure>] = [:]

    /// A pairing or encryption that failed where no step was waiting for it (the peripheral's
    /// Security Request started it) and no `pairing-failed` or `encryption-failed` has judged
    /// yet: the next step that is not an expectation fails with it, as does the scenario's end.
    var unjudged: (peripheral: String, pairing: Bool, words: String, expectation: String)?

    struct EncryptionOutcomeFailure: Error {
        var status: HCIStatus?
        var words: String
        /// Why the peripheral's end of the link ended meanwhile, when it did (a MIC failure, 0x3D,
        /// is seen there: the central only times out).
        var peripheralStatus: HCIStatus? = nil

        /// Whether either end saw `reason`.
        func matches(_ reason: HCIStatus) -> Bool { status == reason || peripheralStatus == reason }
    }

    /// With a timeline: each pairing's and encryption's outcome in words, with the peripheral's id.
    var record: ((_ peripheral: String, _ text: String) -> Void)?

    /// Listens to BLELab's host in the central's seat; `id` names the peripheral at an address.
    func watch(_ host: BLEHost, id: @escaping (LEAddress) -> String?) {
        host.onPairing = { [weak self] connection, result in
            guard let self, let peripheral = id(connection.peer) else { return }
            self.pairings[peripheral] = result
            self.links[peripheral] = connection
            self.reports[peripheral, default: 0] += 1
            switch result {
            case let .success(r): self.record?(peripheral, "pairing with \(peripheral): \(Self.describe(r))")
            case let .failure(f): self.record?(peripheral, "pairing with \(peripheral) failed: \(f.report)")
            }
            if case let .failure(failure) = result {
                self.unjudged = (peripheral, true, "pairing failed: \(failure.report)", "pairing-failed: \(failure.name?.name ?? "{}")")
            }
        }
        host.onEncryptionChange = { [weak self] connection, status in
            guard let self, let peripheral = id(connection.peer) else { return }
            self.encryptions[peripheral] = status.isSuccess ? .success(connection.security)
                : .failure(EncryptionOutcomeFailure(status: status, words: "Encryption Change with status \(status)"))
            self.record?(peripheral, status.isSuccess ? "link to \(peripheral) encrypted: \(connection.security)"
                : "encryption with \(peripheral) failed: Encryption Change with status \(status)")
            if !status.isSuccess {
                self.unjudged = (peripheral, false, "encryption failed: Encryption Change with status \(status)", "encryption-failed: \(status.name)")
            }
        }
    }

    /// A Pairing Failed on the link of a peripheral whose host does not pair (no `security:`):
    /// it answers SMP itself, without a pairing to report. `sent`: the peripheral sent it.
    func linkPairingFailed(_ peripheral: String, reason: UInt8, sent: Bool) {
        let r = SMPPairingFailedReason(rawValue: reason)
        let failure: PairingFailure = sent ? .sent(r) : .received(r)
        pairings[peripheral] = .failure(failure)
        reports[peripheral, default: 0] += 1
        unjudged = (peripheral, true, "pairing failed: \(failure.report)", "pairing-failed: \(failure.name?.name ?? "{}")")
    }

    /// An encryption that failed: refused before it started (no bond, the link gone), or ended
    /// by the link's end; `peripheralStatus` is why the peripheral's end ended meanwhile.
    func encryptionRefused(_ id: String, _ failure: EncryptionFailure, peripheralStatus: HCIStatus? = nil) {
        guard case let .status(status) = failure else {
            encryptions[id] = .failure(EncryptionOutcomeFailure(status: nil, words: "\(failure)"))
            return
        }
        var words = "\(failure)"
        if let peripheralStatus, peripheralStatus != status { words += "; the peripheral's end of the link: \(peripheralStatus)" }
        encryptions[id] = .failure(EncryptionOutcomeFailure(status: status, words: words, peripheralStatus: peripheralStatus))
    }

    /// "paired by passkey-entry, Secure Connections, bonded, 16-octet key".
    static func describe(_ r: PairingResult) -> String {
        "paired by \(PairingMethodName(r.method).rawValue), \(r.secureConnections ? "Secure Connections" : "LE legacy pairing"), "
            + "\(r.bonded ? "bonded" : "not bonded"), \(r.keySize)-octet key\(r.authenticated ? ", authenticated" : "")"
    }

    /// The failure no step or expectation took up, as the failure of the step about to run (or
    /// of the scenario's end).
    func unjudgedFailure() -> StepFailure? {
        guard let pending = unjudged else { return nil }
        unjudged = nil
        return StepFailure(kind: .operation,
                           expected: "every pairing and encryption with \(pending.peripheral) to succeed, or an 'expect: { \(pending.expectation) }' once it has failed",
                           seen: "the \(pending.pairing ? "pairing" : "encryption") that \(pending.peripheral)'s Security Request started: \(pending.words)")
    }
}

import ATT
import BLELab
import BLEWire
import GAP
import GATT
import HCI
import ScenarioFormat
import SMP

/// The central's security steps (docs/scenarios.md section 19): `pair`, `encrypt`, `auto-pair`,
/// and the retry `auto-pair` makes of an operation the peripheral refused for want of security.
extension StepRunner {
    func security(_ s: SecurityStep, step: CentralStep, position: Int) throws {
        switch s {
        case let .autoPair(on, settings):
            session.security.autoPair = on ? settings : nil
            session.note = on ? "from now on, Insufficient Authentication or Encryption makes the central pair (or encrypt) and retry"
                : "auto-pair off"
            if !(session.central is HostCentral) {
                let result = try session.operate("the central's auto-pair settings") { done in
                    session.central.autoPair(on ? settings : nil, completion: done)
                }
                if case let .failure(error) = result {
                    throw StepFailure(kind: .operation, expected: "\(session.central.description) to take the auto-pair settings", seen: "\(error)")
                }
            }
        case let .pair(id, settings) where !(session.central is HostCentral):
            try seatPair(id, settings, position: position)
        case let .pair(id, settings):
            let connection = try pairingConnection(id)
            let handedOver = try handOverOutOfBandData(settings, to: id, connection)
            let result: Result<PairingResult, PairingFailure> = try session.operate("the pairing with \(id)") { done in
                connection.pair(settings.applied(to: Self.centralSettings(connection)), completion: done)
            }
            handedOver?()
            session.security.unjudged = nil   // this step judges it
            switch result {
            case let .success(r):
                session.note = SecurityAccount.describe(r)
            case let .failure(failure):
                guard expectsSecurityFailure(after: position, of: id, pairing: true) else {
                    throw StepFailure(kind: .operation,
                                      expected: "the pairing with \(id) to succeed, or an 'expect: { pairing-failed: \(failure.name?.name ?? "REASON") }' right after the step",
                                      seen: "pairing failed: \(failure.report)")
                }
                session.note = "pairing failed: \(failure.report)"
            }
        case let .encrypt(id):
            let connection = try pairingConnection(id)
            let mark = session.peripherals[id]?.activity.count ?? 0
            let result: Result<LinkSecurity, EncryptionFailure> = try session.operate("the encryption of the link to \(id)") { done in
                connection.encrypt(completion: done)
            }
            session.security.unjudged = nil   // this step judges it
            switch result {
            case let .success(security):
                session.note = "link \(security)"
            case let .failure(failure):
                let peripheralStatus = peripheralLinkEnd(of: id, since: mark)
                session.security.encryptionRefused(id, failure, peripheralStatus: peripheralStatus)
                guard expectsSecurityFailure(after: position, of: id, pairing: false) else {
                    var name = "REASON"
                    if case let .status(status) = failure { name = (peripheralStatus ?? status).name }
                    throw StepFailure(kind: .operation,
                                      expected: "the link to \(id) encrypted with the central's bond, or an 'expect: { encryption-failed: \(name) }' right after the step",
                                      seen: failure == .noBond ? "the central has no bond with \(id): pair first" : "\(failure)")
                }
                session.note = "\(failure)" + (peripheralStatus.map { "; the peripheral's end of the link: \($0)" } ?? "")
            }
        }
    }

    /// A `pair` step by another stack in the central's seat (`CentralSeat.pair`): the stack says
    /// whether it paired; how (the method, Secure Connections, bonding) and the failure's reason
    /// are what the peripheral's host (BLELab's) reports of the same pairing.
    private func seatPair(_ id: String, _ settings: SecuritySpec, position: Int) throws {
        guard let address = session.address(of: id), session.central.isConnected(address) else {
            throw StepFailure(kind: .operation, expected: "a connection to \(id)", seen: "not connected to \(id)")
        }
        let reported = session.security.reports[id, default: 0]
        let result = try session.operate("the pairing with \(id)") { done in
            session.central.pair(with: address, settings: settings, completion: done)
        }
        // The peripheral's report of the same pairing may trail the stack's answer by a PDU (and
        // a pairing refused before any SMP has none).
        _ = try session.waitFor("\(id)'s account of the pairing", within: .seconds(2)) {
            self.session.security.reports[id, default: 0] != reported
        }
        switch result {
        case .success:
            session.security.unjudged = nil
            if case let .success(r)? = session.security.pairings[id] {
                session.note = SecurityAccount.describe(r) + " (\(id)'s account)"
            } else {
                session.note = "\(session.central.description) paired"
            }
        case let .failure(error):
            session.security.unjudged = nil   // this step judges it
            guard expectsSecurityFailure(after: position, of: id, pairing: true) else {
                var seen = "pairing failed: \(error)"
                if case let .failure(f)? = session.security.pairings[id] { seen += " (\(id)'s host: \(f.report))" }
                throw StepFailure(kind: .operation,
                                  expected: "the pairing with \(id) to succeed, or an 'expect: { pairing-failed: REASON }' right after the step",
                                  seen: seen)
            }
            session.note = "pairing failed: \(error)"
        }
    }

    /// Why the simulated peripheral's own end of its link with the central ended, when it did
    /// after its `mark`-th activity (a MIC failure, 0x3D, is seen there only).
    func peripheralLinkEnd(of id: String, since mark: Int) -> HCIStatus? {
        guard let central = session.centralDevice?.host.address, let activity = session.peripherals[id]?.activity else { return nil }
        for entry in activity[min(mark, activity.count)...] {
            if case let .disconnected(peer, reason) = entry.kind, peer == central { return reason }
        }
        return nil
    }

    /// `oob: true`: the lab hands OOB data between the central's host and the peripheral's, as
    /// the phone's user taps the device's NFC tag before pairing (GAP's
    /// `exchangeOutOfBandData`). Returns what forgets it again once the pairing has ended: OOB
    /// data serves one pairing. Nil without `oob: true`.
    private func handOverOutOfBandData(_ settings: SecuritySpec, to id: String, _ connection: Connection) throws -> (() -> Void)? {
        guard settings.oob == true, let central = connection.host else { return nil }
        guard let peripheral = session.peripherals[id]?.host, session.peripherals[id]?.spec.security?.settings.oob == true else {
            throw StepFailure(kind: .operation, expected: "\(id) to exchange OOB data (its security: with oob: true, served by BLELab)",
                              seen: session.peripherals[id] == nil ? "\(id) is served by another stack" : "\(id)'s security: has no oob: true")
        }
        do { try BLEHost.exchangeOutOfBandData(central: central, peripheral: peripheral) } catch {
            throw StepFailure(kind: .operation, expected: "OOB data for the pairing with \(id)", seen: "\(error)")
        }
        session.record(TimelineEvent(time: session.now, device: PeripheralSchema.centralID, kind: .central,
                                     text: "OOB data handed between the central and \(id) (oob: true)"))
        return { [weak central, weak peripheral] in
            central?.outOfBandData = nil
            peripheral?.outOfBandData = nil
        }
    }

    /// The central's settings for a pairing: its host's (the Security Manager's defaults).
    static func centralSettings(_ connection: Connection) -> SecuritySettings {
        connection.host?.configuration.security ?? SecuritySettings()
    }

    /// The live GAP connection to `id`, which only BLELab's host in the seat has.
    private func pairingConnection(_ id: String) throws -> Connection {
        guard session.central is HostCentral || session.connections[id] != nil else {
            throw StepFailure(kind: .operation, expected: "a central that pairs", seen: "\(session.central.description) does not pair in the lab")
        }
        return try session.live(id)
    }

    /// Whether an `expect` right after `position` expects a pairing (or encryption) failure with `id`.
    func expectsSecurityFailure(after position: Int, of id: String, pairing: Bool) -> Bool {
        session.scenario.steps[(position + 1)...].prefix { $0.isExpectation }.contains { step in
            switch step.action {
            case let .expect(.security(.pairingFailed(p, _, _))): return pairing && p == id
            case let .expect(.security(.encryptionFailed(p, _, _))): return !pairing && p == id
            default: return false
            }
        }
    }

    /// Runs an ATT operation on `id`; with `auto-pair` on, an answer Insufficient Authentication
    /// or Insufficient Encryption makes the central encrypt with its bond (or pair, without one),
    /// then run it once more, as iOS and Android do. A pairing or encryption that fails leaves the
    /// first answer, which the step settles as any ATT error (or a `pairing-failed` right after it
    /// expects).
    func operateSecured<T>(_ id: String, _ what: String, _ start: (@escaping (Result<T, SeatError>) -> Void) -> Void) throws -> Result<T, SeatError> {
        session.security.autoPairFailure = nil
        let first = try session.operate(what, start)
        guard let settings = session.security.autoPair, case let .failure(error) = first, let code = error.attErrorCode,
              code == .insufficientAuthentication || code == .insufficientEncryption,
              let connection = session.connections[id], connection.isConnected, let host = connection.host else { return first }
        if host.bonds.bond(for: connection.peer) != nil, !connection.security.encrypted {
            let mark = session.peripherals[id]?.activity.count ?? 0
            let encrypted: Result<LinkSecurity, EncryptionFailure> = try session.operate("the encryption of the link to \(id) (auto-pair)") { done in
                connection.encrypt(completion: done)
            }
            session.security.unjudged = nil   // the operation's step judges it
            if case let .failure(failure) = encrypted {
                session.security.encryptionRefused(id, failure, peripheralStatus: peripheralLinkEnd(of: id, since: mark))
                session.security.autoPairFailure = "\(failure)"
                session.note = "\(code) — auto-pair: \(failure)"
                return first
            }
        } else {
            let handedOver = try handOverOutOfBandData(settings, to: id, connection)
            let paired: Result<PairingResult, PairingFailure> = try session.operate("the pairing with \(id) (auto-pair)") { done in
                connection.pair(settings.applied(to: Self.centralSettings(connection)), completion: done)
            }
            handedOver?()
            session.security.unjudged = nil   // the operation's step judges it
            if case let .failure(failure) = paired {
                session.security.autoPairFailure = "pairing failed: \(failure.report)"
                session.note = "\(code) — auto-pair: pairing failed: \(failure.report)"
                return first
            }
        }
        let again = try session.operate(what + " (retried after auto-pair)", start)
        session.record(TimelineEvent(time: session.now, device: PeripheralSchema.centralID, kind: .central,
                                     text: "auto-pair: \(what) got \(code); link \(connection.security); retried"))
        return again
    }
}

import GAP
import GATT
import ScenarioFormat
import SMP

/// The security expectations (docs/scenarios.md section 19), judged on what BLELab's host in the
/// central's seat reported of its pairings and encryptions (`SecurityAccount`).
extension ExpectationJudge {
    func checkSecurity(_ e: SecurityExpectation, fail: (String) -> StepFailure) throws {
        let id = e.peripheral
        if case let .addressesSeen(_, count, resolved) = e { return try checkAddressesSeen(id, count: count, resolved: resolved, fail: fail) }
        guard session.everConnected.contains(id) else { throw fail("never connected to \(id)") }
        let account = session.security
        let connection = session.securityConnection(id)
        /// No pairing is running on the link.
        let settled = { connection?.pairing.map { $0.isFinished } ?? true }
        switch e {
        case let .paired(_, method, secureConnections, bonded, within):
            _ = try session.waitFor("the pairing with \(id) (within: \(within))", within: within) { account.pairings[id] != nil && settled() }
            switch account.pairings[id] {
            case nil:
                throw fail("no pairing with \(id)" + (connection?.pairing == nil ? " (nothing started one: a pair step, auto-pair, or the peripheral's request-security)" : " finished"))
            case let .failure(failure)?:
                throw fail("pairing failed: \(failure.report)")
            case let .success(r)?:
                var wrong: [String] = []
                if let method, PairingMethodName(r.method) != method { wrong.append("by \(PairingMethodName(r.method).rawValue), not \(method.rawValue)") }
                if let secureConnections, r.secureConnections != secureConnections {
                    wrong.append(r.secureConnections ? "with Secure Connections" : "with LE legacy pairing")
                }
                if let bonded, r.bonded != bonded { wrong.append(r.bonded ? "bonded" : "not bonded") }
                guard wrong.isEmpty else { throw fail(SecurityAccount.describe(r) + " (" + wrong.joined(separator: "; ") + ")") }
                session.note = SecurityAccount.describe(r)
            }
        case let .encrypted(_, wanted, within):
            guard let connection else { throw fail("the central's seat does not say whether its link is encrypted") }
            if wanted {
                _ = try session.waitFor("the encryption of the link to \(id) (within: \(within))", within: within) { connection.security.encrypted }
            }
            guard connection.security.encrypted == wanted else {
                var seen = "the link to \(id) is \(connection.security)"
                if wanted, case let .failure(f)? = account.encryptions[id] { seen += " (its encryption failed: \(f.words))" }
                if wanted, case let .failure(f)? = account.pairings[id] { seen += " (pairing failed: \(f.report))" }
                throw fail(seen)
            }
            session.note = "the link to \(id) is \(connection.security)"
        case let .pairingFailed(_, reason, within):
            _ = try session.waitFor("the pairing with \(id) to end (within: \(within))", within: within) { account.pairings[id] != nil && settled() }
            switch account.pairings[id] {
            case nil: throw fail("no pairing with \(id)")
            case let .success(r)?: throw fail(SecurityAccount.describe(r))
            case let .failure(failure)?:
                if let reason, failure.name != reason { throw fail("pairing failed: \(failure.report)") }
                session.note = "pairing failed: \(failure.report)"
                if account.unjudged?.pairing == true { account.unjudged = nil }
            }
        case let .encryptionFailed(_, reason, within):
            _ = try session.waitFor("an encryption of the link to \(id) to end (within: \(within))", within: within) { account.encryptions[id] != nil }
            switch account.encryptions[id] {
            case nil: throw fail("no encryption of the link to \(id) was attempted")
            case let .success(security)?: throw fail("the link to \(id) was \(security)")
            case let .failure(f)?:
                if let reason, !f.matches(reason) { throw fail("encryption failed: \(f.words)") }
                session.note = "encryption failed: \(f.words)"
                if account.unjudged?.pairing == false { account.unjudged = nil }
            }
        case .addressesSeen:
            break
        }
    }

    /// `addresses-seen`: the distinct addresses the central's scans heard `id` at, and whether
    /// the central's host resolves them to `id`'s identity address (Vol 6 Part B 1.3.2.3) with the
    /// IRKs its bonds hold now.
    private func checkAddressesSeen(_ id: String, count: Int?, resolved: Bool?, fail: (String) -> StepFailure) throws {
        let seen = session.addressesSeen[id] ?? []
        guard !seen.isEmpty else {
            throw fail(session.lastScan == nil ? "no scan has run" : "no scan heard \(id)")
        }
        let listed = seen.map { "\($0)" }.joined(separator: ", ")
        var words = "\(id) at \(seen.count) address\(seen.count == 1 ? "" : "es") (\(listed))"
        if let count, seen.count != count { throw fail(words) }
        if let resolved {
            guard let host = (session.central as? HostCentral)?.host else {
                throw fail("the central's seat (\(session.central.description)) does not say which addresses it resolves")
            }
            let identity = session.identityAddress(of: id)
            let resolving = seen.filter { address in identity != nil && host.resolvedIdentity(of: address) == identity }
            let identityText = identity.map { "\($0)" } ?? "unknown"
            switch resolving.count {
            case seen.count: words += "; the central's host resolves \(seen.count == 1 ? "it" : seen.count == 2 ? "both" : "all \(seen.count)") to \(id)'s identity \(identityText): one device"
            case 0: words += "; the central's host resolves none to \(id)'s identity \(identityText)" + (seen.count == 1 ? "" : ": \(seen.count) devices to the app")
            default:
                words += "; the central's host resolves \(resolving.map { "\($0)" }.joined(separator: ", ")) to \(id)'s identity \(identityText), not "
                    + seen.filter { !resolving.contains($0) }.map { "\($0)" }.joined(separator: ", ")
            }
            if resolved != (resolving.count == seen.count) || (!resolved && !resolving.isEmpty) { throw fail(words) }
        }
        session.note = words
    }
}

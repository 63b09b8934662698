import ATT
import BLERuntime
import BLEWire
import HCI
import ScenarioFormat

/// What the importer concluded about one operation of the central from the answers it got, for
/// the expectations after its step.
struct OperationOutcome {
    /// Its ATT error comes from one of the peripheral's `flaws:`: the step expects it.
    var expectsError = false
    /// The answer the central rejected: `expect: { malformed-response }`.
    var rejected: [UInt8]?
    /// The request left unanswered until the central's ATT transaction timeout: `expect: { att-timeout }`.
    var timedOut: ATTOpcode?
    /// The slowest response's time from request to response on the central's HCI, in
    /// microseconds, as bounds the replay must fall within (`expect: { response-time }`).
    var responseTime: (atLeast: Int64, atMost: Int64)?
    /// On a peripheral's capture: the peripheral answered, yet the central went silent and ended
    /// the link one ATT transaction timeout after the request, so the answer was lost on the way.
    /// The `link: { drop: { att: N, from: peripheral } }` step before the operation drops the Nth
    /// ATT PDU the peripheral sends from there.
    var lostAnswer: Int?
    /// The operation gets no step, for this reason (it ended without an answer in a way the
    /// lab's central cannot reproduce).
    var dropped: String?
    /// The end of the link cut it short (the peripheral hung up, or the link was lost, while it
    /// waited for its answer): `expect: { link-lost }`, with the reason when the replay gives the
    /// same one.
    var cutShort = false
    var cutShortReason: HCIStatus?
}

struct OperationKey: Hashable {
    var connection: Int
    var operation: Int
}

/// The flaws the importer gives the peripherals, and what the steps then expect.
struct FlawPlan {
    var outcomes: [OperationKey: OperationOutcome] = [:]
    var notes: [String] = []
}

/// One rule of a peripheral's `flaws:` (docs/scenarios.md, Flawed peripherals), with the
/// requests of the capture it answers.
private struct FlawRule {
    var opcode: ATTOpcode
    /// The characteristic whose attributes (past its declaration) it takes, in the capture's
    /// handles; nil: every request with the opcode.
    var range: ClosedRange<UInt16>?
    var reference: CharacteristicRef?
    var skip = 0
    var count = 1
    /// In microseconds.
    var delay: Int64?
    /// An error, none, damaged octets, or the normal answer (late).
    var answer: ATTFlaw.Answer = .normal
    var comments: [String] = []
    /// Connection interval at the first request, for how close a merged request's delay must be.
    var interval: Int64

    func matches(_ pdu: ATTPDU) -> Bool {
        guard pdu.opcode == opcode else { return false }
        guard let range else { return true }
        guard let handle = FlawRule.handle(of: pdu) else { return false }
        return range.contains(handle)
    }

    /// The one handle a single-handle request names.
    static func handle(of pdu: ATTPDU) -> UInt16? {
        switch pdu {
        case let .readRequest(r): return r.handle
        case let .readBlobRequest(r): return r.handle
        case let .writeRequest(r): return r.handle
        case let .prepareWriteRequest(r): return r.handle
        default: return nil
        }
    }

    /// The rule as the peripheral's `flaws:` holds it; its delay in whole milliseconds, rounded up.
    var flaw: ATTFlaw {
        ATTFlaw(requests: [opcode], characteristic: reference, skip: skip, count: count, delay: delay.map(millisecondsUp) ?? .zero, answer: answer)
    }
}

extension FlawPlan {
    /// ATT's transaction timeout (Core 5.4, Vol 3, Part F, 3.3.3).
    static let transactionTimeout: Int64 = 30_000_000
    /// A request unanswered this long before its link or the capture ended was left to time out.
    static let timedOutAfter: Int64 = 29_500_000

    /// A duration with the precision of its units, as the scenario writes it: `48.75ms`, `6s`, `7500us`.
    static func exact(microseconds us: Int64) -> String { ScalarText.duration(.microseconds(us)) }
}

/// Whole milliseconds, rounded up, never below 1 ms: how the importer states a time it measured.
func millisecondsUp(_ us: Int64) -> TimeSpan { .milliseconds(max(1, (us + 999) / 1000)) }

/// `millisecondsUp`, as the scenario writes it, for comments.
func millisecondsUpText(_ us: Int64) -> String { ScalarText.duration(millisecondsUp(us)) }

extension ImportedScenario {
    /// How a request left unanswered ended.
    private enum Unanswered {
        case timedOut
        /// The peripheral's disconnect or a lost link ended it; the reason `link-lost` can check.
        case cutShort(HCIStatus?)
        case dropped(String)
    }

    private func fate(of x: ATTExchange, on c: Int) -> Unanswered {
        let connection = transcript.connections[c]
        let sent = x.sent.time
        if let end = connection.disconnected {
            let byCentral = connection.capturedOnPeripheral
                ? connection.disconnectRequested == nil && !connection.endedByReset && connection.reason != .connectionTimeout && missedInstant(c) == nil
                : connection.disconnectRequested != nil
            let at = connection.capturedOnPeripheral ? end.time : (connection.disconnectRequested ?? end).time
            let after = CaptureMark.seconds(at - sent)
            if byCentral && at - sent >= FlawPlan.timedOutAfter { return .timedOut }
            if byCentral {
                return .dropped("the central gave up on it and disconnected \(after) later, before ATT's 30 s transaction timeout (the lab's central waits the whole 30 s)")
            }
            // The peripheral hung up, or the link was lost, while it waited (Core 5.4, Vol 4, Part E, 7.7.5).
            if linkLoss(c) != nil { return .cutShort(.connectionTimeout) }
            if let (mark, reason) = peripheralDisconnect(c), reason != .connectionTimeout, !connection.endedByReset, mark.time >= sent {
                return .cutShort(StepBuilder.peripheralReasons.contains(reason.rawValue) ? reason : nil)
            }
            let reason = connection.endedByReset ? "a controller reset" : (connection.reason.map { "\($0.name)" } ?? "?")
            return .dropped("the link ended (\(reason)) \(after) after it, before any answer")
        }
        let left = transcript.endTime - sent
        if left >= FlawPlan.timedOutAfter || connection.capturedOnPeripheral { return .timedOut }
        return .dropped("the capture ends \(CaptureMark.seconds(left)) after it, before an answer or ATT's 30 s transaction timeout")
    }

    /// On a peripheral's capture, an answer the central never got: the request is the last ATT
    /// the central sent on the link, and the central ended the link (not by supervision timeout)
    /// one transaction timeout later. Returns N for `drop: { att: N }` counted from the request.
    private func lostAnswer(_ x: ATTExchange, _ index: Int, on c: Int) -> Int? {
        let connection = transcript.connections[c]
        let session = sessions[c]
        guard connection.capturedOnPeripheral, let answered = x.answered, index == session.exchanges.count - 1,
              let (_, end) = centralDisconnect(c), end.time - x.sent.time >= FlawPlan.timedOutAfter,
              end.time - x.sent.time <= FlawPlan.transactionTimeout + 1_000_000,
              !session.operations.contains(where: { $0.start > x.sent }) else { return nil }
        let before = session.notifications.filter { $0.mark >= x.sent && $0.mark < answered }.count
            + session.unsolicited.filter { $0.mark >= x.sent && $0.mark < answered }.count
        return before + 1
    }

    /// Whether the lab's server, given the imported database, answers `x` with `code` by itself.
    private func isNatural(_ code: ATTErrorCode, _ x: ATTExchange, peripheral p: Int) -> Bool {
        let present = servicesPresent(p, at: x.sent)
        let db = peripherals[p].database
        func characteristics(in r: ATTHandleRange) -> [DiscoveredDatabase.Characteristic] {
            present.flatMap(\.characteristics).filter { r.start <= $0.declarationHandle && $0.declarationHandle <= r.end }
        }
        switch x.request {
        case let .readByGroupTypeRequest(r):
            return code == .attributeNotFound && !present.contains { r.range.start <= $0.start && $0.start <= r.range.end }
        case let .findByTypeValueRequest(r):
            var rd = ByteReader(r.value)
            let uuid = try? rd.readUUID(width: r.value.count)
            return code == .attributeNotFound && !present.contains { $0.uuid == uuid && r.range.start <= $0.start && $0.start <= r.range.end }
        case let .readByTypeRequest(r) where r.attributeType == .characteristic:
            return code == .attributeNotFound && characteristics(in: r.range).isEmpty
        case let .readByTypeRequest(r) where r.attributeType == .include:
            return code == .attributeNotFound
        case let .readByTypeRequest(r):
            return code == .attributeNotFound && !characteristics(in: r.range).contains { $0.uuid == r.attributeType }
        case let .findInformationRequest(r):
            var known = DiscoveredDatabase()
            known.services = present
            return code == .attributeNotFound && !known.knownHandles.contains(where: { r.range.start <= $0 && $0 <= r.range.end })
        case let .readRequest(r):
            // The lab's descriptors are all readable: an error reading one the scenario has is the device's.
            if peripherals[p].descriptorPlace(r.handle) != nil { return false }
            guard let (_, ch) = db.characteristic(valueHandle: r.handle) else { return code == .invalidHandle || code == .readNotPermitted }
            return code == .readNotPermitted && ch.properties & 0x02 == 0
        case let .readBlobRequest(r):
            if code == .attributeNotLong || code == .invalidOffset { return true }
            if peripherals[p].descriptorPlace(r.handle) != nil { return false }
            guard let (_, ch) = db.characteristic(valueHandle: r.handle) else { return code == .invalidHandle }
            return code == .readNotPermitted && ch.properties & 0x02 == 0
        case let .writeRequest(w):
            if let place = peripherals[p].descriptorPlace(w.handle) {
                return peripherals[p].labWriteError(place, handle: w.handle, value: w.value) == code
            }
            guard let (_, ch) = db.characteristic(valueHandle: w.handle) else {
                return db.characteristic(configurationHandle: w.handle) == nil && code == .invalidHandle
            }
            return code == .writeNotPermitted && ch.properties & 0x08 == 0
        case let .prepareWriteRequest(w):
            guard let (_, ch) = db.characteristic(valueHandle: w.handle) else { return code == .invalidHandle }
            return code == .writeNotPermitted && ch.properties & 0x08 == 0
        default:
            return false
        }
    }

    /// Whether the characteristic's own `on-read` or `on-write: respond-error` (every read, or
    /// every Write Request, of it got that error) gives `code`, so that no flaw is needed.
    private func isTriggered(_ code: ATTErrorCode, _ x: ATTExchange, peripheral p: Int) -> Bool {
        func outcomes(_ handle: UInt16, write: Bool) -> [ATTErrorCode?] {
            var out: [ATTErrorCode?] = []
            for c in peripherals[p].connections {
                for op in sessions[c].operations {
                    switch op.kind {
                    case let .read(h, _) where !write && h == handle: out.append(op.error)
                    case let .write(h, _, command) where write && !command && h == handle: out.append(op.error)
                    default: break
                    }
                }
            }
            return out
        }
        switch x.request {
        case let .readRequest(r):
            guard peripherals[p].reference(r.handle) != nil, !isGAPOrGATT(p, r.handle) else { return false }
            return outcomes(r.handle, write: false).allSatisfy { $0 == code }
        case let .writeRequest(w):
            guard peripherals[p].database.characteristic(valueHandle: w.handle) != nil else { return false }
            return outcomes(w.handle, write: true).allSatisfy { $0 == code }
        default:
            return false
        }
    }

    func isGAPOrGATT(_ p: Int, _ handle: UInt16) -> Bool {
        guard let (s, _) = peripherals[p].database.characteristic(valueHandle: handle) else { return false }
        return ImportedPeripheral.labServices.contains(s.uuid)
    }

    /// How late an answer came, beyond what the link explains, as the delay a flaw gives it, and
    /// the request-to-response time the central's HCI shows (or, on a peripheral's capture, will show).
    /// On a central's capture a prompt answer takes at most (latency + 2) connection intervals; on a
    /// peripheral's the answer leaves its host at once. An answer queued behind PDUs the
    /// peripheral sent first (a burst of notifications its trigger started) waits for them, not
    /// for a flaw: its lateness counts from the last of them.
    private func lateness(_ x: ATTExchange, on c: Int) -> (delay: Int64?, responseTime: Int64, interval: Int64)? {
        guard let answered = x.answered else { return nil }
        let connection = transcript.connections[c]
        let (units, latency, _) = connection.parameters(at: x.sent)
        let interval = Int64(units) * 1250
        let queued = (sessions[c].notifications.map(\.mark) + sessions[c].unsolicited.map(\.mark))
            .filter { $0 > x.sent && $0 < answered }.map(\.time).max() ?? x.sent.time
        let took = answered.time - queued
        let slack = max(interval, 20_000)
        if connection.capturedOnPeripheral {
            return (took > slack ? took : nil, answered.time - x.sent.time + interval * 3 / 2, interval * (Int64(latency) + 1))
        }
        let prompt = (Int64(latency) + 2) * interval
        // `interval` in the result: the longest the replay's request may wait for the peripheral
        // to listen (a peripheral with latency listens every latency + 1 events when idle,
        // Core 5.4, Vol 6, Part B, 4.5.1).
        return (took > prompt + slack ? max(1000, took - interval * 3 / 2) : nil, answered.time - x.sent.time, interval * (Int64(latency) + 1))
    }

    /// On a peripheral's capture, the central's next request of an operation (discovery, a long
    /// read or write) follows the peripheral's answer after one round trip over the link. When that
    /// takes longer than the connection's interval and latency explain, the link or the central was
    /// slow: the peripheral answered at once, so it gets no flaw, and the header says so.
    private mutating func noteSlowRoundTrips(_ c: Int) {
        let exchanges = sessions[c].exchanges
        var slow = 0, pairs = 0
        var longest: Int64 = 0
        for (x, y) in zip(exchanges, exchanges.dropFirst()) {
            guard let answered = x.answered, x.operation != nil, x.operation == y.operation || (x.serviceChange != nil && x.serviceChange == y.serviceChange) else { continue }
            let (units, latency, _) = transcript.connections[c].parameters(at: answered)
            let interval = Int64(units) * 1250
            let gap = y.sent.time - answered.time
            pairs += 1
            if gap > (Int64(latency) + 2) * interval + max(interval, 20_000) {
                slow += 1
                longest = max(longest, gap)
            }
        }
        guard slow > 0 else { return }
        flawPlan.notes.append("connection to \(peripherals[owner[c]].id): in \(slow) of \(pairs) round trips within an operation the central's next request came up to \(CaptureMark.seconds(longest)) after the peripheral's answer, longer than the link's interval explains: a slow link or a slow central, which a peripheral's capture cannot tell apart (on the central's capture it shows as late answers, which become flaws); the peripheral answered at once, and the replay's link is not slowed")
    }

    /// Gives each peripheral the `flaws:` that reproduce the answers its capture shows — late,
    /// missing, erroneous, damaged — and says what each operation's step expects of them.
    mutating func planFlaws() {
        for p in peripherals.indices {
            var sequence: [ATTPDU] = []                    // the requests the replay's central sends, in order
            var rules: [FlawRule] = []
            var intended: [Int: Int] = [:]                 // sequence position → rule
            var slowest: [OperationKey: (time: Int64, interval: Int64)] = [:]
            var late: Set<OperationKey> = []
            for c in peripherals[p].connections {
                // What the replay sends on connecting that the capture does not show comes first.
                sequence += setupRequests(of: c)
                for (index, x) in sessions[c].exchanges.enumerated() {
                    if x.superseded { continue }
                    let op = x.operation
                    if let k = op, case .unsupported = sessions[c].operations[k].kind { continue }
                    let key = op.map { OperationKey(connection: c, operation: $0) }
                    var outcome = key.flatMap { flawPlan.outcomes[$0] } ?? OperationOutcome()
                    // No step, so the replay's central does not send it.
                    if let k = op, let key, let why = omission(p, sessions[c].operations[k]) {
                        outcome.dropped = why
                        flawPlan.outcomes[key] = outcome
                        continue
                    }
                    var timing = lateness(x, on: c)
                    var answer: ATTFlaw.Answer?
                    var comment: String?
                    let name = x.request.opcode.name
                    if let n = lostAnswer(x, index, on: c) {
                        outcome.lostAnswer = n
                        outcome.timedOut = x.request.opcode
                        if let k = op { sessions[c].operations[k].end = CaptureMark(record: x.sent.record, time: x.sent.time + FlawPlan.transactionTimeout) }
                        timing = nil
                    } else {
                    switch x.answer {
                    case .none:
                        switch fate(of: x, on: c) {
                        case .timedOut:
                            answer = ATTFlaw.Answer.none
                            comment = "\(x.sent): the \(name) was never answered"
                            outcome.timedOut = x.request.opcode
                            if let k = op { sessions[c].operations[k].end = CaptureMark(record: x.sent.record, time: x.sent.time + FlawPlan.transactionTimeout) }
                        case let .cutShort(reason):
                            answer = ATTFlaw.Answer.none
                            comment = "\(x.sent): the \(name) was never answered before the link ended"
                            outcome.cutShort = true
                            outcome.cutShortReason = reason
                        case let .dropped(why):
                            outcome.dropped = "the \(name) (\(x.sent)) was never answered: \(why)"
                            if let key { flawPlan.outcomes[key] = outcome }
                            continue
                        }
                    case let .rejected(bytes):
                        if x.serviceChange != nil {
                            flawPlan.notes.append("\(x.sent): the answer to the \(name) of the central's re-discovery after Service Changed (\(ScalarText.hex(bytes))) is not reproduced")
                            break
                        }
                        answer = .malformed(.octets(bytes))
                        comment = "\(x.sent): the \(name) was answered with \(ScalarText.hex(bytes)), which the central rejects"
                        outcome.rejected = bytes
                    case let .error(code):
                        guard x.serviceChange == nil, !isNatural(code, x, peripheral: p), !isTriggered(code, x, peripheral: p) else { break }
                        answer = .error(code)
                        comment = "\(x.sent): the \(name) got ATT error \(code.name), which the database alone does not explain"
                        if !(code == .attributeNotFound && GATTSession.isDiscovery(x.request)) { outcome.expectsError = true }
                    case .response:
                        break
                    }
                    }
                    let delay = x.serviceChange == nil && answer != ATTFlaw.Answer.none ? timing?.delay : nil
                    if delay != nil, let timing {
                        let when = "answered \(CaptureMark.seconds(timing.responseTime)) after it, later than the link explains"
                        comment = comment.map { "\($0), \(when)" } ?? "\(x.sent): the \(name) was \(when)"
                    }
                    if let key, let timing, slowest[key].map({ $0.time < timing.responseTime }) ?? true {
                        slowest[key] = (timing.responseTime, timing.interval)
                    }
                    if let key, delay != nil { late.insert(key) }
                    if let key { flawPlan.outcomes[key] = outcome }
                    sequence.append(x.request)
                    guard answer != nil || delay != nil else { continue }
                    var rule = FlawRule(opcode: x.request.opcode, delay: delay, answer: answer ?? .normal, interval: timing?.interval ?? 30_000)
                    // By characteristic when `gatt:` declares it (a rule cannot name one added at run time).
                    if let handle = FlawRule.handle(of: x.request), let (s, ch) = peripherals[p].database.characteristic(holding: handle),
                       !peripherals[p].addedServiceStarts.contains(s.start), let reference = peripherals[p].reference(ch.valueHandle) {
                        let k = s.characteristics.firstIndex { $0.declarationHandle == ch.declarationHandle }!
                        let end = k + 1 < s.characteristics.count ? s.characteristics[k + 1].declarationHandle - 1 : s.end
                        rule.range = (ch.declarationHandle + 1)...max(ch.declarationHandle + 1, end)
                        rule.reference = reference
                    }
                    if let comment { rule.comments = [comment] }
                    place(rule, at: sequence.count - 1, rules: &rules, intended: &intended, sequence: sequence)
                }
            }
            for c in peripherals[p].connections where transcript.connections[c].capturedOnPeripheral { noteSlowRoundTrips(c) }
            // A late answer's operation expects its slowest response about as late as the capture
            // shows, with room for the connection events the replay's answers wait for.
            for key in late {
                guard var outcome = flawPlan.outcomes[key], outcome.rejected == nil, outcome.timedOut == nil, let s = slowest[key] else { continue }
                let tolerance = 2 * max(s.interval, 30_000) + 10_000
                outcome.responseTime = (max(0, s.time - tolerance), s.time + tolerance)
                flawPlan.outcomes[key] = outcome
            }
            // Every rule answers exactly the requests it was made for.
            let assigned = Self.simulate(rules, sequence)
            for (i, r) in assigned.enumerated() where r != intended[i] {
                flawPlan.notes.append("\(peripherals[p].id): request \(i + 1) of the replay would not get the answer the capture shows; the flaws do not reproduce it")
            }
            peripherals[p].flaws = rules.map { ($0.comments, $0.flaw) }
        }
    }

    /// Adds `rule` for the request at `position`: by counting one more on the last rule like it
    /// when that answers exactly this request next, else as a new rule after the others, its
    /// `skip` the matching requests that reach it first.
    private func place(_ rule: FlawRule, at position: Int, rules: inout [FlawRule], intended: inout [Int: Int], sequence: [ATTPDU]) {
        if let j = rules.lastIndex(where: { $0.opcode == rule.opcode && $0.range == rule.range && $0.answer == rule.answer }),
           (rules[j].delay == nil) == (rule.delay == nil),
           abs((rules[j].delay ?? 0) - (rule.delay ?? 0)) <= min(rules[j].interval, rule.interval) / 2 {
            var tried = rules
            tried[j].count += 1
            let assigned = Self.simulate(tried, Array(sequence[...position]))
            var expected = intended
            expected[position] = j
            if assigned.enumerated().allSatisfy({ expected[$0.offset] == $0.element }) {
                tried[j].comments += rule.comments
                rules = tried
                intended = expected
                return
            }
        }
        var fresh = rule
        var counts = rules.map { _ in 0 }
        var reaching = 0
        for q in 0..<position {
            var answered = false
            for (i, r) in rules.enumerated() where r.matches(sequence[q]) {
                counts[i] += 1
                if counts[i] > r.skip && counts[i] <= r.skip + r.count { answered = true; break }
            }
            if !answered && fresh.matches(sequence[q]) { reaching += 1 }
        }
        fresh.skip = reaching
        rules.append(fresh)
        intended[position] = rules.count - 1
    }

    /// Which rule answers each request, as the lab's peripheral applies them (tried in order; each
    /// counts the matching requests that reach it).
    private static func simulate(_ rules: [FlawRule], _ sequence: [ATTPDU]) -> [Int?] {
        var counts = rules.map { _ in 0 }
        return sequence.map { pdu in
            for (i, r) in rules.enumerated() where r.matches(pdu) {
                counts[i] += 1
                if counts[i] > r.skip && counts[i] <= r.skip + r.count { return i }
            }
            return nil
        }
    }
}

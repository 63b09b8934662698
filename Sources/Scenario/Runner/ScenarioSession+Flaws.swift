import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import ScenarioFormat

/// What the scripted central met on its links to flawed peripherals: responses its ATT bearer
/// rejected, transaction timeouts, notifications for handles it never discovered, Service Changed
/// indications and the re-discoveries they started. Per peripheral id, in arrival order.
final class FlawObservations {
    struct Rejected {
        var time: Instant
        var violation: ATTProtocolViolation
        /// The PDU's octets as the bearer received them.
        var bytes: [UInt8]
        var opcode: ATTOpcode? { bytes.first.map { ATTOpcode($0) } }
        /// A response that did not decode, did not fit the request, or came unasked (not a
        /// stray confirmation or a bad notification).
        var isAboutAResponse: Bool {
            switch violation {
            case let .malformed(opcode, _): return opcode.method == .response
            case .unsolicitedResponse, .unexpectedResponse: return true
            case .emptyPDU, .unsolicitedConfirmation, .unsupported, .unknownOpcode, .pipelinedRequest, .repeatedMTUExchange,
                 .shrinkingMTU, .unverifiedSignedWrite, .invalidHandle, .exceedsMTU:
                return false
            }
        }
    }

    struct Timeout {
        var time: Instant
        var request: ATTOpcode
        var connectionHandle: UInt16
    }

    struct Ignored {
        var time: Instant
        var handle: UInt16
        var value: [UInt8]
        var isIndication: Bool
        var connectionHandle: UInt16
    }

    struct ServiceChange {
        var time: Instant
        var range: ATTHandleRange
        var connectionHandle: UInt16
        /// Nil while the re-discovery runs.
        var rediscovery: Result<[GATTRemoteService], GATTError>?
    }

    var rejected: [String: [Rejected]] = [:]
    var timeouts: [String: [Timeout]] = [:]
    var ignored: [String: [Ignored]] = [:]
    var serviceChanges: [String: [ServiceChange]] = [:]
    /// How many of each list earlier expectations took, per peripheral.
    var marks: [String: Int] = [:]

    func mark(_ list: String, _ peripheral: String) -> Int { marks["\(list):\(peripheral)"] ?? 0 }
    func setMark(_ list: String, _ peripheral: String, _ n: Int) { marks["\(list):\(peripheral)"] = n }
}

extension ScenarioSession {
    /// Watches a new connection for what flawed peripherals do. A transaction timeout makes the
    /// bearer unusable (Core 5.4 Vol 3 Part F 3.3.3: no more ATT on it), so the central then
    /// disconnects, as phones do; a Service Changed indication makes it re-discover the range
    /// (Part G 7.1), as phones do.
    func watchFlaws(_ connection: Connection, id: String) {
        let bearer = connection.bearer
        let client = connection.client
        let handle = connection.handle
        let flaws = flawObservations
        // The timeline and the notes get these from the central's host, typed, with the other
        // layers' (ScenarioSession+Violations.swift); here they are kept for the expectations.
        bearer.observeViolations { [unowned self] event in
            flaws.rejected[id, default: []].append(.init(time: self.now, violation: event.violation, bytes: event.pdu))
        }
        bearer.onFailure = { [unowned self, weak connection] error in
            guard case let .timeout(opcode) = error else { return }
            flaws.timeouts[id, default: []].append(.init(time: self.now, request: opcode, connectionHandle: handle))
            self.record(TimelineEvent(time: self.now, device: "central", kind: .protocolViolation,
                                      text: "ATT transaction timeout on \(id): no answer to the \(opcode.name) in 30 s; the bearer takes no more ATT, the central disconnects"))
            connection?.disconnect(reason: .remoteUserTerminatedConnection)
        }
        client.onNotification = { [unowned self, weak client] n in
            guard let client, client.characteristic(valueHandle: n.handle) == nil else { return }
            flaws.ignored[id, default: []].append(.init(time: self.now, handle: n.handle, value: n.value, isIndication: n.isIndication,
                                                        connectionHandle: handle))
            self.record(TimelineEvent(time: self.now, device: "central", kind: .protocolViolation,
                                      text: "ignored \(n.isIndication ? "indication" : "notification") from \(id) for handle \(hex4(n.handle)), which discovery never found"))
        }
        client.onServiceChanged = { [unowned self, weak client] range in
            guard let client else { return }
            let k = flaws.serviceChanges[id, default: []].count
            flaws.serviceChanges[id, default: []].append(.init(time: self.now, range: range, connectionHandle: handle, rediscovery: nil))
            self.record(TimelineEvent(time: self.now, device: "central", kind: .protocolViolation,
                                      text: "Service Changed from \(id) for \(range): re-discovering"))
            client.rediscover(range) { result in
                flaws.serviceChanges[id]?[k].rediscovery = result
            }
        }
    }

    /// Whether an operation's failure that is no ATT Error Response is expected by the `expect`
    /// steps right after it (`malformed-response` for a rejected response, `att-timeout` for a
    /// transaction timeout), as `error` expects an Error Response.
    func expectsFailure(_ error: GATTError, following: ArraySlice<CentralStep>) -> Bool {
        following.contains { step in
            guard case let .expect(.flaw(e)) = step.action else { return false }
            switch (error, e) {
            case (.protocolViolation, .malformedResponse), (.invalidResponse, .malformedResponse): return true
            case (.timeout, .attTimeout): return true
            default: return false
            }
        }
    }

    /// An operation's failure in words; for a response the central rejected just now, with the
    /// octets that arrived.
    func describe(_ error: GATTError, of step: CentralStep) -> String {
        guard case .protocolViolation = error, let id = step.action.peripheral,
              let rejected = flawObservations.rejected[id]?.last, rejected.time == now else { return "\(error)" }
        return "\(error); octets \(rejected.bytes.isEmpty ? "(none)" : rejected.bytes.spacedHex)"
    }

    func checkFlaw(_ e: FlawExpectation, fail: (String) -> StepFailure) throws {
        let flaws = flawObservations
        switch e {
        case let .malformedResponse(id, opcode, bytes, within):
            let mark = flaws.mark("rejected", id)
            func found() -> [FlawObservations.Rejected] { (flaws.rejected[id] ?? []).dropFirst(mark).filter(\.isAboutAResponse) }
            func matching() -> FlawObservations.Rejected? {
                found().last { r in (opcode == nil || r.opcode == opcode) && (bytes == nil || r.bytes == bytes) }
            }
            try waitFor("a rejected response from \(id) (within: \(within))", within: within) { matching() != nil }
            let got = found()
            flaws.setMark("rejected", id, (flaws.rejected[id] ?? []).count)
            guard let match = matching() else {
                if let last = lastOperation, let error = last.error, case .invalidResponse = error {
                    // A response that decoded but made no sense for the procedure.
                    note = "step \(last.step.index) got \(error)"
                    if opcode == nil, bytes == nil { return }
                }
                throw fail(got.isEmpty ? "the central rejected no response from \(id)"
                                       : got.map { "\($0.violation) (octets \($0.bytes.spacedHex))" }.joined(separator: "; "))
            }
            note = "\(match.time) rejected \(match.violation); octets \(match.bytes.isEmpty ? "(none)" : match.bytes.spacedHex)"
        case let .attTimeout(id, request, within):
            let mark = flaws.mark("timeouts", id)
            func matching() -> FlawObservations.Timeout? {
                (flaws.timeouts[id] ?? []).dropFirst(mark).first { request == nil || $0.request == request }
            }
            try waitFor("the ATT transaction timeout on \(id) (within: \(within))", within: within) { matching() != nil }
            flaws.setMark("timeouts", id, (flaws.timeouts[id] ?? []).count)
            guard let timeout = matching() else {
                let other = (flaws.timeouts[id] ?? []).dropFirst(mark).map { "\($0.request.name) at \($0.time)" }
                throw fail(other.isEmpty ? "no ATT transaction timeout on \(id)" : "timeouts of \(other.joined(separator: ", "))")
            }
            // Part F 3.3.3: after a timeout no more ATT PDUs go out on that bearer.
            let after = central.traffic.records.filter { $0.wasSent && $0.connectionHandle == timeout.connectionHandle && $0.time > timeout.time }
            if let first = after.first {
                throw fail("the central sent \(first.pdu?.description ?? ATTPDU.describe(first.bytes)) at \(first.time), after the timeout at \(timeout.time)")
            }
            let sent = central.traffic.records.last { $0.wasSent && $0.connectionHandle == timeout.connectionHandle && $0.opcode == timeout.request }
            note = "\(timeout.request.name)\(sent.map { " sent at \($0.time)" } ?? "") timed out at \(timeout.time); no ATT after it"
        case let .responseTime(least, most):
            guard let last = lastOperation, let record = stepRecords.last(where: { $0.step.index == last.step.index }) else {
                throw fail("no operation has run")
            }
            let connection = last.step.action.peripheral.flatMap { connections[$0] }?.handle
            var slowest: TimeSpan?
            var pending: Instant?
            for r in central.traffic.records where r.time >= record.start && r.time <= record.end
                && (connection == nil || r.connectionHandle == connection) {
                guard let op = r.opcode else { continue }
                if r.wasSent && op.method == .request { pending = r.time }
                if !r.wasSent && op.method == .response, let start = pending {
                    let span = r.time - start
                    if slowest.map({ span > $0 }) ?? true { slowest = span }
                    pending = nil
                }
            }
            guard let slowest else { throw fail("no request of step \(last.step.index) was answered") }
            if let least, slowest < least { throw fail("the slowest response of step \(last.step.index) took \(slowest)") }
            if let most, slowest > most { throw fail("the slowest response of step \(last.step.index) took \(slowest)") }
            note = "the slowest response of step \(last.step.index) took \(slowest)"
        case let .ignoredNotification(id, handle, indication, within):
            let mark = flaws.mark("ignored", id)
            func matching() -> FlawObservations.Ignored? {
                (flaws.ignored[id] ?? []).dropFirst(mark).first { $0.handle == handle && (indication == nil || $0.isIndication == indication) }
            }
            try waitFor("a notification from \(id) for handle \(hex4(handle)) (within: \(within))", within: within) { matching() != nil }
            let got = Array((flaws.ignored[id] ?? []).dropFirst(mark))
            // Consume up to the match only: a later arrival (the next expectation's) may already be
            // here when real controllers deliver both in one connection event.
            let taken = got.firstIndex { $0.handle == handle && (indication == nil || $0.isIndication == indication) }
            flaws.setMark("ignored", id, mark + (taken.map { $0 + 1 } ?? got.count))
            guard let arrival = matching() else {
                throw fail(got.isEmpty ? "no notification or indication for an undiscovered handle arrived from \(id)"
                                       : got.map { "\($0.isIndication ? "indication" : "notification") of \(hex4($0.handle))" }.joined(separator: ", "))
            }
            var what = "\(arrival.isIndication ? "indication" : "notification") of \(hex4(handle)) value \(ValueText.describe(arrival.value)) at \(arrival.time) ignored"
            if arrival.isIndication {
                // Part F 3.4.7.2: every indication is confirmed, known handle or not.
                guard let confirmation = central.traffic.records.first(where: { $0.wasSent && $0.connectionHandle == arrival.connectionHandle
                                                                                  && $0.opcode == .handleValueConfirmation && $0.time >= arrival.time }) else {
                    throw fail("the indication of \(hex4(handle)) at \(arrival.time) was never confirmed")
                }
                what += ", confirmed at \(confirmation.time)"
            }
            note = what
        case let .serviceChanged(id, range, within):
            let mark = flaws.mark("service-changed", id)
            func matching() -> FlawObservations.ServiceChange? {
                (flaws.serviceChanges[id] ?? []).dropFirst(mark).first { range == nil || $0.range == range }
            }
            try waitFor("a Service Changed indication from \(id) and its re-discovery (within: \(within))", within: within) {
                matching()?.rediscovery != nil
            }
            flaws.setMark("service-changed", id, (flaws.serviceChanges[id] ?? []).count)
            guard let change = matching() else {
                let other = (flaws.serviceChanges[id] ?? []).dropFirst(mark).map { "\($0.range)" }
                throw fail(other.isEmpty ? "no Service Changed indication from \(id)" : "Service Changed for \(other.joined(separator: ", "))")
            }
            guard central.traffic.records.contains(where: { $0.wasSent && $0.connectionHandle == change.connectionHandle
                                                             && $0.opcode == .handleValueConfirmation && $0.time >= change.time }) else {
                throw fail("the Service Changed indication at \(change.time) was never confirmed")
            }
            switch change.rediscovery {
            case let .success(services)?:
                note = "Service Changed \(change.range) at \(change.time), confirmed; re-discovered "
                    + (services.isEmpty ? "no service there" : services.map { s in "\(s.uuid) [\(s.characteristics.map(\.uuid.description).joined(separator: ", "))]" }.joined(separator: ", "))
            case let .failure(error)?:
                throw fail("Service Changed \(change.range) arrived, but its re-discovery failed: \(error)")
            case nil:
                throw fail("Service Changed \(change.range) arrived at \(change.time); its re-discovery had not finished")
            }
        case let .notServices(list, id):
            guard let connection = connections[id] else { throw fail("never connected to \(id)") }
            let found = connection.client.services.map(\.uuid)
            let present = list.filter(found.contains)
            guard present.isEmpty else { throw fail("services \(found.map(\.description).joined(separator: ", "))") }
            note = found.isEmpty ? "no services discovered" : "services \(found.map(\.description).joined(separator: ", "))"
        }
    }
}

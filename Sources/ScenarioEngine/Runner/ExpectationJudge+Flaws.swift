import ATT
import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import ScenarioFormat

/// Judging what BLELab's host in the central's seat met on its links to flawed peripherals.
extension ExpectationJudge {
    func checkFlaw(_ e: FlawExpectation, fail: (String) -> StepFailure) throws {
        let flaws = session.flawObservations
        switch e {
        case let .malformedResponse(id, opcode, bytes, within):
            let mark = flaws.mark("rejected", id)
            func found() -> [FlawObservations.Rejected] { (flaws.rejected[id] ?? []).dropFirst(mark).filter(\.isAboutAResponse) }
            func matching() -> FlawObservations.Rejected? {
                found().last { r in (opcode == nil || r.opcode == opcode) && (bytes == nil || r.bytes == bytes) }
            }
            try session.waitFor("a rejected response from \(id) (within: \(within))", within: within) { matching() != nil }
            let got = found()
            flaws.setMark("rejected", id, (flaws.rejected[id] ?? []).count)
            guard let match = matching() else {
                if let last = session.lastOperation, let error = last.error, case .gatt(.invalidResponse) = error {
                    // A response that decoded but made no sense for the procedure.
                    session.note = "step \(last.step.index) got \(error)"
                    if opcode == nil, bytes == nil { return }
                }
                throw fail(got.isEmpty ? "the central rejected no response from \(id)"
                                       : got.map { "\($0.violation) (octets \($0.bytes.spacedHex))" }.joined(separator: "; "))
            }
            session.note = "\(match.time) rejected \(match.violation); octets \(match.bytes.isEmpty ? "(none)" : match.bytes.spacedHex)"
        case let .attTimeout(id, request, within):
            let mark = flaws.mark("timeouts", id)
            func matching() -> FlawObservations.Timeout? {
                (flaws.timeouts[id] ?? []).dropFirst(mark).first { request == nil || $0.request == request }
            }
            try session.waitFor("the ATT transaction timeout on \(id) (within: \(within))", within: within) { matching() != nil }
            flaws.setMark("timeouts", id, (flaws.timeouts[id] ?? []).count)
            guard let timeout = matching() else {
                let other = (flaws.timeouts[id] ?? []).dropFirst(mark).map { "\($0.request.name) at \($0.time)" }
                throw fail(other.isEmpty ? "no ATT transaction timeout on \(id)" : "timeouts of \(other.joined(separator: ", "))")
            }
            // Part F 3.3.3: after a timeout no more ATT PDUs go out on that bearer.
            let after = session.centralDevice.traffic.records.filter { $0.wasSent && $0.connectionHandle == timeout.connectionHandle && $0.time > timeout.time }
            if let first = after.first {
                throw fail("the central sent \(first.pdu?.description ?? ATTPDU.describe(first.bytes)) at \(first.time), after the timeout at \(timeout.time)")
            }
            let sent = session.centralDevice.traffic.records.last { $0.wasSent && $0.connectionHandle == timeout.connectionHandle && $0.opcode == timeout.request }
            session.note = "\(timeout.request.name)\(sent.map { " sent at \($0.time)" } ?? "") timed out at \(timeout.time); no ATT after it"
        case let .responseTime(least, most):
            guard let last = session.lastOperation, let record = session.stepRecords.last(where: { $0.step.index == last.step.index }) else {
                throw fail("no operation has run")
            }
            let connection = last.step.action.peripheral.flatMap { session.connections[$0] }?.handle
            var slowest: TimeSpan?
            var pending: Instant?
            for r in session.centralDevice.traffic.records where r.time >= record.start && r.time <= record.end
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
            session.note = "the slowest response of step \(last.step.index) took \(slowest)"
        case let .ignoredNotification(id, handle, indication, within):
            let mark = flaws.mark("ignored", id)
            func matching() -> FlawObservations.Ignored? {
                (flaws.ignored[id] ?? []).dropFirst(mark).first { $0.handle == handle && (indication == nil || $0.isIndication == indication) }
            }
            try session.waitFor("a notification from \(id) for handle \(hex4(handle)) (within: \(within))", within: within) { matching() != nil }
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
                guard let confirmation = session.centralDevice.traffic.records.first(where: { $0.wasSent && $0.connectionHandle == arrival.connectionHandle
                                                                                  && $0.opcode == .handleValueConfirmation && $0.time >= arrival.time }) else {
                    throw fail("the indication of \(hex4(handle)) at \(arrival.time) was never confirmed")
                }
                what += ", confirmed at \(confirmation.time)"
            }
            session.note = what
        case let .serviceChanged(id, range, within):
            let mark = flaws.mark("service-changed", id)
            func matching() -> FlawObservations.ServiceChange? {
                (flaws.serviceChanges[id] ?? []).dropFirst(mark).first { range == nil || $0.range == range }
            }
            try session.waitFor("a Service Changed indication from \(id) and its re-discovery (within: \(within))", within: within) {
                matching()?.rediscovery != nil
            }
            flaws.setMark("service-changed", id, (flaws.serviceChanges[id] ?? []).count)
            guard let change = matching() else {
                let other = (flaws.serviceChanges[id] ?? []).dropFirst(mark).map { "\($0.range)" }
                throw fail(other.isEmpty ? "no Service Changed indication from \(id)" : "Service Changed for \(other.joined(separator: ", "))")
            }
            guard session.centralDevice.traffic.records.contains(where: { $0.wasSent && $0.connectionHandle == change.connectionHandle
                                                             && $0.opcode == .handleValueConfirmation && $0.time >= change.time }) else {
                throw fail("the Service Changed indication at \(change.time) was never confirmed")
            }
            switch change.rediscovery {
            case let .success(services)?:
                session.note = "Service Changed \(change.range) at \(change.time), confirmed; re-discovered "
                    + (services.isEmpty ? "no service there" : services.map { s in "\(s.uuid) [\(s.characteristics.map(\.uuid.description).joined(separator: ", "))]" }.joined(separator: ", "))
            case let .failure(error)?:
                throw fail("Service Changed \(change.range) arrived, but its re-discovery failed: \(error)")
            case nil:
                throw fail("Service Changed \(change.range) arrived at \(change.time); its re-discovery had not finished")
            }
        case let .notServices(list, id):
            guard let connection = session.connections[id] else { throw fail("never connected to \(id)") }
            let found = connection.client.services.map(\.uuid)
            let present = list.filter(found.contains)
            guard present.isEmpty else { throw fail("services \(found.map(\.description).joined(separator: ", "))") }
            session.note = found.isEmpty ? "no services discovered" : "services \(found.map(\.description).joined(separator: ", "))"
        }
    }
}

import ATT
import BLERuntime
import BLEWire
import GAP
import GATT
import ScenarioFormat

/// A flawed peripheral: its ATT server misanswers requests as `spec.flaws` says, and its actions
/// can send what a correct server never would (notifications for unknown handles, unsolicited
/// PDUs) or change its database at run time and announce it with Service Changed. Everything goes
/// out through the peripheral's own ATT bearer, so captures show what a field capture would.
extension SimulatedPeripheral {
    /// Puts the request flaws between the bearer and the GATT server.
    func installFlaws(on bearer: ATTBearer) {
        guard !spec.flaws.isEmpty else { return }
        bearer.requestInterceptor = { [weak self] request in
            self?.intercept(request) ?? false
        }
    }

    /// The first flaw that applies to `request` answers it; false when none does.
    private func intercept(_ request: ATTInterceptedRequest) -> Bool {
        let pdu = request.pdu
        for (i, flaw) in spec.flaws.enumerated() where matches(flaw, pdu) {
            flawMatches[i] += 1
            let n = flawMatches[i]
            guard n > flaw.skip, flaw.count.map({ n <= flaw.skip + $0 }) ?? true else { continue }
            apply(flaw, to: request)
            return true
        }
        return false
    }

    private func matches(_ flaw: ATTFlaw, _ pdu: ATTPDU) -> Bool {
        guard flaw.requests.isEmpty || flaw.requests.contains(pdu.opcode) else { return false }
        guard let ref = flaw.characteristic else { return true }
        guard let c = handles(for: ref) else { return false }
        return ATTFlaw.touches(pdu, c.declarationHandle, c.endHandle)
    }

    private func apply(_ flaw: ATTFlaw, to request: ATTInterceptedRequest) {
        let opcode = request.pdu.opcode
        let what = "\(ATTFlaw.requestName(opcode)) request"
        func answer() {
            guard request.isPending else { return }
            switch flaw.answer {
            case .normal:
                record(.note("flaw: \(what) answered late, after \(flaw.delay)"))
                request.serve()
            case let .error(code):
                record(.note("flaw: \(what) answered \(code.name) (\(hex2(code.rawValue)))"))
                request.responder.fail(code, handle: ATTFlaw.handleInError(request.pdu))
            case .none:
                break
            case let .malformed(m):
                record(.note("flaw: \(what) answered with a malformed PDU (\(m))"))
                switch m {
                case .truncated, .wrongOpcode:
                    request.serve(altering: { flaw.damage($0, request: opcode) })
                case .badErrorLength:
                    // Part F, 3.4.1.1: five octets; this one stops before the Error Code.
                    let handle = ATTFlaw.handleInError(request.pdu)
                    request.responder.respond(octets: [ATTOpcode.errorResponse.rawValue, opcode.rawValue,
                                                       UInt8(truncatingIfNeeded: handle), UInt8(truncatingIfNeeded: handle >> 8)])
                case let .octets(octets):
                    request.responder.respond(octets: octets)
                }
            }
        }
        if case .none = flaw.answer {
            record(.note("flaw: \(what) left unanswered"))
            return
        }
        if flaw.delay > .zero {
            loop.schedule(after: flaw.delay) { answer() }
        } else {
            answer()
        }
    }

    /// Runs the actions of a flawed peripheral (see `PeripheralAction`).
    func executeFlawed(_ action: PeripheralAction, context: ActionContext, site: String) {
        let bearers = host.connections.values.sorted(by: { $0.handle < $1.handle }).map(\.bearer)
        // Sent on the link, whatever the GATT rules say: without a link there is nothing to do it on.
        if action.needsLink, bearers.isEmpty { return failed(action, "\(spec.id) has no connection", context) }
        switch action {
        case let .notifyHandle(handle, source):
            var part = 0
            let value = resolve(source, context: context, site: site, part: &part)
            let sent = bearers.filter { $0.sendNotification(handle: handle, value: value) }.count
            record(.note("notify-handle \(hex4(handle)) \(value.spacedHex) → \(sent) central(s)"))
            guard sent > 0 else { return failed(action, "no ATT bearer of \(spec.id) is open", context) }
            did(action, "notify-handle \(hex4(handle)) \(value.spacedHex) to \(sent) central\(sent == 1 ? "" : "s")", context)
        case let .indicateHandle(handle, source):
            var part = 0
            let value = resolve(source, context: context, site: site, part: &part)
            let open = bearers.filter(\.isOpen)
            for bearer in open {
                bearer.sendIndication(handle: handle, value: value) { [weak self] result in
                    self?.record(.note("indication of \(hex4(handle)) \((try? result.get()) != nil ? "confirmed" : "failed")"))
                }
            }
            record(.note("indicate-handle \(hex4(handle)) \(value.spacedHex) → \(open.count) central(s)"))
            guard !open.isEmpty else { return failed(action, "no ATT bearer of \(spec.id) is open", context) }
            did(action, "indicate-handle \(hex4(handle)) \(value.spacedHex) to \(open.count) central\(open.count == 1 ? "" : "s")", context)
        case let .sendPDU(octets):
            let sent = bearers.filter { $0.sendUnchecked(octets) }.count
            record(.note("send-pdu \(octets.spacedHex) → \(sent) central(s)"))
            guard sent > 0 else { return failed(action, "no ATT bearer of \(spec.id) took the PDU (closed, or longer than its ATT_MTU)", context) }
            did(action, "send-pdu \(octets.spacedHex) to \(sent) central\(sent == 1 ? "" : "s")", context)
        case let .addService(service):
            do {
                let added = try server.addService(service.gattService)
                widenChanged(added.range)
                record(.note("add-service \(service.uuid) at \(added.range)"))
                did(action, "add-service \(service.uuid) at \(added.range)", context)
            } catch {
                failed(action, "the GATT server refused it: \(error)", context)
            }
        case let .removeService(uuid):
            guard let start = server.database.service(uuid)?.range.start, let removed = server.removeService(at: start) else {
                return failed(action, "\(spec.id) serves no service \(uuid)", context)
            }
            widenChanged(removed.range)
            record(.note("remove-service \(uuid) at \(removed.range)"))
            did(action, "remove-service \(uuid) at \(removed.range)", context)
        case let .serviceChanged(explicit):
            let range = explicit ?? changedRange ?? .all
            changedRange = nil
            let sent = server.indicateServiceChanged(range)
            record(.note("service-changed \(range) → \(sent) central(s)"))
            did(action, sent == 0 ? "service-changed \(range): no central subscribed to Service Changed"
                                  : "service-changed \(range) to \(sent) subscribed central\(sent == 1 ? "" : "s")", context)
        default:
            break
        }
    }

    private func widenChanged(_ range: ATTHandleRange) {
        guard let current = changedRange else { return changedRange = range }
        changedRange = ATTHandleRange(start: min(current.start, range.start), end: max(current.end, range.end))
    }
}

func hex2(_ v: UInt8) -> String {
    "0x" + (v < 16 ? "0" : "") + String(v, radix: 16)
}

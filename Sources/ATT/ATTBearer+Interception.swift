import BLEWire

/// A request the server role received and handed to `ATTBearer.requestInterceptor` instead of
/// answering it. The lab's flawed peripherals answer through it: with an error the server would
/// not give, late, with damaged octets, or never.
public struct ATTInterceptedRequest {
    weak var bearer: ATTBearer?
    let id: UInt64
    /// The request as decoded.
    public let pdu: ATTPDU

    init(bearer: ATTBearer, id: UInt64, pdu: ATTPDU) {
        self.bearer = bearer
        self.id = id
        self.pdu = pdu
    }

    /// Answers it directly (`fail`, `respond`, `respond(octets:)`).
    public var responder: ATTResponder { ATTResponder(bearer: bearer, id: id, requestOpcode: pdu.opcode) }

    /// Answers it as the bearer would have without the interceptor (Exchange MTU by the bearer,
    /// anything else by its server), now or later. `alteration`, when given, rewrites the octets of
    /// that answer before they are sent. Does nothing once the link closed or the request was
    /// answered.
    public func serve(altering alteration: (([UInt8]) -> [UInt8])? = nil) {
        bearer?.serveIncoming(pdu, id: id, alteration: alteration)
    }

    /// True while the bearer still waits for this request's answer.
    public var isPending: Bool { bearer?.isAnswering(id: id) ?? false }
}

extension ATTBearer {
    func isAnswering(id: UInt64) -> Bool {
        state == .open && activeIncoming?.id == id
    }

    /// Sends these octets on the bearer as they are, outside any transaction: what a flawed peer
    /// sends unprompted (a response nobody asked for, a PDU that is not ATT at all). False when
    /// the bearer is not open.
    @discardableResult
    public func sendUnchecked(_ octets: [UInt8]) -> Bool {
        guard state == .open else { return false }
        transmit(octets)
        return true
    }
}

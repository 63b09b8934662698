import HCI

/// SMP on CID 0x0006 (Core 5.4, Vol 3, Part H, 3) while this host does not pair (no `onSMP`, or
/// one that left the PDU: no pairing is in progress).
///
/// - Pairing Request to a peripheral, Security Request to a central: Pairing Failed "Pairing Not
///   Supported" (0x05, 3.5.5): a refusal, not a violation.
/// - The same requests to the other role (only a central sends Pairing Request, 3.5.1; only a
///   peripheral Security Request, 3.6.7): Pairing Failed "Command Not Supported" (0x07).
/// - A command whose length is not its code's, a Pairing Request whose IO Capability (0x00–0x04),
///   OOB data flag (0x00–0x01) or Maximum Encryption Key Size (7–16) is out of range: Pairing
///   Failed "Invalid Parameters" (0x0A: "the command length is invalid or a parameter is
///   outside of the specified range").
/// - Every other command belongs inside a pairing, and none is in progress: Pairing Failed
///   "Command Not Supported" (0x07).
/// - A reserved code "shall be ignored" (3.3); a Pairing Failed is never answered (it ends a
///   pairing; answering it could start an endless exchange), and with no pairing in progress
///   it is out of sequence.
extension L2CAPLink {
    func receiveSMP(_ payload: [UInt8]) {
        if let onSMP, onSMP(payload) { return }
        guard let first = payload.first else {
            report(.smp, .invalidLength, octets: payload, "empty SMP PDU (no Code): ignored")
            return
        }
        let code = SMPCode(rawValue: first)
        guard let length = code.length else {
            report(.smp, .unknownCode, octets: payload, "\(code) (\(payload.count) octets): ignored (Part H 3.3)")
            return
        }
        if code == .pairingFailed {
            let reason = payload.count > 1 ? payload[1] : 0
            smpRefusals.append((sent: false, reason: reason))
            report(.smp, payload.count == length ? .unexpectedCommand : .invalidLength, octets: payload,
                   "Pairing Failed (\(payload.count) octets, reason 0x\(hex2(reason))) with no pairing in progress; not answered")
            return
        }
        guard payload.count == length else {
            refuse(.invalidParameters, kind: .invalidLength, octets: payload,
                   "\(code) of \(payload.count) octets; it has \(length)")
            return
        }
        switch code {
        case .pairingRequest where role == .peripheral:
            let io = payload[1], oob = payload[2], keySize = payload[4]
            var wrong: [String] = []
            if io > 0x04 { wrong.append("IO Capability 0x\(hex2(io))") }
            if oob > 0x01 { wrong.append("OOB data flag 0x\(hex2(oob))") }
            if !(7...16).contains(keySize) { wrong.append("Maximum Encryption Key Size \(keySize)") }
            guard wrong.isEmpty else {
                refuse(.invalidParameters, kind: .invalidParameters, octets: payload,
                       "Pairing Request with \(wrong.joined(separator: ", ")) out of range")
                return
            }
            refuse(.pairingNotSupported)
        case .securityRequest where role == .central:
            refuse(.pairingNotSupported)
        case .pairingRequest, .securityRequest:
            refuse(.commandNotSupported, kind: .wrongRole, octets: payload,
                   "\(code) sent to a \(role == .central ? "central" : "peripheral"), which never receives it")
        default:
            refuse(.commandNotSupported, kind: .unexpectedCommand, octets: payload,
                   "\(code) with no pairing in progress")
        }
    }

    /// Answers Pairing Failed with `reason`; a violation when `kind` is given.
    private func refuse(_ reason: SMPPairingFailedReason, kind: ProtocolViolation.Kind? = nil, octets: [UInt8] = [],
                        _ detail: String = "") {
        smpRefusals.append((sent: true, reason: reason.rawValue))
        send(cid: L2CAPChannelID.smp, payload: [SMPCode.pairingFailed.rawValue, reason.rawValue])
        if let kind { report(.smp, kind, octets: octets, answer: .pairingFailed(reason), detail) }
    }
}
